package solver

import (
	"slices"
	"sort"
)

// poolOrder returns pool indices by descending weight, then name.
func (p *Problem) poolOrder() []int {
	order := make([]int, len(p.Pools))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		pa, pb := &p.Pools[order[a]], &p.Pools[order[b]]
		if pa.Weight != pb.Weight {
			return pa.Weight > pb.Weight
		}
		return pa.Name < pb.Name
	})
	return order
}

// daemonOverhead sums the requests of the DaemonSets that would run on a node
// with these labels and taints.
func (p *Problem) daemonOverhead(labels Labels, taints []Taint) Resources {
	var sum Resources
	for i := range p.DaemonSets {
		ds := &p.DaemonSets[i]
		if matchesAffinity(ds.NodeSelector, ds.Affinity, labels) && untolerated(ds.Tolerations, taints) == nil {
			sum = sum.Add(ds.Requests)
		}
	}
	return sum
}

// buildKinds builds the candidate nodes: every offering of every pool's
// types (per label set the pool's nodes may carry) that its requirements
// allow, with the DaemonSets' overhead taken off, split by minValues,
// merged when no group can tell offerings apart; then it prunes the
// dominated ones and lists each class's.
func (s *state) buildKinds() {
	p := s.p
	s.used = make([]Resources, len(p.Pools))
	for i := range p.Pools {
		s.used[i] = p.Pools[i].Used
	}
	type dedupeKey struct {
		pool, typ int
		compat    string
		alloc     Resources
	}
	seen := map[dedupeKey]int{}
	sigOf, sigs := s.nodeSigs()
	runs := make([]bool, len(sigs))
	// compats remembers, per set of signatures that may run on an
	// offering (on: 1 each that may), the groups that may.
	type compatOf struct {
		bits  bitset
		key   string
		empty bool
	}
	compats := map[string]compatOf{}
	on := make([]byte, len(sigs))
	for _, pi := range p.poolOrder() {
		pool := &p.Pools[pi]
		types := p.PoolTypes(pi)
		variants := poolVariants(pool, s.groups) // label sets the pool's nodes may carry
		mv := p.newMinValuesPool(pi, variants, sigs)
		for vt := range len(variants) * len(types) {
			pl, ti := variants[vt/len(types)], vt%len(types)
			it := &types[ti]
			base := it.Allocatable()
			for oi, o := range it.Offerings {
				labels := &candidateLabels{zone: o.Zone, capacityType: o.CapacityType, pool: pl, typ: it.Labels}
				if !allMatch(pool.Requirements, labels) {
					continue
				}
				alloc := base.Sub(p.daemonOverhead(labels, pool.Taints))
				if !(Resources{}).Fits(alloc) {
					continue
				}
				for i, rep := range sigs {
					runs[i] = p.admits(rep, labels, pool)
				}
				// A pool with minValues splits the offering by the room
				// each set of pods may fill (see minValuesPool.split).
				parts := []kindPart{{alloc: alloc}}
				if mv != nil {
					parts = mv.split(vt/len(types), ti, oi, runs)
				}
				for _, part := range parts {
					// The groups that may run here follow from which
					// signatures do: most offerings share one answer.
					for i := range sigs {
						on[i] = 0
						if runs[i] && (part.sigs == nil || part.sigs[i]) {
							on[i] = 1
						}
					}
					ck, ok := compats[string(on)]
					if !ok {
						ck.bits = newBitset(len(s.groups))
						for g := range s.groups {
							if on[sigOf[g]] == 1 {
								ck.bits.set(g)
							}
						}
						ck.key, ck.empty = ck.bits.key(), ck.bits.empty()
						compats[string(on)] = ck
					}
					if ck.empty {
						continue
					}
					// Each kind owns its bits (preferUntainted clears some).
					compat := ck.bits
					if o.Count > 0 {
						s.addReservedKind(pi, ti, oi, part.alloc, slices.Clone(compat), openLabels(pool, pl))
						continue
					}
					key := dedupeKey{pi, ti, ck.key, part.alloc}
					if j, ok := seen[key]; ok {
						switch k := s.kinds[j]; {
						case o.Price < k.price:
							k.offering, k.price, k.ties = oi, o.Price, []int{oi}
						case o.Price == k.price:
							k.ties = append(k.ties, oi)
						}
						continue
					}
					seen[key] = len(s.kinds)
					s.kinds = append(s.kinds, &kind{pool: pi, typ: ti, offering: oi, ties: []int{oi}, price: o.Price, alloc: part.alloc, compat: slices.Clone(compat), labels: openLabels(pool, pl)})
				}
			}
		}
	}
	s.preferUntainted()
	s.pruneDominated()
	s.listKinds(sigOf)
}

// nodeSigs numbers the groups' distinct node constraints (see
// nodeConstraintKey) and returns each group's number (also kept in
// s.sigOf) and one pod of each: groups differ by topology far more often
// than by what they ask of a node, so whether a node may run a group is
// judged once per number.
func (s *state) nodeSigs() (sigOf []int, sigs []*Pod) {
	sigOf = make([]int, len(s.groups))
	s.sigOf = sigOf
	sigIdx := map[string]int{}
	for g := range s.groups {
		key := nodeConstraintKey(s.groups[g].rep)
		i, ok := sigIdx[key]
		if !ok {
			i = len(sigs)
			sigIdx[key] = i
			sigs = append(sigs, s.groups[g].rep)
		}
		sigOf[g] = i
	}
	return sigOf, sigs
}

