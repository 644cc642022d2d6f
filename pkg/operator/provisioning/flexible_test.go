package provisioning

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func TestFlexibleClaimsAllowTheOptionsWithinLimitsAndMinValues(t *testing.T) {
	// 80 types: c1.large ... of families c1..c8 (10 sizes each), 2 to 20 vCPU.
	types := map[string]*solver.InstanceType{}
	var opts []solver.LaunchOption
	for s := 1; s <= 10; s++ {
		for f := 1; f <= 8; f++ {
			name := fmt.Sprintf("c%d.s%d", f, s)
			types[name] = &solver.InstanceType{Name: name, Labels: map[string]string{"karpenter.k8s.aws/instance-family": fmt.Sprintf("c%d", f)},
				Capacity: solver.Resources{solver.CPU: int64(2000 * s), solver.Memory: int64(s) << 32}}
			for _, z := range []string{"a", "b"} {
				opts = append(opts, solver.LaunchOption{InstanceType: name, Zone: z, CapacityType: "spot", Price: float64(s) + float64(f)/100})
			}
		}
	}
	planned := solver.NewNode{Pool: "web", InstanceType: "c1.s1", Zone: "a", CapacityType: "spot", Price: 1.01}
	minValues := func(key string, n int, values ...string) v1alpha1.NodeSelectorRequirement {
		return v1alpha1.NodeSelectorRequirement{Key: key, Operator: v1alpha1.NodeSelectorOpIn, Values: values, MinValues: &n}
	}
	for _, tc := range []struct {
		name   string
		reqs   []v1alpha1.NodeSelectorRequirement
		limits corev1.ResourceList
		policy string
		opts   []solver.LaunchOption
		// wantTypes is how many types; wantLargest the largest size allowed.
		wantTypes, wantLargest   int
		wantRefused, wantRelaxed bool
		// repriced are the types a NodeOverlay re-priced; wantPrioritized
		// whether the claim must be launched in its listed order.
		repriced        []string
		wantPrioritized bool
	}{
		{name: "all options, truncated to 60 types by price", opts: opts, wantTypes: MaxInstanceTypes, wantLargest: 8},
		{name: "types over the pool's CPU limit are left out", opts: opts, limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
			wantTypes: 32, wantLargest: 4},
		{name: "minValues met", opts: opts, reqs: []v1alpha1.NodeSelectorRequirement{minValues("karpenter.k8s.aws/instance-family", 8)},
			wantTypes: MaxInstanceTypes, wantLargest: 8},
		{name: "minValues not met: Strict refuses", opts: opts[:6], reqs: []v1alpha1.NodeSelectorRequirement{minValues("karpenter.k8s.aws/instance-family", 5)},
			wantRefused: true},
		{name: "minValues not met: BestEffort launches with what there is", opts: opts[:6], policy: MinValuesBestEffort,
			reqs: []v1alpha1.NodeSelectorRequirement{minValues("karpenter.k8s.aws/instance-family", 5)}, wantTypes: 3, wantLargest: 1, wantRelaxed: true},
		{name: "minValues on zones", opts: opts[:1], reqs: []v1alpha1.NodeSelectorRequirement{minValues(solver.LabelZone, 2)}, wantRefused: true},
		{name: "minValues on a key no type labels counts the requirement's values", opts: opts[:2],
			reqs: []v1alpha1.NodeSelectorRequirement{minValues("team", 2, "a", "b")}, wantTypes: 1, wantLargest: 1},
		{name: "no options: the planned offering", wantTypes: 1, wantLargest: 1},
		{name: "a NodeOverlay re-priced an allowed type: launched in the listed order", opts: opts, repriced: []string{"c8.s7"},
			wantTypes: MaxInstanceTypes, wantLargest: 8, wantPrioritized: true},
		{name: "a NodeOverlay re-priced only types left out: the cloud's own order", opts: opts, repriced: []string{"c8.s10"},
			wantTypes: MaxInstanceTypes, wantLargest: 8},
		{name: "a NodeOverlay re-priced the one type allowed: nothing to order", repriced: []string{"c1.s1"}, wantTypes: 1, wantLargest: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
			np.Spec.Template.Spec.Requirements = tc.reqs
			np.Spec.Limits = tc.limits
			b := &batch{problem: &solver.Problem{}, types: types, usage: map[string]solver.Resources{"web": {solver.CPU: 0}}, repriced: map[string]bool{}}
			for _, name := range tc.repriced {
				b.repriced[name] = true
			}
			p := New(nil, nil, nil, logr.Discard(), nil, Options{MinValuesPolicy: tc.policy})
			f, why := p.flexible(b, np, &planned, tc.opts)
			if (why != "") != tc.wantRefused {
				t.Fatalf("refusal %q, want refused %v", why, tc.wantRefused)
			}
			if (f.relaxed != "") != tc.wantRelaxed {
				t.Errorf("relaxed %q, want relaxed %v", f.relaxed, tc.wantRelaxed)
			}
			if f.prioritized != tc.wantPrioritized {
				t.Errorf("prioritized %v, want %v", f.prioritized, tc.wantPrioritized)
			}
			if tc.wantRefused {
				if !strings.Contains(why, "minValues") {
					t.Errorf("refusal %q does not name minValues", why)
				}
				return
			}
			if len(f.types) != tc.wantTypes || f.types[0] != planned.InstanceType || f.zones[0] != planned.Zone || f.capacityTypes[0] != "spot" {
				t.Fatalf("types %v zones %v capacity types %v: want %d types, the planned offering first", f.types, f.zones, f.capacityTypes, tc.wantTypes)
			}
			largest := 0
			for _, name := range f.types {
				var fam, size int
				fmt.Sscanf(name, "c%d.s%d", &fam, &size)
				largest = max(largest, size)
			}
			if largest != tc.wantLargest {
				t.Errorf("largest size %d, want %d (types %v)", largest, tc.wantLargest, f.types)
			}
			if len(slices.Compact(slices.Sorted(slices.Values(f.types)))) != len(f.types) {
				t.Errorf("types %v repeat", f.types)
			}
		})
	}
}

