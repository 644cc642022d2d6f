package tui

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/report"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// detailView is the detail screen (enter on a row): a title over lines
// wrapped to the terminal's width, scrolled with the movement keys. Its
// fields keep the detail prefix because the Model embeds it.
type detailView struct {
	detailTitle  string
	detailLines  []string
	detailOffset int // first wrapped line shown
}

// open shows title and lines from their top.
func (d *detailView) open(title string, lines []string) {
	d.detailTitle, d.detailLines, d.detailOffset = title, lines, 0
}

// onKey scrolls the detail in a screen of width×height and returns the
// mode the program goes on in: detail, normal (esc, enter) or help; q quits.
func (d *detailView) onKey(msg tea.KeyPressMsg, keys *keyMap, width, height int) (mode, tea.Cmd) {
	h := height - 3
	next := modeDetail
	switch {
	case key.Matches(msg, keys.Back), msg.String() == "enter":
		next = modeNormal
	case key.Matches(msg, keys.Quit):
		return modeDetail, tea.Quit
	case key.Matches(msg, keys.Help):
		next = modeHelp
	case key.Matches(msg, keys.Up):
		d.detailOffset--
	case key.Matches(msg, keys.Down):
		d.detailOffset++
	case key.Matches(msg, keys.PageUp):
		d.detailOffset -= h
	case key.Matches(msg, keys.PageDown), msg.String() == "space":
		d.detailOffset += h
	case key.Matches(msg, keys.Top):
		d.detailOffset = 0
	case key.Matches(msg, keys.Bottom):
		d.detailOffset = len(d.detailLines)
	}
	d.detailOffset = max(min(d.detailOffset, len(d.wrapped(width))-h), 0)
	return next, nil
}

// wrapped wraps the detail lines to width, continuation lines indented
// under their line's text.
func (d *detailView) wrapped(width int) []string {
	var out []string
	for _, l := range d.detailLines {
		indent := min(len(l)-len(strings.TrimLeft(l, " "))+2, 12)
		wrapped := ansi.Wrap(l, max(width-1-indent, 10), " ,")
		for k, wl := range strings.Split(wrapped, "\n") {
			if k > 0 {
				wl = strings.Repeat(" ", indent) + strings.TrimLeft(wl, " ")
			}
			out = append(out, wl)
		}
	}
	return out
}

// view draws the title and the lines that fit in height, saying which
// lines are shown when not all fit.
func (d *detailView) view(st *styles, width, height int) []string {
	lines := d.wrapped(width)
	d.detailOffset = max(min(d.detailOffset, len(lines)-height+1), 0)
	end := min(d.detailOffset+height-1, len(lines))
	title := d.detailTitle
	if len(lines) > height-1 {
		title += fmt.Sprintf("  (%d-%d of %d)", d.detailOffset+1, end, len(lines))
	}
	return append([]string{st.header.Render(title)}, lines[d.detailOffset:end]...)
}

// wrappedDetail is the detail's lines as the terminal shows them.
func (m *Model) wrappedDetail() []string { return m.detailView.wrapped(m.width) }

// openDetail shows the details of the row under the cursor.
func (m *Model) openDetail() {
	if m.rep == nil {
		return
	}
	r := m.tables[m.view].current()
	if r == nil {
		return
	}
	var title string
	var lines []string
	switch m.view {
	case viewPending:
		g := &m.rep.Pending[r.ref]
		title, lines = "Pending: "+g.Owner, m.rep.Detail(g)
	case viewProposed:
		title, lines = m.proposedDetail(r)
	case viewNodes:
		title, lines = m.nodeDetail(&m.rep.Nodes[r.ref])
	case viewConsolidation:
		title, lines = actionDetail(&m.rep.Actions[r.ref])
	}
	m.detailView.open(title, lines)
	m.mode = modeDetail
}

// coveredNote says what of a proposed node's list price the Commitments
// pay for in the plan's bill; nothing when they pay for none of it.
func coveredNote(covered float64) string {
	if covered <= 0 {
		return ""
	}
	return fmt.Sprintf(" at list price; the commitments cover %s of it", pct(covered))
}

