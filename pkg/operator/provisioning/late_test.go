package provisioning

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func prioPod(name string, priority int32) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: name, UID: types.UID(name)},
		Spec:       corev1.PodSpec{Priority: ptr.To(priority)},
	}
}

func keys(names ...string) []types.NamespacedName {
	var out []types.NamespacedName
	for _, n := range names {
		out = append(out, types.NamespacedName{Namespace: "d", Name: n})
	}
	return out
}

// spread gives the pods the label app=web and a zone spread over it.
func spread(pods ...*corev1.Pod) {
	for _, p := range pods {
		p.Labels = map[string]string{"app": "web"}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	}
}

// TestLateDependencies: a late pod waits for the other pods the plan
// places and for the late pods before it that its terms relate it to,
// except those of higher priority (kube-scheduler leaves a lower-priority
// nomination out of their filters) and those of leaving nodes.
func TestLateDependencies(t *testing.T) {
	pods := []*corev1.Pod{
		prioPod("a", 0), prioPod("b", 0), prioPod("high", 100), prioPod("moving", 0),
		prioPod("late1", 0), prioPod("late2", 0), prioPod("low", -10), prioPod("pending", 0),
		prioPod("other", 0), prioPod("web-elsewhere", 0), prioPod("selected", 0), prioPod("anti", 0),
	}
	spread(pods[:8]...)
	// "other" has no label or term the spread relates; "web-elsewhere" has
	// the label in another namespace; "selected" is selected by the late
	// pods' terms only through late2's anti-affinity; "anti" selects
	// app=web from a term over every namespace.
	pods[9].Namespace, pods[9].Labels = "e", map[string]string{"app": "web"}
	pods[10].Labels = map[string]string{"role": "cache"}
	pods[5].Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "cache"}}}}}}}
	pods[11].Namespace = "f"
	pods[11].Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname,
			NamespaceSelector: &metav1.LabelSelector{}, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}
	plan := &solver.Plan{
		NewNodes:      []solver.NewNode{{Pods: []int{0, 2, 4, 8}}, {Pods: []int{3, 5, 6, 9, 10, 11}}},
		Existing:      []solver.Placement{{Pod: 1, Node: "old"}},
		Late:          []int{4, 5, 6},
		Unschedulable: []solver.Unschedulable{{Pod: 7}},
	}
	got := lateDependencies(pods, plan, func(i int) bool { return pods[i].Name == "moving" })
	anti := types.NamespacedName{Namespace: "f", Name: "anti"}
	want := map[string][]types.NamespacedName{
		"late1": append(keys("a", "b"), anti),
		"late2": append(keys("a", "b", "late1", "selected"), anti),
		// low: every other pod has a higher priority, nothing to wait for.
	}
	if len(got) != len(want) {
		t.Errorf("got dependencies for %d pods, want %d: %v", len(got), len(want), got)
	}
	for i, deps := range got {
		if !slices.Equal(deps, want[pods[i].Name]) {
			t.Errorf("%s waits for %v, want %v", pods[i].Name, deps, want[pods[i].Name])
		}
	}
	if d := lateDependencies(pods, &solver.Plan{NewNodes: plan.NewNodes}, func(int) bool { return false }); d != nil {
		t.Errorf("a plan without late pods gives %v", d)
	}
}

// TestWaitingEndsWhenTheDependenciesBind: a late pod waits while a pod it
// depends on is pending; bound or gone, it does not; planned again as not
// late, it no longer waits; forgotten once no longer pending.
func TestWaitingEndsWhenTheDependenciesBind(t *testing.T) {
	ctx := context.Background()
	a, b, late := prioPod("a", 0), prioPod("b", 0), prioPod("late", 0)
	b.Spec.NodeName = "n1"
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(a, b, late).Build()
	p := newTestProvisioner(t, c)
	pods := []*corev1.Pod{a, b, late}
	key := client.ObjectKeyFromObject(late)
	deps := map[int][]types.NamespacedName{2: keys("b", "a", "gone")}

	p.holdLate(pods, []int{0, 1, 2}, deps)
	if !p.Waiting(key) {
		t.Fatal("not waiting while a is pending")
	}
	if p.Waiting(client.ObjectKeyFromObject(a)) {
		t.Error("a, not late, waits")
	}
	a.Spec.NodeName = "n1"
	if err := c.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	if p.Waiting(key) {
		t.Error("still waiting once a is bound and the pod gone was never found")
	}
	if len(p.late) != 0 {
		t.Errorf("the wait is kept after it ended: %v", p.late)
	}

	p.holdLate(pods, []int{2}, map[int][]types.NamespacedName{2: keys("a", "pending")})
	p.holdLate(pods, []int{2}, nil) // the next batch plans it as not late
	if p.Waiting(key) {
		t.Error("waiting after a batch planned it as not late")
	}
	p.holdLate(pods, []int{2}, map[int][]types.NamespacedName{2: keys("pending")})
	p.forget(map[types.UID]bool{})
	if len(p.late) != 0 {
		t.Errorf("the wait of a pod no longer pending is kept: %v", p.late)
	}
}
