package plan

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func TestNormalizedUnitsAreAWSs(t *testing.T) {
	for size, want := range map[string]float64{
		"nano": 0.25, "micro": 0.5, "small": 1, "medium": 2, "large": 4, "xlarge": 8,
		"2xlarge": 16, "4xlarge": 32, "12xlarge": 96, "24xlarge": 192, "48xlarge": 384, "unknown": 0,
	} {
		if got := NormalizedUnits(size, 0); got != want {
			t.Errorf("NormalizedUnits(%q) = %v, want %v", size, got, want)
		}
	}
	if got := NormalizedUnits("metal", 128); got != 256 { // m6i.metal is a 32xlarge
		t.Errorf("NormalizedUnits(metal, 128 vCPUs) = %v, want 256", got)
	}
}

func TestBill(t *testing.T) {
	od := func(typ string, price float64) BillNode {
		return BillNode{InstanceType: typ, Zone: "us-east-1a", CapacityType: "on-demand", Price: price}
	}
	ri := func(name, typ string, count int, fee float64) Commitment {
		family, size, _ := strings.Cut(typ, ".")
		return Commitment{Name: name, Type: v1alpha1.CommitmentReservedInstances, InstanceType: typ, Family: family,
			Count: count, Units: float64(count) * NormalizedUnits(size, 0), Fee: fee * float64(count)}
	}
	compute := func(name string, hourly, discount float64, rates map[string]float64) Commitment {
		return Commitment{Name: name, Type: v1alpha1.CommitmentComputeSavingsPlan, Hourly: hourly, Fee: hourly, Discount: discount, Rates: rates}
	}
	type use struct{ used, covered, spilled float64 }
	for _, tc := range []struct {
		name        string
		nodes       []BillNode
		commitments []Commitment
		onDemand    float64 // uncovered
		sunk        float64
		uses        []use
	}{
		{name: "no commitments: the list price", nodes: []BillNode{od("m6i.large", 0.096), od("c6i.large", 0.085)}, onDemand: 0.181},
		{
			name:        "a regional reservation is size-flexible, smallest sizes first, and spills the rest of a larger node",
			nodes:       []BillNode{od("m6i.2xlarge", 0.384), od("m6i.xlarge", 0.192)},
			commitments: []Commitment{ri("m6i", "m6i.large", 5, 0.06)}, // 20 units
			onDemand:    0.096, sunk: 0.30,
			uses: []use{{used: 20, covered: 0.48, spilled: 0.096}},
		},
		{
			name:        "an unused reservation is paid for all the same",
			nodes:       []BillNode{od("c6i.large", 0.085), {InstanceType: "m6i.large", CapacityType: "spot", Price: 0.04}},
			commitments: []Commitment{ri("m6i", "m6i.large", 2, 0.06)},
			onDemand:    0.125, sunk: 0.12,
			uses: []use{{}},
		},
		{
			name:  "a zonal reservation covers its type in its zone only, whole instances",
			nodes: []BillNode{od("m6i.large", 0.096), {InstanceType: "m6i.large", Zone: "us-east-1b", CapacityType: "on-demand", Price: 0.096}, od("m6i.xlarge", 0.192)},
			commitments: []Commitment{{Name: "zonal", Type: v1alpha1.CommitmentReservedInstances, InstanceType: "m6i.large", Family: "m6i",
				Zone: "us-east-1a", Count: 2}},
			onDemand: 0.288,
			uses:     []use{{used: 1, covered: 0.096}},
		},
		{
			name:        "a Compute Savings Plan covers any family at its rate until its dollars run out",
			nodes:       []BillNode{od("c6i.xlarge", 0.2), od("r6i.xlarge", 0.2)},
			commitments: []Commitment{compute("sp", 0.15, 0.5, nil)},
			onDemand:    0.1, sunk: 0.15, // the first node at 0.1, half the second at 0.05
			uses: []use{{used: 0.15, covered: 0.3, spilled: 0.1}},
		},
		{
			name:        "a Savings Plan covers the highest discount first",
			nodes:       []BillNode{od("c6i.large", 0.1), od("m6i.large", 0.1)},
			commitments: []Commitment{compute("sp", 0.09, 0, map[string]float64{"c6i.large": 0.08, "m6i.large": 0.06})},
			onDemand:    0.0625, sunk: 0.09, // m6i at 0.06, then 0.03/0.08 of c6i
			uses: []use{{used: 0.09, covered: 0.1375, spilled: 0.0625}},
		},
		{
			name:  "reservations apply before Savings Plans, and EC2 Instance plans before Compute plans",
			nodes: []BillNode{od("m6i.large", 0.1), od("m6i.xlarge", 0.2), od("c6i.large", 0.1)},
			commitments: []Commitment{
				compute("compute", 1, 0.5, nil),
				{Name: "ec2", Type: v1alpha1.CommitmentEC2InstanceSavingsPlan, Family: "m6i", Hourly: 0.05, Fee: 0.05, Discount: 0.5},
				ri("ri", "m6i.large", 1, 0),
			},
			onDemand: 0, sunk: 1.05,
			uses: []use{{used: 0.1, covered: 0.2}, {used: 0.05, covered: 0.1, spilled: 0.1}, {used: 4, covered: 0.1, spilled: 0.2}},
		},
		{
			name:        "an EC2 Instance Savings Plan covers its family only",
			nodes:       []BillNode{od("c6i.large", 0.1)},
			commitments: []Commitment{{Name: "ec2", Type: v1alpha1.CommitmentEC2InstanceSavingsPlan, Family: "m6i", Hourly: 1, Fee: 1, Discount: 0.3}},
			onDemand:    0.1, sunk: 1,
			uses: []use{{}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := BillOf(tc.nodes, tc.commitments)
			near := func(what string, got, want float64) {
				t.Helper()
				if math.Abs(got-want) > 1e-9 {
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			near("OnDemand", b.OnDemand, tc.onDemand)
			near("Sunk", b.Sunk, tc.sunk)
			near("Total", b.Total, tc.onDemand+tc.sunk)
			if len(b.Commitments) != len(tc.uses) {
				t.Fatalf("%d commitment uses, want %d", len(b.Commitments), len(tc.uses))
			}
			for i, u := range tc.uses {
				got := b.Commitments[i]
				near(got.Name+" Used", got.Used, u.used)
				near(got.Name+" Covered", got.Covered, u.covered)
				near(got.Name+" Spilled", got.Spilled, u.spilled)
				if got.Capacity > 0 {
					near(got.Name+" Utilization", got.Utilization, u.used/got.Capacity)
				}
			}
		})
	}
}

func TestCommitmentsOf(t *testing.T) {
	objs := []v1alpha1.Commitment{
		{Spec: v1alpha1.CommitmentSpec{Type: v1alpha1.CommitmentReservedInstances,
			ReservedInstances: &v1alpha1.ReservedInstances{InstanceType: "m6i.xlarge", InstanceCount: 3, PricePerHour: "0.12"}}},
		{Spec: v1alpha1.CommitmentSpec{Type: v1alpha1.CommitmentComputeSavingsPlan,
			SavingsPlan: &v1alpha1.SavingsPlan{Commitment: "5", Discount: "0.28", Rates: []v1alpha1.SavingsPlanRate{{InstanceType: "m6i.large", PricePerHour: "0.0691"}}}}},
		{Spec: v1alpha1.CommitmentSpec{Type: v1alpha1.CommitmentReservedInstances,
			ReservedInstances: &v1alpha1.ReservedInstances{InstanceType: "m6i.large", InstanceCount: 1, Region: "eu-west-1"}}},
	}
	objs[0].Name, objs[1].Name, objs[2].Name = "ri", "sp", "elsewhere"
	cs, warnings, err := CommitmentsOf(objs, "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || len(warnings) != 1 || !strings.Contains(warnings[0], "elsewhere is in eu-west-1") {
		t.Fatalf("got %d commitments, warnings %q; want 2 and one warning for elsewhere", len(cs), warnings)
	}
	if c := cs[0]; c.Family != "m6i" || c.Units != 24 || math.Abs(c.Fee-0.36) > 1e-9 {
		t.Errorf("reservation = %+v, want family m6i, 24 units, fee 0.36", c)
	}
	if c := cs[1]; c.Hourly != 5 || c.Fee != 5 || c.Discount != 0.28 || c.Rates["m6i.large"] != 0.0691 {
		t.Errorf("savings plan = %+v", c)
	}
	objs[0].Spec.ReservedInstances.InstanceCount = 0
	if _, _, err := CommitmentsOf(objs, ""); err == nil || !strings.Contains(err.Error(), "Commitment ri: spec.reservedInstances.instanceCount") {
		t.Errorf("invalid commitment: err = %v", err)
	}
}

// spendProblem is n pods of 1 CPU and 2 GiB on a pool of m6i and c6i,
// spot or on-demand, in us-east-1a and us-east-1b, from the embedded
// catalog.
func spendProblem(t *testing.T, n int) *solver.Problem {
	t.Helper()
	p := &solver.Problem{InstanceTypes: catalogTypes(t), Pools: []solver.Pool{{Name: "default", Requirements: []solver.Requirement{
		{Key: cloud.LabelInstanceFamily, Operator: "In", Values: []string{"m6i", "c6i"}},
		{Key: solver.LabelZone, Operator: "In", Values: []string{"us-east-1a", "us-east-1b"}},
	}}}}
	for i := range n {
		var r solver.Resources
		r[solver.CPU], r[solver.Memory], r[solver.Pods] = 1000, 2*gi, 1
		p.Pods = append(p.Pods, solver.Pod{Namespace: "default", Name: fmt.Sprintf("web-%d", i), Requests: r})
	}
	return p
}

func TestSpend(t *testing.T) {
	solve := func(q *solver.Problem) (*solver.Plan, error) { return solver.Solve(q) }
	for _, tc := range []struct {
		name string
		cs   []Commitment
		// check looks at the chosen plan's bill.
		check func(t *testing.T, s *Spending)
	}{
		{"no commitments: the blind plan", nil, func(t *testing.T, s *Spending) {
			if s.Aware || s.Rounds != 0 || s.Saving() != 0 {
				t.Errorf("Aware %v, %d rounds, saving %v: want the blind plan untouched", s.Aware, s.Rounds, s.Saving())
			}
		}},
		{"a regional reservation is used whole, size-flexibly", []Commitment{{Name: "ri", Type: v1alpha1.CommitmentReservedInstances,
			InstanceType: "m6i.large", Family: "m6i", Count: 6, Units: 24, Fee: 6 * 0.06}}, func(t *testing.T, s *Spending) {
			if u := s.Bill.Commitments[0]; u.Utilization < 0.99 {
				t.Errorf("reservation %.0f%% used, want all", 100*u.Utilization)
			}
		}},
		{"a zonal reservation is used whole", []Commitment{{Name: "zonal", Type: v1alpha1.CommitmentReservedInstances,
			InstanceType: "m6i.xlarge", Family: "m6i", Zone: "us-east-1b", Count: 2}}, func(t *testing.T, s *Spending) {
			if u := s.Bill.Commitments[0]; u.Used != 2 {
				t.Errorf("zonal reservation: %v of 2 instances used", u.Used)
			}
		}},
		{"a Savings Plan with room buys on-demand it covers instead of spot", []Commitment{{Name: "sp", Type: v1alpha1.CommitmentComputeSavingsPlan,
			Hourly: 0.5, Fee: 0.5, Discount: 0.3}}, func(t *testing.T, s *Spending) {
			if u := s.Bill.Commitments[0]; u.Utilization < 0.9 {
				t.Errorf("savings plan %.0f%% used, want at least 90%%", 100*u.Utilization)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := spendProblem(t, 40)
			blind, err := solver.Solve(p)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Spend(p, blind, tc.cs, solve)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("bill $%.4f/h, blind $%.4f/h, bound $%.4f/h, %d rounds", s.Bill.Total, s.Blind.Total, s.Bound, s.Rounds)
			if s.Bill.Total > s.Blind.Total+1e-9 {
				t.Errorf("bill $%.4f/h dearer than the blind plan's $%.4f/h", s.Bill.Total, s.Blind.Total)
			}
			if s.Bound > s.Bill.Total+1e-9 {
				t.Errorf("bound $%.4f/h above the bill $%.4f/h", s.Bound, s.Bill.Total)
			}
			if added := s.Bill.Total - s.Existing.Total; math.Abs(s.Added()-added) > 1e-9 || len(tc.cs) == 0 && math.Abs(s.Added()-s.Plan.TotalPrice) > 1e-6 {
				t.Errorf("added $%.4f/h; want the bill less the existing nodes' ($%.4f/h), the new nodes' list price without commitments ($%.4f/h)",
					s.Added(), added, s.Plan.TotalPrice)
			}
			if len(tc.cs) > 0 && !s.Aware {
				t.Errorf("no commitment-aware plan bills less than the blind one ($%.4f/h)", s.Blind.Total)
			}
			if len(s.Plan.Unschedulable) != 0 {
				t.Errorf("%d pods unplaced", len(s.Plan.Unschedulable))
			}
			sum := 0.0
			for _, n := range s.Plan.NewNodes {
				sum += n.Price
			}
			if math.Abs(sum-s.Bill.List) > 1e-6 || math.Abs(s.Plan.TotalPrice-s.Bill.List) > 1e-6 {
				t.Errorf("nodes sum to $%.4f/h, TotalPrice $%.4f/h, list $%.4f/h: the plan must carry list prices", sum, s.Plan.TotalPrice, s.Bill.List)
			}
			tc.check(t, s)
		})
	}
}

// TestSpendByStopsAtTheDeadlineOrTheContext: SpendBy makes the
// commitment-aware plans until its context ends or its deadline passes,
// then keeps what it has (the blind plan when it made none).
func TestSpendByStopsAtTheDeadlineOrTheContext(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	cs := []Commitment{{Name: "zonal", Type: v1alpha1.CommitmentReservedInstances, InstanceType: "m6i.xlarge", Family: "m6i", Zone: "us-east-1b", Count: 2}}
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		deadline time.Time
		aware    bool
	}{
		{"no deadline: the reservation is planned", context.Background(), time.Time{}, true},
		{"a deadline ahead: the reservation is planned", context.Background(), time.Now().Add(time.Hour), true},
		{"the deadline past: the blind plan", context.Background(), time.Now().Add(-time.Second), false},
		{"the context ended: the blind plan", ended, time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := spendProblem(t, 10)
			blind, err := solver.Solve(p)
			if err != nil {
				t.Fatal(err)
			}
			s, err := SpendBy(tc.ctx, p, blind, cs, tc.deadline)
			if err != nil {
				t.Fatal(err)
			}
			if s.Aware != tc.aware || (s.Rounds > 0) != tc.aware {
				t.Errorf("aware %v after %d plans; want aware %v", s.Aware, s.Rounds, tc.aware)
			}
			if !tc.aware && s.Plan != blind {
				t.Error("no plan made, yet the blind plan is not kept")
			}
		})
	}
}

func TestSpendDoesNotChangeTheProblem(t *testing.T) {
	p := spendProblem(t, 10)
	before := fmt.Sprint(p.InstanceTypes[0].Offerings, len(p.InstanceTypes), p.Pools)
	blind, err := solver.Solve(p)
	if err != nil {
		t.Fatal(err)
	}
	cs := []Commitment{{Name: "ri", Type: v1alpha1.CommitmentReservedInstances, InstanceType: "m6i.large", Family: "m6i", Count: 2, Units: 8},
		{Name: "sp", Type: v1alpha1.CommitmentComputeSavingsPlan, Hourly: 0.3, Fee: 0.3, Discount: 0.3}}
	if _, err := Spend(p, blind, cs, func(q *solver.Problem) (*solver.Plan, error) { return solver.Solve(q) }); err != nil {
		t.Fatal(err)
	}
	for _, types := range typeLists(p) {
		for _, typ := range types {
			for _, o := range typ.Offerings {
				if o.Count != 0 || o.Reservation != "" {
					t.Fatalf("%s gained a reserved offering %+v", typ.Name, o)
				}
			}
		}
	}
	if after := fmt.Sprint(p.InstanceTypes[0].Offerings, len(p.InstanceTypes), p.Pools); after != before {
		t.Errorf("the problem changed:\n%s\n%s", before, after)
	}
}

func TestBillBound(t *testing.T) {
	p := &solver.Problem{Pools: []solver.Pool{{Name: "default"}}, InstanceTypes: []solver.InstanceType{
		{Name: "m6i.large", Offerings: []solver.Offering{{Zone: "a", CapacityType: "on-demand", Price: 0.1}, {Zone: "a", CapacityType: "spot", Price: 0.04}}},
		{Name: "m6i.xlarge", Offerings: []solver.Offering{{Zone: "a", CapacityType: "on-demand", Price: 0.24}}},
		{Name: "c6i.large", Offerings: []solver.Offering{{Zone: "a", CapacityType: "on-demand", Price: 0.08}}},
	}}
	cs := []Commitment{
		{Name: "ri", Type: v1alpha1.CommitmentReservedInstances, Family: "m6i", Units: 8, Fee: 0.1},                                                   // at most 8 × 0.03 (the xlarge's unit)
		{Name: "sp", Type: v1alpha1.CommitmentComputeSavingsPlan, Hourly: 0.5, Fee: 0.5, Rates: map[string]float64{"c6i.large": 0.04}, Discount: 0.2}, // at most 0.5 × 2
	}
	if got, want := BillBound(p, 2, cs), 0.6+2-0.24-1; math.Abs(got-want) > 1e-9 {
		t.Errorf("BillBound = %v, want %v", got, want)
	}
	if got := BillBound(p, 0.5, cs); got != 0.6 {
		t.Errorf("BillBound with little to cover = %v, want the fees 0.6", got)
	}
}

func TestReservationChoices(t *testing.T) {
	p := spendProblem(t, 1)
	cs := []Commitment{
		{Name: "ri", Type: v1alpha1.CommitmentReservedInstances, InstanceType: "m6i.large", Family: "m6i", Count: 6, Units: 24},
		{Name: "zonal", Type: v1alpha1.CommitmentReservedInstances, InstanceType: "c6i.large", Family: "c6i", Zone: "us-east-1a", Count: 3},
		{Name: "sp", Type: v1alpha1.CommitmentComputeSavingsPlan, Hourly: 1, Discount: 0.3},
	}
	uses := func(ri, zonal float64) Bill {
		return Bill{Commitments: []CommitmentUse{{Used: ri}, {Used: zonal}, {}}}
	}
	choices := reservationChoices(p, cs, uses(0, 0))
	if got := fmt.Sprint(choices[0]); got != "[{0 m6i.2xlarge 1 } {0 m6i.xlarge 1 } {1 c6i.large 3 }]" {
		t.Errorf("greedy choice = %s, want 24 units as one 2xlarge and one xlarge, and the zonal reservation", got)
	}
	for _, c := range choices[1:] {
		if len(c) != 2 || c[1] != (reservation{commitment: 1, instanceType: "c6i.large", count: 3}) || c[0].commitment != 0 {
			t.Errorf("choice %v: want one m6i size and the zonal reservation", c)
		}
	}
	// Existing nodes already use 8 of the units and one zonal instance.
	if got := fmt.Sprint(reservationChoices(p, cs, uses(8, 1))[0]); got != "[{0 m6i.2xlarge 1 } {1 c6i.large 2 }]" {
		t.Errorf("with existing nodes, greedy choice = %s, want what they leave", got)
	}
}

// TestSpendIsNeverDearerThanBlind spends random mixes of commitments on
// random workloads: the bill is never above the blind plan's, the bound
// never above the bill, and no pod is left unplaced.
func TestSpendIsNeverDearerThanBlind(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 3))
	families := []string{"m6i", "c6i"}
	sizes := []string{"large", "xlarge", "2xlarge"}
	for i := range 12 {
		p := spendProblem(t, 5+rng.IntN(60))
		for j := range p.Pods {
			p.Pods[j].Requests[solver.CPU] = int64(250 * (1 + rng.IntN(8)))
			p.Pods[j].Requests[solver.Memory] = int64(1+rng.IntN(8)) * gi / 2
		}
		var cs []Commitment
		for k := range 1 + rng.IntN(3) {
			f, size := families[rng.IntN(2)], sizes[rng.IntN(3)]
			n := 1 + rng.IntN(4)
			switch rng.IntN(4) {
			case 0:
				cs = append(cs, Commitment{Name: fmt.Sprint("zonal-", k), Type: v1alpha1.CommitmentReservedInstances, InstanceType: f + "." + size,
					Family: f, Zone: "us-east-1b", Count: n, Fee: 0.05 * float64(n)})
			case 1:
				cs = append(cs, Commitment{Name: fmt.Sprint("ri-", k), Type: v1alpha1.CommitmentReservedInstances, InstanceType: f + "." + size,
					Family: f, Count: n, Units: float64(n) * NormalizedUnits(size, 0), Fee: 0.05 * float64(n)})
			case 2:
				h := 0.1 * float64(1+rng.IntN(10))
				cs = append(cs, Commitment{Name: fmt.Sprint("ec2-", k), Type: v1alpha1.CommitmentEC2InstanceSavingsPlan, Family: f, Hourly: h, Fee: h, Discount: 0.3})
			default:
				h := 0.1 * float64(1+rng.IntN(10))
				cs = append(cs, Commitment{Name: fmt.Sprint("compute-", k), Type: v1alpha1.CommitmentComputeSavingsPlan, Hourly: h, Fee: h, Discount: 0.25})
			}
		}
		blind, err := solver.Solve(p)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Spend(p, blind, cs, func(q *solver.Problem) (*solver.Plan, error) { return solver.Solve(q) })
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("case %d: %d pods, %d commitments: bill $%.4f/h, blind $%.4f/h, bound $%.4f/h, %d plans", i, len(p.Pods), len(cs), s.Bill.Total, s.Blind.Total, s.Bound, s.Rounds)
		if s.Bill.Total > s.Blind.Total+1e-9 || s.Bound > s.Bill.Total+1e-9 || len(s.Plan.Unschedulable) > 0 || s.Rounds > maxPlans {
			t.Errorf("case %d (%+v): bill $%.4f/h, blind $%.4f/h, bound $%.4f/h, %d unplaced, %d plans", i, cs, s.Bill.Total, s.Blind.Total, s.Bound, len(s.Plan.Unschedulable), s.Rounds)
		}
	}
}

