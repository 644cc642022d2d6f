package provisioning

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/state"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func stepType(name string, offerings ...cloud.Offering) cloud.InstanceType {
	return cloud.InstanceType{Name: name, CPU: 2000, Memory: 8 << 30, Architecture: "amd64", MaxENIs: 3, IPv4PerENI: 10, Offerings: offerings}
}

var (
	odA   = cloud.Offering{Zone: "us-east-1a", CapacityType: cloud.CapacityTypeOnDemand, Price: 0.1}
	odB   = cloud.Offering{Zone: "us-east-1b", CapacityType: cloud.CapacityTypeOnDemand, Price: 0.1}
	spotA = cloud.Offering{Zone: "us-east-1a", CapacityType: cloud.CapacityTypeSpot, Price: 0.03}
)

func TestPartitionTypesSharesTypesOfferedAlikeAndGivesTheRestTheirOwn(t *testing.T) {
	large, xl := stepType("m5.large", odA), stepType("m5.xlarge", odA)
	kubelet := stepType("m5.large", odA)
	kubelet.Kubelet = &cloud.Kubelet{PodsPerCore: 2}
	elsewhere := stepType("m5.large", odB)
	tests := []struct {
		name   string
		offers []poolOffer
		shared []string
		names  map[string][]string
		own    []string
		// largeOn are the offerings of the shared m5.large.
		largeOn []cloud.Offering
	}{
		{name: "pools offering the same types share them",
			offers: []poolOffer{{"a", []cloud.InstanceType{large, xl}}, {"b", []cloud.InstanceType{xl, large}}},
			shared: []string{"m5.large", "m5.xlarge"},
			names:  map[string][]string{"a": {"m5.large", "m5.xlarge"}, "b": {"m5.xlarge", "m5.large"}}, largeOn: []cloud.Offering{odA}},
		{name: "a pool offering fewer types names only those",
			offers: []poolOffer{{"a", []cloud.InstanceType{large, xl}}, {"b", []cloud.InstanceType{large}}},
			shared: []string{"m5.large", "m5.xlarge"},
			names:  map[string][]string{"a": {"m5.large", "m5.xlarge"}, "b": {"m5.large"}}, largeOn: []cloud.Offering{odA}},
		{name: "a type with kubelet settings makes the whole pool's list its own",
			offers: []poolOffer{{"k", []cloud.InstanceType{xl, kubelet}}, {"a", []cloud.InstanceType{large}}},
			shared: []string{"m5.large"},
			names:  map[string][]string{"a": {"m5.large"}}, own: []string{"k"}, largeOn: []cloud.Offering{odA}},
		{name: "a type offered otherwise than a pool before: the later pool has its own",
			offers: []poolOffer{{"a", []cloud.InstanceType{large}}, {"b", []cloud.InstanceType{elsewhere, xl}}},
			shared: []string{"m5.large"},
			names:  map[string][]string{"a": {"m5.large"}}, own: []string{"b"}, largeOn: []cloud.Offering{odA}},
		{name: "the same pools the other way round: the other pool has its own",
			offers: []poolOffer{{"b", []cloud.InstanceType{elsewhere, xl}}, {"a", []cloud.InstanceType{large}}},
			shared: []string{"m5.large", "m5.xlarge"},
			names:  map[string][]string{"b": {"m5.large", "m5.xlarge"}}, own: []string{"a"}, largeOn: []cloud.Offering{odB}},
		{name: "no pools", shared: []string{}, names: map[string][]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			part := partitionTypes(tt.offers)
			var shared []string
			for _, it := range part.sharedTypes() {
				shared = append(shared, it.Name)
			}
			if !slices.Equal(shared, tt.shared) {
				t.Errorf("shared types %v, want %v", shared, tt.shared)
			}
			if !maps.EqualFunc(part.names, tt.names, slices.Equal) {
				t.Errorf("names by pool %v, want %v", part.names, tt.names)
			}
			if own := slices.Sorted(maps.Keys(part.own)); !slices.Equal(own, tt.own) {
				t.Errorf("pools with their own types %v, want %v", own, tt.own)
			}
			for pool := range part.own {
				i := slices.IndexFunc(tt.offers, func(o poolOffer) bool { return o.pool == pool })
				if len(part.own[pool]) != len(tt.offers[i].types) {
					t.Errorf("pool %s has %d own types, want all %d it offers", pool, len(part.own[pool]), len(tt.offers[i].types))
				}
			}
			// The shared m5.large is the one of the first pool sharing it.
			if it, ok := part.shared["m5.large"]; ok && (it.Kubelet != nil || !slices.Equal(it.Offerings, tt.largeOn)) {
				t.Errorf("shared m5.large offered %v, want %v", it.Offerings, tt.largeOn)
			}
		})
	}
}

