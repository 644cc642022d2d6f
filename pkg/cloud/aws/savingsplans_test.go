package aws

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/savingsplans"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws/sptest"
)

// TestSavingsPlansImport reads Savings Plans and their rates through the
// real SDK client from sptest: active Compute and EC2 Instance plans of the
// region become Commitments with every rate (over pages); a retired plan,
// and an EC2 Instance plan of another region, are left out.
func TestSavingsPlansImport(t *testing.T) {
	srv := sptest.New()
	srv.PageSize = 2
	srv.AddPlan(sptest.Plan{ID: "3bd0a4a5-compute", Type: "Compute", Commitment: "5.0",
		Rates: map[string]string{"m6i.large": "0.0691", "c6i.large": "0.0612", "r6i.large": "0.0907"}})
	srv.AddPlan(sptest.Plan{ID: "ec2-m6i", Type: "EC2Instance", Family: "m6i", Region: "us-east-1", Commitment: "1.5",
		Rates: map[string]string{"m6i.large": "0.0600"}})
	srv.AddPlan(sptest.Plan{ID: "ec2-elsewhere", Type: "EC2Instance", Family: "m6i", Region: "eu-west-1", Commitment: "2", Rates: map[string]string{"m6i.large": "0.06"}})
	srv.AddPlan(sptest.Plan{ID: "retired", Type: "Compute", Commitment: "9", State: "retired", Rates: map[string]string{"m6i.large": "0.06"}})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	client := savingsplans.New(savingsplans.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(hs.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
	})
	got, err := SavingsPlans(context.Background(), client, "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d commitments, want 2: %+v", len(got), got)
	}
	compute, ec2 := got[0], got[1]
	if compute.Name != "sp-3bd0a4a5-compute" || compute.Spec.Type != v1alpha1.CommitmentComputeSavingsPlan {
		t.Errorf("compute plan = %s %s", compute.Name, compute.Spec.Type)
	}
	if sp := compute.Spec.SavingsPlan; sp.Commitment != "5.0" || len(sp.Rates) != 3 || sp.Rates[1].InstanceType != "m6i.large" || sp.Rates[1].PricePerHour != "0.0691" {
		t.Errorf("compute plan spec = %+v", sp)
	}
	if sp := ec2.Spec.SavingsPlan; ec2.Spec.Type != v1alpha1.CommitmentEC2InstanceSavingsPlan || sp.InstanceFamily != "m6i" || sp.Region != "us-east-1" || len(sp.Rates) != 1 {
		t.Errorf("EC2 Instance plan = %s %+v", ec2.Spec.Type, sp)
	}
	if n := srv.Calls("DescribeSavingsPlanRates"); n != 3 { // the compute plan's 3 rates over 2 pages, the EC2 Instance plan's 1
		t.Errorf("%d DescribeSavingsPlanRates calls, want 3", n)
	}
}
