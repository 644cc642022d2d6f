package provisioning

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/state"
)

// offeringsByPool is a cloud that offers m5.large to each pool with the
// offerings given for it (as node classes with other subnets or with
// capacity reservations offer the same type otherwise).
type offeringsByPool struct {
	cloud.CloudProvider
	offerings map[string][]cloud.Offering
}

func (c offeringsByPool) InstanceTypes(_ context.Context, np *v1alpha1.NodePool) ([]cloud.InstanceType, error) {
	return []cloud.InstanceType{{Name: "m5.large", CPU: 2000, Memory: 8 << 30, Architecture: "amd64", MaxENIs: 3, IPv4PerENI: 10,
		Offerings: c.offerings[np.Name]}}, nil
}

// TestEachPoolPlansWithItsNodeClassOfferings: two pools whose node
// classes offer the same instance type otherwise (one in another zone and
// with a capacity reservation) each plan with their own offerings of it,
// whatever the order of the pools; before, the first pool's offerings
// stood for every pool's, and the reservation was never planned.
func TestEachPoolPlansWithItsNodeClassOfferings(t *testing.T) {
	od := cloud.Offering{Zone: "us-east-1a", CapacityType: cloud.CapacityTypeOnDemand, Price: 0.096}
	odB := cloud.Offering{Zone: "us-east-1b", CapacityType: cloud.CapacityTypeOnDemand, Price: 0.096}
	reserved := cloud.Offering{Zone: "us-east-1b", CapacityType: cloud.CapacityTypeReserved, Price: 0.096 / 1e7, Count: 3, ReservationID: "cr-1"}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ first, second string }{{"a", "b"}, {"b", "a"}} {
		t.Run(tc.first+" plain, "+tc.second+" with a reservation in another zone", func(t *testing.T) {
			offerings := map[string][]cloud.Offering{tc.first: {od}, tc.second: {odB, reserved}}
			var pools []*v1alpha1.NodePool
			for _, name := range []string{"a", "b"} {
				np := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
				np.Spec.Template.Spec.NodeClassRef = v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "EC2NodeClass", Name: name}
				pools = append(pools, np)
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(pools[0], pools[1]).Build()
			p := New(c, offeringsByPool{offerings: offerings}, nil, logr.Discard(), state.NewUnavailable(0), Options{Region: "us-east-1"})
			b, err := p.snapshot(context.Background(), false)
			if err != nil {
				t.Fatal(err)
			}
			for pool, want := range offerings {
				it := b.typesOf(pool)["m5.large"]
				if it == nil {
					t.Fatalf("pool %s has no m5.large", pool)
				}
				var got, wanted []string
				for _, o := range it.Offerings {
					got = append(got, fmt.Sprintf("%s/%s/%d", o.Zone, o.CapacityType, o.Count))
				}
				for _, o := range want {
					wanted = append(wanted, fmt.Sprintf("%s/%s/%d", o.Zone, o.CapacityType, o.Count))
				}
				if !slices.Equal(got, wanted) {
					t.Errorf("pool %s plans m5.large on %v, want its node class's %v", pool, got, wanted)
				}
			}
		})
	}
}
