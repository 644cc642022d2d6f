package baseline_test

import (
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/bench"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver/baseline"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver/check"
)

// BenchmarkSuites runs the solver and both baselines on the same problems
// and reports, per suite and size: solver time (ms, pods/s), peak heap
// growth during one solve, and the cost of the solver's plan over its lower
// bound, over the greedy baseline and over the single-type FFD baseline.
// Every plan is checked once, outside the timed loop. `go run ./hack/benchtable`
// turns the output into one table.
func BenchmarkSuites(b *testing.B) {
	type suite struct {
		name  string
		sizes []int
		make  func(n int) (*solver.Problem, error)
	}
	suites := []suite{
		{"a-plain", []int{1000, 5000, 20000}, func(n int) (*solver.Problem, error) { return bench.Karpenter(n, 1, false), nil }},
		{"a", []int{1000, 5000, 20000}, func(n int) (*solver.Problem, error) { return bench.Karpenter(n, 1, true), nil }},
		{"b", []int{1000, 10000}, func(n int) (*solver.Problem, error) { return bench.Catalog(n, 1) }},
		{"c", []int{1000, 10000}, func(n int) (*solver.Problem, error) { return bench.Bimodal(n, 1) }},
		{"d", []int{1000, 10000}, func(n int) (*solver.Problem, error) { return bench.GPU(n, 1) }},
		{"h", []int{50000}, func(n int) (*solver.Problem, error) { return bench.Heterogeneous(n, 1) }},
	}
	for _, s := range suites {
		for _, n := range s.sizes {
			b.Run(fmt.Sprintf("suite=%s/pods=%d", s.name, n), func(b *testing.B) {
				p, err := s.make(n)
				if err != nil {
					b.Fatal(err)
				}
				benchProblem(b, p)
			})
		}
	}
	b.Run("suite=e/problems=200", benchTiny)
}

// baselines plans p with both baselines and checks their plans; a plan
// the checker rejects is logged and returned as nil, so that no cost ratio
// compares against it (the FFD ignores zones). It returns a function that
// reports their times; call it after the timed loop, which clears metrics
// reported before it.
func baselines(b *testing.B, p *solver.Problem) (greedy, ffd *solver.Plan, report func()) {
	b.Helper()
	start := time.Now()
	greedy = baseline.KarpenterGreedy(p)
	greedyTime := time.Since(start)
	start = time.Now()
	ffd = baseline.SingleTypeFFD(p)
	ffdTime := time.Since(start)
	if err := check.Plan(p, greedy); err != nil {
		b.Logf("greedy baseline plan invalid, not compared: %v", err)
		greedy = nil
	}
	if err := check.Plan(p, ffd); err != nil {
		b.Logf("FFD baseline plan invalid, not compared: %v", err)
		ffd = nil
	}
	return greedy, ffd, func() {
		b.ReportMetric(ms(greedyTime), "greedy-ms")
		b.ReportMetric(ms(ffdTime), "ffd-ms")
	}
}

func benchProblem(b *testing.B, p *solver.Problem) {
	greedy, ffd, reportBaselines := baselines(b, p)
	var plan *solver.Plan
	peak := peakHeap(func() {
		var err error
		if plan, err = solver.Solve(p); err != nil {
			b.Fatal(err)
		}
	})
	if err := check.Plan(p, plan); err != nil {
		b.Fatalf("solver plan invalid: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := solver.Solve(p); err != nil {
			b.Fatal(err)
		}
	}
	perOp := b.Elapsed() / time.Duration(b.N)
	reportBaselines()
	b.ReportMetric(ms(perOp), "ms")
	b.ReportMetric(float64(len(p.Pods))/perOp.Seconds(), "pods/s")
	b.ReportMetric(float64(peak)/1e6, "peak-MB")
	b.ReportMetric(plan.TotalPrice/plan.LowerBound, "cost/LB")
	b.ReportMetric(float64(len(plan.NewNodes)), "nodes")
	b.ReportMetric(float64(len(plan.Unschedulable)), "unsched")
	for _, base := range []struct {
		name string
		plan *solver.Plan
	}{{"greedy", greedy}, {"FFD", ffd}} {
		if base.plan == nil {
			continue
		}
		b.ReportMetric(plan.TotalPrice/base.plan.TotalPrice, "cost/"+base.name)
		if len(plan.Unschedulable) != len(base.plan.Unschedulable) {
			b.Logf("unschedulable pods differ (solver %d, %s %d): its cost ratio compares different pod sets",
				len(plan.Unschedulable), base.name, len(base.plan.Unschedulable))
		}
	}
}

