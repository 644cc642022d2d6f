// Package provisioning launches nodes for pods the scheduler cannot place:
// it batches pods marked Unschedulable, builds the solver's problem from
// the informer cache (existing nodes and in-flight NodeClaims included, so
// that nothing is launched twice), asks the solver, and creates the
// NodeClaims of the plan within the NodePools' limits.
package provisioning

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/commitments"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/state"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Options tune the provisioner.
type Options struct {
	// BatchIdle closes a batch once no new pod turned Unschedulable for
	// this long (a gap that grows with the gaps between arrivals, see
	// window); BatchMax closes it regardless.
	BatchIdle, BatchMax time.Duration
	// BatchHold bounds, from a batch's opening, how long it is kept open
	// beyond BatchIdle: by an idle gap grown with the gaps between
	// arrivals, or by a workload of its pods that still creates pods
	// (10 s when zero; never past BatchMax).
	BatchHold time.Duration
	// Region labels instance types as the cloud provider labels its nodes.
	Region string
	// Model turns instance types into allocatable capacity.
	Model cloud.NodeModel
	// SolveTimeout bounds one solve; the best plan found by then is used.
	SolveTimeout time.Duration
	// Recheck re-runs a batch this often while pods stay unplaced (so that
	// raised limits and expired capacity shortages are noticed).
	Recheck time.Duration
	// LaunchPricePremium bounds a flexible launch: a NodeClaim allows the
	// offerings that hold its planned pods at most this fraction above
	// the planned price (0.1: 10 %); a negative value sets no bound, as
	// Karpenter does (every compatible type, the MaxInstanceTypes
	// cheapest). The cloud picks among them (EC2: the cheapest available
	// on-demand, price-capacity-optimized spot), so a refused offering
	// falls through to the next without a new plan.
	LaunchPricePremium float64
	// MinValuesPolicy is MinValuesStrict (the default) or
	// MinValuesBestEffort: what a launch does when its allowed types span
	// fewer values than a requirement's minValues.
	MinValuesPolicy string
	// Clock tells the batching loop's time: its windows, rechecks, retries
	// and nomination lapses (the real clock when nil). A solve's deadline
	// and its measured duration stay on the wall clock the solver reads.
	Clock clock.WithTickerAndDelayedExecution
}

// Provisioner batches Unschedulable pods and launches NodeClaims for them.
// It is a manager.Runnable that runs only on the leader.
type Provisioner struct {
	client      client.Client
	cloud       cloud.CloudProvider
	recorder    events.EventRecorder
	log         logr.Logger
	opts        Options
	unavailable *state.Unavailable
	trigger     chan struct{}
	// ownedArrived is set when a pod a controller owns turns
	// Unschedulable, and read with the trigger it sends: only such
	// arrivals grow a window's idle gap (see window).
	ownedArrived atomic.Bool

	mu sync.Mutex
	// nominations maps pods to the NodeClaim planned for them.
	nominations map[types.UID]nomination
	// planned maps pending pods to the last NodeClaim any plan put them
	// on, nominated there still or not, to count the pods planned twice.
	planned map[types.UID]string
	// recent holds the NodeClaims being created or created that the cache
	// may not show yet: each is counted as in flight until the informer
	// delivers an event for it (see observed), a batch's cache shows it, or
	// recentTTL passes.
	recent map[string]recentClaim
	// told remembers the last reason given to an unplaced pod, so that a
	// pod gets one event per new reason rather than one per batch.
	told map[types.UID]string
	// wake triggers a batch when the next nomination lapses.
	wake clock.Timer
	// late holds the plan's late pods that wait for other pods to bind
	// before they are nominated (see Waiting).
	late map[types.NamespacedName]*lateWait
	// overlaysForbidden is set once the operator was refused the list of
	// NodeOverlays, so that it says so once, not every batch.
	overlaysForbidden atomic.Bool
	// buffersForbidden is the same for CapacityBuffers.
	buffersForbidden atomic.Bool
	// bufferStatus is the status last written to each CapacityBuffer
	// (namespace/name), so that an unchanged one is not written again.
	bufferStatus map[string]string
	// commitments reads the Commitments a batch spends (nil: none);
	// invalidCommitments is the last reason some were left out, said
	// once.
	commitments        *commitments.Reader
	invalidCommitments string
}

