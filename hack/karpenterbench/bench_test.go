package main

import (
	"fmt"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/bench"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// BenchmarkSideBySide runs Karpenter's scheduler and ours on the same
// Karpenter benchmark mix, per size, and reports both sides' numbers and
// their ratios from the same run (see row). One op is both solves.
//
//	GOWORK=off go test -run '^$' -bench SideBySide -benchtime 1x
func BenchmarkSideBySide(b *testing.B) {
	cli, err := buildCLI(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			var r row
			for b.Loop() {
				var err error
				if r, err = measure(n, 42, b.TempDir(), cli); err != nil {
					b.Fatal(err)
				}
			}
			k, o := &r.Karpenter, &r.Ours
			b.ReportMetric(k.Solve.Seconds(), "karp-solve-s")
			b.ReportMetric(o.Solve.Seconds(), "ours-solve-s")
			b.ReportMetric(k.SolveCPU.Seconds(), "karp-solve-cpu-s")
			b.ReportMetric(o.SolveCPU.Seconds(), "ours-solve-cpu-s")
			b.ReportMetric(o.Setup.Seconds(), "ours-setup-s")
			b.ReportMetric(r.CLI.Wall.Seconds(), "ours-cli-s")
			b.ReportMetric(float64(r.CLI.MaxRSS)/mib, "ours-cli-rss-MiB")
			b.ReportMetric(float64(k.Nodes), "karp-nodes")
			b.ReportMetric(float64(o.Nodes), "ours-nodes")
			b.ReportMetric(k.Cost, "karp-$/h")
			b.ReportMetric(o.Cost, "ours-$/h")
			b.ReportMetric(r.CostRatio(), "ours/karp")
			b.ReportMetric(o.Cost/o.Bound, "ours/bound")
			b.ReportMetric(k.Cost/o.Bound, "karp/bound")
			b.ReportMetric(float64(k.Unplaced), "karp-unplaced")
			b.ReportMetric(float64(o.Unplaced), "ours-unplaced")
			b.ReportMetric(float64(k.PeakHeap)/mib, "karp-heap-MiB")
			b.ReportMetric(float64(o.PeakHeap)/mib, "ours-heap-MiB")
		})
	}
}

// TestBothPlaceSmallMix runs both schedulers on a 200-pod mix: each must
// place every pod, and our plan must cost no more than Karpenter's.
func TestBothPlaceSmallMix(t *testing.T) {
	r, err := measure(200, 42, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Karpenter.Unplaced != 0 || r.Ours.Unplaced != 0 {
		t.Errorf("unplaced pods: Karpenter %d, ours %d (warnings: %v)", r.Karpenter.Unplaced, r.Ours.Unplaced, r.Ours.Warnings)
	}
	if r.Karpenter.Nodes == 0 || r.Ours.Nodes == 0 {
		t.Errorf("nodes: Karpenter %d, ours %d; both must plan some", r.Karpenter.Nodes, r.Ours.Nodes)
	}
	if r.Ours.Cost > r.Karpenter.Cost {
		t.Errorf("our plan costs $%.2f/h, more than Karpenter's $%.2f/h", r.Ours.Cost, r.Karpenter.Cost)
	}
	if r.Ours.Cost < r.Ours.Bound-1e-6 {
		t.Errorf("our plan costs $%.2f/h, below its own lower bound $%.2f/h", r.Ours.Cost, r.Ours.Bound)
	}
}

// TestMixMatchesRecreation cross-checks the conversion: the corev1 pods and
// Karpenter's fake types, read through our snapshot and --instance-types
// file, plan like pkg/bench.KarpenterMix, the earlier recreation of
// the same mix in the solver's own types (same draws, same shapes).
func TestMixMatchesRecreation(t *testing.T) {
	const n = 200
	r, err := measure(n, 42, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	want, err := solver.Solve(bench.KarpenterMix(n, 42))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Ours; got.Nodes != len(want.NewNodes) || fmt.Sprintf("%.4f", got.Cost) != fmt.Sprintf("%.4f", want.TotalPrice) ||
		fmt.Sprintf("%.4f", got.Bound) != fmt.Sprintf("%.4f", want.LowerBound) {
		t.Errorf("through our parsing: %d nodes $%.4f/h bound $%.4f/h; the recreation: %d nodes $%.4f/h bound $%.4f/h",
			got.Nodes, got.Cost, got.Bound, len(want.NewNodes), want.TotalPrice, want.LowerBound)
	}
}

// TestCLIPlansLikeTheLibrary: our whole command line, reading the mix as
// a user's files, plans exactly what the library calls plan on the same
// objects (so the CLI column times the same plan).
func TestCLIPlansLikeTheLibrary(t *testing.T) {
	dir := t.TempDir()
	cli, err := buildCLI(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := measure(200, 42, dir, cli)
	if err != nil {
		t.Fatal(err)
	}
	if r.CLI.Nodes != r.Ours.Nodes || fmt.Sprintf("%.4f", r.CLI.Cost) != fmt.Sprintf("%.4f", r.Ours.Cost) {
		t.Errorf("explain -f: %d nodes $%.4f/h; the library: %d nodes $%.4f/h", r.CLI.Nodes, r.CLI.Cost, r.Ours.Nodes, r.Ours.Cost)
	}
	if r.CLI.MaxRSS <= 0 {
		t.Errorf("peak RSS %d bytes, want it measured", r.CLI.MaxRSS)
	}
}
