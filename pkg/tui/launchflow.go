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

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/report"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/launch"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/watch"
)

// launchFlow launches proposed nodes from the screen: the selection, the
// confirmation (modeConfirm) that says what a launch creates and costs,
// and each launch followed until its pods run, with the registration a
// direct launch (launch.Registrar) does in the operator's place. It also
// takes up the nodes an earlier run launched directly and left closed.
type launchFlow struct {
	host  launchHost
	opts  *Options
	store *store

	selected map[string]bool // proposed-node keys
	// launched are the keys of proposed nodes launched from this screen;
	// the plan shows them again until their NodeClaims are seen.
	launched    map[string]bool
	confirm     []launch.Request // what the confirmation asks to launch
	confirmKeys []string         // their proposed-node keys
	// confirmCovered is the share of each the Commitments cover in the
	// plan's bill (report.Report.Covered).
	confirmCovered []float64
	launches       []*launchState
	// resumed are the nodes launched directly by an earlier run whose
	// registration this one took up (or tried to).
	resumed map[string]bool
	// quitArmed: q was pressed once with direct launches still closed to
	// pods; the next q quits.
	quitArmed bool
}

// launchHost is what the launch flow asks of the program around it.
type launchHost interface {
	// setFlash says something in the footer until the next key.
	setFlash(text string, isErr bool)
	// refreshProposed redraws the Proposed rows, which show the launches.
	refreshProposed()
	// replanNow plans again: a direct launch is capacity in flight.
	replanNow() tea.Cmd
}

func newLaunchFlow(host launchHost, opts *Options, st *store) launchFlow {
	return launchFlow{host: host, opts: opts, store: st, selected: map[string]bool{}, launched: map[string]bool{}, resumed: map[string]bool{}}
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

// Messages of the launch flow.
type (
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
	resumeMsg struct {
		node     string
		launched launch.Launched
		err      error
	}
)

// update handles the flow's own messages: launches returned, registration
// steps done, resumed nodes.
func (f *launchFlow) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case launchMsg:
		return f.onLaunched(msg)
	case resumeMsg:
		return f.onResumed(msg)
	case registerMsg:
		return f.onRegistered(msg)
	case openDueMsg:
		msg.state.openDue = true
		return f.registerDirect()
	case probedMsg:
		return nil // View draws the confirmation with the new summary
	}
	return nil
}

// clusterChanged follows the launches as the watched cluster changes.
func (f *launchFlow) clusterChanged() tea.Cmd {
	if len(f.launches) == 0 {
		return nil
	}
	register := f.registerDirect()
	f.host.refreshProposed() // launch progress follows the cluster
	return register
}

// toggle selects or unselects the proposed node with key k.
func (f *launchFlow) toggle(k string) {
	if f.selected[k] {
		delete(f.selected, k)
	} else {
		f.selected[k] = true
	}
}

// selectAll selects every proposed node not launched yet, or none when all
// are selected.
func (f *launchFlow) selectAll(rep *report.Report) {
	if len(f.selected) == len(rep.Proposed) {
		f.selected = map[string]bool{}
		return
	}
	for i := range rep.Proposed {
		if k := proposedKey(&rep.Proposed[i]); !f.launched[k] {
			f.selected[k] = true
		}
	}
}

// keepSelected drops the selections of nodes a new plan no longer proposes.
func (f *launchFlow) keepSelected(rep *report.Report) {
	keep := map[string]bool{}
	for i := range rep.Proposed {
		if k := proposedKey(&rep.Proposed[i]); f.selected[k] {
			keep[k] = true
		}
	}
	f.selected = keep
}

// ask opens the confirmation for the selected nodes, or for current (the
// proposed row under the cursor, nil elsewhere) when none is selected; it
// returns false when there is nothing to launch. A Launcher whose summary
// depends on the cluster (launch.Prober: is an operator running?) is asked
// to look again; the command it returns redraws the confirmation.
func (f *launchFlow) ask(rep *report.Report, current *row) (tea.Cmd, bool) {
	var inFlight []string
	for _, n := range rep.Existing {
		if n.InFlight {
			inFlight = append(inFlight, n.Name)
		}
	}
	var reqs []launch.Request
	var keys []string
	var covered []float64
	add := func(p *report.ProposedNode) {
		reqs = append(reqs, launch.Request{Name: p.Name, Node: rep.Plan.NewNodes[p.Index], Pods: slices.Clone(p.Pods), Region: rep.Region, InFlight: inFlight})
		keys = append(keys, proposedKey(p))
		covered = append(covered, rep.Covered(p.Index))
	}
	for i := range rep.Proposed {
		if p := &rep.Proposed[i]; f.selected[proposedKey(p)] && !f.launched[proposedKey(p)] {
			add(p)
		}
	}
	if len(reqs) == 0 && current != nil && current.ref >= 0 {
		add(&rep.Proposed[current.ref])
	}
	if len(reqs) == 0 {
		return nil, false
	}
	f.confirm, f.confirmKeys, f.confirmCovered = reqs, keys, covered
	p, ok := f.opts.Launcher.(launch.Prober)
	if !ok {
		return nil, true
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Probe(ctx)
		return probedMsg{}
	}, true
}

