package explain

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/disruption"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/report"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestConsolidationOperatorGuards builds a cluster run by the rightsize
// operator: an empty node, a node whose pod a PDB protects, a
// do-not-disrupt node and a node nobody owns, and checks every node's
// verdict is the operator's, one sentence each; a node whose pod fits
// elsewhere is planned after the empty node, one action at a time.
func TestConsolidationOperatorGuards(t *testing.T) {
	now := time.Now()
	pool := webPool("0s")
	objs := snapshot.Objects{RightsizeInstalled: true, RightsizeNodePools: []*v1alpha1.NodePool{pool}}
	node := func(name string, owned bool, annotations map[string]string) {
		labels := map[string]string{solver.LabelInstanceType: "m7i.xlarge", solver.LabelZone: "us-east-1a", solver.LabelCapacityType: "on-demand",
			corev1.LabelHostname: name}
		if owned {
			labels[v1alpha1.LabelNodePool], labels[solver.LabelNodePool] = "web", "web"
		}
		list := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("58")}
		objs.Nodes = append(objs.Nodes, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
			Spec:       corev1.NodeSpec{ProviderID: "sim://" + name},
			Status: corev1.NodeStatus{Capacity: list, Allocatable: list,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		})
		if owned {
			objs.NodeClaims = append(objs.NodeClaims, &v1alpha1.NodeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "web-" + name, Labels: map[string]string{v1alpha1.LabelNodePool: "web"}, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
				Spec:       v1alpha1.NodeClaimSpec{NodeClassRef: v1alpha1.NodeClassReference{Kind: "SimNodeClass", Name: "default"}},
				Status: v1alpha1.NodeClaimStatus{ProviderID: "sim://" + name, PricePerHour: "0.2", Capacity: list, Allocatable: list,
					Conditions: []metav1.Condition{{Type: v1alpha1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"}}},
			})
		}
	}
	yes := true
	pod := func(name, node string, labels map[string]string) {
		objs.Pods = append(objs.Pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name, Controller: &yes}}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		})
	}
	node("empty", true, nil)
	node("guarded", true, nil)
	node("pinned", true, map[string]string{snapshot.AnnotationRightsizeDoNotDisrupt: "true"})
	node("foreign", false, nil)
	node("spare", true, nil)
	pod("db", "guarded", map[string]string{"app": "db"})
	pod("cache", "pinned", nil)
	pod("other", "foreign", nil)
	pod("light", "spare", nil)
	objs.PDBs = []*policyv1.PodDisruptionBudget{{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0},
	}}
	cl := snapshot.FromObjects(&objs)
	built := buildLive(t, cl)
	rc, err := disruption.Consolidation(cl, built.Problem, built.Repriced, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Guards != disruption.GuardsOperator {
		t.Errorf("guards = %q, want %q", rc.Guards, disruption.GuardsOperator)
	}
	if rc.Next == nil || strings.Join(rc.Next.Nodes, ",") != "empty" || rc.Next.DisruptionReason != "Empty" || rc.Next.Saving != 0.2 {
		t.Errorf("next = %+v, want the empty node deleted for $0.2/h", rc.Next)
	}
	want := map[string][2]string{
		"empty":   {disruption.VerdictNext, "no pods"},
		"guarded": {disruption.VerdictKept, "PDB default/db allows 0 disruptions"},
		"pinned":  {disruption.VerdictKept, "do-not-disrupt"},
		"foreign": {disruption.VerdictKept, "no rightsize NodeClaim owns it"},
		"spare":   {disruption.VerdictNext, "its 1 pod fit on guarded"},
	}
	for _, v := range rc.Nodes {
		w, ok := want[v.Node]
		if !ok {
			t.Errorf("unexpected node verdict %+v", v)
			continue
		}
		delete(want, v.Node)
		if v.Verdict != w[0] || !strings.Contains(v.Reason, w[1]) {
			t.Errorf("%s: %s %q, want %s and %q", v.Node, v.Verdict, v.Reason, w[0], w[1])
		}
		if strings.Contains(v.Reason, ". ") || strings.HasSuffix(v.Reason, ".") || strings.Contains(v.Reason, "\n") {
			t.Errorf("%s: reason %q is not one sentence without its full stop", v.Node, v.Reason)
		}
	}
	if len(want) > 0 {
		t.Errorf("no verdict for %v", want)
	}
	var out bytes.Buffer
	if err := printConsolidation(&out, rc); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	if len(rc.Together) != 1 || strings.Join(rc.Together[0].Nodes, ",") != "spare" {
		t.Errorf("together = %+v, want spare deleted at the same time", rc.Together)
	}
	if rc.Gap <= 0 || len(rc.GapGuards) == 0 {
		t.Errorf("gap %v guards %+v, want the gap and the guards that keep it", rc.Gap, rc.GapGuards)
	}
	for _, s := range []string{"the rightsize operator's guards", "Next: the operator would delete empty (Empty)", "and at the same time delete spare (Underutilized)",
		"above packed from scratch", "1 node ($0.2000/h): PDB default/db allows 0 disruptions", "guarded", "PDB default/db allows 0 disruptions"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q", s)
		}
	}
}

