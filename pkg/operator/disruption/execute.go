package disruption

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/kubectl/pkg/drain"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/disruption"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
)

// Rollback reasons, for the metric.
const (
	rollbackTaint       = "taint_failed"
	rollbackReplacement = "replacement_failed"
	rollbackDrain       = "drain_timeout"
)

// execute carries out a validated action: taint, launch and wait for the
// replacements, drain, delete the NodeClaims. A failure before the
// NodeClaims are deleted rolls the action back; it is recorded, not
// returned.
func (c *Controller) execute(ctx context.Context, v *disruption.View, cand *disruption.Candidate) error {
	a := &cand.Action
	log := c.log.WithValues("action", a.Kind, "reason", cand.Reason, "nodes", a.Nodes)
	start := c.clock.Now()
	var tainted []string
	for _, n := range a.Nodes {
		if err := c.taintNode(ctx, n); err != nil {
			c.rollback(ctx, v, cand, tainted, nil, rollbackTaint, fmt.Sprintf("tainting node %s failed: %v", n, err))
			return nil
		}
		tainted = append(tainted, n)
	}
	for _, n := range a.Nodes {
		node, claim, _ := v.Node(n)
		c.recorder.Eventf(node, claimOrNil(claim), corev1.EventTypeNormal, "Disrupting", "Taint",
			"%s (%s): %s", disruption.Describe(a), cand.Reason, a.Reason)
	}
	log.Info("disrupting: nodes tainted", "replacements", len(a.Replacements), "savingPerHour", a.Saving, "why", a.Reason)

	var launched []*v1alpha1.NodeClaim
	for i := range a.Replacements {
		nn := a.Replacements[i]
		nn.Reason = fmt.Sprintf("replaces %s (%s): %s", strings.Join(a.Nodes, ", "), cand.Reason, nn.Reason)
		var pods []string
		for _, m := range a.Moves {
			if m.To == "new-"+strconv.Itoa(i) {
				pods = append(pods, m.Pod)
			}
		}
		claim, err := c.source.Launch(ctx, v.Snapshot(), &nn, cand.Reason, pods)
		if err != nil {
			c.rollback(ctx, v, cand, tainted, launched, rollbackReplacement, fmt.Sprintf("creating the replacement NodeClaim failed: %v", err))
			return nil
		}
		launched = append(launched, claim)
		log.Info("replacement launching", "nodeclaim", claim.Name, "instanceType", nn.InstanceType, "capacityType", nn.CapacityType,
			"zone", nn.Zone, "pricePerHour", nn.Price)
	}
	if len(launched) > 0 {
		if why := c.waitInitialized(ctx, launched); why != "" {
			c.rollback(ctx, v, cand, tainted, launched, rollbackReplacement, why)
			return nil
		}
		log.Info("replacements initialized", "took", c.clock.Since(start).Round(time.Millisecond).String())
	}

	evicted := map[string]int64{}
	if cand.Reason != disruption.ReasonExpired {
		var err error
		if evicted, err = c.drain(ctx, v, a.Nodes); err != nil {
			// Pods already evicted have been recreated elsewhere; the
			// replacements stay and are consolidated like any node.
			c.rollback(ctx, v, cand, tainted, nil, rollbackDrain, fmt.Sprintf("draining did not finish within %s: %s", c.opts.DrainTimeout, oneLine(err.Error())))
			return nil
		}
		if err := c.drainLate(ctx, v, a.Nodes, evicted); err != nil {
			c.rollback(ctx, v, cand, tainted, nil, rollbackDrain, fmt.Sprintf("a pod bound after the drain could not be moved: %s", oneLine(err.Error())))
			return nil
		}
	}
	// An expired node is not drained here, where a drain that does not
	// finish in time is rolled back: expiry is forceful, so its NodeClaim
	// is deleted at once and the lifecycle's drain honours PDBs until the
	// claim's terminationGracePeriod.

	for _, n := range a.Nodes {
		node, claim, _ := v.Node(n)
		if err := c.deleteClaim(ctx, claim); err != nil {
			return fmt.Errorf("deleting NodeClaim %s of node %s: %w", claim.Name, n, err)
		}
		c.recorder.Eventf(claim, node, corev1.EventTypeNormal, "Disrupted", "Delete",
			"%s (%s) carried out: %s evicted, saving %s; the NodeClaim is deleted and its instance terminated", disruption.Describe(a), cand.Reason,
			disruption.Plural(int(evicted[n]), "pod", "pods"), disruption.Dollars(a.Saving))
		policy := ""
		if np := v.Snapshot().Pools[claim.NodePool()]; np != nil {
			policy = string(np.Spec.Disruption.ConsolidationPolicy)
		}
		metrics.NodeDisrupted(claim, node, policy, cand.Reason, evicted[n])
	}
	metrics.ActionCarriedOut(cand.Reason, len(a.Nodes), len(launched) > 0)
	pools := v.Pools(cand)
	for i, pool := range pools {
		metrics.DisruptionActions.WithLabelValues(a.Kind, pool, cand.Reason).Inc()
		if i == 0 {
			metrics.DisruptionSaving.WithLabelValues(pool).Add(a.Saving)
		}
	}
	total := int64(0)
	for _, k := range evicted {
		total += k
	}
	log.Info("disruption action carried out", "savingPerHour", a.Saving, "evicted", total, "replacements", len(launched),
		"took", c.clock.Since(start).Round(time.Millisecond).String(), "why", a.Reason)
	return nil
}

