package aws

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// ReservedInstances returns the account's active EC2 Reserved Instances in
// the provider's region as Commitment objects, for the planner to spend
// (see pkg/plan's Spend): one per purchase, named ri-<reservedInstancesId>,
// regional ones size-flexible, each instance's hourly price its upfront
// fee over the term plus its usage and hourly recurring charges. Only
// Linux/UNIX reservations of default tenancy are returned: the nodes this
// provider launches are those, and no other reservation covers them.
// It needs ec2:DescribeReservedInstances.
func (p *Provider) ReservedInstances(ctx context.Context) ([]v1alpha1.Commitment, error) {
	ctx, cancel := p.call(ctx)
	defer cancel()
	out, err := p.ec2.DescribeReservedInstances(ctx, &ec2.DescribeReservedInstancesInput{
		Filters: []ec2types.Filter{{Name: aws.String("state"), Values: []string{string(ec2types.ReservedInstanceStateActive)}}},
	})
	if err != nil {
		return nil, fmt.Errorf("describing reserved instances: %w", err)
	}
	return reservedCommitments(out.ReservedInstances, p.region), nil
}

// reservedCommitments converts what DescribeReservedInstances returned.
func reservedCommitments(ris []ec2types.ReservedInstances, region string) []v1alpha1.Commitment {
	var out []v1alpha1.Commitment
	for _, r := range ris {
		id := aws.ToString(r.ReservedInstancesId)
		if r.State != ec2types.ReservedInstanceStateActive || !strings.HasPrefix(string(r.ProductDescription), "Linux/UNIX") ||
			r.InstanceTenancy != "" && r.InstanceTenancy != ec2types.TenancyDefault || aws.ToInt32(r.InstanceCount) < 1 {
			continue
		}
		hourly := float64(aws.ToFloat32(r.UsagePrice))
		if d := aws.ToInt64(r.Duration); d > 0 {
			hourly += float64(aws.ToFloat32(r.FixedPrice)) / (float64(d) / 3600)
		}
		for _, c := range r.RecurringCharges {
			if c.Frequency == ec2types.RecurringChargeFrequencyHourly {
				hourly += aws.ToFloat64(c.Amount)
			}
		}
		spec := &v1alpha1.ReservedInstances{
			InstanceType:  string(r.InstanceType),
			InstanceCount: aws.ToInt32(r.InstanceCount),
			OfferingClass: map[ec2types.OfferingClassType]string{ec2types.OfferingClassTypeStandard: "Standard", ec2types.OfferingClassTypeConvertible: "Convertible"}[r.OfferingClass],
			PricePerHour:  strconv.FormatFloat(hourly, 'f', 6, 64),
			ID:            id,
		}
		if r.Scope == ec2types.ScopeAvailabilityZone {
			spec.AvailabilityZone = aws.ToString(r.AvailabilityZone)
		} else {
			spec.Region = region
		}
		out = append(out, v1alpha1.Commitment{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Commitment"},
			ObjectMeta: metav1.ObjectMeta{Name: "ri-" + objectName(id)},
			Spec:       v1alpha1.CommitmentSpec{Type: v1alpha1.CommitmentReservedInstances, ReservedInstances: spec},
		})
	}
	slices.SortFunc(out, func(a, b v1alpha1.Commitment) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// notName are the characters an object name may not have.
var notName = regexp.MustCompile(`[^a-z0-9-]+`)

// objectName makes an identifier a lower-case DNS label's characters.
func objectName(id string) string {
	return strings.Trim(notName.ReplaceAllString(strings.ToLower(id), "-"), "-")
}
