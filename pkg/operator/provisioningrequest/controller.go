// Package provisioningrequest answers the upstream ProvisioningRequests
// (autoscaling.x-k8s.io/v1) of the classes check-capacity and
// best-effort-atomic-scale-up, which Kueue creates through its
// ProvisioningRequestConfig admission check: it plans each request's gang
// (its PodTemplates × counts, pods that do not exist yet) on the
// provisioner's snapshot, says whether it fits, and for best-effort-atomic
// launches the NodeClaims of the whole gang or none.
package provisioningrequest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	prv1 "github.com/rightsize-dev/kubectl-rightsize/pkg/apis/provisioningrequest/v1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/optional"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// +kubebuilder:rbac:groups=autoscaling.x-k8s.io,resources=provisioningrequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.x-k8s.io,resources=provisioningrequests/status,verbs=update;patch
// +kubebuilder:rbac:groups="",resources=podtemplates,verbs=get;list;watch

// DetailNodeClaims is the provisioningClassDetails key under which a
// best-effort-atomic request's NodeClaims are listed, comma-separated.
const DetailNodeClaims = "nodeClaims"

// Options tune the controller; zero values take the defaults.
type Options struct {
	// Poll is how often requests are listed (1 s).
	Poll time.Duration
	// Retry is how often a check-capacity request that found no capacity
	// (Provisioned=False) is checked again (10 s).
	Retry time.Duration
	// SolveTimeout bounds the plan of one gang (5 s).
	SolveTimeout time.Duration
	// BookingTTL is how long a Provisioned request's capacity is held for
	// its pods (DefaultBookingTTL).
	BookingTTL time.Duration
	// Clock tells the time (the real clock when nil).
	Clock clock.WithTicker
}

// Controller answers ProvisioningRequests; only the leader runs it.
type Controller struct {
	client client.Client
	// reader reads NodeClaims from the API server, not the cache: a claim
	// just created must not look gone.
	reader  client.Reader
	planner Planner
	log     logr.Logger
	opts    Options
	del     deleter
	// checked is when each request was last planned, to pace retries.
	checked map[types.UID]time.Time
	// unwritten holds the answers of requests whose nodes were launched
	// but whose status could not be written: the next poll writes them
	// rather than launching again.
	unwritten map[types.UID]answer
	forbidden atomic.Bool
	// pace leaves ProvisioningRequests alone for a while once the cluster
	// said it does not serve them or the operator may not list them.
	pace optional.Pacer
}

// answer is a condition and class details to write.
type answer struct {
	cond    metav1.Condition
	details map[string]prv1.Detail
}

// New returns the controller; c reads requests from the API server (as
// unstructured objects: their CRD may be missing) and PodTemplates,
// writes requests' status and deletes the NodeClaims of a gang rolled
// back; r reads NodeClaims from the API server; pl is the provisioner.
func New(c client.Client, r client.Reader, pl Planner, log logr.Logger, opts Options) *Controller {
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Retry <= 0 {
		opts.Retry = 10 * time.Second
	}
	if opts.SolveTimeout <= 0 {
		opts.SolveTimeout = 5 * time.Second
	}
	if opts.BookingTTL <= 0 {
		opts.BookingTTL = DefaultBookingTTL
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	ctrl := &Controller{client: c, reader: r, planner: pl, log: log, opts: opts, checked: map[types.UID]time.Time{}, unwritten: map[types.UID]answer{}}
	ctrl.del = func(ctx context.Context, claim *v1alpha1.NodeClaim) error { return c.Delete(ctx, claim) }
	return ctrl
}

// NeedLeaderElection makes only the leader answer requests.
func (c *Controller) NeedLeaderElection() bool { return true }

var _ manager.LeaderElectionRunnable = (*Controller)(nil)

// Start answers the requests every Poll until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	tick := c.opts.Clock.NewTicker(c.opts.Poll)
	defer tick.Stop()
	c.log.Info("provisioning request controller started", "classes", []string{prv1.ClassCheckCapacity, prv1.ClassBestEffortAtomicScaleUp})
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
		}
		if c.pace.Wait(c.opts.Clock.Now()) {
			continue
		}
		requests, err := c.list(ctx)
		if err != nil {
			c.log.Error(err, "listing ProvisioningRequests")
			continue
		}
		now := c.opts.Clock.Now()
		var holding []*prv1.ProvisioningRequest
		for _, pr := range requests {
			switch {
			case bookingExpired(pr, c.opts.BookingTTL, now):
				if err := c.writeStatus(ctx, pr, cond(prv1.ConditionBookingExpired, true, ReasonBookingExpired, expiredMessage(c.opts.BookingTTL)), nil); err != nil {
					c.log.Error(err, "expiring a ProvisioningRequest's booking", "provisioningrequest", pr.Namespace+"/"+pr.Name)
				}
			case holds(pr):
				holding = append(holding, pr)
			}
		}
		seen := map[types.UID]bool{}
		for _, pr := range requests {
			seen[pr.UID] = true
			if !open(pr) {
				continue
			}
			if names := launching(pr); names != nil {
				if err := c.follow(ctx, pr, names); err != nil {
					c.log.Error(err, "following a ProvisioningRequest's NodeClaims", "provisioningrequest", pr.Namespace+"/"+pr.Name)
				}
				continue
			}
			if now.Sub(c.checked[pr.UID]) < c.opts.Retry {
				continue
			}
			c.checked[pr.UID] = now
			if err := c.answerRequest(ctx, pr, holding); err != nil {
				c.log.Error(err, "answering a ProvisioningRequest", "provisioningrequest", pr.Namespace+"/"+pr.Name)
				delete(c.checked, pr.UID) // retried at the next poll
			}
			if holds(pr) { // answered now: the next request of this pass plans around it
				holding = append(holding, pr)
			}
		}
		for uid := range c.checked {
			if !seen[uid] {
				delete(c.checked, uid)
				delete(c.unwritten, uid)
			}
		}
	}
}