func TestEffectivePrices(t *testing.T) {
	od := func(typ string, price float64) BillNode {
		return BillNode{InstanceType: typ, Zone: "us-east-1a", CapacityType: cloud.CapacityTypeOnDemand, Price: price}
	}
	for _, tc := range []struct {
		name        string
		nodes       []BillNode
		commitments []Commitment
		want        []float64
	}{
		{name: "no commitments: the list prices", nodes: []BillNode{od("m6i.large", 0.096), od("c6i.large", 0.085)}, want: []float64{0.096, 0.085}},
		{
			name:  "a regional reservation covers the smallest size whole and what is left of the next",
			nodes: []BillNode{od("m6i.2xlarge", 0.384), od("m6i.large", 0.096)},
			commitments: []Commitment{{Name: "ri", Type: v1alpha1.CommitmentReservedInstances, InstanceType: "m6i.large", Family: "m6i",
				Count: 2, Units: 8}}, // the large's 4 units, then 4 of the 2xlarge's 16
			want: []float64{0.384 * 0.75, 0},
		},
		{
			name:        "spot is never covered",
			nodes:       []BillNode{{InstanceType: "m6i.large", CapacityType: cloud.CapacityTypeSpot, Price: 0.04}},
			commitments: []Commitment{{Name: "sp", Type: v1alpha1.CommitmentComputeSavingsPlan, Hourly: 1, Fee: 1, Discount: 0.3}},
			want:        []float64{0.04},
		},
		{
			name:        "a Savings Plan covers at its rate until its dollars run out",
			nodes:       []BillNode{od("c6i.xlarge", 0.2), od("r6i.xlarge", 0.2)},
			commitments: []Commitment{{Name: "sp", Type: v1alpha1.CommitmentComputeSavingsPlan, Hourly: 0.15, Fee: 0.15, Discount: 0.5}},
			want:        []float64{0, 0.1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := EffectivePrices(tc.nodes, tc.commitments)
			sum := 0.0
			for i := range tc.want {
				if math.Abs(got[i]-tc.want[i]) > 1e-9 {
					t.Errorf("node %d (%s): effective $%v/h, want $%v/h", i, tc.nodes[i].InstanceType, got[i], tc.want[i])
				}
				sum += got[i]
			}
			if b := BillOf(tc.nodes, tc.commitments); math.Abs(sum-b.OnDemand) > 1e-9 {
				t.Errorf("effective prices sum to $%v/h, the bill's uncovered part is $%v/h", sum, b.OnDemand)
			}
		})
	}
}

