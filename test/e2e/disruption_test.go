package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/importer"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/disruption"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// disruptionEnv is the control plane and the one operator the disruption
// scenarios share.
type disruptionEnv struct {
	*opEnv
	op *operatorProc
	// metrics is the host:port the operator serves /metrics on.
	metrics string
}

// TestDisruption runs one operator (consolidation every 5 s at the latest,
// a 2 s validation delay) against one control plane with kwok and the
// simulated cloud, and checks consolidation, budgets, PDBs, rollbacks and
// churn scenario by scenario. Every scenario ends with every pod of its
// workloads Running: no pod is lost.
func TestDisruption(t *testing.T) {
	e := startOpEnv(t)
	d := &disruptionEnv{opEnv: e, metrics: freePort(t)}
	d.op = e.startOperator(t, "operator", nil, "--leader-election-id", "e2e-disruption", "--batch-idle", "1s", "--metrics-bind-address", d.metrics,
		"--consolidation-interval", "5s", "--disruption-validation-delay", "2s", "--drain-timeout", "20s", "--replacement-timeout", "60s")
	d.op.waitLog(t, "disruption controller started", 60*time.Second)
	t.Run("seed step 4: the memory hog's node goes once the Deployment is deleted", d.testSeedStep4)
	t.Run("40 pods scaled to 10: repacked onto cheaper nodes, as the planner estimated", d.testRepack)
	t.Run("a PDB with maxUnavailable 0 keeps its node undrained, and says so", d.testPDB)
	t.Run("a budget of one node: never two nodes disrupting at once", d.testBudgetOne)
	t.Run("a closed budget window: nothing happens until it opens", d.testClosedWindow)
	t.Run("a flapping workload: replacements counted against flaps", d.testChurn)
	t.Run("drift: a node that no longer matches its pool is replaced", d.testDrift)
	t.Run("drift: a node class edit replaces the class's nodes; a metadata-only edit does not", d.testNodeClassDrift)
	t.Run("expiration: a node older than expireAfter is replaced", d.testExpiry)
	// Last: the offerings it makes unavailable stay so for minutes.
	t.Run("a replacement that cannot launch: the old node stays, untainted, its pods untouched", d.testReplacementICE)
	t.Run("metrics: actions, saving, evictions and rollbacks", d.testMetrics)
	t.Run("metrics under Karpenter's names agree with ours and with the objects", d.testKarpenterMetrics)
}

// pool creates a NodePool on the node class with the disruption settings.
func (d *disruptionEnv) pool(t *testing.T, name, class string, dis v1alpha1.Disruption, reqs ...v1alpha1.NodeSelectorRequirement) {
	t.Helper()
	np := &v1alpha1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.NodePoolSpec{
			Template: v1alpha1.NodeClaimTemplate{Spec: v1alpha1.NodeClaimTemplateSpec{
				NodeClassRef: v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "SimNodeClass", Name: class},
				Requirements: reqs,
			}},
			Disruption: dis,
		},
	}
	if err := d.c.Create(context.Background(), np); err != nil {
		t.Fatal(err)
	}
}

// m5 restricts a pool to on-demand m5.large, m5.xlarge and m5.2xlarge in
// one zone.
func m5() []v1alpha1.NodeSelectorRequirement {
	return []v1alpha1.NodeSelectorRequirement{
		req(v1alpha1.LabelCapacityType, "on-demand"),
		req(solver.LabelInstanceType, "m5.large", "m5.xlarge", "m5.2xlarge"),
		req(solver.LabelZone, "us-east-1a"),
	}
}

// deploy creates a Deployment whose pods select the pool.
func (d *disruptionEnv) deploy(t *testing.T, ns, name string, replicas int32, cpu, memory, pool string) {
	t.Helper()
	dep := deployment(name, replicas, cpu, memory)
	dep.Namespace = ns
	dep.Spec.Template.Spec.NodeSelector = map[string]string{v1alpha1.LabelNodePool: pool}
	dep.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To(int64(0))
	if _, err := d.Client().AppsV1().Deployments(ns).Create(context.Background(), dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// scale sets a Deployment's replicas.
func (d *disruptionEnv) scale(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
	if _, err := d.Client().AppsV1().Deployments(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// settled waits until the namespace has exactly want pods, every one
// Running and none terminating, and returns them: the check that no pod
// was lost.
func (d *disruptionEnv) settled(t *testing.T, ns string, want int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	var running, total int
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		l, err := d.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		pods, running, total = l.Items, 0, len(l.Items)
		for _, p := range l.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		return running == want && total == want, nil
	})
	if err != nil {
		t.Fatalf("%s: %d pods, %d Running, after %s; want %d, all Running", ns, total, running, timeout, want)
	}
	return pods
}

// cost sums the prices of the pool's NodeClaims not being deleted.
func (d *disruptionEnv) cost(t *testing.T, pool string) (float64, int) {
	t.Helper()
	sum, n := 0.0, 0
	for _, c := range d.claims(t, pool) {
		if c.DeletionTimestamp == nil {
			sum += nodeclaim.Price(&c)
			n++
		}
	}
	return sum, n
}

// quiet waits until the pool has had no NodeClaim created or deleted, and
// no node tainted for disruption, for the given time.
func (d *disruptionEnv) quiet(t *testing.T, pool string, quiet, timeout time.Duration) {
	t.Helper()
	last, since := "", time.Now()
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		var names []string
		for _, c := range d.claims(t, pool) {
			names = append(names, c.Name+strconv.FormatBool(c.DeletionTimestamp != nil))
		}
		for _, n := range d.poolNodes(t, pool) {
			if disruptingNode(&n) {
				names = append(names, n.Name+"-disrupting")
			}
		}
		slices.Sort(names)
		if s := strings.Join(names, ","); s != last {
			last, since = s, time.Now()
		}
		return time.Since(since) >= quiet, nil
	})
	if err != nil {
		t.Fatalf("pool %s did not settle within %s: %s", pool, timeout, last)
	}
}

