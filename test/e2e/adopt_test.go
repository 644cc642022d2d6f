package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/sim"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/launch"
	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

// TestOperatorAdoptsNodesTheTUILaunchedWithoutIt: on a cluster without the
// operator's CRDs, kubectl rightsize tui --cloud sim launches nodes itself
// (its launcher code is called directly, as the TUI calls it) and pods run
// on one of them. Then the CRDs, a SimNodeClass and that node's NodePool
// are installed and the operator started with a short GC grace period: the
// node gets its NodeClaim back (Launched, Registered, Initialized, without
// a second launch), is not deleted, and its pods keep running. A second
// direct launch, whose NodePool never exists, is left running and reported
// once; an operator-style orphan (no marker) is terminated as before.
func TestOperatorAdoptsNodesTheTUILaunchedWithoutIt(t *testing.T) {
	t.Parallel() // a plane of its own, without the CRDs
	start := time.Now()
	env := testenv.Start(t)
	upAt := time.Since(start)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := newOpEnv(t, env)
	c := e.c
	ns := e.namespace(t, "adopt")

	// 1. No CRDs, no operator: the TUI's direct launches.
	provider, err := sim.New(sim.Options{Client: c, ClusterName: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	suffixes := []string{"tui01", "tui02"}
	l := &launch.DirectLauncher{
		CloudName: "sim", ClusterName: "e2e", Client: c, LaunchedBy: "kubectl-rightsize-tui",
		Cloud:        func(context.Context, string) (cloud.CloudProvider, error) { return provider, nil },
		ClaimsServed: func() (bool, error) { return launch.Served(env.Client().Discovery(), launch.NodeClaims) },
		Suffix:       func() string { s := suffixes[0]; suffixes = suffixes[1:]; return s },
	}
	node := func(pool string) solver.NewNode {
		return solver.NewNode{Pool: pool, InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: cloud.CapacityTypeOnDemand,
			Requested: solver.Resources{solver.CPU: 1000, solver.Memory: 2 << 30}}
	}
	var pods []string
	for _, name := range []string{"web-0", "web-1"} {
		if err := c.Create(ctx, opPod(ns, name, "500m", "1Gi", map[string]string{corev1.LabelHostname: "default-tui01"})); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, ns+"/"+name)
	}
	adoptable, err := l.Launch(ctx, launch.Request{Name: "new-1", Node: node("default"), Pods: pods, Region: sim.DefaultRegion})
	if err != nil {
		t.Fatal(err)
	}
	if adoptable.ClaimInCluster || adoptable.Claim != "default-tui01" {
		t.Fatalf("launched %+v: want claim default-tui01 recorded nowhere (no CRDs)", adoptable)
	}
	stray, err := l.Launch(ctx, launch.Request{Name: "new-2", Node: node("scratch"), Region: sim.DefaultRegion})
	if err != nil {
		t.Fatal(err)
	}
	// The TUI registers the node and opens it to its pods, as the
	// operator's lifecycle controller would.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		usable, err := l.Register(ctx, adoptable, adoptable.Claim)
		return usable, err
	}); err != nil {
		t.Fatalf("the directly launched node never became usable: %v", err)
	}
	if err := l.Nominate(ctx, pods, adoptable.Claim); err != nil {
		t.Fatal(err)
	}
	if err := l.Open(ctx, adoptable, adoptable.Claim); err != nil {
		t.Fatal(err)
	}
	e.waitRunning(t, ns, 2, 30*time.Second)
	before := runningPodUIDs(ctx, t, c, ns)
	// An instance the operator launched and lost the claim of (a crash,
	// a force-deleted claim): no marker.
	orphan := &v1alpha1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-orphan", Labels: map[string]string{v1alpha1.LabelNodePool: "default"}},
		Spec: v1alpha1.NodeClaimSpec{Requirements: []v1alpha1.NodeSelectorRequirement{
			{Key: solver.LabelInstanceType, Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"m5.large"}},
		}},
	}
	if _, err := provider.Create(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	var directNode corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: adoptable.Claim}, &directNode); err != nil {
		t.Fatal(err)
	}
	if directNode.Annotations[cloud.AnnotationLaunchedDirectly] != "sim" {
		t.Fatalf("directly launched node annotations %v: want the adoption marker", directNode.Annotations)
	}
	launchedAt := time.Since(start)

	// 2. The operator is installed: CRDs, node class, the pool of the first node.
	installCRDs(t, env)
	e.nodePool(t, "default", 0, nil)
	opStart := time.Now()
	op := e.startOperator(t, "operator", nil, "--leader-elect=false", "--gc-grace-period", "2s")

	adopted := op.waitLog(t, "adopted an instance launched by kubectl rightsize tui", 30*time.Second)
	adoptedAfter := time.Since(opStart)
	if adopted["nodeclaim"] != adoptable.Claim || adopted["nodepool"] != "default" {
		t.Errorf("adoption log %v: want NodeClaim %s of pool default", adopted, adoptable.Claim)
	}
	var claim v1alpha1.NodeClaim
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Name: adoptable.Claim}, &claim); err != nil {
			return false, nil
		}
		return claim.IsInitialized(), nil
	}); err != nil {
		t.Fatalf("NodeClaim %s not adopted through to Initialized: %+v", adoptable.Claim, claim.Status)
	}
	initializedAfter := time.Since(opStart)
	for _, cond := range []string{v1alpha1.ConditionLaunched, v1alpha1.ConditionRegistered, v1alpha1.ConditionInitialized, v1alpha1.ConditionReady} {
		if !claim.IsTrue(cond) {
			t.Errorf("NodeClaim %s: %s not True: %+v", claim.Name, cond, claim.Status.Conditions)
		}
	}
	if claim.Status.ProviderID != directNode.Spec.ProviderID || claim.Status.NodeName != directNode.Name || claim.Status.InstanceType != "m5.large" {
		t.Errorf("NodeClaim status providerID %q nodeName %q type %q: want node %s (%s)", claim.Status.ProviderID, claim.Status.NodeName, claim.Status.InstanceType, directNode.Name, directNode.Spec.ProviderID)
	}
	if len(claim.OwnerReferences) != 1 || claim.OwnerReferences[0].Kind != "NodePool" || claim.OwnerReferences[0].Name != "default" {
		t.Errorf("NodeClaim owners %v: want the NodePool", claim.OwnerReferences)
	}
	// The claim is created Launched; should the lifecycle controller see
	// it before that status write, its launch finds the instance by the
	// claim's name: either way, no second instance.
	for _, r := range op.records("launched") {
		if r["nodeclaim"] == adoptable.Claim && r["providerID"] != directNode.Spec.ProviderID {
			t.Errorf("the lifecycle controller launched another instance for the adopted claim: %v", r)
		}
	}

	// The unmarked orphan is collected; the stray direct launch is not.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: orphan.Name}, &corev1.Node{})), nil
	}); err != nil {
		t.Fatalf("the unmarked orphan %s was not terminated", orphan.Name)
	}
	time.Sleep(3 * time.Second) // a few more passes (every second with a 2 s grace period)
	if n := len(op.records("not adopting an instance launched by kubectl rightsize tui")); n != 1 {
		t.Errorf("the stray direct launch was reported %d times, want once", n)
	}
	for _, name := range []string{adoptable.Claim, stray.Claim} {
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil || n.DeletionTimestamp != nil {
			t.Errorf("node %s launched by the TUI: %v (deleting: %v); want it kept", name, err, n.DeletionTimestamp != nil)
		}
	}
	if gc := op.records("terminating an instance no NodeClaim owns"); len(gc) != 1 || gc[0]["nodeclaim"] != orphan.Name {
		t.Errorf("garbage-collection logs %v: want exactly the orphan's", gc)
	}
	if len(e.claims(t, "")) != 1 {
		t.Errorf("%d NodeClaims, want only the adopted one", len(e.claims(t, "")))
	}
	if nodes := e.simNodes(t); len(nodes) != 2 {
		t.Errorf("%d simulated nodes, want the 2 the TUI launched", len(nodes))
	}
	after := runningPodUIDs(ctx, t, c, ns)
	for name, uid := range before {
		if after[name] != uid {
			t.Errorf("pod %s was replaced or stopped running on %s (uid %s, now %q)", name, adoptable.Claim, uid, after[name])
		}
	}
	launchedBy := "?"
	for _, cond := range claim.Status.Conditions {
		if cond.Type == v1alpha1.ConditionLaunched {
			launchedBy = cond.Reason // Adopted, or Launched if the lifecycle controller got there first
		}
	}
	var evs corev1.EventList
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		_ = c.List(ctx, &evs, client.MatchingFields{"reason": "Adopted"})
		if launchedBy != "Adopted" || len(evs.Items) > 0 || time.Now().After(deadline) {
			break
		}
	}
	if launchedBy == "Adopted" && len(evs.Items) == 0 {
		t.Errorf("garbage collection adopted %s but recorded no Adopted event", adoptable.Claim)
	}
	t.Logf("adopted %s %v after the operator started (Launched reason %s; Initialized after %v; %d Adopted events); control plane up in %v, direct launches done at %v, test took %v",
		adoptable.Claim, adoptedAfter.Round(time.Millisecond), launchedBy, initializedAfter.Round(time.Millisecond), len(evs.Items),
		upAt.Round(time.Millisecond), launchedAt.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// runningPodUIDs maps the namespace's Running pods to their UIDs and node.
func runningPodUIDs(ctx context.Context, t *testing.T, c client.Client, ns string) map[string]types.UID {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			out[p.Name+"@"+p.Spec.NodeName] = p.UID
		}
	}
	return out
}
