package tui

import (
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
)

// View draws the screen.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "kubectl rightsize"
	return v
}

// Render returns the screen as text, exactly height lines of at most width
// cells.
func (m *Model) Render() string {
	w, h := m.width, m.height
	lines := []string{m.headerLine(), m.tabsLine()}
	var body []string
	switch m.mode {
	case modeHelp:
		body = m.helpLines()
	case modeDetail:
		body = m.detailView.view(&m.st, w, h-3)
	case modeConfirm:
		body = m.launchFlow.confirmView(&m.st, w)
	default:
		// A failed re-plan's error is wrapped, not cut at the edge: its
		// end says what was wrong (at most 3 lines, then cut).
		summary := strings.Split(ansi.Wrap(m.summaryLine(), max(w, 20), " "), "\n")
		summary = summary[:min(len(summary), 3)]
		body = append(append(summary, m.sourceLine()), m.bodyLines(h-4-len(summary))...)
	}
	lines = append(lines, body...)
	if len(lines) > h-1 {
		lines = lines[:h-1]
	}
	for len(lines) < h-1 {
		lines = append(lines, "")
	}
	lines = append(lines, m.footerLine())
	for i, l := range lines {
		if ansi.StringWidth(l) > w {
			lines[i] = ansi.Truncate(l, w, "")
		}
	}
	return strings.Join(lines, "\n")
}

// headerLine: context, cluster cost, nodes, pending pods, savings.
func (m *Model) headerLine() string {
	ctx := m.opts.Context
	if ctx == "" {
		ctx = "-"
	}
	parts := []string{"rightsize", ctx}
	if m.opts.ReadOnly {
		parts[0] = "rightsize READ-ONLY"
	}
	if c := m.opts.DirectCloud; c != "" {
		parts[0] = "rightsize DIRECT:" + c // launches go to the cloud, not to an operator
	}
	r := m.rep
	switch {
	case r == nil && !m.synced:
		parts = append(parts, "reading the cluster…")
	case r == nil:
		parts = append(parts, "planning…")
	case r.Live:
		parts = append(parts,
			fmt.Sprintf("$%.2f/h $%.0f/mo", r.ClusterPrice, r.ClusterPrice*plan.HoursPerMonth),
			fmt.Sprintf("%d nodes", r.ClusterNodes),
			fmt.Sprintf("%d pending", r.PendingPods),
			fmt.Sprintf("save $%.2f/h", r.Saving()))
	default:
		parts = append(parts, fmt.Sprintf("%d pods", r.PendingPods), fmt.Sprintf("plan $%.2f/h $%.0f/mo", r.Plan.TotalPrice, r.Plan.TotalPrice*plan.HoursPerMonth))
		if r.Spending != nil {
			parts = append(parts, fmt.Sprintf("bill $%.2f/h with commitments", r.Spending.Bill.Total))
		}
	}
	// What the input lacked and was planned for, as explain says; the
	// detail view (enter) has explain's sentences.
	if r != nil {
		var lacked []string
		if r.DefaultPool != "" {
			lacked = append(lacked, "default NodePool")
		}
		if len(r.EKSDaemonSets) > 0 {
			lacked = append(lacked, "EKS DaemonSets")
		}
		if len(lacked) > 0 {
			parts = append(parts, "planned with "+strings.Join(lacked, " + "))
		}
		// The input's warnings (unknown fields, skipped kinds, pools
		// left out) change what is planned: count them, as explain
		// prints them.
		if n := len(r.Warnings); n == 1 {
			parts = append(parts, "1 warning (explain prints it)")
		} else if n > 1 {
			parts = append(parts, fmt.Sprintf("%d warnings (explain prints them)", n))
		}
	}
	return m.st.title.Render(strings.Join(parts, " │ "))
}

// tabsLine: the four views with their counts; the what-if on the right.
func (m *Model) tabsLine() string {
	var b strings.Builder
	for i := range numViews {
		n := m.badge(i)
		label := fmt.Sprintf(" %d %s %d ", i+1, viewNames[i], n)
		if m.width < 70 {
			label = fmt.Sprintf(" %d %s ", i+1, viewNames[i][:4])
		}
		if i == m.view {
			b.WriteString(m.st.tabActive.Render(label))
		} else {
			b.WriteString(m.st.tab.Render(label))
		}
	}
	// The what-if of the plan on screen, not the one asked for: until its
	// plan arrives (or if it fails) the screen shows the previous one.
	if m.rep != nil && m.rep.WhatIf.Active() {
		b.WriteString(m.st.warn.Render(fmt.Sprintf("  what-if: %s Δ %+.4f $/h", m.rep.WhatIf.String(), m.rep.Delta())))
	}
	if m.planning {
		b.WriteString(m.st.dim.Render("  re-planning…"))
	}
	return b.String()
}

