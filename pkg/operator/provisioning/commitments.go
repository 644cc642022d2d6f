package provisioning

import (
	"context"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/commitments"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// WithCommitments makes the provisioner spend the Commitments r reads as a
// budget (plan.Spend, the step explain takes), and offers them to the
// other planners (Commitments). It returns p.
func (p *Provisioner) WithCommitments(r *commitments.Reader) *Provisioner {
	p.commitments = r
	return p
}

// Commitments returns the Commitments to spend, none without a reader (see
// WithCommitments). A Commitment the bill cannot spend is left out and
// logged once per distinct reason; a failed list is an error.
func (p *Provisioner) Commitments(ctx context.Context) ([]plan.Commitment, error) {
	if p.commitments == nil {
		return nil, nil
	}
	cs, invalid, err := p.commitments.Read(ctx)
	if err != nil {
		return nil, err
	}
	why := ""
	if invalid != nil {
		why = invalid.Error()
	}
	p.mu.Lock()
	said := p.invalidCommitments
	p.invalidCommitments = why
	p.mu.Unlock()
	if why != "" && why != said {
		p.log.Info("Commitments left out of the plans: the bill cannot spend them", "reason", why)
	}
	return cs, nil
}

// spend plans the batch again with the commitments as a budget
// (plan.Spend), every plan within deadline and none once ctx ends (the
// operator stopping), and returns the plan with the
// lowest bill, the blind one included, and the share of each of its new
// nodes the commitments cover; blind and nil without commitments.
func (p *Provisioner) spend(ctx context.Context, b *batch, blind *solver.Plan, cs []plan.Commitment, deadline time.Time) (*solver.Plan, []float64, error) {
	if len(cs) == 0 {
		return blind, nil, nil
	}
	spent, err := plan.SpendBy(ctx, b.problem, blind, cs, deadline) // --solve-timeout or shutdown: the plans made so far
	if err != nil {
		return nil, nil, err
	}
	covered := 0
	for _, c := range spent.Covered {
		if c > 0 {
			covered++
		}
	}
	p.log.Info("commitments spent", "commitments", len(cs), "billPerHour", spent.Bill.Total, "blindBillPerHour", spent.Blind.Total,
		"aware", spent.Aware, "plans", spent.Rounds, "coveredNodes", covered, "newNodes", len(spent.Plan.NewNodes))
	return spent.Plan, spent.Covered, nil
}

// pinCovered launches each new node the commitments cover (covered, by
// node) on its planned offering alone: a flexible launch lets the cloud
// pick the cheapest offering that holds the pods, which at list price
// is seldom the one the commitment pays for.
func pinCovered(options [][]solver.LaunchOption, covered []float64) {
	for i := range covered {
		if covered[i] > 0 && i < len(options) && len(options[i]) > 1 {
			options[i] = options[i][:1]
		}
	}
}
