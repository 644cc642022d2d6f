// Package podevents records on each NodeClaim when a pod last arrived on or
// left its node, in status.lastPodEventTime: a pod bound to the node, or a
// pod bound to it that finished, began terminating or was deleted. The
// disruption controller and `explain --consolidation` count a NodePool's
// consolidateAfter from it, so that the count survives operator restarts
// and leader changes (it used to live in the leader's memory).
//
// Writes are rate limited per node: stored times are at least Window
// apart. An event inside the window since the stored time is not dropped
// (as Karpenter's old rule dropped it) but recorded as the window's end
// when the window ends, so the stored time is never earlier than the last
// event seen: consolidation may wait up to a window longer on a busy node,
// never less than consolidateAfter. Times are rounded up to the second, the
// precision a metav1.Time keeps, for the same reason. Until its window
// ends, such an event is not visible to the planner: a consolidateAfter
// shorter than the window may let a node be chosen on the older stored
// time, but the disruption controller plans again after its validation
// delay (15 s by default, longer than the window) and the action no longer
// holds then.
//
// The controller runs on the leader only, as every controller that writes
// does here: standbys writing too would double the API writes for every pod
// event and race the leader's writes. What a leader change or a restart
// misses is partly recovered when the controller starts: every pod then
// arrives as a create event, and a pod still terminating or finished says
// itself when that began (its deletion timestamp less its grace period, its
// containers' finish times), which is recorded if it is later than the
// stored time. Only a pod deleted entirely while no leader ran leaves no
// trace.
package podevents

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
)

// Window is the least time between two writes of one NodeClaim's
// lastPodEventTime, so that a busy node does not cause a write storm.
const Window = 10 * time.Second

// Controller keeps NodeClaims' status.lastPodEventTime. Its queue is keyed
// by node name.
type Controller struct {
	client client.Client
	log    logr.Logger
	clock  clock.PassiveClock

	mu sync.Mutex
	// pending is the latest pod event seen on each node that is not
	// written yet.
	pending map[string]time.Time
}

// New returns the controller; c reads from the manager's cache and clk
// tells the time of pod events (the real clock when nil).
func New(c client.Client, log logr.Logger, clk clock.PassiveClock) *Controller {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Controller{client: c, log: log, clock: clk, pending: map[string]time.Time{}}
}

// RBAC of the pod events controller: it reads pods, nodes and NodeClaims,
// and patches NodeClaims' status.
//
// +kubebuilder:rbac:groups="",resources=pods;nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodeclaims/status,verbs=patch

// Register adds the controller (leader-only, as every controller built by
// the manager's builder) and its pod watch to the manager.
func (c *Controller) Register(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodeclaim.podevents").
		Watches(&corev1.Pod{}, handler.Funcs{
			CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) {
				pod := e.Object.(*corev1.Pod)
				c.seen(q, pod.Spec.NodeName, Created(pod))
			},
			UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
				pod := e.ObjectNew.(*corev1.Pod)
				if Changed(e.ObjectOld.(*corev1.Pod), pod) {
					c.seen(q, pod.Spec.NodeName, c.clock.Now())
				}
			},
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) {
				if pod, ok := e.Object.(*corev1.Pod); ok && Deleted(pod) {
					c.seen(q, pod.Spec.NodeName, c.clock.Now())
				}
			},
		}).
		Complete(c)
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// seen notes a pod event on a node and queues the node.
func (c *Controller) seen(q queue, node string, at time.Time) {
	if node == "" || at.IsZero() {
		return
	}
	at = ceilSecond(at)
	c.mu.Lock()
	if at.After(c.pending[node]) {
		c.pending[node] = at
	}
	c.mu.Unlock()
	q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: node}})
}

// forget drops a node's pending event once it is written or moot, unless a
// later one arrived meanwhile.
func (c *Controller) forget(node string, at time.Time) {
	c.mu.Lock()
	if c.pending[node].Equal(at) {
		delete(c.pending, node)
	}
	c.mu.Unlock()
}

// Reconcile writes the latest pod event seen on the node (the request's
// name) to its NodeClaim, or asks to be called again when the window since
// the last write ends.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := req.Name
	c.mu.Lock()
	latest := c.pending[node]
	c.mu.Unlock()
	if latest.IsZero() {
		return reconcile.Result{}, nil
	}
	claim, err := c.claimOf(ctx, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	if claim == nil || claim.DeletionTimestamp != nil {
		// Not our node, or going away: nothing to consolidate.
		c.forget(node, latest)
		return reconcile.Result{}, nil
	}
	var stored time.Time
	if t := claim.Status.LastPodEventTime; t != nil {
		stored = t.Time
	}
	write, wait := Next(stored, latest, c.clock.Now())
	if wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if write.IsZero() {
		c.forget(node, latest)
		return reconcile.Result{}, nil
	}
	orig := claim.DeepCopy()
	claim.Status.LastPodEventTime = &metav1.Time{Time: write}
	// A merge patch of this one field: no conflict with the lifecycle
	// controller's status writes, and no other writer of it.
	if err := c.client.Status().Patch(ctx, claim, client.MergeFrom(orig)); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(node, latest)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("recording the last pod event of node %s on NodeClaim %s: %w", node, claim.Name, err)
	}
	c.forget(node, latest)
	c.log.V(1).Info("recorded last pod event", "node", node, "nodeclaim", claim.Name, "time", write)
	return reconcile.Result{}, nil
}