// listKinds gives each class the kinds it fits, overall and per pool (the
// pools by descending weight). Classes of groups with the same node
// constraints and the same requests fit the same kinds: they share the
// lists.
func (s *state) listKinds(sigOf []int) {
	fits := map[fitKey]int{}
	var shared []*class // by fit: the first class with it that may get a node
	for _, c := range s.classes {
		key := fitKey{sigOf[c.group], c.req}
		f, ok := fits[key]
		if !ok {
			f = len(shared)
			fits[key] = f
			shared = append(shared, nil)
		}
		c.fit = f
		if c.refused != "" || (s.hasTopology && s.onlyExisting(c)) {
			continue
		}
		if o := shared[f]; o != nil {
			c.kinds, c.pools = o.kinds, o.pools
			continue
		}
		shared[f] = c
		byPool := map[int]int{}
		for ki, k := range s.kinds {
			if k.compat.has(c.group) && c.req.Fits(k.alloc) {
				c.kinds = append(c.kinds, ki)
				i, ok := byPool[k.pool]
				if !ok {
					i = len(c.pools)
					byPool[k.pool] = i
					c.pools = append(c.pools, poolKinds{pool: k.pool})
				}
				c.pools[i].kinds = append(c.pools[i].kinds, ki)
			}
		}
		sort.SliceStable(c.pools, func(a, b int) bool { return s.p.Pools[c.pools[a].pool].Weight > s.p.Pools[c.pools[b].pool].Weight })
	}
	s.fits = len(shared)
}

// fitKey is what decides the kinds a class may use: its group's node
// constraints (numbered by state.sigOf) and its requests.
type fitKey struct {
	sig int
	req Resources
}

// poolKinds are a class's candidate kinds in one pool.
type poolKinds struct {
	pool  int
	kinds []int
}

func allMatch(reqs []Requirement, labels Labels) bool {
	for i := range reqs {
		if !reqs[i].Matches(labels) {
			return false
		}
	}
	return true
}

// pruneDominated drops kinds that another kind of the same pool beats on
// every count: it takes every pod the first takes, has at least its
// allocatable, costs no more and uses no more of the pool's limits.
// It leaves the kinds sorted by price, which cheapestHolding relies on.
func (s *state) pruneDominated() {
	// The generic sort makes sort.SliceStable's comparisons, on < alone.
	slices.SortStableFunc(s.kinds, func(a, b *kind) int {
		if a.price < b.price {
			return -1
		}
		return 0
	})
	keep := s.kinds[:0:0]
	for _, k := range s.kinds {
		dominated := false
		for _, o := range keep {
			// Room first: a dearer kind mostly has more, and the check
			// ends at the first resource.
			if o.pool == k.pool && k.alloc.Fits(o.alloc) && o.price <= k.price && k.compat.subsetOf(o.compat) &&
				s.p.PoolTypes(o.pool)[o.typ].Capacity.Fits(s.p.PoolTypes(k.pool)[k.typ].Capacity) {
				dominated = true
				break
			}
		}
		if !dominated {
			keep = append(keep, k)
		}
	}
	s.kinds = keep
}

// placeOnExisting puts pods on existing nodes' free capacity, largest first,
// on the first node that takes them.
func (s *state) placeOnExisting() {
	defer func() {
		s.start = make([]int, len(s.classes))
		for ci, c := range s.classes {
			s.start[ci] = len(c.pods) - s.rem[ci]
		}
	}()
	nodes := s.p.Nodes
	free := make([]Resources, len(nodes))
	placed := make([][]take, len(nodes)) // classes placed on each node by this solve
	for i := range nodes {
		free[i] = nodes[i].Allocatable.Sub(nodes[i].Requested)
	}
	for _, ci := range s.classesBySize() {
		c := s.classes[ci]
		if c.refused != "" || c.bundle {
			continue
		}
		rep := s.groups[c.group].rep
		for ni := range nodes {
			if s.rem[ci] == 0 {
				break
			}
			n := &nodes[ni]
			if n.Unschedulable || !matchesAffinity(rep.NodeSelector, rep.Affinity, MapLabels(n.Labels)) || untolerated(rep.Tolerations, n.Taints) != nil || s.conflictsWith(ci, placed[ni]) || nodePortConflict(rep, n) {
				continue
			}
			room := min(s.existingRoom(c, n), s.capRoomOn(ci, n, placed[ni]))
			k := min(fitCount(free[ni], c.req), s.rem[ci], max(room, 0))
			if k == 0 {
				continue
			}
			placed[ni] = append(placed[ni], take{ci, k})
			for j := 0; j < k; j++ {
				pod := c.pods[len(c.pods)-s.rem[ci]]
				s.plan.Existing = append(s.plan.Existing, Placement{Pod: pod, Node: n.Name})
				s.rem[ci]--
			}
			free[ni] = free[ni].Sub(c.req.Scale(int64(k)))
		}
	}
}
