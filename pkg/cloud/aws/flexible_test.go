package aws

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
)

var overrideType = regexp.MustCompile(`^LaunchTemplateConfigs\.\d+\.Overrides\.\d+\.InstanceType$`)

// fleetOverrides returns the type/zone of each override of a CreateFleet request.
func fleetOverrides(r map[string][]string) []string {
	var out []string
	for k, v := range r {
		if overrideType.MatchString(k) {
			out = append(out, v[0]+"/"+r[k[:len(k)-len("InstanceType")]+"AvailabilityZone"][0])
		}
	}
	slices.Sort(out)
	return out
}

func TestAFlexibleClaimIsOneFleetCallWithAnOverridePerTypeAndZone(t *testing.T) {
	flexible := []v1alpha1.NodeSelectorRequirement{
		req("node.kubernetes.io/instance-type", v1alpha1.NodeSelectorOpIn, "c5.large", "m5.large", "m5.xlarge"),
		req("topology.kubernetes.io/zone", v1alpha1.NodeSelectorOpIn, "us-east-1a", "us-east-1b"),
	}
	for _, tc := range []struct {
		name         string
		capacityType string
		refuse       []string // type/zone refused for the capacity type
		wantType     string
		wantStrategy [2]string // option key, strategy
		// prioritized lists m5.xlarge first and marks the claim
		// cloud.AnnotationPriceOverlayApplied: EC2 takes the listed order.
		prioritized bool
	}{
		{name: "on-demand: the cheapest override", capacityType: "on-demand", wantType: "c5.large",
			wantStrategy: [2]string{"OnDemandOptions.AllocationStrategy", "lowest-price"}},
		{name: "on-demand: the cheapest refused in every zone, the next type in the same call", capacityType: "on-demand",
			refuse: []string{"c5.large/us-east-1a", "c5.large/us-east-1b"}, wantType: "m5.large",
			wantStrategy: [2]string{"OnDemandOptions.AllocationStrategy", "lowest-price"}},
		{name: "spot: price-capacity-optimized, refusals fall through", capacityType: "spot",
			refuse: []string{"c5.large/us-east-1a", "c5.large/us-east-1b"}, wantType: "m5.large",
			wantStrategy: [2]string{"SpotOptions.AllocationStrategy", "price-capacity-optimized"}},
		{name: "overlay-priced on-demand: prioritized, the first listed though dearer", capacityType: "on-demand", prioritized: true, wantType: "m5.xlarge",
			wantStrategy: [2]string{"OnDemandOptions.AllocationStrategy", "prioritized"}},
		{name: "overlay-priced on-demand: the first listed refused everywhere, the next listed", capacityType: "on-demand", prioritized: true,
			refuse: []string{"m5.xlarge/us-east-1a", "m5.xlarge/us-east-1b"}, wantType: "c5.large",
			wantStrategy: [2]string{"OnDemandOptions.AllocationStrategy", "prioritized"}},
		{name: "overlay-priced spot: capacity-optimized-prioritized", capacityType: "spot", prioritized: true, wantType: "m5.xlarge",
			wantStrategy: [2]string{"SpotOptions.AllocationStrategy", "capacity-optimized-prioritized"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			ctx := context.Background()
			for _, o := range tc.refuse {
				typ, zone, _ := strings.Cut(o, "/")
				w.srv.RefuseCapacity(typ, zone, tc.capacityType, "")
			}
			reqs := append(slices.Clone(flexible), req(v1alpha1.LabelCapacityType, v1alpha1.NodeSelectorOpIn, tc.capacityType))
			nc := claim("default-flex", "1", "2Gi", reqs...)
			if tc.prioritized {
				reqs[0] = req("node.kubernetes.io/instance-type", v1alpha1.NodeSelectorOpIn, "m5.xlarge", "c5.large", "m5.large")
				nc = claim("default-flex", "1", "2Gi", reqs...)
				nc.Annotations = map[string]string{cloud.AnnotationPriceOverlayApplied: "true"}
			}
			nc, err := w.p.Create(ctx, nc)
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			if nc.Status.InstanceType != tc.wantType || nc.Status.CapacityType != tc.capacityType || nc.Labels["node.kubernetes.io/instance-type"] != tc.wantType {
				t.Errorf("launched %s %s (label %s), want %s %s", nc.Status.InstanceType, nc.Status.CapacityType,
					nc.Labels["node.kubernetes.io/instance-type"], tc.wantType, tc.capacityType)
			}
			if w.srv.Calls("CreateFleet") != 1 {
				t.Errorf("%d CreateFleet calls, want 1", w.srv.Calls("CreateFleet"))
			}
			fleet := w.srv.Requests("CreateFleet")[0]
			want := []string{"c5.large/us-east-1a", "c5.large/us-east-1b", "m5.large/us-east-1a", "m5.large/us-east-1b", "m5.xlarge/us-east-1a", "m5.xlarge/us-east-1b"}
			if got := fleetOverrides(fleet); !slices.Equal(got, want) {
				t.Errorf("overrides %v, want one per allowed type and zone %v", got, want)
			}
			priorities := 0
			for k := range fleet {
				if strings.HasSuffix(k, ".Priority") {
					priorities++
				}
			}
			if want := map[bool]int{true: len(want)}[tc.prioritized]; priorities != want {
				t.Errorf("%d overrides carry a Priority, want %d", priorities, want)
			}
			if got := fleet[tc.wantStrategy[0]]; !slices.Equal(got, []string{tc.wantStrategy[1]}) {
				t.Errorf("%s = %v, want %s", tc.wantStrategy[0], got, tc.wantStrategy[1])
			}
			if got := fleet["TargetCapacitySpecification.DefaultTargetCapacityType"]; !slices.Equal(got, []string{tc.capacityType}) {
				t.Errorf("DefaultTargetCapacityType = %v, want %s", got, tc.capacityType)
			}
			if w.p.Unavailable().Len() != len(tc.refuse) {
				t.Errorf("%d offerings unavailable, want only the %d refused", w.p.Unavailable().Len(), len(tc.refuse))
			}
			for _, o := range tc.refuse {
				if typ, zone, _ := strings.Cut(o, "/"); !w.p.Unavailable().IsUnavailable(typ, zone, tc.capacityType) {
					t.Errorf("refused %s not marked unavailable", o)
				}
			}
			other := cloud.CapacityTypeSpot
			if tc.capacityType == other {
				other = cloud.CapacityTypeOnDemand
			}
			if w.p.Unavailable().IsUnavailable("c5.large", "us-east-1a", other) {
				t.Errorf("c5.large/us-east-1a %s marked unavailable; only %s was refused", other, tc.capacityType)
			}
		})
	}
}

func TestCheapestTypesKeepsEveryZoneOfTheCheapestTypes(t *testing.T) {
	it := func(name string) *cloud.InstanceType { return &cloud.InstanceType{Name: name} }
	a, b, c := it("a"), it("b"), it("c")
	cands := []candidate{{it: a, offering: cloud.Offering{Zone: "1"}}, {it: b, offering: cloud.Offering{Zone: "1"}},
		{it: a, offering: cloud.Offering{Zone: "2"}}, {it: c, offering: cloud.Offering{Zone: "1"}}, {it: b, offering: cloud.Offering{Zone: "2"}}}
	for _, tc := range []struct {
		n    int
		want []string
	}{
		{1, []string{"a/1", "a/2"}},
		{2, []string{"a/1", "b/1", "a/2", "b/2"}},
		{60, []string{"a/1", "b/1", "a/2", "c/1", "b/2"}},
	} {
		var got []string
		for _, c := range cheapestTypes(slices.Clone(cands), tc.n) {
			got = append(got, c.it.Name+"/"+c.offering.Zone)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("cheapestTypes(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}