// claimOf returns the NodeClaim of a node, matched by providerID, or nil.
func (c *Controller) claimOf(ctx context.Context, name string) (*v1alpha1.NodeClaim, error) {
	var node corev1.Node
	if err := c.client.Get(ctx, client.ObjectKey{Name: name}, &node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading node %s: %w", name, err)
	}
	if node.Spec.ProviderID == "" {
		return nil, nil
	}
	var claims v1alpha1.NodeClaimList
	if err := c.client.List(ctx, &claims, client.MatchingFields{nodeclaim.IndexClaimProviderID: node.Spec.ProviderID}); err != nil {
		return nil, fmt.Errorf("listing the NodeClaims of node %s: %w", name, err)
	}
	if len(claims.Items) != 1 {
		return nil, nil
	}
	return &claims.Items[0], nil
}

// Next decides what to do with the latest pod event seen on a node, given
// the time its NodeClaim stores: the time to write (zero: nothing to
// write), or how long to wait before deciding again.
//
// Stored times are at least a Window apart, so that a busy node is written
// at most once a window: an event a window or more after the stored time
// is written as it is; an event inside the window waits for the window to
// end and is written as its end, which is after the event, so that the
// stored time is never earlier than an event it records (consolidation may
// come later than consolidateAfter, never sooner). An event not after the
// stored time is dropped.
func Next(stored, latest, now time.Time) (write time.Time, wait time.Duration) {
	if !latest.After(stored) {
		return time.Time{}, 0
	}
	if stored.IsZero() || !latest.Before(stored.Add(Window)) {
		return latest, 0
	}
	end := stored.Add(Window)
	if d := end.Sub(now); d > 0 {
		// Never longer than a window, should the stored time be ahead of
		// this clock.
		return time.Time{}, min(d, Window)
	}
	return end, 0
}

// Changed reports whether an update of a pod is a pod event on its node:
// the pod was bound to it, or, bound, it finished or began terminating.
func Changed(old, pod *corev1.Pod) bool {
	if pod.Spec.NodeName == "" || daemon(pod) {
		return false
	}
	return old.Spec.NodeName == "" ||
		(!finished(old) && finished(pod)) ||
		(old.DeletionTimestamp == nil && pod.DeletionTimestamp != nil)
}

// Deleted reports whether a pod's deletion is a pod event on its node: it
// was bound, and left without finishing or terminating first (those were
// events of their own).
func Deleted(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && !daemon(pod) && !finished(pod) && pod.DeletionTimestamp == nil
}

// Created returns when a pod seen for the first time (created, or listed
// when the controller starts) last arrived on or left its node, as the pod
// records it: when its deletion was asked for if it is terminating, when
// it finished if it did, else when it was scheduled. Zero when it is not
// bound, is a DaemonSet's, or the time is not recorded.
func Created(pod *corev1.Pod) time.Time {
	if pod.Spec.NodeName == "" || daemon(pod) {
		return time.Time{}
	}
	if t := pod.DeletionTimestamp; t != nil {
		at := t.Time
		if g := pod.DeletionGracePeriodSeconds; g != nil {
			at = at.Add(-time.Duration(*g) * time.Second)
		}
		return at
	}
	if finished(pod) {
		var last time.Time
		for _, s := range pod.Status.ContainerStatuses {
			if term := s.State.Terminated; term != nil && term.FinishedAt.After(last) {
				last = term.FinishedAt.Time
			}
		}
		for _, cond := range pod.Status.Conditions {
			if cond.LastTransitionTime.After(last) {
				last = cond.LastTransitionTime.Time
			}
		}
		return last
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionTrue {
			return cond.LastTransitionTime.Time
		}
	}
	// Bound at creation (spec.nodeName set), without a condition yet.
	return pod.CreationTimestamp.Time
}

func finished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// daemon reports whether a DaemonSet owns the pod: its pods come and go
// with nodes and rollouts, on every node alike, and say nothing of whether
// a node is still needed.
func daemon(pod *corev1.Pod) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.Kind == "DaemonSet"
}

// ceilSecond rounds a time up to the whole second: a metav1.Time keeps
// seconds only, and a stored time must not be earlier than its event.
func ceilSecond(t time.Time) time.Time {
	if r := t.Truncate(time.Second); !r.Equal(t) {
		return r.Add(time.Second)
	}
	return t
}