// setBudgets replaces a pool's disruption budgets.
func (d *disruptionEnv) setBudgets(t *testing.T, pool string, budgets ...v1alpha1.Budget) {
	t.Helper()
	ctx := context.Background()
	var np v1alpha1.NodePool
	if err := d.c.Get(ctx, client.ObjectKey{Name: pool}, &np); err != nil {
		t.Fatal(err)
	}
	orig := np.DeepCopy()
	np.Spec.Disruption.Budgets = budgets
	if err := d.c.Patch(ctx, &np, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
}

// poolNodes lists the nodes of a pool.
func (d *disruptionEnv) poolNodes(t *testing.T, pool string) []corev1.Node {
	t.Helper()
	var l corev1.NodeList
	if err := d.c.List(context.Background(), &l, client.MatchingLabels{v1alpha1.LabelNodePool: pool}); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// disruptingNode reports whether a node is being disrupted: tainted by the
// disruption controller, cordoned for termination or being deleted.
func disruptingNode(n *corev1.Node) bool {
	return n.Spec.Unschedulable || n.DeletionTimestamp != nil ||
		slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == disruption.TaintKey })
}

// waitNodeGone fails the test unless the node is deleted within 60 s of
// what happened.
func (d *disruptionEnv) waitNodeGone(t *testing.T, node, what string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		var n corev1.Node
		return client.IgnoreNotFound(d.c.Get(ctx, client.ObjectKey{Name: node}, &n)) == nil && n.Name == "", nil
	})
	if err != nil {
		t.Fatalf("node %s still there 60 s after %s", node, what)
	}
}

// nodeEvents returns the notes of the events on a node with a reason.
func (d *disruptionEnv) nodeEvents(t *testing.T, node, reason string) []string {
	t.Helper()
	return d.podEvents(t, "", node, reason)
}

// recordsSince returns the operator's log records with msg logged at or
// after since.
func (d *disruptionEnv) recordsSince(msg string, since time.Time) []map[string]any {
	var out []map[string]any
	for _, r := range d.op.records(msg) {
		if !recordTime(r).Before(since) {
			out = append(out, r)
		}
	}
	return out
}

// recordTime is when the operator logged a record.
func recordTime(r map[string]any) time.Time {
	ts, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(r["time"]))
	return ts
}

// podUIDs maps the namespace's pods to the node they run on.
func podUIDs(pods []corev1.Pod) map[types.UID]string {
	out := map[types.UID]string{}
	for _, p := range pods {
		out[p.UID] = p.Spec.NodeName
	}
	return out
}

func (d *disruptionEnv) testSeedStep4(t *testing.T) {
	ctx := context.Background()
	res, err := importer.Import([]string{filepath.Join(seedDir, "01-ec2nodeclass.yaml"), filepath.Join(seedDir, "02-provisioner.yaml")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const after = 10 * time.Second
	var poolName string
	for _, obj := range res.Objects {
		o := obj.(client.Object)
		if np, ok := obj.(*v1alpha1.NodePool); ok {
			poolName = np.Name
			for i, r := range np.Spec.Template.Spec.Requirements {
				if r.Key == corev1.LabelInstanceTypeStable {
					np.Spec.Template.Spec.Requirements[i].Values = append(r.Values, "m5.2xlarge", "r5.2xlarge")
				}
			}
			// The seed waits 5m; the test waits 10s so that it finishes.
			t.Logf("seed pool: consolidateAfter %q, budgets %v; the test sets consolidateAfter to %s", np.Spec.Disruption.ConsolidateAfter, np.Spec.Disruption.Budgets, after)
			np.Spec.Disruption.ConsolidateAfter = v1alpha1.NillableDuration(after.String())
		}
		if err := d.c.Create(ctx, o); err != nil {
			t.Fatalf("creating the imported %T: %v", obj, err)
		}
	}
	ns := d.namespace(t, "seed4")
	t.Cleanup(func() { d.cleanup(t, ns, poolName) })
	if r := kubectl(t, d.Env, "apply", "-n", ns, "-f", filepath.Join(seedDir, "03-memory-hog.yaml")); r.err != nil {
		t.Fatalf("kubectl apply: %v\n%s", r.err, r.stderr)
	}
	pods := d.settled(t, ns, 1, 90*time.Second)
	node := pods[0].Spec.NodeName
	claims := d.claims(t, poolName)
	if len(claims) != 1 {
		t.Fatalf("%d NodeClaims, want 1", len(claims))
	}
	t.Logf("the memory hog runs on %s (%s $%s/h)", node, claims[0].Status.InstanceType, claims[0].Status.PricePerHour)

	deleted := time.Now()
	if err := d.Client().AppsV1().Deployments(ns).Delete(ctx, "memory-hog-app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	limit := after + 15*time.Second
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, limit, true, func(ctx context.Context) (bool, error) {
		var n corev1.Node
		err := d.c.Get(ctx, client.ObjectKey{Name: node}, &n)
		return err != nil && client.IgnoreNotFound(err) == nil, nil
	})
	took := time.Since(deleted)
	if err != nil {
		t.Fatalf("node %s still there %s after the Deployment was deleted (consolidateAfter %s)", node, took.Round(time.Millisecond), after)
	}
	t.Logf("node %s gone %s after the Deployment was deleted (consolidateAfter %s, so %s past it)", node, took.Round(time.Millisecond), after,
		(took - after).Round(time.Millisecond))
	if took < after {
		t.Errorf("node gone after %s, before consolidateAfter %s", took, after)
	}
	// The node goes with the instance, a moment before the claim's
	// finalizer lets the claim go.
	if left := d.waitClaims(t, poolName, 0); len(left) != 0 {
		t.Errorf("NodeClaims left 10 s after their node went: %v", names(left))
	}
}

// waitClaims waits up to 10 s for a pool to have want NodeClaims (claims
// being deleted finish their finalizer first) and returns them.
func (d *disruptionEnv) waitClaims(t *testing.T, pool string, want int) []v1alpha1.NodeClaim {
	t.Helper()
	var claims []v1alpha1.NodeClaim
	_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		claims = d.claims(t, pool)
		return len(claims) == want, nil
	})
	return claims
}