// open reports whether a request is one to answer: of a supported class,
// not yet Provisioned, without a final condition.
func open(pr *prv1.ProvisioningRequest) bool {
	switch pr.Spec.ProvisioningClassName {
	case prv1.ClassCheckCapacity, prv1.ClassBestEffortAtomicScaleUp:
	default:
		return false
	}
	if pr.DeletionTimestamp != nil {
		return false
	}
	for _, t := range []string{prv1.ConditionProvisioned, prv1.ConditionFailed, prv1.ConditionBookingExpired, prv1.ConditionCapacityRevoked} {
		if meta.IsStatusConditionTrue(pr.Status.Conditions, t) {
			return false
		}
	}
	return true
}

// list reads the requests from the API server; none when the CRD is not
// installed or the operator may not list them (said once).
func (c *Controller) list(ctx context.Context) ([]*prv1.ProvisioningRequest, error) {
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(prv1.SchemeGroupVersion.WithKind("ProvisioningRequestList"))
	err := c.client.List(ctx, &list)
	c.pace.Saw(err, c.opts.Clock.Now())
	if err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		if apierrors.IsForbidden(err) {
			if !c.forbidden.Swap(true) {
				c.log.Info("ProvisioningRequests are not answered: the operator may not list provisioningrequests.autoscaling.x-k8s.io (re-apply its ClusterRole)", "error", err.Error())
			}
			return nil, nil
		}
		return nil, fmt.Errorf("reading ProvisioningRequests: %w", err)
	}
	out := make([]*prv1.ProvisioningRequest, 0, len(list.Items))
	for i := range list.Items {
		raw, err := json.Marshal(list.Items[i].Object)
		if err != nil {
			return nil, fmt.Errorf("ProvisioningRequest %s: %w", list.Items[i].GetName(), err)
		}
		pr := &prv1.ProvisioningRequest{}
		if err := json.Unmarshal(raw, pr); err != nil {
			c.log.Info("ProvisioningRequest not answered: unreadable", "provisioningrequest", list.Items[i].GetNamespace()+"/"+list.Items[i].GetName(), "error", err.Error())
			continue
		}
		out = append(out, pr)
	}
	return out, nil
}