// badge is the count on view i's tab: what the view's summary line counts
// first, over the rows the filter shows (pods pending, proposed nodes,
// cluster nodes without the NodeClaims in flight, consolidation actions).
func (m *Model) badge(i int) int {
	t := m.tables[i]
	if m.rep == nil {
		return len(t.visible)
	}
	n := 0
	for _, v := range t.visible {
		ref := t.rows[v].ref
		switch i {
		case viewPending:
			n += len(m.rep.Pending[ref].Pods)
		case viewNodes:
			if !m.rep.Nodes[ref].Claim {
				n++
			}
		case viewConsolidation:
			if m.rep.Actions[ref].Kind != "-" {
				n++
			}
		default:
			n++
		}
	}
	return n
}

// summaryLine says what the current view adds up to.
func (m *Model) summaryLine() string {
	r := m.rep
	if r == nil {
		if m.planErr != nil {
			return m.st.err.Render("planning failed: " + oneLine(m.planErr.Error()))
		}
		return m.st.dim.Render("waiting for the first plan…")
	}
	var s string
	if m.planErr != nil {
		// A re-plan failed (a what-if region the catalog lacks): say so
		// above the last good plan, which stays on screen.
		return m.st.err.Render("re-planning failed, showing the last plan: " + oneLine(m.planErr.Error()))
	}
	switch m.view {
	case viewPending:
		newN, cannot := 0, 0
		for i := range r.Pending {
			switch r.Pending[i].Outcome {
			case "new":
				newN += len(r.Pending[i].Pods)
			case "unschedulable", "not planned":
				cannot += len(r.Pending[i].Pods)
			}
		}
		s = fmt.Sprintf("%d pending pod(s) in %d group(s): %d go on new nodes, %d cannot be placed. enter: why", r.PendingPods, len(r.Pending), newN, cannot)
	case viewProposed:
		s = fmt.Sprintf("Plan: %d node(s) $%.4f/h ($%.2f/mo)", len(r.Proposed), r.Plan.TotalPrice, r.Plan.TotalPrice*plan.HoursPerMonth)
		switch sp := r.Spending; {
		case sp != nil:
			// The list prices above are not what is paid: the bill is,
			// as explain prints it, and its bound is the bill's.
			s += fmt.Sprintf(" at list; bill with commitments $%.4f/h ($%.4f fees + $%.4f not covered), planned ignoring them $%.4f/h",
				sp.Bill.Total, sp.Bill.Sunk, sp.Bill.OnDemand, sp.Blind.Total)
			if sp.Bound > 0 {
				s += fmt.Sprintf(", bill's lower bound $%.4f/h (%.2f×)", sp.Bound, sp.Bill.Total/sp.Bound)
			}
		case r.Plan.LowerBound > 0 && len(r.Proposed) > 0:
			s += fmt.Sprintf(", lower bound $%.4f/h (%.2f×)", r.Plan.LowerBound, r.Plan.TotalPrice/r.Plan.LowerBound)
		}
		switch {
		case r.WhatIf.Active() && r.Spending != nil:
			// The what-if's Δ compares what the new nodes add to the bill.
			s += fmt.Sprintf(", the new nodes add $%.4f/h to it, $%.4f/h without what-if", r.Cost(), r.Baseline)
		case r.WhatIf.Active():
			s += fmt.Sprintf(", without what-if $%.4f/h", r.Baseline)
		}
		if len(m.selected) > 0 {
			s += fmt.Sprintf(" · %d selected", len(m.selected))
		}
	case viewNodes:
		if !r.Live {
			s = "offline (-f): no cluster nodes; the plan is in view 2"
			break
		}
		inflight := 0
		for i := range r.Nodes {
			if r.Nodes[i].Claim {
				inflight++
			}
		}
		s = fmt.Sprintf("%d node(s) $%.4f/h ($%.2f/mo), %d NodeClaim(s) in flight", r.ClusterNodes, r.ClusterPrice, r.ClusterPrice*plan.HoursPerMonth, inflight)
	case viewConsolidation:
		if r.Consolidation == nil {
			s = "offline (-f): consolidation needs a live cluster's nodes"
			break
		}
		c := r.Consolidation
		s = fmt.Sprintf("Saving available $%.4f/h ($%.2f/mo) in %d action(s); now $%.4f/h, packed from scratch $%.4f/h (read-only)",
			c.Saving, c.Saving*plan.HoursPerMonth, len(c.Actions), c.CurrentPrice, c.TargetPrice)
	}
	if t := m.tables[m.view]; t.filter != "" {
		s += fmt.Sprintf(" · filter %q: %d of %d", t.filter, len(t.visible), len(t.rows))
	}
	return m.st.dim.Render(s)
}