func TestRestrictPoolsHoldsEachPoolToItsTypes(t *testing.T) {
	un := state.NewUnavailable(time.Hour)
	un.MarkOffering("m5.xlarge/us-east-1a/spot")
	un.MarkOffering("m5.4xlarge/us-east-1a/spot")
	p := New(nil, nil, nil, logr.Discard(), un, Options{Region: "us-east-1"})
	kubelet := stepType("m5.xlarge", odA, spotA)
	kubelet.Kubelet = &cloud.Kubelet{PodsPerCore: 2}
	gone := stepType("m5.4xlarge", spotA) // only an unavailable offering
	part := partitionTypes([]poolOffer{
		{"all", []cloud.InstanceType{stepType("m5.large", odA), stepType("m5.2xlarge", odA)}},
		{"fewer", []cloud.InstanceType{stepType("m5.large", odA)}},
		{"own", []cloud.InstanceType{kubelet, gone}},
	})
	b := &batch{poolTypes: map[string]map[string]*solver.InstanceType{}}
	pools := []solver.Pool{{Name: "all"}, {Name: "fewer"}, {Name: "own"}, {Name: "unknown"}}
	p.restrictPools(b, pools, &part)

	for _, tt := range []struct {
		pool     string
		required []string // the instance-type requirement's values, nil for none
	}{{"all", nil}, {"fewer", []string{"m5.large"}}, {"own", nil}, {"unknown", []string{}}} {
		pool := pools[slices.IndexFunc(pools, func(p solver.Pool) bool { return p.Name == tt.pool })]
		var got []string
		n := 0
		for _, r := range pool.Requirements {
			if r.Key == solver.LabelInstanceType && r.Operator == solver.OpIn {
				got, n = r.Values, n+1
			}
		}
		if (tt.required == nil) != (n == 0) || !slices.Equal(got, tt.required) || n > 1 {
			t.Errorf("pool %s: %d instance-type requirements %v, want %v", tt.pool, n, got, tt.required)
		}
	}
	own := pools[2]
	if len(own.InstanceTypes) != 1 || own.InstanceTypes[0].Name != "m5.xlarge" {
		t.Fatalf("pool own plans types %v, want its own m5.xlarge only (the type left without offerings dropped)", own.InstanceTypes)
	}
	if offs := own.InstanceTypes[0].Offerings; len(offs) != 1 || offs[0].CapacityType != cloud.CapacityTypeOnDemand {
		t.Errorf("pool own's m5.xlarge offered %v, want on-demand only (spot is unavailable)", offs)
	}
	if got := b.poolTypes["own"]["m5.xlarge"]; got != &own.InstanceTypes[0] {
		t.Errorf("b.poolTypes[own] does not index the pool's own m5.xlarge")
	}
	if len(b.poolTypes) != 1 || b.typesOf("all") != nil || b.typesOf("own") == nil {
		t.Errorf("poolTypes has %v, want only the pool with its own types", slices.Sorted(maps.Keys(b.poolTypes)))
	}
}