// TestConsolidationCountsFromLastPodEvent checks that explain counts
// consolidateAfter from the pod event a NodeClaim recorded (a pod that
// left, which the pods alone no longer show), as the operator does, with
// the NodeClaim read from JSON as from a live cluster.
func TestConsolidationCountsFromLastPodEvent(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name string
		// event is how long ago the idle node's NodeClaim says a pod
		// arrived or left; 0 for none recorded.
		event   time.Duration
		verdict string
		reason  string
	}{
		{name: "no pod event recorded: the idle node goes", verdict: disruption.VerdictNext, reason: "no pods"},
		{name: "a pod left 20s ago: the idle node waits for consolidateAfter", event: 20 * time.Second, verdict: disruption.VerdictKept,
			reason: "pods changed 20s ago; consolidateAfter is 1m"},
		{name: "a pod left 5m ago: the idle node goes", event: 5 * time.Minute, verdict: disruption.VerdictNext, reason: "no pods"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := webPool("1m")
			objs := snapshot.Objects{RightsizeInstalled: true, RightsizeNodePools: []*v1alpha1.NodePool{pool}}
			for _, name := range []string{"idle", "busy"} {
				node, claim := webNode(name, "0.2", now)
				objs.Nodes = append(objs.Nodes, node)
				if name == "idle" && tt.event > 0 {
					claim.Status.LastPodEventTime = &metav1.Time{Time: now.Add(-tt.event)}
				}
				// As the live read decodes it.
				raw, err := json.Marshal(claim)
				if err != nil {
					t.Fatal(err)
				}
				read := &v1alpha1.NodeClaim{}
				if err := json.Unmarshal(raw, read); err != nil {
					t.Fatal(err)
				}
				objs.NodeClaims = append(objs.NodeClaims, read)
			}
			objs.Pods = append(objs.Pods, appPod("busy", now))
			cl := snapshot.FromObjects(&objs)
			built := buildLive(t, cl)
			rc, err := disruption.Consolidation(cl, built.Problem, built.Repriced, now, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got *disruption.NodeVerdict
			for i := range rc.Nodes {
				if rc.Nodes[i].Node == "idle" {
					got = &rc.Nodes[i]
				}
			}
			if got == nil || got.Verdict != tt.verdict || !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("idle: %+v, want %s and a reason naming %q", got, tt.verdict, tt.reason)
			}
		})
	}
}

// webPool is the rightsize NodePool "web" of these tests: m7i on a
// SimNodeClass, consolidating when empty or underutilized after
// consolidateAfter, any number of nodes at a time.
func webPool(consolidateAfter string) *v1alpha1.NodePool {
	return &v1alpha1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1alpha1.NodePoolSpec{
			Template: v1alpha1.NodeClaimTemplate{Spec: v1alpha1.NodeClaimTemplateSpec{
				NodeClassRef: v1alpha1.NodeClassReference{Kind: "SimNodeClass", Name: "default"},
				Requirements: []v1alpha1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-family", Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"m7i"}}},
			}},
			Disruption: v1alpha1.Disruption{ConsolidationPolicy: v1alpha1.ConsolidationPolicyWhenEmptyOrUnderutilized,
				ConsolidateAfter: v1alpha1.NillableDuration(consolidateAfter), Budgets: []v1alpha1.Budget{{Nodes: "100%"}}},
		},
	}
}

// buildLive plans a cluster as live explain does, on the embedded catalog.
func buildLive(t *testing.T, cl *snapshot.Cluster) *plan.Result {
	t.Helper()
	cat := plan.Catalog{Region: "us-east-1"}
	types, _, err := cat.InstanceTypes()
	if err != nil {
		t.Fatal(err)
	}
	built, err := plan.Build(plan.Input{Cluster: cl, InstanceTypes: types, Catalog: &cat, Default: &plan.DefaultPool{}})
	if err != nil {
		t.Fatal(err)
	}
	return built
}

