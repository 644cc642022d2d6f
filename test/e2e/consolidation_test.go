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
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

// consolidationPool is a Karpenter NodePool whose nodes may be consolidated at once.
const consolidationPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m7i]}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 0s
    budgets: [{nodes: "100%"}]
`

// TestExplainConsolidation runs `explain --consolidation` on one control
// plane with both Karpenter's and rightsize.dev's CRDs: first on Karpenter
// NodePools, then on the nodes of a rightsize.dev NodePool, where the
// verdicts are the rightsize operator's.
func TestExplainConsolidation(t *testing.T) {
	e := startOpEnv(t)
	t.Run("Karpenter NodePools: nodes removed, money saved, nothing changed", func(t *testing.T) { testKarpenterConsolidation(t, e.Env) })
	t.Run("rightsize NodePools: the operator's next action, and the guard that keeps each node", func(t *testing.T) { testRightsizeConsolidation(t, e) })
}

// testKarpenterConsolidation reads a cluster of three m7i.xlarge nodes with
// two small pods of a Deployment and a bare pod, and checks that
// `explain --consolidation` proposes removing nodes, saves money, changes
// nothing, and says why the node with the bare pod stays.
func testKarpenterConsolidation(t *testing.T, env *testenv.Env) {
	ctx := context.Background()
	c := env.Client()
	for _, args := range [][]string{
		{"apply", "-f", "testdata/karpenter-nodepools-crd.yaml"},
		{"wait", "--for", "condition=Established", "--timeout", "30s", "crd/nodepools.karpenter.sh"},
	} {
		if r := kubectl(t, env, args...); r.err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, r.err, r.stderr)
		}
	}
	apply := env.Kubectl(ctx, "apply", "-f", "-")
	apply.Stdin = strings.NewReader(consolidationPool)
	if r := runCmd(apply); r.err != nil {
		t.Fatalf("apply pool: %v\n%s", r.err, r.stderr)
	}
	nodes := []string{"node-a", "node-b", "node-c"}
	for i, name := range nodes {
		if _, err := env.AddNode(ctx, testenv.Node{
			Name: name,
			Labels: map[string]string{
				"node.kubernetes.io/instance-type": "m7i.xlarge",
				"topology.kubernetes.io/zone":      fmt.Sprintf("us-east-1%c", 'a'+i),
				"topology.kubernetes.io/region":    "us-east-1",
				"karpenter.sh/capacity-type":       "on-demand",
				v1alpha1.KarpenterLabelNodePool:    "general",
			},
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("58")},
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range nodes {
		if err := env.WaitNodeReady(ctx, name, 60*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, deployment("web", 2, "250m", "512Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bare := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{NodeName: "node-c", Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
	}
	if _, err := c.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, bare, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPods(t, c, "web", 2, running)

	r := plugin(t, env.Kubeconfig, "explain", "--consolidation", "--region", "us-east-1", "-o", "json")
	if r.err != nil {
		t.Fatalf("explain --consolidation: %v\n%s", r.err, r.stderr)
	}
	var got struct {
		Consolidation struct {
			Actions []struct {
				Kind   string
				Nodes  []string
				Saving float64 `json:"savingPerHour"`
				Reason string
			}
			Blocked []struct{ Node, Reason string }
			Current float64 `json:"currentPricePerHour"`
			Target  float64 `json:"targetPricePerHour"`
			Saving  float64 `json:"savingPerHour"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("explain output is not JSON: %v\n%s", err, r.stdout)
	}
	cons := got.Consolidation
	t.Logf("consolidation: %+v", cons)
	if len(cons.Actions) == 0 || cons.Saving <= 0 || cons.Target >= cons.Current {
		t.Fatalf("want actions that save money on three nodes holding 0.6 CPU: %+v", cons)
	}
	removed := map[string]bool{}
	for _, a := range cons.Actions {
		if a.Reason == "" {
			t.Errorf("action %+v has no reason", a)
		}
		for _, n := range a.Nodes {
			removed[n] = true
		}
	}
	if removed["node-c"] {
		t.Errorf("node-c runs a bare pod and must not be removed: %+v", cons.Actions)
	}
	blockedC := ""
	for _, b := range cons.Blocked {
		if b.Node == "node-c" {
			blockedC = b.Reason
		}
	}
	if !strings.Contains(blockedC, "default/bare") {
		t.Errorf("node-c's reason %q should name the bare pod", blockedC)
	}

	// Read-only: every node and pod is still there, nothing cordoned.
	list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range list.Items {
		if n.Spec.Unschedulable || len(n.Spec.Taints) > 0 {
			t.Errorf("node %s was changed: unschedulable %v, taints %v", n.Name, n.Spec.Unschedulable, n.Spec.Taints)
		}
	}
	if len(list.Items) != 3 {
		t.Errorf("%d nodes after explain, want 3", len(list.Items))
	}
	human := plugin(t, env.Kubeconfig, "explain", "--consolidation", "--region", "us-east-1")
	t.Logf("kubectl rightsize explain --consolidation:\n%s", human.stdout)
	for _, want := range []string{"Consolidation (read-only: nothing is changed; the planner's guards", "Saving available:", "node-c"} {
		if !strings.Contains(human.stdout, want) {
			t.Errorf("output lacks %q:\n%s%s", want, human.stdout, human.stderr)
		}
	}
}

