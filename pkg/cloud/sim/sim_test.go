package sim

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
)

// The fake client stands in for the API server only for the simulator's own
// bookkeeping (which offering, idempotency, errors); the e2e tests run it
// against a real control plane with kwok.

func newProvider(t *testing.T, objs ...client.Object) (*Provider, client.Client) {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&corev1.Node{}).Build()
	p, err := New(Options{Client: c, ClusterName: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

func claim(name string, reqs ...v1alpha1.NodeSelectorRequirement) *v1alpha1.NodeClaim {
	return &v1alpha1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.LabelNodePool: "default"}},
		Spec: v1alpha1.NodeClaimSpec{
			NodeClassRef: v1alpha1.NodeClassReference{Kind: "SimNodeClass", Name: "sim"},
			Requirements: reqs,
			Resources:    v1alpha1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}},
		},
	}
}

func in(key string, values ...string) v1alpha1.NodeSelectorRequirement {
	return v1alpha1.NodeSelectorRequirement{Key: key, Operator: v1alpha1.NodeSelectorOpIn, Values: values}
}

func TestCreateLaunchesTheCheapestAllowedOfferingOnce(t *testing.T) {
	ctx := context.Background()
	p, c := newProvider(t, &v1alpha1.SimNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "sim"}})
	nc := claim("a", in(corev1.LabelInstanceTypeStable, "m5.large", "m5.xlarge"), in(v1alpha1.LabelCapacityType, "on-demand"))
	got, err := p.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.InstanceType != "m5.large" || got.Status.CapacityType != "on-demand" || got.Status.PricePerHour == "" {
		t.Errorf("launched %s %s $%s, want the cheaper m5.large on-demand", got.Status.InstanceType, got.Status.CapacityType, got.Status.PricePerHour)
	}
	var node corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: "a"}, &node); err != nil {
		t.Fatal(err)
	}
	if node.Spec.ProviderID != got.Status.ProviderID || node.Annotations[KwokAnnotation] != "fake" || node.Labels[v1alpha1.LabelNodePool] != "default" {
		t.Errorf("node: providerID %q, annotations %v, labels %v", node.Spec.ProviderID, node.Annotations, node.Labels)
	}
	if node.Spec.Taints[0].Key != cloud.UnregisteredTaintKey {
		t.Errorf("taints %v: want the unregistered taint first", node.Spec.Taints)
	}
	if node.Status.Allocatable.Cpu().MilliValue() >= node.Status.Capacity.Cpu().MilliValue() {
		t.Errorf("allocatable %v not below capacity %v", node.Status.Allocatable, node.Status.Capacity)
	}
	again, err := p.Create(ctx, nc)
	if err != nil || again.Status.ProviderID != got.Status.ProviderID {
		t.Errorf("second Create: %v, %v; want the same instance", again.Status.ProviderID, err)
	}
	list, err := p.List(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "a" {
		t.Errorf("List = %v, %v; want the one instance", list, err)
	}
	if err := p.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(ctx, got); !cloud.IsNotFound(err) {
		t.Errorf("second Delete: %v, want NotFound", err)
	}
	if _, err := p.Get(ctx, got.Status.ProviderID); !cloud.IsNotFound(err) {
		t.Errorf("Get after Delete: %v, want NotFound", err)
	}
}

func TestInsufficientCapacityFromTheNodeClass(t *testing.T) {
	ctx := context.Background()
	p, _ := newProvider(t, &v1alpha1.SimNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "sim"},
		Spec:       v1alpha1.SimNodeClassSpec{InsufficientCapacity: []v1alpha1.SimOffering{{InstanceType: "m5.large"}}},
	})
	_, err := p.Create(ctx, claim("a", in(corev1.LabelInstanceTypeStable, "m5.large")))
	if !cloud.IsInsufficientCapacity(err) {
		t.Fatalf("Create: %v, want an insufficient-capacity error", err)
	}
	got, err := p.Create(ctx, claim("b", in(corev1.LabelInstanceTypeStable, "m5.large", "m5.xlarge"), in(v1alpha1.LabelCapacityType, "on-demand")))
	if err != nil || got.Status.InstanceType != "m5.xlarge" {
		t.Errorf("Create with a fallback: %v, %v; want m5.xlarge", got, err)
	}
}

