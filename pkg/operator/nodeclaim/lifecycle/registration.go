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
	if err := c.client.Status().Patch(ctx, claim, client.MergeFrom(origClaim)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	metrics.NodeClaimsRegistered.WithLabelValues(claim.NodePool()).Inc()
	logr.FromContextOrDiscard(ctx).Info("registered", "node", node.Name)
	return c.initialize(ctx, claim)
}