// onConfirmKey answers the confirmation: y launches, n, esc or q cancels;
// it returns whether the confirmation is closed.
func (f *launchFlow) onConfirmKey(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	switch msg.String() {
	case "y", "Y":
		return f.start(), true
	case "n", "N", "esc", "q":
		f.confirm, f.confirmCovered = nil, nil
		f.host.setFlash("launch cancelled; nothing was created", false)
		return nil, true
	}
	return nil, false
}

// start launches what the confirmation asked, each in its own command.
func (f *launchFlow) start() tea.Cmd {
	reqs, keys := f.confirm, f.confirmKeys
	for _, k := range keys {
		f.launched[k] = true
	}
	f.confirm, f.confirmKeys, f.confirmCovered = nil, nil, nil
	f.selected = map[string]bool{}
	var cmds []tea.Cmd
	// A NodeClaim is one API call; a direct launch may first build the
	// provider (AWS reads prices) and then wait on the cloud.
	timeout := 30 * time.Second
	if _, direct := f.opts.Launcher.(launch.Registrar); direct {
		timeout = 2 * time.Minute
	}
	for i, r := range reqs {
		st := &launchState{req: r, key: keys[i], at: f.opts.Now()}
		f.launches = append(f.launches, st)
		launcher := f.opts.Launcher
		cmds = append(cmds, func() tea.Msg {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			l, err := launcher.Launch(ctx, st.req)
			return launchMsg{st, l, err}
		})
	}
	f.host.setFlash(fmt.Sprintf("launching %d node(s)…", len(reqs)), false)
	f.host.refreshProposed()
	return tea.Batch(cmds...)
}

// disarm forgets a first q: any other key in between cancels it. It
// returns whether q was pressed once.
func (f *launchFlow) disarm() bool {
	armed := f.quitArmed
	f.quitArmed = false
	return armed
}

// mayQuit says whether q quits now: while direct launches are closed to
// pods the first q (armed false) only says so.
func (f *launchFlow) mayQuit(armed bool) bool {
	if n := f.closedLaunches(); n > 0 && !armed {
		f.quitArmed = true
		f.host.setFlash(fmt.Sprintf("%d launched node(s) not open to pods yet: q again quits anyway (tui --cloud %s opens them when it runs again)", n, f.opts.DirectCloud), true)
		return false
	}
	return true
}

