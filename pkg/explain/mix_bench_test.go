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
	in := mixNoPool(b, 5000)
	for b.Loop() {
		built, solved := buildAndSolve(b, in)
		var r Result
		if err := setAdvice(context.Background(), &r, in, built.Problem, solved, maxAdvicePlan, time.Time{}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(solved.TotalPrice, "$/h")
		b.ReportMetric(float64(len(r.Advice)), "advice")
	}
}

// mixNoPool is Karpenter's mix of n pods (seed 42) as explain -f reads it
// without a NodePool: the default pool on the embedded us-east-1 catalog.
func mixNoPool(tb testing.TB, n int) plan.Input {
	tb.Helper()
	cat := plan.Catalog{Region: "us-east-1"}
	types, _, err := cat.InstanceTypes()
	if err != nil {
		tb.Fatal(err)
	}
	m := &snapshot.Manifests{Pods: bench.KarpenterMix(n, 42).Pods}
	return plan.Input{Manifests: m, InstanceTypes: types, Catalog: &cat, Default: &plan.DefaultPool{}}
}

// buildAndSolve builds in's problem and plans it.
func buildAndSolve(tb testing.TB, in plan.Input) (*plan.Result, *solver.Plan) {
	tb.Helper()
	built, err := plan.Build(in)
	if err != nil {
		tb.Fatal(err)
	}
	solved, err := solver.Solve(built.Problem)
	if err != nil {
		tb.Fatal(err)
	}
	return built, solved
}
