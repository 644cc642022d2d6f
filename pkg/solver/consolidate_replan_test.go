package solver_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestConsolidateNodes re-plans one chosen group of nodes on a problem that
// may have changed since it was chosen.
func TestConsolidateNodes(t *testing.T) {
	halves := func(p *Problem) {
		addNode(p, "half-1", "m6.2xlarge", "default", "on-demand", controlled("a", 3, res(1500, gi)))
		addNode(p, "half-2", "m6.2xlarge", "default", "on-demand", controlled("b", 3, res(1500, gi)))
	}
	tests := []struct {
		name     string
		build    func(p *Problem)
		nodes    []string
		wantKind string // "" when the action must not hold
		wantWhy  string
	}{
		{name: "a merge that still holds is planned again", build: halves, nodes: []string{"half-1", "half-2"}, wantKind: ActionMerge},
		{name: "empty nodes are deleted together", nodes: []string{"idle-1", "idle-2"}, wantKind: ActionDelete, build: func(p *Problem) {
			addNode(p, "idle-1", "m6.xlarge", "default", "on-demand", nil)
			addNode(p, "idle-2", "m6.xlarge", "default", "on-demand", nil)
		}},
		{name: "a node that is gone", build: halves, nodes: []string{"half-1", "half-3"}, wantWhy: "node half-3 is gone"},
		{name: "a pod arrived since", nodes: []string{"half-1", "half-2"}, wantWhy: "node half-2: pods changed 1m ago; consolidateAfter is 30m", build: func(p *Problem) {
			halves(p)
			p.Pools[0].Consolidation.After = 30 * time.Minute
			p.Nodes[0].LastPodChange = consNow.Add(-time.Hour)
			p.Nodes[1].LastPodChange = consNow.Add(-time.Minute)
		}},
		{name: "a node that became do-not-disrupt", nodes: []string{"half-1", "half-2"}, wantWhy: "node half-2: the node has do-not-disrupt", build: func(p *Problem) {
			halves(p)
			p.Nodes[1].DoNotDisrupt = true
		}},
		{name: "a budget that shrank", nodes: []string{"half-1", "half-2"}, wantWhy: "disruption budget allows 1 more nodes", build: func(p *Problem) {
			halves(p)
			p.Pools[0].Consolidation.NodesAllowed = 1
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Problem{Pools: []Pool{unlimitedPool("default")}, InstanceTypes: testTypes(), Options: Options{Now: consNow}}
			tc.build(p)
			a, why, err := ConsolidateNodes(p, tc.nodes)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantKind == "" {
				if a != nil || !strings.Contains(why, tc.wantWhy) {
					t.Fatalf("action %+v why %q, want none because %q", a, why, tc.wantWhy)
				}
				return
			}
			if a == nil {
				t.Fatalf("no action: %s", why)
			}
			if a.Kind != tc.wantKind || len(a.Nodes) != len(tc.nodes) || a.Saving <= 0 {
				t.Errorf("action %+v, want a %s of %v that saves", a, tc.wantKind, tc.nodes)
			}
		})
	}
}

// TestConsolidateBalanced: under Balanced a replacement that saves little
// for the pods it evicts is refused, while WhenEmptyOrUnderutilized takes
// it; an empty node is deleted under both. Written from Karpenter's
// balanced scoring (kubernetes-sigs/karpenter
// pkg/controllers/disruption/balanced.go, ScoreMove, k = 2).
func TestConsolidateBalanced(t *testing.T) {
	for _, policy := range []string{WhenEmptyOrUnderutilized, Balanced} {
		t.Run(policy, func(t *testing.T) {
			p := &Problem{Pools: []Pool{unlimitedPool("default")}, InstanceTypes: testTypes(), Options: Options{Now: consNow}}
			p.Pools[0].Consolidation.Policy = policy
			// m6.2xlarge ($0.384) running 6 one-vCPU pods fits a c6.2xlarge
			// ($0.34): 11% of the pool's price for all of its disruption.
			addNode(p, "m", "m6.2xlarge", "default", "on-demand", controlled("web", 6, res(1000, gi)))
			addNode(p, "idle", "m6.large", "default", "on-demand", nil)
			plan := consolidateChecked(t, p)
			replaced, deleted := false, false
			for _, a := range plan.Actions {
				replaced = replaced || a.Nodes[0] == "m"
				deleted = deleted || a.Nodes[0] == "idle"
			}
			if !deleted {
				t.Errorf("the empty node is kept: %+v", plan.Actions)
			}
			if replaced != (policy != Balanced) {
				t.Errorf("node m replaced = %v, want %v; actions %+v, blocked %+v", replaced, policy != Balanced, plan.Actions, plan.Blocked)
			}
			if why := blockedReason(plan, "m"); policy == Balanced && !strings.Contains(why, "is Balanced") {
				t.Errorf("m's reason %q, want the Balanced score", why)
			}
		})
	}
}

