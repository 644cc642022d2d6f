package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/launch"
)

// testTUILaunchBesideTheOperator: a TUI launch pressed on a plan made
// before the operator provisioned its pods is refused with a sentence (one
// node, not two); a TUI launch the operator does not provision is
// launched by it, and goes with its NodePool when the pool is deleted (the
// garbage collector deletes the claim through its owner reference, the
// operator drains and terminates the node). The launcher is called as the
// TUI calls it (pkg/tui/run.go), with the plan the TUI showed.
func (e *opEnv) testTUILaunchBesideTheOperator(t *testing.T) {
	ctx := context.Background()
	const poolName, lease = "tui-beside", "e2e-tui-beside"
	np := e.nodePool(t, poolName, 0, nil, req(corev1.LabelInstanceTypeStable, "m5.xlarge"), req(v1alpha1.LabelCapacityType, "on-demand"))
	// No consolidation: the empty node the TUI launches below must stay
	// until its pool goes.
	np.Spec.Disruption.ConsolidateAfter = v1alpha1.Never
	if err := e.c.Update(ctx, np); err != nil {
		t.Fatal(err)
	}
	ns := e.namespace(t, "tui-beside")
	pods := []*corev1.Pod{opPod(ns, "web-0", "1500m", "2Gi", map[string]string{v1alpha1.LabelNodePool: poolName})}

	// What the TUI showed before the operator ran: one proposed node.
	plan := offlinePlan(t, pods, []*v1alpha1.NodePool{np})
	if len(plan.NewNodes) != 1 {
		t.Fatalf("the TUI's plan has %d new nodes, want 1", len(plan.NewNodes))
	}
	stale := launch.Request{Name: "new-1", Node: plan.NewNodes[0], Pods: []string{ns + "/web-0"}}

	e.createPods(t, pods)
	e.startOperator(t, "operator", nil, "--leader-election-id", lease)
	// Registered after the operator, so run before it stops: the cleanup
	// needs it to drain and terminate what is left.
	t.Cleanup(func() { e.cleanup(t, ns, poolName) })
	var first []v1alpha1.NodeClaim
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		first = e.claims(t, poolName)
		return len(first) > 0, nil
	}); err != nil {
		t.Fatal("the operator created no NodeClaim for the pending pod within 90 s")
	}

	dyn, err := dynamic.NewForConfig(e.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	l := &launch.NodeClaimLauncher{Dynamic: dyn, Discovery: e.Client().Discovery(), Kube: e.Client(), OperatorLease: lease, LaunchedBy: "kubectl-rightsize-tui"}
	if _, err := l.Launch(ctx, stale); err == nil || !strings.Contains(err.Error(), "already provisions these pods") {
		t.Fatalf("a TUI launch for pods the operator provisions: err %v, want a refusal", err)
	} else {
		t.Logf("refused: %v", err)
	}
	e.waitRunning(t, ns, 1, 90*time.Second)
	if got := e.claims(t, poolName); len(got) != 1 {
		t.Fatalf("%d NodeClaims for one pod after the refused TUI launch, want 1", len(got))
	}

	// A launch no operator batch covers (no pods, the in-flight claims
	// counted) is made, and the operator launches it.
	spare := launch.Request{Name: "new-2", Node: plan.NewNodes[0], InFlight: []string{first[0].Name}}
	launched, err := l.Launch(ctx, spare)
	if err != nil {
		t.Fatalf("a TUI launch the operator does not provision: %v", err)
	}
	node := ""
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		var c v1alpha1.NodeClaim
		if err := e.c.Get(ctx, client.ObjectKey{Name: launched.Claim}, &c); err != nil {
			return false, nil
		}
		node = c.Status.NodeName
		return node != "", nil
	}); err != nil {
		t.Fatalf("the operator did not launch the TUI's NodeClaim %s within 90 s", launched.Claim)
	}

	// The pool goes; so do its claims and nodes, the TUI's among them.
	if err := e.c.Delete(ctx, np); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var n corev1.Node
		gone := client.IgnoreNotFound(e.c.Get(ctx, client.ObjectKey{Name: node}, &n)) == nil && n.Name == ""
		return gone && len(e.claims(t, poolName)) == 0, nil
	}); err != nil {
		t.Fatalf("node %s of the TUI's NodeClaim %s, or another NodeClaim of the pool (%d left), outlived its deleted NodePool by 2 min",
			node, launched.Claim, len(e.claims(t, poolName)))
	}
}
