package bench

import (
	"fmt"
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
