package metrics

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestKarpenterMetricsAreRegisteredAsDeclared checks each row of
// karpenterMetrics against its variable and the registry: the collector
// was built, describes itself with the row's name, help and labels, and is
// registered (unregistering it succeeds; it is registered again after).
func TestKarpenterMetricsAreRegisteredAsDeclared(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range karpenterMetrics {
		if !strings.HasPrefix(m.name, "karpenter_") || seen[m.name] {
			t.Errorf("%s: want a name under karpenter_, once", m.name)
		}
		seen[m.name] = true
		var c prometheus.Collector
		switch v := m.collector.(type) {
		case **prometheus.CounterVec:
			c = *v
		case **prometheus.GaugeVec:
			c = *v
		case *prometheus.Summary:
			c = *v
		}
		if c == nil || reflect.ValueOf(c).IsNil() {
			t.Errorf("%s: no collector built into its variable", m.name)
			continue
		}
		descs := make(chan *prometheus.Desc, 1)
		c.Describe(descs)
		d := (<-descs).String()
		want := fmt.Sprintf("fqName: %q, help: %q", m.name, m.help)
		if !strings.Contains(d, want) {
			t.Errorf("%s: describes itself as %s, want %s", m.name, d, want)
		}
		if labels := "{" + strings.Join(m.labels, ",") + "}"; !strings.HasSuffix(d, "variableLabels: "+labels+"}") {
			t.Errorf("%s: describes itself as %s, want labels %s", m.name, d, labels)
		}
		if !crmetrics.Registry.Unregister(c) {
			t.Errorf("%s: not registered", m.name)
			continue
		}
		crmetrics.Registry.MustRegister(c)
	}
	if len(seen) != 16 {
		t.Errorf("%d metrics under Karpenter's names, want the 16 docs/reference/metrics.md maps", len(seen))
	}
}

