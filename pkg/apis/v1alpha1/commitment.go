package v1alpha1

import (
	"errors"
	"fmt"
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Commitment is compute already paid for: EC2 Reserved Instances or a
// Savings Plan. The planner spends it as a budget: a node the commitment
// covers costs nothing more while the commitment has room (its fee is paid
// whether used or not), then on-demand. It is read by `kubectl rightsize
// explain` (offline from manifests) to print each commitment's utilisation
// and what it saves against a plan that ignores it.
//
// This kind is ours (Karpenter has none: aws/karpenter-provider-aws#2259).
// The fields follow the AWS APIs a commitment is imported from
// (DescribeReservedInstances, savingsplans:DescribeSavingsPlans).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName={commitment,commitments},categories=rightsize
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="InstanceType",type=string,JSONPath=`.spec.reservedInstances.instanceType`
// +kubebuilder:printcolumn:name="Count",type=integer,JSONPath=`.spec.reservedInstances.instanceCount`
// +kubebuilder:printcolumn:name="Commitment",type=string,JSONPath=`.spec.savingsPlan.commitment`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Commitment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what was bought.
	Spec CommitmentSpec `json:"spec"`
}

// CommitmentType names what a Commitment is.
type CommitmentType string

// The types of commitment.
const (
	// CommitmentReservedInstances is EC2 Reserved Instances (Standard or
	// Convertible): a count of one instance type, regional (size-flexible
	// within the family, in normalised units) or zonal (that type in that
	// zone only).
	CommitmentReservedInstances CommitmentType = "ReservedInstances"
	// CommitmentComputeSavingsPlan is a Compute Savings Plan: dollars per
	// hour of usage at the plan's rates, on any family in any region.
	CommitmentComputeSavingsPlan CommitmentType = "ComputeSavingsPlan"
	// CommitmentEC2InstanceSavingsPlan is an EC2 Instance Savings Plan:
	// dollars per hour at the plan's rates, on one family in one region.
	CommitmentEC2InstanceSavingsPlan CommitmentType = "EC2InstanceSavingsPlan"
)

// CommitmentSpec is one commitment. Exactly one of reservedInstances and
// savingsPlan is set, as type says.
//
// +kubebuilder:validation:XValidation:rule="(self.type == 'ReservedInstances') == has(self.reservedInstances)",message="reservedInstances is set exactly when type is ReservedInstances",fieldPath=".reservedInstances"
// +kubebuilder:validation:XValidation:rule="(self.type == 'ReservedInstances') != has(self.savingsPlan)",message="savingsPlan is set exactly when type is ComputeSavingsPlan or EC2InstanceSavingsPlan",fieldPath=".savingsPlan"
// +kubebuilder:validation:XValidation:rule="self.type != 'EC2InstanceSavingsPlan' || (has(self.savingsPlan.instanceFamily) && has(self.savingsPlan.region))",message="an EC2InstanceSavingsPlan names its instanceFamily and region",fieldPath=".savingsPlan"
// +kubebuilder:validation:XValidation:rule="self.type != 'ComputeSavingsPlan' || (!has(self.savingsPlan.instanceFamily) && !has(self.savingsPlan.region))",message="a ComputeSavingsPlan applies to every family and region: instanceFamily and region are not set",fieldPath=".savingsPlan"
type CommitmentSpec struct {
	// Type is ReservedInstances, ComputeSavingsPlan or
	// EC2InstanceSavingsPlan.
	// +kubebuilder:validation:Enum=ReservedInstances;ComputeSavingsPlan;EC2InstanceSavingsPlan
	Type CommitmentType `json:"type"`
	// ReservedInstances is set when type is ReservedInstances.
	// +optional
	ReservedInstances *ReservedInstances `json:"reservedInstances,omitempty"`
	// SavingsPlan is set when type is a Savings Plan.
	// +optional
	SavingsPlan *SavingsPlan `json:"savingsPlan,omitempty"`
}

