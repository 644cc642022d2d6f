package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestOperatorStaticNodePool runs the operator against a static NodePool
// (spec.replicas), as Karpenter v1.15's static capacity
// (kubernetes-sigs/karpenter test/suites/regression/staticcapacity_test.go
// and pkg/controllers/static): the pool waits for its node class, then is
// brought to its replicas with no pod pending, a deleted NodeClaim is
// replaced, lowering replicas removes the surplus, a pending pod never
// makes the static pool grow, and drifted nodes are replaced one by one.
func TestOperatorStaticNodePool(t *testing.T) {
	ctx := context.Background()
	e := startOpEnv(t)
	// Stopped by a cleanup registered before the pool's: the pool's
	// cleanup needs the operator to terminate the NodeClaims.
	e.startOperator(t, "operator", nil, "--leader-elect=false", "--batch-idle", "1s")
	const pool = "static"
	// A static pool cannot be made from a dynamic one (the CRD refuses
	// the change, as Karpenter's), so it is created with its replicas;
	// its SimNodeClass only after, so that it waits for it first.
	np := &v1alpha1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: pool},
		Spec: v1alpha1.NodePoolSpec{
			Template: v1alpha1.NodeClaimTemplate{Spec: v1alpha1.NodeClaimTemplateSpec{
				NodeClassRef: v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "SimNodeClass", Name: "sim"},
				Requirements: []v1alpha1.NodeSelectorRequirement{req(v1alpha1.LabelCapacityType, "on-demand"),
					req(solver.LabelInstanceType, "c5.large", "m5.large", "m5.xlarge"), req(solver.LabelZone, "us-east-1a")},
			}},
			Replicas: ptr.To(int64(3)),
		},
	}
	if err := e.c.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	ns := e.namespace(t, "static")
	t.Cleanup(func() {
		// Without replicas the operator would launch again every NodeClaim
		// the cleanup deletes.
		setReplicas(t, e, np, 0)
		e.cleanup(t, ns, pool)
	})

	// Without its node class the pool launches nothing, and says why.
	var waiting []string
	_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		waiting = e.podEvents(t, "", pool, "NotReady")
		return len(waiting) > 0, nil
	})
	if len(waiting) == 0 || !strings.Contains(waiting[0], "node class SimNodeClass sim is not ready") {
		t.Errorf("NodePool %s events NotReady: %q; want one saying its SimNodeClass sim is not ready", pool, waiting)
	}
	if n := len(e.claims(t, pool)); n != 0 {
		t.Errorf("static NodePool %s made %d NodeClaims before its node class existed; want 0", pool, n)
	}
	start := time.Now()
	e.simClass(t)

	// A dynamic pool cannot become static.
	dyn := e.nodePool(t, "static-dyn", 0, nil)
	err := e.c.Patch(ctx, dyn, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":2}}`)))
	if err == nil || !strings.Contains(err.Error(), "cannot change between static") {
		t.Errorf("setting replicas on a dynamic NodePool: %v; want the CRD's refusal", err)
	}
	// Deleted at once: it could launch a node for the pod below.
	if err := e.c.Delete(ctx, dyn); err != nil {
		t.Fatal(err)
	}

	// replicas 3: three nodes, with no pod pending, of the cheapest
	// offering the pool allows.
	claims := e.waitStaticClaims(t, pool, 3, true, 30*time.Second)
	t.Logf("3 replicas launched and registered %s after the SimNodeClass was created", time.Since(start).Round(time.Millisecond))
	for _, c := range claims {
		if c.Status.InstanceType != "c5.large" {
			t.Errorf("NodeClaim %s is %s; want c5.large, the cheapest the pool allows", c.Name, c.Status.InstanceType)
		}
	}

	// A deleted NodeClaim is replaced: the count is back to 3.
	gone := claims[0].Name
	if err := e.c.Delete(ctx, &claims[0]); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	claims = e.waitStaticClaims(t, pool, 3, true, 30*time.Second)
	if slices.ContainsFunc(claims, func(c v1alpha1.NodeClaim) bool { return c.Name == gone }) {
		t.Fatalf("NodeClaim %s was deleted but is still counted", gone)
	}
	t.Logf("deleted NodeClaim %s replaced after %s", gone, time.Since(start).Round(time.Millisecond))

	// A pending pod that fits runs on a static node; one that fits on
	// none stays pending: the static pool does not grow for it.
	e.createPods(t, []*corev1.Pod{opPod(ns, "fits", "500m", "512Mi", nil), opPod(ns, "too-big", "3", "4Gi", nil)})
	e.waitRunning(t, ns, 1, 30*time.Second)
	var fits corev1.Pod
	if err := e.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fits"}, &fits); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(claims, func(c v1alpha1.NodeClaim) bool { return c.Status.NodeName == fits.Spec.NodeName }) {
		t.Errorf("pod fits runs on %q, not a node of the static pool", fits.Spec.NodeName)
	}
	time.Sleep(5 * time.Second) // several provisioning batches (--batch-idle 1s)
	if n := len(activeClaims(e.claims(t, pool))); n != 3 {
		t.Errorf("a pending pod made the static pool %d NodeClaims; want 3", n)
	}
	var big corev1.Pod
	if err := e.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "too-big"}, &big); err != nil {
		t.Fatal(err)
	}
	if big.Spec.NodeName != "" {
		t.Errorf("pod too-big (3 CPUs) was bound to %s; no static node fits it", big.Spec.NodeName)
	}

	// replicas 1: two removed; the node running pod fits is kept.
	setReplicas(t, e, np, 1)
	start = time.Now()
	claims = e.waitStaticClaims(t, pool, 1, false, 30*time.Second)
	t.Logf("scaled to 1 after %s", time.Since(start).Round(time.Millisecond))
	if claims[0].Status.NodeName != fits.Spec.NodeName {
		t.Errorf("scale-down kept %s (node %s); want the node of pod fits, %s", claims[0].Name, claims[0].Status.NodeName, fits.Spec.NodeName)
	}

	t.Run("drift", func(t *testing.T) { testStaticDrift(t, e, np, ns) })
}