// TestKubeletSettingsSizeTheNodes checks that a SimNodeClass's kubelet
// settings reach the instance types the planner sees and the Node a launch
// registers: an m5.large (29 pods by its ENIs) with maxPods 5 and 1Gi of
// kube-reserved memory.
func TestKubeletSettingsSizeTheNodes(t *testing.T) {
	ctx := context.Background()
	maxPods := int32(5)
	p, c := newProvider(t, &v1alpha1.SimNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "sim"},
		Spec: v1alpha1.SimNodeClassSpec{Kubelet: &v1alpha1.KubeletConfiguration{
			MaxPods: &maxPods, KubeReserved: map[string]v1alpha1.ReservedQuantity{"memory": "1Gi"},
		}},
	})
	pool := &v1alpha1.NodePool{Spec: v1alpha1.NodePoolSpec{Template: v1alpha1.NodeClaimTemplate{Spec: v1alpha1.NodeClaimTemplateSpec{
		NodeClassRef: v1alpha1.NodeClassReference{Kind: "SimNodeClass", Name: "sim"}}}}}
	types, err := p.InstanceTypes(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range types {
		if it.Kubelet == nil || !it.Kubelet.MaxPods.Set || it.Kubelet.MaxPods.Value != 5 {
			t.Fatalf("type %s offered with kubelet %+v, want maxPods 5", it.Name, it.Kubelet)
		}
	}
	if _, err := p.Create(ctx, claim("a", in(corev1.LabelInstanceTypeStable, "m5.large"), in(v1alpha1.LabelCapacityType, "on-demand"))); err != nil {
		t.Fatal(err)
	}
	var node corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: "a"}, &node); err != nil {
		t.Fatal(err)
	}
	// Memory: 8192Mi less 7.5 % (615Mi) less 1Gi kube-reserved and 100Mi eviction.
	wantMem := resource.MustParse("6453Mi")
	if node.Status.Capacity.Pods().Value() != 5 || node.Status.Allocatable.Pods().Value() != 5 || !node.Status.Allocatable.Memory().Equal(wantMem) {
		t.Errorf("node capacity pods %v, allocatable pods %v memory %v; want 5, 5 and %v",
			node.Status.Capacity.Pods(), node.Status.Allocatable.Pods(), node.Status.Allocatable.Memory(), &wantMem)
	}
}

func TestMissingSimNodeClassIsNotReady(t *testing.T) {
	p, _ := newProvider(t)
	_, err := p.Create(context.Background(), claim("a"))
	var nr *cloud.NodeClassNotReadyError
	if !errors.As(err, &nr) {
		t.Fatalf("Create: %v, want NodeClassNotReadyError", err)
	}
}

func TestADirectLaunchMarkerTravelsWithTheInstance(t *testing.T) {
	ctx := context.Background()
	p, c := newProvider(t, &v1alpha1.SimNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "sim"}})
	direct := claim("direct", in(corev1.LabelInstanceTypeStable, "m5.large"))
	direct.Annotations = map[string]string{cloud.AnnotationLaunchedDirectly: "sim", "other": "x"}
	launched, err := p.Create(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Create(ctx, claim("operator", in(corev1.LabelInstanceTypeStable, "m5.large"))); err != nil {
		t.Fatal(err)
	}
	var node corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: "direct"}, &node); err != nil {
		t.Fatal(err)
	}
	if node.Annotations[cloud.AnnotationLaunchedDirectly] != "sim" || node.Annotations["other"] != "" {
		t.Errorf("node annotations %v: want the marker and no other claim annotation", node.Annotations)
	}
	list, err := p.List(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("List = %v, %v", list, err)
	}
	for _, v := range list {
		want := map[string]string{"direct": "sim", "operator": ""}[v.Name]
		if got := v.Annotations[cloud.AnnotationLaunchedDirectly]; got != want || v.Labels[v1alpha1.LabelNodePool] != "default" {
			t.Errorf("List view %s: marker %q (want %q), pool label %q", v.Name, got, want, v.Labels[v1alpha1.LabelNodePool])
		}
	}
	got, err := p.Get(ctx, launched.Status.ProviderID)
	if err != nil || got.Annotations[cloud.AnnotationLaunchedDirectly] != "sim" {
		t.Errorf("Get = %v, %v; want the marker", got, err)
	}
}