// sourceLine says where the prices on screen come from and how old they
// are, as explain's "Prices:" line: the plan's report's source (the
// embedded catalog's date and the region, or the --instance-types file).
// Blank until the first plan.
func (m *Model) sourceLine() string {
	if m.rep == nil || m.rep.Source == "" {
		return ""
	}
	return m.st.dim.Render("prices: " + m.rep.Source)
}

// bodyLines draws the current view's table.
func (m *Model) bodyLines(height int) []string {
	t := m.tables[m.view]
	if m.rep == nil {
		return nil
	}
	var mark func(*row) string
	if m.view == viewProposed {
		mark = func(r *row) string {
			if m.selected[r.key] {
				return "*"
			}
			return " "
		}
	}
	lines := t.render(m.width, height-1, &m.st, mark)
	if len(t.rows) == 0 {
		lines = append(lines, "  "+m.emptyText())
	}
	return lines
}

func (m *Model) emptyText() string {
	switch m.view {
	case viewPending:
		return "No pending pods."
	case viewProposed:
		if r := m.rep; r != nil && len(r.Plan.Unschedulable) > 0 {
			// Never "no new nodes needed" while pods cannot be placed.
			return fmt.Sprintf("No new node can be proposed: %d pod(s) cannot be placed (pending view: enter for why).", len(r.Plan.Unschedulable))
		}
		return "No new nodes needed."
	case viewNodes:
		return "No nodes."
	}
	return "Nothing to consolidate."
}

// footerLine: the filter or prompt being typed, a message, or key hints.
func (m *Model) footerLine() string {
	switch m.mode {
	case modeFilter, modePrompt:
		return m.prompt.view()
	case modeDetail:
		return m.st.dim.Render("j/k scroll · esc back · ? help · q quit")
	case modeHelp:
		return m.st.dim.Render("esc or ? closes the help")
	case modeConfirm:
		return m.st.warn.Render("y: launch · n/esc: cancel")
	}
	if m.flash != "" {
		if m.flashErr {
			return m.st.err.Render(m.flash)
		}
		return m.st.ok.Render(m.flash)
	}
	if m.watchErr != "" {
		return m.st.err.Render(m.watchErr)
	}
	hints := "?:help 1-4/tab:views j/k:move /:filter enter:details s:sort"
	if m.launchDisabled() == "" || m.opts.Launcher != nil && !m.opts.ReadOnly {
		hints += " space:select L:launch"
	}
	hints += " c/f/r:what-if q:quit"
	return m.st.dim.Render(hints)
}

// helpLines lists every key, in two columns when the terminal is wide enough.
func (m *Model) helpLines() []string {
	groups := m.keys.helpGroups()
	render := func(gs []helpGroup) []string {
		var lines []string
		for _, g := range gs {
			var enabled []string
			for _, b := range g.bindings {
				if b.Enabled() {
					h := b.Help()
					enabled = append(enabled, fmt.Sprintf("  %-12s %s", h.Key, h.Desc))
				}
			}
			if len(enabled) == 0 {
				continue
			}
			lines = append(lines, g.title)
			lines = append(lines, enabled...)
		}
		return lines
	}
	head := []string{m.st.header.Render("Keys")}
	if m.opts.ReadOnly {
		head = append(head, "Read-only: selecting and launching are off.")
	}
	if m.opts.Manifests != nil {
		// Offline there is nothing to launch into: no launch keys.
		groups = slices.DeleteFunc(groups, func(g helpGroup) bool { return g.title == "Launch" })
		head = append(head, "Offline (-f): nothing to launch into; c, f and r re-plan.")
	}
	left, right := render(groups[:3]), render(groups[3:])
	if m.width < 72 {
		return append(append(head, left...), right...)
	}
	out := head
	for i := range max(len(left), len(right)) {
		l, r := "", ""
		if i < len(left) {
			l = left[i]
		}
		if i < len(right) {
			r = right[i]
		}
		out = append(out, pad(l, 40, false)+r)
	}
	return out
}
