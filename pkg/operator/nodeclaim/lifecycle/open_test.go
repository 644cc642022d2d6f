package lifecycle

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
)

// The fake client stands in for the informer cache only for the grouping of
// a decision's claims; opening nodes against a real scheduler is tested end
// to end (test/e2e, the operator's burst).

func readyNode(name string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

func batchClaim(name, batch, size, node string, conditions ...string) *v1alpha1.NodeClaim {
	c := &v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
		v1alpha1.AnnotationBatch: batch, v1alpha1.AnnotationBatchSize: size,
	}}}
	c.Spec.StartupTaints = []corev1.Taint{{Key: "example.com/agent", Effect: corev1.TaintEffectNoSchedule}}
	c.Status.NodeName = node
	for _, cond := range conditions {
		c.SetCondition(cond, metav1.ConditionTrue, cond, "")
	}
	return c
}

func TestUsableNodeWaitsForReadinessAndStartupTaints(t *testing.T) {
	claim := batchClaim("a", "b1", "1", "a")
	notReady := readyNode("a")
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"ready, only the unregistered taint", readyNode("a", cloud.UnregisteredTaint), true},
		{"not ready", notReady, false},
		{"not-ready taint left", readyNode("a", corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}), false},
		{"startup taint left", readyNode("a", claim.Spec.StartupTaints[0]), false},
	} {
		if got := claim.Usable(tc.node); got != tc.want {
			t.Errorf("%s: usable %v, want %v", tc.name, got, tc.want)
		}
	}
}

// spreadPod is a pending pod spread over zones with DoNotSchedule: its
// node opens with the others of its decision.
func spreadPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: name}, Spec: corev1.PodSpec{
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}},
	}}
}

// nominatedTo returns an Options.NominatedPods that plans one pod, named
// after its claim, onto each of the claims named.
func nominatedTo(claims ...string) func(string) []types.NamespacedName {
	return func(claim string) []types.NamespacedName {
		if slices.Contains(claims, claim) {
			return []types.NamespacedName{{Namespace: "d", Name: "pod-" + claim}}
		}
		return nil
	}
}

