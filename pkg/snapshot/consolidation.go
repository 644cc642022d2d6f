package snapshot

import (
	"fmt"
	"strconv"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/disruption"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// poolDisruption converts a pool's consolidation settings: v1beta1/v1
// spec.disruption, or a v1alpha5 Provisioner's spec.consolidation and
// ttlSecondsAfterEmpty. It returns the solver's policy and the budgets,
// which are evaluated against the cluster when a plan is made.
func poolDisruption(s *poolSpec) (solver.Consolidation, []disruption.Budget, error) {
	c := solver.Consolidation{Policy: solver.WhenEmptyOrUnderutilized, NodesAllowed: -1}
	if s.TTLSecondsAfterEmpty != nil {
		c.Policy, c.After = solver.WhenEmpty, time.Duration(*s.TTLSecondsAfterEmpty)*time.Second
	}
	if s.Consolidation != nil && s.Consolidation.Enabled != nil && *s.Consolidation.Enabled {
		c.Policy = solver.WhenEmptyOrUnderutilized
	}
	d := s.Disruption
	if d == nil {
		return c, nil, nil
	}
	switch d.ConsolidationPolicy {
	case "WhenEmpty":
		c.Policy = solver.WhenEmpty
	case "", "WhenEmptyOrUnderutilized", "WhenUnderutilized":
		c.Policy = solver.WhenEmptyOrUnderutilized
	case "Balanced":
		c.Policy = solver.Balanced
	}
	if d.ConsolidateAfter != "" && d.ConsolidateAfter != "Never" {
		after, err := time.ParseDuration(d.ConsolidateAfter)
		if err != nil {
			return c, nil, fmt.Errorf("spec.disruption.consolidateAfter: %w", err)
		}
		c.After = after
	}
	if d.ConsolidateAfter == "Never" {
		c.Policy = solver.WhenEmpty
		c.After = 100 * 365 * 24 * time.Hour
	}
	if m := d.MinSaving; m != nil {
		// Set, even to zero, it replaces the default minimum.
		c.MinSavingSet = m.PerHour != "" || m.Percent != nil
		if m.PerHour != "" {
			v, err := strconv.ParseFloat(m.PerHour, 64)
			if err != nil || v < 0 {
				return c, nil, fmt.Errorf("spec.disruption.minSaving.perHour %q: want dollars per hour, e.g. 0.01", m.PerHour)
			}
			c.MinSaving = v
		}
		if m.Percent != nil {
			c.MinSavingFraction = float64(*m.Percent) / 100
		}
	}
	var budgets []disruption.Budget
	for i, b := range d.Budgets {
		var schedule string
		if b.Schedule != nil {
			schedule = *b.Schedule
		}
		var dur time.Duration
		if b.Duration != "" {
			var err error
			if dur, err = time.ParseDuration(b.Duration); err != nil {
				return c, nil, fmt.Errorf("spec.disruption.budgets[%d].duration: %w", i, err)
			}
		}
		// A duration without a schedule is left out: Karpenter rejects it,
		// and a warning was given when reading.
		budget, ok, err := disruption.NewBudget(b.Nodes, schedule, dur, b.Reasons)
		if err != nil {
			return c, nil, fmt.Errorf("spec.disruption.budgets[%d]: %w", i, err)
		}
		if ok {
			budgets = append(budgets, budget)
		}
	}
	return c, budgets, nil
}

// NodesAllowed fills every pool's Consolidation.NodesAllowed from its
// budgets for the given nodes at now: the pool's node count and the nodes
// already disrupting (cordoned) count as Karpenter counts them.
func NodesAllowed(pools []solver.Pool, budgets map[string][]disruption.Budget, nodes []solver.Node, now time.Time) {
	for i := range pools {
		total, disrupting := 0, 0
		for j := range nodes {
			if nodes[j].Pool == pools[i].Name {
				total++
				if nodes[j].Unschedulable {
					disrupting++
				}
			}
		}
		allowed := disruption.Allowed(budgets[pools[i].Name], disruption.ReasonUnderutilized, total, disrupting, now)
		if allowed > total {
			allowed = total
		}
		pools[i].Consolidation.NodesAllowed = allowed
	}
}
