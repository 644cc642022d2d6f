package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
)

// launch creates the claim's instance.
func (c *Controller) launch(ctx context.Context, claim *v1alpha1.NodeClaim) (reconcile.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	if c.launchTimedOut(claim) {
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
		// The patch answered with the claim as the API server has it: a
		// reconcile of a stale copy finds the launch recorded already
		// (the cloud's Create is idempotent) and must not record it, nor
		// the steps after it, again.
		if claim.IsLaunched() {
			return c.advance(ctx, claim)
		}
	}
	orig = claim.DeepCopy()
	s := &claim.Status
	s.ProviderID, s.ImageID = view.Status.ProviderID, view.Status.ImageID
	s.Capacity, s.Allocatable = view.Status.Capacity, view.Status.Allocatable
	s.InstanceType, s.Zone, s.CapacityType, s.PricePerHour = view.Status.InstanceType, view.Status.Zone, view.Status.CapacityType, view.Status.PricePerHour
	claim.SetLaunched(v1alpha1.ReasonLaunched, "")
	if done, err := c.transition(ctx, claim, orig); !done {
		return reconcile.Result{Requeue: err == nil}, err
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
