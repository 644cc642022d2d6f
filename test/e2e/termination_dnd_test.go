package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestTerminationDoNotDisrupt: an expired node (expiry is forceful: its
// NodeClaim is deleted once the replacement is up, whatever its pods) is
// drained as Karpenter v1's terminator drains it: the ordinary pods are
// evicted at once, the karpenter.sh/do-not-disrupt pod is not evicted and
// holds the drain, and is deleted only once its own
// terminationGracePeriodSeconds (10 s) would carry it past the NodeClaim's
// terminationGracePeriod (30 s): 20 s after the deletion. Written from
// kubernetes-sigs/karpenter pkg/controllers/node/termination/suite_test.go,
// It("should only delete pods when their terminationGracePeriodSeconds is
// less than the the node's remaining terminationGracePeriod") and
// It("should preemptively delete pods to satisfy their
// terminationGracePeriodSeconds"), and from its terminator's eviction queue,
// which leaves active do-not-disrupt pods enqueued instead of evicting them
// (terminator/eviction.go, Queue.Reconcile).
func TestTerminationDoNotDisrupt(t *testing.T) {
	ctx := context.Background()
	e := startOpEnv(t)
	d := &disruptionEnv{opEnv: e}
	d.op = e.startOperator(t, "operator", nil, "--leader-elect=false", "--batch-idle", "1s",
		"--consolidation-interval", "5s", "--disruption-validation-delay", "2s", "--replacement-timeout", "60s")
	const pool = "dnd"
	d.simClass(t)
	d.pool(t, pool, "sim", v1alpha1.Disruption{ConsolidateAfter: "0s", Budgets: []v1alpha1.Budget{{Nodes: "0"}}},
		req(v1alpha1.LabelCapacityType, "on-demand"), req(solver.LabelInstanceType, "m5.xlarge"), req(solver.LabelZone, "us-east-1a"))
	var np v1alpha1.NodePool
	if err := d.c.Get(ctx, client.ObjectKey{Name: pool}, &np); err != nil {
		t.Fatal(err)
	}
	orig := np.DeepCopy()
	const expireAfter, grace, podGrace = 60 * time.Second, 30 * time.Second, 10 * time.Second
	np.Spec.Template.Spec.ExpireAfter = v1alpha1.NillableDuration(expireAfter.String())
	np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: grace}
	if err := d.c.Patch(ctx, &np, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	ns := d.namespace(t, "dnd")
	t.Cleanup(func() { d.cleanup(t, ns, pool) })
	d.deploy(t, ns, "web", 2, "1", "1Gi", pool)
	keep := deployment("keep", 1, "500m", "512Mi")
	keep.Namespace = ns
	keep.Spec.Template.Annotations = map[string]string{v1alpha1.KarpenterAnnotationDoNotDisrupt: "true"}
	keep.Spec.Template.Spec.NodeSelector = map[string]string{v1alpha1.LabelNodePool: pool}
	keep.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To(int64(podGrace / time.Second))
	if _, err := d.Client().AppsV1().Deployments(ns).Create(ctx, keep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := d.settled(t, ns, 3, 90*time.Second)
	old := pods[0].Spec.NodeName
	var keepPod corev1.Pod
	for _, p := range pods {
		if p.Spec.NodeName != old {
			t.Fatalf("the 3 pods run on %s and %s; the scenario needs them on one node", old, p.Spec.NodeName)
		}
		if p.Labels["app"] == "keep" {
			keepPod = p
		}
	}
	var claim v1alpha1.NodeClaim
	for _, c := range d.claims(t, pool) {
		if c.Status.NodeName == old {
			claim = c
		}
	}
	if claim.Name == "" {
		t.Fatalf("no NodeClaim for node %s", old)
	}

	// Expiry deletes the claim.
	var deleted time.Time
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, expireAfter+90*time.Second, true, func(ctx context.Context) (bool, error) {
		var c v1alpha1.NodeClaim
		if err := d.c.Get(ctx, client.ObjectKeyFromObject(&claim), &c); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if c.DeletionTimestamp != nil {
			deleted = c.DeletionTimestamp.Time
		}
		return !deleted.IsZero(), nil
	}); err != nil || deleted.IsZero() {
		t.Fatalf("NodeClaim %s (expireAfter %s) not deleted %s after its creation: %v", claim.Name, expireAfter, time.Since(claim.CreationTimestamp.Time).Round(time.Second), err)
	}

	// The web pods leave at once; the do-not-disrupt pod stays.
	webGone := time.Duration(0)
	keepGone := time.Duration(0)
	claimGone := time.Duration(0)
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, grace+60*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := d.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + old})
		if err != nil {
			return false, nil
		}
		web, kept := 0, false
		for _, p := range l.Items {
			switch {
			case p.UID == keepPod.UID && p.DeletionTimestamp == nil:
				kept = true
			case p.Labels["app"] == "web":
				web++
			}
		}
		since := time.Since(deleted)
		if web == 0 && webGone == 0 {
			webGone = since
		}
		if !kept && keepGone == 0 {
			keepGone = since
		}
		var c v1alpha1.NodeClaim
		if err := d.c.Get(ctx, client.ObjectKeyFromObject(&claim), &c); err != nil && claimGone == 0 {
			claimGone = since
		}
		return webGone > 0 && keepGone > 0 && claimGone > 0, nil
	}); err != nil {
		t.Fatalf("%s after the deletion of %s: web pods gone after %v, do-not-disrupt pod gone after %v, claim gone after %v (0: not yet)",
			grace+60*time.Second, claim.Name, webGone, keepGone, claimGone)
	}
	t.Logf("expired NodeClaim %s (terminationGracePeriod %s): web pods off its node %v after its deletion, do-not-disrupt pod (grace %s) deleted after %v, claim gone after %v",
		claim.Name, grace, webGone.Round(100*time.Millisecond), podGrace, keepGone.Round(100*time.Millisecond), claimGone.Round(100*time.Millisecond))
	// The drain starts when the claim is deleted: the web pods go within
	// a few drain passes (5 s apart); the do-not-disrupt pod only once
	// 20 s are gone (grace - podGrace), well before then it is still there.
	due := grace - podGrace
	if webGone > 15*time.Second {
		t.Errorf("the web pods took %v to leave the deleted claim's node; the do-not-disrupt pod should hold only itself", webGone)
	}
	if keepGone < due-2*time.Second {
		t.Errorf("the do-not-disrupt pod left %v after the deletion, before %v (grace %s less its own %s)", keepGone, due, grace, podGrace)
	}
	if keepGone > grace+10*time.Second || claimGone > grace+20*time.Second {
		t.Errorf("the do-not-disrupt pod left after %v and the claim after %v; the grace period is %s", keepGone, claimGone, grace)
	}
	if claimGone < keepGone {
		t.Errorf("the claim went (%v) before its do-not-disrupt pod (%v)", claimGone, keepGone)
	}
	held := 0
	for _, r := range d.op.records("drain not finished; retrying") {
		if strings.Contains(fmt.Sprint(r["error"]), "do-not-disrupt hold the drain") {
			held++
		}
	}
	if held == 0 {
		t.Errorf("no drain pass said the do-not-disrupt pod held it")
	}
	// No pod lost: the three run again, on the replacement.
	d.settled(t, ns, 3, 60*time.Second)
	for _, name := range []string{"web", "keep"} {
		if err := d.Client().AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
