package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

// TestCapacityBuffer is issue 32's must-show for CapacityBuffers: a buffer
// of 10 × (1 CPU, 2Gi) gets room (NodeClaims, Ready nodes with free room
// for 10 such pods) soon after its creation with no pod created; 10 real
// pods of that shape then go Running with no new NodeClaim, faster than 10
// pods of the same shape in a pool without a buffer (p95 both ways, same
// run); and the buffer's room is then planned again.
func TestCapacityBuffer(t *testing.T) {
	const (
		batchIdle  = time.Second
		roomTarget = 5 * time.Second // the 1 s buffer poll + batch idle + decision, with slack for a loaded machine
		pods       = 10
	)
	e := startOpEnv(t)
	ctx := context.Background()
	ns := e.namespace(t, "buffer")
	e.nodePool(t, "warm", 0, nil, req(v1alpha1.LabelCapacityType, "on-demand"), req("karpenter.k8s.aws/instance-family", "c6i"))
	e.nodePool(t, "cold", 0, nil, req(v1alpha1.LabelCapacityType, "on-demand"), req("karpenter.k8s.aws/instance-family", "c6i"))
	// A tainted system node, as in testLatency: with no node at all the
	// scheduler retries on its backoff timer rather than on node events.
	system := testenv.Node{Name: "system", Taints: []corev1.Taint{{Key: "CriticalAddonsOnly", Value: "true", Effect: corev1.TaintEffectNoSchedule}}}
	if _, err := e.AddNode(ctx, system); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: system.Name}})
	})
	if err := e.WaitNodeReady(ctx, system.Name, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	metricsAddr := freePort(t)
	op := e.startOperator(t, "operator", nil, "--leader-election-id", "e2e-buffer", "--batch-idle", batchIdle.String(), "--metrics-bind-address", metricsAddr)
	t.Cleanup(func() { e.cleanup(t, ns, "warm", "cold") })
	op.waitLog(t, "provisioner started", 30*time.Second)

	// The buffer: a PodTemplate of 1 CPU, 2Gi on the warm pool, 10 chunks.
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}
	warm := map[string]string{v1alpha1.LabelNodePool: "warm"}
	tmpl := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "burst"}, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		NodeSelector: warm, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Requests: rl, Limits: rl}}},
	}}}
	if err := e.c.Create(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	buffer := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
		"metadata": map[string]any{"name": "headroom", "namespace": ns},
		"spec":     map[string]any{"podTemplateRef": map[string]any{"name": "burst"}, "replicas": int64(pods)},
	}}
	created := time.Now()
	if err := e.c.Create(ctx, buffer); err != nil {
		t.Fatal(err)
	}
	var toClaim time.Duration
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		if toClaim == 0 && len(e.claims(t, "warm")) > 0 {
			toClaim = time.Since(created)
		}
		return roomFor(t, e, "warm", rl) >= pods, nil
	})
	toRoom := time.Since(created)
	if err != nil {
		t.Fatalf("room for %d pods of the buffer's shape after %s: %d", pods, toRoom, roomFor(t, e, "warm", rl))
	}
	warmClaims := claimNames(e.claims(t, "warm"))
	t.Logf("buffer: first NodeClaim %s after the buffer's creation; room for %d pods on Ready nodes after %s; %d NodeClaim(s): %v",
		toClaim.Round(time.Millisecond), pods, toRoom.Round(time.Millisecond), len(warmClaims), warmClaims)
	if toClaim > roomTarget {
		t.Errorf("the buffer's first NodeClaim came %s after its creation, beyond %s", toClaim.Round(time.Millisecond), roomTarget)
	}
	var list corev1.PodList
	if err := e.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("the buffer created %d pods; it must create none", len(list.Items))
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(buffer), buffer); err != nil {
			return false, nil
		}
		r, _, _ := unstructured.NestedInt64(buffer.Object, "status", "replicas")
		return r == pods, nil
	})
	if err != nil {
		t.Errorf("status.replicas not %d: status %v", pods, buffer.Object["status"])
	}

	placedMetric := fmt.Sprintf(`rightsize_buffer_replicas{name="headroom",namespace=%q,state="placed"} %d`, ns, pods)
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		return strings.Contains(scrape(t, metricsAddr), placedMetric), nil
	})
	if err != nil {
		t.Errorf("the metrics lack %s", placedMetric)
	}

	// Live explain shows the buffer's room on the nodes that hold it.
	r := plugin(t, e.Kubeconfig, "explain", "-o", "json")
	if r.err != nil {
		t.Fatalf("explain: %v\n%s", r.err, r.stderr)
	}
	var got struct {
		Buffers []struct {
			Namespace, Name  string
			Replicas, Placed int
			PricePerHour     float64
			Nodes            []string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("explain -o json: %v\n%s", err, r.stdout)
	}
	if len(got.Buffers) != 1 || got.Buffers[0].Placed != pods || got.Buffers[0].PricePerHour <= 0 || len(got.Buffers[0].Nodes) == 0 {
		t.Errorf("live explain's buffers: %+v", got.Buffers)
	} else {
		t.Logf("live explain: buffer %s/%s holds room for %d of %d chunks on %v, $%.4f/h",
			got.Buffers[0].Namespace, got.Buffers[0].Name, got.Buffers[0].Placed, got.Buffers[0].Replicas, got.Buffers[0].Nodes, got.Buffers[0].PricePerHour)
	}

	// Without a buffer: 10 pods of the same shape on the cold pool.
	cold, _ := runPods(t, e, ns, "cold", pods, map[string]string{v1alpha1.LabelNodePool: "cold"})
	// With it: 10 on the warm pool, where the room is; no NodeClaim may be
	// created for them.
	before := claimNames(e.claims(t, "warm"))
	hot, hotBound := runPods(t, e, ns, "warm", pods, warm)
	p95Cold, p95Warm := p95(cold), p95(hot)
	t.Logf("10 pods of (1 CPU, 2Gi) created → Running: p95 %s with the buffer's room (max %s), %s without a buffer (max %s)",
		p95Warm.Round(time.Millisecond), slices.Max(hot).Round(time.Millisecond), p95Cold.Round(time.Millisecond), slices.Max(cold).Round(time.Millisecond))
	if p95Warm >= p95Cold {
		t.Errorf("with the buffer p95 %s, not less than %s without", p95Warm, p95Cold)
	}
	// The claims the warm pool had once the pods ran, less those the
	// refill created after they bound: read the claims' creation times.
	var newClaims []string
	for _, c := range e.claims(t, "warm") {
		if !slices.Contains(before, c.Name) && c.CreationTimestamp.Time.Before(hotBound) {
			newClaims = append(newClaims, c.Name)
		}
	}
	if len(newClaims) > 0 {
		t.Errorf("NodeClaims created for the warm pods while the buffer's room was there: %v", newClaims)
	}

	// The room the pods took is planned again.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		return roomFor(t, e, "warm", rl) >= pods, nil
	})
	if err != nil {
		t.Errorf("the buffer's room was not planned again: room for %d pods", roomFor(t, e, "warm", rl))
	} else {
		t.Logf("buffer: room for %d pods again %s after the real pods ran; warm NodeClaims %v", pods, time.Since(hotBound).Round(time.Millisecond), claimNames(e.claims(t, "warm")))
	}
}

