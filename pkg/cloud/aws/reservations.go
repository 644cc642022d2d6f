package aws

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Labels of a node launched into a capacity reservation, as Karpenter's
// provider sets them (aws/karpenter-provider-aws pkg/apis/v1/labels.go),
// beside karpenter.sh/capacity-type: reserved.
const (
	LabelCapacityReservationID   = "karpenter.k8s.aws/capacity-reservation-id"
	LabelCapacityReservationType = "karpenter.k8s.aws/capacity-reservation-type"
)

// Capacity reservation types, EC2's and Karpenter's names.
const (
	// ReservationTypeDefault is an on-demand capacity reservation (ODCR).
	ReservationTypeDefault = "default"
	// ReservationTypeCapacityBlock is a capacity block for ML.
	ReservationTypeCapacityBlock = "capacity-block"
)

// reservedPriceDivisor makes a reserved offering's price its on-demand
// price divided by ten million: paid for already, so near zero, yet still
// ordered by size, as Karpenter's provider prices them
// (aws/karpenter-provider-aws pkg/providers/instancetype/offering).
const reservedPriceDivisor = 10_000_000

// reservation is an active capacity reservation with instances left.
type reservation struct {
	id, kind, instanceType, zone string
	available                    int
}

// reservations returns the active capacity reservations the terms select
// (selectedReservations) that have instances left and were not refused
// lately (UnavailableOfferings.MarkReservationUnavailable).
func (p *Provider) reservations(ctx context.Context, terms []v1alpha1.CapacityReservationSelectorTerm) ([]reservation, error) {
	all, err := p.selectedReservations(ctx, terms)
	return slices.DeleteFunc(all, func(r reservation) bool {
		return r.available <= 0 || p.unavailable.IsReservationUnavailable(r.id)
	}), err
}

// selectedReservations returns the active capacity reservations the terms
// select, each once, as Karpenter's provider queries them
// (pkg/providers/capacityreservation: an id term by id, a tags term by
// tags and owner, state active).
func (p *Provider) selectedReservations(ctx context.Context, terms []v1alpha1.CapacityReservationSelectorTerm) ([]reservation, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	ctx, cancel := p.call(ctx)
	defer cancel()
	seen := map[string]bool{}
	var out []reservation
	for _, t := range terms {
		in := &ec2.DescribeCapacityReservationsInput{Filters: append(tagFilters(t.Tags), ec2types.Filter{Name: aws.String("state"), Values: []string{"active"}})}
		if t.ID != "" {
			in.CapacityReservationIds = []string{t.ID}
		}
		if t.OwnerID != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("owner-id"), Values: []string{t.OwnerID}})
		}
		pages := ec2.NewDescribeCapacityReservationsPaginator(p.ec2, in)
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("DescribeCapacityReservations: %w", err)
			}
			for _, r := range page.CapacityReservations {
				id := aws.ToString(r.CapacityReservationId)
				left := int(aws.ToInt32(r.AvailableInstanceCount))
				if seen[id] {
					continue
				}
				seen[id] = true
				out = append(out, reservation{id: id, kind: cmp.Or(string(r.ReservationType), ReservationTypeDefault),
					instanceType: aws.ToString(r.InstanceType), zone: aws.ToString(r.AvailabilityZone), available: left})
			}
		}
	}
	return out, nil
}

// reservedOfferings returns, by instance type, an offering of capacity type
// reserved for each reservation, its Count the instances left.
func reservedOfferings(rs []reservation) map[string][]cloud.Offering {
	out := map[string][]cloud.Offering{}
	for _, r := range rs {
		out[r.instanceType] = append(out[r.instanceType], cloud.Offering{Zone: r.zone, CapacityType: cloud.CapacityTypeReserved,
			Count: r.available, ReservationID: r.id})
	}
	return out
}

// addReserved adds to it the reserved offerings of its type in the zones
// given, priced from its on-demand offering there.
func addReserved(it *cloud.InstanceType, reserved []cloud.Offering, zones map[string]bool) {
	for _, r := range reserved {
		if !zones[r.Zone] {
			continue
		}
		r.Price = reservedPrice(it, r.Zone)
		it.Offerings = append(it.Offerings, r)
	}
}

// reservedPrice is the price of a reserved offering of it in zone: its
// on-demand price there divided by reservedPriceDivisor.
func reservedPrice(it *cloud.InstanceType, zone string) float64 {
	for _, o := range it.Offerings {
		if o.CapacityType == cloud.CapacityTypeOnDemand && o.Zone == zone {
			return o.Price / reservedPriceDivisor
		}
	}
	return 0
}

