// Package repair replaces nodes that stay unhealthy, as Karpenter's node
// repair does: a Node whose condition has matched a repair policy (Ready
// False or Unknown, or a condition of the EKS node monitoring agent such as
// KernelReady False) for the policy's toleration has its NodeClaim deleted
// for reason "repair". The lifecycle controller then terminates it without
// waiting on evictions (its pods are deleted at once: a broken node runs no
// graceful shutdown), and the provisioner, which plans the pods of leaving
// nodes ahead, has already launched their new node.
//
// Repair never bypasses the operator's own judgement of a wider failure: a
// NodePool with more than MaxUnhealthyShare of its nodes unhealthy (a zone
// outage, a broken image) is left alone, with an event saying why,
// because replacing every node would make such an outage worse.
package repair

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
)

// Policy names a node condition status that, held for Toleration, makes
// the node one to replace.
type Policy struct {
	Condition  corev1.NodeConditionType
	Status     corev1.ConditionStatus
	Toleration time.Duration
}

// DefaultPolicies are Karpenter's for AWS: the kubelet's Ready, and the
// conditions the EKS node monitoring agent sets (absent elsewhere, so
// harmless).
var DefaultPolicies = []Policy{
	{corev1.NodeReady, corev1.ConditionFalse, 30 * time.Minute},
	{corev1.NodeReady, corev1.ConditionUnknown, 30 * time.Minute},
	{"AcceleratedHardwareReady", corev1.ConditionFalse, 10 * time.Minute},
	{"StorageReady", corev1.ConditionFalse, 30 * time.Minute},
	{"NetworkingReady", corev1.ConditionFalse, 30 * time.Minute},
	{"KernelReady", corev1.ConditionFalse, 30 * time.Minute},
	{"ContainerRuntimeReady", corev1.ConditionFalse, 30 * time.Minute},
}

// DefaultMaxUnhealthyShare is the share of a NodePool's nodes (rounded up,
// so a pool of up to five nodes may repair one) above which none of them
// is repaired (Karpenter's 20 %).
const DefaultMaxUnhealthyShare = 0.2

// Options tune node repair.
type Options struct {
	// Disabled turns repair off.
	Disabled bool
	// Policies are the conditions that count as unhealthy
	// (DefaultPolicies when nil).
	Policies []Policy
	// Toleration, when positive, replaces every policy's toleration.
	Toleration time.Duration
	// MaxUnhealthyShare (DefaultMaxUnhealthyShare when zero).
	MaxUnhealthyShare float64
	// Clock tells the time tolerations are counted to; the real clock when
	// nil.
	Clock clock.PassiveClock
}

// Broken is a policy a node breaks: which condition, since when, and when
// its toleration ends.
type Broken struct {
	Policy Policy
	Since  time.Time
	Due    time.Time
}

// Unhealthy returns the policy node breaks that comes due first, or nil
// when it breaks none.
func Unhealthy(node *corev1.Node, policies []Policy, toleration time.Duration) *Broken {
	var first *Broken
	for _, p := range policies {
		if toleration > 0 {
			p.Toleration = toleration
		}
		for _, c := range node.Status.Conditions {
			if c.Type != p.Condition || c.Status != p.Status {
				continue
			}
			b := &Broken{Policy: p, Since: c.LastTransitionTime.Time, Due: c.LastTransitionTime.Add(p.Toleration)}
			if first == nil || b.Due.Before(first.Due) {
				first = b
			}
		}
	}
	return first
}

// Controller deletes the NodeClaims of nodes that stay unhealthy.
type Controller struct {
	client   client.Client
	recorder events.EventRecorder
	opts     Options
	clock    clock.PassiveClock
}

