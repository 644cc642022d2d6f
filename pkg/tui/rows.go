package tui

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/launch"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/report"
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
	// Selections of nodes the new plan no longer proposes are dropped.
	keep := map[string]bool{}
	for i := range r.Proposed {
		if k := proposedKey(&r.Proposed[i]); m.selected[k] {
			keep[k] = true
		}
	}
	m.selected = keep
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
			if m.launched[proposedKey(p)] {
				continue // its launch row below shows it
			}
			rows = append(rows, row{
				key: proposedKey(p),
				cells: []string{p.Name, p.Pool, p.InstanceType, p.Zone, p.Capacity, fmt.Sprintf("%.4f", p.Price), fmt.Sprint(len(p.Pods)),
					pct(p.CPU), pct(p.Memory), "proposed"},
				nums: []float64{0, 0, 0, 0, 0, p.Price, float64(len(p.Pods)), p.CPU, p.Memory},
				ref:  i,
			})
		}
	}
	for i, l := range m.launches {
		n := l.req.Node
		name := l.claim
		if name == "" {
			name = l.req.Name
		}
		rows = append(rows, row{
			key: fmt.Sprintf("launch/%d", i),
			cells: []string{name, n.Pool, n.InstanceType, n.Zone, n.CapacityType, fmt.Sprintf("%.4f", n.Price), fmt.Sprint(len(l.req.Pods)),
				pct(ratio(n.Requested[solver.CPU], n.Allocatable[solver.CPU])), pct(ratio(n.Requested[solver.Memory], n.Allocatable[solver.Memory])),
				m.launchStatus(l)},
			nums: []float64{0, 0, 0, 0, 0, n.Price, float64(len(l.req.Pods))},
			ref:  -1 - i,
		})
	}
	m.tables[viewProposed].setRows(rows)
}

// launchStatus says how far a launched node got.
func (m *Model) launchStatus(l *launchState) string {
	_, direct := m.opts.Launcher.(launch.Registrar)
	switch {
	case l.err != nil:
		return "failed: " + oneLine(l.err.Error())
	case l.claim == "" && direct:
		return "launching…"
	case l.claim == "":
		return "creating NodeClaim…"
	case l.launched.Direct != nil:
		return m.directStatus(l)
	}
	u := m.store.claims[l.claim]
	if u == nil {
		if l.done {
			return "done: NodeClaim gone"
		}
		return "NodeClaim " + l.claim + " created"
	}
	c := claimOf(u)
	node := m.store.nodeOfClaim(&c)
	switch {
	case node == nil:
		return "NodeClaim " + report.ClaimPhase(c) + ", no node yet"
	case !nodeReady(node):
		return "node registered, not Ready"
	}
	running, _ := m.store.podsRunningOn(l.req.Pods, node.Name)
	if running == len(l.req.Pods) {
		l.done = true
	}
	return fmt.Sprintf("node Ready, %d/%d pods Running", running, len(l.req.Pods))
}

// directStatus says how far a node launched through the cloud provider
// got: instance launched, node registered, Ready, pods Running.
func (m *Model) directStatus(l *launchState) string {
	node := m.store.nodeOfInstance(l.launched.Direct.Status.ProviderID, l.claim)
	switch {
	case node == nil:
		return "launched, waiting for its node"
	case !nodeReady(node):
		return "node registered, not Ready"
	case !l.open && l.regErr != nil:
		return "node Ready; opening it to pods failed: " + oneLine(l.regErr.Error())
	case !l.open:
		return "node Ready, opening it to pods…"
	}
	// Counted wherever they run: the scheduler has the last word.
	running := m.store.podsRunning(l.req.Pods)
	if running == len(l.req.Pods) {
		l.done = true
	}
	return fmt.Sprintf("node Ready, %d/%d pods Running", running, len(l.req.Pods))
}

// directInFlight are the direct launches whose node has not registered and
// that no NodeClaim in the store stands for: capacity on its way, which
// the plan uses first instead of proposing the same node again.
func (m *Model) directInFlight() []plan.Claim {
	var out []plan.Claim
	for _, l := range m.launches {
		c := l.launched.Direct
		if c == nil || m.store.claims[c.Name] != nil || m.store.nodeOfInstance(c.Status.ProviderID, c.Name) != nil {
			continue
		}
		price, _ := strconv.ParseFloat(c.Status.PricePerHour, 64)
		out = append(out, plan.Claim{
			Name: c.Name, Pool: l.req.Node.Pool, InstanceType: c.Status.InstanceType, Zone: c.Status.Zone, CapacityType: c.Status.CapacityType,
			Price: price, Conditions: []string{"Launched"}, Requests: c.Spec.Resources.Requests, Created: l.at,
		})
	}
	return out
}

func proposedKey(p *report.ProposedNode) string {
	first := ""
	if len(p.Pods) > 0 {
		first = p.Pods[0]
	}
	return strings.Join([]string{p.Pool, p.InstanceType, p.Zone, p.Capacity, first}, "|")
}

// toggleSelect selects or unselects the proposed node under the cursor.
func (m *Model) toggleSelect() {
	if m.view != viewProposed || m.rep == nil {
		return
	}
	if reason := m.launchDisabled(); reason != "" {
		m.setFlash(reason, true)
		return
	}
	r := m.tables[viewProposed].current()
	if r == nil || r.ref < 0 {
		return
	}
	if m.selected[r.key] {
		delete(m.selected, r.key)
	} else {
		m.selected[r.key] = true
	}
	m.tables[viewProposed].move(1)
}

