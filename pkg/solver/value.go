package solver

import (
	"cmp"
	"math"
	"slices"
	"sort"
)

// valueClasses prices every class, the greedy's measure of what a node's
// pods are worth. With resource prices (the fluid optimum's), a pod is worth
// what its requests cost at those prices; without, or when that is zero, its
// cheapest stand-alone fluid cost: the price of its best kind times the
// largest share of it the pod takes. It then orders each kind's compatible
// classes by value per share, the greedy's fill order, for the given kinds.
func (s *state) valueClasses(prices *Resources64, kinds []int) {
	// Classes of one fit have the same requests and share one list of
	// kinds (buildKinds): the stand-alone value is computed once per list
	// (thousands of classes, a hundred or so fits at 5,000 pods of
	// Karpenter's mix).
	type fitValue struct {
		kinds []int
		value float64
	}
	byFit := make([]fitValue, s.fits)
	for _, c := range s.classes {
		c.value = 0
		if prices != nil {
			for r, q := range c.req {
				c.value += prices[r] * float64(q)
			}
		}
		if c.value > 0 {
			continue
		}
		c.value = math.Inf(1)
		if len(c.kinds) == 0 {
			continue
		}
		var memo *fitValue
		if c.fit < len(byFit) {
			memo = &byFit[c.fit]
			if len(memo.kinds) == len(c.kinds) && &memo.kinds[0] == &c.kinds[0] {
				c.value = memo.value
				continue
			}
		}
		for _, ki := range c.kinds {
			k := s.kinds[ki]
			c.value = min(c.value, k.price*share(c.req, k.alloc))
		}
		if memo != nil {
			*memo = fitValue{c.kinds, c.value}
		}
	}
	candidate := make([]bool, len(s.kinds))
	for _, ki := range kinds {
		candidate[ki] = true
	}
	for _, k := range s.kinds {
		k.order = k.order[:0]
	}
	for ci, c := range s.classes {
		if s.rem[ci] == 0 {
			continue
		}
		for _, ki := range c.kinds {
			if candidate[ki] {
				s.kinds[ki].order = append(s.kinds[ki].order, ci)
			}
		}
	}
	bucketOf := bucketsOf(s.classes)
	slot := make([]int32, len(s.classes))
	for i := range slot {
		slot[i] = -1
	}
	var keys fillOrder
	var entries, runs []fillEntry
	var runOf, count, rank []int
	var classes []int
	for _, ki := range kinds {
		k := s.kinds[ki]
		// Classes of one bucket number (bucketsOf) have one density and
		// share on the kind: they are computed once per number, the
		// numbers (runs) are sorted, and each run's classes keep their
		// place, which is the order of a stable sort as long as no two
		// runs tie (else the classes are sorted one by one).
		runs, runOf = runs[:0], runOf[:0]
		ordered := true // no NaN: the comparison is a strict weak order
		for pos, ci := range k.order {
			id := bucketOf[ci]
			if slot[id] < 0 {
				c := s.classes[ci]
				sh := share(c.req, k.alloc)
				d := math.Inf(1)
				if sh != 0 {
					d = c.value / sh
				}
				ordered = ordered && !math.IsNaN(d) && !math.IsNaN(sh)
				slot[id] = int32(len(runs))
				runs = append(runs, fillEntry{d, sh, pos, len(runs)})
			}
			runOf = append(runOf, int(slot[id]))
		}
		for _, ci := range k.order {
			slot[bucketOf[ci]] = -1
		}
		if ordered {
			slices.SortFunc(runs, compareFill)
		}
		tied := false
		for i := 1; i < len(runs) && ordered && !tied; i++ {
			tied = runs[i].density == runs[i-1].density && runs[i].share == runs[i-1].share
		}
		// rank is each run's place once sorted, by its place before.
		rank = slices.Grow(rank[:0], len(runs))[:len(runs)]
		for i, r := range runs {
			rank[r.class] = i
		}
		switch {
		case ordered && !tied:
			count = slices.Grow(count[:0], len(runs)+1)[:len(runs)+1]
			clear(count)
			for _, r := range runOf {
				count[rank[r]+1]++
			}
			for i := 1; i < len(count); i++ {
				count[i] += count[i-1]
			}
			classes = append(classes[:0], k.order...)
			for pos, ci := range classes {
				at := &count[rank[runOf[pos]]]
				k.order[*at] = ci
				*at++
			}
		case ordered:
			entries = entries[:0]
			for pos, ci := range k.order {
				r := &runs[rank[runOf[pos]]]
				entries = append(entries, fillEntry{r.density, r.share, pos, ci})
			}
			// Ties in density and share keep their place: the order of
			// a stable sort, in O(n log n) rather than sort.Stable's
			// O(n log² n) swaps.
			slices.SortFunc(entries, compareFill)
			for i, e := range entries {
				k.order[i] = e.class
			}
		default:
			keys.order = k.order
			keys.density, keys.share = keys.density[:0], keys.share[:0]
			for _, ci := range k.order {
				c := s.classes[ci]
				sh := share(c.req, k.alloc)
				d := math.Inf(1)
				if sh != 0 {
					d = c.value / sh
				}
				keys.density = append(keys.density, d)
				keys.share = append(keys.share, sh)
			}
			sort.Stable(&keys)
		}
		k.buckets = k.shapeBuckets(s.classes, bucketOf, slot)
		k.dims = k.fillDims()
	}
}

// fillEntry is one class (by index) in a kind's fill order, at pos
// before sorting.
type fillEntry struct {
	density, share float64
	pos, class     int
}

// compareFill orders fill entries by density, then share, both
// descending, then by their place before sorting.
func compareFill(a, b fillEntry) int {
	switch {
	case a.density != b.density:
		if a.density > b.density {
			return -1
		}
		return 1
	case a.share != b.share:
		if a.share > b.share {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.pos, b.pos)
}

// fillOrder sorts a kind's classes by value per share (density), then
// share, both descending, for orders whose keys include NaN (where only
// sort.Stable's own order is the one planned before).
type fillOrder struct {
	order          []int
	density, share []float64
}

func (f *fillOrder) Len() int { return len(f.order) }

func (f *fillOrder) Less(a, b int) bool {
	if f.density[a] != f.density[b] {
		return f.density[a] > f.density[b]
	}
	return f.share[a] > f.share[b]
}

func (f *fillOrder) Swap(a, b int) {
	f.order[a], f.order[b] = f.order[b], f.order[a]
	f.density[a], f.density[b] = f.density[b], f.density[a]
	f.share[a], f.share[b] = f.share[b], f.share[a]
}

// topWeight returns, for each class, the highest weight among pools that
// could still launch a node for it.
func (s *state) topWeight() []int32 {
	w := make([]int32, len(s.classes))
	for ci, c := range s.classes {
		w[ci] = math.MinInt32
		if s.rem[ci] == 0 {
			continue
		}
		for _, pk := range c.pools {
			if s.poolHasRoom(pk) {
				w[ci] = s.p.Pools[pk.pool].Weight
				break
			}
		}
	}
	return w
}
