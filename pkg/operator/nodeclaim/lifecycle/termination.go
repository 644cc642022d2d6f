package lifecycle

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/kubectl/pkg/drain"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
)

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
	metrics.ClaimTerminated(claim, node)
	log.Info("terminated", "reason", reason, "providerID", claim.Status.ProviderID)
	return reconcile.Result{}, nil
}

// drain cordons the node and evicts its pods, respecting
// PodDisruptionBudgets, until the claim's terminationGracePeriod (if any)
// has passed since its deletion; after that pods are deleted. The pods of a
// node being repaired are deleted at once, without a grace period.
func (c *Controller) drain(ctx context.Context, claim *v1alpha1.NodeClaim, node *corev1.Node) error {
	h := c.drainer(ctx, claim)
	if err := drain.RunCordonOrUncordon(h, node, true); err != nil {
		return fmt.Errorf("cordoning: %w", err)
	}
	return drain.RunNodeDrain(h, node.Name)
}

// drainer returns the drain settings for a deleted claim's node, which
// depend on its deletion reason and on how long ago it was deleted.
func (c *Controller) drainer(ctx context.Context, claim *v1alpha1.NodeClaim) *drain.Helper {
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
	case claim.Spec.TerminationGracePeriod != nil && c.clock.Since(claim.DeletionTimestamp.Time) > claim.Spec.TerminationGracePeriod.Duration:
		h.DisableEviction = true
	}
	return h
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
