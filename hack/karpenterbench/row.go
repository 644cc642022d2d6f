package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// row is one size of the mix, both schedulers on the same pods and types.
type row struct {
	Pods      int
	Karpenter side
	Ours      ours
	// CLI is our whole command line on the same pods, when measured.
	CLI *cliRun
}

// measure generates the mix of n pods from seed and runs Karpenter, then
// ours, on the same objects; then, when cli names our binary, the whole
// command line on them. dir receives our input files.
func measure(n int, seed int64, dir, cli string) (row, error) {
	in := newKarpenterInput()
	our, err := newOurInput(in, dir)
	if err != nil {
		return row{}, err
	}
	pods := diversePods(n, seed)
	r := row{Pods: n}
	if r.Karpenter, err = runKarpenter(in, pods); err != nil {
		return r, err
	}
	if r.Ours, err = runOurs(our, pods); err != nil {
		return r, err
	}
	if cli != "" {
		c, err := runCLI(cli, our, pods, dir)
		if err != nil {
			return r, err
		}
		r.CLI = &c
	}
	return r, nil
}

// CostRatio is our plan's cost divided by Karpenter's.
func (r *row) CostRatio() float64 { return r.Ours.Cost / r.Karpenter.Cost }

// SpeedUp is Karpenter's Solve wall time divided by ours.
func (r *row) SpeedUp() float64 { return r.Karpenter.Solve.Seconds() / r.Ours.Solve.Seconds() }

const mib = 1 << 20

// printTable writes the rows as one table; the whole-CLI columns read "-"
// where it was not measured.
func printTable(w io.Writer, rows []row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pods\tkarp setup s\tkarp solve s\tkarp solve cpu s\tours setup s\tours solve s\tours solve cpu s\tours CLI s\tours CLI RSS MiB\tspeed-up wall\tspeed-up cpu\tkarp nodes\tours nodes\tkarp $/h\tours $/h\tours÷karp\tkarp÷bound\tours÷bound\tkarp unplaced\tours unplaced\tkarp heap MiB\tours heap MiB\t")
	for _, r := range rows {
		k, o := &r.Karpenter, &r.Ours
		cli, rss := "-", "-"
		if r.CLI != nil {
			cli, rss = fmt.Sprintf("%.3f", r.CLI.Wall.Seconds()), fmt.Sprintf("%.0f", float64(r.CLI.MaxRSS)/mib)
		}
		fmt.Fprintf(tw, "%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%s\t%s\t%.1f×\t%.1f×\t%d\t%d\t%.2f\t%.2f\t%.3f\t%.3f\t%.3f\t%d\t%d\t%.0f\t%.0f\t\n",
			r.Pods, k.Setup.Seconds(), k.Solve.Seconds(), k.SolveCPU.Seconds(), o.Setup.Seconds(), o.Solve.Seconds(), o.SolveCPU.Seconds(), cli, rss,
			r.SpeedUp(), k.SolveCPU.Seconds()/o.SolveCPU.Seconds(),
			k.Nodes, o.Nodes, k.Cost, o.Cost, r.CostRatio(), k.Cost/o.Bound, o.Cost/o.Bound,
			k.Unplaced, o.Unplaced, float64(k.PeakHeap)/mib, float64(o.PeakHeap)/mib)
	}
	return tw.Flush()
}