// ReservedInstances is a purchase of EC2 Reserved Instances, as
// DescribeReservedInstances returns one. A regional reservation (no
// availabilityZone) is size-flexible: it covers instanceCount times the
// type's normalised units (large 4, xlarge 8, 2xlarge 16, ...) of any
// size of the family in the region, smallest sizes first, as AWS applies
// it to Linux instances of default tenancy. A zonal one covers that type
// in that zone only, whole instances.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.region) && has(self.availabilityZone))",message="set region (a regional, size-flexible reservation) or availabilityZone (a zonal one), not both"
type ReservedInstances struct {
	// InstanceType is the type bought, e.g. m6i.large.
	// +kubebuilder:validation:Pattern=`^[a-z0-9-]+\.[a-z0-9-]+$`
	InstanceType string `json:"instanceType"`
	// InstanceCount is how many instances of instanceType were bought.
	// +kubebuilder:validation:Minimum=1
	InstanceCount int32 `json:"instanceCount"`
	// Region is the region of a regional reservation, e.g. us-east-1;
	// unset (with no availabilityZone) means the region planned.
	// +kubebuilder:validation:Pattern=`^[a-z]{2}(-[a-z]+)+-[0-9]+$`
	// +optional
	Region string `json:"region,omitempty"`
	// AvailabilityZone makes the reservation zonal: it covers instanceType
	// in this zone only, and is not size-flexible.
	// +kubebuilder:validation:MinLength=1
	// +optional
	AvailabilityZone string `json:"availabilityZone,omitempty"`
	// OfferingClass is Standard (the default) or Convertible; both are
	// billed alike, Convertible ones can be exchanged.
	// +kubebuilder:validation:Enum=Standard;Convertible
	// +optional
	OfferingClass string `json:"offeringClass,omitempty"`
	// PricePerHour is what one reserved instance costs an hour (its
	// upfront fee amortised over the term plus the recurring charge), in
	// dollars, e.g. "0.06". It is paid whether the reservation is used or
	// not; unset counts it as 0 in the bill.
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +optional
	PricePerHour string `json:"pricePerHour,omitempty"`
	// ID is the provider's identifier (reservedInstancesId), when imported.
	// +optional
	ID string `json:"id,omitempty"`
}

// SavingsPlan is a Compute or EC2 Instance Savings Plan, as
// savingsplans:DescribeSavingsPlans returns one: a commitment of dollars an
// hour at the plan's rates. AWS applies it each hour to the eligible
// on-demand usage with the highest discount first; what it cannot cover
// is billed on-demand.
//
// +kubebuilder:validation:XValidation:rule="has(self.discount) || (has(self.rates) && size(self.rates) > 0)",message="give the plan's rates or a discount for the types without one"
type SavingsPlan struct {
	// Commitment is the dollars an hour committed, e.g. "5".
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	Commitment string `json:"commitment"`
	// InstanceFamily is the family an EC2 Instance Savings Plan covers,
	// e.g. m6i.
	// +kubebuilder:validation:Pattern=`^[a-z0-9-]+$`
	// +optional
	InstanceFamily string `json:"instanceFamily,omitempty"`
	// Region is the region an EC2 Instance Savings Plan covers.
	// +kubebuilder:validation:Pattern=`^[a-z]{2}(-[a-z]+)+-[0-9]+$`
	// +optional
	Region string `json:"region,omitempty"`
	// Discount is the fraction off the on-demand price for instance types
	// rates does not list, e.g. "0.28" (AWS publishes a rate per type; a
	// 1-year no-upfront Compute Savings Plan is about 0.2-0.3 off).
	// +kubebuilder:validation:Pattern=`^0(\.[0-9]+)?$`
	// +optional
	Discount string `json:"discount,omitempty"`
	// Rates are the plan's published rates, per instance type.
	// +listType=map
	// +listMapKey=instanceType
	// +kubebuilder:validation:MaxItems=2000
	// +optional
	Rates []SavingsPlanRate `json:"rates,omitempty"`
	// ID is the provider's identifier (savingsPlanId), when imported.
	// +optional
	ID string `json:"id,omitempty"`
}

// SavingsPlanRate is a Savings Plan's price of one instance type.
type SavingsPlanRate struct {
	// InstanceType is the type, e.g. m6i.large.
	// +kubebuilder:validation:MinLength=1
	InstanceType string `json:"instanceType"`
	// PricePerHour is the plan's rate for the type, in dollars an hour.
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	PricePerHour string `json:"pricePerHour"`
}

// CommitmentList is a list of Commitments.
//
// +kubebuilder:object:root=true
type CommitmentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Commitments.
	Items []Commitment `json:"items"`
}