// taintNode puts the disruption taint on a node.
func (c *Controller) taintNode(ctx context.Context, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := c.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == TaintKey }) {
			return nil
		}
		t := disruption.Taint
		t.TimeAdded = &metav1.Time{Time: c.clock.Now()}
		node.Spec.Taints = append(node.Spec.Taints, t)
		_, err = c.kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

// untaint removes the disruption taint from a node.
func (c *Controller) untaint(ctx context.Context, name string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := c.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == TaintKey }) {
			return nil
		}
		node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == TaintKey })
		_, err = c.kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// waitInitialized waits until every replacement NodeClaim is Initialized;
// it returns why not when one is deleted (e.g. insufficient capacity) or
// the timeout passes.
func (c *Controller) waitInitialized(ctx context.Context, claims []*v1alpha1.NodeClaim) string {
	deadline := c.clock.Now().Add(c.opts.ReplacementTimeout)
	pending := slices.Clone(claims)
	for len(pending) > 0 {
		var still []*v1alpha1.NodeClaim
		for _, want := range pending {
			var claim v1alpha1.NodeClaim
			err := c.client.Get(ctx, client.ObjectKeyFromObject(want), &claim)
			switch {
			case apierrors.IsNotFound(err):
				if why := c.failure(ctx, want.Name); why != "" {
					return fmt.Sprintf("replacement NodeClaim %s failed before its node initialized: %s", want.Name, why)
				}
				if c.clock.Since(want.CreationTimestamp.Time) < 10*time.Second {
					still = append(still, want) // not in the cache yet
					continue
				}
				return fmt.Sprintf("replacement NodeClaim %s was deleted before its node initialized", want.Name)
			case err != nil:
				still = append(still, want)
			case claim.DeletionTimestamp != nil:
				why := c.failure(ctx, want.Name)
				if why == "" {
					why = strings.ReplaceAll(string(claim.DeletionReason()), "_", " ")
				}
				return fmt.Sprintf("replacement NodeClaim %s failed before its node initialized: %s", want.Name, why)
			case !claim.IsInitialized():
				still = append(still, want)
			}
		}
		pending = still
		if len(pending) == 0 {
			return ""
		}
		if c.clock.Now().After(deadline) {
			return fmt.Sprintf("replacement NodeClaim %s did not initialize within %s", pending[0].Name, c.opts.ReplacementTimeout)
		}
		select {
		case <-ctx.Done():
			return "the operator is stopping"
		case <-c.clock.After(500 * time.Millisecond):
		}
	}
	return ""
}

// failure returns the note of the latest Warning event on a NodeClaim
// (the lifecycle controller records why a launch failed), or "".
func (c *Controller) failure(ctx context.Context, claim string) string {
	evs, err := c.kube.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + claim + ",type=" + corev1.EventTypeWarning,
	})
	if err != nil || len(evs.Items) == 0 {
		return ""
	}
	latest := &evs.Items[0]
	for i := range evs.Items {
		if evs.Items[i].CreationTimestamp.After(latest.CreationTimestamp.Time) {
			latest = &evs.Items[i]
		}
	}
	return oneLine(latest.Message)
}