// New returns the repair controller.
func New(c client.Client, recorder events.EventRecorder, opts Options) *Controller {
	if opts.Policies == nil {
		opts.Policies = DefaultPolicies
	}
	if opts.MaxUnhealthyShare <= 0 {
		opts.MaxUnhealthyShare = DefaultMaxUnhealthyShare
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Controller{client: c, recorder: recorder, opts: opts, clock: opts.Clock}
}

// RBAC of the repair controller.
//
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodeclaims,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Register adds the controller to the manager: NodeClaims, and the
// NodeClaims of Nodes whose conditions change.
func (c *Controller) Register(mgr ctrl.Manager) error {
	if c.opts.Disabled {
		return nil
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodeclaim.repair").
		For(&v1alpha1.NodeClaim{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(nodeclaim.OfNode(c.client))).
		Complete(c)
}

// Reconcile repairs one NodeClaim's node if it has been unhealthy for
// longer than its policy tolerates, or looks again when it will have been.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var claim v1alpha1.NodeClaim
	if err := c.client.Get(ctx, req.NamespacedName, &claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if claim.DeletionTimestamp != nil || !claim.IsInitialized() {
		return reconcile.Result{}, nil // not yet a node to repair, or already going
	}
	node, err := nodeclaim.NodeOf(ctx, c.client, &claim)
	if node == nil || err != nil {
		return reconcile.Result{}, err
	}
	broken := Unhealthy(node, c.opts.Policies, c.opts.Toleration)
	if broken == nil {
		return reconcile.Result{}, nil
	}
	now := c.clock.Now()
	if wait := broken.Due.Sub(now); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	pool := claim.NodePool()
	unhealthy, total, err := c.poolHealth(ctx, pool, now)
	if err != nil {
		return reconcile.Result{}, err
	}
	if allowed := int(math.Ceil(c.opts.MaxUnhealthyShare * float64(total))); unhealthy > allowed {
		c.recorder.Eventf(node, &claim, corev1.EventTypeWarning, "RepairBlocked", "Repair",
			"node %s has had %s=%s for %s, but %d of NodePool %s's %d nodes are unhealthy (more than %.0f%%): none is repaired, a wider failure is likely",
			node.Name, broken.Policy.Condition, broken.Policy.Status, now.Sub(broken.Since).Round(time.Second), unhealthy, pool, total, c.opts.MaxUnhealthyShare*100)
		return reconcile.Result{RequeueAfter: time.Minute}, nil
	}
	why := fmt.Sprintf("node %s has had %s=%s for %s (tolerated: %s): terminating it without draining and replacing it",
		node.Name, broken.Policy.Condition, broken.Policy.Status, now.Sub(broken.Since).Round(time.Second), broken.Policy.Toleration)
	orig := claim.DeepCopy()
	claim.SetDeletionReason(v1alpha1.DeletionReasonRepair)
	// Guarded by the resourceVersion: a reconcile on a cached claim that
	// another one already repaired gets a conflict, not a second repair.
	if err := c.client.Patch(ctx, &claim, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{Requeue: true}, nil
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if err := c.client.Delete(ctx, &claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	c.recorder.Eventf(node, &claim, corev1.EventTypeWarning, "Repairing", "Repair", "%s", why)
	c.recorder.Eventf(&claim, node, corev1.EventTypeWarning, "Repairing", "Repair", "%s", why)
	logr.FromContextOrDiscard(ctx).Info("repairing an unhealthy node", "node", node.Name, "condition", broken.Policy.Condition,
		"status", broken.Policy.Status, "since", broken.Since, "nodepool", pool)
	return reconcile.Result{}, nil
}

// poolHealth counts the nodes of a pool's initialized claims, and those
// unhealthy past their toleration.
func (c *Controller) poolHealth(ctx context.Context, pool string, now time.Time) (unhealthy, total int, err error) {
	var claims v1alpha1.NodeClaimList
	if err := c.client.List(ctx, &claims, client.MatchingLabels{v1alpha1.LabelNodePool: pool}); err != nil {
		return 0, 0, fmt.Errorf("listing the NodeClaims of %s: %w", pool, err)
	}
	for i := range claims.Items {
		claim := &claims.Items[i]
		if !claim.IsInitialized() {
			continue
		}
		node, err := nodeclaim.NodeOf(ctx, c.client, claim)
		if err != nil {
			return 0, 0, err
		}
		if node == nil {
			continue
		}
		total++
		if b := Unhealthy(node, c.opts.Policies, c.opts.Toleration); b != nil && !b.Due.After(now) {
			unhealthy++
		}
	}
	return unhealthy, total, nil
}