func (d *disruptionEnv) testRepack(t *testing.T) {
	const pool = "repack"
	d.simClass(t)
	d.pool(t, pool, "sim", v1alpha1.Disruption{ConsolidateAfter: "0s", Budgets: []v1alpha1.Budget{{Nodes: "100%"}}},
		req(v1alpha1.LabelCapacityType, "on-demand"), req("karpenter.k8s.aws/instance-family", "m5", "c5", "r5"), req(solver.LabelZone, "us-east-1a"))
	ns := d.namespace(t, "repack")
	t.Cleanup(func() { d.cleanup(t, ns, pool) })
	// Four Deployments of 10 pods each, created one after the other so
	// that the provisioner launches several nodes.
	for i := range 4 {
		d.deploy(t, ns, fmt.Sprintf("web-%d", i), 10, "500m", "1Gi", pool)
		d.settled(t, ns, 10*(i+1), 90*time.Second)
	}
	d.quiet(t, pool, 5*time.Second, 60*time.Second)
	before, nodesBefore := d.cost(t, pool)
	t.Logf("40 pods: %d nodes, $%.4f/h", nodesBefore, before)

	// The pool's budget is closed while the Deployments scale down, so
	// that no action is chosen on a plan of a half-scaled workload (the
	// first plan after the first scale patch saw 40 pods' worth of
	// nodes with some pods gone); it opens once the 10 pods are settled.
	d.setBudgets(t, pool, v1alpha1.Budget{Nodes: "0"})
	scaled := time.Now()
	for i := range 4 {
		if i < 3 {
			d.scale(t, ns, fmt.Sprintf("web-%d", i), 2)
		} else {
			d.scale(t, ns, fmt.Sprintf("web-%d", i), 4)
		}
	}
	d.settled(t, ns, 10, 60*time.Second)
	// The operator's cache may lag the test's view by a moment.
	time.Sleep(2 * time.Second)
	d.setBudgets(t, pool, v1alpha1.Budget{Nodes: "100%"})
	d.quiet(t, pool, 12*time.Second, 3*time.Minute)
	pods := d.settled(t, ns, 10, 60*time.Second)
	after, nodesAfter := d.cost(t, pool)
	took := time.Since(scaled)

	// The estimate is what the plan whose actions were chosen first
	// expected the cluster to cost after them (current price less the
	// saving): the last plan logged before the first action chosen.
	var estimate float64
	found := false
	if chosen := d.recordsSince("disruption action chosen; validating", scaled); len(chosen) > 0 {
		first := recordTime(chosen[0])
		for _, r := range d.recordsSince("consolidation planned", scaled) {
			if actions, _ := r["actions"].(float64); actions > 0 && !recordTime(r).After(first) {
				cur, _ := r["currentPricePerHour"].(float64)
				saving, _ := r["savingPerHour"].(float64)
				estimate, found = cur-saving, true
			}
		}
	}
	done := d.recordsSince("disruption action carried out", scaled)
	kinds := map[string]int{}
	for _, r := range done {
		kinds[fmt.Sprint(r["action"])]++
	}
	t.Logf("10 pods: %d → %d nodes, $%.4f/h → $%.4f/h (−$%.4f/h, −%.0f%%) in %s; actions %v; all %d pods Running",
		nodesBefore, nodesAfter, before, after, before-after, 100*(before-after)/before, took.Round(time.Second), kinds, len(pods))
	if !found {
		t.Fatalf("no consolidation plan with actions chosen logged after the scale-down")
	}
	dev := (after - estimate) / estimate
	t.Logf("planner estimate after the scale-down: $%.4f/h; realised $%.4f/h (%+.1f%%)", estimate, after, 100*dev)
	if after >= before {
		t.Errorf("cost did not drop: $%.4f/h → $%.4f/h", before, after)
	}
	if dev > 0.05 || dev < -0.05 {
		t.Errorf("realised cost $%.4f/h is %+.1f%% off the planner's estimate $%.4f/h; want within 5%%", after, 100*dev, estimate)
	}
}

func (d *disruptionEnv) testPDB(t *testing.T) {
	ctx := context.Background()
	const pool = "pdb"
	d.simClass(t)
	d.pool(t, pool, "sim", v1alpha1.Disruption{ConsolidateAfter: "0s", Budgets: []v1alpha1.Budget{{Nodes: "100%"}}}, m5()...)
	ns := d.namespace(t, "pdb")
	t.Cleanup(func() { d.cleanup(t, ns, pool) })
	d.deploy(t, ns, "filler", 1, "5", "1Gi", pool)
	d.deploy(t, ns, "guarded", 2, "250m", "256Mi", pool)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "guarded"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}},
		},
	}
	if err := d.c.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	d.settled(t, ns, 3, 90*time.Second)
	// Without the filler the node is mostly idle: a smaller node would do.
	if err := d.Client().AppsV1().Deployments(ns).Delete(ctx, "filler", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := d.settled(t, ns, 2, 30*time.Second)
	before := podUIDs(pods)
	node := pods[0].Spec.NodeName

	var touched atomic.Int32
	stop := sample(100*time.Millisecond, func() {
		var n corev1.Node
		if d.c.Get(ctx, client.ObjectKey{Name: node}, &n) == nil && disruptingNode(&n) {
			touched.Add(1)
		}
	})
	var blocked []string
	_ = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		blocked = d.nodeEvents(t, node, "DisruptionBlocked")
		return slices.ContainsFunc(blocked, func(s string) bool { return strings.Contains(s, "PDB") }), nil
	})
	time.Sleep(8 * time.Second) // several more rounds: still nothing
	stop()
	after := podUIDs(d.settled(t, ns, 2, 10*time.Second))
	t.Logf("node %s events: %q", node, blocked)
	if !slices.ContainsFunc(blocked, func(s string) bool { return strings.Contains(s, "PDB "+ns+"/guarded allows 0 disruptions") }) {
		t.Errorf("no DisruptionBlocked event naming the PDB on node %s: %q", node, blocked)
	}
	if touched.Load() > 0 {
		t.Errorf("node %s was tainted or cordoned in %d samples", node, touched.Load())
	}
	for uid, n := range before {
		if after[uid] != n {
			t.Errorf("pod %s moved or was evicted", uid)
		}
	}

	// The PDB was what held it: without it, the node is replaced.
	if err := d.c.Delete(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d.waitNodeGone(t, node, "the PDB was deleted")
	pods = d.settled(t, ns, 2, 60*time.Second)
	t.Logf("PDB deleted: node %s replaced in %s; guarded pods now on %s", node, time.Since(start).Round(time.Millisecond), pods[0].Spec.NodeName)
}