// TestConsolidateSpotToSpot: a spot node is replaced by a cheaper spot node
// only when at least 15 cheaper spot instance types hold its pods, as
// Karpenter's single-node spot-to-spot consolidation requires
// (kubernetes-sigs/karpenter pkg/controllers/disruption/consolidation.go,
// MinInstanceTypesForSpotToSpotConsolidation; consolidation_test.go "spot to
// spot consolidation").
func TestConsolidateSpotToSpot(t *testing.T) {
	for _, extra := range []int{0, MinSpotToSpotTypes} {
		types := testTypes()
		for i := range extra {
			// More types like c6.xlarge: cheaper than the node, room for its pods.
			it := types[1]
			it.Name = it.Name + "-v" + string(rune('a'+i))
			it.Labels = map[string]string{LabelInstanceType: it.Name, "kubernetes.io/arch": "amd64"}
			types = append(types, it)
		}
		p := &Problem{Pools: []Pool{{Name: "spot", Consolidation: Consolidation{NodesAllowed: -1},
			Requirements: []Requirement{{Key: LabelCapacityType, Operator: OpIn, Values: []string{"spot"}}}}}, InstanceTypes: types, Options: Options{Now: consNow}}
		addNode(p, "big", "m6.4xlarge", "spot", "spot", controlled("web", 2, res(1000, 2*gi)))
		plan := consolidateChecked(t, p)
		replaced := len(plan.Actions) == 1 && plan.Actions[0].Kind == ActionReplace
		if want := extra > 0; replaced != want {
			t.Errorf("%d extra types: replaced = %v, want %v; actions %+v blocked %+v", extra, replaced, want, plan.Actions, plan.Blocked)
		}
		if why := blockedReason(plan, "big"); extra == 0 && !strings.Contains(why, "spot-to-spot") {
			t.Errorf("big's reason %q, want the spot-to-spot guard", why)
		}
	}
}

// TestConsolidateGroups: groups re-planned together are valid together: a
// node that takes pods from an earlier group is not removed by a later one.
func TestConsolidateGroups(t *testing.T) {
	p := &Problem{Pools: []Pool{unlimitedPool("default")}, InstanceTypes: testTypes(), Options: Options{Now: consNow}}
	addNode(p, "busy", "c6.2xlarge", "default", "on-demand", controlled("web", 6, res(1000, gi)))
	addNode(p, "light", "c6.xlarge", "default", "on-demand", controlled("api", 1, res(500, gi)))
	addNode(p, "idle", "m6.xlarge", "default", "on-demand", nil)
	actions, whys, err := ConsolidateGroups(p, [][]string{{"light"}, {"busy"}, {"idle"}})
	if err != nil {
		t.Fatal(err)
	}
	if actions[0] == nil || actions[0].Kind != ActionDelete || len(actions[0].Moves) != 1 || actions[0].Moves[0].To != "busy" {
		t.Errorf("light: %+v (%s), want deleted onto busy", actions[0], whys[0])
	}
	if actions[1] != nil || !strings.Contains(whys[1], "takes pods from light") {
		t.Errorf("busy: %+v (%s), want kept: it takes light's pods", actions[1], whys[1])
	}
	if actions[2] == nil || len(actions[2].Moves) != 0 {
		t.Errorf("idle: %+v (%s), want deleted", actions[2], whys[2])
	}
}
