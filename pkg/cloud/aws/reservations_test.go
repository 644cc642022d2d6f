package aws

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws/ec2test"
)

// teamML tags the capacity reservations addTeamReservations adds.
var teamML = map[string]string{"team": "ml"}

// addTeamReservations adds six capacity reservations of one account: of
// the team's (tagged teamML), cr-aaa and cr-bbb (a capacity block) have
// instances left, cr-ccc has expired, cr-eee is used up and cr-fff is in
// us-east-1c, which the default class has no subnet in; cr-ddd is another
// account's open ODCR.
func addTeamReservations(w *world) {
	for _, r := range []ec2test.CapacityReservation{
		{ID: "cr-aaa", OwnerID: "123456789012", InstanceType: "m5.xlarge", Zone: "us-east-1a", Total: 3, Available: 2, Tags: teamML},
		{ID: "cr-bbb", OwnerID: "123456789012", InstanceType: "m5.large", Zone: "us-east-1b", Total: 1, Available: 1, Tags: teamML, Type: "capacity-block"},
		{ID: "cr-ccc", OwnerID: "123456789012", InstanceType: "m5.large", Zone: "us-east-1a", Total: 1, Available: 1, Tags: teamML, State: "expired"},
		{ID: "cr-ddd", OwnerID: "210987654321", InstanceType: "c5.large", Zone: "us-east-1a", Total: 5, Available: 5, MatchCriteria: "open"},
		{ID: "cr-eee", OwnerID: "123456789012", InstanceType: "m5.large", Zone: "us-east-1a", Total: 2, Available: 0, Tags: teamML},
		{ID: "cr-fff", OwnerID: "123456789012", InstanceType: "m5.large", Zone: "us-east-1c", Total: 2, Available: 2, Tags: teamML},
	} {
		w.srv.AddCapacityReservation(r)
	}
}

// setReservationTerms gives the default class these
// capacityReservationSelectorTerms, as a new generation.
func (w *world) setReservationTerms(terms ...v1alpha1.CapacityReservationSelectorTerm) {
	w.classMu.Lock()
	gen := w.classes["default"].Generation
	w.classMu.Unlock()
	nc := defaultClass()
	nc.Generation = gen + 1
	nc.Spec.CapacityReservationSelectorTerms = terms
	w.setClass(nc)
}

// types returns the instance types of pool "default" on the default class.
func (w *world) types(t *testing.T) []cloud.InstanceType {
	t.Helper()
	pool := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	pool.Spec.Template.Spec.NodeClassRef = v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "EC2NodeClass", Name: "default"}
	types, err := w.p.InstanceTypes(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	return types
}

