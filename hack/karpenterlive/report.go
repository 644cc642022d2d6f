package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// report is one invocation: every workload's rows, both systems each.
type report struct {
	Date         string           `json:"date"`
	Catalog      string           `json:"catalog"`
	Types        int              `json:"instanceTypes"`
	Builds       []buildInfo      `json:"builds"`
	BuildSeconds float64          `json:"buildSeconds"`
	Workloads    []workloadReport `json:"workloads"`
}

type workloadReport struct {
	Name string   `json:"name"`
	Desc string   `json:"description"`
	Rows []result `json:"rows"`
}

// row returns the workload's row of a system.
func (w workloadReport) row(system string) (result, bool) {
	for _, r := range w.Rows {
		if r.System == system {
			return r, true
		}
	}
	return result{}, false
}

// line is the workload's one-line summary, the form the issue asks for so
// that the figures can be found in any run's output.
func (w workloadReport) line() string {
	o, _ := w.row(systemOurs)
	k, _ := w.row(systemKarpenter)
	ratio := 0.0
	if k.CostHours > 0 {
		ratio = o.CostHours / k.CostHours
	}
	return fmt.Sprintf("bench-live %s: cost-hours ours/karpenter %.3f, p95 pending ours %.1f s karpenter %.1f s, evictions ours %d karpenter %d",
		w.Name, ratio, o.PendingP95, k.PendingP95, o.Evicted, k.Evicted)
}

func (r *report) lines() []string {
	var out []string
	for _, w := range r.Workloads {
		out = append(out, w.line())
	}
	return out
}

// writeMarkdown prints one table per workload.
func (r *report) writeMarkdown(w io.Writer) error {
	var b strings.Builder
	for _, wl := range r.Workloads {
		fmt.Fprintf(&b, "\n#### %s\n\n%s.\n\n", wl.Name, wl.Desc)
		b.WriteString("| system | cost-hours $ (GPU nodes) | peak nodes | nodes created / deleted | never used | pods | ran | pending at end | deleted unrun | pending p50 / p95 / p99 / max s | evicted | controller CPU s | peak RSS MiB |\n")
		b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, x := range wl.Rows {
			fmt.Fprintf(&b, "| %s | %.3f (%.3f) | %d | %d / %d | %d | %d | %d | %d | %d | %.1f / %.1f / %.1f / %.1f | %d | %.1f | %.0f |\n",
				x.System, x.CostHours, x.GPUCostHours, x.PeakNodes, x.NodesCreated, x.NodesDeleted, x.WastedNodes, x.Pods, x.PodsRan, x.PodsPendingEnd,
				x.PodsNeverRan, x.PendingP50, x.PendingP95, x.PendingP99, x.PendingMax, x.Evicted, x.ControllerCPU, x.ControllerRSSMB)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeFiles writes OUT.md and OUT.json.
func (r *report) writeFiles(out string) error {
	f, err := os.Create(out + ".md")
	if err != nil {
		return err
	}
	if err := r.writeMarkdown(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out+".json", append(data, '\n'), 0o644)
}