// testStaticDrift changes a static pool's template (a label its nodes
// lack) so that every node drifts, as Karpenter's static drift e2e does
// (kubernetes-sigs/karpenter test/suites/regression/staticcapacity_test.go,
// "should replace drifted static nodes"): each node is replaced, the
// replacement Ready before the drifted one is deleted, one at a time
// under the default budget (10%), so that the pool never has fewer than
// replicas-1 Ready claims (sampled) nor more than replicas+1, and ends with
// replicas nodes, all carrying the new label.
func testStaticDrift(t *testing.T, e *opEnv, np *v1alpha1.NodePool, ns string) {
	ctx := context.Background()
	const replicas = 3
	// The bare pods would be lost with their nodes; the drift is about
	// the nodes.
	if err := e.c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	setReplicas(t, e, np, replicas)
	before := e.waitStaticClaims(t, np.Name, replicas, true, 60*time.Second)
	old := map[string]bool{}
	for _, c := range before {
		old[c.Name] = true
	}

	// Sample the pool's Ready claims and all its claims not being deleted.
	stop := make(chan struct{})
	done := make(chan struct{})
	minReady, maxActive, samples := replicas, 0, 0
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			var l v1alpha1.NodeClaimList
			if err := e.c.List(ctx, &l, client.MatchingLabels{v1alpha1.LabelNodePool: np.Name}); err == nil {
				ready, active := 0, 0
				for i := range l.Items {
					c := &l.Items[i]
					if c.DeletionTimestamp != nil {
						continue
					}
					active++
					if c.IsTrue(v1alpha1.ConditionReady) {
						ready++
					}
				}
				minReady, maxActive, samples = min(minReady, ready), max(maxActive, active), samples+1
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	var cur v1alpha1.NodePool
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(np), &cur); err != nil {
		t.Fatal(err)
	}
	orig := cur.DeepCopy()
	cur.Spec.Template.Labels = map[string]string{"example.com/rev": "2"}
	start := time.Now()
	if err := e.c.Patch(ctx, &cur, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	var last []v1alpha1.NodeClaim
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		last = e.claims(t, np.Name)
		if len(last) != replicas {
			return false, nil
		}
		for _, c := range last {
			if old[c.Name] || c.DeletionTimestamp != nil || !c.IsTrue(v1alpha1.ConditionReady) {
				return false, nil
			}
			var node corev1.Node
			if err := e.c.Get(ctx, client.ObjectKey{Name: c.Status.NodeName}, &node); err != nil || node.Labels["example.com/rev"] != "2" {
				return false, nil
			}
		}
		return true, nil
	})
	close(stop)
	<-done
	if err != nil {
		t.Fatalf("drifted static nodes not all replaced within 3m: have %s", describeStatic(last))
	}
	t.Logf("%d drifted static nodes replaced in %s; %d samples: at least %d Ready claims, at most %d claims not being deleted",
		replicas, time.Since(start).Round(time.Millisecond), samples, minReady, maxActive)
	if minReady < replicas-1 {
		t.Errorf("the pool fell to %d Ready claims during the replacement; want at least %d (replicas-1)", minReady, replicas-1)
	}
	if maxActive > replicas+1 {
		t.Errorf("the pool had %d claims at once; want at most %d (one replacement at a time under the 10%% budget)", maxActive, replicas+1)
	}
	// The operator says what it did: a replacement launched for each
	// drifted node, and each drifted node deleted once one was Ready.
	var launched, replaced []string
	_ = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		launched, replaced = e.podEvents(t, "", np.Name, "Replacing"), e.podEvents(t, "", np.Name, "Replaced")
		return len(launched) >= replicas && len(replaced) >= replicas, nil
	})
	if len(launched) != replicas || len(replaced) != replicas {
		t.Errorf("NodePool events: %d Replacing, %d Replaced; want %d each: %q %q", len(launched), len(replaced), replicas, launched, replaced)
	}
	for _, msg := range replaced {
		if !strings.Contains(msg, "example.com/rev=2") || !strings.Contains(msg, "a replacement is Ready") {
			t.Errorf("Replaced event %q; want the drift (the new label) and that a replacement is Ready", msg)
		}
	}
	// Nothing left drifted: no further replacement in the next seconds.
	e.waitStaticClaims(t, np.Name, replicas, true, 30*time.Second)
	for _, c := range e.claims(t, np.Name) {
		if !slices.ContainsFunc(last, func(l v1alpha1.NodeClaim) bool { return l.Name == c.Name }) {
			t.Errorf("NodeClaim %s appeared after every node was replaced", c.Name)
		}
	}
}

