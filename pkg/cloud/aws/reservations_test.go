package aws

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
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

// TestReservationsSelectedByTheNodeClassAreReservedOfferings: the
// EC2NodeClass's capacityReservationSelectorTerms select reservations
// through the real SDK; each active one with instances left, in a zone of
// the class's subnets, becomes an offering of capacity type reserved of
// its instance type, counted (Count: its available instances) and priced
// near zero (its on-demand price / 10,000,000), as Karpenter's provider
// offers them; expired, used-up, unselected and out-of-zone ones do not.
func TestReservationsSelectedByTheNodeClassAreReservedOfferings(t *testing.T) {
	w := newWorld(t, func(o *Options) { o.OfferCapacityReservations = true })
	ctx := context.Background()
	team := map[string]string{"team": "ml"}
	for _, r := range []ec2test.CapacityReservation{
		{ID: "cr-aaa", OwnerID: "123456789012", InstanceType: "m5.xlarge", Zone: "us-east-1a", Total: 3, Available: 2, Tags: team},
		{ID: "cr-bbb", OwnerID: "123456789012", InstanceType: "m5.large", Zone: "us-east-1b", Total: 1, Available: 1, Tags: team, Type: "capacity-block"},
		{ID: "cr-ccc", OwnerID: "123456789012", InstanceType: "m5.large", Zone: "us-east-1a", Total: 1, Available: 1, Tags: team, State: "expired"},
		{ID: "cr-ddd", OwnerID: "123456789012", InstanceType: "c5.large", Zone: "us-east-1a", Total: 5, Available: 5},
		{ID: "cr-eee", OwnerID: "123456789012", InstanceType: "m5.large", Zone: "us-east-1a", Total: 2, Available: 0, Tags: team},
		{ID: "cr-fff", OwnerID: "123456789012", InstanceType: "m5.large", Zone: "us-east-1c", Total: 2, Available: 2, Tags: team},
	} {
		w.srv.AddCapacityReservation(r)
	}
	nc := defaultClass()
	nc.Generation = 2
	nc.Spec.CapacityReservationSelectorTerms = []v1alpha1.CapacityReservationSelectorTerm{{Tags: team}}
	w.setClass(nc)
	pool := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	pool.Spec.Template.Spec.NodeClassRef = v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "EC2NodeClass", Name: "default"}
	types, err := w.p.InstanceTypes(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range types {
		for _, o := range it.Offerings {
			if o.CapacityType != cloud.CapacityTypeReserved {
				continue
			}
			got = append(got, fmt.Sprintf("%s/%s/%s/%d", it.Name, o.Zone, o.ReservationID, o.Count))
			od := slices.IndexFunc(it.Offerings, func(x cloud.Offering) bool { return x.CapacityType == cloud.CapacityTypeOnDemand && x.Zone == o.Zone })
			if od < 0 || math.Abs(o.Price-it.Offerings[od].Price/reservedPriceDivisor) > 1e-15 || o.Price <= 0 {
				t.Errorf("%s %s reserved at $%v/h, want its on-demand price / %d", it.Name, o.Zone, o.Price, reservedPriceDivisor)
			}
		}
	}
	slices.Sort(got)
	if want := []string{"m5.large/us-east-1b/cr-bbb/1", "m5.xlarge/us-east-1a/cr-aaa/2"}; !slices.Equal(got, want) {
		t.Errorf("reserved offerings %v, want %v", got, want)
	}

	// Without terms: none, and no call.
	nc = defaultClass()
	nc.Generation = 3 // a new spec: resolved again
	w.setClass(nc)
	before := w.srv.Calls("DescribeCapacityReservations")
	types, err = w.p.InstanceTypes(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range types {
		if slices.ContainsFunc(it.Offerings, func(o cloud.Offering) bool { return o.CapacityType == cloud.CapacityTypeReserved }) {
			t.Errorf("%s has a reserved offering with no capacityReservationSelectorTerms", it.Name)
		}
	}
	if n := w.srv.Calls("DescribeCapacityReservations") - before; n != 0 {
		t.Errorf("%d DescribeCapacityReservations calls with no terms", n)
	}
}
