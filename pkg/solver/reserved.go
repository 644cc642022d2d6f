package solver

import (
	"cmp"
	"math"
	"slices"
)

// Capacity reservations (Karpenter v1.14's capacity type "reserved": EC2
// on-demand capacity reservations and capacity blocks) are paid for
// whether used or not, so Karpenter launches into them first, pricing
// their offerings near zero, and never launches more instances into one
// than it has left (kubernetes-sigs/karpenter pkg/cloudprovider/types.go,
// Offering.ReservationCapacity; scheduling's reserved offering handling).
// The solver does the same: an offering with a Count gets a kind of its
// own, outside the packing's, and planReserved fills nodes of those kinds
// with pending pods, one node at a time while the reservation lasts,
// before the packing plans the rest.

// reservations are the capacity reservations of a solve and the kinds of
// their offerings.
type reservations struct {
	// kinds are the kinds of offerings with a Count, planned before
	// packing (planReserved) and added to state.kinds after it; a kind's
	// reservation is its reservation's number plus one.
	kinds []*kind
	// left is, by reservation, the nodes it has left; names names it,
	// and index numbers the names.
	left  []int
	names []string
	index map[string]int
}

// add returns the number of the reservation named name, recording it with
// count nodes left the first time.
func (r *reservations) add(name string, count int) int {
	if r.index == nil {
		r.index = map[string]int{}
	}
	i, ok := r.index[name]
	if !ok {
		i = len(r.left)
		r.index[name] = i
		r.left = append(r.left, count)
		r.names = append(r.names, name)
	}
	return i
}

// addReservedKind records a kind of the reserved offering oi of type ti
// of pool pi, its reservation counted once however many pools or kinds
// draw on it.
func (s *state) addReservedKind(pi, ti, oi int, alloc Resources, compat bitset, labels map[string]string) {
	it := &s.p.PoolTypes(pi)[ti]
	o := it.Offerings[oi]
	r := s.reserved.add(reservedName(it, &o), o.Count)
	s.reserved.kinds = append(s.reserved.kinds, &kind{pool: pi, typ: ti, offering: oi, ties: []int{oi}, price: o.Price,
		alloc: alloc, compat: compat, labels: labels, reservation: r + 1})
}

// reservedName names the capacity reservation of offering o of type it:
// its Reservation, else one of the type in the offering's zone.
func reservedName(it *InstanceType, o *Offering) string {
	if o.Reservation != "" {
		return o.Reservation
	}
	return it.Name + "/" + o.Zone
}

// lessReserved returns types with each capacity reservation's Count
// lowered by the nodes taken from it (by reservedName), the offerings of
// a reservation used up left out; types itself when nothing was taken.
// types is not modified.
func lessReserved(types []InstanceType, taken map[string]int) []InstanceType {
	if len(taken) == 0 || types == nil {
		return types
	}
	out := slices.Clone(types)
	for ti := range out {
		it := &out[ti]
		if !slices.ContainsFunc(it.Offerings, func(o Offering) bool { return o.Count > 0 && taken[reservedName(it, &o)] > 0 }) {
			continue
		}
		offerings := make([]Offering, 0, len(it.Offerings))
		for _, o := range it.Offerings {
			if o.Count > 0 {
				if o.Count -= taken[reservedName(it, &o)]; o.Count <= 0 {
					continue // used up: zero would mean no limit
				}
			}
			offerings = append(offerings, o)
		}
		it.Offerings = offerings
	}
	return out
}

// planReserved fills nodes of the reserved kinds with the pending pods,
// largest pods first, the highest-weight pool's reservations first, then
// the cheapest and the largest, while their reservations and the pools'
// limits last. A pod goes on a reserved node only of a pool with at least
// the weight of the best pool that could otherwise take it. It returns
// the nodes, whose kinds are numbered as they will be once reservedKinds
// follow kinds.
func (s *state) planReserved() []plannedNode {
	if len(s.reserved.kinds) == 0 {
		return nil
	}
	order := make([]int, len(s.reserved.kinds))
	for i := range order {
		order[i] = i
	}
	weight := func(k *kind) int32 { return s.p.Pools[k.pool].Weight }
	slices.SortStableFunc(order, func(a, b int) int {
		ka, kb := s.reserved.kinds[a], s.reserved.kinds[b]
		return cmp.Or(cmp.Compare(weight(kb), weight(ka)), cmp.Compare(ka.price, kb.price),
			cmp.Compare(kb.alloc[CPU], ka.alloc[CPU]), cmp.Compare(kb.alloc[Memory], ka.alloc[Memory]))
	})
	classes := s.classesBySize()
	var out []plannedNode
	for _, ri := range order {
		k := s.reserved.kinds[ri]
		for s.limitRoom(k) > 0 {
			takes := s.fillReserved(k, classes, s.topWeight())
			if len(takes) == 0 {
				break
			}
			for _, t := range takes {
				s.rem[t.class] -= t.n
			}
			s.reserved.left[k.reservation-1]--
			s.used[k.pool] = s.used[k.pool].Add(s.p.PoolTypes(k.pool)[k.typ].Capacity)
			out = append(out, plannedNode{kind: len(s.kinds) + ri, takes: takes, count: 1})
		}
	}
	return out
}

// fillReserved packs one node of reserved kind k with pending pods of the
// classes in order, as many of each as fit, within per-node caps and
// conflicts; weights are the classes' best pool weights (topWeight).
func (s *state) fillReserved(k *kind, order []int, weights []int32) []take {
	free := k.alloc
	var takes []take
	defer func() { s.resetCaps(takes) }()
	for _, ci := range order {
		c := s.classes[ci]
		if s.rem[ci] == 0 || c.refused != "" || c.bundle || !k.compat.has(c.group) || s.p.Pools[k.pool].Weight < weights[ci] ||
			(s.hasTopology && s.onlyExisting(c)) || s.conflictsWith(ci, takes) {
			continue
		}
		n := min(fitCount(free, c.req), s.rem[ci], s.capRoom(ci))
		if n == 0 || n == math.MaxInt {
			continue
		}
		free = free.Sub(c.req.Scale(int64(n)))
		s.countCap(ci, n)
		takes = append(takes, take{ci, n})
	}
	return takes
}