func TestIsDriftedComparesTheSimNodeClassHashStampedAtLaunch(t *testing.T) {
	ctx := context.Background()
	snc := &v1alpha1.SimNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "sim"}, Spec: v1alpha1.SimNodeClassSpec{Tags: map[string]string{"team": "platform"}}}
	p, c := newProvider(t, snc)
	launched, err := p.Create(ctx, claim("a", in(v1alpha1.LabelCapacityType, "on-demand")))
	if err != nil {
		t.Fatal(err)
	}
	hash := launched.Annotations[v1alpha1.AnnotationNodeClassHash]
	if hash != snc.Spec.Hash() || launched.Annotations[v1alpha1.AnnotationNodeClassHashVersion] != v1alpha1.SimNodeClassHashVersion {
		t.Fatalf("Create's claim annotations %v: want the class's hash %s, version %s", launched.Annotations, snc.Spec.Hash(), v1alpha1.SimNodeClassHashVersion)
	}
	// Get and List (adoption) carry the hash back from the node.
	got, err := p.Get(ctx, launched.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	list, err := p.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations[v1alpha1.AnnotationNodeClassHash] != hash || len(list) != 1 || list[0].Annotations[v1alpha1.AnnotationNodeClassHash] != hash {
		t.Errorf("Get annotations %v, List %d views: want the hash %s on each", got.Annotations, len(list), hash)
	}
	// The claim as the operator stores it: the spec it was created with,
	// the annotations Create returned.
	stored := claim("a")
	stored.Annotations = launched.Annotations
	stored.Status = launched.Status
	edit := func(change func(*v1alpha1.SimNodeClass)) {
		t.Helper()
		var cur v1alpha1.SimNodeClass
		if err := c.Get(ctx, client.ObjectKey{Name: "sim"}, &cur); err != nil {
			t.Fatal(err)
		}
		change(&cur)
		if err := c.Update(ctx, &cur); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		change func(*v1alpha1.SimNodeClass)
		claim  func(*v1alpha1.NodeClaim)
		want   string // fragment; "" means not drifted
	}{
		{name: "unchanged", want: ""},
		{name: "a setting of the simulated cloud changed", change: func(s *v1alpha1.SimNodeClass) {
			s.Spec.RegistrationDelay = &metav1.Duration{Duration: 5e9}
			s.Labels = map[string]string{"edited": "yes"}
		}, want: ""},
		{name: "a tag changed", change: func(s *v1alpha1.SimNodeClass) { s.Spec.Tags["team"] = "web" },
			want: "SimNodeClass sim's launch settings changed since the node was launched"},
		{name: "a claim launched before hashes: never drifts by hash", change: func(s *v1alpha1.SimNodeClass) { s.Spec.Tags["team"] = "web" },
			claim: func(nc *v1alpha1.NodeClaim) { nc.Annotations = nil }, want: ""},
		{name: "a claim of another hash version: not compared", change: func(s *v1alpha1.SimNodeClass) { s.Spec.Tags["team"] = "web" },
			claim: func(nc *v1alpha1.NodeClaim) { nc.Annotations[v1alpha1.AnnotationNodeClassHashVersion] = "v0" }, want: ""},
		{name: "a claim of another node class kind", change: func(s *v1alpha1.SimNodeClass) { s.Spec.Tags["team"] = "web" },
			claim: func(nc *v1alpha1.NodeClaim) { nc.Spec.NodeClassRef.Kind = "EC2NodeClass" }, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edit(func(s *v1alpha1.SimNodeClass) { s.Spec = *snc.Spec.DeepCopy(); s.Labels = nil })
			if tt.change != nil {
				edit(tt.change)
			}
			nc := stored.DeepCopy()
			if tt.claim != nil {
				tt.claim(nc)
			}
			why, err := p.IsDrifted(ctx, nc)
			if err != nil {
				t.Fatal(err)
			}
			if (tt.want == "") != (why == "") || !strings.Contains(why, tt.want) {
				t.Errorf("IsDrifted = %q, want %q", why, tt.want)
			}
		})
	}
	// A class that is gone: drift unknown, not "not drifted".
	if err := c.Delete(ctx, &v1alpha1.SimNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "sim"}}); err != nil {
		t.Fatal(err)
	}
	var notReady *cloud.NodeClassNotReadyError
	if why, err := p.IsDrifted(ctx, stored); !errors.As(err, &notReady) {
		t.Errorf("IsDrifted with the class deleted = %q, %v; want a NodeClassNotReadyError", why, err)
	}
}

