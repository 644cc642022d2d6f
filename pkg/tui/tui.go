// Package tui is `kubectl rightsize tui`: a bubbletea program that shows
// why pods are pending, the right-sized nodes that would take them and what
// they cost, the current nodes with their utilisation and price, and what
// consolidation would save, and launches proposed nodes from the screen.
//
// Data flows one way. A watcher (pkg/tui/watch) turns informer events into
// messages; Update records them in the program's own store and, debounced,
// starts a re-plan as a tea.Cmd (pkg/tui/report runs the solver off the UI
// goroutine); the finished report arrives as a message and View draws it.
// Nothing is shared under a lock and nothing polls.
package tui

import (
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/report"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/launch"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/watch"
)

// Views, in the order of their number keys.
const (
	viewPending = iota
	viewProposed
	viewNodes
	viewConsolidation
	numViews
)

var viewNames = [numViews]string{"Pending", "Proposed", "Nodes", "Consolidation"}

// modes say what keys mean now.
type mode int

const (
	modeNormal mode = iota
	modeFilter
	modeDetail
	modeHelp
	modeConfirm
	modePrompt
)

// DefaultDebounce is how long the program waits after the last change
// before it re-plans; MaxDebounce bounds the wait when changes keep coming.
const (
	DefaultDebounce = 300 * time.Millisecond
	MaxDebounce     = 2 * time.Second
	// DefaultNominationWait is how long a direct launch waits to see the
	// nominations of its pods before it opens the node anyway; the
	// operator waits as long for its cache.
	DefaultNominationWait = 2 * time.Second
)

// Options configure the program.
type Options struct {
	// Context names the kubeconfig context in the header ("offline" with -f).
	Context string
	// Manifests, when set, make the program work offline on them.
	Manifests *snapshot.Manifests
	Catalog   plan.Catalog
	Default   plan.DefaultPool
	// Timeout bounds each solve.
	Timeout time.Duration
	// ReadOnly removes every action.
	ReadOnly bool
	// Launcher creates NodeClaims; nil when launching is not possible, with
	// NoLaunch saying why.
	Launcher launch.Launcher
	NoLaunch string
	// DirectCloud names the cloud the Launcher launches on directly
	// (--cloud), for the header; "" when launches go through NodeClaims.
	DirectCloud string
	// Ensure starts watching a resource once it exists (the watcher's Ensure).
	Ensure func(schema.GroupVersionResource) error
	// Debounce is the quiet time before a re-plan (DefaultDebounce when 0).
	Debounce time.Duration
	// NominationWait bounds how long a direct launch waits to see its
	// pods' nominations before it opens the node to pods
	// (DefaultNominationWait when 0).
	NominationWait time.Duration
	NoColor        bool
	// Now returns the time for ages (time.Now when nil).
	Now func() time.Time
}

// Model is the bubbletea model. It draws the tables and delegates to its
// parts, each with its own keys and messages: the plan loop (re-planning
// as the cluster changes), the launch flow (selection, confirmation,
// progress), the detail view and the prompt line. The parts are embedded
// so that their state reads as the model's own (m.rep, m.launches).
type Model struct {
	opts Options
	keys keyMap
	st   styles

	width, height int
	store         *store // the cluster as watched
	watchErr      string

	view   int
	tables [numViews]*table
	mode   mode

	planLoop
	launchFlow
	detailView
	prompt promptLine

	// flash is a one-line message in the footer until the next key.
	flash    string
	flashErr bool
}

// ageTickMsg moves the ages on, live, without a re-plan.
type ageTickMsg struct{}

// New returns the model. Live, feed it the watcher's messages with
// tea.Program.Send; offline (opts.Manifests set) it plans at Init.
func New(opts Options) *Model {
	if opts.Debounce == 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NominationWait == 0 {
		opts.NominationWait = DefaultNominationWait
	}
	m := &Model{opts: opts, keys: newKeyMap(opts.ReadOnly), st: newStyles(opts.NoColor), width: 80, height: 24, store: newStore(), tables: newTables()}
	m.planLoop = planLoop{opts: &m.opts, planner: report.NewPlanner(), cluster: m.cluster}
	m.launchFlow = newLaunchFlow(m, &m.opts, m.store)
	if opts.Manifests != nil {
		m.synced = true
		m.tables[viewPending].cols[5].hidden = true // no scheduler offline
	}
	return m
}

