package aws

import (
	"context"
	"testing"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws/ec2test"
)

// TestReservedInstancesImport reads Reserved Instances through the real
// SDK client from the test server: active Linux ones become Commitments
// (regional in the provider's region, zonal in their zone) priced an hour
// per instance with the upfront fee spread over the term; retired ones
// are left out.
func TestReservedInstancesImport(t *testing.T) {
	w := newWorld(t)
	for _, r := range []ec2test.ReservedInstances{
		{ID: "4b2293b4-5813-4cc8-9ce3-1957fc1dcfc8", InstanceType: "m6i.large", Count: 5, Hourly: 0.06},
		{ID: "1ba8e2e3-aabb-4c3f-a9a1-0123456789ab", InstanceType: "c6i.xlarge", Zone: "us-east-1b", Count: 2,
			OfferingClass: "convertible", OfferingType: "All Upfront", FixedPrice: 876, Duration: 365 * 24 * time.Hour},
		{ID: "retired-1", InstanceType: "m5.large", Count: 3, State: "retired"},
	} {
		w.srv.AddReservedInstances(r)
	}
	got, err := w.p.ReservedInstances(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d commitments, want the 2 active ones: %+v", len(got), got)
	}
	zonal, regional := got[0], got[1] // by name
	if regional.Name != "ri-4b2293b4-5813-4cc8-9ce3-1957fc1dcfc8" || zonal.Name != "ri-1ba8e2e3-aabb-4c3f-a9a1-0123456789ab" {
		t.Fatalf("names %q, %q", regional.Name, zonal.Name)
	}
	r := regional.Spec.ReservedInstances
	if r.InstanceType != "m6i.large" || r.InstanceCount != 5 || r.Region != "us-east-1" || r.AvailabilityZone != "" ||
		r.OfferingClass != "Standard" || r.PricePerHour != "0.060000" {
		t.Errorf("regional reservation = %+v", r)
	}
	z := zonal.Spec.ReservedInstances
	if z.AvailabilityZone != "us-east-1b" || z.Region != "" || z.OfferingClass != "Convertible" || z.PricePerHour != "0.100000" { // $876 over 8,760 h
		t.Errorf("zonal reservation = %+v", z)
	}
	for _, c := range got {
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
		if c.Kind != "Commitment" || c.APIVersion != v1alpha1.SchemeGroupVersion.String() {
			t.Errorf("%s: kind %q apiVersion %q", c.Name, c.Kind, c.APIVersion)
		}
	}
}