func TestNominationLapseIsTheFirstNominationToLapse(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	initializedAt := func(name string, at time.Time) *v1alpha1.NodeClaim {
		c := testClaim(name)
		c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionInitialized, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}}
		return c
	}
	pod := []*corev1.Pod{testPod("web-0")}
	tests := []struct {
		name      string
		claims    []*v1alpha1.NodeClaim
		nominated []string // claims with nominated pods
		want      time.Time
	}{
		{name: "no nominations: never", claims: []*v1alpha1.NodeClaim{testClaim("a")}},
		{name: "launching: nominationTTL from now", claims: []*v1alpha1.NodeClaim{testClaim("a")}, nominated: []string{"a"}, want: now.Add(nominationTTL)},
		{name: "initialized long ago, held by the scheduler: nominationTTL from now, not at once",
			claims: []*v1alpha1.NodeClaim{initializedAt("a", now.Add(-time.Hour))}, nominated: []string{"a"}, want: now.Add(nominationTTL)},
		{name: "initialized after now (a clock ahead): nominationTTL after that",
			claims: []*v1alpha1.NodeClaim{initializedAt("a", now.Add(time.Minute))}, nominated: []string{"a"}, want: now.Add(time.Minute + nominationTTL)},
		{name: "the first of two",
			claims:    []*v1alpha1.NodeClaim{initializedAt("a", now.Add(time.Minute)), testClaim("b")},
			nominated: []string{"a", "b"}, want: now.Add(nominationTTL)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			byName := map[string]*v1alpha1.NodeClaim{}
			for _, c := range tt.claims {
				byName[c.Name] = c
			}
			nominated := map[string][]*corev1.Pod{}
			for _, name := range tt.nominated {
				nominated[name] = pod
			}
			if got := nominationLapse(nominated, byName, now); !got.Equal(tt.want) {
				t.Errorf("lapse %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOpenUninitializedLiftsTheTaintsThatGoAwayAtInitialization(t *testing.T) {
	var alloc, known solver.Resources
	alloc[solver.CPU], known[solver.CPU] = 1930, 3920
	taint := func(key, effect string) solver.Taint { return solver.Taint{Key: key, Effect: effect} }
	startup := []corev1.Taint{{Key: "cni-not-ready", Effect: corev1.TaintEffectNoSchedule}}
	tests := []struct {
		name      string
		taints    []solver.Taint
		alloc     solver.Resources
		wantKeys  []string
		wantAlloc int64
	}{
		{name: "registration, readiness and reachability taints go",
			taints: []solver.Taint{taint(cloud.UnregisteredTaintKey, "NoExecute"), taint(corev1.TaintNodeNotReady, "NoSchedule"),
				taint(corev1.TaintNodeUnreachable, "NoExecute"), taint("dedicated", "NoSchedule")},
			wantKeys: []string{"dedicated"}, wantAlloc: 1930},
		{name: "a startup taint goes only with its effect",
			taints:   []solver.Taint{taint("cni-not-ready", "NoSchedule"), taint("cni-not-ready", "NoExecute")},
			wantKeys: []string{"cni-not-ready"}, wantAlloc: 1930},
		{name: "allocatable the Node reports is kept", alloc: known, wantAlloc: 3920},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &solver.Node{Taints: tt.taints, Allocatable: tt.alloc}
			openUninitialized(n, startup, alloc)
			var keys []string
			for _, t := range n.Taints {
				keys = append(keys, t.Key)
			}
			if !slices.Equal(keys, tt.wantKeys) {
				t.Errorf("taints left %v, want %v", keys, tt.wantKeys)
			}
			if !n.InFlight {
				t.Error("node not in flight")
			}
			if n.Allocatable[solver.CPU] != tt.wantAlloc {
				t.Errorf("allocatable CPU %d, want %d", n.Allocatable[solver.CPU], tt.wantAlloc)
			}
		})
	}
}

func TestClaimNodeIsTheRegisteredNodeElseAnInFlightOne(t *testing.T) {
	typ := &solver.InstanceType{Name: "m5.large"}
	typ.Capacity[solver.CPU], typ.Capacity[solver.Memory], typ.Capacity[solver.Pods] = 2000, 8<<30, 29
	var alloc solver.Resources
	alloc[solver.CPU] = 1500
	registeredNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	launching := testClaim("c1")
	launching.Labels = map[string]string{v1alpha1.LabelNodePool: "a"}
	launching.Spec.Requirements = []v1alpha1.NodeSelectorRequirement{{Key: solver.LabelInstanceType, Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"m5.large"}}}
	initialized := testClaim("c1")
	initialized.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionInitialized, Status: metav1.ConditionTrue}}
	tests := []struct {
		name      string
		claim     *v1alpha1.NodeClaim
		node      *corev1.Node
		typ       *solver.InstanceType
		want      string // the node's name, "" for none
		inFlight  bool
		wantNodes int
	}{
		{name: "registered, not initialized: the Node's, in flight", claim: launching, node: registeredNode, want: "n1", inFlight: true, wantNodes: 1},
		{name: "registered and initialized: the Node's as it is", claim: initialized, node: registeredNode, want: "n1", wantNodes: 1},
		{name: "registered, not in the snapshot: none", claim: launching, node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, wantNodes: 1},
		{name: "not registered: an in-flight node under the claim's name", claim: launching, typ: typ, want: inFlightPrefix + "c1", inFlight: true, wantNodes: 2},
		{name: "not registered, nothing says its size: none", claim: testClaim("c1"), wantNodes: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := &snapshot.Cluster{}
			cl.Nodes = []solver.Node{{Name: "n1", Taints: []solver.Taint{{Key: cloud.UnregisteredTaintKey, Effect: "NoExecute"}}}}
			index := indexNodes(cl.Nodes)
			pc := plan.ClaimOf(tt.claim)
			sn := claimNode(cl, index, tt.claim, &pc, tt.node, alloc, tt.typ)
			if len(cl.Nodes) != tt.wantNodes {
				t.Fatalf("%d nodes in the snapshot, want %d", len(cl.Nodes), tt.wantNodes)
			}
			if tt.want == "" {
				if sn != nil {
					t.Fatalf("node %s, want none", sn.Name)
				}
				return
			}
			if sn == nil || sn.Name != tt.want {
				t.Fatalf("node %v, want %s", sn, tt.want)
			}
			if sn != &cl.Nodes[index[tt.want]] {
				t.Error("the node returned is not the snapshot's (or not indexed)")
			}
			if sn.InFlight != tt.inFlight {
				t.Errorf("in flight %v, want %v", sn.InFlight, tt.inFlight)
			}
			if tt.typ != nil && (sn.Pool != "a" || sn.InstanceType != "m5.large" || sn.Allocatable != tt.typ.Allocatable()) {
				t.Errorf("in-flight node pool %q type %q allocatable %v, want pool a, the claim's m5.large and its allocatable", sn.Pool, sn.InstanceType, sn.Allocatable)
			}
		})
	}
}

