package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

const gi = int64(1) << 30

// testTypes is one instance type, m7i.large (2 CPU, 8 GiB), on-demand in
// us-east-1a at $0.1008/h and spot at $0.04/h.
func testTypes() []solver.InstanceType {
	var c solver.Resources
	c[solver.CPU], c[solver.Memory], c[solver.Pods] = 2000, 8*gi, 29
	return []solver.InstanceType{{Name: "m7i.large", Capacity: c,
		Labels: map[string]string{solver.LabelInstanceType: "m7i.large", "karpenter.k8s.aws/instance-family": "m7i"},
		Offerings: []solver.Offering{
			{Zone: "us-east-1a", CapacityType: "on-demand", Price: 0.1008},
			{Zone: "us-east-1a", CapacityType: "spot", Price: 0.04},
		}}}
}

func TestPrices(t *testing.T) {
	prices := NewPrices([]solver.InstanceType{{Name: "m7i.large", Offerings: []solver.Offering{
		{Zone: "us-east-1a", CapacityType: "on-demand", Price: 0.1008},
		{Zone: "us-east-1a", CapacityType: "spot", Price: 0.04},
		{Zone: "us-east-1b", CapacityType: "spot", Price: 0.05},
	}}})
	tests := []struct {
		name                string
		node                solver.Node
		catalog, node_price float64
		known               bool
	}{
		{"zone and capacity type", solver.Node{InstanceType: "m7i.large", Zone: "us-east-1b", CapacityType: "spot"}, 0.05, 0.05, true},
		{"no capacity type is on-demand", solver.Node{InstanceType: "m7i.large", Zone: "us-east-1a"}, 0.1008, 0.1008, true},
		{"zone not in the catalog", solver.Node{InstanceType: "m7i.large", Zone: "us-east-1f", CapacityType: "spot"}, 0.04, 0.04, true},
		{"unknown type", solver.Node{InstanceType: "kwok", Zone: "us-east-1a"}, 0, 0, false},
		{"no type label", solver.Node{}, 0, 0, false},
		{"capacity type not offered", solver.Node{InstanceType: "m7i.large", CapacityType: "reserved"}, 0, 0, false},
		{"a recorded price is what is paid", solver.Node{InstanceType: "m7i.large", Zone: "us-east-1a", Price: 0.09}, 0.1008, 0.09, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, known := prices.Catalog(&tc.node)
			if got != tc.catalog || known != (tc.catalog > 0) {
				t.Errorf("Catalog = %v %v, want %v", got, known, tc.catalog)
			}
			got, known = prices.Node(&tc.node)
			if got != tc.node_price || known != tc.known {
				t.Errorf("Node = %v %v, want %v %v", got, known, tc.node_price, tc.known)
			}
		})
	}
}

