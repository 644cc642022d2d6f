package plan

import (
	"math"
	"strings"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestApplyOverlays follows the precedence of Karpenter's nodeoverlay
// controller (kubernetes-sigs/karpenter pkg/controllers/nodeoverlay,
// NodeOverlayList.OrderByWeight): the highest weight wins an offering,
// equal weights go to the name later in the alphabet, and an overlay may
// select by zone, capacity type and pool.
func TestApplyOverlays(t *testing.T) {
	family := func(f string) solver.Requirement {
		return solver.Requirement{Key: "karpenter.k8s.aws/instance-family", Operator: solver.OpIn, Values: []string{f}}
	}
	spot := solver.Requirement{Key: solver.LabelCapacityType, Operator: solver.OpIn, Values: []string{"spot"}}
	for _, tc := range []struct {
		name             string
		overlays         []snapshot.Overlay
		wantOD, wantSpot float64 // pool "web"'s m7i.large prices
		sharedOD         float64 // the problem's own type (prices existing nodes)
		wantNote         string
	}{
		{name: "percentage off every offering", overlays: []snapshot.Overlay{{Name: "sp", Requirements: []solver.Requirement{family("m7i")}, Price: "-50%"}},
			wantOD: 0.0504, wantSpot: 0.02, sharedOD: 0.0504, wantNote: "prices adjusted by NodeOverlay sp (-50%) for 1 instance types"},
		{name: "spot only, fixed price", overlays: []snapshot.Overlay{{Name: "s", Requirements: []solver.Requirement{spot}, Price: "0.01"}},
			wantOD: 0.1008, wantSpot: 0.01, sharedOD: 0.1008},
		{name: "higher weight wins", overlays: []snapshot.Overlay{{Name: "z", Price: "+1"}, {Name: "a", Weight: 5, Price: "0.05"}},
			wantOD: 0.05, wantSpot: 0.05, sharedOD: 0.05},
		{name: "equal weights: later name wins", overlays: []snapshot.Overlay{{Name: "a", Price: "0.07"}, {Name: "b", Price: "0.06"}},
			wantOD: 0.06, wantSpot: 0.06, sharedOD: 0.06},
		{name: "never below zero", overlays: []snapshot.Overlay{{Name: "x", Price: "-1"}}, wantOD: 0, wantSpot: 0, sharedOD: 0},
		{name: "by pool", overlays: []snapshot.Overlay{{Name: "web-edp", Requirements: []solver.Requirement{{Key: solver.LabelNodePool, Operator: solver.OpIn, Values: []string{"web"}}}, Price: "-10%"}},
			wantOD: 0.09072, wantSpot: 0.036, sharedOD: 0.1008},
		{name: "selects nothing", overlays: []snapshot.Overlay{{Name: "c6", Requirements: []solver.Requirement{family("c6i")}, Price: "-10%"}},
			wantOD: 0.1008, wantSpot: 0.04, sharedOD: 0.1008, wantNote: "NodeOverlay c6 selects no offering planned; nothing changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &solver.Problem{InstanceTypes: testTypes(), Pools: []solver.Pool{{Name: "web"}}}
			notes, _ := applyOverlays(p, tc.overlays)
			price := func(types []solver.InstanceType, ct string) float64 {
				for _, o := range types[0].Offerings {
					if o.CapacityType == ct {
						return o.Price
					}
				}
				return -1
			}
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
			if got := price(p.Pools[0].InstanceTypes, "on-demand"); !near(got, tc.wantOD) {
				t.Errorf("pool on-demand = %v, want %v", got, tc.wantOD)
			}
			if got := price(p.Pools[0].InstanceTypes, "spot"); !near(got, tc.wantSpot) {
				t.Errorf("pool spot = %v, want %v", got, tc.wantSpot)
			}
			if got := price(p.InstanceTypes, "on-demand"); !near(got, tc.sharedOD) {
				t.Errorf("shared on-demand = %v, want %v", got, tc.sharedOD)
			}
			if got := price(testTypes(), "on-demand"); got != 0.1008 {
				t.Errorf("input types changed: %v", got)
			}
			if tc.wantNote != "" && !strings.Contains(strings.Join(notes, "\n"), tc.wantNote) {
				t.Errorf("notes %q, want %q", notes, tc.wantNote)
			}
		})
	}
}

// TestApplyOverlaysCapacity adds an extended resource that pods request
// to the selected types only.
func TestApplyOverlaysCapacity(t *testing.T) {
	p := &solver.Problem{InstanceTypes: testTypes(), ExtendedResources: []string{"example.com/license"}}
	applyOverlays(p, []snapshot.Overlay{
		{Name: "lic", Capacity: map[string]int64{"example.com/license": 2, "example.com/unused": 9}},
		{Name: "more", Weight: 2, Capacity: map[string]int64{"example.com/license": 4}},
	})
	ext := p.InstanceTypes[0].Extended
	if ext["example.com/license"] != 4 {
		t.Errorf("license = %d, want 4 from the heavier overlay", ext["example.com/license"])
	}
	if _, ok := ext["example.com/unused"]; ok {
		t.Errorf("a resource no pod requests was added: %v", ext)
	}
	if testTypes()[0].Extended != nil {
		t.Error("input types changed")
	}
}
