package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
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
	ns := e.namespace(t, "leaving")
	e.nodePool(t, "leaving", 0, nil, req(v1alpha1.LabelCapacityType, "on-demand"), req("karpenter.k8s.aws/instance-family", "m6i"))
	t.Cleanup(func() { e.forceCleanup(t, ns, "leaving") })
	op := e.startOperator(t, "leaving", nil, "--leader-elect=false", "--disruption=false")
	defer op.stop()

	web := deployment("web", 2, "1", "1Gi")
	web.Namespace = ns
	if err := e.c.Create(ctx, web); err != nil {
		t.Fatal(err)
	}
	e.waitRunning(t, ns, 2, 60*time.Second)
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
