package solver

import (
	"slices"
	"testing"
)

// TestOrderActionsKeepsTopologyLinkedActionsInPlanningOrder: actions go
// best first, except that one whose moved pods' hard topology constraints
// select pods an earlier-planned action moved (or the other way round)
// stays after it, since it was planned on the counts that action left.
func TestOrderActionsKeepsTopologyLinkedActionsInPlanningOrder(t *testing.T) {
	spread := func(name, app, selects string) Pod {
		p := Pod{Namespace: "default", Name: name, Labels: map[string]string{"app": app}}
		if selects != "" {
			p.Spread = []TopologySpread{{MaxSkew: 1, TopologyKey: LabelZone, WhenUnsatisfiable: DoNotSchedule, Selector: Selector{MatchLabels: map[string]string{"app": selects}}}}
		}
		return p
	}
	action := func(node string, saving float64, pods ...string) Action {
		a := Action{Kind: ActionDelete, Nodes: []string{node}, Saving: saving}
		for _, p := range pods {
			a.Moves = append(a.Moves, Move{Pod: "default/" + p, To: "x"})
		}
		return a
	}
	pods := map[string]*Pod{}
	for _, p := range []Pod{spread("web-0", "web", "web"), spread("web-1", "web", "web"), spread("db-0", "db", ""), spread("soft", "soft", "")} {
		pods[p.Key()] = &p
	}
	tests := []struct {
		name    string
		actions []Action
		want    []string
	}{
		{"unlinked: best first", []Action{action("a", 1, "db-0"), action("b", 5, "soft")}, []string{"b", "a"}},
		{"linked by a spread on the moved pods: planning order", []Action{action("a", 1, "web-0"), action("b", 5, "web-1")}, []string{"a", "b"}},
		{"a better unlinked action still goes first", []Action{action("a", 1, "web-0"), action("b", 5, "web-1"), action("c", 9, "db-0")}, []string{"c", "a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, a := range orderActions(tt.actions, pods) {
				got = append(got, a.Nodes[0])
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("order %v, want %v", got, tt.want)
			}
		})
	}
}
