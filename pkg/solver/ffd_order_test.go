package solver_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver/check"
)

// openbCPUShapes are the 25 pod shapes of the openb CPU trace (issue 33):
// millicores, MiB and how many pods of each.
var openbCPUShapes = []struct{ cpu, mib, n int64 }{
	{32000, 65536, 1}, {32000, 49152, 284}, {32000, 32768, 2}, {32000, 62500, 3},
	{20000, 65536, 2}, {12500, 65536, 2}, {16000, 65536, 1}, {8000, 62500, 1},
	{16000, 62500, 1}, {16500, 51200, 95}, {8000, 61035, 1}, {16000, 16384, 1},
	{16000, 31250, 8}, {16000, 32768, 2}, {16000, 15625, 1}, {15400, 51200, 120},
	{12500, 57344, 364}, {11400, 57344, 11}, {10000, 48828, 1}, {12000, 24576, 4},
	{8000, 31250, 5}, {8000, 30517, 163}, {8000, 16384, 2}, {8000, 15625, 11},
	{8000, 8192, 2},
}

// TestOneTypeFFDOnTiedShares: the openb CPU pods on the one type that packs
// them best (m6g.16xlarge's allocatable: two 32-CPU pods do not share a
// node). Many shapes tie on their largest share (CPU) but differ in
// memory; first fit by largest share alone, classes grouped, takes 325
// nodes where pod-by-pod first fit takes 324. The plan must cost no more
// than the pod-by-pod FFD in any order of the pods, nor than 324 nodes.
func TestOneTypeFFDOnTiedShares(t *testing.T) {
	it := InstanceType{
		Name:      "m6g.16xlarge",
		Labels:    map[string]string{LabelInstanceType: "m6g.16xlarge", LabelArch: "arm64"},
		Capacity:  Resources{CPU: 63620, Memory: 252620832768, EphemeralStorage: 18253611008, Pods: 107},
		Offerings: []Offering{{Zone: "zone-a", CapacityType: "on-demand", Price: 2.464}},
	}
	var all []Pod
	for i, s := range openbCPUShapes {
		all = append(all, pods(fmt.Sprintf("s%d", i), int(s.n), res(s.cpu, s.mib*mi))...)
	}
	for seed := range uint64(4) {
		t.Run(fmt.Sprintf("order %d", seed), func(t *testing.T) {
			p := &Problem{Pods: append([]Pod(nil), all...), Pools: []Pool{{Name: "default"}}, InstanceTypes: []InstanceType{it}}
			if seed > 0 {
				rng := rand.New(rand.NewPCG(seed, 33))
				rng.Shuffle(len(p.Pods), func(a, b int) { p.Pods[a], p.Pods[b] = p.Pods[b], p.Pods[a] })
			}
			plan, err := Solve(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := check.Plan(p, plan); err != nil {
				t.Fatalf("invalid plan: %v", err)
			}
			if len(plan.Unschedulable) > 0 {
				t.Fatalf("%d pods unplaced", len(plan.Unschedulable))
			}
			if ffd := ffdCost(p, &it); plan.TotalPrice > ffd+1e-6 {
				t.Errorf("plan $%.3f/h (%d nodes), pod-by-pod FFD $%.3f/h", plan.TotalPrice, len(plan.NewNodes), ffd)
			}
			if len(plan.NewNodes) > 324 {
				t.Errorf("plan has %d nodes, first fit by CPU packs 324", len(plan.NewNodes))
			}
		})
	}
}