func TestPlacedAgainstOthers(t *testing.T) {
	spread := func(when corev1.UnsatisfiableConstraintAction) *corev1.Pod {
		p := spreadPod("p")
		p.Spec.TopologySpreadConstraints[0].WhenUnsatisfiable = when
		return p
	}
	term := corev1.PodAffinityTerm{TopologyKey: corev1.LabelTopologyZone, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}
	withAffinity := func(a *corev1.Affinity) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Affinity: a}}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"no constraints", &corev1.Pod{}, false},
		{"a hard topology spread", spread(corev1.DoNotSchedule), true},
		{"a soft topology spread", spread(corev1.ScheduleAnyway), false},
		{"required pod affinity", withAffinity(&corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}}), true},
		{"preferred pod affinity", withAffinity(&corev1.Affinity{PodAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term}}}}), false},
		{"required pod anti-affinity", withAffinity(&corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}}), false},
	} {
		if got := placedAgainstOthers(tc.pod); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestGangCountsTheDecisionsClaimsNotUsableYet(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	self := batchClaim("a", "b1", "4", "a", v1alpha1.ConditionRegistered)
	objs := []client.Object{
		self,
		batchClaim("b", "b1", "4", "b", v1alpha1.ConditionRegistered),                                // usable: opens with a
		batchClaim("c", "b1", "4", "c", v1alpha1.ConditionRegistered),                                // its node still starting
		batchClaim("d", "b1", "4", "d", v1alpha1.ConditionRegistered, v1alpha1.ConditionInitialized), // already open
		batchClaim("x", "other", "1", "x", v1alpha1.ConditionRegistered),                             // another decision
		readyNode("a", cloud.UnregisteredTaint), readyNode("b", cloud.UnregisteredTaint),
		readyNode("c", cloud.UnregisteredTaint, corev1.Taint{Key: "example.com/agent", Effect: corev1.TaintEffectNoSchedule}),
		readyNode("d"), readyNode("x", cloud.UnregisteredTaint),
		batchClaim("e", "b1", "4", "e", v1alpha1.ConditionRegistered), // opens on its own: no spread pod
		readyNode("e", cloud.UnregisteredTaint),
		spreadPod("pod-a"), spreadPod("pod-b"), spreadPod("pod-c"), spreadPod("pod-d"), spreadPod("pod-x"),
	}
	self.Annotations[v1alpha1.AnnotationBatchSize] = "5"
	c := New(fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build(), nil, nil, nil, nil, Options{NominatedPods: nominatedTo("a", "b", "c", "d", "x")})
	ctx := context.Background()
	node := readyNode("a", cloud.UnregisteredTaint)

	members, waiting, err := c.gang(ctx, self, node, "b1")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range members {
		names = append(names, m.claim.Name)
	}
	if !slices.Equal(names, []string{"a", "b"}) || waiting != 1 {
		t.Errorf("members %v, waiting %d; want [a b] and 1 (c)", names, waiting)
	}

	// A claim of the decision not in the cache yet is waited for too.
	self.Annotations[v1alpha1.AnnotationBatchSize] = "6"
	if _, waiting, _ = c.gang(ctx, self, node, "b1"); waiting != 2 {
		t.Errorf("waiting %d with one claim of six unseen; want 2", waiting)
	}

	// Opened by this process but not Initialized in the cache: not a member.
	c.opened["b"] = time.Now()
	if members, _, _ = c.gang(ctx, self, node, "b1"); len(members) != 1 {
		t.Errorf("%d members after b opened; want only a", len(members))
	}
}

// TestLatePodsAreNominatedAfterThePodsTheyFollow: a pod Options.Waiting
// holds (a plan's late pod) is not nominated when its node opens, and is
// once Waiting lets it go, or LateWait has passed.
func TestLatePodsAreNominatedAfterThePodsTheyFollow(t *testing.T) {
	pending := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: name}}
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	cache := fake.NewClientBuilder().WithScheme(s).WithObjects(pending("first"), pending("late")).Build()
	kube := kubefake.NewClientset(pending("first"), pending("late"))
	waiting := map[string]bool{"late": true}
	clk := clocktesting.NewFakeClock(epoch)
	c := New(cache, kube, nil, nil, nil, Options{
		Clock: clk,
		NominatedPods: func(string) []types.NamespacedName {
			return []types.NamespacedName{{Namespace: "d", Name: "first"}, {Namespace: "d", Name: "late"}}
		},
		Waiting: func(k types.NamespacedName) bool { return waiting[k.Name] },
	})
	nominated := func() []string {
		var out []string
		for _, a := range kube.Actions() {
			if p, ok := a.(k8stesting.PatchAction); ok && p.GetSubresource() == "status" {
				out = append(out, p.GetName())
			}
		}
		return out
	}
	pods, _ := c.nominate(context.Background(), []member{{claim: batchClaim("c", "b1", "1", "n"), node: readyNode("n")}})
	if got := nominated(); !slices.Contains(got, "first") || slices.Contains(got, "late") {
		t.Fatalf("nominated %v on opening; want first, not late", got)
	}
	if released, still := c.release(pods, false); len(released) != 0 || still != 1 {
		t.Errorf("released %d, %d waiting, while late waits; want 0, 1", len(released), still)
	}
	waiting["late"] = false
	if released, still := c.release(pods, false); len(released) != 1 || released[0].key.Name != "late" || still != 0 {
		t.Errorf("released %v, %d waiting, once its pods are bound; want late, 0", released, still)
	}
	waiting["late"] = true
	pods[1].waiting = true
	if released, _ := c.release(pods, true); len(released) != 1 {
		t.Errorf("released %d once LateWait passed; want 1", len(released))
	}
}

// TestSpreadPodsAreNominatedUnlessSkipped: of the pods planned onto an
// opening node, the ones the scheduler admits only against pods planned
// elsewhere (a hard topology spread) get a nominated node by default and
// none with SkipSpreadNominations; the others always do (see the comment
// above nominate).
func TestSpreadPodsAreNominatedUnlessSkipped(t *testing.T) {
	for _, tt := range []struct {
		name string
		skip bool
		want []string
	}{
		{name: "by default every planned pod is nominated", want: []string{"plain", "spread"}},
		{name: "skipped: the spread pod is not", skip: true, want: []string{"plain"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: "plain"}}
			spread := spreadPod("spread")
			s := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			cache := fake.NewClientBuilder().WithScheme(s).WithObjects(plain, spread.DeepCopy()).Build()
			kube := kubefake.NewClientset(plain, spread.DeepCopy())
			c := New(cache, kube, nil, nil, nil, Options{
				Clock: clocktesting.NewFakeClock(epoch),
				NominatedPods: func(string) []types.NamespacedName {
					return []types.NamespacedName{{Namespace: "d", Name: "plain"}, {Namespace: spread.Namespace, Name: spread.Name}}
				},
				SkipSpreadNominations: tt.skip,
			})
			pods, _ := c.nominate(context.Background(), []member{{claim: batchClaim("c", "b1", "1", "n"), node: readyNode("n")}})
			var patched []string
			for _, a := range kube.Actions() {
				if p, ok := a.(k8stesting.PatchAction); ok && p.GetSubresource() == "status" && !slices.Contains(patched, p.GetName()) {
					patched = append(patched, p.GetName())
				}
			}
			slices.Sort(patched)
			if !slices.Equal(patched, tt.want) || len(pods) != len(tt.want) {
				t.Errorf("nominated %v (%d pods kept); want %v", patched, len(pods), tt.want)
			}
		})
	}
}