func (d *disruptionEnv) testBudgetOne(t *testing.T) {
	ctx := context.Background()
	const pool = "budget"
	d.simClass(t)
	d.pool(t, pool, "sim", v1alpha1.Disruption{ConsolidateAfter: "0s", Budgets: []v1alpha1.Budget{{Nodes: "1"}}},
		req(v1alpha1.LabelCapacityType, "on-demand"), req(solver.LabelInstanceType, "m5.xlarge"), req(solver.LabelZone, "us-east-1a"))
	ns := d.namespace(t, "budget")
	t.Cleanup(func() { d.cleanup(t, ns, pool) })
	const nodes = 4
	d.deploy(t, ns, "wide", nodes, "3", "1Gi", pool) // one pod per m5.xlarge
	d.settled(t, ns, nodes, 90*time.Second)
	if n := len(d.poolNodes(t, pool)); n != nodes {
		t.Fatalf("%d nodes, want %d", n, nodes)
	}

	var maxDisrupting, samples atomic.Int32
	stop := sample(50*time.Millisecond, func() {
		k := int32(0)
		for _, n := range d.poolNodes(t, pool) {
			if disruptingNode(&n) {
				k++
			}
		}
		samples.Add(1)
		if k > maxDisrupting.Load() {
			maxDisrupting.Store(k)
		}
	})
	start := time.Now()
	d.scale(t, ns, "wide", 0)
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return len(d.poolNodes(t, pool)) == 0, nil
	})
	stop()
	if err != nil {
		t.Fatalf("%d nodes left 2 min after the scale-down", len(d.poolNodes(t, pool)))
	}
	t.Logf("%d empty nodes removed one at a time in %s; at most %d disrupting at once over %d samples", nodes,
		time.Since(start).Round(time.Millisecond), maxDisrupting.Load(), samples.Load())
	if maxDisrupting.Load() > 1 {
		t.Errorf("%d nodes disrupting at once; the budget allows 1", maxDisrupting.Load())
	}
}

func (d *disruptionEnv) testClosedWindow(t *testing.T) {
	ctx := context.Background()
	const pool = "window"
	// A budget of 0 nodes active from the start of the previous minute for
	// two minutes (UTC): closed now, open at the next minute. With less
	// than 15 s left, the window is moved a minute on.
	now := time.Now().UTC()
	start := now.Truncate(time.Minute).Add(-time.Minute)
	if start.Add(2*time.Minute).Sub(now) < 15*time.Second {
		start = start.Add(time.Minute)
	}
	opens := start.Add(2 * time.Minute)
	schedule := fmt.Sprintf("%d %d * * *", start.Minute(), start.Hour())
	d.simClass(t)
	d.pool(t, pool, "sim", v1alpha1.Disruption{ConsolidateAfter: "0s", Budgets: []v1alpha1.Budget{
		{Nodes: "0", Schedule: ptr.To(schedule), Duration: &metav1.Duration{Duration: 2 * time.Minute}},
	}}, req(v1alpha1.LabelCapacityType, "on-demand"), req(solver.LabelInstanceType, "m5.xlarge"), req(solver.LabelZone, "us-east-1a"))
	ns := d.namespace(t, "window")
	t.Cleanup(func() { d.cleanup(t, ns, pool) })
	d.deploy(t, ns, "one", 1, "3", "1Gi", pool)
	d.settled(t, ns, 1, 90*time.Second)
	node := d.poolNodes(t, pool)[0].Name
	d.scale(t, ns, "one", 0)
	emptied := time.Now()
	t.Logf("node %s empty at %s; budget nodes 0 on schedule %q for 2m: disruption blocked until %s", node, emptied.UTC().Format(time.TimeOnly),
		schedule, opens.Format(time.TimeOnly))

	var gone time.Time
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Until(opens)+30*time.Second, true, func(ctx context.Context) (bool, error) {
		var n corev1.Node
		err := d.c.Get(ctx, client.ObjectKey{Name: node}, &n)
		if client.IgnoreNotFound(err) == nil && err != nil {
			gone = time.Now()
			return true, nil
		}
		if err == nil && disruptingNode(&n) && time.Now().Before(opens) {
			t.Errorf("node %s disrupted at %s, before the window opened at %s", node, time.Now().UTC().Format(time.TimeOnly), opens.Format(time.TimeOnly))
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("node %s still there 30 s after the window opened", node)
	}
	blocked := d.nodeEvents(t, node, "DisruptionBlocked")
	t.Logf("node %s kept %s while the budget was closed, removed %s after it opened; events: %q", node,
		opens.Sub(emptied).Round(time.Second), gone.Sub(opens).Round(time.Millisecond), blocked)
	if gone.Before(opens) {
		t.Errorf("node removed at %s, before the window opened at %s", gone.UTC().Format(time.TimeOnly), opens.Format(time.TimeOnly))
	}
	if !slices.ContainsFunc(blocked, func(s string) bool { return strings.Contains(s, "budget") }) {
		t.Errorf("no DisruptionBlocked event naming the budget: %q", blocked)
	}
}

func (d *disruptionEnv) testReplacementICE(t *testing.T) {
	ctx := context.Background()
	const pool = "ice"
	class := &v1alpha1.SimNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "sim-ice"}}
	if err := d.c.Create(ctx, class); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.c.Delete(context.Background(), class) })
	d.pool(t, pool, "sim-ice", v1alpha1.Disruption{ConsolidateAfter: "0s", Budgets: []v1alpha1.Budget{{Nodes: "100%"}}}, m5()...)
	ns := d.namespace(t, "ice")
	t.Cleanup(func() { d.cleanup(t, ns, pool) })
	d.deploy(t, ns, "filler", 1, "5", "1Gi", pool)
	d.deploy(t, ns, "keep", 2, "250m", "256Mi", pool)
	d.settled(t, ns, 3, 90*time.Second)
	// From now on the smaller types cannot launch.
	if err := d.c.Get(ctx, client.ObjectKeyFromObject(class), class); err != nil {
		t.Fatal(err)
	}
	orig := class.DeepCopy()
	class.Spec.InsufficientCapacity = []v1alpha1.SimOffering{{InstanceType: "m5.large"}, {InstanceType: "m5.xlarge"}}
	if err := d.c.Patch(ctx, class, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := d.Client().AppsV1().Deployments(ns).Delete(ctx, "filler", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := d.settled(t, ns, 2, 30*time.Second)
	before := podUIDs(pods)
	node := pods[0].Spec.NodeName

	// Wait for the rollbacks: one per offering tried, then nothing.
	var rolled []string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		rolled = d.nodeEvents(t, node, "DisruptionRolledBack")
		return len(rolled) > 0, nil
	})
	if err != nil {
		t.Fatalf("no DisruptionRolledBack event on %s within 60 s", node)
	}
	d.quiet(t, pool, 15*time.Second, 90*time.Second)
	rolled = d.nodeEvents(t, node, "DisruptionRolledBack")
	var n corev1.Node
	if err := d.c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		t.Fatalf("node %s: %v", node, err)
	}
	after := podUIDs(d.settled(t, ns, 2, 10*time.Second))
	evicted := 0
	for _, r := range d.recordsSince("disruption action carried out", start) {
		if v, ok := r["evicted"].(float64); ok {
			evicted += int(v)
		}
	}
	t.Logf("node %s: %d rollback(s) in %s: %q", node, len(rolled), time.Since(start).Round(time.Second), rolled)
	if disruptingNode(&n) {
		t.Errorf("node %s is still tainted or cordoned: %v", node, n.Spec.Taints)
	}
	for uid, nn := range before {
		if after[uid] != nn {
			t.Errorf("pod %s was evicted or moved", uid)
		}
	}
	// A refused replacement's claim may still be finishing its finalizer.
	if claims := d.waitClaims(t, pool, 1); len(claims) != 1 {
		t.Errorf("NodeClaims in the pool %v, want only the old node's", names(claims))
	}
	if evicted > 0 {
		t.Errorf("%d pods evicted", evicted)
	}
	if !slices.ContainsFunc(rolled, func(s string) bool { return strings.Contains(s, "insufficient capacity") }) {
		t.Errorf("no rollback event says the replacement ran out of capacity: %q", rolled)
	}
}