// drain evicts the pods of the nodes (in parallel) through the eviction
// API, honouring PodDisruptionBudgets and grace periods, within
// DrainTimeout. It returns how many pods each node had evicted.
func (c *Controller) drain(ctx context.Context, v *disruption.View, nodes []string) (map[string]int64, error) {
	counts := make([]atomic.Int64, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, name := range nodes {
		wg.Go(func() {
			h := &drain.Helper{
				Ctx:                 ctx,
				Client:              c.kube,
				Force:               c.opts.AllowUncontrolled,
				GracePeriodSeconds:  -1,
				IgnoreAllDaemonSets: true,
				DeleteEmptyDirData:  true,
				Timeout:             c.opts.DrainTimeout,
				Out:                 io.Discard,
				ErrOut:              io.Discard,
				OnPodDeletionOrEvictionFinished: func(_ *corev1.Pod, _ bool, err error) {
					if err == nil {
						counts[i].Add(1)
					}
				},
			}
			if err := drain.RunNodeDrain(h, name); err != nil {
				errs[i] = fmt.Errorf("node %s: %w", name, err)
			}
		})
	}
	wg.Wait()
	out := map[string]int64{}
	for i, name := range nodes {
		out[name] = counts[i].Load()
		if _, _, ok := v.Node(name); ok && out[name] > 0 {
			metrics.PodsEvicted.WithLabelValues(v.Pool(name)).Add(float64(out[name]))
		}
	}
	return out, errors.Join(errs...)
}

// lateBindSettle is how long an action waits after its drain for binds the
// scheduler began before the taint.
const lateBindSettle = time.Second

// drainLate drains the nodes once more after lateBindSettle. The taint
// keeps the scheduler from choosing the nodes, but a pod it had already
// assumed onto one (a node that looked empty to the planner because the
// pod was still pending) is bound afterwards, possibly after the drain
// listed the node's pods; deleting the node would then take the pod with
// it (the NodeClaim's termination drains by force, and a bare pod is never
// recreated). Pods found now are evicted as in the first drain, and a pod
// the drain may not evict fails the action, which is rolled back.
func (c *Controller) drainLate(ctx context.Context, v *disruption.View, nodes []string, evicted map[string]int64) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.clock.After(lateBindSettle):
	}
	again, err := c.drain(ctx, v, nodes)
	for n, k := range again {
		evicted[n] += k
	}
	return err
}

// deleteClaim records why and deletes a NodeClaim; the lifecycle finalizer
// terminates its instance and deletes the Node.
func (c *Controller) deleteClaim(ctx context.Context, claim *v1alpha1.NodeClaim) error {
	orig := claim.DeepCopy()
	claim.SetDeletionReason(v1alpha1.DeletionReasonDisruption)
	if err := c.client.Patch(ctx, claim, client.MergeFrom(orig)); err != nil {
		return client.IgnoreNotFound(err)
	}
	return client.IgnoreNotFound(c.client.Delete(ctx, claim))
}

// rollback undoes an action that could not finish: the replacements
// launched are deleted, the nodes untainted; no pod was evicted unless the
// drain had started.
func (c *Controller) rollback(ctx context.Context, v *disruption.View, cand *disruption.Candidate, tainted []string, launched []*v1alpha1.NodeClaim, reason, why string) {
	a := &cand.Action
	for _, claim := range launched {
		if err := c.deleteClaim(ctx, claim); err != nil {
			c.log.Error(err, "deleting a replacement NodeClaim during rollback", "nodeclaim", claim.Name)
		}
		c.source.Forget(claim.Name)
	}
	for _, n := range tainted {
		if err := c.untaint(ctx, n); err != nil {
			c.log.Error(err, "untainting during rollback; the next leader start retries", "node", n)
		}
	}
	for _, n := range a.Nodes {
		node, claim, _ := v.Node(n)
		c.recorder.Eventf(node, claimOrNil(claim), corev1.EventTypeWarning, "DisruptionRolledBack", "Rollback",
			"%s (%s) rolled back: %s; the node is untainted and keeps its pods", disruption.Describe(a), cand.Reason, why)
	}
	for _, pool := range v.Pools(cand) {
		metrics.DisruptionRolledBack.WithLabelValues(a.Kind, pool, reason).Inc()
	}
	c.log.Info("disruption action rolled back", "action", a.Kind, "reason", cand.Reason, "nodes", a.Nodes, "rollback", reason, "why", why)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
