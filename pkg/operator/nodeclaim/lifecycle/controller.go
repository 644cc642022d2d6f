// Package lifecycle takes a NodeClaim from creation to a node pods run on,
// and back: launch through the CloudProvider, registration of the Node
// (matched by providerID; the claim's labels and taints copied on),
// initialization (Node Ready, startup taints gone; the nodes of one
// provisioning decision are opened together: the pods planned for each node
// nominated to it, then the unregistered taints removed, so that the
// scheduler places the pods as the plan packed them), liveness (a claim not
// launched or not registered in time is deleted so its pods are planned
// again) and termination (cordon and drain through the eviction API, then
// the instance, then the Node).
package lifecycle

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/state"
)

// Options tune the lifecycle controller.
type Options struct {
	// LaunchTimeout and RegistrationTimeout are the liveness limits: a
	// claim not launched within LaunchTimeout of its creation, or whose
	// Node has not registered within RegistrationTimeout of the launch, is
	// deleted (5 and 15 minutes when zero).
	LaunchTimeout, RegistrationTimeout time.Duration
	// DrainTimeout bounds one drain attempt; a blocked drain is retried.
	DrainTimeout time.Duration
	// Replan is called when a claim is deleted so its pods get planned
	// again.
	Replan func()
	// NominatedPods returns the pods planned onto a claim's node (by claim
	// name). When the node registers, their status.nominatedNodeName is set
	// to it, so that the scheduler tries that node first and keeps its room
	// for them, as the plan intended.
	NominatedPods func(claim string) []types.NamespacedName
	// Waiting reports whether a pod NominatedPods returned is to be
	// nominated only later: one of a plan's late pods, which would turn
	// away the pods it must follow if it were nominated with them (see
	// provisioning.Provisioner.Waiting). Such a pod is nominated once
	// Waiting turns false, or LateWait after its node opened; nil: no pod
	// waits.
	Waiting func(pod types.NamespacedName) bool
	// LateWait bounds how long a waiting pod goes without its nomination
	// after its node opened (1 minute when zero).
	LateWait time.Duration
	// GangWait bounds how long a usable node waits for the other nodes of
	// its provisioning decision (NodeClaims with the same
	// v1alpha1.AnnotationBatch) before it opens without them (10 s when
	// zero). Only nodes planned for pods placed against pods on other nodes
	// (a hard topology spread, required pod affinity) wait, and only for
	// each other: opening those together is what lets the scheduler place
	// such pods as the plan did, where one node opening first would take
	// one pod of a spread and turn the rest away. Other nodes open on
	// their own as soon as they are usable.
	GangWait time.Duration
	// NoNominations leaves status.nominatedNodeName to the scheduler, as
	// Karpenter does: no pod is pointed at its planned node.
	NoNominations bool
	// SkipSpreadNominations gives no nominated node to the pods
	// placedAgainstOthers (see the comment above nominate): they bind
	// sooner, and kube-scheduler places them where it scores best.
	SkipSpreadNominations bool
	// KeepNominations is how long after opening nodes the controller puts
	// back the nominations the scheduler dropped from pods still waiting for
	// them (15 s when zero).
	KeepNominations time.Duration
	// AfterLaunch, when set, is called right after the cloud launched an
	// instance and before the claim's status is written. Tests use it to
	// simulate a crash at the worst moment.
	AfterLaunch func(claim *v1alpha1.NodeClaim)
	// MaxConcurrentReconciles is the number of claims handled at once.
	MaxConcurrentReconciles int
	// Clock tells the time of the liveness limits, GangWait, the nominating
	// bounds and the termination grace period; the real clock when nil.
	// Tests step a fake one.
	Clock clock.WithTicker
}

// Controller reconciles NodeClaims.
type Controller struct {
	client      client.Client
	kube        kubernetes.Interface
	cloud       cloud.CloudProvider
	recorder    events.EventRecorder
	unavailable *state.Unavailable
	opts        Options
	clock       clock.WithTicker

	// opening serializes the opening of nodes, so that one decision's
	// nodes are opened once, by one reconcile.
	opening sync.Mutex
	mu      sync.Mutex
	// usable records when each claim's node was first seen usable (Ready,
	// no startup taints), the start of its GangWait.
	usable map[string]time.Time
	// opened holds the claims whose nodes this process opened, since the
	// cache may not show them Initialized yet.
	opened map[string]time.Time
}

