package explain

import (
	"context"
	"testing"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/bench"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// BenchmarkKarpenterMixNoPool is explain -f on Karpenter's 5,000-pod mix
// written without a NodePool: the default pool and the EKS DaemonSets
// apply, and the advice (printed by -o json too) is computed. The plan is
// taken to have taken maxAdvicePlan, the longest that still gets advice,
// so that the advice is not skipped; on a loaded machine its solves can
// still run past their budget (twice that), and the advice metric drop.
func BenchmarkKarpenterMixNoPool(b *testing.B) {
	cat := plan.Catalog{Region: "us-east-1"}
	types, _, err := cat.InstanceTypes()
	if err != nil {
		b.Fatal(err)
	}
	m := &snapshot.Manifests{Pods: bench.KarpenterMix(5000, 42).Pods}
	for b.Loop() {
		in := plan.Input{Manifests: m, InstanceTypes: types, Catalog: &cat, Default: &plan.DefaultPool{}}
		built, err := plan.Build(in)
		if err != nil {
			b.Fatal(err)
		}
		solved, err := solver.Solve(built.Problem)
		if err != nil {
			b.Fatal(err)
		}
		var r Result
		if err := setAdvice(context.Background(), &r, in, built.Problem, solved, maxAdvicePlan, time.Time{}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(solved.TotalPrice, "$/h")
		b.ReportMetric(float64(len(r.Advice)), "advice")
	}
}