// churnPods is one pool's record of consolidation over the flaps.
type churnPods struct {
	actions      map[string]int // by action/reason
	disruptions  int            // actions that evicted pods
	replacements int            // Replace and Merge actions (they launch nodes)
	evicted      int
	saved        float64
	// shared are the actions that took nodes of another pool too: the
	// planner may merge nodes of several pools in one action, and then
	// holds the whole action to the strictest pool's minimum.
	shared int
	// ownReplacements are the replacements that took this pool's nodes
	// only.
	ownReplacements int
	// belowDefault are the actions that evicted pods and saved less than
	// the default minimum for the pods they evicted.
	belowDefault []string
	lines        []string
}

// defaultMinSaving is the minimum saving the default rule asks of an action
// evicting pods: $0.01/h plus $0.001/h per pod.
func defaultMinSaving(evicted int) float64 {
	return solver.DefaultMinSaving + solver.DefaultMinSavingPerPod*float64(evicted)
}

// churnRecords sums the operator's "disruption action carried out" records
// since start that took nodes of the pool (nodes are named after their
// pool).
func (d *disruptionEnv) churnRecords(pool string, since time.Time) churnPods {
	out := churnPods{actions: map[string]int{}}
	for _, r := range d.recordsSince("disruption action carried out", since) {
		nodes, _ := r["nodes"].([]any)
		mine, others := 0, 0
		for _, n := range nodes {
			if strings.HasPrefix(fmt.Sprint(n), pool+"-") {
				mine++
			} else {
				others++
			}
		}
		if mine == 0 {
			continue
		}
		action := fmt.Sprint(r["action"])
		out.actions[action+"/"+fmt.Sprint(r["reason"])]++
		evicted, _ := r["evicted"].(float64)
		saving, _ := r["savingPerHour"].(float64)
		out.evicted += int(evicted)
		out.saved += saving
		if others > 0 {
			out.shared++
		}
		if evicted > 0 {
			out.disruptions++
			if saving < defaultMinSaving(int(evicted))-1e-9 {
				out.belowDefault = append(out.belowDefault, fmt.Sprintf("%s of %v: $%.4f/h for %d pods", action, nodes, saving, int(evicted)))
			}
		}
		if action == solver.ActionReplace || action == solver.ActionMerge {
			out.replacements++
			if others == 0 {
				out.ownReplacements++
			}
		}
		out.lines = append(out.lines, fmt.Sprintf("+%s %s %v evicted %d saving $%.4f/h", recordTime(r).Sub(since).Round(time.Second), action, nodes, int(evicted), saving))
	}
	return out
}