// consolidationProblem is one on-demand m6i.2xlarge in us-east-1a of pool
// default (m6i and c6i, on-demand and spot) running one 1-CPU pod: a node
// consolidation replaces by a smaller, cheaper one at list prices.
func consolidationProblem(t *testing.T, capacityType string) *solver.Problem {
	t.Helper()
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	p := &solver.Problem{InstanceTypes: catalogTypes(t), Options: solver.Options{Now: now},
		Pools: []solver.Pool{{Name: "default", Requirements: []solver.Requirement{
			{Key: cloud.LabelInstanceFamily, Operator: "In", Values: []string{"m6i", "c6i"}},
			{Key: solver.LabelZone, Operator: "In", Values: []string{"us-east-1a"}},
		}, Consolidation: solver.Consolidation{Policy: solver.WhenEmptyOrUnderutilized, NodesAllowed: -1}}}}
	n := solver.Node{Name: "big", Pool: "default", InstanceType: "m6i.2xlarge", Zone: "us-east-1a", CapacityType: capacityType,
		Created: now.Add(-time.Hour), LastPodChange: now.Add(-time.Hour)}
	for i := range p.InstanceTypes {
		it := &p.InstanceTypes[i]
		if it.Name != n.InstanceType {
			continue
		}
		n.Allocatable = it.Allocatable()
		n.Labels = maps.Clone(it.Labels)
		for _, o := range it.Offerings {
			if o.Zone == n.Zone && o.CapacityType == capacityType {
				n.Price = o.Price
			}
		}
	}
	n.Labels[solver.LabelNodePool], n.Labels[solver.LabelZone], n.Labels[solver.LabelCapacityType], n.Labels[solver.LabelHostname] = "default", n.Zone, capacityType, n.Name
	var r solver.Resources
	r[solver.CPU], r[solver.Memory], r[solver.Pods] = 1000, 2*gi, 1
	n.Pods = []solver.Pod{{Namespace: "default", Name: "web-0", Requests: r, Controller: true}}
	n.Requested = r
	p.Nodes = []solver.Node{n}
	return p
}

