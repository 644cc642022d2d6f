package solver_test

import (
	"strconv"
	"strings"
	"testing"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// withReservation returns testTypes with a capacity reservation of count
// nodes of type name in zone-a, priced near zero as Karpenter prices them.
func withReservation(name, reservation string, count int) []InstanceType {
	types := testTypes()
	for i := range types {
		if types[i].Name == name {
			types[i].Offerings = append(types[i].Offerings, Offering{Zone: "zone-a", CapacityType: "reserved", Price: 0.00001, Count: count, Reservation: reservation})
		}
	}
	return types
}

func TestReservedCapacityFirst(t *testing.T) {
	// Karpenter v1.14 launches into capacity reservations first and never
	// more instances than a reservation has left (kubernetes-sigs/karpenter
	// scheduling, reserved offerings; issue #17).
	reservedOK := []Requirement{{Key: LabelCapacityType, Operator: OpIn, Values: []string{"reserved", "on-demand"}}}
	tests := []struct {
		name  string
		types []InstanceType
		pools []Pool
		pods  []Pod
		// reserved is how many nodes the plan puts on the reservation;
		// onDemand whether it needs on-demand nodes besides.
		reserved int
		onDemand bool
	}{
		{
			name:  "a reservation of two is used up before on-demand",
			types: withReservation("m6.xlarge", "cr-1", 2), pools: []Pool{{Name: "default", Requirements: reservedOK}},
			pods: pods("web", 6, res(3000, 2*gi)), reserved: 2, onDemand: true,
		},
		{
			name:  "fewer pods than the reservation leave it partly unused",
			types: withReservation("m6.xlarge", "cr-1", 5), pools: []Pool{{Name: "default", Requirements: reservedOK}},
			pods: pods("web", 2, res(3000, 2*gi)), reserved: 2,
		},
		{
			name:  "a reserved type larger than the pods need is still used first, all pods on it",
			types: withReservation("m6.8xlarge", "cr-big", 1), pools: []Pool{{Name: "default", Requirements: reservedOK}},
			pods: pods("web", 10, res(500, gi)), reserved: 1,
		},
		{
			name:  "two pools share one reservation's count",
			types: withReservation("m6.xlarge", "cr-1", 3),
			pools: []Pool{{Name: "a", Requirements: reservedOK}, {Name: "b", Requirements: reservedOK}},
			pods: func() []Pod {
				ps := append(pods("a", 4, res(3000, 2*gi)), pods("b", 4, res(3000, 2*gi))...)
				for i := range ps {
					pool := "a"
					if i >= 4 {
						pool = "b"
					}
					ps[i].NodeSelector = map[string]string{LabelNodePool: pool}
				}
				return ps
			}(),
			reserved: 3, onDemand: true,
		},
		{
			name:  "a pool that does not allow the reserved capacity type never uses it",
			types: withReservation("m6.xlarge", "cr-1", 2), pools: []Pool{onDemandPool("default")},
			pods: pods("web", 3, res(3000, 2*gi)), onDemand: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Problem{Pods: tt.pods, InstanceTypes: tt.types, Pools: tt.pools}
			plan, err := Solve(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Unschedulable) > 0 {
				t.Fatalf("pending: %+v", plan.Unschedulable)
			}
			reserved, onDemand := 0, 0
			price := 0.0
			for _, n := range plan.NewNodes {
				switch n.CapacityType {
				case "reserved":
					reserved++
					if n.Zone != "zone-a" || !strings.Contains(n.Reason, "from capacity reservation cr-") {
						t.Errorf("reserved node in %s, reason %q", n.Zone, n.Reason)
					}
				case "on-demand":
					onDemand++
				default:
					t.Errorf("node on %s", n.CapacityType)
				}
				price += n.Price
			}
			if reserved != tt.reserved || (onDemand > 0) != tt.onDemand {
				t.Errorf("%d reserved and %d on-demand nodes, want %d reserved, on-demand %v: %+v", reserved, onDemand, tt.reserved, tt.onDemand, plan.NewNodes)
			}
			if plan.TotalPrice > price+1e-6 || plan.TotalPrice < price-1e-6 {
				t.Errorf("total %v, nodes sum to %v", plan.TotalPrice, price)
			}
			if plan.LowerBound > plan.TotalPrice+1e-6 {
				t.Errorf("lower bound %v above the plan's %v", plan.LowerBound, plan.TotalPrice)
			}
			for i, opts := range LaunchOptions(p, plan, -1) {
				n := plan.NewNodes[i]
				if opts[0].CapacityType != n.CapacityType {
					t.Errorf("node %d: first option %+v, not the planned offering", i, opts[0])
				}
				for _, o := range opts[1:] {
					if o.CapacityType == "reserved" {
						t.Errorf("node %d: option %+v draws on a reservation the plan did not count", i, o)
					}
				}
			}
		})
	}
}

// TestConsolidationTakesNoMoreOfAReservationThanItHas: every action of one
// consolidation plan runs together, so the replacements of all of them
// together may launch no more nodes into a capacity reservation than it
// has left; each action's replacement used to see the whole count.
func TestConsolidationTakesNoMoreOfAReservationThanItHas(t *testing.T) {
	reservedOK := []Requirement{{Key: LabelCapacityType, Operator: OpIn, Values: []string{"reserved", "on-demand"}}}
	for _, tc := range []struct {
		name     string
		count    int
		reserved int // replacements launched into the reservation
	}{
		{"a reservation of one takes one replacement", 1, 1},
		{"a reservation of two takes two", 2, 2},
		{"a reservation of five takes the three there are", 5, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Problem{InstanceTypes: withReservation("c6.xlarge", "cr-1", tc.count), Options: Options{Now: consNow}}
			for i := range 3 {
				// A pool a node, one pod each: each node is replaced
				// in an action of its own, all drawing on the one
				// reservation.
				name := "pool-" + strconv.Itoa(i)
				pool := Pool{Name: name, Requirements: reservedOK}
				pool.Consolidation.NodesAllowed = -1
				p.Pools = append(p.Pools, pool)
				ps := controlled("app-"+strconv.Itoa(i), 1, res(3000, 2*gi))
				ps[0].NodeSelector = map[string]string{LabelNodePool: name}
				addNode(p, "node-"+strconv.Itoa(i), "m6.xlarge", name, "on-demand", ps)
			}
			plan, err := Consolidate(p)
			if err != nil {
				t.Fatal(err)
			}
			reserved := 0
			for _, a := range plan.Actions {
				for _, r := range a.Replacements {
					if r.CapacityType == "reserved" {
						reserved++
					}
				}
			}
			if reserved != tc.reserved {
				t.Errorf("%d replacements launched into the reservation of %d; want %d (actions %+v)", reserved, tc.count, tc.reserved, plan.Actions)
			}
		})
	}
}