func (m *Model) selectAll() {
	if m.view != viewProposed || m.rep == nil {
		return
	}
	if reason := m.launchDisabled(); reason != "" {
		m.setFlash(reason, true)
		return
	}
	if len(m.selected) == len(m.rep.Proposed) {
		m.selected = map[string]bool{}
		return
	}
	for i := range m.rep.Proposed {
		if k := proposedKey(&m.rep.Proposed[i]); !m.launched[k] {
			m.selected[k] = true
		}
	}
}

// launchDisabled says why launching is off, or "".
func (m *Model) launchDisabled() string {
	switch {
	case m.opts.ReadOnly:
		return "read-only: launching is off (started with --read-only)"
	case m.opts.Manifests != nil:
		return "offline (-f): there is no cluster to launch into; run without -f against a cluster"
	case m.opts.Launcher == nil:
		if m.opts.NoLaunch != "" {
			return m.opts.NoLaunch
		}
		return "launching is not available"
	case m.whatIf.Active():
		return "a what-if is active (" + m.whatIf.String() + "); press x to reset it before launching"
	}
	return ""
}

// askLaunch opens the confirmation for the selected nodes (or the one
// under the cursor when none is selected). A Launcher whose summary
// depends on the cluster (launch.Prober: is an operator running?) is
// asked to look again; the command it returns redraws the confirmation.
func (m *Model) askLaunch() tea.Cmd {
	if m.rep == nil {
		return nil
	}
	if reason := m.launchDisabled(); reason != "" {
		m.setFlash(reason, true)
		return nil
	}
	var inFlight []string
	for _, n := range m.rep.Existing {
		if n.InFlight {
			inFlight = append(inFlight, n.Name)
		}
	}
	var reqs []launch.Request
	var keys []string
	add := func(p *report.ProposedNode) {
		reqs = append(reqs, launch.Request{Name: p.Name, Node: m.rep.Plan.NewNodes[p.Index], Pods: slices.Clone(p.Pods), Region: m.rep.Region, InFlight: inFlight})
		keys = append(keys, proposedKey(p))
	}
	for i := range m.rep.Proposed {
		if p := &m.rep.Proposed[i]; m.selected[proposedKey(p)] && !m.launched[proposedKey(p)] {
			add(p)
		}
	}
	if len(reqs) == 0 && m.view == viewProposed {
		if r := m.tables[viewProposed].current(); r != nil && r.ref >= 0 {
			add(&m.rep.Proposed[r.ref])
		}
	}
	if len(reqs) == 0 {
		m.setFlash("nothing to launch: select proposed nodes with space in view 2", true)
		return nil
	}
	m.confirm, m.confirmKeys = reqs, keys
	m.mode = modeConfirm
	p, ok := m.opts.Launcher.(launch.Prober)
	if !ok {
		return nil
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Probe(ctx)
		return probedMsg{}
	}
}

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
		title, lines = m.actionDetail(&m.rep.Actions[r.ref])
	}
	m.detailTitle, m.detailLines, m.detailOffset = title, lines, 0
	m.mode = modeDetail
}

func (m *Model) proposedDetail(r *row) (string, []string) {
	var p report.ProposedNode
	status := "proposed"
	if r.ref >= 0 {
		p = m.rep.Proposed[r.ref]
	} else {
		l := m.launches[-1-r.ref]
		n := l.req.Node
		p = report.ProposedNode{Name: r.cells[0], Pool: n.Pool, InstanceType: n.InstanceType, Zone: n.Zone, Capacity: n.CapacityType,
			Price: n.Price, Pods: l.req.Pods, Requested: n.Requested, Allocatable: n.Allocatable, Reason: n.Reason}
		status = m.launchStatus(l)
	}
	lines := []string{
		fmt.Sprintf("%s: %s in %s, %s, NodePool %s", p.Name, p.InstanceType, p.Zone, p.Capacity, p.Pool),
		fmt.Sprintf("Price: $%.4f/h ($%.2f/month)", p.Price, p.Price*plan.HoursPerMonth),
		fmt.Sprintf("Requested/allocatable: CPU %s/%s (%s), memory %s/%s (%s)",
			solver.FormatQuantity(solver.CPU, p.Requested[solver.CPU]), solver.FormatQuantity(solver.CPU, p.Allocatable[solver.CPU]), pct(ratio(p.Requested[solver.CPU], p.Allocatable[solver.CPU])),
			solver.FormatQuantity(solver.Memory, p.Requested[solver.Memory]), solver.FormatQuantity(solver.Memory, p.Allocatable[solver.Memory]), pct(ratio(p.Requested[solver.Memory], p.Allocatable[solver.Memory]))),
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
		fmt.Sprintf("CPU requested %s of %s allocatable (%s)", solver.FormatQuantity(solver.CPU, n.CPUReq), solver.FormatQuantity(solver.CPU, n.CPUAlloc), pct(ratio(n.CPUReq, n.CPUAlloc))),
		fmt.Sprintf("Memory requested %s of %s allocatable (%s)", solver.FormatQuantity(solver.Memory, n.MemReq), solver.FormatQuantity(solver.Memory, n.MemAlloc), pct(ratio(n.MemReq, n.MemAlloc))),
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

func (m *Model) actionDetail(a *report.ActionRow) (string, []string) {
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