// answerRequest plans one request's gang and writes the answer to its
// status; a best-effort-atomic request whose gang is placed whole has its
// NodeClaims created first, and is Launching (see follow) until their
// instances are.
func (c *Controller) answerRequest(ctx context.Context, pr *prv1.ProvisioningRequest, holding []*prv1.ProvisioningRequest) error {
	if a, ok := c.unwritten[pr.UID]; ok {
		if err := c.writeStatus(ctx, pr, a.cond, a.details); err != nil {
			return err
		}
		delete(c.unwritten, pr.UID)
		return nil
	}
	templates, err := c.templates(ctx)
	if err != nil {
		return err
	}
	// NodeClaims of this request created before a restart, whose status
	// was not written: follow them rather than launch a second gang.
	batch := batchOf(pr)
	if names, err := c.claimsOf(ctx, batch); err != nil || len(names) > 0 {
		if err != nil {
			return err
		}
		return c.writeStatus(ctx, pr, cond(prv1.ConditionProvisioned, false, ReasonLaunching,
			fmt.Sprintf("following the %d NodeClaims created for this request before the operator restarted", len(names))),
			map[string]prv1.Detail{DetailNodeClaims: prv1.Detail(strings.Join(names, ","))})
	}
	pods, why := gangPods(pr, templates[pr.Namespace])
	if why != "" {
		return c.writeStatus(ctx, pr, cond(prv1.ConditionProvisioned, false, ReasonPodTemplateNotFound, why), nil)
	}
	// The room other requests hold is planned first, so that two requests
	// are not answered with the same free room.
	var running corev1.PodList
	if err := c.client.List(ctx, &running); err != nil {
		return fmt.Errorf("reading pods: %w", err)
	}
	booked := bookedPods(holding, templates, consumedPods(running.Items))
	s, index, err := c.planner.SnapshotWith(ctx, append(booked, pods...))
	if err != nil {
		return err
	}
	for i, j := range index[len(booked):] {
		if j < 0 {
			return c.writeStatus(ctx, pr, cond(prv1.ConditionFailed, true, ReasonCapacityIsNotFound,
				fmt.Sprintf("pod %s cannot be planned (its PodTemplate's spec is not modelled; the operator's log says why)", pods[i].Name)), nil)
		}
	}
	q, err := c.planGang(s.Problem, index[:len(booked)], index[len(booked):])
	if err != nil {
		return err
	}
	cs, err := c.planner.Commitments(ctx)
	if err != nil {
		return fmt.Errorf("reading the Commitments: %w", err)
	}
	planned, err := c.solveGang(ctx, q, cs)
	if err != nil {
		return err
	}
	noRetry := strings.EqualFold(string(pr.Spec.Parameters[prv1.ParameterNoRetry]), "true")
	d := decide(pr.Spec.ProvisioningClassName, noRetry, q, planned)
	var details map[string]prv1.Detail
	if len(d.launch) > 0 {
		claims, err := launchAll(ctx, c.planner, c.del, s, q, d.launch, d.covered, batch)
		if err != nil {
			d.cond = cond(prv1.ConditionFailed, true, ReasonLaunchFailed, oneLine(err.Error()))
		} else {
			names := make([]string, len(claims))
			for i, cl := range claims {
				names[i] = cl.Name
			}
			details = map[string]prv1.Detail{DetailNodeClaims: prv1.Detail(strings.Join(names, ","))}
			d.cond = cond(prv1.ConditionProvisioned, false, ReasonLaunching,
				fmt.Sprintf("launching %s for all %d pods (%s); Provisioned once every instance is launched, all deleted if one cannot be",
					describeNodes(d.launch), len(pods), costOf(d.launch, d.covered)))
		}
	}
	c.log.Info("ProvisioningRequest answered", "provisioningrequest", pr.Namespace+"/"+pr.Name, "class", pr.Spec.ProvisioningClassName,
		"pods", len(pods), "booked", len(booked), "condition", d.cond.Type, "status", d.cond.Status, "reason", d.cond.Reason, "message", d.cond.Message)
	if err := c.writeStatus(ctx, pr, d.cond, details); err != nil {
		if len(d.launch) > 0 {
			c.unwritten[pr.UID] = answer{cond: d.cond, details: details}
		}
		return err
	}
	return nil
}

