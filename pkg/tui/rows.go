package tui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/report"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// setReport takes a new report and rebuilds every table's rows.
func (m *Model) setReport(r *report.Report) {
	m.rep = r
	pending := make([]row, len(r.Pending))
	for i := range r.Pending {
		g := &r.Pending[i]
		node := g.Node
		if node == "" {
			node = "-"
		}
		pending[i] = row{
			key:   g.Namespace + "/" + g.Owner + "/" + g.Outcome + "/" + g.Reason,
			cells: []string{g.Namespace, g.Owner, fmt.Sprint(len(g.Pods)), g.Requests, node, shortScheduler(g.Scheduler), g.Reason},
			nums:  []float64{0, 0, float64(len(g.Pods))},
			ref:   i,
		}
	}
	m.tables[viewPending].setRows(pending)
	m.refreshProposed()
	m.refreshNodes()

	actions := make([]row, len(r.Actions))
	for i := range r.Actions {
		a := &r.Actions[i]
		saving := "-"
		if a.Kind != "-" {
			saving = fmt.Sprintf("%.4f", a.Saving)
		}
		kind := a.Kind
		if kind == "-" {
			kind = "left alone"
		}
		actions[i] = row{
			key:   a.Kind + "/" + a.Nodes,
			cells: []string{kind, a.Nodes, dash(a.Replacement), fmt.Sprint(len(a.Moves)), saving, a.Reason},
			nums:  []float64{0, 0, 0, float64(len(a.Moves)), a.Saving},
			ref:   i,
		}
	}
	m.tables[viewConsolidation].setRows(actions)
	m.launchFlow.keepSelected(r)
}

// refreshNodes rebuilds the Nodes rows of the report at the clock's time,
// so that AGE moves on between plans.
func (m *Model) refreshNodes() {
	r := m.rep
	now := m.opts.Now()
	nodes := make([]row, len(r.Nodes))
	for i := range r.Nodes {
		n := &r.Nodes[i]
		price, pn := "-", math.Inf(-1)
		if n.Price != nil {
			price, pn = fmt.Sprintf("%.4f", *n.Price), *n.Price
		}
		cpu, mem := ratio(n.CPUReq, n.CPUAlloc), ratio(n.MemReq, n.MemAlloc)
		age := now.Sub(n.Created)
		nodes[i] = row{
			key: n.Name,
			cells: []string{n.Name, dash(n.InstanceType), dash(n.Capacity), price, bar(cpu), bar(mem),
				fmt.Sprintf("%d/%d", n.Pods, n.MaxPods), dash(n.Pool), dash(n.Zone), formatAge(age, n.Created.IsZero()), n.Status},
			nums: []float64{0, 0, 0, pn, cpu, mem, float64(n.Pods), 0, 0, age.Seconds()},
			ref:  i,
		}
	}
	m.tables[viewNodes].setRows(nodes)
}

// refreshProposed rebuilds the Proposed rows: the plan's nodes, then the
// nodes launched from this screen with their progress.
func (m *Model) refreshProposed() {
	var rows []row
	if r := m.rep; r != nil {
		for i := range r.Proposed {
			p := &r.Proposed[i]
			if m.launchFlow.launched[proposedKey(p)] {
				continue // its launch row below shows it
			}
			rows = append(rows, row{
				key: proposedKey(p),
				cells: []string{p.Name, p.Pool, p.InstanceType, p.Zone, p.Capacity, fmt.Sprintf("%.4f", p.Price), fmt.Sprint(len(p.Pods)),
					pct(p.CPU), pct(p.Memory), proposedStatus(r.Covered(p.Index))},
				nums: []float64{0, 0, 0, 0, 0, p.Price, float64(len(p.Pods)), p.CPU, p.Memory},
				ref:  i,
			})
		}
	}
	for i, l := range m.launchFlow.launches {
		n := l.req.Node
		name := l.claim
		if name == "" {
			name = l.req.Name
		}
		rows = append(rows, row{
			key: fmt.Sprintf("launch/%d", i),
			cells: []string{name, n.Pool, n.InstanceType, n.Zone, n.CapacityType, fmt.Sprintf("%.4f", n.Price), fmt.Sprint(len(l.req.Pods)),
				pct(ratio(n.Requested[solver.CPU], n.Allocatable[solver.CPU])), pct(ratio(n.Requested[solver.Memory], n.Allocatable[solver.Memory])),
				m.launchFlow.status(l)},
			nums: []float64{0, 0, 0, 0, 0, n.Price, float64(len(l.req.Pods))},
			ref:  -1 - i,
		})
	}
	m.tables[viewProposed].setRows(rows)
}

// proposedStatus is a proposed node's status: "proposed", and how much
// of it the Commitments cover when they cover some.
func proposedStatus(covered float64) string {
	switch {
	case covered >= 1-1e-9:
		return "proposed, covered"
	case covered > 0:
		return fmt.Sprintf("proposed, %s covered", pct(covered))
	}
	return "proposed"
}

func proposedKey(p *report.ProposedNode) string {
	first := ""
	if len(p.Pods) > 0 {
		first = p.Pods[0]
	}
	return strings.Join([]string{p.Pool, p.InstanceType, p.Zone, p.Capacity, first}, "|")
}

func ratio(a, b int64) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func pct(f float64) string { return fmt.Sprintf("%.0f%%", f*100) }

// bar draws utilisation as eks-node-viewer does: filled cells and a percentage.
func bar(f float64) string {
	const cells = 8
	n := int(math.Round(min(max(f, 0), 1) * cells))
	return strings.Repeat("█", n) + strings.Repeat("░", cells-n) + fmt.Sprintf(" %3.0f%%", f*100)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// formatAge renders an age as kubectl does: 45s, 12m, 5h, 3d.
func formatAge(d time.Duration, unknown bool) string {
	switch {
	case unknown:
		return "-"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(max(d.Seconds(), 0)))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// shortScheduler drops the "0/N nodes are available: " preamble and the
// preemption sentence of a scheduler message, for the table; the detail
// shows it whole.
func shortScheduler(s string) string {
	if _, rest, ok := strings.Cut(s, " nodes are available: "); ok {
		s = rest
	}
	if before, _, ok := strings.Cut(s, " preemption: "); ok {
		s = before
	}
	return s
}