// testRightsizeConsolidation adds a rightsize.dev NodePool with three
// nodes launched for it (their NodeClaims made by hand, as the operator
// would make them): one empty, one running a pod whose PDB allows no
// disruption, one annotated do-not-disrupt. explain --consolidation must
// show the operator deleting the empty node next, with its saving, and
// name the guard that keeps each other node.
func testRightsizeConsolidation(t *testing.T, e *opEnv) {
	ctx := context.Background()
	c := e.Client()
	np := &v1alpha1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "apps"},
		Spec: v1alpha1.NodePoolSpec{
			Template: v1alpha1.NodeClaimTemplate{Spec: v1alpha1.NodeClaimTemplateSpec{
				NodeClassRef: v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "SimNodeClass", Name: "default"},
				Requirements: []v1alpha1.NodeSelectorRequirement{req("karpenter.k8s.aws/instance-family", "m7i")},
			}},
			Disruption: v1alpha1.Disruption{ConsolidationPolicy: v1alpha1.ConsolidationPolicyWhenEmptyOrUnderutilized, ConsolidateAfter: "0s",
				Budgets: []v1alpha1.Budget{{Nodes: "100%"}}},
		},
	}
	if err := e.c.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	const price = "0.2016" // m7i.xlarge on demand
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("58")}
	nodes := []string{"apps-empty", "apps-pdb", "apps-pinned"}
	for _, name := range nodes {
		if _, err := e.AddNode(ctx, testenv.Node{
			Name: name,
			Labels: map[string]string{
				"node.kubernetes.io/instance-type": "m7i.xlarge",
				"topology.kubernetes.io/zone":      "us-east-1a",
				"topology.kubernetes.io/region":    "us-east-1",
				v1alpha1.LabelCapacityType:         "on-demand",
				v1alpha1.LabelNodePool:             "apps",
				v1alpha1.KarpenterLabelNodePool:    "apps",
				"e2e.rightsize.dev/slot":           name,
			},
			Capacity: capacity,
		}); err != nil {
			t.Fatal(err)
		}
		patch := fmt.Sprintf(`{"spec":{"providerID":"sim:///us-east-1a/%s"}}`, name)
		if name == "apps-pinned" {
			patch = fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}},"spec":{"providerID":"sim:///us-east-1a/%s"}}`, snapshot.AnnotationRightsizeDoNotDisrupt, name)
		}
		if _, err := c.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		claim := &v1alpha1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.LabelNodePool: "apps"}},
			Spec: v1alpha1.NodeClaimSpec{
				NodeClassRef: v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "SimNodeClass", Name: "default"},
				Requirements: []v1alpha1.NodeSelectorRequirement{req("node.kubernetes.io/instance-type", "m7i.xlarge")},
			},
		}
		if err := e.c.Create(ctx, claim); err != nil {
			t.Fatal(err)
		}
		now := metav1.Now()
		claim.Status = v1alpha1.NodeClaimStatus{ProviderID: "sim:///us-east-1a/" + name, NodeName: name, InstanceType: "m7i.xlarge", PricePerHour: price,
			Capacity: capacity, Allocatable: capacity}
		for _, cond := range []string{v1alpha1.ConditionLaunched, v1alpha1.ConditionRegistered, v1alpha1.ConditionInitialized} {
			claim.Status.Conditions = append(claim.Status.Conditions, metav1.Condition{Type: cond, Status: metav1.ConditionTrue, Reason: cond, Message: "", LastTransitionTime: now})
		}
		if err := e.c.Status().Update(ctx, claim); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range nodes {
		if err := e.WaitNodeReady(ctx, name, 60*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	for app, slot := range map[string]string{"guarded": "apps-pdb", "pinned": "apps-pinned"} {
		dep := deployment(app, 1, "500m", "1Gi")
		dep.Spec.Template.Spec.NodeSelector = map[string]string{"e2e.rightsize.dev/slot": slot}
		if _, err := c.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: metav1.NamespaceDefault},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
	}
	if _, err := c.PolicyV1().PodDisruptionBudgets(metav1.NamespaceDefault).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPods(t, c, "guarded", 1, running)
	waitPods(t, c, "pinned", 1, running)

	r := plugin(t, e.Kubeconfig, "explain", "--consolidation", "--region", "us-east-1", "-o", "json")
	if r.err != nil {
		t.Fatalf("explain --consolidation: %v\n%s", r.err, r.stderr)
	}
	type action struct {
		Kind             string
		Nodes            []string
		Saving           float64 `json:"savingPerHour"`
		Reason           string
		DisruptionReason string
	}
	var got struct {
		Consolidation struct {
			Guards  string
			Actions []action
			Next    *action
			Nodes   []struct{ Node, NodePool, Owner, Verdict, Reason string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("explain output is not JSON: %v\n%s", err, r.stdout)
	}
	cons := got.Consolidation
	t.Logf("consolidation: %+v", cons)
	if cons.Guards != "operator" {
		t.Errorf("guards = %q, want operator: a rightsize.dev NodePool exists", cons.Guards)
	}
	if !slices.ContainsFunc(cons.Actions, func(a action) bool {
		return a.Kind == "Delete" && slices.Equal(a.Nodes, []string{"apps-empty"}) && a.Saving > 0.2 && a.Saving < 0.21
	}) {
		t.Errorf("want an action deleting apps-empty for its NodeClaim's $%s/h: %+v", price, cons.Actions)
	}
	if n := cons.Next; n == nil || !slices.Equal(n.Nodes, []string{"apps-empty"}) || n.DisruptionReason != "Empty" {
		t.Errorf("next = %+v, want apps-empty deleted as Empty", n)
	}
	want := map[string][2]string{
		"apps-empty":  {"next", "no pods"},
		"apps-pdb":    {"kept", "PDB default/guarded allows 0 disruptions"},
		"apps-pinned": {"kept", "the node has do-not-disrupt"},
		"node-a":      {"", ""}, // Karpenter's: the planner's verdict
	}
	for _, v := range cons.Nodes {
		w, ok := want[v.Node]
		if !ok {
			continue
		}
		delete(want, v.Node)
		if v.Node == "node-a" {
			if v.Owner != "karpenter.sh" || v.Reason == "" {
				t.Errorf("node-a: %+v, want a verdict for a Karpenter node", v)
			}
			continue
		}
		if v.Verdict != w[0] || !strings.Contains(v.Reason, w[1]) || v.Owner != "rightsize.dev" || v.NodePool != "apps" {
			t.Errorf("%s: %+v, want verdict %s and a reason naming %q", v.Node, v, w[0], w[1])
		}
	}
	if len(want) > 0 {
		t.Errorf("no verdict for %v", want)
	}
	human := plugin(t, e.Kubeconfig, "explain", "--consolidation", "--region", "us-east-1")
	t.Logf("kubectl rightsize explain --consolidation:\n%s", human.stdout)
	for _, s := range []string{"the rightsize operator's guards", "Next: the operator would delete apps-empty (Empty)",
		"PDB default/guarded allows 0 disruptions.", "the node has do-not-disrupt."} {
		if !strings.Contains(human.stdout, s) {
			t.Errorf("output lacks %q:\n%s%s", s, human.stdout, human.stderr)
		}
	}
}