// setReplicas sets a static pool's spec.replicas.
func setReplicas(t *testing.T, e *opEnv, np *v1alpha1.NodePool, n int64) {
	t.Helper()
	var cur v1alpha1.NodePool
	if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(np), &cur); err != nil {
		t.Fatal(err)
	}
	orig := cur.DeepCopy()
	cur.Spec.Replicas = ptr.To(n)
	if err := e.c.Patch(context.Background(), &cur, client.MergeFrom(orig)); err != nil {
		t.Fatalf("setting replicas of %s to %d: %v", np.Name, n, err)
	}
}

// waitStaticClaims waits until the pool has exactly n NodeClaims not being
// deleted and none being deleted, all with a registered node when
// registered is set, and holds for two seconds (no overshoot).
func (e *opEnv) waitStaticClaims(t *testing.T, pool string, n int, registered bool, timeout time.Duration) []v1alpha1.NodeClaim {
	t.Helper()
	var last []v1alpha1.NodeClaim
	var since time.Time
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		last = e.claims(t, pool)
		ok := len(last) == n && len(activeClaims(last)) == n
		for _, c := range last {
			if registered && c.Status.NodeName == "" {
				ok = false
			}
		}
		if !ok {
			since = time.Time{}
			return false, nil
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) >= 2*time.Second, nil
	})
	if err != nil {
		t.Fatalf("NodePool %s: want %d NodeClaims (registered: %v) for 2s within %s; have %s", pool, n, registered, timeout, describeStatic(last))
	}
	return last
}

// active returns the claims not being deleted.
func activeClaims(claims []v1alpha1.NodeClaim) []v1alpha1.NodeClaim {
	return slices.DeleteFunc(slices.Clone(claims), func(c v1alpha1.NodeClaim) bool { return c.DeletionTimestamp != nil })
}

func describeStatic(claims []v1alpha1.NodeClaim) string {
	var out []string
	for _, c := range claims {
		out = append(out, fmt.Sprintf("%s(node %q, deleting %v)", c.Name, c.Status.NodeName, c.DeletionTimestamp != nil))
	}
	return fmt.Sprint(out)
}