// Validate checks what the API server checks of a Commitment (the CEL rules
// and patterns above), for manifests read offline. The error names the
// first bad field; the caller names the object.
func (c *Commitment) Validate() error {
	s := &c.Spec
	switch s.Type {
	case CommitmentReservedInstances, CommitmentComputeSavingsPlan, CommitmentEC2InstanceSavingsPlan:
	default:
		return fmt.Errorf("spec.type: %q is not ReservedInstances, ComputeSavingsPlan or EC2InstanceSavingsPlan", s.Type)
	}
	if (s.Type == CommitmentReservedInstances) != (s.ReservedInstances != nil) {
		return errors.New("spec.reservedInstances: reservedInstances is set exactly when type is ReservedInstances")
	}
	if (s.Type == CommitmentReservedInstances) == (s.SavingsPlan != nil) {
		return errors.New("spec.savingsPlan: savingsPlan is set exactly when type is ComputeSavingsPlan or EC2InstanceSavingsPlan")
	}
	if ri := s.ReservedInstances; ri != nil {
		switch {
		case !instanceTypeRE.MatchString(ri.InstanceType):
			return fmt.Errorf("spec.reservedInstances.instanceType: %q is not an instance type such as m6i.large", ri.InstanceType)
		case ri.InstanceCount < 1:
			return fmt.Errorf("spec.reservedInstances.instanceCount: must be at least 1 (%d)", ri.InstanceCount)
		case ri.Region != "" && !regionRE.MatchString(ri.Region):
			return fmt.Errorf("spec.reservedInstances.region: %q is not a region such as us-east-1", ri.Region)
		case ri.Region != "" && ri.AvailabilityZone != "":
			return errors.New("spec.reservedInstances: set region (a regional, size-flexible reservation) or availabilityZone (a zonal one), not both")
		case ri.OfferingClass != "" && ri.OfferingClass != "Standard" && ri.OfferingClass != "Convertible":
			return fmt.Errorf("spec.reservedInstances.offeringClass: %q is not Standard or Convertible", ri.OfferingClass)
		case ri.PricePerHour != "" && !dollarsRE.MatchString(ri.PricePerHour):
			return fmt.Errorf("spec.reservedInstances.pricePerHour: %q is not dollars such as 0.06", ri.PricePerHour)
		}
		return nil
	}
	sp := s.SavingsPlan
	switch {
	case !dollarsRE.MatchString(sp.Commitment):
		return fmt.Errorf("spec.savingsPlan.commitment: %q is not dollars an hour such as 5 or 2.50", sp.Commitment)
	case s.Type == CommitmentEC2InstanceSavingsPlan && (sp.InstanceFamily == "" || sp.Region == ""):
		return errors.New("spec.savingsPlan: an EC2InstanceSavingsPlan names its instanceFamily and region")
	case s.Type == CommitmentComputeSavingsPlan && (sp.InstanceFamily != "" || sp.Region != ""):
		return errors.New("spec.savingsPlan: a ComputeSavingsPlan applies to every family and region: instanceFamily and region are not set")
	case sp.Region != "" && !regionRE.MatchString(sp.Region):
		return fmt.Errorf("spec.savingsPlan.region: %q is not a region such as us-east-1", sp.Region)
	case sp.Discount != "" && !discountRE.MatchString(sp.Discount):
		return fmt.Errorf("spec.savingsPlan.discount: %q is not a fraction such as 0.28", sp.Discount)
	case sp.Discount == "" && len(sp.Rates) == 0:
		return errors.New("spec.savingsPlan: give the plan's rates or a discount for the types without one")
	}
	seen := map[string]bool{}
	for i, r := range sp.Rates {
		switch {
		case r.InstanceType == "":
			return fmt.Errorf("spec.savingsPlan.rates[%d].instanceType: must not be empty", i)
		case seen[r.InstanceType]:
			return fmt.Errorf("spec.savingsPlan.rates[%d]: %s is listed twice", i, r.InstanceType)
		case !dollarsRE.MatchString(r.PricePerHour):
			return fmt.Errorf("spec.savingsPlan.rates[%d].pricePerHour: %q is not dollars such as 0.06", i, r.PricePerHour)
		}
		seen[r.InstanceType] = true
	}
	return nil
}

// The patterns of the Commitment CRD's fields, which Validate applies.
var (
	instanceTypeRE = regexp.MustCompile(`^[a-z0-9-]+\.[a-z0-9-]+$`)
	regionRE       = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
	dollarsRE      = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
	discountRE     = regexp.MustCompile(`^0(\.[0-9]+)?$`)
)
