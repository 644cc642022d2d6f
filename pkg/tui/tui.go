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
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/launch"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/report"
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

// Model is the bubbletea model.
type Model struct {
	opts    Options
	planner *report.Planner
	keys    keyMap
	st      styles

	width, height int
	store         *store
	synced        bool
	rep           *report.Report
	planErr       error
	planning      bool
	dirty         bool
	dirtySince    time.Time
	gen           int
	whatIf        plan.WhatIf

	view   int
	tables [numViews]*table
	mode   mode

	input       []rune // filter or prompt text
	prompt      string // what the prompt asks
	promptApply func(m *Model, value string) tea.Cmd

	detailTitle  string
	detailLines  []string
	detailOffset int

	selected map[string]bool // proposed-node keys
	// launched are the keys of proposed nodes launched from this screen;
	// the plan shows them again until their NodeClaims are seen.
	launched    map[string]bool
	confirm     []launch.Request
	confirmKeys []string
	launches    []*launchState
	// resumed are the nodes launched directly by an earlier run whose
	// registration this one took up (or tried to).
	resumed map[string]bool
	// quitArmed: q was pressed once with direct launches still closed to
	// pods; the next q quits.
	quitArmed bool

	flash    string
	flashErr bool
	watchErr string
}

// launchState follows one launched node until its pods run.
type launchState struct {
	req   launch.Request
	key   string // the proposed node's key
	claim string
	err   error
	done  bool
	at    time.Time

	// Direct launches (launch.Registrar): what was launched, and the
	// registration this program does in the operator's place.
	launched  launch.Launched
	busy      bool   // a registration step is running
	nodeRV    string // the node's resourceVersion Register last saw
	usable    bool   // the node is Ready, startup taints gone
	nominated bool   // the planned pods were nominated to it
	openDue   bool   // the wait for the nominations to be seen is over
	open      bool   // the unregistered taint is gone
	regErr    error
}

// Steps of the registration of a direct launch.
const (
	stepRegister = iota
	stepNominate
	stepOpen
)

