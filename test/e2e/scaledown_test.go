package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/disruption"
)

// TestConsolidationConverges is issue 14's scale-down must-show: the
// workload of TestLiveEqualsPlan ramped up with consolidation off, then
// every Deployment scaled to a quarter (2,000 → 500 pods at full scale),
// then the operator restarted with its default disruption settings
// (Karpenter's default budget of 10% of a pool's nodes, the 15 s
// validation delay). Within 10 minutes the cluster must cost at most 5%
// more than packed from scratch (`explain --consolidation`'s target), or
// every node kept must carry a named guard; sampled every second
// throughout, no pool has more nodes disrupting than its budget allows
// and no PDB has fewer healthy pods than it requires; at the end every pod
// runs. It logs `consolidation: cost/packed R after Ns`.
//
// `make test` runs it at a quarter of the scale (500 → 125 pods) to fit
// the e2e's time on the 2-core machine; RIGHTSIZE_SCALEDOWN_SCALE=1 runs
// the full 2,000 → 500.
func TestConsolidationConverges(t *testing.T) {
	scale := scaleFromEnv(t, "RIGHTSIZE_SCALEDOWN_SCALE", 0.25)
	ctx := context.Background()
	e := startOpEnv(t)
	ns := e.namespace(t, "scaledown")
	general, gpu := e.rampPools(t, "sd")
	pools := []string{general.Name, gpu.Name}

	// Ramp up, consolidation off.
	ramp := e.startOperator(t, "ramp", nil, "--leader-elect=false", "--disruption=false")
	t.Cleanup(func() { e.forceCleanup(t, ns, pools...) })
	ramp.waitLog(t, "provisioner started", 30*time.Second)
	var deps []*appsv1.Deployment
	total := 0
	for _, s := range liveShapes {
		d := liveDeployment(ns, s, scale)
		deps = append(deps, d)
		total += int(*d.Spec.Replicas)
		if err := e.c.Create(ctx, d.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	e.waitRunning(t, ns, total, 10*time.Minute)
	before, beforeNodes := e.claimCost(t)

	// Scale every Deployment to a quarter; PDBs guard three of them.
	down := 0
	for _, d := range deps {
		r := max(1, int32(math.Round(float64(*d.Spec.Replicas)/4)))
		patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, r))
		if err := e.c.Patch(ctx, d.DeepCopy(), client.RawPatch("application/merge-patch+json", patch)); err != nil {
			t.Fatal(err)
		}
		down += int(r)
	}
	for app, limit := range map[string]intstr.IntOrString{"api-a": intstr.FromInt32(1), "cache-a": intstr.FromString("50%"), "queue": intstr.FromInt32(1)} {
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns},
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(limit), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
		if err := e.c.Create(ctx, pdb); err != nil {
			t.Fatal(err)
		}
	}
	e.waitPodCount(t, ns, down, 3*time.Minute)
	ramp.stop()
	t.Logf("ramp: %d pods on %d NodeClaims, $%.2f/h; scaled down to %d pods", total, beforeNodes, before, down)

	// Consolidation on, watched.
	metricsAddr := freePort(t)
	op := e.startOperator(t, "operator", nil, "--leader-elect=false", "--metrics-bind-address", metricsAddr)
	t.Cleanup(op.stop)
	op.waitLog(t, "disruption controller started", 30*time.Second)
	start := time.Now()
	s := &scaleDownSampler{e: e, ns: ns}
	stop := s.run(t)

	target := e.packedFromScratch(t).TargetPrice
	var cost float64
	err := wait.PollUntilContextTimeout(ctx, 5*time.Second, 10*time.Minute, true, func(context.Context) (bool, error) {
		cost, _ = e.claimCost(t)
		if cost <= 1.05*target {
			return true, nil
		}
		// Quiet for a minute: the operator finds nothing more to do.
		chosen := op.records("disruption action chosen; validating")
		last := start
		if len(chosen) > 0 {
			last = logTime(t, chosen[len(chosen)-1])
		}
		return time.Since(last) > time.Minute && time.Since(start) > 2*time.Minute, nil
	})
	took := time.Since(start)
	stop()
	final := e.packedFromScratch(t)
	cost, nodes := e.claimCost(t)
	ratio := cost / final.TargetPrice
	t.Logf("consolidation: cost/packed %.3f after %.0fs", ratio, took.Seconds())
	m := metricSums(scrape(t, metricsAddr))
	t.Logf("before consolidation $%.2f/h on %d NodeClaims; after $%.2f/h on %d (packed from scratch $%.2f/h); %v actions, %v invalidated, %v pods evicted; samples %d, most nodes disrupting at once %d",
		before, beforeNodes, cost, nodes, final.TargetPrice, sumPrefix(m, "rightsize_disruption_actions_total"), sumPrefix(m, "rightsize_disruption_actions_invalidated_total"),
		sumPrefix(m, "rightsize_disruption_pods_evicted_total"), s.samples, s.most)
	for _, g := range final.GapGuards {
		t.Logf("  kept by guard: %d node(s) $%.4f/h: %s", len(g.Nodes), g.PricePerHour, g.Reason)
	}
	if err != nil && ratio > 1.05 {
		t.Errorf("after %s the cluster costs $%.2f/h, %.3f× packed from scratch ($%.2f/h)", took.Round(time.Second), cost, ratio, final.TargetPrice)
	}
	if ratio > 1.05 {
		// Every node kept must say which guard keeps it.
		for _, v := range final.Nodes {
			if v.Verdict == "kept" && (v.Reason == "" || strings.Contains(v.Reason, "no action found")) {
				t.Errorf("node %s is kept without a named guard: %q", v.Node, v.Reason)
			}
		}
	}
	for _, v := range s.violations() {
		t.Error(v)
	}
	e.waitRunning(t, ns, down, 3*time.Minute)
}

