package solver_test

import (
	"math"
	"slices"
	"testing"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestConsolidateMergesAcrossPools: three c6.large, each 1.1 of its 1.92
// allocatable CPUs used, one in pool a and two in pool b. No node's pods
// fit in another's free room, and b's two alone fit only a c6.xlarge that
// costs what they do, so only a merge of all three (onto one c6.xlarge,
// $0.085/h less) saves: Karpenter's multi-node consolidation takes its
// candidates from every NodePool
// (pkg/controllers/disruption/multinodeconsolidation.go). Each pool's share
// of the saving, split by the price it loses, must still meet that pool's
// own minimum.
func TestConsolidateMergesAcrossPools(t *testing.T) {
	tests := []struct {
		name       string
		bMinSaving float64
		wantMerge  bool
	}{
		{"default minimums: the three nodes merge into one", 0, true},
		{"pool b asks more than its share ($0.0567/h of $0.085/h): no merge", 0.06, false},
		{"pool b asks just under its share: the merge", 0.055, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Problem{Pools: []Pool{unlimitedPool("a"), unlimitedPool("b")}, InstanceTypes: testTypes(), Options: Options{Now: consNow}}
			p.Pools[1].Consolidation.MinSaving = tt.bMinSaving
			for _, n := range []struct{ name, pool string }{{"a-1", "a"}, {"b-1", "b"}, {"b-2", "b"}} {
				addNode(p, n.name, "c6.large", n.pool, "on-demand", controlled(n.name, 1, res(1100, 256*mi)))
			}
			plan := consolidateChecked(t, p)
			merged := slices.IndexFunc(plan.Actions, func(a Action) bool { return len(a.Nodes) == 3 })
			if (merged >= 0) != tt.wantMerge {
				t.Fatalf("actions %+v; want a merge of all three nodes: %v", plan.Actions, tt.wantMerge)
			}
			if !tt.wantMerge {
				if len(plan.Actions) != 0 {
					t.Errorf("actions %+v, want none", plan.Actions)
				}
				return
			}
			a := plan.Actions[merged]
			if len(a.Replacements) != 1 || a.Replacements[0].InstanceType != "c6.xlarge" || math.Abs(a.Saving-0.085) > 1e-9 {
				t.Errorf("merge %+v, want one c6.xlarge saving $0.085/h", a)
			}
		})
	}
}