// onLaunched records the outcome of one launch.
func (f *launchFlow) onLaunched(msg launchMsg) tea.Cmd {
	st, l := msg.state, msg.launched
	st.claim, st.launched, st.err = l.Claim, l, msg.err
	if msg.err != nil && l.Direct != nil {
		// Launched, but the NodeClaim's status could not be written: the
		// node still comes; say so and carry on.
		st.err, st.regErr = nil, msg.err
	}
	if st.err != nil {
		delete(f.launched, st.key) // offer it again
		f.host.refreshProposed()
		f.host.setFlash(oneLine(st.err.Error()), true)
		return nil
	}
	var cmds []tea.Cmd
	switch {
	case msg.err != nil:
		f.host.setFlash(oneLine(msg.err.Error()), true)
	case l.Direct != nil:
		record := "no NodeClaim CRD or NodePool to record it in"
		if l.ClaimInCluster {
			record = "NodeClaim " + l.Claim + " records it for the operator"
		}
		f.host.setFlash(fmt.Sprintf("launched %s (%s) for %s; %s", l.Direct.Status.ProviderID, l.Direct.Status.InstanceType, st.req.Name, record), false)
		cmds = append(cmds, f.registerDirect(), f.host.replanNow()) // the launch is in-flight capacity now
	default:
		f.host.setFlash(fmt.Sprintf("created NodeClaim %s for %s (%s)", l.Claim, st.req.Name, st.req.Node.InstanceType), false)
	}
	f.host.refreshProposed()
	if l.ClaimInCluster && f.opts.Ensure != nil && !f.store.claimCRD {
		ensure := f.opts.Ensure
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
func (f *launchFlow) registerDirect() tea.Cmd {
	r, ok := f.opts.Launcher.(launch.Registrar)
	if !ok {
		return nil
	}
	var cmds []tea.Cmd
	for _, st := range f.launches {
		if st.launched.Direct == nil || st.open || st.busy {
			continue
		}
		node := f.store.nodeOfInstance(st.launched.Direct.Status.ProviderID, st.claim)
		if node == nil {
			continue
		}
		step := f.nextStep(r, st, node.Name, node.ResourceVersion)
		if step == nil {
			continue
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

// nextStep is the registration step st is ready for on its node (name,
// at resourceVersion rv), or nil while it waits.
func (f *launchFlow) nextStep(r launch.Registrar, st *launchState, name, rv string) func(context.Context) registerMsg {
	l := st.launched
	switch {
	case !st.usable:
		if rv == st.nodeRV {
			return nil
		}
		st.nodeRV = rv
		return func(ctx context.Context) registerMsg {
			usable, err := r.Register(ctx, l, name)
			return registerMsg{st, stepRegister, usable, err}
		}
	case !st.nominated:
		pods := f.store.pendingOf(st.req.Pods)
		return func(ctx context.Context) registerMsg {
			return registerMsg{st, stepNominate, true, r.Nominate(ctx, pods, name)}
		}
	case st.openDue || f.store.nominatedTo(st.req.Pods, name):
		return func(ctx context.Context) registerMsg {
			return registerMsg{st, stepOpen, true, r.Open(ctx, l, name)}
		}
	}
	return nil // the nominations are on their way
}

// onRegistered records the result of a registration step and starts the next.
func (f *launchFlow) onRegistered(msg registerMsg) tea.Cmd {
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
		wait = tea.Tick(f.opts.NominationWait, func(time.Time) tea.Msg { return openDueMsg{st} })
	case msg.step == stepOpen && msg.err == nil:
		st.open = true
	}
	if msg.err != nil {
		f.host.setFlash(st.claim+": "+oneLine(msg.err.Error()), true)
	}
	f.host.refreshProposed()
	return tea.Batch(wait, f.registerDirect())
}

// resumeDirect takes up the registration of nodes an earlier run launched
// directly and quit before opening to pods (launch.Resumable), once each:
// without it they would stay tainted, paid for and unused. It waits while
// a launch of this run has not returned, whose node may already be seen.
// The program calls it once the cluster is synced.
func (f *launchFlow) resumeDirect() tea.Cmd {
	r, ok := f.opts.Launcher.(launch.Resumer)
	if !ok {
		return nil
	}
	tracked := map[string]bool{}
	for _, st := range f.launches {
		if st.claim == "" && st.err == nil {
			return nil
		}
		if st.launched.Direct != nil {
			tracked[st.launched.Direct.Status.ProviderID] = true
		}
	}
	claimAnnotations := map[string]map[string]string{}
	for _, u := range f.store.claims {
		if id, _, _ := unstructured.NestedString(u.Object, "status", "providerID"); id != "" {
			claimAnnotations[id] = u.GetAnnotations()
		}
	}
	var cmds []tea.Cmd
	for _, name := range slices.Sorted(maps.Keys(f.store.nodes)) {
		node := f.store.nodes[name]
		if f.resumed[name] || tracked[node.Spec.ProviderID] || !launch.Resumable(f.opts.DirectCloud, node, claimAnnotations[node.Spec.ProviderID]) {
			continue
		}
		f.resumed[name] = true
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
func (f *launchFlow) onResumed(msg resumeMsg) tea.Cmd {
	if errors.Is(msg.err, launch.ErrOperatorRuns) {
		return nil // the operator finishes it
	}
	if msg.err != nil {
		f.host.setFlash("resuming "+msg.node+": "+oneLine(msg.err.Error()), true)
		return nil
	}
	c := msg.launched.Direct
	price, _ := strconv.ParseFloat(c.Status.PricePerHour, 64)
	st := &launchState{
		req: launch.Request{Name: msg.node, Node: solver.NewNode{
			Pool: c.Labels[v1alpha1.LabelNodePool], InstanceType: c.Status.InstanceType, Zone: c.Status.Zone, CapacityType: c.Status.CapacityType, Price: price,
		}},
		claim: msg.launched.Claim, launched: msg.launched, at: f.opts.Now(), nominated: true, openDue: true,
	}
	f.launches = append(f.launches, st)
	f.host.setFlash(fmt.Sprintf("node %s (%s), launched directly by an earlier run and still closed to pods: registering it and opening it to pods", msg.node, c.Status.InstanceType), false)
	f.host.refreshProposed()
	return f.registerDirect()
}

// closedLaunches counts this run's direct launches whose nodes are not
// open to pods yet.
func (f *launchFlow) closedLaunches() int {
	n := 0
	for _, st := range f.launches {
		if st.launched.Direct != nil && !st.open && st.err == nil {
			n++
		}
	}
	return n
}

// inFlight are the direct launches whose node has not registered and
// that no NodeClaim in the store stands for: capacity on its way, which
// the plan uses first instead of proposing the same node again.
func (f *launchFlow) inFlight() []plan.Claim {
	var out []plan.Claim
	for _, l := range f.launches {
		c := l.launched.Direct
		if c == nil || f.store.claims[c.Name] != nil || f.store.nodeOfInstance(c.Status.ProviderID, c.Name) != nil {
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

// status says how far a launched node got.
func (f *launchFlow) status(l *launchState) string {
	_, direct := f.opts.Launcher.(launch.Registrar)
	switch {
	case l.err != nil:
		return "failed: " + oneLine(l.err.Error())
	case l.claim == "" && direct:
		return "launching…"
	case l.claim == "":
		return "creating NodeClaim…"
	case l.launched.Direct != nil:
		return f.directStatus(l)
	}
	u := f.store.claims[l.claim]
	if u == nil {
		if l.done {
			return "done: NodeClaim gone"
		}
		return "NodeClaim " + l.claim + " created"
	}
	c := claimOf(u)
	node := f.store.nodeOfClaim(&c)
	switch {
	case node == nil:
		return "NodeClaim " + report.ClaimPhase(c) + ", no node yet"
	case !nodeReady(node):
		return "node registered, not Ready"
	}
	running, _ := f.store.podsRunningOn(l.req.Pods, node.Name)
	if running == len(l.req.Pods) {
		l.done = true
	}
	return fmt.Sprintf("node Ready, %d/%d pods Running", running, len(l.req.Pods))
}

// directStatus says how far a node launched through the cloud provider
// got: instance launched, node registered, Ready, pods Running.
func (f *launchFlow) directStatus(l *launchState) string {
	node := f.store.nodeOfInstance(l.launched.Direct.Status.ProviderID, l.claim)
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
	running := f.store.podsRunning(l.req.Pods)
	if running == len(l.req.Pods) {
		l.done = true
	}
	return fmt.Sprintf("node Ready, %d/%d pods Running", running, len(l.req.Pods))
}

// confirmView shows what a launch will create and what it costs, in a box
// that fits width.
func (f *launchFlow) confirmView(st *styles, width int) []string {
	var b strings.Builder
	// The summary wraps inside the box; the rows below are narrower.
	text := fmt.Sprintf("Launch %d node(s)? %s", len(f.confirm), f.opts.Launcher.Summary())
	if _, direct := f.opts.Launcher.(launch.Registrar); direct {
		text += "\n" + f.adoption()
	}
	summary := ansi.Wrap(text, max(width-6, 30), " ")
	fmt.Fprintf(&b, "%s\n\n", summary)
	nodes := make([]solver.NewNode, len(f.confirm))
	for i, r := range f.confirm {
		n := r.Node
		fmt.Fprintf(&b, "  %-7s %-14s %-11s %-9s $%.4f/h  %d pods  NodePool %s\n", r.Name, n.InstanceType, n.Zone, n.CapacityType, n.Price, len(r.Pods), n.Pool)
		nodes[i] = n
	}
	total, paid := plan.CoveredList(nodes, f.confirmCovered)
	fmt.Fprintf(&b, "\nTotal: $%.4f/h ($%.2f/month)", total, total*plan.HoursPerMonth)
	if paid > 0 {
		// The list price is what AWS meters; the commitments' fees,
		// paid either way, pay this much of it.
		fmt.Fprintf(&b, " at list price\n  of which commitments cover $%.4f/h; billed on top: $%.4f/h", paid, total-paid)
	}
	b.WriteString("\n\n[y] launch   [n/esc] cancel")
	box := st.box.Render(b.String())
	return strings.Split(lipgloss.NewStyle().MarginLeft(1).Render(box), "\n")
}

// adoption says, for a direct launch, whether NodeClaim objects will record
// the instances (the CRD is served and their NodePool is ours), or the
// instances are only marked, for an operator started later to adopt once
// their NodePool exists.
func (f *launchFlow) adoption() string {
	unrecorded := 0
	for _, r := range f.confirm {
		if !f.store.claimCRD || f.store.pools["rightsize.dev/"+r.Node.Pool] == nil {
			unrecorded++
		}
	}
	switch {
	case unrecorded == 0:
		return "NodeClaims record them, so that an operator started later adopts them."
	case unrecorded == len(f.confirm):
		return "Nothing records them (no NodeClaim CRD or rightsize.dev NodePool): an operator installed later adopts them once their NodePool exists."
	}
	return fmt.Sprintf("%d of them get no NodeClaim (their NodePool is not a rightsize.dev one): an operator started later adopts those once their NodePool exists.", unrecorded)
}
