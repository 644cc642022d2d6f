package aws

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/savingsplans"
	sptypes "github.com/aws/aws-sdk-go-v2/service/savingsplans/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// SavingsPlansAPI is what SavingsPlans asks of the Savings Plans client
// (*savingsplans.Client).
type SavingsPlansAPI interface {
	DescribeSavingsPlans(context.Context, *savingsplans.DescribeSavingsPlansInput, ...func(*savingsplans.Options)) (*savingsplans.DescribeSavingsPlansOutput, error)
	DescribeSavingsPlanRates(context.Context, *savingsplans.DescribeSavingsPlanRatesInput, ...func(*savingsplans.Options)) (*savingsplans.DescribeSavingsPlanRatesOutput, error)
}

// SavingsPlans returns the account's active Compute and EC2 Instance
// Savings Plans as Commitment objects, each with its EC2 rates per
// instance type (Linux/UNIX, shared tenancy, in region for a Compute plan,
// which has rates in every region): the planner bills a node of a type
// with no rate as the plan not covering it. An EC2 Instance plan of
// another region is left out. It needs savingsplans:DescribeSavingsPlans
// and savingsplans:DescribeSavingsPlanRates.
func SavingsPlans(ctx context.Context, api SavingsPlansAPI, region string) ([]v1alpha1.Commitment, error) {
	var out []v1alpha1.Commitment
	var token *string
	for {
		page, err := api.DescribeSavingsPlans(ctx, &savingsplans.DescribeSavingsPlansInput{
			States: []sptypes.SavingsPlanState{sptypes.SavingsPlanStateActive}, NextToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("describing savings plans: %w", err)
		}
		for _, sp := range page.SavingsPlans {
			c, ok, err := savingsPlanCommitment(ctx, api, sp, region)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, c)
			}
		}
		if token = page.NextToken; aws.ToString(token) == "" {
			break
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.Commitment) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// savingsPlanCommitment converts one plan and reads its rates; ok is false
// for a plan the planner cannot spend (SageMaker, another region, no EC2
// rate in the region).
func savingsPlanCommitment(ctx context.Context, api SavingsPlansAPI, sp sptypes.SavingsPlan, region string) (v1alpha1.Commitment, bool, error) {
	id := aws.ToString(sp.SavingsPlanId)
	spec := &v1alpha1.SavingsPlan{Commitment: strings.TrimSpace(aws.ToString(sp.Commitment)), ID: id}
	typ := v1alpha1.CommitmentComputeSavingsPlan
	switch sp.SavingsPlanType {
	case sptypes.SavingsPlanTypeCompute:
	case sptypes.SavingsPlanTypeEc2Instance:
		typ = v1alpha1.CommitmentEC2InstanceSavingsPlan
		spec.InstanceFamily, spec.Region = aws.ToString(sp.Ec2InstanceFamily), aws.ToString(sp.Region)
		if spec.Region != region {
			return v1alpha1.Commitment{}, false, nil
		}
	default:
		return v1alpha1.Commitment{}, false, nil
	}
	seen := map[string]bool{}
	var token *string
	for {
		page, err := api.DescribeSavingsPlanRates(ctx, &savingsplans.DescribeSavingsPlanRatesInput{
			SavingsPlanId: sp.SavingsPlanId, NextToken: token,
			Filters: []sptypes.SavingsPlanRateFilter{
				{Name: sptypes.SavingsPlanRateFilterNameProductType, Values: []string{string(sptypes.SavingsPlanProductTypeEc2)}},
				{Name: sptypes.SavingsPlanRateFilterNameRegion, Values: []string{region}},
				{Name: sptypes.SavingsPlanRateFilterNameProductDescription, Values: []string{"Linux/UNIX"}},
				{Name: sptypes.SavingsPlanRateFilterNameTenancy, Values: []string{"shared"}},
			},
		})
		if err != nil {
			return v1alpha1.Commitment{}, false, fmt.Errorf("describing the rates of savings plan %s: %w", id, err)
		}
		for _, r := range page.SearchResults {
			props := map[sptypes.SavingsPlanRatePropertyKey]string{}
			for _, p := range r.Properties {
				props[p.Name] = aws.ToString(p.Value)
			}
			t := props[sptypes.SavingsPlanRatePropertyKeyInstanceType]
			if t == "" || seen[t] || r.ProductType != "" && r.ProductType != sptypes.SavingsPlanProductTypeEc2 ||
				props[sptypes.SavingsPlanRatePropertyKeyProductDescription] != "" && props[sptypes.SavingsPlanRatePropertyKeyProductDescription] != "Linux/UNIX" ||
				props[sptypes.SavingsPlanRatePropertyKeyTenancy] != "" && props[sptypes.SavingsPlanRatePropertyKeyTenancy] != "shared" {
				continue
			}
			seen[t] = true
			spec.Rates = append(spec.Rates, v1alpha1.SavingsPlanRate{InstanceType: t, PricePerHour: aws.ToString(r.Rate)})
		}
		if token = page.NextToken; aws.ToString(token) == "" {
			break
		}
	}
	if len(spec.Rates) == 0 {
		return v1alpha1.Commitment{}, false, nil // no EC2 rate in the region: it covers nothing planned here
	}
	slices.SortFunc(spec.Rates, func(a, b v1alpha1.SavingsPlanRate) int { return strings.Compare(a.InstanceType, b.InstanceType) })
	c := v1alpha1.Commitment{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Commitment"},
		ObjectMeta: metav1.ObjectMeta{Name: "sp-" + objectName(id)},
		Spec:       v1alpha1.CommitmentSpec{Type: typ, SavingsPlan: spec},
	}
	if err := c.Validate(); err != nil {
		return v1alpha1.Commitment{}, false, fmt.Errorf("savings plan %s: %w", id, err)
	}
	return c, true, nil
}