func TestCoveredPricesKeepConsolidationOffWhatTheCommitmentPays(t *testing.T) {
	ri := func(units float64) Commitment {
		return Commitment{Name: "ri", Type: v1alpha1.CommitmentReservedInstances, InstanceType: "m6i.large", Family: "m6i",
			Count: int(units / 4), Units: units, Fee: units / 4 * 0.06}
	}
	for _, tc := range []struct {
		name         string
		capacityType string
		cs           []Commitment
		replaced     bool
	}{
		{name: "no commitment: the oversized node is replaced", capacityType: cloud.CapacityTypeOnDemand, replaced: true},
		{name: "a reservation covering it whole: kept, a cheaper list price saves nothing", capacityType: cloud.CapacityTypeOnDemand,
			cs: []Commitment{ri(16)}},
		{name: "a Savings Plan covering it whole: kept", capacityType: cloud.CapacityTypeOnDemand,
			cs: []Commitment{{Name: "sp", Type: v1alpha1.CommitmentComputeSavingsPlan, Hourly: 1, Fee: 1, Discount: 0.3}}},
		{name: "a reservation covering a quarter of it: the rest is worth replacing", capacityType: cloud.CapacityTypeOnDemand,
			cs: []Commitment{ri(4)}, replaced: true},
		{name: "a Savings Plan of another family: replaced", capacityType: cloud.CapacityTypeOnDemand, replaced: true,
			cs: []Commitment{{Name: "c6i", Type: v1alpha1.CommitmentEC2InstanceSavingsPlan, Family: "c6i", Hourly: 1, Fee: 1, Discount: 0.3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := consolidationProblem(t, tc.capacityType)
			list := p.Nodes[0].Price
			CoveredPrices(p, tc.cs)
			want := EffectivePrices([]BillNode{{InstanceType: "m6i.2xlarge", Zone: "us-east-1a", CapacityType: tc.capacityType, Price: list}}, tc.cs)[0]
			if got := p.Nodes[0].Price; math.Abs(got-max(want, list/1000)) > 1e-12 {
				t.Errorf("priced $%v/h, want $%v/h (list $%v/h)", got, max(want, list/1000), list)
			}
			plan, err := solver.Consolidate(p)
			if err != nil {
				t.Fatal(err)
			}
			if replaced := len(plan.Actions) > 0; replaced != tc.replaced {
				t.Errorf("actions %+v (blocked %+v): replaced %v, want %v", plan.Actions, plan.Blocked, replaced, tc.replaced)
			}
			for _, a := range plan.Actions {
				if a.Saving <= 0 || a.Saving >= list {
					t.Errorf("action saves $%v/h of a $%v/h node", a.Saving, list)
				}
			}
		})
	}
}

// TestCoveredPricesOfferTheRoomLeftToReplacements: the room a Savings
// Plan has left once the existing nodes are billed is offered to
// consolidation's replacements, covered whole, so that a spot node no
// list-priced replacement beats is replaced by on-demand capacity the plan
// pays for, and a node of a family the plan does not cover is replaced
// by one it does, saving the node's whole price; a Reserved Instance's
// unused units likewise. Room too small for a node offers nothing, and a
// Savings Plan's room is offered to one node a round.
func TestCoveredPricesOfferTheRoomLeftToReplacements(t *testing.T) {
	compute := func(hourly float64) []Commitment {
		return []Commitment{{Name: "sp", Type: v1alpha1.CommitmentComputeSavingsPlan, Hourly: hourly, Fee: hourly, Discount: 0.3}}
	}
	c6iPlan := []Commitment{{Name: "c6i", Type: v1alpha1.CommitmentEC2InstanceSavingsPlan, Family: "c6i", Hourly: 1, Fee: 1, Discount: 0.3}}
	saving := func(p *solver.Problem) (*solver.ConsolidationPlan, float64) {
		t.Helper()
		plan, err := solver.Consolidate(p)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, a := range plan.Actions {
			sum += a.Saving
		}
		return plan, sum
	}
	for _, tc := range []struct {
		name         string
		capacityType string
		cs           []Commitment
		// replaced says the node is replaced by on-demand capacity the
		// commitments cover, of family when set.
		replaced bool
		family   string
		// keptAtList says list prices replace nothing: only the room
		// makes the replacement worth it.
		keptAtList bool
	}{
		{name: "spot, a Savings Plan with room: replaced by covered on-demand (at list, kept)", capacityType: cloud.CapacityTypeSpot, cs: compute(1),
			replaced: true, keptAtList: true},
		{name: "spot, a Savings Plan with too little room for any node: kept", capacityType: cloud.CapacityTypeSpot, cs: compute(0.01)},
		{name: "spot, a reservation no running node uses: replaced by a reserved m6i", capacityType: cloud.CapacityTypeSpot,
			cs:       []Commitment{{Name: "ri", Type: v1alpha1.CommitmentReservedInstances, InstanceType: "m6i.large", Family: "m6i", Count: 4, Units: 16, Fee: 0.24}},
			replaced: true, family: "m6i", keptAtList: true},
		{name: "on-demand m6i, a c6i Savings Plan with room: replaced by covered c6i, saving more than at list", capacityType: cloud.CapacityTypeOnDemand,
			cs: c6iPlan, replaced: true, family: "c6i"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, atList := saving(consolidationProblem(t, tc.capacityType))
			if tc.keptAtList && atList != 0 {
				t.Fatalf("at list prices consolidation saves $%v/h; the case needs a node no list-priced replacement beats", atList)
			}
			p := consolidationProblem(t, tc.capacityType)
			list := p.Nodes[0].Price
			CoveredPrices(p, tc.cs)
			plan, saved := saving(p)
			if !tc.replaced {
				if saved != atList {
					t.Errorf("actions %+v save $%v/h; want what list prices save, $%v/h", plan.Actions, saved, atList)
				}
				return
			}
			if len(plan.Actions) != 1 || len(plan.Actions[0].Replacements) != 1 {
				t.Fatalf("actions %+v (blocked %+v): want one replacement", plan.Actions, plan.Blocked)
			}
			r := plan.Actions[0].Replacements[0]
			if family, _, _ := strings.Cut(r.InstanceType, "."); tc.family != "" && family != tc.family || r.CapacityType != cloud.CapacityTypeOnDemand {
				t.Errorf("replacement %s %s; want on-demand %s", r.InstanceType, r.CapacityType, tc.family)
			}
			if r.Price > list/100 || saved < 0.99*list || saved <= atList {
				t.Errorf("covered replacement at $%v/h saves $%v/h of a $%v/h node (at list prices $%v/h): want nearly the whole price, more than at list",
					r.Price, saved, list, atList)
			}
		})
	}
	// The room pays for one replacement a round: two spot nodes, each
	// replaceable only by covered capacity and whose pods may not share a
	// node, get one.
	p := consolidationProblem(t, cloud.CapacityTypeSpot)
	solo := func(pod *solver.Pod) {
		pod.Labels = map[string]string{"tier": "solo"}
		pod.PodAntiAffinity = []solver.PodAffinityTerm{{TopologyKey: solver.LabelHostname, Selector: solver.Selector{MatchLabels: pod.Labels}}}
	}
	solo(&p.Nodes[0].Pods[0])
	second := p.Nodes[0]
	second.Name, second.Pods = "big-2", []solver.Pod{{Namespace: "default", Name: "web-1", Requests: second.Pods[0].Requests, Controller: true}}
	solo(&second.Pods[0])
	second.Labels = maps.Clone(second.Labels)
	second.Labels[solver.LabelHostname] = second.Name
	p.Nodes = append(p.Nodes, second)
	CoveredPrices(p, compute(10))
	plan, _ := saving(p)
	covered := 0
	for _, a := range plan.Actions {
		for _, r := range a.Replacements {
			if r.CapacityType == cloud.CapacityTypeOnDemand && r.Price < 0.01 {
				covered++
			}
		}
	}
	if covered != 1 {
		t.Errorf("%d covered replacements on one Savings Plan's room in one round (actions %+v); want one", covered, plan.Actions)
	}
}

