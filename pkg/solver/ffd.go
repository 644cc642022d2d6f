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
// plan is never dearer than the best one-type packing tried. One few-type
// packing joins them (ffdPortfolio): first fit decreasing over the best
// one-type kinds, each run of new nodes on the kind that packs it cheapest,
// for pods of shapes that different kinds fit best.
//
// First fit places a pod on the earliest node with room; it knows nothing
// of topology, so these packings are only tried when the problem has none:
// no pod with spread, pod (anti-)affinity, preferences or host ports, no
// per-node caps, and no pool with minValues. Node requirements, taints and
// tolerations, DaemonSet overhead, the pods-per-node limit, pool weights
// (a pod goes only to its highest-weight pool with room) and pool limits
// are kept: a pod is packed on a kind only when it may run there (the
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

// ffdGroup is a run of identical nodes of a first-fit packing: x is the
// index of their kind in the packing's list of kinds.
type ffdGroup struct {
	free  Resources
	takes []take
	count int
	x     int
}

// ffdClasses returns the classes among on (the classes that have ki among
// their kinds) with pods left that may run on kind ki: of a pool of the
// class's top weight (weights, from topWeight).
func (s *state) ffdClasses(ki int, on []int, weights []int32) []int {
	w := s.p.Pools[s.kinds[ki].pool].Weight
	var out []int
	for _, ci := range on {
		c := s.classes[ci]
		if s.rem[ci] == 0 || weights[ci] != w || len(c.caps) > 0 || len(c.conflicts) > 0 || c.bundle || c.refused != "" {
			continue
		}
		out = append(out, ci)
	}
	return out
}

// ffdPacking is one first-fit-decreasing packing over a few kinds: order
// lists the classes, largest first, and allowed[x][ci] whether class ci
// may go on kinds[x].
type ffdPacking struct {
	kinds   []int
	order   []int
	allowed [][]bool
}

// ffdOrder is how a first-fit packing orders its classes, largest first.
type ffdOrder int

const (
	// ffdByShare sorts by the largest share of the kinds' allocatable a
	// class takes on any resource.
	ffdByShare ffdOrder = iota
	// ffdByBottleneck sorts by the share of the bottleneck resource (the
	// one the classes' pods take most of, relative to the allocatable),
	// ties by the largest share. On pods whose shapes tie on their
	// largest share but differ on the resource that runs out first
	// (openb CPU pods: 32 CPU with 32–64Gi on 64-CPU nodes) it packs
	// tighter: 324 m6g.16xlarge where the largest-share order takes 325.
	ffdByBottleneck
)

// ffdOrders are the orders packFFD tries, in turn; the first of the
// cheapest wins.
var ffdOrders = []ffdOrder{ffdByShare, ffdByBottleneck}

// newFFDPacking orders the classes that may run on any of the kinds
// (ffdClasses) largest first, as order says, taking each resource's
// allocatable at its largest among the kinds (the one kind's, for one
// kind).
func (s *state) newFFDPacking(kinds []int, on [][]int, weights []int32, order ffdOrder) *ffdPacking {
	f := &ffdPacking{kinds: kinds, allowed: make([][]bool, len(kinds))}
	var hull Resources
	seen := make([]bool, len(s.classes))
	for x, ki := range kinds {
		hull = maxResources(hull, s.kinds[ki].alloc)
		f.allowed[x] = make([]bool, len(s.classes))
		for _, ci := range s.ffdClasses(ki, on[ki], weights) {
			f.allowed[x][ci] = true
			if !seen[ci] {
				seen[ci] = true
				f.order = append(f.order, ci)
			}
		}
	}
	shares := make([]float64, len(s.classes))
	for _, ci := range f.order {
		shares[ci] = share(s.classes[ci].req, hull)
	}
	if order == ffdByShare {
		slices.SortStableFunc(f.order, func(a, b int) int { return cmp.Compare(shares[b], shares[a]) })
		return f
	}
	bottleneck, most := -1, 0.0
	for r := range hull {
		if hull[r] <= 0 {
			continue
		}
		total := 0.0
		for _, ci := range f.order {
			total += float64(s.classes[ci].req[r]) * float64(s.rem[ci])
		}
		if t := total / float64(hull[r]); t > most {
			bottleneck, most = r, t
		}
	}
	if bottleneck < 0 {
		return f
	}
	slices.SortStableFunc(f.order, func(a, b int) int {
		if c := cmp.Compare(s.classes[b].req[bottleneck], s.classes[a].req[bottleneck]); c != 0 {
			return c
		}
		return cmp.Compare(shares[b], shares[a])
	})
	return f
}

// packFFD packs, first fit decreasing, the classes that may run on the
// kinds (see ffdClasses) onto nodes of them while the pools' limits allow,
// and adds the nodes to the plan. With one kind it is a one-type packing;
// with more, each run of new nodes takes the kind that packs its pods at
// the lowest price per value (see ffdOpen). Each of ffdOrders is tried;
// the packing kept is the cheapest of those that place as much value as
// the first (ties to the earlier order). It returns the price of the
// nodes and the value (see valueClasses) of the pods they take.
func (s *state) packFFD(kinds []int, on [][]int, weights []int32) (price, value float64) {
	rem, used, nodes := slices.Clone(s.rem), slices.Clone(s.used), len(s.nodes)
	var best struct {
		rem          []int
		used         []Resources
		nodes        []plannedNode
		price, value float64
	}
	for i, order := range ffdOrders {
		if i > 0 {
			copy(s.rem, rem)
			copy(s.used, used)
			s.nodes = s.nodes[:nodes]
		}
		price, value := s.packFFDOrdered(s.newFFDPacking(kinds, on, weights, order))
		if i == 0 || (value >= best.value*(1-1e-12) && price < best.price-1e-9) {
			best.rem, best.used = slices.Clone(s.rem), slices.Clone(s.used)
			best.nodes = slices.Clone(s.nodes[nodes:])
			best.price, best.value = price, value
		}
	}
	copy(s.rem, best.rem)
	copy(s.used, best.used)
	s.nodes = append(s.nodes[:nodes], best.nodes...)
	return best.price, best.value
}

