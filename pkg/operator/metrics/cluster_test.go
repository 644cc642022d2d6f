package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/disruption"
)

var deleted = metav1.NewTime(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))

func claim(name, pool string, conditions ...string) *v1alpha1.NodeClaim {
	c := &v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.LabelNodePool: pool}}}
	for _, cond := range conditions {
		c.SetCondition(cond, metav1.ConditionTrue, cond, "")
	}
	return c
}

func node(name, pool string, ready bool, taints ...corev1.Taint) *corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}}}
	if pool != "" {
		n.Labels = map[string]string{v1alpha1.LabelNodePool: pool}
	}
	return n
}

func pendingPod(name string, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: k8stypes.UID("uid-" + name)}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func unschedulable(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
}

func TestStatesOfClaimsNodesAndPods(t *testing.T) {
	deleting := claim("d", "web", v1alpha1.ConditionLaunched)
	deleting.DeletionTimestamp = &deleted
	cordoned := node("c", "web", true)
	cordoned.Spec.Unschedulable = true
	for _, tc := range []struct {
		name, got, want string
	}{
		{"claim just created", NodeClaimState(claim("a", "web")), ClaimLaunching},
		{"claim launched", NodeClaimState(claim("a", "web", v1alpha1.ConditionLaunched)), ClaimRegistering},
		{"claim registered", NodeClaimState(claim("a", "web", v1alpha1.ConditionLaunched, v1alpha1.ConditionRegistered)), ClaimInitializing},
		{"claim initialized", NodeClaimState(claim("a", "web", v1alpha1.ConditionLaunched, v1alpha1.ConditionRegistered, v1alpha1.ConditionInitialized)), ClaimInitialized},
		{"claim deleted", NodeClaimState(deleting), ClaimDeleting},
		{"node ready", NodeState(node("n", "web", true)), NodeReady},
		{"node not ready", NodeState(node("n", "web", false)), NodeNotReady},
		{"node cordoned", NodeState(cordoned), NodeDisrupting},
		{"node tainted by a disruption action", NodeState(node("n", "web", true, disruption.Taint)), NodeDisrupting},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: state %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		want   string
		wantOK bool
	}{
		{"not tried yet", pendingPod("p", nil), PendingQueued, true},
		{"unschedulable", pendingPod("p", unschedulable), PendingUnschedulable, true},
		{"nominated to an in-flight node", pendingPod("p", func(p *corev1.Pod) { unschedulable(p); p.Status.NominatedNodeName = "n" }), PendingNominated, true},
		{"gated", pendingPod("p", func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "g"}} }), PendingGated, true},
		{"bound, starting", pendingPod("p", func(p *corev1.Pod) { p.Spec.NodeName = "n" }), PendingStarting, true},
		{"running", pendingPod("p", func(p *corev1.Pod) { p.Spec.NodeName = "n"; p.Status.Phase = corev1.PodRunning }), "", false},
		{"going away", pendingPod("p", func(p *corev1.Pod) { p.DeletionTimestamp = &deleted; p.Finalizers = []string{"x"} }), "", false},
	} {
		if got, ok := PendingReason(tc.pod); got != tc.want || ok != tc.wantOK {
			t.Errorf("%s: reason %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestClusterGaugesMatchTheObjects(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	gone := claim("gpu-gone", "gpu", v1alpha1.ConditionLaunched)
	gone.DeletionTimestamp, gone.Finalizers = &deleted, []string{v1alpha1.TerminationFinalizer}
	objs := []client.Object{
		&v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "web"}},
		&v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}},
		claim("web-1", "web", v1alpha1.ConditionLaunched, v1alpha1.ConditionRegistered, v1alpha1.ConditionInitialized),
		claim("web-2", "web", v1alpha1.ConditionLaunched, v1alpha1.ConditionRegistered, v1alpha1.ConditionInitialized),
		claim("web-3", "web"),
		gone,
		node("web-1", "web", true), node("web-2", "web", false), node("other", "", true),
		pendingPod("a", unschedulable), pendingPod("b", unschedulable),
		pendingPod("c", func(p *corev1.Pod) { unschedulable(p); p.Status.NominatedNodeName = "web-3" }),
		pendingPod("d", func(p *corev1.Pod) { p.Spec.NodeName = "web-1"; p.Status.Phase = corev1.PodRunning }),
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	cluster := NewCluster(c, 0)
	if err := cluster.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	compare(t, NodeClaims, map[string]float64{
		"gpu/deleting":     1,
		"gpu/initialized":  0,
		"gpu/initializing": 0,
		"gpu/launching":    0,
		"gpu/registering":  0,
		"web/deleting":     0,
		"web/initialized":  2,
		"web/initializing": 0,
		"web/launching":    1,
		"web/registering":  0,
	})
	compare(t, Nodes, map[string]float64{
		"gpu/deleting":   0,
		"gpu/disrupting": 0,
		"gpu/not_ready":  0,
		"gpu/ready":      0,
		"web/deleting":   0,
		"web/disrupting": 0,
		"web/not_ready":  1,
		"web/ready":      1,
	})
	compare(t, PodsPendingByReason, map[string]float64{
		"nominated":        1,
		"queued":           0,
		"scheduling_gated": 0,
		"starting":         0,
		"unschedulable":    2,
	})

	// The gpu pool and its last claim go: so do their series.
	ctx := context.Background()
	if err := c.Delete(ctx, &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}); err != nil {
		t.Fatal(err)
	}
	gone.Finalizers = nil
	if err := c.Update(ctx, gone); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	if err := cluster.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	compare(t, NodeClaims, map[string]float64{
		"web/deleting":     0,
		"web/initialized":  2,
		"web/initializing": 0,
		"web/launching":    1,
		"web/registering":  0,
	})
}

