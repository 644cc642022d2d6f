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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/kubectl/pkg/drain"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
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
	// GangWait bounds how long a usable node waits for the other nodes of
	// its provisioning decision (NodeClaims with the same
	// v1alpha1.AnnotationBatch) before it opens without them (10 s when
	// zero). Opening them together is what lets the scheduler place pods as
	// the plan packed them: each node's opening makes the scheduler retry
	// every pending pod, and a pod whose nominated node is still closed at
	// that moment loses its nomination.
	GangWait time.Duration
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
}

// Controller reconciles NodeClaims.
type Controller struct {
	client      client.Client
	kube        kubernetes.Interface
	cloud       cloud.CloudProvider
	recorder    events.EventRecorder
	unavailable *state.Unavailable
	opts        Options

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
		opts.MaxConcurrentReconciles = 10
	}
	if opts.GangWait <= 0 {
		opts.GangWait = 10 * time.Second
	}
	if opts.KeepNominations <= 0 {
		opts.KeepNominations = 15 * time.Second
	}
	return &Controller{client: c, kube: kube, cloud: cp, recorder: recorder, unavailable: unavailable, opts: opts,
		usable: map[string]time.Time{}, opened: map[string]time.Time{}}
}

// RBAC of the lifecycle controller.
//
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodeclaims,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodeclaims/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=rightsize.dev,resources=simnodeclasses;ec2nodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=patch
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
		WithOptions(controller.Options{MaxConcurrentReconciles: c.opts.MaxConcurrentReconciles}).
		Complete(c)
}

// Reconcile moves one NodeClaim along its lifecycle.
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
	if !claim.IsLaunched() {
		return c.launch(ctx, &claim)
	}
	if !claim.IsRegistered() {
		return c.register(ctx, &claim)
	}
	if !claim.IsInitialized() {
		return c.initialize(ctx, &claim)
	}
	return reconcile.Result{}, nil
}