// packFFDOrdered is packFFD in the order of f.
func (s *state) packFFDOrdered(f *ffdPacking) (price, value float64) {
	var groups []ffdGroup
	for pos, ci := range f.order {
		req := s.classes[ci].req
		n := s.rem[ci]
		placed := 0
		for g := 0; g < len(groups) && n > 0; g++ {
			if !f.allowed[groups[g].x][ci] {
				continue
			}
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
			x, m, room := s.ffdOpen(f, pos, n)
			if x < 0 {
				break
			}
			k := s.kinds[f.kinds[x]]
			capacity := s.p.PoolTypes(k.pool)[k.typ].Capacity
			copies := max(min(n/m, room), 1)
			s.used[k.pool] = s.used[k.pool].Add(capacity.Scale(int64(copies)))
			groups = append(groups, ffdGroup{free: k.alloc.Sub(req.Scale(int64(m))), takes: []take{{ci, m}}, count: copies, x: x})
			n -= m * copies
			placed += m * copies
		}
		s.rem[ci] -= placed
		value += float64(placed) * s.classes[ci].value
	}
	for _, g := range groups {
		ki := f.kinds[g.x]
		s.nodes = append(s.nodes, plannedNode{kind: ki, takes: g.takes, count: g.count})
		price += float64(g.count) * s.kinds[ki].price
	}
	return price, value
}

// ffdLookahead is how many classes after the one a node is opened for
// ffdOpen counts as filling the node's room: it bounds the packing's work
// at classes × kinds × ffdLookahead.
const ffdLookahead = 16

// ffdOpen chooses the kind (its index in f.kinds, -1 for none) of the next
// run of new nodes for n pods of the class at f.order[pos], with how many
// pods of it one node takes and how many nodes its pool's limits allow.
// Each kind that may take the class is scored by its price over the value
// of a node of it filled first fit: m pods of the class, then the room
// left filled by the pods left of the next classes in order. The lowest
// score wins, ties going to the earlier kind.
func (s *state) ffdOpen(f *ffdPacking, pos, n int) (x, m, room int) {
	ci := f.order[pos]
	req := s.classes[ci].req
	x, best := -1, math.Inf(1)
	for y, ki := range f.kinds {
		if !f.allowed[y][ci] {
			continue
		}
		k := s.kinds[ki]
		my := min(fitCount(k.alloc, req), n)
		if my == 0 {
			continue
		}
		r := s.limitRoom(k)
		if r == 0 {
			continue
		}
		if len(f.kinds) == 1 {
			return 0, my, r
		}
		free := k.alloc.Sub(req.Scale(int64(my)))
		value := float64(my) * s.classes[ci].value
		for seen, j := 0, pos+1; j < len(f.order) && seen < ffdLookahead; j++ {
			cj := f.order[j]
			if s.rem[cj] == 0 || !f.allowed[y][cj] {
				continue
			}
			seen++
			q := min(fitCount(free, s.classes[cj].req), s.rem[cj])
			if q > 0 {
				free = free.Sub(s.classes[cj].req.Scale(int64(q)))
				value += float64(q) * s.classes[cj].value
			}
		}
		if sc := k.price / value; sc < best {
			x, m, room, best = y, my, r, sc
		}
	}
	return x, m, room
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
// all is always kept, with the best scored others, ffdKinds in all. It
// also returns every kind scored, best first.
func (s *state) ffdCandidates(efficient []int) (kept, ranked []int) {
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
			return nil, nil
		}
		if s.kinds[ki].reservation > 0 {
			continue
		}
		copy(w.rem, s.rem)
		copy(w.used, s.used)
		w.nodes = w.nodes[:0]
		price, value := w.packFFD([]int{ki}, on, weights)
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
	for _, sc := range out {
		ranked = append(ranked, sc.kind)
	}
	kept = make([]int, 0, ffdKinds)
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
	return kept, ranked
}

// ffdMixKinds is how many of the best scored kinds the few-type packing
// chooses among.
const ffdMixKinds = 8

// ffdPortfolio returns the kinds of the first-fit packings the portfolio
// completes: one-type packings on each kind ffdCandidates keeps, then a
// few-type packing over the ffdMixKinds best scored kinds, where each run
// of new nodes takes the kind that packs it cheapest per value (see
// ffdOpen). Mixing kinds wins where pods of different shapes fill
// different kinds best (CPU-heavy pods on one family, memory-heavy on
// another) and no one type packs them all well.
func (s *state) ffdPortfolio(efficient []int) [][]int {
	kept, ranked := s.ffdCandidates(efficient)
	var out [][]int
	for _, ki := range kept {
		out = append(out, []int{ki})
	}
	if len(ranked) > 1 {
		out = append(out, ranked[:min(len(ranked), ffdMixKinds)])
	}
	return out
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
