// Package disruption removes and replaces nodes safely: it consolidates
// (deletes empty nodes, and nodes whose pods fit elsewhere or on cheaper
// capacity), replaces nodes older than their NodePool's expireAfter and
// nodes that drifted from their NodePool or node class (the NodeClaim's
// Drifted condition, set by nodeclaim/drift), always within the pools'
// disruption budgets, do-not-disrupt annotations and PodDisruptionBudgets.
//
// On every cluster change (debounced) and at least every Interval it takes
// the provisioner's snapshot, asks the consolidation planner, picks every
// action that passes every guard and that the budgets and PDBs allow
// together (the planner's actions are independent of each other), waits
// ValidationDelay, re-plans exactly those actions on a fresh snapshot, and
// carries out, in parallel, those that still hold: taint the nodes NoSchedule,
// launch the replacements and wait for them to initialize, drain the nodes
// through the eviction API, then delete their NodeClaims (the lifecycle
// finalizer terminates the instances). A replacement that fails to launch
// or a drain that does not finish in time rolls the action back: the nodes
// are untainted and keep their remaining pods. Every decision and every
// refusal is an event on the node.
//
// Rounds overlap: while chosen actions wait for their validation or run,
// the next plans hold them (disruption.View.Hold: their nodes and the
// nodes their pods move onto are off limits, and they use their pools'
// budgets and their PDBs' allowances), so that the budget an action frees
// when it ends is used again at once rather than after the slowest action
// of its round.
package disruption

