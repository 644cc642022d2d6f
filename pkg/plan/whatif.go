package plan

import (
	"slices"
	"strings"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// WhatIf are overrides of the pools' requirements and the catalog region
// (the TUI's toggles); the zero value changes nothing.
type WhatIf struct {
	// Spot, when set, replaces every pool's capacity-type requirement:
	// true allows spot and on-demand, false on-demand only.
	Spot *bool
	// Families, when set, replaces every pool's instance-family requirement.
	Families []string
	// Region, when set, replaces the catalog region. Build does not load
	// catalogs: callers pass the instance types of this region.
	Region string
}

// Active reports whether any override is set.
func (w WhatIf) Active() bool { return w.Spot != nil || len(w.Families) > 0 || w.Region != "" }

// String describes the overrides, e.g. "spot on, families m7i,c7i".
func (w WhatIf) String() string {
	var parts []string
	if w.Spot != nil {
		if *w.Spot {
			parts = append(parts, "spot on")
		} else {
			parts = append(parts, "spot off")
		}
	}
	if len(w.Families) > 0 {
		parts = append(parts, "families "+strings.Join(w.Families, ","))
	}
	if w.Region != "" {
		parts = append(parts, "region "+w.Region)
	}
	return strings.Join(parts, ", ")
}

// apply replaces the pools' capacity-type and family requirements.
func (w WhatIf) apply(p *solver.Problem) {
	if w.Spot == nil && len(w.Families) == 0 {
		return
	}
	pools := make([]solver.Pool, len(p.Pools))
	for i, pool := range p.Pools {
		var reqs []solver.Requirement
		for _, r := range pool.Requirements {
			if w.Spot != nil && r.Key == solver.LabelCapacityType || len(w.Families) > 0 && r.Key == cloud.LabelInstanceFamily {
				continue
			}
			reqs = append(reqs, r)
		}
		if w.Spot != nil {
			cts := []string{cloud.CapacityTypeOnDemand}
			if *w.Spot {
				cts = []string{cloud.CapacityTypeSpot, cloud.CapacityTypeOnDemand}
			}
			reqs = append(reqs, solver.Requirement{Key: solver.LabelCapacityType, Operator: solver.OpIn, Values: cts})
		}
		if len(w.Families) > 0 {
			reqs = append(reqs, solver.Requirement{Key: cloud.LabelInstanceFamily, Operator: solver.OpIn, Values: slices.Clone(w.Families)})
		}
		pool.Requirements = reqs
		pools[i] = pool
	}
	p.Pools = pools
}
