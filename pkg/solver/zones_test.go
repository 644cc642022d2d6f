package solver_test

import (
	"testing"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestSolveSpreadsNodesOverZonesWhenItIsFree: a type offered in several
// zones at one price has its nodes balanced over those zones; a zone that
// is cheaper takes them all, and a pod pinned to a zone stays there. (Only
// offerings no pod can tell apart are balanced: with a pod pinned to one
// zone, that zone's nodes are a kind of their own and others' pods may
// still all go there.)
func TestSolveSpreadsNodesOverZonesWhenItIsFree(t *testing.T) {
	// 14 pods of 1.5 CPU: a c6.large (2 vCPU) takes one each.
	shape := res(1500, 1*gi)
	typ := func(prices map[string]float64) []InstanceType {
		it := testTypes()[0] // c6.large
		it.Offerings = nil
		for _, z := range []string{"zone-a", "zone-b", "zone-c"} {
			it.Offerings = append(it.Offerings, Offering{Zone: z, CapacityType: "on-demand", Price: prices[z]})
		}
		return []InstanceType{it}
	}
	pinned := pods("pinned", 2, shape)
	for i := range pinned {
		pinned[i].NodeSelector = map[string]string{LabelZone: "zone-c"}
	}
	tests := []struct {
		name   string
		prices map[string]float64
		pods   []Pod
		want   map[string]int
	}{
		{"one price: balanced", map[string]float64{"zone-a": 0.1, "zone-b": 0.1, "zone-c": 0.1}, pods("web", 14, shape), map[string]int{"zone-a": 5, "zone-b": 5, "zone-c": 4}},
		{"a cheaper zone takes every node", map[string]float64{"zone-a": 0.1, "zone-b": 0.09, "zone-c": 0.1}, pods("web", 14, shape), map[string]int{"zone-b": 14}},
		{"pods pinned to a zone keep it", map[string]float64{"zone-a": 0.1, "zone-b": 0.1, "zone-c": 0.1}, pinned, map[string]int{"zone-c": 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan := solveChecked(t, &Problem{Pods: tc.pods, Pools: []Pool{onDemandPool("default")}, InstanceTypes: typ(tc.prices)})
			got := map[string]int{}
			for _, n := range plan.NewNodes {
				got[n.Zone]++
			}
			if len(got) != len(tc.want) {
				t.Fatalf("nodes per zone %v, want %v", got, tc.want)
			}
			for z, n := range tc.want {
				if got[z] != n {
					t.Errorf("nodes per zone %v, want %v", got, tc.want)
				}
			}
		})
	}
}
