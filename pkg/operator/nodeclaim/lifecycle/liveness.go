package lifecycle

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// launchTimedOut reports whether the claim is past its LaunchTimeout:
// created longer ago than that and still not launched.
func (c *Controller) launchTimedOut(claim *v1alpha1.NodeClaim) bool {
	return c.clock.Since(claim.CreationTimestamp.Time) > c.opts.LaunchTimeout
}

// registrationLeft returns how much of its RegistrationTimeout, counted
// from the launch, a launched claim's Node has left to register; none left
// when zero or less.
func (c *Controller) registrationLeft(claim *v1alpha1.NodeClaim) time.Duration {
	return c.opts.RegistrationTimeout - c.clock.Since(claim.TransitionTime(v1alpha1.ConditionLaunched))
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
