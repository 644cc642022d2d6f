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
// region (every type, and the c7i/m7i/r7i families alone), reporting pods
// per second and plan cost over the lower bound.
func BenchmarkExplain(b *testing.B) {
	for _, tc := range []struct {
		name     string
		families []string
		n        int
	}{
		{"catalog=all/pods=1000", nil, 1000},
		{"catalog=all/pods=10000", nil, 10000},
		{"catalog=c7i-m7i-r7i/pods=1000", []string{"c7i", "m7i", "r7i"}, 1000},
		{"catalog=c7i-m7i-r7i/pods=10000", []string{"c7i", "m7i", "r7i"}, 10000},
	} {
		n := tc.n
		b.Run(tc.name, func(b *testing.B) {
			cat := Catalog{Region: "us-east-1"}
			types, _, err := cat.InstanceTypes()
			if err != nil {
				b.Fatal(err)
			}
			m := &snapshot.Manifests{Pods: microservices(1, n)}
			var solved *solver.Plan
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				built, err := plan.Build(plan.Input{Manifests: m, InstanceTypes: types, Default: &DefaultPool{InstanceFamilies: tc.families}})
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
