package solver

import "slices"

// Monotone in choice: a wider pool (more architectures or capacity types)
// offers every kind a narrower one does, yet the greedy, launching one node
// at a time by price per value, can end dearer with more kinds to choose
// from (openb's 1,088 CPU pods: $825.11/h on amd64, $873.28/h on amd64 and
// arm64). So Solve also plans the problem narrowed to each architecture and
// each capacity type its pods' kinds span, when they span more than one,
// and keeps a narrowed plan when it is cheaper and leaves the same pods
// pending: widening a pool by architectures or by capacity types never
// yields a dearer plan, at worst the narrower plan is kept. This holds for
// problems without topology constraints (see facetsOf), where a narrowed
// plan is a plan of the wider problem too. The narrowed
// solves run only in a top-level Solve (not in consolidation's
// simulations), do not narrow again, and are skipped once the deadline
// has passed, or when Options.NoNarrowing is set.

// facetValues lists, per label Solve narrows pools by (the architecture,
// then the capacity type), the values the kinds the pending pods may use
// carry, in the kinds' order.
type facetValues [2][]string

// facetKey is the label of facet f.
func facetKey(f int) string {
	if f == 0 {
		return LabelArch
	}
	return LabelCapacityType
}

// facetsOf returns the facets of the kinds some class may use; none when
// any pod has topology constraints (spread, pod (anti-)affinity, host
// ports): their domains are the wider pool's, which a narrowed solve does
// not see.
func (s *state) facetsOf() facetValues {
	var out facetValues
	if s.hasTopology {
		return out
	}
	used := make([]bool, len(s.kinds))
	for _, c := range s.classes {
		for _, ki := range c.kinds {
			used[ki] = true
		}
	}
	for ki, k := range s.kinds {
		if !used[ki] {
			continue
		}
		it := &s.p.PoolTypes(k.pool)[k.typ]
		for f, v := range [...]string{it.Labels[LabelArch], it.Offerings[k.offering].CapacityType} {
			if !slices.Contains(out[f], v) {
				out[f] = append(out[f], v)
			}
		}
	}
	return out
}

// narrowerIfCheaper returns the cheapest of the plan and the plans of the
// problem narrowed to each facet value (see above). A narrowed plan keeps
// the wider problem's bound (the narrowed one's may exceed it) and reasons.
func (p *Problem) narrowerIfCheaper(plan *Plan, facets facetValues) *Plan {
	if p.Options.noBound || p.Options.NoNarrowing || plan == nil {
		return plan
	}
	pending := func(pl *Plan) []int {
		out := make([]int, len(pl.Unschedulable))
		for i, u := range pl.Unschedulable {
			out[i] = u.Pod
		}
		return out
	}
	wide := plan
	for f, values := range facets {
		if len(values) < 2 {
			continue
		}
		for _, v := range values {
			// No plan of the same pods beats the bound: a plan at it
			// stays.
			if expired(p.Options.stopAt()) || plan.TotalPrice <= wide.LowerBound*(1+1e-9) {
				return plan
			}
			sub, _ := p.narrowed(facetKey(f), v).solve()
			if sub.TotalPrice < plan.TotalPrice-1e-9 && slices.Equal(pending(sub), pending(wide)) {
				sub.LowerBound, sub.BoundApproximate = wide.LowerBound, wide.BoundApproximate
				sub.Unschedulable = wide.Unschedulable
				plan = sub
			}
		}
	}
	return plan
}

// narrowed returns the problem with every pool also requiring the label
// key to be v, solved without narrowing again.
func (p *Problem) narrowed(key, v string) *Problem {
	q := *p
	q.Pools = slices.Clone(p.Pools)
	for i := range q.Pools {
		reqs := slices.Clip(q.Pools[i].Requirements)
		q.Pools[i].Requirements = append(reqs, Requirement{Key: key, Operator: OpIn, Values: []string{v}})
	}
	q.Options.NoNarrowing = true
	return &q
}