type nomination struct {
	claim string
	pod   types.NamespacedName
	at    time.Time
}

type recentClaim struct {
	claim *v1alpha1.NodeClaim
	at    time.Time
}

// recentTTL bounds how long a created NodeClaim the cache has never shown
// counts as in flight; the informer normally shows it within milliseconds.
const recentTTL = time.Minute

// New returns a provisioner.
func New(c client.Client, cp cloud.CloudProvider, recorder events.EventRecorder, log logr.Logger, unavailable *state.Unavailable, opts Options) *Provisioner {
	if opts.BatchIdle <= 0 {
		opts.BatchIdle = time.Second
	}
	if opts.BatchMax < opts.BatchIdle {
		opts.BatchMax = max(2*time.Minute, opts.BatchIdle)
	}
	if opts.BatchHold <= 0 {
		opts.BatchHold = 10 * time.Second
	}
	if opts.SolveTimeout <= 0 {
		opts.SolveTimeout = 10 * time.Second
	}
	if opts.Recheck <= 0 {
		opts.Recheck = 30 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Provisioner{
		client: c, cloud: cp, recorder: recorder, log: log, opts: opts, unavailable: unavailable,
		trigger:      make(chan struct{}, 1),
		nominations:  map[types.UID]nomination{},
		planned:      map[types.UID]string{},
		recent:       map[string]recentClaim{},
		told:         map[types.UID]string{},
		late:         map[types.NamespacedName]*lateWait{},
		bufferStatus: map[string]string{},
	}
}

// Trigger asks for a batch: it opens one, or keeps the open one from
// closing for a while longer (see window). It never blocks.
func (p *Provisioner) Trigger() {
	select {
	case p.trigger <- struct{}{}:
	default:
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (p *Provisioner) NeedLeaderElection() bool { return true }

// Start runs the batching loop until ctx ends.
func (p *Provisioner) Start(ctx context.Context) error {
	p.log.Info("provisioner started", "batchIdle", p.opts.BatchIdle.String(), "batchHold", p.opts.BatchHold.String(), "batchMax", p.opts.BatchMax.String())
	recheck := p.opts.Clock.NewTicker(p.opts.Recheck)
	defer recheck.Stop()
	p.Trigger() // pods may have been waiting before this replica led
	go p.pollBuffers(ctx)
	var open *window
	for {
		w, ok := p.await(ctx, recheck.C(), open)
		if !ok {
			return nil
		}
		if err := p.provision(ctx, w); err != nil && ctx.Err() == nil {
			p.log.Error(err, "provisioning failed; retrying")
			p.opts.Clock.AfterFunc(time.Second, p.Trigger)
		}
		open = nil
		if w.early {
			open = w
		}
	}
}

// await waits for a trigger (a tick of recheck is one), then for the
// window it opens to close, and returns the window; ok is false once ctx
// ends. A window whose idle gap passed stays open, rechecked every
// --batch-idle up to --batch-hold after it opened, while a workload of its
// pending pods still creates pods (see growing and window.next). A window
// that arrivals keep open is returned early (w.early) every --batch-hold,
// and await is then called again with it (open) to go on waiting.
func (p *Provisioner) await(ctx context.Context, recheck <-chan time.Time, open *window) (w *window, ok bool) {
	clk := p.opts.Clock
	if w = open; w == nil {
		select {
		case <-ctx.Done():
			return nil, false
		case <-recheck:
		case <-p.trigger:
		}
		w = newWindow(clk.Now(), p.opts.BatchIdle, p.opts.BatchHold, p.opts.BatchMax)
		p.ownedArrived.Store(false) // the opening trigger's: no gap before it
	}
	timer := clk.NewTimer(w.wakeAt().Sub(clk.Now()))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, false
		case <-p.trigger:
			w.arrive(clk.Now(), p.ownedArrived.Swap(false))
			timer.Reset(w.wakeAt().Sub(clk.Now()))
			continue
		case <-timer.C():
		}
		now := clk.Now()
		wait, d := w.decide(now, func() string {
			why, err := p.growing(ctx)
			if err != nil {
				p.log.Error(err, "could not tell whether the pending pods' workloads are complete; closing the batch")
			}
			if why != "" && w.heldBy == "" {
				p.log.V(1).Info("batch held open: a workload of its pods is still creating them", "workload", why)
			}
			return why
		})
		if d == decideEarly {
			w.closed, w.early = now, true
			return w, true
		}
		if d == closeWindow {
			break
		}
		timer.Reset(wait)
	}
	w.closed, w.early = clk.Now(), false
	return w, true
}

// provision plans one batch and creates its NodeClaims: it solves the
// pending pods, holds the plan's late pods, nominates the pods placed on
// in-flight nodes, checks the new nodes against the pools' limits (and,
// in an early decision, keeps only the filled ones), creates them and
// says what it launched.
func (p *Provisioner) provision(ctx context.Context, w *window) error {
	b, err := p.snapshot(ctx, true)
	if err != nil {
		return err
	}
	metrics.PendingPods.WithLabelValues("unschedulable").Set(float64(b.pending))
	p.wakeAt(b.lapse)
	if len(b.problem.Pods) == 0 {
		metrics.PendingPods.WithLabelValues("unplaced").Set(0)
		metrics.BufferReplicas.Reset()
		return nil
	}
	cs, err := p.Commitments(ctx)
	if err != nil {
		return err
	}
	plan, options, solveTook, err := p.solve(ctx, b, cs)
	if err != nil {
		return err
	}
	p.holdPlanLate(b, plan)
	now := p.opts.Clock.Now()
	p.nominateInFlight(ctx, b, plan, now)

	// An early decision launches only the nodes its plan fills; a plan
	// with late pods is launched whole, as their wait follows the pods
	// they depend on.
	launches, deferred := p.admit(b, plan, options, w.early && len(plan.Late) == 0)
	p.createAll(ctx, b, launches, w.closed, now)
	created, launchedCost := p.reportLaunches(b, launches)
	p.bufferRoomPlanned(ctx, b, plan, launches)
	if b.overflow > 0 {
		p.log.Info("pods no longer fit the in-flight node they were nominated to; planning them again", "pods", b.overflow)
		p.opts.Clock.AfterFunc(time.Second, p.Trigger)
	}
	decided := p.opts.Clock.Since(w.closed)
	metrics.DecisionDuration.Observe(decided.Seconds())
	for _, u := range plan.Unschedulable {
		b.tell(p, u.Pod, u.Reason)
	}
	p.log.Info("batch planned", "pods", len(b.problem.Pods), "pending", b.pending, "leaving", len(b.moving), "nodeClaims", created,
		"pricePerHour", launchedCost, "onInFlightNodes", len(plan.Existing), "unplaced", len(plan.Unschedulable),
		"window", w.closed.Sub(w.opened).Round(time.Millisecond).String(), "heldBy", w.heldBy, "solve", solveTook.Round(time.Microsecond).String(),
		"late", len(plan.Late), "decision", decided.Round(time.Microsecond).String(), "early", w.early, "deferred", deferred)
	return nil
}

// solve plans the batch, within --solve-timeout, with the commitments cs
// as a budget (see spend), and the launch options of its new nodes (the
// planned offering alone for a node they cover); the pools left out of the
// snapshot are said first.
func (p *Provisioner) solve(ctx context.Context, b *batch, cs []plan.Commitment) (*solver.Plan, [][]solver.LaunchOption, time.Duration, error) {
	for name, why := range b.skippedPools {
		if np := b.pools[name]; np != nil {
			p.recorder.Eventf(np, nil, corev1.EventTypeWarning, "NodeClassNotReady", "Provision", "%s", why)
		}
		p.log.Info("NodePool left out of the plan", "nodepool", name, "reason", why)
	}
	// The solver reads the wall clock against its deadline.
	deadline := time.Now().Add(p.opts.SolveTimeout)
	b.problem.Options.Deadline = deadline
	solveStart := time.Now()
	blind, err := solver.Solve(b.problem)
	solveTook := time.Since(solveStart)
	metrics.SolverDuration.Observe(solveTook.Seconds())
	if err != nil {
		return nil, nil, solveTook, fmt.Errorf("solving: %w", err)
	}
	solved, covered, err := p.spend(ctx, b, blind, cs, deadline)
	if err != nil {
		return nil, nil, solveTook, fmt.Errorf("spending the commitments: %w", err)
	}
	options := solver.LaunchOptions(b.problem, solved, p.opts.LaunchPricePremium)
	pinCovered(options, covered)
	metrics.BatchSize.Observe(float64(len(b.problem.Pods)))
	metrics.PendingPods.WithLabelValues("unplaced").Set(float64(len(solved.Unschedulable)))
	return solved, options, solveTook, nil
}

// holdPlanLate holds the plan's late pods: they are nominated after the
// pods they depend on bind.
func (p *Provisioner) holdPlanLate(b *batch, plan *solver.Plan) {
	leaving := func(i int) bool { return !b.real(i) }
	var planned []int
	for _, n := range plan.NewNodes {
		planned = append(planned, n.Pods...)
	}
	for _, pl := range plan.Existing {
		planned = append(planned, pl.Pod)
	}
	p.holdLate(b.pods, slices.DeleteFunc(planned, leaving), lateDependencies(b.pods, plan, leaving))
	if len(plan.Late) > 0 {
		var late []string
		for _, i := range plan.Late[:min(len(plan.Late), 20)] {
			late = append(late, client.ObjectKeyFromObject(b.pods[i]).String())
		}
		p.log.Info("late pods, nominated once the pods they follow are bound", "count", len(plan.Late), "pods", late)
	}
}

// nominateInFlight nominates the pods the plan placed on in-flight nodes
// to those nodes' claims, which record them (see commit).
func (p *Provisioner) nominateInFlight(ctx context.Context, b *batch, plan *solver.Plan, now time.Time) {
	touched := map[string]bool{}
	p.mu.Lock()
	for _, pl := range plan.Existing {
		if c := b.claims[pl.Node]; c != nil && b.real(pl.Pod) {
			pod := b.pods[pl.Pod]
			if had, ok := p.nominations[pod.UID]; !ok || had.claim != c.Name {
				p.recorder.Eventf(pod, c, corev1.EventTypeNormal, "Nominated", "Provision", "nominated for NodeClaim %s, which is launching", c.Name)
				touched[c.Name] = true
				if ok {
					touched[had.claim] = true // moved: its old claim drops it
				}
			}
			p.nominations[pod.UID] = nomination{claim: c.Name, pod: client.ObjectKeyFromObject(pod), at: now}
			p.plannedOnto(pod.UID, c.Name)
		}
	}
	p.mu.Unlock()
	inFlight := make(map[string]*v1alpha1.NodeClaim, len(b.claims))
	for _, c := range b.claims {
		inFlight[c.Name] = c
	}
	if err := p.commit(ctx, inFlight, touched); err != nil {
		p.log.Error(err, "the pods nominated to in-flight NodeClaims are not all recorded; a restart before the next batch plans them again")
	}
}

// admit returns the plan's new nodes to launch: within their pools' limits
// and minValues (checked in plan order, before anything is created, so that
// the NodeClaims of one decision can be created at once), and, when
// filledOnly, only those filled to earlyFill; deferred counts the pods of
// the nodes left for the next decision.
func (p *Provisioner) admit(b *batch, plan *solver.Plan, options [][]solver.LaunchOption, filledOnly bool) (launches []*launch, deferred int) {
	for i := range plan.NewNodes {
		n := &plan.NewNodes[i]
		np := b.pools[n.Pool]
		if np == nil {
			continue
		}
		if filledOnly && fill(n) < earlyFill {
			deferred += len(n.Pods)
			continue
		}
		if why := p.overLimit(b, np, n); why != "" {
			p.recorder.Eventf(np, nil, corev1.EventTypeWarning, "LimitReached", "Provision", "%s", why)
			p.log.Info("NodeClaim not created: pool limit", "nodepool", np.Name, "instanceType", n.InstanceType, "reason", why)
			for _, pi := range n.Pods {
				b.tell(p, pi, why)
			}
			continue
		}
		flex, why := p.flexible(b, np, n, options[i])
		if why != "" {
			p.recorder.Eventf(np, nil, corev1.EventTypeWarning, "MinValuesNotMet", "Provision", "%s", why)
			p.log.Info("NodeClaim not created: minValues", "nodepool", np.Name, "instanceType", n.InstanceType, "reason", why)
			for _, pi := range n.Pods {
				b.tell(p, pi, why)
			}
			continue
		}
		if typ := b.typesOf(np.Name)[n.InstanceType]; typ != nil {
			b.usage[np.Name] = b.usage[np.Name].Add(typ.Capacity)
		}
		launches = append(launches, &launch{node: n, pool: np, flex: flex})
	}
	return launches, deferred
}

// createAll names the launches' NodeClaims after the decision (closed),
// nominates their pods before they exist — the lifecycle controller asks
// for the pods as soon as it opens a node, which with a fast cloud can be
// within a second — and creates them, 8 at a time.
func (p *Provisioner) createAll(ctx context.Context, b *batch, launches []*launch, closed, now time.Time) {
	id := strconv.FormatInt(closed.UnixNano(), 36)
	for _, l := range launches {
		var pods []*corev1.Pod
		for _, pi := range l.node.Pods {
			if b.real(pi) {
				pods = append(pods, b.pods[pi])
			}
		}
		l.claim = p.newClaim(b, l.pool, l.node, l.flex, pods, id, len(launches))
		p.remember(l.claim, pods, now)
	}
	work := make(chan *launch)
	var wg sync.WaitGroup
	for range min(8, len(launches)) {
		wg.Go(func() {
			for l := range work {
				l.err = p.create(ctx, l.claim, l.pool, metrics.ReasonProvisioning, "")
			}
		})
	}
	for _, l := range launches {
		work <- l
	}
	close(work)
	wg.Wait()
}

// reportLaunches logs and records each launch (the pods of a failed one
// lose their nomination and a batch is retried) and returns how many were
// created and their price.
func (p *Provisioner) reportLaunches(b *batch, launches []*launch) (created int, launchedCost float64) {
	for _, l := range launches {
		n, np, claim := l.node, l.pool, l.claim
		if l.err != nil {
			p.log.Error(l.err, "creating a NodeClaim failed", "nodepool", np.Name, "instanceType", n.InstanceType)
			p.mu.Lock()
			for _, pi := range n.Pods {
				if uid := b.pods[pi].UID; p.nominations[uid].claim == claim.Name {
					delete(p.nominations, uid)
				}
			}
			p.mu.Unlock()
			p.opts.Clock.AfterFunc(time.Second, p.Trigger)
			continue
		}
		created++
		launchedCost += n.Price
		note := fmt.Sprintf("%s %s %s $%s/h", n.InstanceType, n.CapacityType, n.Zone, formatPrice(n.Price))
		p.log.Info("launching NodeClaim", "nodeclaim", claim.Name, "nodepool", np.Name, "instanceType", n.InstanceType,
			"capacityType", n.CapacityType, "zone", n.Zone, "pricePerHour", n.Price, "pods", len(n.Pods), "reason", n.Reason,
			"instanceTypeOptions", len(l.flex.types), "zoneOptions", len(l.flex.zones), "capacityTypeOptions", len(l.flex.capacityTypes))
		if l.flex.relaxed != "" {
			p.recorder.Eventf(np, claim, corev1.EventTypeWarning, "MinValuesRelaxed", "Provision", "NodeClaim %s launched anyway (--min-values-policy=BestEffort): %s", claim.Name, l.flex.relaxed)
		}
		moving := 0
		for _, pi := range n.Pods {
			if b.moving[b.pods[pi].UID] {
				moving++
			}
			if !b.real(pi) {
				continue
			}
			p.recorder.Eventf(b.pods[pi], claim, corev1.EventTypeNormal, "Nominated", "Provision", "nominated for NodeClaim %s: %s", claim.Name, note)
		}
		if moving > 0 {
			p.recorder.Eventf(np, claim, corev1.EventTypeNormal, "Launching", "Provision", "NodeClaim %s: %s for %d pod(s), %d of them on nodes being deleted: %s", claim.Name, note, len(n.Pods), moving, n.Reason)
		} else {
			p.recorder.Eventf(np, claim, corev1.EventTypeNormal, "Launching", "Provision", "NodeClaim %s: %s for %d pod(s): %s", claim.Name, note, len(n.Pods), n.Reason)
		}
	}
	return created, launchedCost
}

// earlyFill is how full a planned node must be for an early decision
// (see window) to launch it: its most used resource at least this share
// of its allocatable. The pods of the nodes less full are planned again
// with the pods that come after them.
const earlyFill = 0.8

// fill is the largest share of its allocatable CPU, memory, pod slots or
// GPUs that a planned node's pods request.
func fill(n *solver.NewNode) float64 {
	f := 0.0
	for _, r := range []int{solver.CPU, solver.Memory, solver.Pods, solver.GPU} {
		if a := n.Allocatable[r]; a > 0 {
			f = max(f, float64(n.Requested[r])/float64(a))
		}
	}
	return f
}

// wakeAt arranges for a batch at t (replacing the one arranged before);
// a zero t arranges nothing.
func (p *Provisioner) wakeAt(t time.Time) {
	if t.IsZero() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wake != nil {
		p.wake.Stop()
	}
	p.wake = p.opts.Clock.AfterFunc(t.Sub(p.opts.Clock.Now())+100*time.Millisecond, p.Trigger)
}

// tell records on an unplaced pod why no node was planned for it, once per
// distinct reason.
func (p *Provisioner) tell(pod *corev1.Pod, reason string) {
	p.mu.Lock()
	same := p.told[pod.UID] == reason
	p.told[pod.UID] = reason
	p.mu.Unlock()
	if !same {
		p.recorder.Eventf(pod, nil, corev1.EventTypeWarning, "NotProvisioned", "Provision", "no node can be launched for this pod: %s", reason)
	}
}

// tell records why the batch's pod pi gets no node, unless it is one of
// the pods of a leaving node, which runs yet.
func (b *batch) tell(p *Provisioner, pi int, reason string) {
	if b.real(pi) {
		p.tell(b.pods[pi], reason)
	}
}

// overLimit checks, with every NodeClaim counted (cached, just created and
// this batch's), that the node fits the pool's limits; it returns why not.
func (p *Provisioner) overLimit(b *batch, np *v1alpha1.NodePool, n *solver.NewNode) string {
	typ := b.typesOf(np.Name)[n.InstanceType]
	if typ == nil || len(np.Spec.Limits) == 0 {
		return ""
	}
	after := b.usage[np.Name].Add(typ.Capacity)
	for name, q := range np.Spec.Limits {
		i := -1
		for j := range solver.MaxResources {
			if b.problem.ResourceName(j) == string(name) {
				i = j
			}
		}
		if i < 0 {
			continue
		}
		limit := q.Value()
		if i == solver.CPU {
			limit = q.MilliValue()
		}
		if after[i] > limit {
			return fmt.Sprintf("NodePool %s's limit of %s %s would be exceeded (%s in use, %s %s needs %s)", np.Name, q.String(), name,
				solver.FormatQuantity(i, b.usage[np.Name][i]), n.InstanceType, n.CapacityType, solver.FormatQuantity(i, typ.Capacity[i]))
		}
	}
	return ""
}

// launch is a planned node to create a NodeClaim for.
type launch struct {
	node  *solver.NewNode
	pool  *v1alpha1.NodePool
	claim *v1alpha1.NodeClaim
	flex  flexibility
	err   error
}

// newClaim builds the NodeClaim of a planned node, one of size created by
// the decision batch, allowing what flex allows (its planned offering
// alone when flex is empty), recording the pods nominated to it.
func (p *Provisioner) newClaim(b *batch, np *v1alpha1.NodePool, n *solver.NewNode, flex flexibility, pods []*corev1.Pod, batch string, size int) *v1alpha1.NodeClaim {
	requests := corev1.ResourceList{}
	for i := range solver.MaxResources {
		name := b.problem.ResourceName(i)
		if name == "" || n.Requested[i] == 0 {
			continue
		}
		if i == solver.CPU {
			requests[corev1.ResourceName(name)] = *resource.NewMilliQuantity(n.Requested[i], resource.DecimalSI)
		} else if i == solver.Memory || i == solver.EphemeralStorage {
			requests[corev1.ResourceName(name)] = *resource.NewQuantity(n.Requested[i], resource.BinarySI)
		} else {
			requests[corev1.ResourceName(name)] = *resource.NewQuantity(n.Requested[i], resource.DecimalSI)
		}
	}
	annotations := map[string]string{
		v1alpha1.AnnotationReason:      n.Reason,
		v1alpha1.AnnotationPlannedPods: strconv.Itoa(len(n.Pods)),
		v1alpha1.AnnotationBatch:       batch,
		v1alpha1.AnnotationBatchSize:   strconv.Itoa(size),
	}
	if len(pods) > 0 {
		keys := make([]types.NamespacedName, len(pods))
		for i, pod := range pods {
			keys[i] = client.ObjectKeyFromObject(pod)
		}
		annotations[v1alpha1.AnnotationNominatedPods] = encodeNominated(keys)
	}
	if flex.relaxed != "" {
		annotations[AnnotationMinValuesRelaxed] = "true"
	}
	if flex.prioritized {
		annotations[cloud.AnnotationPriceOverlayApplied] = "true"
	}
	claim := np.NewNodeClaim(v1alpha1.NodeClaimOptions{
		InstanceType: n.InstanceType, Zone: n.Zone, CapacityType: n.CapacityType, Requests: requests,
		InstanceTypes: flex.types, Zones: flex.zones, CapacityTypes: flex.capacityTypes,
		Annotations: annotations,
	})
	claim.Name = np.Name + "-" + utilrand.String(5)
	return claim
}

// remember counts a NodeClaim about to be created as in flight and
// nominates its pods to it. Both happen before the claim exists: the
// informer may deliver the claim's events (even its deletion, when the
// cloud refuses the launch at once) before Create returns, and the
// lifecycle controller may ask for the pods as soon as the node opens.
func (p *Provisioner) remember(claim *v1alpha1.NodeClaim, pods []*corev1.Pod, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.recent[claim.Name] = recentClaim{claim: claim.DeepCopy(), at: now}
	for _, pod := range pods {
		p.nominations[pod.UID] = nomination{claim: claim.Name, pod: client.ObjectKeyFromObject(pod), at: now}
		p.plannedOnto(pod.UID, claim.Name)
		delete(p.told, pod.UID)
	}
}

// unnominate drops a pod's nomination to claim, if it is still that.
func (p *Provisioner) unnominate(uid types.UID, claim string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nominations[uid].claim == claim {
		delete(p.nominations, uid)
	}
}

// create creates a NodeClaim that provision remembered among the recent
// ones; a claim that could not be created is forgotten. reason and, for a
// replacement, disruptionReason label the creation metrics
// (metrics.ClaimCreated).
func (p *Provisioner) create(ctx context.Context, claim *v1alpha1.NodeClaim, np *v1alpha1.NodePool, reason, disruptionReason string) error {
	if err := p.client.Create(ctx, claim); err != nil {
		p.mu.Lock()
		delete(p.recent, claim.Name)
		p.mu.Unlock()
		return err
	}
	metrics.ClaimCreated(np.Name, reason, disruptionReason, claim.Annotations[AnnotationMinValuesRelaxed] == "true")
	p.mu.Lock()
	// The created object has the server's fields (creation time, UID);
	// a claim the informer has shown meanwhile stays forgotten.
	if r, ok := p.recent[claim.Name]; ok {
		r.claim = claim.DeepCopy()
		p.recent[claim.Name] = r
	}
	p.mu.Unlock()
	return nil
}

// observed records that the informer delivered an event for a NodeClaim:
// from then on the cache, which the informer updates before it tells its
// handlers, shows the claim, or shows it gone, so the recent copy is no
// longer needed to count it. A claim that is gone also takes its
// nominations with it, so that its pods are planned in the next batch
// rather than when the nomination would lapse.
func (p *Provisioner) observed(name string, gone bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.recent, name)
	if gone {
		for uid, n := range p.nominations {
			if n.claim == name {
				delete(p.nominations, uid)
			}
		}
	}
}