// cluster is a live cluster of the rightsize pool "web": node "paid" of
// NodeClaim "paid" (which records $0.09/h, not the catalog's $0.1008/h),
// node "plain" that no claim owns, NodeClaim "launching" whose Node has
// not registered, NodeClaim "leaving" being deleted, and one pending pod
// of 1 CPU.
func cluster(t *testing.T) *snapshot.Cluster {
	t.Helper()
	np := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1alpha1.NodePoolSpec{
		Template: v1alpha1.NodeClaimTemplate{Spec: v1alpha1.NodeClaimTemplateSpec{
			NodeClassRef: v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "SimNodeClass", Name: "sim"},
		}}}}
	full := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("29")}
	node := func(name, providerID string, labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: providerID},
			Status: corev1.NodeStatus{Allocatable: full, Capacity: full, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	}
	typeLabels := map[string]string{solver.LabelInstanceType: "m7i.large", solver.LabelZone: "us-east-1a", solver.LabelCapacityType: "on-demand"}
	claim := func(name, providerID, price string, conditions ...string) *v1alpha1.NodeClaim {
		c := &v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.LabelNodePool: "web"}},
			Spec: v1alpha1.NodeClaimSpec{Requirements: []v1alpha1.NodeSelectorRequirement{
				{Key: solver.LabelInstanceType, Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"m7i.large"}},
				{Key: solver.LabelZone, Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"us-east-1a"}},
				{Key: solver.LabelCapacityType, Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"on-demand"}},
			}},
			Status: v1alpha1.NodeClaimStatus{ProviderID: providerID, PricePerHour: price}}
		for _, cond := range conditions {
			c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: cond, Status: metav1.ConditionTrue})
		}
		return c
	}
	leaving := claim("leaving", "", "0.1008")
	leaving.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	leaving.Finalizers = []string{"x"}
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "app", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}}
	withPool := map[string]string{v1alpha1.LabelNodePool: "web"}
	for k, v := range typeLabels {
		withPool[k] = v
	}
	objs := snapshot.Objects{
		Pods: []*corev1.Pod{pending},
		Nodes: []*corev1.Node{
			node("paid", "sim://paid", withPool),
			node("plain", "", typeLabels),
		},
		RightsizeInstalled: true,
		RightsizeNodePools: []*v1alpha1.NodePool{np},
		NodeClaims: []*v1alpha1.NodeClaim{
			claim("paid", "sim://paid", "0.09", v1alpha1.ConditionLaunched, v1alpha1.ConditionRegistered, v1alpha1.ConditionInitialized),
			claim("launching", "", "0.1008"),
			leaving,
		},
	}
	// The pending pod must not fit on the existing nodes: fill them.
	for _, n := range []string{"paid", "plain"} {
		objs.Pods = append(objs.Pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fill-" + n, Namespace: "default",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "fill", Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{NodeName: n, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	}
	cl := snapshot.FromObjects(&objs)
	if len(cl.Pools) != 1 {
		t.Fatalf("pools %v, warnings %v", cl.Pools, cl.Warnings)
	}
	return cl
}

func TestBuildLive(t *testing.T) {
	cl := cluster(t)
	r, err := Build(Input{Cluster: cl, InstanceTypes: testTypes(), Default: &DefaultPool{}})
	if err != nil {
		t.Fatal(err)
	}
	p := r.Problem
	names := make([]string, len(p.Nodes))
	for i := range p.Nodes {
		names[i] = p.Nodes[i].Name
	}
	// The registered claim is its node; the one being deleted is no
	// capacity; the launching one is an in-flight node.
	if want := []string{"paid", "plain", "launching"}; !slices.Equal(names, want) {
		t.Fatalf("nodes %v, want %v", names, want)
	}
	if !slices.Equal(r.InFlight, []string{"launching"}) {
		t.Errorf("in flight %v, want [launching]", r.InFlight)
	}
	tests := []struct {
		node     string
		price    float64
		inFlight bool
	}{
		{"paid", 0.09, false},       // what the NodeClaim pays, not the catalog's
		{"plain", 0.1008, false},    // the catalog's
		{"launching", 0.1008, true}, // the claim's, launching
	}
	for i, tc := range tests {
		n := &p.Nodes[i]
		if n.Price != tc.price || n.InFlight != tc.inFlight {
			t.Errorf("%s: price %v in flight %v, want %v %v", tc.node, n.Price, n.InFlight, tc.price, tc.inFlight)
		}
	}
	launching := &p.Nodes[2]
	if launching.Allocatable[solver.CPU] != 2000 || launching.Pool != "web" || launching.Labels[solver.LabelNodePool] != "web" ||
		launching.Labels[v1alpha1.LabelNodePool] != "web" || launching.Labels[corev1.LabelHostname] != "launching" {
		t.Errorf("launching node %+v", launching)
	}
	if len(p.Pools) != 1 || p.Pools[0].Name != "web" {
		t.Errorf("pools %+v: the cluster's pool, and no default pool beside it", p.Pools)
	}
	// The pending pod goes to the node already launching, not a new one.
	solved, err := solver.Solve(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(solved.NewNodes) != 0 || len(solved.Existing) != 1 || solved.Existing[0].Node != "launching" {
		t.Errorf("plan: new %+v existing %+v, want the pod on the in-flight node", solved.NewNodes, solved.Existing)
	}
	// Build does not change the cluster it was given.
	if cl.Nodes[0].Price != 0.09 || len(cl.Nodes) != 2 {
		t.Errorf("cluster changed: %+v", cl.Nodes)
	}
}

func TestBuildClaimsAFrontEndLaunched(t *testing.T) {
	cl := cluster(t)
	extra := []Claim{
		{Name: "launching", Pool: "web", InstanceType: "m7i.large", Price: 1}, // the cluster's own wins
		{Name: "direct", Pool: "web", InstanceType: "m7i.large", Zone: "us-east-1a", CapacityType: "spot", Price: 0.04},
		{Name: "plain", InstanceType: "m7i.large"},                                                                             // its node registered
		{Name: "unknown", InstanceType: "x9.huge", Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}, // sized by its requests
		{Name: "nothing", InstanceType: "x9.huge"},                                                                             // nothing says how large
	}
	r, err := Build(Input{Cluster: cl, InstanceTypes: testTypes(), Claims: extra})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"launching", "direct", "unknown"}; !slices.Equal(r.InFlight, want) {
		t.Fatalf("in flight %v, want %v", r.InFlight, want)
	}
	got := map[string]*solver.Node{}
	for i := range r.Problem.Nodes {
		got[r.Problem.Nodes[i].Name] = &r.Problem.Nodes[i]
	}
	if got["launching"].Price != 0.1008 || got["direct"].Price != 0.04 || got["unknown"].Allocatable[solver.CPU] != 3000 {
		t.Errorf("launching %+v, direct %+v, unknown %+v", got["launching"], got["direct"], got["unknown"])
	}
}

func TestBuildOffline(t *testing.T) {
	pods := []solver.Pod{{Namespace: "default", Name: "a", Owner: "Pod/a"}}
	spot := true
	tests := []struct {
		name    string
		in      Input
		pools   []string
		capType []string
		err     string
	}{
		{"no input", Input{}, nil, nil, "no input"},
		{"the default pool when the manifests have none", Input{Manifests: &snapshot.Manifests{Pods: pods}, Default: &DefaultPool{}}, []string{"default"}, []string{"on-demand"}, ""},
		{"no default pool asked for", Input{Manifests: &snapshot.Manifests{Pods: pods}}, []string{}, nil, ""},
		{"the manifests' pools", Input{Manifests: &snapshot.Manifests{Pods: pods, Pools: []solver.Pool{{Name: "web"}}}, Default: &DefaultPool{}}, []string{"web"}, nil, ""},
		{"a bad default capacity type", Input{Manifests: &snapshot.Manifests{}, Default: &DefaultPool{CapacityTypes: []string{"reserved"}}}, nil, nil, `--capacity-type "reserved"`},
		{"what-if spot", Input{Manifests: &snapshot.Manifests{Pods: pods}, Default: &DefaultPool{}, WhatIf: WhatIf{Spot: &spot}}, []string{"default"}, []string{"spot", "on-demand"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Build(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			names := []string{}
			for _, p := range r.Problem.Pools {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, tc.pools) {
				t.Errorf("pools %v, want %v", names, tc.pools)
			}
			if len(r.Problem.Pods) != len(tc.in.Manifests.Pods) || r.Problem.Nodes != nil {
				t.Errorf("pods %d nodes %v", len(r.Problem.Pods), r.Problem.Nodes)
			}
			if tc.capType != nil {
				i := slices.IndexFunc(r.Problem.Pools[0].Requirements, func(q solver.Requirement) bool { return q.Key == solver.LabelCapacityType })
				if i < 0 || !slices.Equal(r.Problem.Pools[0].Requirements[i].Values, tc.capType) {
					t.Errorf("requirements %+v, want capacity types %v", r.Problem.Pools[0].Requirements, tc.capType)
				}
			}
		})
	}
}