import (
	"context"
	"fmt"
	"regexp"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/disruption"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TaintKey is the NoSchedule taint put on nodes a disruption action is
// about to drain (disruption.TaintKey).
const TaintKey = disruption.TaintKey

// Options tune the disruption controller.
type Options struct {
	// Interval is the longest time between two plans (5 minutes when
	// zero); cluster changes and consolidateAfter deadlines plan sooner.
	Interval time.Duration
	// Debounce is how long the cluster must stay unchanged before a change
	// is planned for (2 s when zero).
	Debounce time.Duration
	// DebounceMax bounds that wait after the first change (10 s, the
	// period of Karpenter's disruption loop, when zero): a cluster that
	// never stays unchanged for Debounce — pods created and deleted every
	// second, nodes and NodeClaims updated — is still planned for.
	DebounceMax time.Duration
	// ValidationDelay is how long an action waits before the cluster is
	// planned again to check it still holds (15 s when zero).
	ValidationDelay time.Duration
	// DrainTimeout bounds draining an action's nodes; past it the action
	// is rolled back (5 minutes when zero).
	DrainTimeout time.Duration
	// ReplacementTimeout bounds the wait for a replacement to initialize;
	// past it the action is rolled back (10 minutes when zero).
	ReplacementTimeout time.Duration
	// AllowUncontrolled lets actions evict pods that no controller
	// recreates (they are lost); off, such pods keep their node.
	AllowUncontrolled bool
	// SolveTimeout bounds one consolidation plan (10 s when zero).
	SolveTimeout time.Duration
	// Disabled turns the controller off.
	Disabled bool
	// Clock tells the time of the intervals, the debounce, the validation
	// delay, the consolidateAfter deadlines and the replacement and drain
	// waits; the real clock when nil. The solver's own deadline is always
	// the wall clock's.
	Clock clock.WithTicker
}

// Source is where the controller gets its view of the cluster and launches
// replacements: the provisioner, so that both plan on the same input.
type Source interface {
	Snapshot(ctx context.Context) (*disruption.Snapshot, error)
	// Launch creates the NodeClaim of a replacement for a disruption of
	// reason (Underutilized, Drifted, ...) that takes the pods of the
	// given keys (namespace/name).
	Launch(ctx context.Context, s *disruption.Snapshot, n *solver.NewNode, reason string, pods []string) (*v1alpha1.NodeClaim, error)
	// Forget drops a launched NodeClaim the controller deleted again.
	Forget(claim string)
	// Commitments are the Commitments (Reserved Instances, Savings
	// Plans) the nodes are billed with: a node is priced at what it costs
	// beyond them (plan.CoveredPrices), so that no action moves a node off
	// covered capacity for less than the commitment's value.
	Commitments(ctx context.Context) ([]plan.Commitment, error)
}

// Controller plans and carries out disruption actions. It is a leader-only
// manager.Runnable.
type Controller struct {
	client   client.Client
	kube     kubernetes.Interface
	source   Source
	recorder events.EventRecorder
	log      logr.Logger
	opts     Options
	clock    clock.WithTicker
	trigger  chan struct{}

	mu sync.Mutex
	// told is the last refusal recorded on each node, so that a node gets
	// one event per new reason rather than one per plan.
	told map[string]string
	// lastPlan summarises the last plan logged, so that an unchanged plan
	// is logged once.
	lastPlan string
	// pending are the actions chosen and not done yet: waiting for their
	// validation or being carried out. Later plans hold them (see
	// disruption.View.Hold).
	pending []*disruption.Candidate
	// actions runs carryOut; Start waits for it before returning.
	actions sync.WaitGroup
}

// New returns the disruption controller.
func New(c client.Client, kube kubernetes.Interface, source Source, recorder events.EventRecorder, log logr.Logger, opts Options) *Controller {
	if opts.Interval <= 0 {
		opts.Interval = 5 * time.Minute
	}
	if opts.Debounce <= 0 {
		opts.Debounce = 2 * time.Second
	}
	if opts.DebounceMax <= 0 {
		opts.DebounceMax = 10 * time.Second
	}
	if opts.ValidationDelay <= 0 {
		opts.ValidationDelay = 15 * time.Second
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 5 * time.Minute
	}
	if opts.ReplacementTimeout <= 0 {
		opts.ReplacementTimeout = 10 * time.Minute
	}
	if opts.SolveTimeout <= 0 {
		opts.SolveTimeout = 10 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Controller{client: c, kube: kube, source: source, recorder: recorder, log: log, opts: opts, clock: opts.Clock,
		trigger: make(chan struct{}, 1), told: map[string]string{}}
}

// RBAC of the disruption controller: it taints, drains (evicting through
// the eviction API) and deletes NodeClaims, and records events.
//
// +kubebuilder:rbac:groups="",resources=pods;nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=patch;update
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=list

// Register adds the controller (a leader-only runnable) and the watches
// that trigger it to the manager.
func (c *Controller) Register(mgr ctrl.Manager) error {
	if c.opts.Disabled {
		return nil
	}
	if err := mgr.Add(c); err != nil {
		return err
	}
	trigger := handler.Funcs{
		CreateFunc: func(context.Context, event.CreateEvent, workqueueT) { c.Trigger() },
		UpdateFunc: func(context.Context, event.UpdateEvent, workqueueT) { c.Trigger() },
		DeleteFunc: func(context.Context, event.DeleteEvent, workqueueT) { c.Trigger() },
	}
	pods := handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, _ workqueueT) {
			if e.Object.(*corev1.Pod).Spec.NodeName != "" {
				c.Trigger()
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueueT) {
			old, pod := e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod)
			// A pod that left a node plans again at once; when it left is
			// recorded on the node's NodeClaim (nodeclaim/podevents), whose
			// update triggers a plan too.
			if old.Spec.NodeName != pod.Spec.NodeName || (pod.Spec.NodeName != "" && !finished(old) && finished(pod)) {
				c.Trigger()
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueueT) {
			if pod, ok := e.Object.(*corev1.Pod); ok && pod.Spec.NodeName != "" && !finished(pod) {
				c.Trigger()
			}
		},
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("disruption").
		Watches(&corev1.Pod{}, pods).
		Watches(&corev1.Node{}, trigger).
		Watches(&v1alpha1.NodeClaim{}, trigger).
		Watches(&v1alpha1.NodePool{}, trigger).
		Watches(&policyv1.PodDisruptionBudget{}, trigger).
		Complete(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{}, nil
		}))
}

type workqueueT = workqueue.TypedRateLimitingInterface[reconcile.Request]

func finished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// Trigger asks for a plan once the cluster has been quiet for Debounce. It
// never blocks.
func (c *Controller) Trigger() {
	select {
	case c.trigger <- struct{}{}:
	default:
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start plans and acts until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	c.log.Info("disruption controller started", "interval", c.opts.Interval.String(), "validationDelay", c.opts.ValidationDelay.String(),
		"drainTimeout", c.opts.DrainTimeout.String(), "allowUncontrolled", c.opts.AllowUncontrolled)
	c.untaintLeftovers(ctx)
	defer c.actions.Wait()
	next := time.Duration(0)
	for {
		wake := c.clock.NewTimer(next)
		select {
		case <-ctx.Done():
			wake.Stop()
			return nil
		case <-wake.C():
		case <-c.trigger:
			wake.Stop()
			if !c.settle(ctx) {
				return nil
			}
		}
		var err error
		next, err = c.round(ctx)
		if err != nil && ctx.Err() == nil {
			c.log.Error(err, "disruption round failed; retrying")
			next = 10 * time.Second
		}
		next = min(max(next, 0), c.opts.Interval)
	}
}

// settle waits, after a change, until the cluster has been quiet for
// Debounce or DebounceMax has passed since the change, whichever is
// first; false when ctx ends.
func (c *Controller) settle(ctx context.Context) bool {
	quiet := c.clock.NewTimer(c.opts.Debounce)
	defer quiet.Stop()
	limit := c.clock.NewTimer(c.opts.DebounceMax)
	defer limit.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-c.trigger:
			quiet.Reset(c.opts.Debounce)
		case <-quiet.C():
			return true
		case <-limit.C():
			return true
		}
	}
}

