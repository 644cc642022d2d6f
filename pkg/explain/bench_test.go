package explain

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// microservices draws n pods from workloads with log-normal CPU, one of four
// memory ratios and Zipf-like replica counts, plus a few memory hogs.
func microservices(seed uint64, n int) []solver.Pod {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	zipf := rand.NewZipf(rng, 1.3, 1, uint64(max(n/20, 2)))
	var pods []solver.Pod
	for w := 0; len(pods) < n; w++ {
		cpu := int64(50 * (1 + rng.NormFloat64()*0.3 + rng.ExpFloat64()*4))
		cpu = max(cpu, 10)
		gibPerCPU := []float64{1, 2, 4, 8}[rng.IntN(4)]
		mem := int64(float64(cpu) / 1000 * gibPerCPU * (1 << 30))
		replicas := min(int(zipf.Uint64())+1, n-len(pods))
		for i := 0; i < replicas; i++ {
			var req solver.Resources
			req[solver.CPU], req[solver.Memory], req[solver.Pods] = cpu, mem, 1
			pods = append(pods, solver.Pod{Namespace: "default", Name: fmt.Sprintf("svc%d-%d", w, i), Owner: fmt.Sprintf("Deployment/svc%d", w), Requests: req})
		}
	}
	return pods
}

// BenchmarkExplain plans n pods against the full embedded catalog of one
// region (every type, Karpenter's general-purpose default pool, and the
// c7i/m7i/r7i families alone), reporting pods per second and plan cost
// over the lower bound.
func BenchmarkExplain(b *testing.B) {
	for _, tc := range []struct {
		name     string
		families []string
		n        int
	}{
		{"catalog=all/pods=1000", nil, 1000},
		{"catalog=all/pods=10000", nil, 10000},
		{"catalog=general-purpose/pods=10000", []string{}, 10000},
		{"catalog=c7i-m7i-r7i/pods=1000", []string{"c7i", "m7i", "r7i"}, 1000},
		{"catalog=c7i-m7i-r7i/pods=10000", []string{"c7i", "m7i", "r7i"}, 10000},
	} {
		n := tc.n
		b.Run(tc.name, func(b *testing.B) {
			cat := plan.Catalog{Region: "us-east-1"}
			types, _, err := cat.InstanceTypes()
			if err != nil {
				b.Fatal(err)
			}
			m := &snapshot.Manifests{Pods: microservices(1, n)}
			var solved *solver.Plan
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				def := &plan.DefaultPool{InstanceFamilies: tc.families, AllInstanceTypes: tc.families == nil}
				built, err := plan.Build(plan.Input{Manifests: m, InstanceTypes: types, Catalog: &cat, Default: def})
				if err != nil {
					b.Fatal(err)
				}
				if solved, err = solver.Solve(built.Problem); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
			b.ReportMetric(solved.TotalPrice/solved.LowerBound, "cost/LB")
			b.ReportMetric(float64(len(solved.NewNodes)), "nodes")
		})
	}
}

// plainPods are n pods of one 500m/1Gi Deployment.
func plainPods(n int) []solver.Pod {
	var req solver.Resources
	req[solver.CPU], req[solver.Memory], req[solver.Pods] = 500, 1<<30, 1
	pods := make([]solver.Pod, n)
	for i := range pods {
		pods[i] = solver.Pod{Namespace: "default", Name: fmt.Sprintf("web-%d", i), Owner: "Deployment/web", Requests: req}
	}
	return pods
}

// TestNoNodePoolAtScale plans 20,000 pods with no NodePool on the embedded
// us-east-1 catalog, as explain -f does (Karpenter's general-purpose
// default pool, the EKS DaemonSets on every node): the plan must be one an
// operator would run: at most 2,000 nodes, within 5 % of the lower bound,
// and its nodes spread over every zone that offers their types at no extra
// cost.
func TestNoNodePoolAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("plans 20,000 pods twice")
	}
	cat := plan.Catalog{Region: "us-east-1"}
	types, _, err := cat.InstanceTypes()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		pods []solver.Pod
	}{
		{"20000 plain 500m/1Gi pods", plainPods(20000)},
		{"20000 pods of mixed shapes", microservices(1, 20000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			built, err := plan.Build(plan.Input{Manifests: &snapshot.Manifests{Pods: tc.pods}, InstanceTypes: types, Catalog: &cat, Default: &plan.DefaultPool{}})
			if err != nil {
				t.Fatal(err)
			}
			solved, err := solver.Solve(built.Problem)
			if err != nil {
				t.Fatal(err)
			}
			if len(solved.Unschedulable) > 0 || len(solved.NewNodes) > 2000 || solved.TotalPrice > 1.05*solved.LowerBound {
				t.Errorf("%d nodes, %d pods unplaced, $%.2f/h = %.3f× the bound; want ≤ 2,000 nodes, none unplaced, ≤ 1.05×",
					len(solved.NewNodes), len(solved.Unschedulable), solved.TotalPrice, solved.TotalPrice/solved.LowerBound)
			}
			// The zones that offer a planned node's type at its price
			// (on-demand prices are one per region) must all be used.
			offered, used := map[string]bool{}, map[string]int{}
			for _, n := range solved.NewNodes {
				used[n.Zone]++
				for _, it := range types {
					if it.Name != n.InstanceType {
						continue
					}
					for _, o := range it.Offerings {
						if o.CapacityType == n.CapacityType && o.Price == n.Price {
							offered[o.Zone] = true
						}
					}
				}
			}
			for z := range offered {
				if used[z] == 0 {
					t.Errorf("zone %s offers the plan's types and has no node (nodes per zone %v)", z, used)
				}
			}
			t.Logf("%d nodes, $%.2f/h, %.3f× the bound, nodes per zone %v", len(solved.NewNodes), solved.TotalPrice, solved.TotalPrice/solved.LowerBound, used)
		})
	}
}