// New returns the lifecycle controller.
func New(c client.Client, kube kubernetes.Interface, cp cloud.CloudProvider, recorder events.EventRecorder, unavailable *state.Unavailable, opts Options) *Controller {
	if opts.LaunchTimeout <= 0 {
		opts.LaunchTimeout = 5 * time.Minute
	}
	if opts.RegistrationTimeout <= 0 {
		opts.RegistrationTimeout = 15 * time.Minute
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 20 * time.Second
	}
	if opts.Replan == nil {
		opts.Replan = func() {}
	}
	if opts.NominatedPods == nil {
		opts.NominatedPods = func(string) []types.NamespacedName { return nil }
	}
	if opts.MaxConcurrentReconciles <= 0 {
		opts.MaxConcurrentReconciles = 100
	}
	if opts.GangWait <= 0 {
		opts.GangWait = 10 * time.Second
	}
	if opts.KeepNominations <= 0 {
		opts.KeepNominations = 15 * time.Second
	}
	if opts.Waiting == nil {
		opts.Waiting = func(types.NamespacedName) bool { return false }
	}
	if opts.LateWait <= 0 {
		opts.LateWait = time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Controller{client: c, kube: kube, cloud: cp, recorder: recorder, unavailable: unavailable, opts: opts, clock: opts.Clock,
		usable: map[string]time.Time{}, opened: map[string]time.Time{}}
}

// RBAC of the lifecycle controller. pods/status patch is for the
// nominations (initialization.go, setNominated): the pods a decision planned
// onto a node get status.nominatedNodeName, as kube-scheduler sets it after
// preemption, so the scheduler keeps their room on the new node for them.
// It needs no nodes/status: kubelets (kwok on the simulated cloud) write
// node status, and the simulated cloud creates a Node with its status.
//
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodeclaims,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodeclaims/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=rightsize.dev,resources=simnodeclasses;ec2nodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Register adds the controller to the manager: it watches NodeClaims and
// the Nodes that register for them.
func (c *Controller) Register(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodeclaim.lifecycle").
		For(&v1alpha1.NodeClaim{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(nodeclaim.OfNode(c.client))).
		WithOptions(controller.Options{MaxConcurrentReconciles: c.opts.MaxConcurrentReconciles, RateLimiter: requeueLimiter()}).
		Complete(c)
}

// requeueLimiter paces the claims a reconcile asks to see again (a
// conflict on a claim another controller just wrote, a node not yet
// there): per claim 5 ms doubling to at most 10 s, and 100 a second for
// all. controller-runtime's default (doubling to 1,000 s, 10 a second for
// all) held the claims of one 44-node decision back for up to 90 s
// between their launch and their registration in bench-live's ramp, as
// the provisioner's records of nominated pods and the claims' own
// transitions conflicted.
func requeueLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, 10*time.Second),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(100), 1000)},
	)
}

// Reconcile moves one NodeClaim along its lifecycle, one concern a file:
// launch (launch.go), registration (registration.go), initialization
// (initialization.go), the liveness limits on the first two (liveness.go)
// and, once the claim is deleted, termination (termination.go).
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var claim v1alpha1.NodeClaim
	if err := c.client.Get(ctx, req.NamespacedName, &claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("nodeclaim", claim.Name, "nodepool", claim.NodePool())
	ctx = logr.NewContext(ctx, log)
	if claim.DeletionTimestamp != nil {
		return c.finalize(ctx, &claim)
	}
	if !controllerutil.ContainsFinalizer(&claim, v1alpha1.TerminationFinalizer) {
		orig := claim.DeepCopy()
		controllerutil.AddFinalizer(&claim, v1alpha1.TerminationFinalizer)
		if err := c.client.Patch(ctx, &claim, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	return c.advance(ctx, &claim)
}

// advance takes the claim's next step by the conditions it has.
func (c *Controller) advance(ctx context.Context, claim *v1alpha1.NodeClaim) (reconcile.Result, error) {
	switch {
	case !claim.IsLaunched():
		return c.launch(ctx, claim)
	case !claim.IsRegistered():
		return c.register(ctx, claim)
	case !claim.IsInitialized():
		return c.initialize(ctx, claim)
	}
	return reconcile.Result{}, nil
}
