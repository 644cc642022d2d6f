package aws

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/savingsplans"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// ReservedInstancesAPI is what ReservedInstances asks of the EC2 client
// (*ec2.Client).
type ReservedInstancesAPI interface {
	DescribeReservedInstances(context.Context, *ec2.DescribeReservedInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeReservedInstancesOutput, error)
}

// ReservedInstances returns the account's active EC2 Reserved Instances
// as Commitment objects, for the planner to spend (see pkg/plan's Spend):
// one per purchase, named ri-<reservedInstancesId>, regional ones (in
// region) size-flexible, each instance's hourly price its upfront fee over
// the term plus its usage and hourly recurring charges. Only Linux/UNIX
// reservations of default tenancy are returned: the nodes this provider
// launches are those, and no other reservation covers them. It needs
// ec2:DescribeReservedInstances.
func ReservedInstances(ctx context.Context, api ReservedInstancesAPI, region string) ([]v1alpha1.Commitment, error) {
	out, err := api.DescribeReservedInstances(ctx, &ec2.DescribeReservedInstancesInput{
		Filters: []ec2types.Filter{{Name: aws.String("state"), Values: []string{string(ec2types.ReservedInstanceStateActive)}}},
	})
	if err != nil {
		return nil, fmt.Errorf("describing reserved instances: %w", err)
	}
	return reservedCommitments(out.ReservedInstances, region), nil
}

// ReservedInstances is the package's ReservedInstances in the provider's
// region, within its request timeout.
func (p *Provider) ReservedInstances(ctx context.Context) ([]v1alpha1.Commitment, error) {
	ctx, cancel := p.call(ctx)
	defer cancel()
	return ReservedInstances(ctx, p.ec2, p.region)
}

// ImportCommitments returns what the account of cfg bought in cfg's
// region: its Reserved Instances, then its Savings Plans, as Commitment
// objects (ReservedInstances, SavingsPlans).
func ImportCommitments(ctx context.Context, cfg aws.Config) ([]v1alpha1.Commitment, error) {
	if cfg.Region == "" {
		return nil, errors.New("no region: set --region, AWS_REGION or a region in the shared config")
	}
	ris, err := ReservedInstances(ctx, ec2.NewFromConfig(cfg), cfg.Region)
	if err != nil {
		return nil, err
	}
	sps, err := SavingsPlans(ctx, savingsplans.NewFromConfig(cfg), cfg.Region)
	if err != nil {
		return nil, err
	}
	return append(ris, sps...), nil
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
