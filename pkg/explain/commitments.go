package explain

import (
	"fmt"
	"io"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
)

// ResultCommitments is the plan's bill with the input's Commitments
// (Reserved Instances, Savings Plans): what each is used for, and what
// planning with them saves against planning as if there were none.
type ResultCommitments struct {
	// BillPerHour is the plan's bill: the commitments' fees, paid whether
	// used or not, plus what they do not cover at list price.
	BillPerHour           float64 `json:"billPerHour"`
	CommitmentFeesPerHour float64 `json:"commitmentFeesPerHour"`
	UncoveredPerHour      float64 `json:"uncoveredPerHour"`
	// BlindBillPerHour is the bill of the plan made ignoring the
	// commitments, with the commitments applied to it afterwards.
	BlindBillPerHour float64 `json:"blindBillPerHour"`
	// SavingPerHour is BlindBillPerHour less BillPerHour (never negative:
	// the blind plan is kept when no commitment-aware plan beats it).
	SavingPerHour float64 `json:"savingPerHour"`
	// LowerBoundPerHour is a bill no plan can beat with these
	// commitments (plan.BillBound); 0 when there is no bound.
	LowerBoundPerHour float64 `json:"lowerBoundPerHour,omitempty"`
	// Aware is set when the plan printed is not the blind plan.
	Aware bool `json:"aware"`
	// Commitments are each commitment's use, in input order.
	Commitments []ResultCommitment `json:"commitments"`
}

// ResultCommitment is one commitment's use by the plan.
type ResultCommitment struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Used and Capacity are in Unit: "units" (a regional reservation's
	// normalised units), "instances" (a zonal one's) or "$/h" (a Savings
	// Plan's commitment at its rates).
	Used     float64 `json:"used"`
	Capacity float64 `json:"capacity"`
	Unit     string  `json:"unit"`
	// UtilizationPercent is Used / Capacity, in percent.
	UtilizationPercent float64 `json:"utilizationPercent"`
	// CoveredPerHour is the list price of the usage it covers.
	CoveredPerHour float64 `json:"coveredPerHour"`
	// SpilledPerHour is the list price of the usage it could cover but has
	// no room for: left to later commitments, else paid on-demand.
	SpilledPerHour float64 `json:"spilledPerHour"`
}

// newCommitments renders what Spend found.
func newCommitments(s *plan.Spending) *ResultCommitments {
	r := &ResultCommitments{
		BillPerHour:           round4(s.Bill.Total),
		CommitmentFeesPerHour: round4(s.Bill.Sunk),
		UncoveredPerHour:      round4(s.Bill.OnDemand),
		BlindBillPerHour:      round4(s.Blind.Total),
		SavingPerHour:         round4(max(s.Saving(), 0)),
		LowerBoundPerHour:     round4(s.Bound),
		Aware:                 s.Aware,
		Commitments:           make([]ResultCommitment, 0, len(s.Bill.Commitments)),
	}
	for _, u := range s.Bill.Commitments {
		r.Commitments = append(r.Commitments, ResultCommitment{
			Name: u.Name, Type: string(u.Type), Used: round4(u.Used), Capacity: u.Capacity, Unit: u.Unit,
			UtilizationPercent: float64(int64(u.Utilization*1000+0.5)) / 10,
			CoveredPerHour:     round4(u.Covered), SpilledPerHour: round4(u.Spilled),
		})
	}
	return r
}

// printCommitments prints each commitment's use and the bill.
func printCommitments(w io.Writer, c *ResultCommitments) error {
	if c == nil {
		return nil
	}
	fmt.Fprintf(w, "\nCommitments (their fees are paid whether used or not):\n")
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "COMMITMENT\tTYPE\tUSED\tUTILIZATION\tCOVERED $/HOUR\tSPILLED $/HOUR")
	for _, u := range c.Commitments {
		used := fmt.Sprintf("%g/%g %s", u.Used, u.Capacity, u.Unit)
		if u.Unit == "$/h" {
			used = fmt.Sprintf("$%.4f/$%g an hour", u.Used, u.Capacity)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f%%\t%.4f\t%.4f\n", u.Name, u.Type, used, u.UtilizationPercent, u.CoveredPerHour, u.SpilledPerHour)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "Bill: $%.4f/h ($%.4f commitment fees + $%.4f not covered); planned ignoring the commitments, then billed with them: $%.4f/h",
		c.BillPerHour, c.CommitmentFeesPerHour, c.UncoveredPerHour, c.BlindBillPerHour)
	if c.Aware {
		fmt.Fprintf(w, "; planning with them saves $%.4f/h ($%.2f/month).\n", c.SavingPerHour, round2(c.SavingPerHour*plan.HoursPerMonth))
	} else {
		fmt.Fprintf(w, "; no plan made with them bills less, so that plan is this one.\n")
	}
	if c.LowerBoundPerHour > 0 {
		fmt.Fprintf(w, "Lower bound of the bill with these commitments: $%.4f/h; this bill is %.3f× it.\n", c.LowerBoundPerHour, c.BillPerHour/c.LowerBoundPerHour)
	}
	return nil
}