// claimAllows reports whether the claim's requirements on key allow value.
func claimAllows(claim *v1alpha1.NodeClaim, key, value string) bool {
	for _, r := range claim.Spec.Requirements {
		if r.Key != key {
			continue
		}
		sr := solver.Requirement{Key: r.Key, Operator: string(r.Operator), Values: r.Values}
		if !sr.Matches(solver.MapLabels(map[string]string{key: value})) {
			return false
		}
	}
	return true
}

// reservedLaunch keeps, of reserved candidates sorted by price, those of
// the cheapest's reservation type (one fleet launches into ODCRs or into
// capacity blocks, never both), and of each type and zone the
// reservation with the most instances left, as Karpenter's provider does
// before a reserved launch (pkg/providers/instance/filter,
// ReservedOfferingFilter).
func reservedLaunch(cands []candidate) []candidate {
	if len(cands) == 0 {
		return cands
	}
	kind := cands[0].reservationType
	best := map[string]int{} // type/zone → index of the fullest reservation
	for i, c := range cands {
		if c.reservationType != kind {
			continue
		}
		k := c.it.Name + "/" + c.offering.Zone
		if j, ok := best[k]; !ok || c.offering.Count > cands[j].offering.Count {
			best[k] = i
		}
	}
	keep := map[int]bool{}
	for _, i := range best {
		keep[i] = true
	}
	var out []candidate
	for i, c := range cands {
		if keep[i] {
			out = append(out, c)
		}
	}
	return out
}

// reservationLabels adds to labels those of a node in reservation id of
// the given type: capacity type reserved, the reservation's ID and type.
func reservationLabels(labels map[string]string, id, kind string) map[string]string {
	out := maps.Clone(labels)
	if out == nil {
		out = map[string]string{}
	}
	out[v1alpha1.LabelCapacityType] = cloud.CapacityTypeReserved
	out[LabelCapacityReservationID] = id
	out[LabelCapacityReservationType] = kind
	return out
}

// fleetTargetCapacityType is the fleet's default target capacity type for
// a launch of the capacity type: on-demand for an ODCR, capacity-block for
// a capacity block (Karpenter's CreateFleetInputBuilder).
func fleetTargetCapacityType(capacityType, reservationType string) ec2types.DefaultTargetCapacityType {
	switch {
	case capacityType != cloud.CapacityTypeReserved:
		return ec2types.DefaultTargetCapacityType(capacityType)
	case reservationType == ReservationTypeCapacityBlock:
		return ec2types.DefaultTargetCapacityTypeCapacityBlock
	}
	return ec2types.DefaultTargetCapacityTypeOnDemand
}

// reservedIn returns the capacity reservation an instance was launched
// into only (preference capacity-reservations-only, as a reserved launch
// asks), or "": an instance merely matched by an open reservation is
// on-demand, as Karpenter's provider reads instances
// (pkg/providers/instance/types.go, capacityTypeFromInstance).
func reservedIn(in *ec2types.Instance) string {
	if in.CapacityReservationId == nil || in.CapacityReservationSpecification == nil ||
		in.CapacityReservationSpecification.CapacityReservationPreference != ec2types.CapacityReservationPreferenceCapacityReservationsOnly {
		return ""
	}
	return aws.ToString(in.CapacityReservationId)
}

// reservationDrift says why an instance in a capacity reservation has
// drifted: its reservation is no longer among the active ones its class's
// terms select (Karpenter's CapacityReservationDrift,
// pkg/cloudprovider/drift.go); "" when it has not, or is in none.
func (p *Provider) reservationDrift(ctx context.Context, in *ec2types.Instance, rc *resolvedClass) (string, error) {
	id := reservedIn(in)
	if id == "" {
		return "", nil
	}
	selected, err := p.selectedReservations(ctx, rc.spec.CapacityReservationSelectorTerms)
	if err != nil {
		return "", fmt.Errorf("aws: EC2NodeClass %s's capacity reservations: %w", rc.name, err)
	}
	if slices.ContainsFunc(selected, func(r reservation) bool { return r.id == id }) {
		return "", nil
	}
	return fmt.Sprintf("its capacity reservation %s is no longer among the active ones EC2NodeClass %s selects", id, rc.name), nil
}