// benchTiny solves 200 tiny problems per iteration and reports the mean and
// worst cost over the exact optimum, and geometric means over the lower
// bound and the baselines.
func benchTiny(b *testing.B) {
	const count = 200
	var problems []*solver.Problem
	var optima []float64
	var lb, vsGreedy, vsFFD, vsOpt, greedyOpt, ffdOpt []float64
	pods := 0
	for seed := uint64(0); seed < count; seed++ {
		p := bench.Tiny(seed)
		problems = append(problems, p)
		pods += len(p.Pods)
		opt, ok := baseline.Optimum(p, 2_000_000)
		if !ok {
			opt = math.NaN()
		}
		optima = append(optima, opt)
	}
	for i, p := range problems {
		greedy, ffd := baseline.KarpenterGreedy(p), baseline.SingleTypeFFD(p)
		plan, err := solver.Solve(p)
		if err != nil {
			b.Fatal(err)
		}
		for name, pl := range map[string]*solver.Plan{"solver": plan, "greedy": greedy, "FFD": ffd} {
			if err := check.Plan(p, pl); err != nil {
				b.Fatalf("problem %d: %s plan invalid: %v", i, name, err)
			}
		}
		if len(plan.Unschedulable)+len(greedy.Unschedulable)+len(ffd.Unschedulable) > 0 {
			continue
		}
		lb = append(lb, plan.TotalPrice/plan.LowerBound)
		vsGreedy = append(vsGreedy, plan.TotalPrice/greedy.TotalPrice)
		vsFFD = append(vsFFD, plan.TotalPrice/ffd.TotalPrice)
		if !math.IsNaN(optima[i]) {
			vsOpt = append(vsOpt, plan.TotalPrice/optima[i])
			greedyOpt = append(greedyOpt, greedy.TotalPrice/optima[i])
			ffdOpt = append(ffdOpt, ffd.TotalPrice/optima[i])
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range problems {
			if _, err := solver.Solve(p); err != nil {
				b.Fatal(err)
			}
		}
	}
	perOp := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(ms(perOp), "ms")
	b.ReportMetric(float64(pods)/perOp.Seconds(), "pods/s")
	b.ReportMetric(float64(pods), "pods")
	b.ReportMetric(geomean(lb), "cost/LB")
	b.ReportMetric(geomean(vsGreedy), "cost/greedy")
	b.ReportMetric(geomean(vsFFD), "cost/FFD")
	b.ReportMetric(mean(vsOpt), "cost/opt")
	b.ReportMetric(maximum(vsOpt), "max-cost/opt")
	b.ReportMetric(mean(greedyOpt), "greedy/opt")
	b.ReportMetric(mean(ffdOpt), "ffd/opt")
	b.ReportMetric(float64(len(vsOpt)), "solved-exactly")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func geomean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(xs)))
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func maximum(xs []float64) float64 {
	m := math.NaN()
	for _, x := range xs {
		if math.IsNaN(m) || x > m {
			m = x
		}
	}
	return m
}

// peakHeap runs f and returns how far the live heap rose above its level
// before f, sampled every millisecond (garbage not yet collected counts:
// it is memory the process holds).
func peakHeap(f func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	base := read()
	peak := base
	var mu sync.Mutex
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				v := read()
				mu.Lock()
				peak = max(peak, v)
				mu.Unlock()
			}
		}
	}()
	f()
	close(done)
	<-stopped
	peak = max(peak, read())
	return peak - base
}
