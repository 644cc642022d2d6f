package lifecycle

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
)

// register matches the claim's Node and makes it schedulable.
func (c *Controller) register(ctx context.Context, claim *v1alpha1.NodeClaim) (reconcile.Result, error) {
	node, err := nodeclaim.NodeOf(ctx, c.client, claim)
	if err != nil {
		return reconcile.Result{}, err
	}
	if node == nil {
		left := c.registrationLeft(claim)
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
	if done, err := c.transition(ctx, claim, origClaim); !done {
		return reconcile.Result{Requeue: err == nil}, err
	}
	metrics.NodeRegistered(claim, node)
	logr.FromContextOrDiscard(ctx).Info("registered", "node", node.Name)
	return c.initialize(ctx, claim)
}

// transition writes a condition the claim flips (Launched, Registered,
// Initialized) from orig, the claim as this reconcile read it. The write
// is conditional on orig's resourceVersion: a reconcile that read a stale
// copy from the cache (the claim's own status update not seen yet, while
// its Node's updates already requeue it) gets a conflict instead of
// flipping the condition a second time, so each transition is counted and
// logged once. done is false on a conflict (requeue and read again) and on
// an error; a claim gone meanwhile is neither.
func (c *Controller) transition(ctx context.Context, claim, orig *v1alpha1.NodeClaim) (done bool, err error) {
	err = c.client.Status().Patch(ctx, claim, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("recording the claim's status: %w", err)
}
