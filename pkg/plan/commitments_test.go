package plan

import (
	"math"
	"strings"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
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
