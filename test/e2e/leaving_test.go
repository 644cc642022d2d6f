package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// testLeavingNode: a NodeClaim deleted by hand (as interruption and expiry
// delete them) takes its pods' new capacity with it at once: the operator
// plans the pods of the leaving node as if pending and launches their new
// node while they still run there — here while a PodDisruptionBudget
// blocks their eviction, so that no pod has gone pending yet. Once the
// budget allows it, the pods move to that node and no second one is
// launched.
func (e *opEnv) testLeavingNode(t *testing.T) {
	ctx := context.Background()
	ns, op := e.webOnOwnPool(t, "leaving", 2)
	defer op.stop()
	before := e.claims(t, "leaving")
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
	}
	if err := e.c.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	running := runningPodUIDs(ctx, t, e.c, ns)
	deleted := time.Now()
	for i := range before {
		if err := e.c.Delete(ctx, &before[i]); err != nil {
			t.Fatal(err)
		}
	}

	// The new node comes while the pods still run on the old one.
	var replacement *v1alpha1.NodeClaim
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, c := range e.claims(t, "leaving") {
			if c.DeletionTimestamp == nil {
				replacement = c.DeepCopy()
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("no NodeClaim launched for the pods of the deleted NodeClaim(s) %v while their eviction was blocked", names(before))
	}
	launchedAfter := time.Since(deleted)
	if now := runningPodUIDs(ctx, t, e.c, ns); !sameKeys(now, running) {
		t.Fatalf("the pods changed before their eviction was allowed: %v, was %v", now, running)
	}
	planned := false
	for _, r := range op.records("batch planned") {
		planned = planned || r["leaving"] == float64(2)
	}
	if !planned {
		t.Errorf("no batch planned the 2 pods of the leaving node: %v", op.records("batch planned"))
	}

	// The budget lifts: the pods move to the node launched for them.
	if err := e.c.Delete(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(replacement), replacement); err != nil || replacement.Status.NodeName == "" {
			return false, nil
		}
		if err := e.c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		moved := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.Spec.NodeName == replacement.Status.NodeName {
				moved++
			}
		}
		return moved == 2, nil
	}); err != nil {
		t.Fatalf("the pods did not move to %s (node %q)", replacement.Name, replacement.Status.NodeName)
	}
	movedAfter := time.Since(deleted)
	// The old claims finish terminating; nothing else is launched.
	var after []v1alpha1.NodeClaim
	_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		after = e.claims(t, "leaving")
		return len(after) <= 1, nil
	})
	if len(after) != 1 || after[0].Name != replacement.Name {
		t.Errorf("NodeClaims at the end: %v; want only %s (the old ones terminated, no second launch for the recreated pods)", names(after), replacement.Name)
	}
	t.Logf("leaving node: replacement %s (%s) created %v after the deletion, with both pods still on the old node; pods Running on it %v after the deletion",
		replacement.Name, replacement.Status.InstanceType, launchedAfter.Round(time.Millisecond), movedAfter.Round(time.Millisecond))
}

// webOnOwnPool sets up a scenario: a namespace and an on-demand m6i
// NodePool named name (both cleaned up after the test), an operator
// without disruption (and args), and a Deployment "web" of replicas pods
// of 1 CPU, Running.
func (e *opEnv) webOnOwnPool(t *testing.T, name string, replicas int32, args ...string) (string, *operatorProc) {
	t.Helper()
	ns := e.namespace(t, name)
	e.nodePool(t, name, 0, nil, req(v1alpha1.LabelCapacityType, "on-demand"), req("karpenter.k8s.aws/instance-family", "m6i"))
	t.Cleanup(func() { e.forceCleanup(t, ns, name) })
	op := e.startOperator(t, name, nil, append([]string{"--leader-elect=false", "--disruption=false"}, args...)...)
	web := deployment("web", replicas, "1", "1Gi")
	web.Namespace = ns
	if err := e.c.Create(context.Background(), web); err != nil {
		t.Fatal(err)
	}
	e.waitRunning(t, ns, int(replicas), 60*time.Second)
	return ns, op
}

func names(claims []v1alpha1.NodeClaim) []string {
	var out []string
	for _, c := range claims {
		out = append(out, c.Name)
	}
	return out
}

func sameKeys[V any](a, b map[string]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// testNodeRepair: a node whose condition matches a repair policy (here
// KernelReady=False, as the EKS node monitoring agent reports a kernel
// fault) for longer than the toleration is replaced: its NodeClaim is
// deleted for reason repair, the node terminated without waiting on
// evictions, and its pod runs on a new node.
func (e *opEnv) testNodeRepair(t *testing.T) {
	ctx := context.Background()
	ns, op := e.webOnOwnPool(t, "repair", 1, "--node-repair-toleration", "3s")
	defer op.stop()
	before := e.claims(t, "repair")
	if len(before) != 1 || before[0].Status.NodeName == "" {
		t.Fatalf("NodeClaims %v: want one with its node", names(before))
	}
	broken := before[0].Status.NodeName

	var n corev1.Node
	if err := e.c.Get(ctx, client.ObjectKey{Name: broken}, &n); err != nil {
		t.Fatal(err)
	}
	orig := n.DeepCopy()
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "KernelReady", Status: corev1.ConditionFalse,
		Reason: "KernelBug", Message: "a kernel fault (e2e)", LastTransitionTime: metav1.Now(), LastHeartbeatTime: metav1.Now()})
	if err := e.c.Status().Patch(ctx, &n, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	faulted := time.Now()

	// Repaired: the node goes, the pod runs elsewhere.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var gone corev1.Node
		return apierrors.IsNotFound(e.c.Get(ctx, client.ObjectKey{Name: broken}, &gone)), nil
	}); err != nil {
		t.Fatalf("node %s with KernelReady=False was not repaired within 30 s (toleration 3 s)", broken)
	}
	goneAfter := time.Since(faulted)
	var pods corev1.PodList
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := e.c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		return len(pods.Items) == 1 && pods.Items[0].Status.Phase == corev1.PodRunning && pods.Items[0].Spec.NodeName != broken, nil
	}); err != nil {
		t.Fatalf("the pod of the repaired node did not run elsewhere: %+v", pods.Items)
	}
	runningAfter := time.Since(faulted)
	notes := e.podEvents(t, "", broken, "Repairing")
	if len(notes) == 0 || !strings.Contains(notes[0], "KernelReady=False") {
		t.Errorf("Repairing events on %s: %q; want one naming KernelReady=False", broken, notes)
	}
	if len(op.records("repairing an unhealthy node")) != 1 {
		t.Errorf("want one repair log line, got %v", op.records("repairing an unhealthy node"))
	}
	t.Logf("node repair: %s (KernelReady=False, toleration 3s) gone %v after the fault, its pod Running on %s %v after it: %q",
		broken, goneAfter.Round(time.Millisecond), pods.Items[0].Spec.NodeName, runningAfter.Round(time.Millisecond), notes)
}
