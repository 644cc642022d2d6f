// Command karpenterbench runs Karpenter's own scheduler (sigs.k8s.io/karpenter
// v1.14.1, imported from the module proxy) and kubectl-rightsize's solver on
// the same input — Karpenter's scheduling benchmark mix (makeDiversePods)
// on its 400 fake instance types — and prints one table: solve time, nodes,
// $/h, cost ÷ Karpenter's, cost ÷ our lower bound, unplaced pods and peak
// heap of each, measured in the same run.
//
//	cd hack/karpenterbench && GOWORK=off go run . -sizes 1000,5000
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "karpenterbench:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("karpenterbench", flag.ContinueOnError)
	sizes := fs.String("sizes", "1000,5000", "comma-separated pod counts of the mix")
	seed := fs.Int64("seed", 42, "math/rand seed of the mix (42 is Karpenter's)")
	cli := fs.Bool("cli", true, "also time our whole command line (explain -f) on the same pods, built from this repository")
	keep := fs.String("keep", "", "write the input files (pods.yaml, nodepool.json, the types file) and our binary into this directory and keep them, to rerun explain -f by hand; the last size's pods stay")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir := *keep
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "karpenterbench"); err != nil {
			return fmt.Errorf("creating a temporary directory: %w", err)
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("-keep: %w", err)
	}
	bin := ""
	if *cli {
		var err error
		if bin, err = buildCLI(dir); err != nil {
			return err
		}
	}
	var rows []row
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return fmt.Errorf("-sizes: %q is not a positive pod count", s)
		}
		r, err := measure(n, *seed, dir, bin)
		if err != nil {
			return fmt.Errorf("%d pods: %w", n, err)
		}
		// A line per size as it ends: the largest sizes take minutes.
		fmt.Fprintf(os.Stderr, "%d pods: Karpenter %d nodes $%.2f/h in %.1f s; ours %d nodes $%.2f/h in %.2f s\n",
			n, r.Karpenter.Nodes, r.Karpenter.Cost, r.Karpenter.Solve.Seconds(), r.Ours.Nodes, r.Ours.Cost, r.Ours.Solve.Seconds())
		if r.CLI != nil {
			fmt.Fprintf(os.Stderr, "%d pods: our whole explain -f: %d nodes $%.2f/h in %.2f s, peak RSS %.0f MiB\n",
				n, r.CLI.Nodes, r.CLI.Cost, r.CLI.Wall.Seconds(), float64(r.CLI.MaxRSS)/mib)
		}
		rows = append(rows, r)
	}
	return printTable(os.Stdout, rows)
}