// consolidationReport is what the test reads of `explain --consolidation
// -o json`.
type consolidationReport struct {
	TargetPrice float64 `json:"targetPricePerHour"`
	GapGuards   []struct {
		Reason       string
		Nodes        []string
		PricePerHour float64 `json:"pricePerHour"`
	} `json:"gapGuards"`
	Nodes []struct{ Node, Verdict, Reason string }
}

// packedFromScratch runs `explain --consolidation` on the live cluster.
func (e *opEnv) packedFromScratch(t *testing.T) consolidationReport {
	t.Helper()
	r := plugin(t, e.Kubeconfig, "explain", "--consolidation", "--region", "us-east-1", "-o", "json")
	if r.err != nil {
		t.Fatalf("explain --consolidation: %v\n%s", r.err, r.stderr)
	}
	var got struct{ Consolidation consolidationReport }
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Consolidation.TargetPrice <= 0 {
		t.Fatalf("explain --consolidation printed no target (%v):\n%s", err, r.stdout)
	}
	return got.Consolidation
}

// claimCost sums the prices of the NodeClaims not being deleted.
func (e *opEnv) claimCost(t *testing.T) (float64, int) {
	t.Helper()
	cost, n := 0.0, 0
	for _, c := range e.claims(t, "") {
		if c.DeletionTimestamp != nil {
			continue
		}
		var p float64
		if _, err := fmt.Sscan(c.Status.PricePerHour, &p); err == nil {
			cost += p
			n++
		}
	}
	return cost, n
}

// waitPodCount waits until ns has exactly n pods, all Running.
func (e *opEnv) waitPodCount(t *testing.T, ns string, n int, timeout time.Duration) {
	t.Helper()
	var have, running int
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := e.c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		have, running = len(pods.Items), 0
		for i := range pods.Items {
			if pods.Items[i].Status.Phase == corev1.PodRunning && pods.Items[i].DeletionTimestamp == nil {
				running++
			}
		}
		return have == n && running == n, nil
	})
	if err != nil {
		t.Fatalf("%s: %d pods, %d Running after %s; want %d", ns, have, running, timeout, n)
	}
}

func sumPrefix(m map[string]float64, prefix string) float64 {
	s := 0.0
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			s += v
		}
	}
	return s
}

// scaleDownSampler checks, every second, that no pool has more nodes
// disrupting (tainted by the disruption controller, or their NodeClaim
// being deleted) than its budget allows (Karpenter's default, 10% of the
// pool's nodes rounded up), and that no PDB has fewer healthy pods than it
// requires.
type scaleDownSampler struct {
	e  *opEnv
	ns string

	mu      sync.Mutex
	samples int
	most    int
	found   []string
}

// run samples until the returned function is called.
func (s *scaleDownSampler) run(t *testing.T) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			s.sample(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

func (s *scaleDownSampler) sample(ctx context.Context) {
	var nodes corev1.NodeList
	var claims v1alpha1.NodeClaimList
	var pdbs policyv1.PodDisruptionBudgetList
	if s.e.c.List(ctx, &nodes) != nil || s.e.c.List(ctx, &claims) != nil || s.e.c.List(ctx, &pdbs, client.InNamespace(s.ns)) != nil {
		return
	}
	deleting := map[string]bool{}
	for _, c := range claims.Items {
		if c.DeletionTimestamp != nil && c.Status.NodeName != "" {
			deleting[c.Status.NodeName] = true
		}
	}
	total, disrupting := map[string]int{}, map[string]int{}
	for _, n := range nodes.Items {
		pool := n.Labels[v1alpha1.LabelNodePool]
		if pool == "" {
			continue
		}
		total[pool]++
		if deleting[n.Name] || n.DeletionTimestamp != nil || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == disruption.TaintKey }) {
			disrupting[pool]++
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	now := time.Now().Format(time.TimeOnly)
	for pool, k := range disrupting {
		s.most = max(s.most, k)
		if allowed := int(math.Ceil(float64(total[pool]) * 0.1)); k > allowed {
			s.found = append(s.found, fmt.Sprintf("%s: NodePool %s had %d of %d nodes disrupting, its budget allows %d", now, pool, k, total[pool], allowed))
		}
	}
	for _, p := range pdbs.Items {
		if p.Status.ObservedGeneration == p.Generation && p.Status.CurrentHealthy < p.Status.DesiredHealthy {
			s.found = append(s.found, fmt.Sprintf("%s: PDB %s had %d healthy pods, it requires %d", now, p.Name, p.Status.CurrentHealthy, p.Status.DesiredHealthy))
		}
	}
}

func (s *scaleDownSampler) violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.found)
}
