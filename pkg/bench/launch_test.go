package bench

import (
	"fmt"
	"slices"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// BenchmarkLaunchOptions measures the flexible-launch options of a plan
// of the full AWS catalog, which the operator computes after every solve.
func BenchmarkLaunchOptions(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		p, err := Catalog(n, 1)
		if err != nil {
			b.Fatal(err)
		}
		plan, err := solver.Solve(p)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			total := 0
			for b.Loop() {
				opts := solver.LaunchOptions(p, plan, -1)
				total = 0
				for _, o := range opts {
					total += len(o)
				}
			}
			b.ReportMetric(float64(len(plan.NewNodes)), "nodes")
			b.ReportMetric(float64(total)/float64(len(plan.NewNodes)), "options/node")
		})
	}
}

// TestLaunchOptionsPerPlanAreNodeByNode: the options of a whole plan,
// where nodes alike share their checks of labels, are those of each node
// asked alone, and LaunchInstanceTypes names the first types of each
// list, on plans of many nodes alike (Karpenter's mix), of many types (the
// AWS catalog) and of many shapes (suite h).
func TestLaunchOptionsPerPlanAreNodeByNode(t *testing.T) {
	catalog, err := Catalog(1000, 1)
	if err != nil {
		t.Fatal(err)
	}
	mixed, err := Heterogeneous(2000, 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]*solver.Problem{"karpenter-mix": KarpenterMix(1000, 42), "catalog": catalog, "heterogeneous": mixed} {
		plan, err := solver.Solve(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, premium := range []float64{-1, 0.2} {
			all := solver.LaunchOptions(p, plan, premium)
			types := solver.LaunchInstanceTypes(p, plan, premium)
			truncated := 0
			for i, n := range plan.NewNodes {
				alone := solver.LaunchOptions(p, &solver.Plan{NewNodes: []solver.NewNode{n}}, premium)[0]
				if !slices.Equal(all[i], alone) {
					t.Fatalf("%s, premium %v: node %d has %d options in the plan, %d alone", name, premium, i, len(all[i]), len(alone))
				}
				if names := solver.InstanceTypeNames(alone); !slices.Equal(types[i], names) {
					t.Fatalf("%s, premium %v: node %d: LaunchInstanceTypes %v, InstanceTypeNames %v", name, premium, i, types[i], names)
				}
				if len(types[i]) == solver.MaxLaunchInstanceTypes {
					truncated++
				}
			}
			if name == "catalog" && premium < 0 && truncated == 0 {
				t.Errorf("%s: no node has %d types or more: the truncation is not tested", name, solver.MaxLaunchInstanceTypes)
			}
		}
	}
}