// poolState describes a pool's nodes: instance type and pods each, "*" for
// a node being disrupted.
func (d *disruptionEnv) poolState(t *testing.T, pool string) string {
	t.Helper()
	pods, err := d.Client().CoreV1().Pods(pool).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	on := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			on[p.Spec.NodeName]++
		}
	}
	var out []string
	for _, n := range d.poolNodes(t, pool) {
		s := fmt.Sprintf("%s:%d", strings.TrimPrefix(n.Labels[solver.LabelInstanceType], "t3."), on[n.Name])
		if disruptingNode(&n) {
			s += "*"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return fmt.Sprintf("[%s]+%d pending", strings.Join(out, " "), on[""])
}

// testChurn flaps one Deployment between 4 and 1 pods 15 times, a
// "minute" being 8 s (consolidateAfter 2s, so consolidation gets its
// chance every flap), in two pools side by side in the same operator: one
// Karpenter-like (minSaving perHour "0": any saving is worth a disruption)
// and one with the default rule ($0.01/h + $0.001/h per evicted pod). The
// pools offer on-demand t3.micro, small, medium and large in one zone; a
// 300Mi pod fills a t3.micro ($0.0104/h), four fill a t3.small
// ($0.0208/h). After each scale-down the pod left on a t3.small could move
// to a t3.micro, and after each scale-up a t3.micro's pod could join the
// new t3.small: each saves $0.0104/h for one evicted pod, which the
// default rule refuses ($0.011/h) and the Karpenter-like pool takes. The
// Karpenter-like pool must replace (else the scenario proves nothing), the
// default pool must disrupt strictly less, and every disruption that took
// a node of the default pool must have saved the default minimum for the
// pods it evicted. A third pool, Karpenter-like but with
// consolidationPolicy Balanced, flaps beside them: its replacement count is
// printed beside the WhenEmptyOrUnderutilized pool's (issue 17's churn
// figure) and it may not disrupt more than that pool. No pod is lost: every
// Deployment ends with every pod Running.
func (d *disruptionEnv) testChurn(t *testing.T) {
	ctx := context.Background()
	const (
		karp, dflt = "churn-karp", "churn-default"
		bal        = "churn-balanced"
		flaps      = 15
		minute     = 8 * time.Second
		after      = "2s"
		high, low  = 4, 1
	)
	d.simClass(t)
	t3 := []v1alpha1.NodeSelectorRequirement{
		req(v1alpha1.LabelCapacityType, "on-demand"),
		req(solver.LabelInstanceType, "t3.micro", "t3.small", "t3.medium", "t3.large"),
		req(solver.LabelZone, "us-east-1a"),
	}
	budgets := []v1alpha1.Budget{{Nodes: "100%"}}
	d.pool(t, karp, "sim", v1alpha1.Disruption{ConsolidateAfter: after, Budgets: budgets, MinSaving: &v1alpha1.MinSaving{PerHour: "0"}}, t3...)
	d.pool(t, dflt, "sim", v1alpha1.Disruption{ConsolidateAfter: after, Budgets: budgets}, t3...)
	d.pool(t, bal, "sim", v1alpha1.Disruption{ConsolidationPolicy: v1alpha1.ConsolidationPolicyBalanced, ConsolidateAfter: after, Budgets: budgets,
		MinSaving: &v1alpha1.MinSaving{PerHour: "0"}}, t3...)
	nsK, nsD, nsB := d.namespace(t, karp), d.namespace(t, dflt), d.namespace(t, bal)
	t.Cleanup(func() {
		for _, ns := range []string{nsD, nsB} {
			_ = d.c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
		d.cleanup(t, nsK, karp, dflt, bal)
	})
	for _, p := range []string{karp, dflt, bal} {
		d.deploy(t, p, "flap", high, "10m", "300Mi", p)
	}
	d.settled(t, nsK, high, 90*time.Second)
	d.settled(t, nsD, high, 90*time.Second)
	d.settled(t, nsB, high, 90*time.Second)
	d.quiet(t, karp, 3*time.Second, 60*time.Second)
	d.quiet(t, dflt, time.Second, 60*time.Second)
	d.quiet(t, bal, time.Second, 60*time.Second)
	start := time.Now()
	costK, nodesK := d.cost(t, karp)
	costD, nodesD := d.cost(t, dflt)
	t.Logf("%d pods each: %s %d node(s) $%.4f/h, %s %d node(s) $%.4f/h", high, karp, nodesK, costK, dflt, nodesD, costD)

	sizes := [2]int32{low, high}
	for i := range flaps {
		for _, p := range []string{karp, dflt, bal} {
			d.scale(t, p, "flap", sizes[i%2])
		}
		time.Sleep(minute)
		t.Logf("flap %2d, %2d pods: %s %s | %s %s", i+1, sizes[i%2], karp, d.poolState(t, karp), dflt, d.poolState(t, dflt))
	}
	last := int(sizes[(flaps-1)%2])
	d.quiet(t, karp, 6*time.Second, time.Minute)
	d.quiet(t, dflt, 1*time.Second, time.Minute)
	podsK := d.settled(t, nsK, last, 60*time.Second)
	podsD := d.settled(t, nsD, last, 30*time.Second)
	d.quiet(t, bal, 1*time.Second, time.Minute)
	podsB := d.settled(t, nsB, last, 30*time.Second)
	k, df, b := d.churnRecords(karp, start), d.churnRecords(dflt, start), d.churnRecords(bal, start)
	costB, nodesB := d.cost(t, bal)
	costK, nodesK = d.cost(t, karp)
	costD, nodesD = d.cost(t, dflt)

	// The default pool's refusals, as its nodes' events give them.
	var refusals []string
	evs, err := d.Client().CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=DisruptionBlocked"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs.Items {
		if strings.HasPrefix(ev.InvolvedObject.Name, dflt+"-") && strings.Contains(ev.Message, "minimum") && !slices.Contains(refusals, ev.Message) {
			refusals = append(refusals, ev.Message)
		}
	}
	t.Logf("%d flaps (%d↔%d pods every %s, consolidateAfter %s) in %s:", flaps, high, low, minute, after, time.Since(start).Round(time.Second))
	for _, r := range []struct {
		pool string
		c    churnPods
		cost float64
		n    int
	}{{karp + " (minSaving 0, Karpenter-like)", k, costK, nodesK}, {dflt + " (default minimum)", df, costD, nodesD},
		{bal + " (Balanced, minSaving 0)", b, costB, nodesB}} {
		t.Logf("  %s: %d disruptions evicting pods, %d replacements, %d pods evicted, $%.4f/h saved in all; actions %v (%d shared with the other pool); %d below the default minimum %q; ends on %d node(s) $%.4f/h",
			r.pool, r.c.disruptions, r.c.replacements, r.c.evicted, r.c.saved, r.c.actions, r.c.shared, len(r.c.belowDefault), r.c.belowDefault, r.n, r.cost)
		for _, l := range r.c.lines {
			t.Logf("    %s", l)
		}
	}
	t.Logf("  %s refusals for the minimum: %q", dflt, refusals)
	t.Logf("  all %d + %d + %d pods Running", len(podsK), len(podsD), len(podsB))
	t.Logf("churn: replacements %d under Balanced, %d under WhenEmptyOrUnderutilized (both minSaving 0)", b.replacements, k.replacements)
	if b.disruptions > k.disruptions {
		t.Errorf("the Balanced pool made %d disruptions, more than WhenEmptyOrUnderutilized's %d", b.disruptions, k.disruptions)
	}
	if k.ownReplacements < 1 {
		t.Errorf("the Karpenter-like pool made %d replacements of its own nodes alone: the scenario proves nothing", k.ownReplacements)
	}
	if df.disruptions >= k.disruptions || df.replacements >= max(k.replacements, 1) {
		t.Errorf("the default pool made %d disruptions (%d replacements), the Karpenter-like pool %d (%d): the minimum saving did not reduce churn",
			df.disruptions, df.replacements, k.disruptions, k.replacements)
	}
	if len(df.belowDefault) > 0 {
		t.Errorf("the default pool disrupted below its minimum: %q", df.belowDefault)
	}
}

func (d *disruptionEnv) testDrift(t *testing.T) {
	ctx := context.Background()
	const pool = "drift"
	d.simClass(t)
	d.pool(t, pool, "sim", v1alpha1.Disruption{ConsolidateAfter: "0s", Budgets: []v1alpha1.Budget{{Nodes: "100%"}}},
		req(v1alpha1.LabelCapacityType, "on-demand"), req(solver.LabelInstanceType, "m5.xlarge"), req(solver.LabelZone, "us-east-1a"))
	ns := d.namespace(t, "drift")
	t.Cleanup(func() { d.cleanup(t, ns, pool) })
	d.deploy(t, ns, "app", 2, "1", "1Gi", pool)
	pods := d.settled(t, ns, 2, 90*time.Second)
	old := pods[0].Spec.NodeName

	// The pool now wants m5.2xlarge: the m5.xlarge node drifted.
	var np v1alpha1.NodePool
	if err := d.c.Get(ctx, client.ObjectKey{Name: pool}, &np); err != nil {
		t.Fatal(err)
	}
	orig := np.DeepCopy()
	np.Spec.Template.Spec.Requirements[1].Values = []string{"m5.2xlarge"}
	if err := d.c.Patch(ctx, &np, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d.waitNodeGone(t, old, "the pool changed")
	pods = d.settled(t, ns, 2, 60*time.Second)
	var n corev1.Node
	if err := d.c.Get(ctx, client.ObjectKey{Name: pods[0].Spec.NodeName}, &n); err != nil {
		t.Fatal(err)
	}
	disrupting := d.nodeEvents(t, old, "Disrupting")
	t.Logf("drifted node %s replaced by %s (%s) in %s; events: %q", old, n.Name, n.Labels[solver.LabelInstanceType],
		time.Since(start).Round(time.Millisecond), disrupting)
	if n.Labels[solver.LabelInstanceType] != "m5.2xlarge" {
		t.Errorf("pods run on a %s, want the pool's new m5.2xlarge", n.Labels[solver.LabelInstanceType])
	}
	if !slices.ContainsFunc(disrupting, func(s string) bool { return strings.Contains(s, "Drifted") }) {
		t.Errorf("no Disrupting event for drift on %s: %q", old, disrupting)
	}
}

// testNodeClassDrift edits a SimNodeClass. A change the class's hash does
// not cover (labels, a setting of the simulated cloud) and a NodePool label
// replace nothing; a new tag drifts the node (its NodeClaim's Drifted
// condition), which explain shows held back by a zero Drifted budget and
// the operator replaces once the budget allows.
func (d *disruptionEnv) testNodeClassDrift(t *testing.T) {
	ctx := context.Background()
	const pool, class = "classdrift", "classdrift"
	snc := &v1alpha1.SimNodeClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: v1alpha1.SimNodeClassSpec{Tags: map[string]string{"team": "platform"}}}
	if err := d.c.Create(ctx, snc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.c.Delete(context.Background(), snc) })
	d.pool(t, pool, class, v1alpha1.Disruption{ConsolidateAfter: "0s", Budgets: []v1alpha1.Budget{
		{Nodes: "0", Reasons: []v1alpha1.DisruptionReason{v1alpha1.DisruptionReasonDrifted}}, {Nodes: "100%"}}},
		req(v1alpha1.LabelCapacityType, "on-demand"), req(solver.LabelInstanceType, "m5.xlarge"), req(solver.LabelZone, "us-east-1a"))
	ns := d.namespace(t, "classdrift")
	t.Cleanup(func() { d.cleanup(t, ns, pool) })
	d.deploy(t, ns, "app", 2, "1", "1Gi", pool)
	pods := d.settled(t, ns, 2, 90*time.Second)
	old := pods[0].Spec.NodeName
	claimOf := func(node string) *v1alpha1.NodeClaim {
		for _, c := range d.claims(t, pool) {
			if c.Status.NodeName == node {
				return &c
			}
		}
		t.Fatalf("no NodeClaim of pool %s for node %s", pool, node)
		return nil
	}
	launchedWith := claimOf(old).Annotations[v1alpha1.AnnotationNodeClassHash]
	if launchedWith != snc.Spec.Hash() {
		t.Fatalf("NodeClaim of %s stamped with node class hash %q, want %q", old, launchedWith, snc.Spec.Hash())
	}
	edit := func(change func(*v1alpha1.SimNodeClass)) {
		t.Helper()
		var cur v1alpha1.SimNodeClass
		if err := d.c.Get(ctx, client.ObjectKey{Name: class}, &cur); err != nil {
			t.Fatal(err)
		}
		orig := cur.DeepCopy()
		change(&cur)
		if err := d.c.Patch(ctx, &cur, client.MergeFrom(orig)); err != nil {
			t.Fatal(err)
		}
	}

	// Edits the hash does not cover: nothing drifts, nothing is replaced.
	edit(func(s *v1alpha1.SimNodeClass) {
		s.Labels = map[string]string{"owner": "platform"}
		s.Spec.InsufficientCapacity = []v1alpha1.SimOffering{{InstanceType: "m5.large", Zone: "us-east-1c"}}
	})
	var np v1alpha1.NodePool
	if err := d.c.Get(ctx, client.ObjectKey{Name: pool}, &np); err != nil {
		t.Fatal(err)
	}
	orig := np.DeepCopy()
	np.Labels = map[string]string{"owner": "platform"}
	if err := d.c.Patch(ctx, &np, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	// Two disruption rounds (2 s debounce, 2 s validation) pass.
	d.quiet(t, pool, 5*time.Second, 30*time.Second)
	if c := claimOf(old); meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDrifted) != nil {
		t.Fatalf("a metadata-only edit drifted %s: %+v", c.Name, c.Status.Conditions)
	}

	// A new tag: the NodeClaim drifts.
	start := time.Now()
	edit(func(s *v1alpha1.SimNodeClass) { s.Spec.Tags["team"] = "web" })
	const why = "SimNodeClass classdrift's launch settings changed since the node was launched"
	var drifted *metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		drifted = meta.FindStatusCondition(claimOf(old).Status.Conditions, v1alpha1.ConditionDrifted)
		return drifted != nil && drifted.Status == metav1.ConditionTrue, nil
	})
	if err != nil || !strings.Contains(drifted.Message, why) {
		t.Fatalf("Drifted condition %+v 20 s after the tag changed; want True with %q", drifted, why)
	}
	t.Logf("NodeClaim of %s Drifted %s after the edit: %s", old, time.Since(start).Round(time.Millisecond), drifted.Message)

	// Held back by the budget, as explain says.
	v := explainVerdict(t, d.opEnv, old)
	if !strings.Contains(v.Reason, why) || !strings.Contains(v.Reason, "Drifted") {
		t.Fatalf("explain --consolidation on %s: %+v; want the drift held back by the Drifted budget", old, v)
	}
	t.Logf("explain --consolidation: %s %s: %s", old, v.Verdict, v.Reason)

	// The budget opens: the node is replaced, its pods end Running.
	if err := d.c.Get(ctx, client.ObjectKey{Name: pool}, &np); err != nil {
		t.Fatal(err)
	}
	orig = np.DeepCopy()
	np.Spec.Disruption.Budgets = []v1alpha1.Budget{{Nodes: "100%"}}
	if err := d.c.Patch(ctx, &np, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	d.waitNodeGone(t, old, "the Drifted budget opened")
	pods = d.settled(t, ns, 2, 60*time.Second)
	disrupting := d.nodeEvents(t, old, "Disrupting")
	t.Logf("drifted node %s replaced by %s in %s; events: %q", old, pods[0].Spec.NodeName, time.Since(start).Round(time.Millisecond), disrupting)
	if !slices.ContainsFunc(disrupting, func(s string) bool { return strings.Contains(s, "(Drifted)") && strings.Contains(s, why) }) {
		t.Errorf("no Disrupting event on %s naming the drift: %q", old, disrupting)
	}
	now := claimOf(pods[0].Spec.NodeName)
	if h := now.Annotations[v1alpha1.AnnotationNodeClassHash]; h == launchedWith || h == "" {
		t.Errorf("the replacement's NodeClaim has node class hash %q; want the edited class's, not %q", h, launchedWith)
	}
	if c := meta.FindStatusCondition(now.Status.Conditions, v1alpha1.ConditionDrifted); c != nil {
		t.Errorf("the replacement's NodeClaim has a Drifted condition: %+v", c)
	}
}

