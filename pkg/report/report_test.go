package report

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestNodesCostWhatTheirClaimPays checks that the Nodes view and the header
// price a node as explain does: what its NodeClaim records it pays, not
// today's catalog price; a node no claim owns at the catalog's.
func TestNodesCostWhatTheirClaimPays(t *testing.T) {
	list := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("58")}
	node := func(name string, owned bool) *corev1.Node {
		labels := map[string]string{solver.LabelInstanceType: "m7i.xlarge", solver.LabelZone: "us-east-1a", solver.LabelCapacityType: "on-demand"}
		if owned {
			labels[v1alpha1.LabelNodePool], labels[solver.LabelNodePool] = "web", "web"
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: "sim://" + name},
			Status: corev1.NodeStatus{Capacity: list, Allocatable: list, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	}
	pool := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1alpha1.NodePoolSpec{Template: v1alpha1.NodeClaimTemplate{
		Spec: v1alpha1.NodeClaimTemplateSpec{NodeClassRef: v1alpha1.NodeClassReference{Kind: "SimNodeClass", Name: "default"}}}}}
	objs := &snapshot.Objects{
		RightsizeInstalled: true, RightsizeNodePools: []*v1alpha1.NodePool{pool},
		Nodes: []*corev1.Node{node("paid", true), node("plain", false)},
		NodeClaims: []*v1alpha1.NodeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "web-paid", Labels: map[string]string{v1alpha1.LabelNodePool: "web"}},
			Status: v1alpha1.NodeClaimStatus{ProviderID: "sim://paid", PricePerHour: "0.15",
				Conditions: []metav1.Condition{{Type: v1alpha1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"}}}}},
	}
	r, err := NewPlanner().Build(Input{Objects: objs, Catalog: plan.Catalog{Region: "us-east-1"}, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	types, _, err := (&plan.Catalog{Region: "us-east-1"}).InstanceTypes()
	if err != nil {
		t.Fatal(err)
	}
	catalog, ok := plan.NewPrices(types).Catalog(&solver.Node{InstanceType: "m7i.xlarge", Zone: "us-east-1a", CapacityType: "on-demand"})
	if !ok || catalog == 0.15 {
		t.Fatalf("catalog price %v: the test needs one that differs from the claim's", catalog)
	}
	want := map[string]float64{"paid": 0.15, "plain": catalog}
	if len(r.Nodes) != 2 {
		t.Fatalf("nodes %+v", r.Nodes)
	}
	for _, row := range r.Nodes {
		if row.Price == nil || *row.Price != want[row.Name] {
			t.Errorf("%s costs %v, want %v", row.Name, row.Price, want[row.Name])
		}
	}
	if d := r.ClusterPrice - (0.15 + catalog); d > 1e-9 || d < -1e-9 {
		t.Errorf("cluster price %v, want %v", r.ClusterPrice, 0.15+catalog)
	}
}

// TestOfflineWindowsSaysWhatExplainSays checks that the TUI gives a pod
// that selects a non-linux OS explain's sentence (no catalog has such
// nodes), not the solver's list of the types it searched, and warns of a
// pool that requires one, as explain does.
func TestOfflineWindowsSaysWhatExplainSays(t *testing.T) {
	const manifests = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: win}
spec: {template: {spec: {requirements: [{key: kubernetes.io/os, operator: In, values: [windows]}]}}}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec: {template: {spec: {requirements: []}}}
---
apiVersion: v1
kind: Pod
metadata: {name: iis, namespace: default}
spec:
  nodeSelector: {kubernetes.io/os: windows}
  containers: [{name: app, image: iis, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers: [{name: app, image: web, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
`
	m := &snapshot.Manifests{}
	if err := snapshot.Decode("input.yaml", []byte(manifests), m); err != nil {
		t.Fatal(err)
	}
	r, err := NewPlanner().Build(Input{Manifests: m, Catalog: plan.Catalog{Region: "us-east-1"}})
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]PendingGroup{}
	for _, g := range r.Pending {
		for _, pod := range g.Pods {
			outcomes[pod] = g
		}
	}
	const sentence = "Windows nodes are not supported yet: the pod selects kubernetes.io/os windows, and every instance type is linux"
	if g := outcomes["default/iis"]; g.Outcome != "unschedulable" || g.Reason != sentence {
		t.Errorf("default/iis: %s %q, want unschedulable %q", g.Outcome, g.Reason, sentence)
	}
	if g := outcomes["default/web"]; g.Outcome != "new" {
		t.Errorf("default/web: %s %q, want a new node", g.Outcome, g.Reason)
	}
	warned := false
	for _, w := range r.Warnings {
		warned = warned || strings.HasPrefix(w, "NodePool win requires kubernetes.io/os In [windows]: Windows nodes are not supported yet")
	}
	if !warned {
		t.Errorf("warnings %q: none about NodePool win", r.Warnings)
	}
}

// TestLivePodOnAnExistingNodeSaysWhatExplainSays checks that a pending pod
// the plan puts on an existing node with room gets explain's note in the
// Pending view and the detail view.
func TestLivePodOnAnExistingNodeSaysWhatExplainSays(t *testing.T) {
	list := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("58")}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "roomy", Labels: map[string]string{solver.LabelInstanceType: "m7i.xlarge", solver.LabelZone: "us-east-1a", solver.LabelCapacityType: "on-demand"}},
		Status: corev1.NodeStatus{Capacity: list, Allocatable: list, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	r, err := NewPlanner().Build(Input{Objects: &snapshot.Objects{Nodes: []*corev1.Node{node}, Pods: []*corev1.Pod{pod}}, Catalog: plan.Catalog{Region: "us-east-1"}, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Pending) != 1 {
		t.Fatalf("pending groups %+v, want one", r.Pending)
	}
	g := &r.Pending[0]
	if g.Outcome != "existing" || g.Node != "roomy" || g.Reason != plan.ExistingNodeNote {
		t.Errorf("pending: %s %s %q, want existing roomy %q", g.Outcome, g.Node, g.Reason, plan.ExistingNodeNote)
	}
	if want := "Plan:      fits on roomy — " + plan.ExistingNodeNote; !slices.Contains(r.Detail(g), want) {
		t.Errorf("the detail view lacks %q:\n%s", want, strings.Join(r.Detail(g), "\n"))
	}
}