// TestAFlexibleClaimLandsOnTheCheapestAvailableOffering: a NodeClaim that
// allows several types and zones launches, as EC2's lowest-price fleet
// does, on the cheapest offering not out of capacity, and says which; one
// a NodeOverlay priced (cloud.AnnotationPriceOverlayApplied) launches, as
// EC2's prioritized fleet does, on the first listed offering not out of
// capacity, dearer or not.
func TestAFlexibleClaimLandsOnTheCheapestAvailableOffering(t *testing.T) {
	ctx := context.Background()
	flexible := []v1alpha1.NodeSelectorRequirement{
		in(corev1.LabelInstanceTypeStable, "m5.large", "c5.large", "r5.large"),
		in(corev1.LabelTopologyZone, "us-east-1a", "us-east-1b"),
		in(v1alpha1.LabelCapacityType, "on-demand"),
	}
	for _, tc := range []struct {
		name               string
		ice                []v1alpha1.SimOffering
		wantType, wantZone string // wantZone "" means either allowed zone
		wantICE            bool
		prioritized        bool
	}{
		{name: "nothing short: the cheapest type, in the zone listed first of equal prices", wantType: "c5.large", wantZone: "us-east-1a"},
		{name: "the cheapest short in one zone: the same type in the other", wantType: "c5.large", wantZone: "us-east-1b",
			ice: []v1alpha1.SimOffering{{InstanceType: "c5.large", Zone: "us-east-1a"}}},
		{name: "the cheapest short everywhere: the next type", wantType: "m5.large",
			ice: []v1alpha1.SimOffering{{InstanceType: "c5.large"}}},
		{name: "every allowed offering short: insufficient capacity", wantICE: true,
			ice: []v1alpha1.SimOffering{{InstanceType: "c5.large"}, {InstanceType: "m5.large"}, {InstanceType: "r5.large", CapacityType: "on-demand"}}},
		{name: "prioritized: the type listed first, dearer than the next", prioritized: true, wantType: "m5.large", wantZone: "us-east-1a"},
		{name: "prioritized, the first short in its first zone: its next zone before the next type", prioritized: true, wantType: "m5.large", wantZone: "us-east-1b",
			ice: []v1alpha1.SimOffering{{InstanceType: "m5.large", Zone: "us-east-1a"}}},
		{name: "prioritized, the first short everywhere: the type listed next", prioritized: true, wantType: "c5.large", wantZone: "us-east-1a",
			ice: []v1alpha1.SimOffering{{InstanceType: "m5.large"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newProvider(t, &v1alpha1.SimNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "sim"}, Spec: v1alpha1.SimNodeClassSpec{InsufficientCapacity: tc.ice}})
			nc := claim("a", flexible...)
			if tc.prioritized {
				nc.Annotations = map[string]string{cloud.AnnotationPriceOverlayApplied: "true"}
			}
			got, err := p.Create(ctx, nc)
			if tc.wantICE {
				var ice *cloud.InsufficientCapacityError
				if !errors.As(err, &ice) || len(ice.Offerings) != 6 {
					t.Fatalf("Create: %v, want insufficient capacity for the 6 allowed offerings", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			zoneOK := got.Status.Zone == tc.wantZone || tc.wantZone == "" && (got.Status.Zone == "us-east-1a" || got.Status.Zone == "us-east-1b")
			if got.Status.InstanceType != tc.wantType || !zoneOK || got.Labels[corev1.LabelInstanceTypeStable] != tc.wantType ||
				got.Labels[corev1.LabelTopologyZone] != got.Status.Zone {
				t.Errorf("launched %s in %s (labels %s, %s), want %s in %q", got.Status.InstanceType, got.Status.Zone,
					got.Labels[corev1.LabelInstanceTypeStable], got.Labels[corev1.LabelTopologyZone], tc.wantType, tc.wantZone)
			}
		})
	}
}