// launch creates the claim's instance.
func (c *Controller) launch(ctx context.Context, claim *v1alpha1.NodeClaim) (reconcile.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	if age := time.Since(claim.CreationTimestamp.Time); age > c.opts.LaunchTimeout {
		return reconcile.Result{}, c.remove(ctx, claim, v1alpha1.DeletionReasonLaunchTimeout,
			fmt.Sprintf("not launched within %s; deleting it so its pods are planned again", c.opts.LaunchTimeout))
	}
	view, err := c.cloud.Create(ctx, claim)
	if err != nil {
		var ice *cloud.InsufficientCapacityError
		var notReady *cloud.NodeClassNotReadyError
		switch {
		case errors.As(err, &ice):
			for _, o := range ice.Offerings {
				c.unavailable.MarkOffering(o)
			}
			c.recorder.Eventf(claim, nil, corev1.EventTypeWarning, "InsufficientCapacity", "Launch", "%v; planning its pods again without those offerings", err)
			log.Info("insufficient capacity; replanning", "offerings", ice.Offerings)
			return reconcile.Result{}, c.remove(ctx, claim, v1alpha1.DeletionReasonInsufficientCapacity, err.Error())
		case errors.As(err, &notReady):
			c.setLaunchFailed(ctx, claim, v1alpha1.ReasonNodeClassNotReady, notReady.Error())
			return reconcile.Result{RequeueAfter: 10 * time.Second}, nil
		}
		c.setLaunchFailed(ctx, claim, v1alpha1.ReasonLaunchFailed, err.Error())
		return reconcile.Result{}, fmt.Errorf("launching: %w", err)
	}
	if c.opts.AfterLaunch != nil {
		c.opts.AfterLaunch(claim)
	}
	// Labels the instance has (instance type, zone, ...) go on the claim.
	orig := claim.DeepCopy()
	if claim.Labels == nil {
		claim.Labels = map[string]string{}
	}
	changed := false
	for k, v := range view.Labels {
		if _, ok := claim.Labels[k]; !ok && !strings.HasPrefix(k, "kubernetes.io/hostname") {
			claim.Labels[k] = v
			changed = true
		}
	}
	// So does the hash of the node class it was launched with, which drift
	// is judged by.
	if hash := view.Annotations[v1alpha1.AnnotationNodeClassHash]; hash != "" && claim.Annotations[v1alpha1.AnnotationNodeClassHash] != hash {
		claim.Annotations = cloud.CopyNodeClassHash(claim.Annotations, view.Annotations)
		changed = true
	}
	if changed {
		if err := c.client.Patch(ctx, claim, client.MergeFrom(orig)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	orig = claim.DeepCopy()
	s := &claim.Status
	s.ProviderID, s.ImageID = view.Status.ProviderID, view.Status.ImageID
	s.Capacity, s.Allocatable = view.Status.Capacity, view.Status.Allocatable
	s.InstanceType, s.Zone, s.CapacityType, s.PricePerHour = view.Status.InstanceType, view.Status.Zone, view.Status.CapacityType, view.Status.PricePerHour
	claim.SetLaunched(v1alpha1.ReasonLaunched, "")
	if err := c.client.Status().Patch(ctx, claim, client.MergeFrom(orig)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	metrics.NodeClaimsLaunched.WithLabelValues(claim.NodePool()).Inc()
	log.Info("launched", "providerID", s.ProviderID, "instanceType", s.InstanceType, "zone", s.Zone, "capacityType", s.CapacityType, "pricePerHour", s.PricePerHour)
	c.recorder.Eventf(claim, nil, corev1.EventTypeNormal, "Launched", "Launch", "launched %s: %s %s %s $%s/h", s.ProviderID, s.InstanceType, s.CapacityType, s.Zone, s.PricePerHour)
	return c.register(ctx, claim)
}

// setLaunchFailed records a failed launch on the Launched condition.
func (c *Controller) setLaunchFailed(ctx context.Context, claim *v1alpha1.NodeClaim, reason, message string) {
	orig := claim.DeepCopy()
	if claim.SetLaunchFailed(reason, message) {
		_ = c.client.Status().Patch(ctx, claim, client.MergeFrom(orig))
		c.recorder.Eventf(claim, nil, corev1.EventTypeWarning, reason, "Launch", "%s", message)
	}
}

// register matches the claim's Node and makes it schedulable.
func (c *Controller) register(ctx context.Context, claim *v1alpha1.NodeClaim) (reconcile.Result, error) {
	node, err := nodeclaim.NodeOf(ctx, c.client, claim)
	if err != nil {
		return reconcile.Result{}, err
	}
	if node == nil {
		launched := claim.TransitionTime(v1alpha1.ConditionLaunched)
		left := c.opts.RegistrationTimeout - time.Since(launched)
		if left <= 0 {
			return reconcile.Result{}, c.remove(ctx, claim, v1alpha1.DeletionReasonRegistrationTimeout,
				fmt.Sprintf("its node did not register within %s; deleting it so its pods are planned again", c.opts.RegistrationTimeout))
		}
		return reconcile.Result{RequeueAfter: left}, nil
	}
	orig := node.DeepCopy()
	claim.ApplyToNode(node, true)
	if err := c.client.Patch(ctx, node, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{Requeue: true}, nil
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	origClaim := claim.DeepCopy()
	claim.SetRegistered(node.Name)
	if err := c.client.Status().Patch(ctx, claim, client.MergeFrom(origClaim)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	metrics.NodeClaimsRegistered.WithLabelValues(claim.NodePool()).Inc()
	logr.FromContextOrDiscard(ctx).Info("registered", "node", node.Name)
	return c.initialize(ctx, claim)
}

// member is a claim whose node is usable but not open yet.
type member struct {
	claim *v1alpha1.NodeClaim
	node  *corev1.Node
}

// initialize opens the claim's node once it is usable (Ready, startup and
// not-ready taints gone): registration leaves the unregistered taint in
// place so that no pod lands on the node before then. The nodes of one
// provisioning decision open together, after the other nodes of the
// decision are usable too or GangWait has passed.
func (c *Controller) initialize(ctx context.Context, claim *v1alpha1.NodeClaim) (reconcile.Result, error) {
	var node corev1.Node
	if err := c.client.Get(ctx, client.ObjectKey{Name: claim.Status.NodeName}, &node); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil // the garbage collector deals with vanished nodes
		}
		return reconcile.Result{}, err
	}
	if !claim.Usable(&node) {
		return reconcile.Result{}, nil // the Node's update brings us back
	}
	now := time.Now()
	c.mu.Lock()
	since, ok := c.usable[claim.Name]
	if !ok {
		since = now
		c.usable[claim.Name] = now
	}
	c.mu.Unlock()
	members := []member{{claim: claim, node: &node}}
	if batch := claim.Annotations[v1alpha1.AnnotationBatch]; batch != "" {
		var waiting int
		var err error
		if members, waiting, err = c.gang(ctx, claim, &node, batch); err != nil {
			return reconcile.Result{}, err
		}
		if left := c.opts.GangWait - now.Sub(since); waiting > 0 && left > 0 {
			// The last of them to become usable opens them all.
			logr.FromContextOrDiscard(ctx).V(1).Info("node usable; waiting for the other nodes of its decision", "node", node.Name, "waiting", waiting)
			return reconcile.Result{RequeueAfter: left}, nil
		}
	}
	return reconcile.Result{}, c.open(ctx, members)
}

// gang returns the usable nodes of a provisioning decision that are not
// open yet, the claim's own first, and how many of the decision's claims
// (those not in the cache yet included) are still short of usable.
func (c *Controller) gang(ctx context.Context, claim *v1alpha1.NodeClaim, node *corev1.Node, batch string) ([]member, int, error) {
	var list v1alpha1.NodeClaimList
	if err := c.client.List(ctx, &list); err != nil {
		return nil, 0, err
	}
	members := []member{{claim: claim, node: node}}
	seen, waiting := 0, 0
	for i := range list.Items {
		s := &list.Items[i]
		if s.Annotations[v1alpha1.AnnotationBatch] != batch {
			continue
		}
		seen++
		if s.Name == claim.Name || s.DeletionTimestamp != nil || s.IsInitialized() || c.isOpened(s.Name) {
			continue
		}
		var n corev1.Node
		if s.Status.NodeName == "" || c.client.Get(ctx, client.ObjectKey{Name: s.Status.NodeName}, &n) != nil || !s.Usable(&n) {
			waiting++
			continue
		}
		members = append(members, member{claim: s, node: &n})
	}
	if size, err := strconv.Atoi(claim.Annotations[v1alpha1.AnnotationBatchSize]); err == nil && seen < size {
		waiting += size - seen
	}
	return members, waiting, nil
}

func (c *Controller) isOpened(claim string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.opened[claim]
	return ok
}

// open makes the members' nodes schedulable as the plan intended: it sets
// status.nominatedNodeName on the pods planned for each node, waits until
// the nominations are visible (the scheduler then keeps room on each node
// for its pods and tries that node first for them), removes the
// unregistered taint of all the nodes at once and marks the claims
// Initialized. Afterwards it puts back, for a while, nominations the
// scheduler dropped from pods still waiting.
func (c *Controller) open(ctx context.Context, members []member) error {
	c.opening.Lock()
	defer c.opening.Unlock()
	members = slices.DeleteFunc(members, func(m member) bool { return c.isOpened(m.claim.Name) })
	if len(members) == 0 {
		return nil
	}
	log := logr.FromContextOrDiscard(ctx)
	start := time.Now()
	planned := c.nominate(ctx, members)
	nominated := time.Since(start)

	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i := range members {
		wg.Go(func() { errs[i] = c.untaint(ctx, members[i].node) })
	}
	wg.Wait()
	for i := range members {
		if errs[i] != nil {
			continue
		}
		wg.Go(func() {
			claim := members[i].claim
			orig := claim.DeepCopy()
			claim.SetInitialized()
			errs[i] = client.IgnoreNotFound(c.client.Status().Patch(ctx, claim, client.MergeFrom(orig)))
		})
	}
	wg.Wait()
	now := time.Now()
	c.mu.Lock()
	for i, m := range members {
		if errs[i] == nil {
			c.opened[m.claim.Name] = now
		}
	}
	for name, at := range c.opened {
		if now.Sub(at) > time.Hour {
			delete(c.opened, name)
			delete(c.usable, name)
		}
	}
	c.mu.Unlock()
	for i, m := range members {
		if errs[i] == nil {
			log.Info("initialized", "node", m.node.Name, "nodeclaim", m.claim.Name, "openedWith", len(members)-1,
				"nominatedPods", len(planned), "nominating", nominated.Round(time.Millisecond).String())
		}
	}
	if len(planned) > 0 {
		go c.keep(context.WithoutCancel(ctx), planned)
	}
	return errors.Join(errs...)
}

// untaint removes the unregistered taint from a node. A JSON patch that
// tests the taints it replaces leaves the node's other taints to whoever
// changes them concurrently, and does not conflict with status updates.
func (c *Controller) untaint(ctx context.Context, node *corev1.Node) error {
	taints := node.Spec.Taints
	for attempt := 0; ; attempt++ {
		if !slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.Key == cloud.UnregisteredTaintKey }) {
			return nil
		}
		rest := slices.DeleteFunc(slices.Clone(taints), func(t corev1.Taint) bool { return t.Key == cloud.UnregisteredTaintKey })
		if rest == nil {
			rest = []corev1.Taint{}
		}
		patch, err := json.Marshal([]map[string]any{
			{"op": "test", "path": "/spec/taints", "value": taints},
			{"op": "replace", "path": "/spec/taints", "value": rest},
		})
		if err != nil {
			return err
		}
		_, err = c.kube.CoreV1().Nodes().Patch(ctx, node.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
		if err == nil || apierrors.IsNotFound(err) || attempt == 3 {
			return client.IgnoreNotFound(err)
		}
		fresh, gerr := c.kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if gerr != nil {
			return client.IgnoreNotFound(gerr)
		}
		taints = fresh.Spec.Taints
	}
}

// plannedPod is a pod planned onto a node being opened.
type plannedPod struct {
	key  types.NamespacedName
	node string
	// patched is when the nomination was last set; kept counts how often
	// keep set it again after the node opened.
	patched time.Time
	kept    int
}

// Bounds of the nominating before and after a node opens.
const (
	// nominateFor bounds the wait for the nominations to show before
	// the nodes open anyway.
	nominateFor = 3 * time.Second
	// renominateAfter is how long a nomination may take to show in the
	// cache before it is taken as dropped by the scheduler and set again.
	renominateAfter = 300 * time.Millisecond
	// maxKept bounds how often keep sets one pod's nomination again.
	maxKept = 3
)

// nominate points the pods planned for the members' nodes at them and
// waits until the cache (which the scheduler's watch keeps pace with)
// shows every nomination. The scheduler drops the nomination of a pod it
// retries meanwhile, e.g. in the wave of retries that the nodes' arrival
// started; such nominations are set again, for nominateFor at most.
func (c *Controller) nominate(ctx context.Context, members []member) []*plannedPod {
	var pods []*plannedPod
	for _, m := range members {
		for _, key := range c.opts.NominatedPods(m.claim.Name) {
			pods = append(pods, &plannedPod{key: key, node: m.node.Name})
		}
	}
	if len(pods) == 0 {
		return nil
	}
	deadline := time.Now().Add(nominateFor)
	for {
		missing, _ := c.unnominated(ctx, pods)
		if len(missing) == 0 || time.Now().After(deadline) {
			return pods
		}
		missing = slices.DeleteFunc(missing, func(p *plannedPod) bool { return time.Since(p.patched) < renominateAfter })
		c.setNominated(ctx, missing)
		time.Sleep(20 * time.Millisecond)
	}
}

// unnominated returns the planned pods, still pending, whose nominated node
// the cache shows empty or different from their node, and counts the
// planned pods still pending.
func (c *Controller) unnominated(ctx context.Context, pods []*plannedPod) (missing []*plannedPod, pending int) {
	for _, p := range pods {
		var pod corev1.Pod
		if err := c.client.Get(ctx, p.key, &pod); err != nil || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
			continue
		}
		pending++
		if pod.Status.NominatedNodeName != p.node {
			missing = append(missing, p)
		}
	}
	return missing, pending
}

// setNominated patches status.nominatedNodeName of pods, 16 at a time.
func (c *Controller) setNominated(ctx context.Context, pods []*plannedPod) {
	if len(pods) == 0 {
		return
	}
	work := make(chan *plannedPod)
	var wg sync.WaitGroup
	for range min(16, len(pods)) {
		wg.Go(func() {
			for p := range work {
				patch := []byte(fmt.Sprintf(`{"status":{"nominatedNodeName":%q}}`, p.node))
				_, err := c.kube.CoreV1().Pods(p.key.Namespace).Patch(ctx, p.key.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
				if err != nil && !apierrors.IsNotFound(err) {
					logr.FromContextOrDiscard(ctx).V(1).Info("could not nominate a pod", "pod", p.key.String(), "error", err.Error())
				}
			}
		})
	}
	for _, p := range pods {
		p.patched = time.Now()
		work <- p
	}
	close(work)
	wg.Wait()
}

// keep puts back, for KeepNominations or until the pods are bound, the
// nominations the scheduler dropped. The scheduler clears a pod's
// nominated node whenever a try fails everywhere, which can happen while
// the nodes of one decision open one after the other; a pod without its
// nomination is placed by the scheduler's scoring and may take room the
// plan kept for another.
func (c *Controller) keep(ctx context.Context, pods []*plannedPod) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.KeepNominations)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	restored := 0
	defer func() {
		if restored > 0 {
			logr.FromContextOrDiscard(ctx).Info("put back nominations the scheduler dropped", "pods", restored)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		missing, pending := c.unnominated(ctx, pods)
		if pending == 0 {
			return
		}
		// A pod the scheduler nominated elsewhere is being bound there or
		// preempting; only emptied nominations are put back.
		var cleared []*plannedPod
		for _, p := range missing {
			var pod corev1.Pod
			if c.client.Get(ctx, p.key, &pod) == nil && pod.Status.NominatedNodeName == "" && p.kept < maxKept &&
				time.Since(p.patched) > renominateAfter {
				p.kept++
				cleared = append(cleared, p)
			}
		}
		restored += len(cleared)
		c.setNominated(ctx, cleared)
	}
}

// remove deletes a claim for a reason the operator found.
func (c *Controller) remove(ctx context.Context, claim *v1alpha1.NodeClaim, reason v1alpha1.DeletionReason, message string) error {
	orig := claim.DeepCopy()
	claim.SetDeletionReason(reason)
	if err := c.client.Patch(ctx, claim, client.MergeFrom(orig)); err != nil {
		return client.IgnoreNotFound(err)
	}
	if reason != v1alpha1.DeletionReasonInsufficientCapacity {
		c.recorder.Eventf(claim, nil, corev1.EventTypeWarning, "Deleting", "Delete", "%s", message)
	}
	logr.FromContextOrDiscard(ctx).Info("deleting NodeClaim", "reason", reason, "message", message)
	if err := c.client.Delete(ctx, claim); err != nil {
		return client.IgnoreNotFound(err)
	}
	c.opts.Replan()
	return nil
}

// finalize drains the claim's node, terminates the instance, deletes the
// Node and lets the claim go.
func (c *Controller) finalize(ctx context.Context, claim *v1alpha1.NodeClaim) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(claim, v1alpha1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	log := logr.FromContextOrDiscard(ctx)
	node, err := nodeclaim.NodeOf(ctx, c.client, claim)
	if err != nil {
		return reconcile.Result{}, err
	}
	if node != nil && node.DeletionTimestamp == nil {
		if err := c.drain(ctx, claim, node); err != nil {
			log.Info("drain not finished; retrying", "node", node.Name, "error", err.Error())
			c.recorder.Eventf(claim, nil, corev1.EventTypeWarning, "DrainBlocked", "Drain", "draining node %s: %v", node.Name, oneLine(err.Error()))
			return reconcile.Result{RequeueAfter: 5 * time.Second}, nil
		}
	}
	if claim.Status.ProviderID != "" || !claim.IsLaunched() {
		// An unlaunched claim may still have an instance if a launch
		// raced the deletion; the provider finds it by the claim's name.
		if err := c.cloud.Delete(ctx, claim); err != nil && !cloud.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("terminating the instance: %w", err)
		}
	}
	if node != nil {
		if err := c.client.Delete(ctx, node); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("deleting node %s: %w", node.Name, err)
		}
	}
	orig := claim.DeepCopy()
	controllerutil.RemoveFinalizer(claim, v1alpha1.TerminationFinalizer)
	if err := c.client.Patch(ctx, claim, client.MergeFrom(orig)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	reason := claim.DeletionReason()
	metrics.NodeClaimsDeleted.WithLabelValues(claim.NodePool(), string(reason)).Inc()
	log.Info("terminated", "reason", reason, "providerID", claim.Status.ProviderID)
	return reconcile.Result{}, nil
}