// newTables returns the four views' tables, empty.
func newTables() [numViews]*table {
	var t [numViews]*table
	t[viewPending] = newTable([]column{
		{title: "NAMESPACE", max: 16, drop: 2},
		{title: "OWNER", max: 32},
		{title: "PODS", right: true, numeric: true},
		{title: "REQUESTS", max: 22, drop: 4},
		{title: "NODE", max: 24},
		{title: "SCHEDULER", flex: true, drop: 3},
		{title: "REASON", flex: true},
	})
	t[viewProposed] = newTable([]column{
		{title: "NAME"},
		{title: "NODEPOOL", max: 16, drop: 3},
		{title: "TYPE", max: 20},
		{title: "ZONE", max: 14, drop: 4},
		{title: "CAPACITY", drop: 5},
		{title: "$/H", right: true, numeric: true},
		{title: "PODS", right: true, numeric: true},
		{title: "CPU", right: true, numeric: true},
		{title: "MEM", right: true, numeric: true},
		{title: "STATUS", flex: true, drop: 2},
	})
	t[viewNodes] = newTable([]column{
		{title: "NAME", max: 30},
		{title: "TYPE", max: 16},
		{title: "CAPACITY", drop: 4},
		{title: "$/H", right: true, numeric: true},
		{title: "CPU", numeric: true},
		{title: "MEMORY", numeric: true},
		{title: "PODS", right: true, numeric: true},
		{title: "NODEPOOL", max: 16, drop: 3},
		{title: "ZONE", max: 14, drop: 5},
		{title: "AGE", right: true, numeric: true, drop: 2},
		{title: "STATUS", flex: true, drop: 1},
	})
	t[viewConsolidation] = newTable([]column{
		{title: "ACTION"},
		{title: "NODES", max: 30},
		{title: "REPLACEMENT", max: 30, drop: 3},
		{title: "MOVES", right: true, numeric: true, drop: 2},
		{title: "SAVING $/H", right: true, numeric: true},
		{title: "WHY", flex: true},
	})
	return t
}

// cluster is what a live plan reads: the store's objects, and its
// NodeClaims with this run's direct launches not seen as claims yet.
func (m *Model) cluster() (*snapshot.Objects, []plan.Claim) {
	return m.store.objects(), append(m.store.claimList(), m.launchFlow.inFlight()...)
}

// ageTick is how often ages move on, live.
const ageTick = time.Second

// Init plans at once offline; live, the watcher's first messages start it,
// and the ages start ticking.
func (m *Model) Init() tea.Cmd {
	if m.opts.Manifests != nil {
		return m.planLoop.start()
	}
	return tickAges()
}

func tickAges() tea.Cmd {
	return tea.Tick(ageTick, func(time.Time) tea.Msg { return ageTickMsg{} })
}

// Report returns the last report (nil before the first plan), for tests.
func (m *Model) Report() *report.Report { return m.rep }

// Update handles a message: keys and the window here, the rest in the part
// whose message it is.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = max(msg.Width, 20), max(msg.Height, 6)
		return m, nil
	case tea.KeyPressMsg:
		return m, m.onKey(msg)
	case watch.Batch, watch.Synced, watch.Error:
		return m, m.onWatch(msg)
	case debounceMsg, planMsg:
		rep, cmd := m.planLoop.update(msg)
		if rep != nil {
			m.setReport(rep)
		}
		return m, cmd
	case launchMsg, resumeMsg, registerMsg, openDueMsg, probedMsg:
		return m, m.launchFlow.update(msg)
	case ageTickMsg:
		if m.rep != nil {
			m.refreshNodes()
		}
		return m, tickAges()
	}
	return m, nil
}

// onWatch records what the watcher saw and plans once the cluster is synced.
func (m *Model) onWatch(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case watch.Batch:
		m.store.apply(msg)
		register := m.launchFlow.clusterChanged()
		if !m.synced {
			return register
		}
		return tea.Batch(register, m.launchFlow.resumeDirect(), m.planLoop.markDirty())
	case watch.Synced:
		m.synced = true
		m.store.karpenter = msg.KarpenterNodePools
		m.store.claimCRD = m.store.claimCRD || msg.NodeClaims
		for _, r := range msg.Unread {
			if strings.HasPrefix(r, "nodepools.") {
				m.store.unreadPools = append(m.store.unreadPools, r)
			}
		}
		return tea.Batch(m.planLoop.start(), m.launchFlow.resumeDirect())
	case watch.Error:
		m.watchErr = oneLine(msg.Err.Error())
	}
	return nil
}

// setFlash shows a one-line message in the footer until the next key.
func (m *Model) setFlash(s string, isErr bool) { m.flash, m.flashErr = s, isErr }

// replanNow re-plans at once (what-if toggles, direct launches).
func (m *Model) replanNow() tea.Cmd { return m.planLoop.replanNow() }

// onKey hands a key press to the part the mode gives the keys to.
func (m *Model) onKey(msg tea.KeyPressMsg) tea.Cmd {
	if msg.String() == "ctrl+c" {
		return tea.Quit
	}
	switch m.mode {
	case modeHelp:
		if key.Matches(msg, m.keys.Back, m.keys.Help, m.keys.Quit) || msg.String() == "enter" {
			m.mode = modeNormal
		}
		return nil
	case modeDetail:
		next, cmd := m.detailView.onKey(msg, &m.keys, m.width, m.height)
		m.mode = next
		return cmd
	case modeConfirm:
		cmd, closed := m.launchFlow.onConfirmKey(msg)
		if closed {
			m.mode = modeNormal
		}
		return cmd
	case modeFilter, modePrompt:
		return m.onInputKey(msg)
	}
	return m.onNormalKey(msg)
}