// mergeRecent adds the NodeClaims created lately that the cache does not
// show yet, and forgets those it shows and those older than recentTTL.
func (p *Provisioner) mergeRecent(cached []v1alpha1.NodeClaim, now time.Time) []*v1alpha1.NodeClaim {
	out := make([]*v1alpha1.NodeClaim, 0, len(cached))
	seen := map[string]bool{}
	for i := range cached {
		out = append(out, &cached[i])
		seen[cached[i].Name] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, r := range p.recent {
		switch {
		case seen[name] || now.Sub(r.at) > recentTTL:
			delete(p.recent, name)
		default:
			out = append(out, r.claim)
		}
	}
	return out
}

// nominated returns the NodeClaim a pod waits for, if the nomination still
// holds: the claim exists, is not being deleted, and its node initialized
// less than nominationTTL ago (or not yet), or the pod's
// status.nominatedNodeName (nominatedNode) still names that node. The
// scheduler clears the latter when it tried the pod and found no room, so
// a pod it has not come to yet (it binds a large batch's pods at its own
// pace) keeps its node, and one it turned away is planned again.
func (p *Provisioner) nominated(uid types.UID, nominatedNode string, claims map[string]*v1alpha1.NodeClaim, now time.Time) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, ok := p.nominations[uid]
	if !ok {
		return "", false
	}
	c := claims[n.claim]
	valid := c != nil && c.DeletionTimestamp == nil
	if valid && nodeclaim.IsTrue(c, v1alpha1.ConditionInitialized) {
		valid = now.Sub(nodeclaim.TransitionTime(c, v1alpha1.ConditionInitialized)) < nominationTTL ||
			(nominatedNode != "" && nominatedNode == c.Status.NodeName)
	}
	if !valid {
		delete(p.nominations, uid)
		return "", false
	}
	return n.claim, true
}

