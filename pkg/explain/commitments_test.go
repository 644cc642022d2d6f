package explain

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
)

// commitmentInput is issue 32's must-show input: TestLiveEqualsPlan's
// 2,000 pods with a $5/h Compute Savings Plan and 20 normalised units of
// m6i Reserved Instances.
var commitmentInput = snapshot.Input{Filenames: []string{"testdata/commitments/live-2000.yaml", "testdata/commitments/commitments.yaml"}}

// TestCommitmentsBillBelowTheBlindPlan is issue 32's must-show, offline:
// the plan made with the commitments bills less than the plan made
// without them and billed with them afterwards, within 2 % of the bill's
// lower bound, and every commitment's utilisation is printed.
func TestCommitmentsBillBelowTheBlindPlan(t *testing.T) {
	out, _, err := run(t, Options{Input: commitmentInput, Output: "json"})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		TotalPricePerHour float64            `json:"totalPricePerHour"`
		Commitments       *ResultCommitments `json:"commitments"`
		Nodes             []struct {
			InstanceType, CapacityType string
			PricePerHour               float64
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	c := got.Commitments
	if c == nil || len(c.Commitments) != 2 {
		t.Fatalf("commitments = %+v, want the two of the input", c)
	}
	t.Logf("bill $%.4f/h (fees $%.4f), blind plan's bill $%.4f/h, bound $%.4f/h (%.4f×); list $%.4f/h",
		c.BillPerHour, c.CommitmentFeesPerHour, c.BlindBillPerHour, c.LowerBoundPerHour, c.BillPerHour/c.LowerBoundPerHour, got.TotalPricePerHour)
	for _, u := range c.Commitments {
		t.Logf("%s: %g/%g %s (%.1f%%), covered $%.4f/h, spilled $%.4f/h", u.Name, u.Used, u.Capacity, u.Unit, u.UtilizationPercent, u.CoveredPerHour, u.SpilledPerHour)
	}
	if !c.Aware || c.BillPerHour >= c.BlindBillPerHour || c.SavingPerHour <= 0 {
		t.Errorf("bill $%.4f/h, blind $%.4f/h: want a commitment-aware plan that bills less", c.BillPerHour, c.BlindBillPerHour)
	}
	if c.LowerBoundPerHour <= 0 || c.BillPerHour > 1.02*c.LowerBoundPerHour {
		t.Errorf("bill $%.4f/h is not within 2 %% of its bound $%.4f/h", c.BillPerHour, c.LowerBoundPerHour)
	}
	if c.CommitmentFeesPerHour != 5.3 { // $5 plan + 5 × $0.06 reserved instances
		t.Errorf("fees $%.4f/h, want $5.30", c.CommitmentFeesPerHour)
	}
	for _, u := range c.Commitments {
		if u.UtilizationPercent < 99 {
			t.Errorf("%s is %.1f%% used, want all of it", u.Name, u.UtilizationPercent)
		}
	}
	sum := 0.0
	for _, n := range got.Nodes {
		sum += n.PricePerHour
	}
	if d := sum - got.TotalPricePerHour; d > 0.01 || d < -0.01 || got.TotalPricePerHour < c.UncoveredPerHour {
		t.Errorf("nodes sum to $%.4f/h, total $%.4f/h, uncovered $%.4f/h: nodes must carry list prices", sum, got.TotalPricePerHour, c.UncoveredPerHour)
	}
}

func TestCommitmentsTable(t *testing.T) {
	out, _, err := run(t, Options{Input: commitmentInput})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"COMMITMENT     TYPE                 USED",
		"compute-5      ComputeSavingsPlan   $5.0000/$5 an hour   100.0%",
		"m6i-20-units   ReservedInstances    20/20 units          100.0%",
		"planned ignoring the commitments, then billed with them: $",
		"Lower bound of the bill with these commitments: $",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestNoCommitmentsNoSection: an input without Commitments prints what it
// printed before.
func TestNoCommitmentsNoSection(t *testing.T) {
	out, _, err := run(t, Options{Input: snapshot.Input{Filenames: []string{"testdata/commitments/live-2000.yaml"}}, Output: "json"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, `"commitments"`) {
		t.Errorf("a plan without commitments has a commitments section")
	}
}