// onNormalKey handles a key over the tables. No two bindings share a key,
// so the groups below may be tried in any order.
func (m *Model) onNormalKey(msg tea.KeyPressMsg) tea.Cmd {
	m.flash = ""
	armed := m.launchFlow.disarm()
	if m.opts.ReadOnly {
		switch msg.String() {
		case "space", "a", "L":
			m.setFlash(m.launchDisabled(), true)
			return nil
		}
	}
	if m.onTableKey(msg) {
		return nil
	}
	switch {
	case key.Matches(msg, m.keys.Quit):
		if !m.launchFlow.mayQuit(armed) {
			return nil
		}
		return tea.Quit
	case key.Matches(msg, m.keys.Help):
		m.mode = modeHelp
	case key.Matches(msg, m.keys.Filter):
		m.mode = modeFilter
		m.prompt.filter(m.tables[m.view].filter)
	case key.Matches(msg, m.keys.Enter):
		m.openDetail()
	case key.Matches(msg, m.keys.Select):
		m.toggleSelect()
	case key.Matches(msg, m.keys.SelectAll):
		m.selectAll()
	case key.Matches(msg, m.keys.Launch):
		return m.askLaunch()
	}
	return m.onWhatIfKey(msg)
}

// onTableKey moves the cursor, switches views, clears the filter and
// sorts; it returns whether msg was one of those keys.
func (m *Model) onTableKey(msg tea.KeyPressMsg) bool {
	t := m.tables[m.view]
	switch {
	case key.Matches(msg, m.keys.Up):
		t.move(-1)
	case key.Matches(msg, m.keys.Down):
		t.move(1)
	case key.Matches(msg, m.keys.Top):
		t.top()
	case key.Matches(msg, m.keys.Bottom):
		t.bottom()
	case key.Matches(msg, m.keys.PageUp):
		t.move(-m.tableHeight())
	case key.Matches(msg, m.keys.PageDown):
		t.move(m.tableHeight())
	case key.Matches(msg, m.keys.Next):
		m.view = (m.view + 1) % numViews
	case key.Matches(msg, m.keys.Prev):
		m.view = (m.view + numViews - 1) % numViews
	case key.Matches(msg, m.keys.View1):
		m.view = viewPending
	case key.Matches(msg, m.keys.View2):
		m.view = viewProposed
	case key.Matches(msg, m.keys.View3):
		m.view = viewNodes
	case key.Matches(msg, m.keys.View4):
		m.view = viewConsolidation
	case key.Matches(msg, m.keys.Back):
		t.setFilter("")
	case key.Matches(msg, m.keys.Sort):
		t.cycleSort()
	case key.Matches(msg, m.keys.Reverse):
		t.reverse()
	default:
		return false
	}
	return true
}

// onWhatIfKey changes the what-if (spot, families, region, reset) and
// re-plans.
func (m *Model) onWhatIfKey(msg tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(msg, m.keys.Spot):
		switch {
		case m.whatIf.Spot == nil:
			on := true
			m.whatIf.Spot = &on
		case *m.whatIf.Spot:
			off := false
			m.whatIf.Spot = &off
		default:
			m.whatIf.Spot = nil
		}
		return m.replanNow()
	case key.Matches(msg, m.keys.Families):
		m.mode = modePrompt
		m.prompt.ask("instance families, comma-separated (empty: as the NodePools say)", strings.Join(m.whatIf.Families, ","), func(v string) tea.Cmd {
			m.whatIf.Families = nil
			for _, f := range strings.Split(v, ",") {
				if f = strings.TrimSpace(f); f != "" {
					m.whatIf.Families = append(m.whatIf.Families, f)
				}
			}
			return m.replanNow()
		})
	case key.Matches(msg, m.keys.Region):
		m.mode = modePrompt
		m.prompt.ask("region (empty: the cluster's)", m.whatIf.Region, func(v string) tea.Cmd {
			m.whatIf.Region = strings.TrimSpace(v)
			return m.replanNow()
		})
	case key.Matches(msg, m.keys.Reset):
		if m.whatIf.Active() {
			m.whatIf = plan.WhatIf{}
			return m.replanNow()
		}
	}
	return nil
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
	m.launchFlow.toggle(r.key)
	m.tables[viewProposed].move(1)
}

// selectAll selects every proposed node, or none.
func (m *Model) selectAll() {
	if m.view != viewProposed || m.rep == nil {
		return
	}
	if reason := m.launchDisabled(); reason != "" {
		m.setFlash(reason, true)
		return
	}
	m.launchFlow.selectAll(m.rep)
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
// under the cursor when none is selected).
func (m *Model) askLaunch() tea.Cmd {
	if m.rep == nil {
		return nil
	}
	if reason := m.launchDisabled(); reason != "" {
		m.setFlash(reason, true)
		return nil
	}
	var current *row
	if m.view == viewProposed {
		current = m.tables[viewProposed].current()
	}
	cmd, ok := m.launchFlow.ask(m.rep, current)
	if !ok {
		m.setFlash("nothing to launch: select proposed nodes with space in view 2", true)
		return nil
	}
	m.mode = modeConfirm
	return cmd
}

// tableHeight is the number of rows a table shows.
func (m *Model) tableHeight() int {
	// header, tabs, summary, column titles, footer
	return max(m.height-5, 1)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