// NominatedPods returns the pods waiting for a NodeClaim's node, so that
// the node's registration can point the scheduler at it: those nominated
// to it in memory, and those the claim records that no nomination in
// memory sends elsewhere (a node opening before a restarted operator's
// first batch read the records back).
func (p *Provisioner) NominatedPods(claim string) []types.NamespacedName {
	var c v1alpha1.NodeClaim
	var recorded []types.NamespacedName
	if p.client != nil && p.client.Get(context.Background(), client.ObjectKey{Name: claim}, &c) == nil {
		recorded = decodeNominated(c.Annotations[v1alpha1.AnnotationNominatedPods])
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []types.NamespacedName
	elsewhere := map[types.NamespacedName]bool{}
	for _, n := range p.nominations {
		if n.claim == claim {
			out = append(out, n.pod)
		}
		elsewhere[n.pod] = true
	}
	for _, key := range recorded {
		if !elsewhere[key] {
			out = append(out, key)
		}
	}
	return out
}

// forget drops the nominations and reasons of pods no longer pending.
func (p *Provisioner) forget(pending map[types.UID]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid := range p.nominations {
		if !pending[uid] {
			delete(p.nominations, uid)
		}
	}
	for uid := range p.told {
		if !pending[uid] {
			delete(p.told, uid)
		}
	}
	for uid := range p.planned {
		if !pending[uid] {
			delete(p.planned, uid)
		}
	}
	for key, w := range p.late {
		if !pending[w.uid] {
			delete(p.late, key)
		}
	}
}

// formatPrice prints a price with at most 4 decimals.
func formatPrice(v float64) string {
	return strconv.FormatFloat(float64(int64(v*10000+0.5))/10000, 'f', -1, 64)
}