func (m *Model) proposedDetail(r *row) (string, []string) {
	var p report.ProposedNode
	status, covered := "proposed", 0.0
	if r.ref >= 0 {
		p = m.rep.Proposed[r.ref]
		covered = m.rep.Covered(p.Index)
	} else {
		l := m.launches[-1-r.ref]
		n := l.req.Node
		p = report.ProposedNode{Name: r.cells[0], Pool: n.Pool, InstanceType: n.InstanceType, Zone: n.Zone, Capacity: n.CapacityType,
			Price: n.Price, Pods: l.req.Pods, Requested: n.Requested, Allocatable: n.Allocatable, Reason: n.Reason,
			Usage: report.NewUsage(n.Requested, n.Allocatable)}
		status = m.launchFlow.status(l)
	}
	lines := []string{
		fmt.Sprintf("%s: %s in %s, %s, NodePool %s", p.Name, p.InstanceType, p.Zone, p.Capacity, p.Pool),
		fmt.Sprintf("Price: $%.4f/h ($%.2f/month)%s", p.Price, p.Price*plan.HoursPerMonth, coveredNote(covered)),
		fmt.Sprintf("Requested/allocatable: CPU %s/%s (%s), memory %s/%s (%s)",
			p.Usage.CPURequested, p.Usage.CPUAllocatable, pct(ratio(p.Requested[solver.CPU], p.Allocatable[solver.CPU])),
			p.Usage.MemoryRequested, p.Usage.MemoryAllocatable, pct(ratio(p.Requested[solver.Memory], p.Allocatable[solver.Memory]))),
		"Status: " + status,
		"Why: " + p.Reason,
	}
	if len(p.InstanceTypeOptions) > 0 {
		lines = append(lines, allowedTypesLine(p.InstanceTypeOptions))
	}
	lines = append(lines, "", fmt.Sprintf("Pods (%d):", len(p.Pods)))
	for _, pod := range p.Pods {
		lines = append(lines, "  "+pod)
	}
	return "Proposed: " + p.Name, lines
}

// allowedTypesShown is how many of a proposed node's allowed instance
// types its detail names; the rest are counted (explain -o json lists
// them all).
const allowedTypesShown = 8

// allowedTypesLine is a proposed node's instance type options as its
// detail shows them: how many, then the first few (the planned type first,
// then by price), as k9s shows a long list's head and its length.
func allowedTypesLine(options []string) string {
	shown := options[:min(len(options), allowedTypesShown)]
	s := fmt.Sprintf("Allowed types: %d, the cloud picks among them (planned first, then by price): %s", len(options), strings.Join(shown, ", "))
	if more := len(options) - len(shown); more > 0 {
		s += fmt.Sprintf(", … %d more (explain -o json lists them all)", more)
	}
	return s
}

func (m *Model) nodeDetail(n *report.NodeRow) (string, []string) {
	price := "not in the catalog"
	if n.Price != nil {
		price = fmt.Sprintf("$%.4f/h ($%.2f/month)", *n.Price, *n.Price*plan.HoursPerMonth)
	}
	lines := []string{
		fmt.Sprintf("%s: %s, %s, zone %s, NodePool %s", n.Name, dash(n.InstanceType), dash(n.Capacity), dash(n.Zone), dash(n.Pool)),
		"Price: " + price,
		"Status: " + n.Status,
		fmt.Sprintf("CPU requested %s of %s allocatable (%s)", n.Usage.CPURequested, n.Usage.CPUAllocatable, pct(ratio(n.CPUReq, n.CPUAlloc))),
		fmt.Sprintf("Memory requested %s of %s allocatable (%s)", n.Usage.MemoryRequested, n.Usage.MemoryAllocatable, pct(ratio(n.MemReq, n.MemAlloc))),
		fmt.Sprintf("Pods %d of %d", n.Pods, n.MaxPods),
	}
	if n.Claim {
		return "NodeClaim: " + n.Name, lines
	}
	var pods []string
	for k, p := range m.store.pods {
		if p.Spec.NodeName == n.Name {
			pods = append(pods, fmt.Sprintf("%s (%s)", k, p.Status.Phase))
		}
	}
	slices.Sort(pods)
	lines = append(lines, "", fmt.Sprintf("Pods on the node (%d):", len(pods)))
	for _, p := range pods {
		lines = append(lines, "  "+p)
	}
	return "Node: " + n.Name, lines
}

func actionDetail(a *report.ActionRow) (string, []string) {
	if a.Kind == "-" {
		return "Left alone: " + a.Nodes, []string{a.Nodes + " is not consolidated:", "  " + a.Reason}
	}
	lines := []string{
		fmt.Sprintf("%s %s: saves $%.4f/h ($%.2f/month)", a.Kind, a.Nodes, a.Saving, a.Saving*plan.HoursPerMonth),
		"Why: " + a.Reason,
	}
	if a.Replacement != "" {
		lines = append(lines, "Launches: "+a.Replacement)
	}
	lines = append(lines, "", fmt.Sprintf("Pods that would move (%d):", len(a.Moves)))
	for _, mv := range a.Moves {
		lines = append(lines, fmt.Sprintf("  %s → %s", mv.Pod, mv.To))
	}
	return "Consolidation: " + a.Kind + " " + a.Nodes, lines
}