// TestConsolidationPricesRepricedNodesAsTheOverlay: a node of a type a
// NodeOverlay re-prices is priced at the overlay's price, as the operator
// prices it (pkg/disruption's Snapshot.Repriced), not at the price its
// NodeClaim recorded; otherwise replacing it by a node of its own type
// looks like a saving, and explain --consolidation proposes what the
// operator, on the same cluster, would do every round.
func TestConsolidationPricesRepricedNodesAsTheOverlay(t *testing.T) {
	now := time.Now()
	node, claim := webNode("busy", "0.2016", now)
	objs := snapshot.Objects{RightsizeInstalled: true, RightsizeNodePools: []*v1alpha1.NodePool{webPool("0s")},
		NodeOverlays: []json.RawMessage{[]byte(`{"apiVersion":"karpenter.sh/v1alpha1","kind":"NodeOverlay","metadata":{"name":"savings"},
			"spec":{"requirements":[{"key":"node.kubernetes.io/instance-type","operator":"In","values":["m7i.xlarge"]}],"price":"0.05"}}`)}}
	objs.Nodes, objs.NodeClaims, objs.Pods = []*corev1.Node{node}, []*v1alpha1.NodeClaim{claim}, []*corev1.Pod{appPod("busy", now)}
	cl := snapshot.FromObjects(&objs)
	built := buildLive(t, cl)
	if !built.Repriced["m7i.xlarge"] {
		t.Fatalf("the overlay re-priced %v, want m7i.xlarge", built.Repriced)
	}
	rc, err := disruption.Consolidation(cl, built.Problem, built.Repriced, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Next != nil || len(rc.ConsolidationPlan.Actions) != 0 {
		t.Errorf("next %+v, actions %+v: want none (the node costs the overlay's $0.05/h, as its replacement would)", rc.Next, rc.ConsolidationPlan.Actions)
	}
}

// webNode is a Ready m7i.xlarge node of pool web, an hour old, and its
// initialized NodeClaim recording price.
func webNode(name, price string, now time.Time) (*corev1.Node, *v1alpha1.NodeClaim) {
	hourAgo := metav1.NewTime(now.Add(-time.Hour))
	list := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("58")}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: hourAgo, Labels: map[string]string{solver.LabelInstanceType: "m7i.xlarge",
			solver.LabelZone: "us-east-1a", solver.LabelCapacityType: "on-demand", corev1.LabelHostname: name, v1alpha1.LabelNodePool: "web", solver.LabelNodePool: "web"}},
		Spec: corev1.NodeSpec{ProviderID: "sim://" + name},
		Status: corev1.NodeStatus{Capacity: list, Allocatable: list,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	claim := &v1alpha1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "web-" + name, Labels: map[string]string{v1alpha1.LabelNodePool: "web"}, CreationTimestamp: hourAgo},
		Spec:       v1alpha1.NodeClaimSpec{NodeClassRef: v1alpha1.NodeClassReference{Kind: "SimNodeClass", Name: "default"}},
		Status: v1alpha1.NodeClaimStatus{ProviderID: "sim://" + name, PricePerHour: price, Capacity: list, Allocatable: list,
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"}}},
	}
	return node, claim
}

// appPod is a Running pod of a ReplicaSet on node, requesting 3 CPU and
// 1Gi, created an hour ago.
func appPod(node string, now time.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "app", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// TestConsolidationKeepsWhatACommitmentPays: explain --consolidation
// prices the operator's nodes beyond the cluster's Commitments, as its
// controller does (plan.CoveredPrices): two light nodes merge onto a
// cheaper spot node at list prices; with a reservation covering one, only
// the other goes, its pod onto the covered node (replacing the covered
// node saves nothing the bill sees).
func TestConsolidationKeepsWhatACommitmentPays(t *testing.T) {
	now := time.Now()
	ri := []byte(`{"apiVersion":"rightsize.dev/v1alpha1","kind":"Commitment","metadata":{"name":"ri"},
		"spec":{"type":"ReservedInstances","reservedInstances":{"instanceType":"m7i.xlarge","instanceCount":1,"availabilityZone":"us-east-1a"}}}`)
	for _, tc := range []struct {
		name        string
		commitments []json.RawMessage
		deleted     string
		saving      float64 // at least
	}{
		{name: "no Commitment: both go, onto a cheaper node", deleted: "a,b", saving: 0.5},
		{name: "a reservation covering a: b goes", commitments: []json.RawMessage{ri}, deleted: "b", saving: 0.2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, aClaim := webNode("a", "0.4", now)
			b, bClaim := webNode("b", "0.2", now)
			objs := snapshot.Objects{RightsizeInstalled: true, RightsizeNodePools: []*v1alpha1.NodePool{webPool("0s")}, Commitments: tc.commitments,
				Nodes: []*corev1.Node{a, b}, NodeClaims: []*v1alpha1.NodeClaim{aClaim, bClaim}}
			for _, n := range []string{"a", "b"} {
				pod := appPod(n, now)
				pod.Name = "app-" + n
				pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("500m")
				objs.Pods = append(objs.Pods, pod)
			}
			cl := snapshot.FromObjects(&objs)
			built := buildLive(t, cl)
			rep := &report.Report{Problem: built.Problem}
			if err := rep.Consolidate(cl, built, now); err != nil {
				t.Fatal(err)
			}
			next := rep.Consolidation.Next
			if next == nil || strings.Join(next.Nodes, ",") != tc.deleted || next.Saving < tc.saving || next.Saving > 0.6 {
				t.Errorf("next %+v, want %s gone for at least $%v/h of their $0.6/h", next, tc.deleted, tc.saving)
			}
			if next != nil && len(tc.commitments) > 0 && math.Abs(next.Saving-0.2) > 1e-9 {
				t.Errorf("saving $%v/h, want b's $0.2/h alone: a's pod stays on what the reservation pays", next.Saving)
			}
		})
	}
}