func TestCoveredList(t *testing.T) {
	nodes := []solver.NewNode{{Price: 1}, {Price: 2}, {Price: 4}}
	for _, tc := range []struct {
		name       string
		covered    []float64
		list, paid float64
	}{
		{"no commitments", nil, 7, 0},
		{"one whole, one half", []float64{1, 0.5, 0}, 7, 2},
		{"shares for fewer nodes: the rest uncovered", []float64{0, 0, 1}[:1], 7, 0},
		{"all covered", []float64{1, 1, 1}, 7, 7},
	} {
		if list, paid := CoveredList(nodes, tc.covered); list != tc.list || paid != tc.paid {
			t.Errorf("%s: list $%v/h, covered $%v/h; want $%v/h, $%v/h", tc.name, list, paid, tc.list, tc.paid)
		}
	}
}

func TestSpendSaysWhichNewNodesAreCovered(t *testing.T) {
	p := spendProblem(t, 10)
	blind, err := solver.Solve(p)
	if err != nil {
		t.Fatal(err)
	}
	cs := []Commitment{{Name: "zonal", Type: v1alpha1.CommitmentReservedInstances, InstanceType: "m6i.xlarge", Family: "m6i", Zone: "us-east-1b", Count: 1}}
	s, err := Spend(p, blind, cs, func(q *solver.Problem) (*solver.Plan, error) { return solver.Solve(q) })
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Covered) != len(s.Plan.NewNodes) {
		t.Fatalf("%d covered shares for %d new nodes", len(s.Covered), len(s.Plan.NewNodes))
	}
	covered := 0
	for i, n := range s.Plan.NewNodes {
		isIt := n.InstanceType == "m6i.xlarge" && n.Zone == "us-east-1b" && n.CapacityType == cloud.CapacityTypeOnDemand
		switch {
		case s.Covered[i] == 1 && isIt:
			covered++
		case s.Covered[i] != 0:
			t.Errorf("node %d (%s %s %s) %.0f%% covered", i, n.InstanceType, n.Zone, n.CapacityType, 100*s.Covered[i])
		}
	}
	if covered != 1 {
		t.Errorf("%d new nodes covered by the zonal reservation of one, want 1 (plan %+v)", covered, s.Plan.NewNodes)
	}
}
