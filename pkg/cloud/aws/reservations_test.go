package aws

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws/ec2test"
)

// TestTheEC2ServerDescribesCapacityReservations reads capacity
// reservations from the in-repo EC2 server through the real SDK, as a
// capacityReservationSelectorTerms term (an id, or tags) selects them in
// Karpenter's provider (aws/karpenter-provider-aws
// pkg/providers/capacityreservation): by id, by tag and state, paged, and
// an unknown id refused with EC2's error code.
func TestTheEC2ServerDescribesCapacityReservations(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	team := map[string]string{"team": "ml"}
	for _, r := range []ec2test.CapacityReservation{
		{ID: "cr-aaa", OwnerID: "123456789012", InstanceType: "m5.xlarge", Zone: "us-east-1a", Total: 3, Available: 2, Tags: team},
		{ID: "cr-bbb", OwnerID: "123456789012", InstanceType: "m5.large", Zone: "us-east-1b", Total: 1, Available: 1, Tags: team, Type: "capacity-block"},
		{ID: "cr-ccc", OwnerID: "123456789012", InstanceType: "m5.large", Zone: "us-east-1a", Total: 1, Available: 0, Tags: team, State: "expired"},
		{ID: "cr-ddd", OwnerID: "210987654321", InstanceType: "c5.large", Zone: "us-east-1a", Total: 5, Available: 5, MatchCriteria: "open"},
	} {
		w.srv.AddCapacityReservation(r)
	}
	describe := func(in *ec2.DescribeCapacityReservationsInput) ([]ec2types.CapacityReservation, error) {
		var out []ec2types.CapacityReservation
		pages := ec2.NewDescribeCapacityReservationsPaginator(w.p.ec2, in, func(o *ec2.DescribeCapacityReservationsPaginatorOptions) { o.Limit = 1 })
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			out = append(out, page.CapacityReservations...)
		}
		return out, nil
	}
	ids := func(rs []ec2types.CapacityReservation) []string {
		var out []string
		for _, r := range rs {
			out = append(out, aws.ToString(r.CapacityReservationId))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   ec2.DescribeCapacityReservationsInput
		want []string
	}{
		{name: "every one", want: []string{"cr-aaa", "cr-bbb", "cr-ccc", "cr-ddd"}},
		{name: "by id", in: ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-ddd", "cr-aaa"}}, want: []string{"cr-aaa", "cr-ddd"}},
		{name: "by tag, active only", in: ec2.DescribeCapacityReservationsInput{Filters: []ec2types.Filter{
			{Name: aws.String("tag:team"), Values: []string{"ml"}}, {Name: aws.String("state"), Values: []string{"active"}}}},
			want: []string{"cr-aaa", "cr-bbb"}},
		{name: "by owner and match criteria", in: ec2.DescribeCapacityReservationsInput{Filters: []ec2types.Filter{
			{Name: aws.String("owner-id"), Values: []string{"210987654321"}}, {Name: aws.String("instance-match-criteria"), Values: []string{"open"}}}},
			want: []string{"cr-ddd"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := describe(&tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if g := ids(got); !slices.Equal(g, tc.want) {
				t.Errorf("reservations %v, want %v", g, tc.want)
			}
		})
	}
	got, err := describe(&ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-aaa", "cr-bbb"}})
	if err != nil {
		t.Fatal(err)
	}
	a, b := got[0], got[1]
	if a.InstanceType == nil || *a.InstanceType != "m5.xlarge" || aws.ToString(a.AvailabilityZone) != "us-east-1a" || aws.ToInt32(a.AvailableInstanceCount) != 2 ||
		aws.ToInt32(a.TotalInstanceCount) != 3 || a.State != ec2types.CapacityReservationStateActive || a.InstanceMatchCriteria != ec2types.InstanceMatchCriteriaTargeted ||
		a.ReservationType != ec2types.CapacityReservationTypeDefault || len(a.Tags) != 1 {
		t.Errorf("cr-aaa read as %+v", a)
	}
	if b.ReservationType != ec2types.CapacityReservationTypeCapacityBlock {
		t.Errorf("cr-bbb's type = %q, want capacity-block", b.ReservationType)
	}
	_, err = describe(&ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-nope"}})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidCapacityReservationId.NotFound" {
		t.Errorf("unknown id: %v, want InvalidCapacityReservationId.NotFound", err)
	}
}