// Messages of the program.
type (
	debounceMsg struct{ gen int }
	planMsg     struct {
		rep *report.Report
		err error
	}
	launchMsg struct {
		state    *launchState
		launched launch.Launched
		err      error
	}
	registerMsg struct {
		state  *launchState
		step   int
		usable bool
		err    error
	}
	openDueMsg struct{ state *launchState }
	// probedMsg says the Launcher looked at the cluster again
	// (launch.Prober): the confirmation is drawn again with what it found.
	probedMsg struct{}
	// ageTickMsg moves the ages on, live, without a re-plan.
	ageTickMsg struct{}
	resumeMsg  struct {
		node     string
		launched launch.Launched
		err      error
	}
)

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
	m := &Model{
		opts: opts, planner: report.NewPlanner(), keys: newKeyMap(opts.ReadOnly), st: newStyles(opts.NoColor),
		width: 80, height: 24, store: newStore(), selected: map[string]bool{}, launched: map[string]bool{}, resumed: map[string]bool{},
	}
	m.tables[viewPending] = newTable([]column{
		{title: "NAMESPACE", max: 16, drop: 2},
		{title: "OWNER", max: 32},
		{title: "PODS", right: true, numeric: true},
		{title: "REQUESTS", max: 22, drop: 4},
		{title: "NODE", max: 24},
		{title: "SCHEDULER", flex: true, drop: 3},
		{title: "REASON", flex: true},
	})
	m.tables[viewProposed] = newTable([]column{
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
	m.tables[viewNodes] = newTable([]column{
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
	m.tables[viewConsolidation] = newTable([]column{
		{title: "ACTION"},
		{title: "NODES", max: 30},
		{title: "REPLACEMENT", max: 30, drop: 3},
		{title: "MOVES", right: true, numeric: true, drop: 2},
		{title: "SAVING $/H", right: true, numeric: true},
		{title: "WHY", flex: true},
	})
	if opts.Manifests != nil {
		m.synced = true
		m.tables[viewPending].cols[5].hidden = true // no scheduler offline
	}
	return m
}

// ageTick is how often ages move on, live.
const ageTick = time.Second

// Init plans at once offline; live, the watcher's first messages start it,
// and the ages start ticking.
func (m *Model) Init() tea.Cmd {
	if m.opts.Manifests != nil {
		return m.startPlan()
	}
	return tickAges()
}

func tickAges() tea.Cmd {
	return tea.Tick(ageTick, func(time.Time) tea.Msg { return ageTickMsg{} })
}

// Report returns the last report (nil before the first plan), for tests.
func (m *Model) Report() *report.Report { return m.rep }

// Update handles a message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = max(msg.Width, 20), max(msg.Height, 6)
		return m, nil
	case tea.KeyPressMsg:
		return m, m.onKey(msg)
	case watch.Batch:
		m.store.apply(msg)
		var register tea.Cmd
		if len(m.launches) > 0 {
			register = m.registerDirect()
			m.refreshProposed() // launch progress follows the cluster
		}
		if !m.synced {
			return m, register
		}
		return m, tea.Batch(register, m.resumeDirect(), m.markDirty())
	case watch.Synced:
		m.synced = true
		m.store.karpenter = msg.KarpenterNodePools
		m.store.claimCRD = m.store.claimCRD || msg.NodeClaims
		for _, r := range msg.Unread {
			if strings.HasPrefix(r, "nodepools.") {
				m.store.unreadPools = append(m.store.unreadPools, r)
			}
		}
		return m, tea.Batch(m.startPlan(), m.resumeDirect())
	case watch.Error:
		m.watchErr = oneLine(msg.Err.Error())
		return m, nil
	case debounceMsg:
		if msg.gen != m.gen && m.opts.Now().Sub(m.dirtySince) < MaxDebounce {
			return m, nil // a newer change restarted the wait
		}
		if m.planning || !m.dirty {
			return m, nil
		}
		return m, m.startPlan()
	case planMsg:
		m.planning = false
		if msg.err != nil {
			m.planErr = msg.err
			if m.rep != nil {
				// The plan on screen is still the last good one: the
				// what-if it answers is what the header names, and the
				// next toggle starts from it.
				m.whatIf = m.rep.WhatIf
			}
		} else {
			m.planErr = nil
			m.setReport(msg.rep)
		}
		if m.dirty {
			m.gen++
			gen := m.gen
			return m, tea.Tick(m.opts.Debounce, func(time.Time) tea.Msg { return debounceMsg{gen} })
		}
		return m, nil
	case launchMsg:
		return m, m.onLaunched(msg)
	case resumeMsg:
		return m, m.onResumed(msg)
	case registerMsg:
		return m, m.onRegistered(msg)
	case openDueMsg:
		msg.state.openDue = true
		return m, m.registerDirect()
	case probedMsg:
		return m, nil // View draws the confirmation with the new summary
	case ageTickMsg:
		if m.rep != nil {
			m.refreshNodes()
		}
		return m, tickAges()
	}
	return m, nil
}

// onLaunched records the outcome of one launch.
func (m *Model) onLaunched(msg launchMsg) tea.Cmd {
	st, l := msg.state, msg.launched
	st.claim, st.launched, st.err = l.Claim, l, msg.err
	if msg.err != nil && l.Direct != nil {
		// Launched, but the NodeClaim's status could not be written: the
		// node still comes; say so and carry on.
		st.err, st.regErr = nil, msg.err
	}
	if st.err != nil {
		delete(m.launched, st.key) // offer it again
		m.refreshProposed()
		m.setFlash(oneLine(st.err.Error()), true)
		return nil
	}
	var cmds []tea.Cmd
	switch {
	case msg.err != nil:
		m.setFlash(oneLine(msg.err.Error()), true)
	case l.Direct != nil:
		record := "no NodeClaim CRD or NodePool to record it in"
		if l.ClaimInCluster {
			record = "NodeClaim " + l.Claim + " records it for the operator"
		}
		m.setFlash(fmt.Sprintf("launched %s (%s) for %s; %s", l.Direct.Status.ProviderID, l.Direct.Status.InstanceType, st.req.Name, record), false)
		cmds = append(cmds, m.registerDirect(), m.replanNow()) // the launch is in-flight capacity now
	default:
		m.setFlash(fmt.Sprintf("created NodeClaim %s for %s (%s)", l.Claim, st.req.Name, st.req.Node.InstanceType), false)
	}
	m.refreshProposed()
	if l.ClaimInCluster && m.opts.Ensure != nil && !m.store.claimCRD {
		ensure := m.opts.Ensure
		cmds = append(cmds, func() tea.Msg {
			if err := ensure(launch.NodeClaims); err != nil {
				return watch.Error{Err: err}
			}
			return nil
		})
	}
	return tea.Batch(cmds...)
}

// registerDirect takes each direct launch whose node is there one step
// further: register it (again on each change of the node until it is
// usable), nominate the planned pods to it, and open it to pods once the
// nominations are seen (or NominationWait passed). It runs on watch events
// and step results: no polling.
func (m *Model) registerDirect() tea.Cmd {
	r, ok := m.opts.Launcher.(launch.Registrar)
	if !ok {
		return nil
	}
	var cmds []tea.Cmd
	for _, st := range m.launches {
		if st.launched.Direct == nil || st.open || st.busy {
			continue
		}
		node := m.store.nodeOfInstance(st.launched.Direct.Status.ProviderID, st.claim)
		if node == nil {
			continue
		}
		l, name := st.launched, node.Name
		var step func(ctx context.Context) registerMsg
		switch {
		case !st.usable:
			if node.ResourceVersion == st.nodeRV {
				continue
			}
			st.nodeRV = node.ResourceVersion
			step = func(ctx context.Context) registerMsg {
				usable, err := r.Register(ctx, l, name)
				return registerMsg{st, stepRegister, usable, err}
			}
		case !st.nominated:
			pods := m.store.pendingOf(st.req.Pods)
			step = func(ctx context.Context) registerMsg {
				return registerMsg{st, stepNominate, true, r.Nominate(ctx, pods, name)}
			}
		case st.openDue || m.store.nominatedTo(st.req.Pods, name):
			step = func(ctx context.Context) registerMsg {
				return registerMsg{st, stepOpen, true, r.Open(ctx, l, name)}
			}
		default:
			continue // the nominations are on their way
		}
		st.busy = true
		cmds = append(cmds, func() tea.Msg {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return step(ctx)
		})
	}
	return tea.Batch(cmds...)
}

// resumeDirect takes up the registration of nodes an earlier run launched
// directly and quit before opening to pods (launch.Resumable), once each:
// without it they would stay tainted, paid for and unused. It waits while
// a launch of this run has not returned, whose node may already be seen.
func (m *Model) resumeDirect() tea.Cmd {
	r, ok := m.opts.Launcher.(launch.Resumer)
	if !ok || !m.synced {
		return nil
	}
	tracked := map[string]bool{}
	for _, st := range m.launches {
		if st.claim == "" && st.err == nil {
			return nil
		}
		if st.launched.Direct != nil {
			tracked[st.launched.Direct.Status.ProviderID] = true
		}
	}
	claimAnnotations := map[string]map[string]string{}
	for _, u := range m.store.claims {
		if id, _, _ := unstructured.NestedString(u.Object, "status", "providerID"); id != "" {
			claimAnnotations[id] = u.GetAnnotations()
		}
	}
	var cmds []tea.Cmd
	for _, name := range slices.Sorted(maps.Keys(m.store.nodes)) {
		node := m.store.nodes[name]
		if m.resumed[name] || tracked[node.Spec.ProviderID] || !launch.Resumable(m.opts.DirectCloud, node, claimAnnotations[node.Spec.ProviderID]) {
			continue
		}
		m.resumed[name] = true
		cmds = append(cmds, func() tea.Msg {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			l, err := r.Resume(ctx, node)
			return resumeMsg{name, l, err}
		})
	}
	return tea.Batch(cmds...)
}

// onResumed follows a resumed node as one of this run's launches, from
// registration on (its pods were planned by the earlier run: none to
// nominate).
func (m *Model) onResumed(msg resumeMsg) tea.Cmd {
	if errors.Is(msg.err, launch.ErrOperatorRuns) {
		return nil // the operator finishes it
	}
	if msg.err != nil {
		m.setFlash("resuming "+msg.node+": "+oneLine(msg.err.Error()), true)
		return nil
	}
	c := msg.launched.Direct
	price, _ := strconv.ParseFloat(c.Status.PricePerHour, 64)
	st := &launchState{
		req: launch.Request{Name: msg.node, Node: solver.NewNode{
			Pool: c.Labels[v1alpha1.LabelNodePool], InstanceType: c.Status.InstanceType, Zone: c.Status.Zone, CapacityType: c.Status.CapacityType, Price: price,
		}},
		claim: msg.launched.Claim, launched: msg.launched, at: m.opts.Now(), nominated: true, openDue: true,
	}
	m.launches = append(m.launches, st)
	m.setFlash(fmt.Sprintf("node %s (%s), launched directly by an earlier run and still closed to pods: registering it and opening it to pods", msg.node, c.Status.InstanceType), false)
	m.refreshProposed()
	return m.registerDirect()
}

// closedLaunches counts this run's direct launches whose nodes are not
// open to pods yet.
func (m *Model) closedLaunches() int {
	n := 0
	for _, st := range m.launches {
		if st.launched.Direct != nil && !st.open && st.err == nil {
			n++
		}
	}
	return n
}

// onRegistered records the result of a registration step and starts the next.
func (m *Model) onRegistered(msg registerMsg) tea.Cmd {
	st := msg.state
	st.busy, st.regErr = false, msg.err
	var wait tea.Cmd
	switch {
	case msg.step == stepRegister && msg.err != nil:
		st.nodeRV = "" // again on the node's next change
	case msg.step == stepRegister:
		st.usable = msg.usable
	case msg.step == stepNominate:
		// A failed nomination only costs the plan's placement: go on.
		st.nominated = true
		wait = tea.Tick(m.opts.NominationWait, func(time.Time) tea.Msg { return openDueMsg{st} })
	case msg.step == stepOpen && msg.err == nil:
		st.open = true
	}
	if msg.err != nil {
		m.setFlash(st.claim+": "+oneLine(msg.err.Error()), true)
	}
	m.refreshProposed()
	return tea.Batch(wait, m.registerDirect())
}

// markDirty notes a change and (re)starts the debounce.
func (m *Model) markDirty() tea.Cmd {
	if !m.dirty {
		m.dirty, m.dirtySince = true, m.opts.Now()
	}
	m.gen++
	gen := m.gen
	return tea.Tick(m.opts.Debounce, func(time.Time) tea.Msg { return debounceMsg{gen} })
}

// replanNow re-plans at once (what-if toggles), or as soon as the running
// plan finishes.
func (m *Model) replanNow() tea.Cmd {
	m.dirty, m.dirtySince = true, m.opts.Now()
	if m.planning || !m.synced {
		return nil
	}
	return m.startPlan()
}

// startPlan takes the store's objects and plans in a command.
func (m *Model) startPlan() tea.Cmd {
	m.planning, m.dirty = true, false
	in := report.Input{
		Catalog: m.opts.Catalog, Default: m.opts.Default, WhatIf: m.whatIf, Timeout: m.opts.Timeout, Now: m.opts.Now(),
	}
	if m.opts.Manifests != nil {
		in.Manifests = m.opts.Manifests
	} else {
		in.Objects = m.store.objects()
		in.Claims = append(m.store.claimList(), m.directInFlight()...)
	}
	planner := m.planner
	return func() tea.Msg {
		rep, err := planner.Build(in)
		return planMsg{rep, err}
	}
}

// setFlash shows a one-line message in the footer until the next key.
func (m *Model) setFlash(s string, isErr bool) { m.flash, m.flashErr = s, isErr }

// onKey handles a key press in the current mode.
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
		return m.onDetailKey(msg)
	case modeConfirm:
		return m.onConfirmKey(msg)
	case modeFilter, modePrompt:
		return m.onInputKey(msg)
	}
	m.flash = ""
	armed := m.quitArmed
	m.quitArmed = false
	t := m.tables[m.view]
	if m.opts.ReadOnly {
		switch msg.String() {
		case "space", "a", "L":
			m.setFlash(m.launchDisabled(), true)
			return nil
		}
	}
	switch {
	case key.Matches(msg, m.keys.Quit):
		if n := m.closedLaunches(); n > 0 && !armed {
			m.quitArmed = true
			m.setFlash(fmt.Sprintf("%d launched node(s) not open to pods yet: q again quits anyway (tui --cloud %s opens them when it runs again)", n, m.opts.DirectCloud), true)
			return nil
		}
		return tea.Quit
	case key.Matches(msg, m.keys.Help):
		m.mode = modeHelp
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
	case key.Matches(msg, m.keys.Filter):
		m.mode, m.input = modeFilter, []rune(t.filter)
	case key.Matches(msg, m.keys.Back):
		t.setFilter("")
	case key.Matches(msg, m.keys.Sort):
		t.cycleSort()
	case key.Matches(msg, m.keys.Reverse):
		t.reverse()
	case key.Matches(msg, m.keys.Enter):
		m.openDetail()
	case key.Matches(msg, m.keys.Select):
		m.toggleSelect()
	case key.Matches(msg, m.keys.SelectAll):
		m.selectAll()
	case key.Matches(msg, m.keys.Launch):
		return m.askLaunch()
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
		m.startPrompt("instance families, comma-separated (empty: as the NodePools say)", strings.Join(m.whatIf.Families, ","), func(m *Model, v string) tea.Cmd {
			m.whatIf.Families = nil
			for _, f := range strings.Split(v, ",") {
				if f = strings.TrimSpace(f); f != "" {
					m.whatIf.Families = append(m.whatIf.Families, f)
				}
			}
			return m.replanNow()
		})
	case key.Matches(msg, m.keys.Region):
		m.startPrompt("region (empty: the cluster's)", m.whatIf.Region, func(m *Model, v string) tea.Cmd {
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

func (m *Model) startPrompt(prompt, value string, apply func(*Model, string) tea.Cmd) {
	m.mode, m.prompt, m.input, m.promptApply = modePrompt, prompt, []rune(value), apply
}

// onInputKey edits the filter or prompt line. The filter applies as it is typed.
func (m *Model) onInputKey(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "esc":
		if m.mode == modeFilter {
			m.tables[m.view].setFilter("")
		}
		m.mode = modeNormal
		return nil
	case "enter":
		wasPrompt := m.mode == modePrompt
		m.mode = modeNormal
		if wasPrompt && m.promptApply != nil {
			return m.promptApply(m, string(m.input))
		}
		return nil
	case "backspace", "ctrl+h":
		if len(m.input) > 0 {
			m.input = m.input[:len(m.input)-1]
		}
	case "ctrl+u":
		m.input = m.input[:0]
	default:
		if msg.Text != "" && msg.Mod&^tea.ModShift == 0 {
			m.input = append(m.input, []rune(msg.Text)...)
		} else if msg.String() == "space" {
			m.input = append(m.input, ' ')
		}
	}
	if m.mode == modeFilter {
		m.tables[m.view].setFilter(string(m.input))
	}
	return nil
}

func (m *Model) onDetailKey(msg tea.KeyPressMsg) tea.Cmd {
	h := m.height - 3
	switch {
	case key.Matches(msg, m.keys.Back), msg.String() == "enter":
		m.mode = modeNormal
	case key.Matches(msg, m.keys.Quit):
		return tea.Quit
	case key.Matches(msg, m.keys.Help):
		m.mode = modeHelp
	case key.Matches(msg, m.keys.Up):
		m.detailOffset--
	case key.Matches(msg, m.keys.Down):
		m.detailOffset++
	case key.Matches(msg, m.keys.PageUp):
		m.detailOffset -= h
	case key.Matches(msg, m.keys.PageDown), msg.String() == "space":
		m.detailOffset += h
	case key.Matches(msg, m.keys.Top):
		m.detailOffset = 0
	case key.Matches(msg, m.keys.Bottom):
		m.detailOffset = len(m.detailLines)
	}
	m.detailOffset = max(min(m.detailOffset, len(m.wrappedDetail())-h), 0)
	return nil
}

func (m *Model) onConfirmKey(msg tea.KeyPressMsg) tea.Cmd {
	switch msg.String() {
	case "y", "Y":
		m.mode = modeNormal
		reqs, keys := m.confirm, m.confirmKeys
		for _, k := range keys {
			m.launched[k] = true
		}
		m.confirm, m.confirmKeys = nil, nil
		m.selected = map[string]bool{}
		var cmds []tea.Cmd
		// A NodeClaim is one API call; a direct launch may first build the
		// provider (AWS reads prices) and then wait on the cloud.
		timeout := 30 * time.Second
		if _, direct := m.opts.Launcher.(launch.Registrar); direct {
			timeout = 2 * time.Minute
		}
		for i, r := range reqs {
			st := &launchState{req: r, key: keys[i], at: m.opts.Now()}
			m.launches = append(m.launches, st)
			launcher := m.opts.Launcher
			cmds = append(cmds, func() tea.Msg {
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				defer cancel()
				l, err := launcher.Launch(ctx, st.req)
				return launchMsg{st, l, err}
			})
		}
		m.setFlash(fmt.Sprintf("launching %d node(s)…", len(reqs)), false)
		m.refreshProposed()
		return tea.Batch(cmds...)
	case "n", "N", "esc", "q":
		m.mode = modeNormal
		m.confirm = nil
		m.setFlash("launch cancelled; nothing was created", false)
	}
	return nil
}

// tableHeight is the number of rows a table shows.
func (m *Model) tableHeight() int {
	// header, tabs, summary, column titles, footer
	return max(m.height-5, 1)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
