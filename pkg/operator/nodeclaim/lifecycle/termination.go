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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/kubectl/pkg/drain"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
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
//
// Pods with an active karpenter.sh/do-not-disrupt (or
// rightsize.dev/do-not-disrupt) annotation are not evicted, as in
// Karpenter v1's terminator: they hold the drain, whatever the deletion
// reason (expiry included), until they end, their annotation lapses, or
// the grace period runs out. Each is deleted once its own
// terminationGracePeriodSeconds would carry it past the node's deadline
// (deletion + terminationGracePeriod), with what is left of that
// deadline as its grace, so that it stops by then. A claim with no
// terminationGracePeriod waits on them indefinitely.
func (c *Controller) drain(ctx context.Context, claim *v1alpha1.NodeClaim, node *corev1.Node) error {
	h := c.drainer(ctx, claim)
	if err := drain.RunCordonOrUncordon(h, node, true); err != nil {
		return fmt.Errorf("cordoning: %w", err)
	}
	var held []string
	if !h.DisableEviction {
		var err error
		if held, err = c.holdDoNotDisrupt(ctx, claim, node, h); err != nil {
			return err
		}
	}
	if err := drain.RunNodeDrain(h, node.Name); err != nil {
		return err
	}
	if len(held) > 0 {
		until := "they end (the NodeClaim has no terminationGracePeriod)"
		if d := nodeDeadline(claim); d != nil {
			until = "at most " + d.UTC().Format(time.RFC3339)
		}
		return fmt.Errorf("%d pod(s) with karpenter.sh/do-not-disrupt hold the drain until %s: %s", len(held), until, strings.Join(held, ", "))
	}
	return nil
}

// holdDoNotDisrupt keeps the drain h from evicting the node's
// do-not-disrupt pods, deletes those whose deadline came (see
// doNotDisruptDue), and returns the do-not-disrupt pods still on the node.
func (c *Controller) holdDoNotDisrupt(ctx context.Context, claim *v1alpha1.NodeClaim, node *corev1.Node, h *drain.Helper) ([]string, error) {
	pods, err := c.kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node.Name).String()})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of node %s: %w", node.Name, err)
	}
	now := c.clock.Now()
	deadline := nodeDeadline(claim)
	var held []string
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !holdsDrain(pod, now) {
			continue
		}
		held = append(held, pod.Namespace+"/"+pod.Name)
		grace, due := doNotDisruptDue(pod, deadline, now)
		if !due || pod.DeletionTimestamp != nil {
			continue
		}
		err := c.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("deleting do-not-disrupt pod %s/%s at the node's termination grace period: %w", pod.Namespace, pod.Name, err)
		}
		c.recorder.Eventf(pod, claim, corev1.EventTypeNormal, "Deleting", "Drain",
			"deleting do-not-disrupt pod with a grace period of %ds: NodeClaim %s's terminationGracePeriod ends at %s", grace, claim.Name, deadline.UTC().Format(time.RFC3339))
	}
	h.AdditionalFilters = append(h.AdditionalFilters, func(pod corev1.Pod) drain.PodDeleteStatus {
		if holdsDrain(&pod, now) {
			return drain.MakePodDeleteStatusSkip()
		}
		return drain.MakePodDeleteStatusOkay()
	})
	return held, nil
}

// holdsDrain reports whether a pod is one the drain does not evict and
// waits for: not terminal, not one the drain leaves alone anyway
// (DaemonSet and static pods), and do-not-disrupt at now (a duration value
// protects the pod that long after it started, see
// snapshot.PodDoNotDisrupt).
func holdsDrain(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return false
	}
	if owner := metav1.GetControllerOf(pod); owner != nil && owner.Kind == "DaemonSet" {
		return false
	}
	return snapshot.PodDoNotDisrupt(pod, now)
}

// nodeDeadline is when a deleted claim's node must be gone: its deletion
// plus its terminationGracePeriod; nil without a grace period.
func nodeDeadline(claim *v1alpha1.NodeClaim) *time.Time {
	if claim.Spec.TerminationGracePeriod == nil || claim.DeletionTimestamp == nil {
		return nil
	}
	t := claim.DeletionTimestamp.Add(claim.Spec.TerminationGracePeriod.Duration)
	return &t
}

// doNotDisruptDue reports whether a do-not-disrupt pod is to be deleted at
// now so that it stops by the node's deadline, and with which grace
// period: once its own terminationGracePeriodSeconds would carry it past
// the deadline, with what is left of the deadline, at least 1 s (a grace
// of 0 would remove the pod from the API before its containers stop), as
// Karpenter's terminator deletes pods. A pod without a grace period of
// its own waits for the deadline.
func doNotDisruptDue(pod *corev1.Pod, deadline *time.Time, now time.Time) (int64, bool) {
	if deadline == nil {
		return 0, false
	}
	var own time.Duration
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		own = time.Duration(*g) * time.Second
	}
	if !now.After(deadline.Add(-own)) {
		return 0, false
	}
	return max(int64(deadline.Sub(now)/time.Second), 1), true
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
