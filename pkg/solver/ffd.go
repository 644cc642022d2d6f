package solver

import (
	"cmp"
	"math"
	"slices"
)

// The planner's portfolio also holds one-type packings: every pod that may
// run on one kind packed onto nodes of that kind, first fit, largest pods
// first (first-fit decreasing), and the pods that may not packed by the
// greedy as usual. On many pods of few large shapes (production traces:
// thousands of 8–192 CPU pods of a few dozen shapes) the cheapest one-type
// packing can beat the greedy's mix of kinds; with it in the portfolio, the
// plan is never dearer than the best one-type packing tried.
//
// First fit places a pod on the earliest node with room; it knows nothing
// of topology, so these packings are only tried when the problem has none:
// no pod with spread, pod (anti-)affinity, preferences or host ports, no
// per-node caps, and no pool with minValues. Node requirements, taints and
// tolerations, DaemonSet overhead, the pods-per-node limit, pool weights
// (a pod goes only to its highest-weight pool with room) and pool limits
// are kept: a pod is packed on the kind only when it may run there (the
// kind is among its class's), and nodes are opened only while the pool's
// limits allow.

// ffdKinds is how many kinds get a whole one-type packing (the greedy for
// the rest and the improvement passes): the ones whose first-fit packing
// costs least per dollar of pod value it places.
const ffdKinds = 4

// ffdEligible reports whether first-fit packings are valid plans for the
// problem (see above).
func (s *state) ffdEligible() bool {
	if s.hasTopology || len(s.caps) > 0 {
		return false
	}
	for i := range s.p.Pools {
		if len(s.p.Pools[i].MinValues) > 0 {
			return false
		}
	}
	return true
}

// ffdGroup is a run of identical nodes of a one-type packing.
type ffdGroup struct {
	free  Resources
	takes []take
	count int
}

// ffdClasses returns, largest first on kind ki, the classes among on (the
// classes that have ki among their kinds) with pods left that may run on
// it: of a pool of the class's top weight (weights, from topWeight).
func (s *state) ffdClasses(ki int, on []int, weights []int32) []int {
	k := s.kinds[ki]
	w := s.p.Pools[k.pool].Weight
	var out []int
	for _, ci := range on {
		c := s.classes[ci]
		if s.rem[ci] == 0 || weights[ci] != w || len(c.caps) > 0 || len(c.conflicts) > 0 || c.bundle || c.refused != "" {
			continue
		}
		out = append(out, ci)
	}
	shares := make([]float64, len(s.classes))
	for _, ci := range out {
		shares[ci] = share(s.classes[ci].req, k.alloc)
	}
	slices.SortStableFunc(out, func(a, b int) int { return cmp.Compare(shares[b], shares[a]) })
	return out
}

// packFFD packs, first fit decreasing, the classes ffdClasses gives onto
// nodes of kind ki while the pool's limits allow, and adds the nodes to
// the plan. It returns the price of the nodes and the value (see
// valueClasses) of the pods they take.
func (s *state) packFFD(ki int, on []int, weights []int32) (price, value float64) {
	k := s.kinds[ki]
	capacity := s.p.PoolTypes(k.pool)[k.typ].Capacity
	var groups []ffdGroup
	for _, ci := range s.ffdClasses(ki, on, weights) {
		req := s.classes[ci].req
		n := s.rem[ci]
		placed := 0
		for g := 0; g < len(groups) && n > 0; g++ {
			m := min(fitCount(groups[g].free, req), n)
			if m == 0 {
				continue
			}
			// The first full copies take m each; a remainder, fewer
			// than m, goes on to the next copy (split off below).
			full := min(groups[g].count, n/m)
			if full < groups[g].count {
				rest := groups[g]
				rest.count -= full
				rest.takes = slices.Clone(rest.takes)
				groups = slices.Insert(groups, g+1, rest)
				groups[g].count = full
			}
			groups[g].free = groups[g].free.Sub(req.Scale(int64(m)))
			groups[g].takes = append(groups[g].takes, take{ci, m})
			n -= m * full
			placed += m * full
		}
		for n > 0 {
			m := min(fitCount(k.alloc, req), n)
			room := s.limitRoom(k)
			if m == 0 || room == 0 {
				break
			}
			copies := min(n/m, room)
			if copies == 0 {
				copies = 1
			}
			s.used[k.pool] = s.used[k.pool].Add(capacity.Scale(int64(copies)))
			groups = append(groups, ffdGroup{free: k.alloc.Sub(req.Scale(int64(m))), takes: []take{{ci, m}}, count: copies})
			n -= m * copies
			placed += m * copies
		}
		s.rem[ci] -= placed
		value += float64(placed) * s.classes[ci].value
	}
	for _, g := range groups {
		s.nodes = append(s.nodes, plannedNode{kind: ki, takes: g.takes, count: g.count})
		price += float64(g.count) * k.price
	}
	return price, value
}

// ffdScoreClasses bounds the problems whose every kind is scored for a
// one-type packing (classes × kinds); past it only the efficient ones are.
const ffdScoreCells = 200_000

// ffdCandidates returns the kinds whose one-type packings the portfolio
// completes. Every kind is packed on a fork (only the efficient ones, the
// given kinds, on problems of more than ffdScoreCells classes × kinds: a
// kind other kinds beat per dollar can still pack tighter) and scored by
// its price, extrapolated at its price per value placed when it cannot
// take every pod first fit may pack. The cheapest kind that takes them
// all is always kept, with the best scored others, ffdKinds in all.
func (s *state) ffdCandidates(efficient []int) []int {
	kinds := efficient
	if len(s.classes)*len(s.kinds) <= ffdScoreCells {
		kinds = make([]int, len(s.kinds))
		for i := range kinds {
			kinds[i] = i
		}
	}
	w := s.fork()
	w.valueClasses(nil, nil)
	weights := w.topWeight()
	on := s.classesOnKinds()
	total := 0.0 // the value of the pods first fit may pack
	for ci, c := range w.classes {
		if s.rem[ci] > 0 && len(c.caps) == 0 && len(c.conflicts) == 0 && !c.bundle && c.refused == "" && !math.IsInf(c.value, 1) {
			total += float64(s.rem[ci]) * c.value
		}
	}
	type scored struct {
		kind  int
		score float64
		all   bool
	}
	var out []scored
	for _, ki := range kinds {
		if s.p.Options.stopAt().canceled() {
			return nil
		}
		if s.kinds[ki].reservation > 0 {
			continue
		}
		copy(w.rem, s.rem)
		copy(w.used, s.used)
		w.nodes = w.nodes[:0]
		price, value := w.packFFD(ki, on[ki], weights)
		if value <= 0 || math.IsInf(value, 1) {
			continue
		}
		sc := scored{kind: ki, score: price / value * total}
		if value >= total*(1-1e-9) {
			sc.score, sc.all = price, true
		}
		out = append(out, sc)
	}
	slices.SortStableFunc(out, func(a, b scored) int { return cmp.Compare(a.score, b.score) })
	kept := make([]int, 0, ffdKinds)
	for i, sc := range out {
		if sc.all {
			kept = append(kept, sc.kind)
			out = slices.Delete(out, i, i+1)
			break
		}
	}
	for _, sc := range out {
		if len(kept) == ffdKinds {
			break
		}
		kept = append(kept, sc.kind)
	}
	return kept
}

// classesOnKinds lists, per kind, the classes that have it among theirs.
func (s *state) classesOnKinds() [][]int {
	on := make([][]int, len(s.kinds))
	for ci, c := range s.classes {
		for _, ki := range c.kinds {
			on[ki] = append(on[ki], ci)
		}
	}
	return on
}