func (d *disruptionEnv) testExpiry(t *testing.T) {
	ctx := context.Background()
	const pool = "expiry"
	d.simClass(t)
	// A budget of no node: expiry is forceful, as in Karpenter, and waits
	// on no budget.
	d.pool(t, pool, "sim", v1alpha1.Disruption{ConsolidateAfter: "0s", Budgets: []v1alpha1.Budget{{Nodes: "0"}}},
		req(v1alpha1.LabelCapacityType, "on-demand"), req(solver.LabelInstanceType, "m5.xlarge"), req(solver.LabelZone, "us-east-1a"))
	var np v1alpha1.NodePool
	if err := d.c.Get(ctx, client.ObjectKey{Name: pool}, &np); err != nil {
		t.Fatal(err)
	}
	orig := np.DeepCopy()
	np.Spec.Template.Spec.ExpireAfter = "15s"
	if err := d.c.Patch(ctx, &np, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	ns := d.namespace(t, "expiry")
	t.Cleanup(func() { d.cleanup(t, ns, pool) })
	d.deploy(t, ns, "app", 2, "1", "1Gi", pool)
	pods := d.settled(t, ns, 2, 90*time.Second)
	old := pods[0].Spec.NodeName
	var claim v1alpha1.NodeClaim
	for _, c := range d.claims(t, pool) {
		if c.Status.NodeName == old {
			claim = c
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		var n corev1.Node
		return client.IgnoreNotFound(d.c.Get(ctx, client.ObjectKey{Name: old}, &n)) == nil && n.Name == "", nil
	})
	if err != nil {
		t.Fatalf("node %s still there 60 s after it was launched with expireAfter 15s", old)
	}
	age := time.Since(claim.CreationTimestamp.Time)
	pods = d.settled(t, ns, 2, 60*time.Second)
	disrupting := d.nodeEvents(t, old, "Disrupting")
	t.Logf("node %s (expireAfter 15s, budget 0 nodes) replaced by %s, %s after its NodeClaim was created; events: %q", old, pods[0].Spec.NodeName,
		age.Round(time.Second), disrupting)
	if !slices.ContainsFunc(disrupting, func(s string) bool { return strings.Contains(s, "(Expired)") }) {
		t.Errorf("no Disrupting event for expiration on %s: %q", old, disrupting)
	}
	// The replacements expire too; stop that before the cleanup.
	if err := d.Client().AppsV1().Deployments(ns).Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (d *disruptionEnv) testMetrics(t *testing.T) {
	out := scrape(t, d.metrics)
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "rightsize_disruption_") {
			lines = append(lines, l)
		}
	}
	t.Logf("disruption metrics:\n%s", strings.Join(lines, "\n"))
	for _, want := range []string{
		`rightsize_disruption_actions_total{action="Merge",nodepool="repack",reason="Underutilized"}`,
		`rightsize_disruption_actions_total{action="Delete",nodepool="budget",reason="Empty"} 4`,
		`rightsize_disruption_actions_total{action="Replace",nodepool="drift",reason="Drifted"} 1`,
		`rightsize_disruption_saving_per_hour_dollars_total{nodepool="repack"}`,
		`rightsize_disruption_pods_evicted_total{nodepool="repack"}`,
		`rightsize_disruption_actions_rolled_back_total{action="Replace",nodepool="ice",reason="replacement_failed"} 2`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %s in /metrics", want)
		}
	}
}

// sample calls f every interval, in the background, until the stop it
// returns is called; stop returns once the last call has ended.
func sample(every time.Duration, f func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(every):
			}
			f()
		}
	})
	return func() { close(done); wg.Wait() }
}