func TestReplacementsGetTheFlexibleLaunchOfTheirPods(t *testing.T) {
	// Karpenter gives a disruption's replacement every compatible
	// instance type, as it does a provisioning launch (kubernetes-sigs/
	// karpenter pkg/controllers/disruption/helpers.go SimulateScheduling:
	// the replacements are the scheduler's NodeClaims with their
	// InstanceTypeOptions).
	var types []solver.InstanceType
	for s := 1; s <= 6; s++ {
		types = append(types, solver.InstanceType{Name: fmt.Sprintf("m.s%d", s), Capacity: solver.Resources{solver.CPU: int64(1000 * s), solver.Memory: int64(s) << 32, solver.Pods: 110},
			Offerings: []solver.Offering{{Zone: "a", CapacityType: "on-demand", Price: float64(s)}, {Zone: "b", CapacityType: "on-demand", Price: float64(s) + 0.5}}})
	}
	pod := solver.Pod{Namespace: "default", Name: "web-1", Requests: solver.Resources{solver.CPU: 2500, solver.Memory: 1 << 30, solver.Pods: 1}, Controller: true}
	p := &solver.Problem{InstanceTypes: types, Pools: []solver.Pool{{Name: "web"}},
		Nodes: []solver.Node{{Name: "old", Pool: "web", InstanceType: "m.s6", Pods: []solver.Pod{pod}}}}
	planned := &solver.NewNode{Pool: "web", InstanceType: "m.s3", Zone: "a", CapacityType: "on-demand", Price: 3, Requested: pod.Requests}
	for _, tc := range []struct {
		name      string
		reason    string
		pods      []string
		wantTypes []string
		wantZones int
	}{
		{"drift: every type that holds the pod, the planned one first", "Drifted", []string{"default/web-1"}, []string{"m.s3", "m.s4", "m.s5", "m.s6"}, 2},
		{"consolidation: nothing dearer than the planned offering", "Underutilized", []string{"default/web-1"}, []string{"m.s3"}, 1},
		{"a pod the snapshot does not have: the planned offering only", "Expired", []string{"default/gone"}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := replacementOptions(p, planned, tc.pods, replacementPremium(tc.reason, -1))
			got := solver.InstanceTypeNames(opts)
			if !slices.Equal(got, tc.wantTypes) {
				t.Errorf("types %v, want %v", got, tc.wantTypes)
			}
			zones := map[string]bool{}
			for _, o := range opts {
				zones[o.Zone] = true
			}
			if len(zones) != tc.wantZones {
				t.Errorf("zones %v, want %d", zones, tc.wantZones)
			}
		})
	}
}