func TestPlacePodsSortsPodsIntoPlannedNominatedAndMoving(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	unsched := func(name string) corev1.Pod {
		p := testPod(name)
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
		return *p
	}
	bound := func(name, node string, phase corev1.PodPhase) corev1.Pod {
		p := testPod(name)
		p.Spec.NodeName, p.Status.Phase = node, phase
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", Controller: ptr.To(true)}}
		return *p
	}
	pods := []corev1.Pod{unsched("pending"), unsched("nominated"), unsched("recorded"), bound("running", "kept", corev1.PodRunning),
		bound("leaving", "old", corev1.PodRunning), bound("done", "kept", corev1.PodSucceeded), *testPod("not-tried")}
	claim := testClaim("c1")
	recorder := testClaim("c2")
	recorder.Annotations = map[string]string{v1alpha1.AnnotationNominatedPods: encodeNominated([]types.NamespacedName{{Namespace: "default", Name: "recorded"}})}
	byName := map[string]*v1alpha1.NodeClaim{"c1": claim, "c2": recorder}
	for _, tt := range []struct {
		batching bool
		plan     []string
		moving   []string
	}{
		{batching: false, plan: []string{"pending", "running", "leaving"}},
		{batching: true, plan: []string{"pending", "running", "leaving"}, moving: []string{"leaving"}},
	} {
		t.Run(fmt.Sprint("batching=", tt.batching), func(t *testing.T) {
			p := newTestProvisioner(t, nil)
			p.remember(claim, []*corev1.Pod{testPod("nominated"), testPod("running")}, now)
			b := &batch{moving: map[types.UID]bool{}}
			toPlan, nominated := p.placePods(b, slices.Clone(pods), []*v1alpha1.NodeClaim{claim, recorder}, byName, map[string]bool{"old": true}, tt.batching, now)
			var got []string
			for _, pod := range toPlan {
				got = append(got, pod.Name)
				if pod.Name == "leaving" && (pod.Spec.NodeName == "") != tt.batching {
					t.Errorf("the leaving node's pod planned on node %q, want pending only when batching", pod.Spec.NodeName)
				}
			}
			if !slices.Equal(got, tt.plan) {
				t.Errorf("planned %v, want %v", got, tt.plan)
			}
			var moving []string
			for uid := range b.moving {
				moving = append(moving, string(uid))
			}
			if want := prefixed("uid-", tt.moving); !slices.Equal(moving, want) {
				t.Errorf("moving %v, want %v", moving, want)
			}
			if b.pending != 3 {
				t.Errorf("pending %d, want the 3 unschedulable pods", b.pending)
			}
			if len(nominated) != 2 || len(nominated["c1"]) != 1 || nominated["c1"][0].Name != "nominated" ||
				len(nominated["c2"]) != 1 || nominated["c2"][0].Name != "recorded" {
				t.Errorf("nominated %v, want nominated on c1 and recorded (read back) on c2", nominated)
			}
			if _, ok := p.nominations[types.UID("uid-running")]; ok {
				t.Error("the bound pod's nomination was not forgotten")
			}
		})
	}
}

func prefixed(prefix string, names []string) []string {
	var out []string
	for _, n := range names {
		out = append(out, prefix+n)
	}
	return out
}

func TestPodsByIndexFollowsTheSolversPods(t *testing.T) {
	a, b := testPod("a"), testPod("b")
	other := testPod("a")
	other.Namespace = "other"
	got := podsByIndex([]solver.Pod{{Namespace: "default", Name: "b"}, {Namespace: "other", Name: "a"}, {Namespace: "default", Name: "gone"}},
		[]*corev1.Pod{a, b, other})
	if len(got) != 3 || got[0] != b || got[1] != other || got[2] != nil {
		t.Errorf("pods by index %v, want b, other/a, nil", got)
	}
}
