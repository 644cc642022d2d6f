package v1alpha1

import (
	"strings"
	"testing"
)

func TestCommitmentValidate(t *testing.T) {
	ri := func(f func(*ReservedInstances)) Commitment {
		r := &ReservedInstances{InstanceType: "m6i.large", InstanceCount: 5}
		if f != nil {
			f(r)
		}
		return Commitment{Spec: CommitmentSpec{Type: CommitmentReservedInstances, ReservedInstances: r}}
	}
	sp := func(typ CommitmentType, f func(*SavingsPlan)) Commitment {
		s := &SavingsPlan{Commitment: "5", Discount: "0.28"}
		if typ == CommitmentEC2InstanceSavingsPlan {
			s.InstanceFamily, s.Region = "m6i", "us-east-1"
		}
		if f != nil {
			f(s)
		}
		return Commitment{Spec: CommitmentSpec{Type: typ, SavingsPlan: s}}
	}
	for _, tc := range []struct {
		name string
		c    Commitment
		want string // "" for valid
	}{
		{"regional reserved instances", ri(nil), ""},
		{"zonal reserved instances with a price", ri(func(r *ReservedInstances) { r.AvailabilityZone, r.PricePerHour = "us-east-1a", "0.06" }), ""},
		{"compute savings plan", sp(CommitmentComputeSavingsPlan, nil), ""},
		{"EC2 instance savings plan with rates only", sp(CommitmentEC2InstanceSavingsPlan, func(s *SavingsPlan) {
			s.Discount, s.Rates = "", []SavingsPlanRate{{InstanceType: "m6i.large", PricePerHour: "0.07"}}
		}), ""},
		{"unknown type", Commitment{Spec: CommitmentSpec{Type: "Spot"}}, "spec.type"},
		{"reserved instances without their spec", Commitment{Spec: CommitmentSpec{Type: CommitmentReservedInstances}}, "spec.reservedInstances"},
		{"a savings plan on reserved instances", func() Commitment {
			c := ri(nil)
			c.Spec.SavingsPlan = &SavingsPlan{Commitment: "1", Discount: "0.1"}
			return c
		}(), "spec.savingsPlan"},
		{"bad instance type", ri(func(r *ReservedInstances) { r.InstanceType = "m6i" }), "spec.reservedInstances.instanceType"},
		{"no instances", ri(func(r *ReservedInstances) { r.InstanceCount = 0 }), "spec.reservedInstances.instanceCount"},
		{"region and zone", ri(func(r *ReservedInstances) { r.Region, r.AvailabilityZone = "us-east-1", "us-east-1a" }), "not both"},
		{"bad offering class", ri(func(r *ReservedInstances) { r.OfferingClass = "Scheduled" }), "offeringClass"},
		{"bad commitment", sp(CommitmentComputeSavingsPlan, func(s *SavingsPlan) { s.Commitment = "$5" }), "spec.savingsPlan.commitment"},
		{"EC2 instance plan without family", sp(CommitmentEC2InstanceSavingsPlan, func(s *SavingsPlan) { s.InstanceFamily = "" }), "names its instanceFamily and region"},
		{"compute plan with a region", sp(CommitmentComputeSavingsPlan, func(s *SavingsPlan) { s.Region = "us-east-1" }), "every family and region"},
		{"discount of one or more", sp(CommitmentComputeSavingsPlan, func(s *SavingsPlan) { s.Discount = "1.2" }), "spec.savingsPlan.discount"},
		{"neither discount nor rates", sp(CommitmentComputeSavingsPlan, func(s *SavingsPlan) { s.Discount = "" }), "rates or a discount"},
		{"a rate twice", sp(CommitmentComputeSavingsPlan, func(s *SavingsPlan) {
			s.Rates = []SavingsPlanRate{{InstanceType: "m6i.large", PricePerHour: "0.07"}, {InstanceType: "m6i.large", PricePerHour: "0.08"}}
		}), "listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