// compare checks that the gauge has exactly the series of want, keyed by
// their label values joined with "/", with those values.
func compare(t *testing.T, g *prometheus.GaugeVec, want map[string]float64) {
	t.Helper()
	if n := testutil.CollectAndCount(g); n != len(want) {
		t.Errorf("%d series, want %d", n, len(want))
	}
	for key, v := range want {
		if got := testutil.ToFloat64(g.WithLabelValues(strings.Split(key, "/")...)); got != v {
			t.Errorf("%s: %v, want %v", key, got, v)
		}
	}
}

func TestPodLatencyObservesUnschedulableToRunningOncePerPod(t *testing.T) {
	turned := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	unsched := func(p *corev1.Pod) {
		unschedulable(p)
		p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(turned)
	}
	running := func(p *corev1.Pod) { p.Spec.NodeName, p.Status.Phase = "n", corev1.PodRunning }
	for _, tc := range []struct {
		name      string
		states    []func(*corev1.Pod) // applied in turn to a fresh pod, one event each
		wantCount int
		wantFirst float64
	}{
		{"unschedulable, then running 12 s later", []func(*corev1.Pod){unsched, running}, 1, 12},
		{"seen unschedulable twice, running twice", []func(*corev1.Pod){unsched, unsched, running, running}, 1, 12},
		{"running without ever being unschedulable", []func(*corev1.Pod){nil, running}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen, startup observations
			l := NewPodLatency(&seen, &startup, func() time.Time { return turned.Add(12 * time.Second) })
			for _, st := range tc.states {
				l.Observe(pendingPod("p", st))
			}
			if len(seen) != tc.wantCount || (tc.wantCount > 0 && seen[0] != tc.wantFirst) {
				t.Errorf("observed %v; want %d observations, the first %v", seen, tc.wantCount, tc.wantFirst)
			}
		})
	}
}

// observations is a prometheus.Observer that keeps what it observes.
type observations []float64

func (o *observations) Observe(v float64) { *o = append(*o, v) }