// drain cordons the node and evicts its pods, respecting
// PodDisruptionBudgets, until the claim's terminationGracePeriod (if any)
// has passed since its deletion; after that pods are deleted. The pods of a
// node being repaired are deleted at once, without a grace period.
func (c *Controller) drain(ctx context.Context, claim *v1alpha1.NodeClaim, node *corev1.Node) error {
	h := &drain.Helper{
		Ctx:                 ctx,
		Client:              c.kube,
		Force:               true,
		GracePeriodSeconds:  -1,
		IgnoreAllDaemonSets: true,
		DeleteEmptyDirData:  true,
		Timeout:             c.opts.DrainTimeout,
		Out:                 io.Discard,
		ErrOut:              io.Discard,
	}
	switch {
	case !claim.DeletionReason().Graceful():
		// A broken node runs no graceful shutdown: its pods are
		// deleted at once, so that their controllers replace them.
		h.DisableEviction, h.GracePeriodSeconds = true, 0
	case claim.Spec.TerminationGracePeriod != nil && time.Since(claim.DeletionTimestamp.Time) > claim.Spec.TerminationGracePeriod.Duration:
		h.DisableEviction = true
	}
	if err := drain.RunCordonOrUncordon(h, node, true); err != nil {
		return fmt.Errorf("cordoning: %w", err)
	}
	return drain.RunNodeDrain(h, node.Name)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