// runPods creates n pods of (1 CPU, 2Gi) named prefix-i and returns how
// long each took from creation to Running, and when the last one was seen
// Running.
func runPods(t *testing.T, e *opEnv, ns, prefix string, n int, selector map[string]string) ([]time.Duration, time.Time) {
	t.Helper()
	ctx := context.Background()
	created := map[string]time.Time{}
	var ps []*corev1.Pod
	for i := range n {
		ps = append(ps, opPod(ns, fmt.Sprintf("%s-%d", prefix, i), "1", "2Gi", selector))
	}
	start := time.Now()
	for _, p := range ps {
		created[p.Name] = time.Now()
		if err := e.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	running := map[string]time.Duration{}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var l corev1.PodList
		if err := e.c.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		now := time.Now()
		for _, p := range l.Items {
			if _, ok := created[p.Name]; ok && p.Status.Phase == corev1.PodRunning && running[p.Name] == 0 {
				running[p.Name] = now.Sub(created[p.Name])
			}
		}
		return len(running) == n, nil
	})
	if err != nil {
		t.Fatalf("%s: %d of %d pods Running after %s", prefix, len(running), n, time.Since(start))
	}
	out := make([]time.Duration, 0, n)
	for _, d := range running {
		out = append(out, d)
	}
	return out, time.Now()
}

// p95 is the 95th percentile (nearest rank) of ds.
func p95(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[max(0, (len(s)*95+99)/100-1)]
}

// claimNames are the claims' names, sorted.
func claimNames(cs []v1alpha1.NodeClaim) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Name)
	}
	slices.Sort(out)
	return out
}

// roomFor counts how many pods requesting rl fit the free room of the
// Ready nodes of a pool (allocatable less what bound pods request).
func roomFor(t *testing.T, e *opEnv, pool string, rl corev1.ResourceList) int {
	t.Helper()
	ctx := context.Background()
	var nodes corev1.NodeList
	if err := e.c.List(ctx, &nodes, client.MatchingLabels{v1alpha1.LabelNodePool: pool}); err != nil {
		return 0
	}
	var all corev1.PodList
	if err := e.c.List(ctx, &all); err != nil {
		return 0
	}
	room := 0
	for _, n := range nodes.Items {
		ready := slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		})
		if !ready || n.Spec.Unschedulable || n.DeletionTimestamp != nil {
			continue
		}
		cpu, mem := n.Status.Allocatable.Cpu().MilliValue(), n.Status.Allocatable.Memory().Value()
		for _, p := range all.Items {
			if p.Spec.NodeName != n.Name || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			for _, c := range p.Spec.Containers {
				cpu -= c.Resources.Requests.Cpu().MilliValue()
				mem -= c.Resources.Requests.Memory().Value()
			}
		}
		room += int(min(cpu/rl.Cpu().MilliValue(), mem/rl.Memory().Value()))
	}
	return room
}