// round plans once, beside the actions chosen earlier that are not done
// yet, and starts carrying out the actions chosen now (see carryOut). It
// returns when to plan next at the latest.
func (c *Controller) round(ctx context.Context) (_ time.Duration, err error) {
	defer func() {
		// A bug in one round must not take the operator down with it.
		if r := recover(); r != nil {
			err = fmt.Errorf("disruption round panicked: %v\n%s", r, debug.Stack())
		}
	}()
	v, plan, err := c.plan(ctx)
	if err != nil {
		return 0, err
	}
	if sum := fmt.Sprintf("%d %.4f %.4f", len(plan.Actions), plan.Saving, plan.CurrentPrice); sum != c.lastPlan {
		c.lastPlan = sum
		c.log.Info("consolidation planned", "currentPricePerHour", plan.CurrentPrice, "savingPerHour", plan.Saving,
			"targetPricePerHour", plan.TargetPrice, "actions", len(plan.Actions), "blocked", len(plan.Blocked), "underWay", len(c.underWay(nil)))
	}
	metrics.EligibleNodes(plan.Actions)
	chosen, refused := v.Choose(plan)
	c.tellRefusals(v, refused)
	if len(chosen) > 0 {
		for _, cand := range chosen {
			c.log.Info("disruption action chosen; validating", "action", cand.Action.Kind, "reason", cand.Reason, "nodes", cand.Action.Nodes,
				"savingPerHour", cand.Action.Saving, "why", cand.Action.Reason, "validationDelay", c.opts.ValidationDelay.String())
		}
		c.mu.Lock()
		c.pending = append(c.pending, chosen...)
		c.mu.Unlock()
		c.actions.Go(func() { c.carryOut(ctx, chosen) })
	}
	// The actions under way trigger the next plan when they end.
	return v.NextDeadline(c.opts.Interval), nil
}

// carryOut waits ValidationDelay, re-plans exactly the actions chosen on a
// fresh view (beside the other actions under way) and carries out, in
// parallel, those that still hold. Each action is under way until it
// ends; then the next plan is asked for, so that the budget it used is
// used again at once.
func (c *Controller) carryOut(ctx context.Context, chosen []*disruption.Candidate) {
	held := chosen
	defer func() { c.release(held...) }()
	defer func() {
		// As in round: a bug in one action must not take the operator
		// down with it.
		if r := recover(); r != nil {
			c.log.Error(fmt.Errorf("%v\n%s", r, debug.Stack()), "disruption actions panicked", "actions", len(held))
		}
	}()
	select {
	case <-ctx.Done():
		return
	case <-c.clock.After(c.opts.ValidationDelay):
	}
	v, err := c.view(ctx, chosen)
	if err != nil {
		c.log.Error(err, "validating the disruption actions chosen; the next plan looks again")
		return
	}
	valid, dropped, err := v.Revalidate(chosen)
	if err != nil {
		c.log.Error(err, "validating the disruption actions chosen; the next plan looks again")
		return
	}
	// The actions as re-planned (their pods may move elsewhere now) are
	// the ones later plans hold.
	c.mu.Lock()
	c.pending = append(slices.DeleteFunc(c.pending, func(p *disruption.Candidate) bool { return slices.Contains(chosen, p) }), valid...)
	held = valid
	c.mu.Unlock()
	c.dropped(v, dropped)
	// The actions that still hold are independent of each other (see
	// disruption.View.Revalidate): they run together.
	var wg sync.WaitGroup
	for _, cand := range valid {
		wg.Go(func() {
			defer c.release(cand)
			defer func() {
				if r := recover(); r != nil {
					c.log.Error(fmt.Errorf("%v\n%s", r, debug.Stack()), "disruption action panicked", "nodes", cand.Action.Nodes)
				}
			}()
			if err := c.execute(ctx, v, cand); err != nil && ctx.Err() == nil {
				c.log.Error(err, "disruption action failed; the next plan looks again", "nodes", cand.Action.Nodes)
			}
		})
	}
	wg.Wait()
}

// release ends the actions (those still under way) and asks for the next
// plan.
func (c *Controller) release(done ...*disruption.Candidate) {
	c.mu.Lock()
	c.pending = slices.DeleteFunc(c.pending, func(p *disruption.Candidate) bool { return slices.Contains(done, p) })
	c.mu.Unlock()
	c.Trigger()
}

