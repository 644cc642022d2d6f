package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestConsolidateAfterSurvivesRestart checks that consolidateAfter counts
// from a pod's departure across an operator restart: the departure is
// recorded in the NodeClaim's status.lastPodEventTime, `explain
// --consolidation` sees it with the operator down, and the restarted
// operator removes the empty node no sooner than consolidateAfter after the
// recorded departure (when the node's launch, all a fresh operator could
// otherwise count from, is older), and not much later.
func TestConsolidateAfterSurvivesRestart(t *testing.T) {
	const (
		pool  = "podevents"
		after = 20 * time.Second
	)
	ctx := context.Background()
	e := startOpEnv(t)
	d := &disruptionEnv{opEnv: e}
	args := []string{"--leader-election-id", "e2e-podevents", "--batch-idle", "1s",
		"--consolidation-interval", "5s", "--disruption-validation-delay", "2s"}
	d.op = e.startOperator(t, "operator", nil, args...)
	d.op.waitLog(t, "disruption controller started", 60*time.Second)
	d.simClass(t)
	d.pool(t, pool, "sim", v1alpha1.Disruption{ConsolidateAfter: v1alpha1.NillableDuration(after.String()), Budgets: []v1alpha1.Budget{{Nodes: "100%"}}},
		req(v1alpha1.LabelCapacityType, "on-demand"), req(solver.LabelInstanceType, "m5.large"), req(solver.LabelZone, "us-east-1a"))
	ns := d.namespace(t, "podevents")
	pod := opPod(ns, "app", "1", "1Gi", map[string]string{v1alpha1.LabelNodePool: pool})
	d.createPods(t, []*corev1.Pod{pod})
	d.waitRunning(t, ns, 1, 60*time.Second)
	if err := d.c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		t.Fatal(err)
	}
	node := pod.Spec.NodeName

	// The pod's arrival is recorded on the node's NodeClaim.
	bound := d.waitEventTime(t, pool, node, time.Time{})
	if bound.Before(pod.CreationTimestamp.Time) || bound.After(time.Now().Add(time.Second)) {
		t.Fatalf("lastPodEventTime %s after the pod's binding, want between its creation %s and now", bound, pod.CreationTimestamp.Time)
	}
	// Leave the pod a window, so that its departure is recorded as it is
	// rather than as the end of the window.
	time.Sleep(time.Until(bound.Add(11 * time.Second)))

	left := time.Now()
	if err := d.Client().CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	departed := d.waitEventTime(t, pool, node, bound)
	t.Logf("pod bound at %s, deleted at %s, departure recorded as %s", bound.Format(time.TimeOnly), left.Format(time.StampMilli), departed.Format(time.TimeOnly))
	if departed.Before(left.Truncate(time.Second)) || departed.After(left.Add(3*time.Second)) {
		t.Fatalf("lastPodEventTime %s after the deletion at %s, want within 3 s after it", departed, left)
	}

	// Restart the operator in the middle of the window; explain, with no
	// operator running, sees the departure.
	d.op.stop()
	verdict := explainVerdict(t, e, node)
	t.Logf("explain --consolidation with the operator down: %s: %s", verdict.Verdict, verdict.Reason)
	if verdict.Verdict != "kept" || !strings.Contains(verdict.Reason, "pods changed") || !strings.Contains(verdict.Reason, "consolidateAfter is 20s") {
		t.Errorf("explain's verdict on %s: %+v, want kept because pods changed less than consolidateAfter 20s ago", node, verdict)
	}
	// Down for a few seconds, back well before consolidateAfter ends.
	time.Sleep(time.Until(departed.Add(5 * time.Second)))
	d.op = e.startOperator(t, "operator-restarted", nil, args...)
	d.op.waitLog(t, "disruption controller started", 60*time.Second)
	restarted := time.Now()

	// The node is left alone until consolidateAfter has passed since the
	// departure, then removed.
	deadline := departed.Add(after)
	var disrupted time.Time
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Until(deadline.Add(30*time.Second)), true, func(ctx context.Context) (bool, error) {
		var n corev1.Node
		if err := d.c.Get(ctx, client.ObjectKey{Name: node}, &n); client.IgnoreNotFound(err) != nil {
			return false, nil
		}
		gone := n.Name == ""
		if disrupted.IsZero() && (gone || disruptingNode(&n)) {
			disrupted = time.Now()
		}
		return gone, nil
	})
	if disrupted.IsZero() {
		t.Fatalf("node %s not disrupted %s after the recorded departure (consolidateAfter %s)", node, time.Since(departed).Round(time.Second), after)
	}
	t.Logf("operator restarted %s after the departure; node disrupted %s after it, gone %s after it",
		restarted.Sub(departed).Round(100*time.Millisecond), disrupted.Sub(departed).Round(100*time.Millisecond), time.Since(departed).Round(100*time.Millisecond))
	if disrupted.Before(deadline) {
		t.Errorf("node %s disrupted %s after the departure, before consolidateAfter %s", node, disrupted.Sub(departed).Round(100*time.Millisecond), after)
	}
	if err != nil {
		t.Errorf("node %s still there %s after the departure (consolidateAfter %s)", node, time.Since(departed).Round(time.Second), after)
	}
}

// waitEventTime waits until the NodeClaim of the pool's node records a pod
// event later than since, and returns it.
func (d *disruptionEnv) waitEventTime(t *testing.T, pool, node string, since time.Time) time.Time {
	t.Helper()
	var got time.Time
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		for _, c := range d.claims(t, pool) {
			if c.Status.NodeName == node && c.Status.LastPodEventTime != nil {
				got = c.Status.LastPodEventTime.Time
			}
		}
		return got.After(since), nil
	})
	if err != nil {
		t.Fatalf("node %s's NodeClaim records no pod event after %s within 20 s (last: %s)", node, since, got)
	}
	return got
}

// explainVerdict runs `kubectl rightsize explain --consolidation` against
// the cluster and returns its verdict on a node.
func explainVerdict(t *testing.T, e *opEnv, node string) (v struct{ Node, Verdict, Reason string }) {
	t.Helper()
	r := plugin(t, e.Kubeconfig, "explain", "--consolidation", "--region", "us-east-1", "-o", "json")
	if r.err != nil {
		t.Fatalf("explain --consolidation: %v\n%s", r.err, r.stderr)
	}
	var got struct {
		Consolidation struct {
			Nodes []struct{ Node, Verdict, Reason string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("explain output is not JSON: %v\n%s", err, r.stdout)
	}
	for _, n := range got.Consolidation.Nodes {
		if n.Node == node {
			return n
		}
	}
	t.Fatalf("explain gives no verdict on %s: %+v", node, got.Consolidation.Nodes)
	return v
}