// reservedOfferings lists the reserved offerings of w.types as
// type/zone/reservation/count, sorted.
func (w *world) reservedOfferings(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, it := range w.types(t) {
		for _, o := range it.Offerings {
			if o.CapacityType == cloud.CapacityTypeReserved {
				out = append(out, fmt.Sprintf("%s/%s/%s/%d", it.Name, o.Zone, o.ReservationID, o.Count))
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestTheEC2ServerDescribesCapacityReservations reads capacity
// reservations from the in-repo EC2 server through the real SDK, as a
// capacityReservationSelectorTerms term (an id, or tags) selects them in
// Karpenter's provider (aws/karpenter-provider-aws
// pkg/providers/capacityreservation): by id, by tag and state, paged, and
// an unknown id refused with EC2's error code.
func TestTheEC2ServerDescribesCapacityReservations(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	addTeamReservations(w)
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
		{name: "every one", want: []string{"cr-aaa", "cr-bbb", "cr-ccc", "cr-ddd", "cr-eee", "cr-fff"}},
		{name: "by id", in: ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-ddd", "cr-aaa"}}, want: []string{"cr-aaa", "cr-ddd"}},
		{name: "by tag, active only", in: ec2.DescribeCapacityReservationsInput{Filters: []ec2types.Filter{
			{Name: aws.String("tag:team"), Values: []string{"ml"}}, {Name: aws.String("state"), Values: []string{"active"}}}},
			want: []string{"cr-aaa", "cr-bbb", "cr-eee", "cr-fff"}},
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
	w := newWorld(t)
	addTeamReservations(w)
	w.setReservationTerms(v1alpha1.CapacityReservationSelectorTerm{Tags: teamML})
	for _, it := range w.types(t) {
		for _, o := range it.Offerings {
			if o.CapacityType != cloud.CapacityTypeReserved {
				continue
			}
			od := slices.IndexFunc(it.Offerings, func(x cloud.Offering) bool { return x.CapacityType == cloud.CapacityTypeOnDemand && x.Zone == o.Zone })
			if od < 0 || math.Abs(o.Price-it.Offerings[od].Price/reservedPriceDivisor) > 1e-15 || o.Price <= 0 {
				t.Errorf("%s %s reserved at $%v/h, want its on-demand price / %d", it.Name, o.Zone, o.Price, reservedPriceDivisor)
			}
		}
	}
	if got, want := w.reservedOfferings(t), []string{"m5.large/us-east-1b/cr-bbb/1", "m5.xlarge/us-east-1a/cr-aaa/2"}; !slices.Equal(got, want) {
		t.Errorf("reserved offerings %v, want %v", got, want)
	}

	// Without terms: none, and no call.
	w.setReservationTerms()
	before := w.srv.Calls("DescribeCapacityReservations")
	if got := w.reservedOfferings(t); len(got) > 0 {
		t.Errorf("reserved offerings %v with no capacityReservationSelectorTerms", got)
	}
	if n := w.srv.Calls("DescribeCapacityReservations") - before; n != 0 {
		t.Errorf("%d DescribeCapacityReservations calls with no terms", n)
	}
}

// TestCreateLaunchesIntoAReservationFirst: a NodeClaim allowing reserved
// and on-demand launches into the capacity reservation its class selects
// while it has room, as Karpenter's provider launches (reserved before
// spot and on-demand; pkg/providers/instance/instance.go): through a
// launch template that targets the reservation only, a fleet whose target
// capacity type is on-demand for an ODCR and capacity-block for a
// capacity block; the claim, its node's user data and Get say capacity
// type reserved with Karpenter's reservation id and type labels; each
// launch takes one of the reservation's instances and a termination gives
// it back; once it is full the next claim launches on-demand.
func TestCreateLaunchesIntoAReservationFirst(t *testing.T) {
	for _, kind := range []string{ReservationTypeDefault, ReservationTypeCapacityBlock} {
		t.Run(kind, func(t *testing.T) {
			w := newWorld(t)
			ctx := context.Background()
			w.srv.AddCapacityReservation(ec2test.CapacityReservation{ID: "cr-0123", OwnerID: "123456789012", InstanceType: "m5.large", Zone: "us-east-1a",
				Total: 2, Available: 2, Type: kind})
			w.setReservationTerms(v1alpha1.CapacityReservationSelectorTerm{ID: "cr-0123"})
			reqs := []v1alpha1.NodeSelectorRequirement{
				req(v1alpha1.LabelCapacityType, v1alpha1.NodeSelectorOpIn, "reserved", "on-demand"),
				req("node.kubernetes.io/instance-type", v1alpha1.NodeSelectorOpIn, "m5.large", "c5.large"),
			}
			var launched []*v1alpha1.NodeClaim
			for i, want := range []struct {
				capacityType string
				left         int
			}{{"reserved", 1}, {"reserved", 0}, {"on-demand", 0}} {
				got, err := w.p.Create(ctx, claim(fmt.Sprintf("r%d", i), "1", "2Gi", reqs...))
				if err != nil {
					t.Fatalf("launch %d: %v", i, err)
				}
				launched = append(launched, got)
				if got.Status.CapacityType != want.capacityType || got.Labels[v1alpha1.LabelCapacityType] != want.capacityType {
					t.Errorf("launch %d: capacity type %q, label %q, want %s", i, got.Status.CapacityType, got.Labels[v1alpha1.LabelCapacityType], want.capacityType)
				}
				if n := w.srv.CapacityReservationAvailable("cr-0123"); n != want.left {
					t.Errorf("launch %d: the reservation has %d left, want %d", i, n, want.left)
				}
				fleet := w.srv.Requests("CreateFleet")[i]
				in := w.srv.Running()[i]
				lt := w.launchTemplate(t, in.LaunchTemplateID)
				nodeLabels := userDataLabels(t, lt.Data.UserData)
				if want.capacityType == "on-demand" {
					if in.CapacityReservationID != "" || lt.Data.CapacityReservationID != "" || got.Labels[LabelCapacityReservationID] != "" ||
						nodeLabels[LabelCapacityReservationID] != "" {
						t.Errorf("launch %d on-demand, yet in a reservation: instance %q, template %q, claim label %q, node label %q", i,
							in.CapacityReservationID, lt.Data.CapacityReservationID, got.Labels[LabelCapacityReservationID], nodeLabels[LabelCapacityReservationID])
					}
					continue
				}
				wantTarget, wantMarket := "on-demand", ""
				if kind == ReservationTypeCapacityBlock {
					wantTarget, wantMarket = "capacity-block", "capacity-block"
				}
				if g := fleet["TargetCapacitySpecification.DefaultTargetCapacityType"]; len(g) != 1 || g[0] != wantTarget {
					t.Errorf("launch %d: fleet target capacity type %v, want %s", i, g, wantTarget)
				}
				if g := fleetOverrides(fleet); !slices.Equal(g, []string{"m5.large/us-east-1a"}) {
					t.Errorf("launch %d: overrides %v, want the reservation's type and zone only", i, g)
				}
				if lt.Data.CapacityReservationID != "cr-0123" || lt.Data.CapacityReservationPreference != "capacity-reservations-only" || lt.Data.MarketType != wantMarket {
					t.Errorf("launch %d: template targets %q (%q), market %q; want cr-0123 (capacity-reservations-only), %q", i,
						lt.Data.CapacityReservationID, lt.Data.CapacityReservationPreference, lt.Data.MarketType, wantMarket)
				}
				if in.CapacityReservationID != "cr-0123" || in.Type != "m5.large" || in.Zone != "us-east-1a" {
					t.Errorf("launch %d: instance %s %s in reservation %q", i, in.Type, in.Zone, in.CapacityReservationID)
				}
				view, err := w.p.Get(ctx, got.Status.ProviderID)
				if err != nil {
					t.Fatal(err)
				}
				for name, labels := range map[string]map[string]string{"claim": got.Labels, "node (user data)": nodeLabels, "Get": view.Labels} {
					if labels[v1alpha1.LabelCapacityType] != "reserved" || labels[LabelCapacityReservationID] != "cr-0123" || labels[LabelCapacityReservationType] != kind {
						t.Errorf("launch %d: the %s's labels say capacity type %q, reservation %q of type %q; want reserved, cr-0123, %s", i, name,
							labels[v1alpha1.LabelCapacityType], labels[LabelCapacityReservationID], labels[LabelCapacityReservationType], kind)
					}
				}
				if view.Status.CapacityType != "reserved" || view.Status.PricePerHour != got.Status.PricePerHour {
					t.Errorf("launch %d: Get says %s at $%s/h, Create %s at $%s/h", i, view.Status.CapacityType, view.Status.PricePerHour,
						got.Status.CapacityType, got.Status.PricePerHour)
				}
			}
			if err := w.p.Delete(ctx, launched[0]); err != nil {
				t.Fatal(err)
			}
			if n := w.srv.CapacityReservationAvailable("cr-0123"); n != 1 {
				t.Errorf("after terminating a reserved instance the reservation has %d left, want 1", n)
			}
		})
	}
}

// TestAReservationFilledElsewhereIsRefusedAndLeftOut: a reservation that
// DescribeCapacityReservations said had room is full by the time the
// fleet launches (another launch took its last instance): EC2 refuses
// with ReservationCapacityExceeded, Create returns an
// InsufficientCapacityError naming the reserved offering (so the claim's
// pods are planned again), launches nothing, and the reservation is not
// offered again, even once it has room, until the unavailable TTL has
// passed, as Karpenter's provider marks it unavailable
// (pkg/providers/instance/instance.go, updateUnavailableOfferingsCache).
func TestAReservationFilledElsewhereIsRefusedAndLeftOut(t *testing.T) {
	w := newWorld(t)
	srv := w.srv
	var stolen string
	srv.SetBeforeAction(func(action string) {
		if action == "CreateFleet" && stolen == "" {
			stolen = srv.LaunchInstance(ec2test.Instance{Type: "m5.large", Zone: "us-east-1a", CapacityReservationID: "cr-0123"}).ID
		}
	})
	ctx := context.Background()
	srv.AddCapacityReservation(ec2test.CapacityReservation{ID: "cr-0123", OwnerID: "123456789012", InstanceType: "m5.large", Zone: "us-east-1a", Total: 1, Available: 1})
	w.setReservationTerms(v1alpha1.CapacityReservationSelectorTerm{ID: "cr-0123"})
	_, err := w.p.Create(ctx, claim("r0", "1", "2Gi", req(v1alpha1.LabelCapacityType, v1alpha1.NodeSelectorOpIn, "reserved", "on-demand")))
	var ice *cloud.InsufficientCapacityError
	if !errors.As(err, &ice) || !slices.Equal(ice.Offerings, []string{"m5.large/us-east-1a/reserved"}) || !strings.Contains(err.Error(), "ReservationCapacityExceeded") {
		t.Fatalf("Create into a full reservation: %v, want an InsufficientCapacityError for m5.large/us-east-1a/reserved (ReservationCapacityExceeded)", err)
	}
	if n := len(srv.Running()); n != 1 {
		t.Errorf("%d instances running, want only the one launched elsewhere", n)
	}
	if !w.p.Unavailable().IsReservationUnavailable("cr-0123") {
		t.Error("the full reservation is not marked unavailable")
	}
	srv.Terminate(stolen)
	if n := srv.CapacityReservationAvailable("cr-0123"); n != 1 {
		t.Fatalf("the reservation has %d left after the other instance ended, want 1", n)
	}
	if got := w.reservedOfferings(t); len(got) > 0 {
		t.Errorf("reserved offerings %v within the unavailable TTL, want none", got)
	}
	w.clock.Step(DefaultUnavailableFor + time.Second)
	if got, want := w.reservedOfferings(t), []string{"m5.large/us-east-1a/cr-0123/1"}; !slices.Equal(got, want) {
		t.Errorf("reserved offerings %v after the TTL, want %v", got, want)
	}
}

// launchTemplate returns the server's launch template of id.
func (w *world) launchTemplate(t *testing.T, id string) ec2test.LaunchTemplate {
	t.Helper()
	for _, lt := range w.srv.LaunchTemplates() {
		if lt.ID == id {
			return lt
		}
	}
	t.Fatalf("no launch template %s", id)
	return ec2test.LaunchTemplate{}
}

var nodeLabelsFlag = regexp.MustCompile(`--node-labels=([^\s"']*)`)

// userDataLabels returns the --node-labels of base64 user data, what the
// node's kubelet registers it with.
func userDataLabels(t *testing.T, b64 string) map[string]string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("user data: %v", err)
	}
	m := nodeLabelsFlag.FindStringSubmatch(string(raw))
	if m == nil {
		t.Fatalf("user data has no --node-labels:\n%s", raw)
	}
	out := map[string]string{}
	for kv := range strings.SplitSeq(m[1], ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// TestAnInstanceWhoseReservationIsNoLongerSelectedHasDrifted: a node
// launched into a capacity reservation drifts once its EC2NodeClass's
// terms no longer select that reservation (other terms, or none), as
// Karpenter's CapacityReservationDrift (pkg/cloudprovider/drift.go), but
// not while they do, even with the reservation used up; an on-demand node
// of the same class never drifts for it.
func TestAnInstanceWhoseReservationIsNoLongerSelectedHasDrifted(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	for _, r := range []ec2test.CapacityReservation{
		{ID: "cr-0123", OwnerID: "123456789012", InstanceType: "m5.large", Zone: "us-east-1a", Total: 1, Available: 1},
		{ID: "cr-0456", OwnerID: "123456789012", InstanceType: "m5.large", Zone: "us-east-1b", Total: 1, Available: 0},
	} {
		w.srv.AddCapacityReservation(r)
	}
	w.setReservationTerms(v1alpha1.CapacityReservationSelectorTerm{ID: "cr-0123"})
	allows := req(v1alpha1.LabelCapacityType, v1alpha1.NodeSelectorOpIn, "reserved", "on-demand")
	var launched []*v1alpha1.NodeClaim
	for i, want := range []string{"reserved", "on-demand"} { // the second finds the reservation used up
		c, err := w.p.Create(ctx, claim(fmt.Sprintf("d%d", i), "1", "2Gi", allows))
		if err != nil || c.Status.CapacityType != want {
			t.Fatalf("launch %d: %v, %v; want %s", i, c, err, want)
		}
		launched = append(launched, c)
	}
	for _, tc := range []struct {
		name  string
		terms []v1alpha1.CapacityReservationSelectorTerm
		want  string // in the reserved node's reason; "" for none
	}{
		{name: "still selected, used up", terms: []v1alpha1.CapacityReservationSelectorTerm{{ID: "cr-0123"}}},
		{name: "another reservation selected", terms: []v1alpha1.CapacityReservationSelectorTerm{{ID: "cr-0456"}},
			want: "its capacity reservation cr-0123 is no longer among the active ones EC2NodeClass default selects"},
		{name: "no terms", want: "its capacity reservation cr-0123 is no longer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.setReservationTerms(tc.terms...)
			for i, c := range launched {
				got, err := w.p.IsDrifted(ctx, c)
				if err != nil {
					t.Fatal(err)
				}
				want := tc.want
				if i > 0 {
					want = "" // the on-demand node
				}
				if (want == "") != (got == "") || !strings.Contains(got, want) {
					t.Errorf("%s node: drift %q, want %q", c.Status.CapacityType, got, want)
				}
			}
		})
	}
}