func TestKarpenterLabelValues(t *testing.T) {
	zero, grace := metav1.Duration{}, metav1.Duration{Duration: time.Hour}
	withGrace := func(d *metav1.Duration) *v1alpha1.NodeClaim {
		c := claim("a", "web")
		c.Spec.TerminationGracePeriod = d
		return c
	}
	for _, tc := range []struct{ name, got, want string }{
		{"policy in snake case", SnakeCase("WhenEmptyOrUnderutilized"), "when_empty_or_underutilized"},
		{"reason in snake case", SnakeCase("Drifted"), "drifted"},
		{"empty stays empty", SnakeCase(""), ""},
		{"no terminationGracePeriod drains gracefully", TerminationMode(withGrace(nil)), TerminationGraceful},
		{"a positive one eventually", TerminationMode(withGrace(&grace)), TerminationEventual},
		{"zero forcefully", TerminationMode(withGrace(&zero)), TerminationForceful},
		{"empty nodes", ConsolidationType("Empty", 3), "empty"},
		{"one underutilized node", ConsolidationType("Underutilized", 1), "single"},
		{"several underutilized nodes", ConsolidationType("Underutilized", 2), "multi"},
		{"drift is no consolidation", ConsolidationType("Drifted", 1), ""},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

// TestKarpenterCountersCountWhatOursCount drives the recording functions
// through the life of a few NodeClaims and checks that each Karpenter
// counter agrees with the rightsize_ one it mirrors and with the objects.
func TestKarpenterCountersCountWhatOursCount(t *testing.T) {
	for _, c := range []prometheus.Collector{NodeClaimsCreated, NodeClaimsRegistered, NodeClaimsDeleted, KarpenterNodeClaimsCreated,
		KarpenterNodeClaimsTerminated, KarpenterNodeClaimsDisrupted, KarpenterPodsDisruptionInitiated, KarpenterNodesCreated,
		KarpenterNodesTerminated, KarpenterDecisions} {
		c.(interface{ Reset() }).Reset()
	}
	zoned := func(name, pool, deletion string) (*v1alpha1.NodeClaim, *corev1.Node) {
		c := claim(name, pool, v1alpha1.ConditionLaunched, v1alpha1.ConditionRegistered)
		c.Labels[v1alpha1.LabelCapacityType] = "spot"
		if deletion != "" {
			c.SetDeletionReason(v1alpha1.DeletionReason(deletion))
		}
		n := node(name, pool, true)
		n.Labels[corev1.LabelTopologyZone] = "us-east-1a" // learnt at launch; the claim does not say
		return c, n
	}
	// Three claims provisioned and one replacement; all four register.
	a, an := zoned("a", "web", string(v1alpha1.DeletionReasonDisruption))
	b, bn := zoned("b", "web", string(v1alpha1.DeletionReasonRepair))
	r, rn := zoned("r", "web", "")
	g, _ := zoned("g", "batch", string(v1alpha1.DeletionReasonInstanceGone))
	ClaimCreated("web", ReasonProvisioning, "", false)
	ClaimCreated("web", ReasonProvisioning, "", false)
	ClaimCreated("batch", ReasonProvisioning, "", true)
	ClaimCreated("web", ReasonDisruption, "Underutilized", false)
	for _, cn := range [][2]any{{a, an}, {b, bn}, {r, rn}} {
		NodeRegistered(cn[0].(*v1alpha1.NodeClaim), cn[1].(*corev1.Node))
	}
	NodeRegistered(g, nil)
	// Consolidation replaces a (3 pods evicted); b is repaired; g's
	// instance vanished before its node joined.
	NodeDisrupted(a, an, "WhenEmptyOrUnderutilized", "Underutilized", 3)
	ActionCarriedOut("Underutilized", 1, true)
	ClaimTerminated(a, an)
	ClaimTerminated(b, bn)
	ClaimTerminated(g, nil)

	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"created, both names", sum(t, KarpenterNodeClaimsCreated), sum(t, NodeClaimsCreated)},
		{"created: provisioned", testutil.ToFloat64(KarpenterNodeClaimsCreated.WithLabelValues("provisioned", "web", "false")), 2},
		{"created: minValues relaxed", testutil.ToFloat64(KarpenterNodeClaimsCreated.WithLabelValues("provisioned", "batch", "true")), 1},
		{"created: the replacement under its disruption reason", testutil.ToFloat64(KarpenterNodeClaimsCreated.WithLabelValues("underutilized", "web", "false")), 1},
		{"nodes created, both names", sum(t, KarpenterNodesCreated), sum(t, NodeClaimsRegistered)},
		{"nodes created in the zone of the node", testutil.ToFloat64(KarpenterNodesCreated.WithLabelValues("web", "us-east-1a")), 3},
		{"terminated, both names", sum(t, KarpenterNodeClaimsTerminated), sum(t, NodeClaimsDeleted)},
		{"terminated: by capacity type and zone", testutil.ToFloat64(KarpenterNodeClaimsTerminated.WithLabelValues("web", "spot", "us-east-1a")), 2},
		{"nodes terminated: only claims that had one", sum(t, KarpenterNodesTerminated), 2},
		{"disrupted: consolidation, with its policy",
			testutil.ToFloat64(KarpenterNodeClaimsDisrupted.WithLabelValues("underutilized", "web", "spot", "when_empty_or_underutilized", "graceful")), 1},
		{"disrupted: repair is unhealthy", testutil.ToFloat64(KarpenterNodeClaimsDisrupted.WithLabelValues("unhealthy", "web", "spot", "", "graceful")), 1},
		{"disrupted: a vanished instance is garbage collected", testutil.ToFloat64(KarpenterNodeClaimsDisrupted.WithLabelValues("garbage_collected", "batch", "spot", "", "graceful")), 1},
		{"disrupted: the consolidated node counted once", sum(t, KarpenterNodeClaimsDisrupted), 3},
		{"pods whose disruption was initiated", sum(t, KarpenterPodsDisruptionInitiated), 3},
		{"decisions", testutil.ToFloat64(KarpenterDecisions.WithLabelValues("replace", "underutilized", "single")), 1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// sum adds up every series of a counter vector.
func sum(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

func TestEligibleNodes(t *testing.T) {
	EligibleNodes([]solver.Action{
		{Kind: solver.ActionDelete, Nodes: []string{"a", "b"}},
		{Kind: solver.ActionDelete, Nodes: []string{"c"}, Moves: []solver.Move{{Pod: "default/p", To: "d"}}},
		{Kind: solver.ActionReplace, Nodes: []string{"e", "f"}},
	})
	compare(t, KarpenterEligibleNodes, map[string]float64{"empty": 2, "underutilized": 3})
}

func TestKarpenterGaugesMatchTheObjects(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	web := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	web.Spec.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100"), corev1.ResourceMemory: resource.MustParse("400Gi")}
	web.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4500m"), corev1.ResourceMemory: resource.MustParse("16Gi")}
	n := node("web-1", "web", true)
	for k, v := range map[string]string{v1alpha1.KarpenterLabelNodePool: "web", corev1.LabelTopologyZone: "us-east-1a", corev1.LabelTopologyRegion: "us-east-1",
		corev1.LabelInstanceTypeStable: "m5.xlarge", corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux", v1alpha1.LabelCapacityType: "on-demand"} {
		n.Labels[k] = v
	}
	n.Status.Phase = ""
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3920m"), corev1.ResourceMemory: resource.MustParse("15Gi")}
	requesting := func(name, cpu string, owner string) *corev1.Pod {
		return pendingPod(name, func(p *corev1.Pod) {
			p.Spec.NodeName, p.Status.Phase = "web-1", corev1.PodRunning
			p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			yes := true
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: owner, Name: "o", Controller: &yes}}
		})
	}
	for _, g := range []*prometheus.GaugeVec{KarpenterNodePoolUsage, KarpenterNodePoolLimit, KarpenterPodState, KarpenterNodesAllocatable,
		KarpenterNodesPodRequests, KarpenterNodesDaemonRequests, KarpenterNodesSystemOverhead} {
		g.Reset() // TestClusterGaugesMatchTheObjects refreshes them too
	}
	objs := []client.Object{web, n, requesting("app", "1500m", "ReplicaSet"), requesting("agent", "250m", "DaemonSet"), pendingPod("waiting", unschedulable)}
	cluster := NewCluster(fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build(), 0)
	if err := cluster.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	compare(t, KarpenterNodePoolUsage, map[string]float64{"cpu/web": 4.5, "memory/web": 16 << 30})
	compare(t, KarpenterNodePoolLimit, map[string]float64{"cpu/web": 100, "memory/web": 400 << 30})
	wellKnown := "web/us-east-1a/us-east-1/m5.xlarge/amd64/linux/on-demand//web-1//true/"
	compare(t, KarpenterNodesAllocatable, map[string]float64{wellKnown + "cpu": 3.92, wellKnown + "memory": 15 << 30})
	compare(t, KarpenterNodesPodRequests, map[string]float64{wellKnown + "cpu": 1.75})
	compare(t, KarpenterNodesDaemonRequests, map[string]float64{wellKnown + "cpu": 0.25})
	compare(t, KarpenterNodesSystemOverhead, map[string]float64{wellKnown + "cpu": 0.08, wellKnown + "memory": 1 << 30})
	if n := testutil.CollectAndCount(KarpenterPodState); n != 3 {
		t.Errorf("karpenter_pods_state: %d series, want one per pod, 3", n)
	}
	for _, labels := range [][]string{
		{"app", "default", "/apis/apps/v1/namespaces/default/replicasets/o", "web-1", "true", "web", "us-east-1a", "amd64", "on-demand", "m5.xlarge", "Running", "true", "true"},
		{"agent", "default", "/apis/apps/v1/namespaces/default/daemonsets/o", "web-1", "true", "web", "us-east-1a", "amd64", "on-demand", "m5.xlarge", "Running", "true", "true"},
		{"waiting", "default", "", "", "false", "", "", "", "", "", "Pending", "false", "false"},
	} {
		if v := testutil.ToFloat64(KarpenterPodState.WithLabelValues(labels...)); v != 1 {
			t.Errorf("karpenter_pods_state%q = %v, want 1", labels, v)
		}
	}
}

func TestPodLatencyObservesStartupOncePerPodSeenPending(t *testing.T) {
	created := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	pod := func(phase corev1.PodPhase, readyAfter time.Duration) *corev1.Pod {
		p := pendingPod("p", nil)
		p.CreationTimestamp = metav1.NewTime(created)
		p.Status.Phase = phase
		if readyAfter > 0 {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(readyAfter))}}
		}
		return p
	}
	for _, tc := range []struct {
		name   string
		states []*corev1.Pod
		want   []float64
	}{
		{"pending, running, then ready 20 s after creation", []*corev1.Pod{pod(corev1.PodPending, 0), pod(corev1.PodRunning, 0), pod(corev1.PodRunning, 20*time.Second)}, []float64{20}},
		{"ready seen twice, observed once", []*corev1.Pod{pod(corev1.PodPending, 0), pod(corev1.PodRunning, 5*time.Second), pod(corev1.PodRunning, 5*time.Second)}, []float64{5}},
		{"ready without ever being seen pending (an operator restart)", []*corev1.Pod{pod(corev1.PodRunning, 5*time.Second)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var latency, startup observations
			l := NewPodLatency(&latency, &startup, nil)
			for _, p := range tc.states {
				l.Observe(p)
			}
			if len(startup) != len(tc.want) || (len(tc.want) > 0 && startup[0] != tc.want[0]) {
				t.Errorf("observed %v, want %v", startup, tc.want)
			}
		})
	}
}
