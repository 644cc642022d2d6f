package snapshot

import (
	"fmt"
	"strconv"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// poolDisruption converts a pool's consolidation settings: v1beta1/v1
// spec.disruption, or a v1alpha5 Provisioner's spec.consolidation and
// ttlSecondsAfterEmpty, into the solver's policy. The budgets are kept as
// written (Manifests.Budgets): pkg/disruption reads and counts them when
// consolidation is planned.
func poolDisruption(s *poolSpec) (solver.Consolidation, error) {
	c := solver.Consolidation{Policy: solver.WhenEmptyOrUnderutilized, NodesAllowed: -1}
	if s.TTLSecondsAfterEmpty != nil {
		c.Policy, c.After = solver.WhenEmpty, time.Duration(*s.TTLSecondsAfterEmpty)*time.Second
	}
	if s.Consolidation != nil && s.Consolidation.Enabled != nil && *s.Consolidation.Enabled {
		c.Policy = solver.WhenEmptyOrUnderutilized
	}
	d := s.Disruption
	if d == nil {
		return c, nil
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
			return c, fmt.Errorf("spec.disruption.consolidateAfter: %w", err)
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
				return c, fmt.Errorf("spec.disruption.minSaving.perHour %q: want dollars per hour, e.g. 0.01", m.PerHour)
			}
			c.MinSaving = v
		}
		if m.Percent != nil {
			c.MinSavingFraction = float64(*m.Percent) / 100
		}
	}
	return c, nil
}
