package aws

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
)

// reservedPriceDivisor makes a reserved offering's price its on-demand
// price divided by ten million: paid for already, so near zero, yet still
// ordered by size, as Karpenter's provider prices them
// (aws/karpenter-provider-aws pkg/providers/instancetype/offering).
const reservedPriceDivisor = 10_000_000

// reservedOfferings returns, by instance type, an offering of capacity type
// reserved for each active capacity reservation the terms select with
// instances left, its Count those instances.
func (p *Provider) reservedOfferings(ctx context.Context, terms []v1alpha1.CapacityReservationSelectorTerm) (map[string][]cloud.Offering, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	ctx, cancel := p.call(ctx)
	defer cancel()
	seen := map[string]bool{}
	out := map[string][]cloud.Offering{}
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
				if seen[id] || left <= 0 {
					continue
				}
				seen[id] = true
				typ := aws.ToString(r.InstanceType)
				out[typ] = append(out[typ], cloud.Offering{Zone: aws.ToString(r.AvailabilityZone), CapacityType: cloud.CapacityTypeReserved,
					Count: left, ReservationID: id})
			}
		}
	}
	return out, nil
}

// addReserved adds to it the reserved offerings of its type in the zones
// given, priced from its on-demand offering there.
func addReserved(it *cloud.InstanceType, reserved []cloud.Offering, zones map[string]bool) {
	for _, r := range reserved {
		if !zones[r.Zone] {
			continue
		}
		for _, o := range it.Offerings {
			if o.CapacityType == cloud.CapacityTypeOnDemand && o.Zone == r.Zone {
				r.Price = o.Price / reservedPriceDivisor
				break
			}
		}
		it.Offerings = append(it.Offerings, r)
	}
}
