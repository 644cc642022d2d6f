// Package drift keeps the Drifted condition of launched NodeClaims: it asks
// the cloud provider whether each claim's instance still matches its node
// class (cloud.CloudProvider.IsDrifted: the class's launch settings, and
// the images, subnets and security groups its selectors resolve to) and
// sets the condition True with the reason as its message, or removes it.
// Claims are checked when launched, when their node class or NodePool
// changes, and every Interval. The disruption controller replaces the
// nodes of drifted claims; this controller only reports.
package drift

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
)

// DefaultInterval is how often every launched claim is checked again, as
// Karpenter does: dynamic drift (a new image published for an alias, a
// subnet untagged) shows in no Kubernetes object.
const DefaultInterval = 5 * time.Minute

// ReasonDrifted is the reason of a True Drifted condition.
const ReasonDrifted = "NodeClassDrifted"

// Options tune the drift controller.
type Options struct {
	// Interval is how often each launched claim is checked again
	// (DefaultInterval when zero).
	Interval time.Duration
}

// Controller sets the Drifted condition of NodeClaims.
type Controller struct {
	client   client.Client
	cloud    cloud.CloudProvider
	recorder events.EventRecorder
	opts     Options
}

// New returns the drift controller.
func New(c client.Client, cp cloud.CloudProvider, recorder events.EventRecorder, opts Options) *Controller {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	return &Controller{client: c, cloud: cp, recorder: recorder, opts: opts}
}

// RBAC of the drift controller.
//
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodeclaims;nodepools;simnodeclasses;ec2nodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodeclaims/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Register adds the controller to the manager. It watches NodeClaims (when
// launched, and when another writer dropped or changed the Drifted
// condition), the node classes and the NodePools (a spec change checks
// their claims at once).
func (c *Controller) Register(mgr ctrl.Manager) error {
	classes := predicate.GenerationChangedPredicate{}
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodeclaim.drift").
		For(&v1alpha1.NodeClaim{}, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				old, cl := e.ObjectOld.(*v1alpha1.NodeClaim), e.ObjectNew.(*v1alpha1.NodeClaim)
				return old.IsLaunched() != cl.IsLaunched() ||
					driftOf(old) != driftOf(cl) ||
					old.Annotations[v1alpha1.AnnotationNodeClassHash] != cl.Annotations[v1alpha1.AnnotationNodeClassHash]
			},
			DeleteFunc: func(event.DeleteEvent) bool { return false },
		})).
		Watches(&v1alpha1.EC2NodeClass{}, handler.EnqueueRequestsFromMapFunc(c.claimsOfClass("EC2NodeClass")), builder.WithPredicates(classes)).
		Watches(&v1alpha1.SimNodeClass{}, handler.EnqueueRequestsFromMapFunc(c.claimsOfClass("SimNodeClass")), builder.WithPredicates(classes)).
		Watches(&v1alpha1.NodePool{}, handler.EnqueueRequestsFromMapFunc(nodeclaim.OfPool(c.client)), builder.WithPredicates(classes)).
		Complete(c)
}

// driftOf summarises a claim's Drifted condition, to notice when another
// writer of the status lost it.
func driftOf(claim *v1alpha1.NodeClaim) string {
	if cond := meta.FindStatusCondition(claim.Status.Conditions, v1alpha1.ConditionDrifted); cond != nil {
		return string(cond.Status) + cond.Message
	}
	return ""
}

// claimsOfClass maps a node class of the kind to the claims launched with it.
func (c *Controller) claimsOfClass(kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var claims v1alpha1.NodeClaimList
		if err := c.client.List(ctx, &claims); err != nil {
			logr.FromContextOrDiscard(ctx).Error(err, "listing NodeClaims for a node class change", "kind", kind, "name", o.GetName())
			return nil
		}
		var out []reconcile.Request
		for i := range claims.Items {
			if ref := claims.Items[i].Spec.NodeClassRef; ref.Kind == kind && ref.Name == o.GetName() {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&claims.Items[i])})
			}
		}
		return out
	}
}

// Reconcile checks one NodeClaim for drift and records the answer in its
// Drifted condition.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var claim v1alpha1.NodeClaim
	if err := c.client.Get(ctx, req.NamespacedName, &claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if claim.DeletionTimestamp != nil || !claim.IsLaunched() {
		return reconcile.Result{}, nil
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("nodeclaim", claim.Name)
	why, err := c.cloud.IsDrifted(ctx, &claim)
	var notReady *cloud.NodeClassNotReadyError
	if errors.As(err, &notReady) {
		// Unknown rather than "not drifted": keep what the condition says.
		log.V(1).Info("drift unknown: the node class is not ready", "reason", notReady.Reason)
		return reconcile.Result{RequeueAfter: c.opts.Interval}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("checking NodeClaim %s for drift: %w", claim.Name, err)
	}
	orig := claim.DeepCopy()
	changed := false
	if why != "" {
		changed = claim.SetCondition(v1alpha1.ConditionDrifted, metav1.ConditionTrue, ReasonDrifted, why)
	} else {
		changed = meta.RemoveStatusCondition(&claim.Status.Conditions, v1alpha1.ConditionDrifted)
	}
	if !changed {
		return reconcile.Result{RequeueAfter: c.opts.Interval}, nil
	}
	if err := c.client.Status().Patch(ctx, &claim, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{Requeue: true}, nil // another writer was first: check the new version
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if why != "" {
		log.Info("drifted", "reason", why)
		c.recorder.Eventf(&claim, nil, corev1.EventTypeNormal, "Drifted", "CheckDrift", "%s", why)
	} else {
		log.Info("no longer drifted")
	}
	return reconcile.Result{RequeueAfter: c.opts.Interval}, nil
}