// dropped records the actions that no longer hold after the validation
// delay.
func (c *Controller) dropped(v *disruption.View, dropped []disruption.Dropped) {
	for _, d := range dropped {
		a := &d.Candidate.Action
		c.log.Info("disruption action no longer valid; not carried out", "action", a.Kind, "nodes", a.Nodes, "why", d.Why)
		metrics.DisruptionInvalidated.WithLabelValues(a.Kind, d.Candidate.Reason).Inc()
		for _, n := range a.Nodes {
			if node, _, ok := v.Node(n); ok {
				c.recorder.Eventf(node, nil, corev1.EventTypeNormal, "DisruptionCancelled", "Validate",
					"%s was planned (%s) but no longer holds after %s: %s", disruption.Describe(a), d.Candidate.Reason, c.opts.ValidationDelay, d.Why)
			}
		}
	}
}

// underWay returns the actions chosen earlier that are not done yet, but
// those of except.
func (c *Controller) underWay(except []*disruption.Candidate) []*disruption.Candidate {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*disruption.Candidate
	for _, p := range c.pending {
		if !slices.Contains(except, p) {
			out = append(out, p)
		}
	}
	return out
}

// view builds a view of the cluster, prepared for consolidation, that
// holds the actions under way but those of except (see
// disruption.View.Hold), its nodes priced at what they cost beyond the
// commitments.
func (c *Controller) view(ctx context.Context, except []*disruption.Candidate) (*disruption.View, error) {
	snap, err := c.source.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	var nodes corev1.NodeList
	var claims v1alpha1.NodeClaimList
	if err := c.client.List(ctx, &nodes); err != nil {
		return nil, err
	}
	if err := c.client.List(ctx, &claims); err != nil {
		return nil, err
	}
	cs, err := c.source.Commitments(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the Commitments the nodes are billed with: %w", err)
	}
	now := c.clock.Now()
	v, err := disruption.NewView(disruption.Input{Snapshot: snap, Nodes: nodes.Items, Claims: claims.Items,
		AllowUncontrolled: c.opts.AllowUncontrolled, Now: now, Reprice: plan.CoveredPricer(cs)})
	if err != nil {
		return nil, err
	}
	v.Hold(c.underWay(except))
	v.Problem().Options.Deadline = now.Add(c.opts.SolveTimeout)
	return v, nil
}

// plan builds a view of the cluster and asks the consolidation planner.
func (c *Controller) plan(ctx context.Context) (*disruption.View, *solver.ConsolidationPlan, error) {
	v, err := c.view(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	plan, err := solver.Consolidate(v.Problem())
	if err != nil {
		return nil, nil, fmt.Errorf("planning consolidation: %w", err)
	}
	return v, plan, nil
}

// digits matches the numbers in a refusal (ages, prices), which change
// from plan to plan without the reason changing.
var digits = regexp.MustCompile(`[0-9.$]+`)

// tellRefusals records on each node why it is left alone, once per new
// reason.
func (c *Controller) tellRefusals(v *disruption.View, refused map[string]disruption.Refusal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, why := range refused {
		node, claim, ok := v.Node(name)
		if !ok {
			continue
		}
		key := digits.ReplaceAllString(why.Reason, "#")
		if c.told[name] == key {
			continue
		}
		c.told[name] = key
		c.recorder.Eventf(node, claimOrNil(claim), corev1.EventTypeNormal, "DisruptionBlocked", "Plan", "not disrupted: %s", why.Reason)
	}
	for name := range c.told {
		if _, _, ok := v.Node(name); !ok {
			delete(c.told, name)
		} else if _, still := refused[name]; !still {
			delete(c.told, name)
		}
	}
}

// claimOrNil avoids a typed nil in the recorder's related object.
func claimOrNil(claim *v1alpha1.NodeClaim) runtime.Object {
	if claim == nil {
		return nil
	}
	return claim
}

// untaintLeftovers removes the disruption taint from nodes an earlier
// leader left tainted when it stopped mid-action, unless their NodeClaim is
// being deleted.
func (c *Controller) untaintLeftovers(ctx context.Context) {
	var nodes corev1.NodeList
	if err := c.client.List(ctx, &nodes); err != nil {
		return
	}
	var claims v1alpha1.NodeClaimList
	if err := c.client.List(ctx, &claims); err != nil {
		return
	}
	deleting := map[string]bool{}
	for _, cl := range claims.Items {
		if cl.DeletionTimestamp != nil && cl.Status.ProviderID != "" {
			deleting[cl.Status.ProviderID] = true
		}
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == TaintKey }) || deleting[n.Spec.ProviderID] {
			continue
		}
		if err := c.untaint(ctx, n.Name); err == nil {
			c.log.Info("removed a disruption taint left by an interrupted action", "node", n.Name)
		}
	}
}
