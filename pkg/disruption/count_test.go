package disruption

import (
	"slices"
	"strings"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/karpenter"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestPlannerConsolidate: the planner's guards count a pool's budgets as
// the View does (the more of Empty and Underutilized, cordoned nodes
// disrupting, in-flight ones left out), then hold every action to the
// budgets of its own reason.
func TestPlannerConsolidate(t *testing.T) {
	tests := []struct {
		name    string
		budgets []Budget
		setup   func(p *solver.Problem)
		// removed are the nodes the kept actions remove; blocked maps a
		// node to a part of its reason.
		removed []string
		blocked map[string]string
	}{
		{name: "all allowed", budgets: []Budget{{Nodes: "100%"}}, removed: []string{"empty-1", "empty-2", "under"}},
		{name: "only empty nodes may go: the underutilized one is held to its reason's budget",
			budgets: []Budget{{Nodes: "0", Reasons: []string{ReasonUnderutilized}}},
			removed: []string{"empty-1", "empty-2"}, blocked: map[string]string{"under": "allows 0 more node(s) for reason Underutilized"}},
		{name: "only underutilized nodes may go: the empty ones are held to theirs",
			budgets: []Budget{{Nodes: "0", Reasons: []string{ReasonEmpty}}},
			removed: []string{"under"}, blocked: map[string]string{"empty-1": "for reason Empty", "empty-2": "for reason Empty"}},
		{name: "a cordoned node counts as disrupting", budgets: []Budget{{Nodes: "1"}},
			setup:   func(p *solver.Problem) { p.Nodes[3].Unschedulable = true },
			blocked: map[string]string{"empty-1": "budget allows 0", "empty-2": "budget allows 0", "under": "budget allows 0"}},
		{name: "nodes in flight are not the pool's: 50% of four nodes is two", budgets: []Budget{{Nodes: "50%"}},
			setup: func(p *solver.Problem) {
				for i := range 4 {
					n := p.Nodes[0]
					n.Name, n.InFlight, n.Unschedulable = "flight-"+string(rune('a'+i)), true, true
					p.Nodes = append(p.Nodes, n)
				}
			},
			removed: []string{"empty-1", "empty-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture()
			f.node("empty-1", "large")
			f.node("empty-2", "large")
			f.node("under", "large", 500)
			f.node("kept", "large", 6000)
			if tt.setup != nil {
				tt.setup(f.p)
			}
			plan, err := PlannerConsolidate(f.p, map[string][]Budget{"pool": tt.budgets}, now)
			if err != nil {
				t.Fatal(err)
			}
			var removed []string
			for _, a := range plan.Actions {
				removed = append(removed, a.Nodes...)
			}
			slices.Sort(removed)
			if !slices.Equal(removed, tt.removed) {
				t.Errorf("removed %v, want %v (plan %+v)", removed, tt.removed, plan)
			}
			for node, want := range tt.blocked {
				i := slices.IndexFunc(plan.Blocked, func(b solver.NodeBlock) bool { return b.Node == node })
				if i < 0 || !strings.Contains(plan.Blocked[i].Reason, want) {
					t.Errorf("node %s: blocked %+v, want a reason with %q", node, plan.Blocked, want)
				}
			}
		})
	}
}

func TestReadBudgets(t *testing.T) {
	daily := "@daily"
	bad := "every day"
	tests := []struct {
		name    string
		in      []karpenter.Budget
		want    []Budget
		wantErr string
	}{
		{name: "as written", in: []karpenter.Budget{{Nodes: "10%"}, {Nodes: "0", Schedule: &daily, Duration: "10m", Reasons: []string{ReasonEmpty}}},
			want: []Budget{{Nodes: "10%"}, {Nodes: "0", Schedule: "@daily", Duration: 600e9, Reasons: []string{ReasonEmpty}}}},
		{name: "a duration without a schedule is left out", in: []karpenter.Budget{{Nodes: "1", Duration: "1h"}}},
		{name: "a bad schedule names the pool and the field", in: []karpenter.Budget{{Nodes: "1"}, {Nodes: "1", Schedule: &bad, Duration: "1h"}},
			wantErr: "NodePool pool: spec.disruption.budgets[1]: schedule"},
		{name: "a bad duration", in: []karpenter.Budget{{Nodes: "1", Schedule: &daily, Duration: "Never"}},
			wantErr: "NodePool pool: spec.disruption.budgets[0].duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadBudgets(map[string][]karpenter.Budget{"pool": tt.in})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got["pool"], tt.want, func(a, b Budget) bool {
				return a.Nodes == b.Nodes && a.Schedule == b.Schedule && a.Duration == b.Duration && slices.Equal(a.Reasons, b.Reasons)
			}) {
				t.Errorf("budgets %+v, want %+v", got["pool"], tt.want)
			}
		})
	}
}