// writeStatus sets Accepted and the given condition on the request's
// status (a merge patch of the status subresource), unless it says so
// already.
func (c *Controller) writeStatus(ctx context.Context, pr *prv1.ProvisioningRequest, set metav1.Condition, details map[string]prv1.Detail) error {
	conds := append([]metav1.Condition(nil), pr.Status.Conditions...)
	now := metav1.NewTime(c.opts.Clock.Now())
	changed := meta.SetStatusCondition(&conds, metav1.Condition{Type: prv1.ConditionAccepted, Status: metav1.ConditionTrue, Reason: ReasonAccepted,
		Message: "the operator plans this request", ObservedGeneration: pr.Generation, LastTransitionTime: now})
	set.ObservedGeneration, set.LastTransitionTime = pr.Generation, now
	changed = meta.SetStatusCondition(&conds, set) || changed
	if !changed && len(details) == 0 {
		return nil
	}
	status := map[string]any{"conditions": conds}
	if len(details) > 0 {
		status["provisioningClassDetails"] = details
	}
	data, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(prv1.SchemeGroupVersion.WithKind("ProvisioningRequest"))
	u.SetNamespace(pr.Namespace)
	u.SetName(pr.Name)
	if err := c.client.Status().Patch(ctx, u, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("writing the status: %w", err)
	}
	pr.Status.Conditions = conds
	if len(details) > 0 {
		pr.Status.ProvisioningClassDetails = details
	}
	return nil
}

// planGang is the problem of the gang (its pods at gang in p): p's nodes
// with the room of the booked pods (at booked, -1 for one not modelled)
// taken first, where a plan of them alone puts them on nodes there are.
func (c *Controller) planGang(p *solver.Problem, booked, gang []int) (*solver.Problem, error) {
	q := gangProblem(p, gang)
	held := slices.DeleteFunc(slices.Clone(booked), func(j int) bool { return j < 0 })
	if len(held) == 0 {
		return q, nil
	}
	b := gangProblem(p, held)
	bookedPlan, err := c.solve(b)
	if err != nil {
		return nil, fmt.Errorf("planning the room other requests hold: %w", err)
	}
	return reserve(q, b, bookedPlan), nil
}

// solve plans q within SolveTimeout.
func (c *Controller) solve(q *solver.Problem) (*solver.Plan, error) {
	q.Options.Deadline = time.Now().Add(c.opts.SolveTimeout) // the solver reads the wall clock
	return solver.Solve(q)
}

// solveGang plans the gang's problem q, then, with Commitments, plans it
// again spending them as a provisioning batch does (plan.SpendBy: the plan
// with the lowest bill, the blind one included, the existing nodes using
// the commitments first), every plan within the same SolveTimeout and
// none once ctx ends.
func (c *Controller) solveGang(ctx context.Context, q *solver.Problem, cs []plan.Commitment) (gangPlan, error) {
	blind, err := c.solve(q)
	if err != nil {
		return gangPlan{}, fmt.Errorf("planning the gang: %w", err)
	}
	if len(cs) == 0 {
		return gangPlan{Plan: blind}, nil
	}
	spent, err := plan.SpendBy(ctx, q, blind, cs, q.Options.Deadline)
	if err != nil {
		return gangPlan{}, fmt.Errorf("planning the gang with the Commitments: %w", err)
	}
	c.log.V(1).Info("commitments spent on a gang", "billPerHour", spent.Bill.Total, "blindBillPerHour", spent.Blind.Total,
		"aware", spent.Aware, "plans", spent.Rounds, "newNodes", len(spent.Plan.NewNodes))
	return gangPlan{Plan: spent.Plan, covered: spent.Covered}, nil
}

// templates reads the PodTemplates, by namespace and name.
func (c *Controller) templates(ctx context.Context) (map[string]map[string]*corev1.PodTemplate, error) {
	var list corev1.PodTemplateList
	if err := c.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("reading PodTemplates: %w", err)
	}
	out := map[string]map[string]*corev1.PodTemplate{}
	for i := range list.Items {
		t := &list.Items[i]
		if out[t.Namespace] == nil {
			out[t.Namespace] = map[string]*corev1.PodTemplate{}
		}
		out[t.Namespace][t.Name] = t
	}
	return out, nil
}

// batchOf is the batch annotation (v1alpha1.AnnotationBatch) of the
// NodeClaims launched for a request: its UID, so that they are found
// again after a restart.
func batchOf(pr *prv1.ProvisioningRequest) string { return "provreq-" + string(pr.UID) }

// claimsOf names the NodeClaims of a batch.
func (c *Controller) claimsOf(ctx context.Context, batch string) ([]string, error) {
	var list v1alpha1.NodeClaimList
	if err := c.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("reading NodeClaims: %w", err)
	}
	var names []string
	for i := range list.Items {
		if list.Items[i].Annotations[v1alpha1.AnnotationBatch] == batch && list.Items[i].DeletionTimestamp == nil {
			names = append(names, list.Items[i].Name)
		}
	}
	return names, nil
}

// oneLine joins a multi-line error into one sentence for a condition.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
