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
	// Bound is what the workload costs packed from scratch at every
	// instant (trace only; nil when not computed).
	Bound *packedBound `json:"packedFromScratch,omitempty"`
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

// boundLine says what the workload costs packed from scratch at every
// instant, and as a fraction of each system's cost-hours measured.
func (w workloadReport) boundLine() string {
	b := w.Bound
	s := fmt.Sprintf("bench-live %s packed from scratch every %s: lower bound $%.3f, our plan $%.3f cost-hours", w.Name, b.Every, b.LowerBound, b.Plan)
	for _, sys := range []string{systemKarpenter, systemOurs} {
		if r, ok := w.row(sys); ok && r.CostHours > 0 {
			s += fmt.Sprintf("; %s measured $%.3f (bound/%s %.3f)", sys, r.CostHours, sys, b.LowerBound/r.CostHours)
		}
	}
	return s
}

func (r *report) lines() []string {
	var out []string
	for _, w := range r.Workloads {
		if len(w.Rows) > 0 {
			out = append(out, w.line())
		}
		if w.Bound != nil {
			out = append(out, w.boundLine())
		}
	}
	return out
}

// writeMarkdown prints one table per workload.
func (r *report) writeMarkdown(w io.Writer) error {
	var b strings.Builder
	for _, wl := range r.Workloads {
		fmt.Fprintf(&b, "\n#### %s\n\n%s.\n\n", wl.Name, wl.Desc)
		if len(wl.Rows) > 0 {
			b.WriteString("| system | cost-hours $ (GPU nodes) | peak nodes | nodes created / deleted | never used | pods | ran | pending at end | deleted unrun | pending p50 / p95 / p99 / max s | evicted | work evictions cut short: pod-h (GPU-h) | controller CPU s | scheduler / apiserver CPU s | peak RSS MiB |\n")
			b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
			for _, x := range wl.Rows {
				fmt.Fprintf(&b, "| %s | %.3f (%.3f) | %d | %d / %d | %d | %d | %d | %d | %d | %.1f / %.1f / %.1f / %.1f | %d | %.2f (%.2f) | %.1f | %.1f / %.1f | %.0f |\n",
					x.System, x.CostHours, x.GPUCostHours, x.PeakNodes, x.NodesCreated, x.NodesDeleted, x.WastedNodes, x.Pods, x.PodsRan, x.PodsPendingEnd,
					x.PodsNeverRan, x.PendingP50, x.PendingP95, x.PendingP99, x.PendingMax, x.Evicted, x.PodHoursCut, x.GPUHoursCut, x.ControllerCPU, x.SchedulerCPU, x.APIServerCPU, x.ControllerRSSMB)
			}
		}
		if wl.Bound != nil {
			fmt.Fprintf(&b, "\n%s.\n", wl.boundLine())
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
