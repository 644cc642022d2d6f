package solver

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
)

// A NodePool requirement's minValues, as Karpenter reads it
// (kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling
// nodeclaim.go filterInstanceTypesByRequirements, cloudprovider
// InstanceTypes.SatisfiesMinValues): once a NodeClaim's instance types are
// filtered by the pool's and its pods' requirements and by room for the
// pods' requests (DaemonSets included), the types left must carry at least
// minValues distinct values of the key, else no pod that would bring it
// below goes on that NodeClaim. So minValues caps how full a node may get:
// the solver gives a kind, in place of its allocatable, the room that at
// least minValues values have (minValuesPool.split), and checks every
// planned node at the end (checkMinValues).

// minValue is one key of a pool's requirements with minValues. fixed is,
// for a key the pool sets rather than the offering or the instance type
// (a custom label), how many values its In requirements list: a node may
// take any of them, as the operator's launch counts them; -1 otherwise.
type minValue struct {
	key   string
	min   int
	fixed int
}

// poolMinValues returns the pool's minValues by key; none when the
// problem relaxes them (MinValuesBestEffort).
func (p *Problem) poolMinValues(pool *Pool) []minValue {
	if p.MinValuesBestEffort || len(pool.MinValues) == 0 {
		return nil
	}
	var out []minValue
	for _, k := range slices.Sorted(maps.Keys(pool.MinValues)) {
		m := pool.MinValues[k]
		if m <= 0 {
			continue
		}
		mv := minValue{key: NormalizeLabelKey(k), min: m, fixed: -1}
		if !offeringLabel(mv.key) && !wellKnownTypeLabel(mv.key) {
			values := map[string]bool{}
			for _, r := range pool.Requirements {
				if NormalizeLabelKey(r.Key) == mv.key && r.Operator == OpIn {
					for _, v := range r.Values {
						values[v] = true
					}
				}
			}
			mv.fixed = len(values)
		}
		out = append(out, mv)
	}
	return out
}

// admits reports whether a node of pool with labels may run rep as far
// as rep's own node constraints go: node selector and affinity, the
// pool's taints, and the host ports of the DaemonSets there.
func (p *Problem) admits(rep *Pod, labels Labels, pool *Pool) bool {
	return matchesAffinity(rep.NodeSelector, rep.Affinity, labels) && untolerated(rep.Tolerations, pool.Taints) == nil &&
		!p.daemonPortConflict(rep, labels, pool.Taints)
}

// minValuesPool is, for buildKinds, a pool with minValues: for each of
// its label variants, the offerings its requirements allow and, for each
// distinct set of them that some pods' node constraints admit, the room
// each value of each minValues key offers.
type minValuesPool struct {
	mins     []minValue
	variants []minValuesVariant
}

type minValuesVariant struct {
	pairs map[[2]int]*minValuesPair // by (type, offering)
	// setOf numbers, per node-constraint signature, the set of pairs it
	// runs on (-1 for none); sets holds each set's values.
	setOf []int
	sets  []minValuesSet
}

// minValuesPair is one allowed offering: what it leaves for pods and its
// value of every minValues key ("" with has false when it has none).
type minValuesPair struct {
	alloc  Resources
	values []string
	has    []bool
}

// minValuesSet is, per minValues key, the values the set's pairs carry,
// sorted, each with the rooms (allocatable) its pairs offer, dominated
// rooms left out.
type minValuesSet struct {
	keys [][]valueRoom
}

type valueRoom struct {
	value string
	rooms []Resources
}

// newMinValuesPool collects pool pi's offerings for minValues, or returns
// nil when the pool sets none. sigs are the distinct node constraints of
// the problem's pods.
func (p *Problem) newMinValuesPool(pi int, variants []map[string]string, sigs []*Pod) *minValuesPool {
	mins := p.poolMinValues(&p.Pools[pi])
	if len(mins) == 0 {
		return nil
	}
	pool := &p.Pools[pi]
	types := p.PoolTypes(pi)
	mv := &minValuesPool{mins: mins}
	for _, pl := range variants {
		v := minValuesVariant{pairs: map[[2]int]*minValuesPair{}, setOf: make([]int, len(sigs))}
		runsOn := make([][]int, len(sigs)) // per signature, the pairs it runs on
		var pairs []*minValuesPair
		for ti := range types {
			it := &types[ti]
			for oi, o := range it.Offerings {
				labels := &candidateLabels{zone: o.Zone, capacityType: o.CapacityType, pool: pl, typ: it.Labels}
				if !allMatch(pool.Requirements, labels) {
					continue
				}
				alloc := it.Allocatable().Sub(p.daemonOverhead(labels, pool.Taints))
				if !(Resources{}).Fits(alloc) {
					continue
				}
				pair := &minValuesPair{alloc: alloc, values: make([]string, len(mins)), has: make([]bool, len(mins))}
				for i, m := range mins {
					pair.values[i], pair.has[i] = labels.Label(m.key)
				}
				v.pairs[[2]int{ti, oi}] = pair
				for si, rep := range sigs {
					if p.admits(rep, labels, pool) {
						runsOn[si] = append(runsOn[si], len(pairs))
					}
				}
				pairs = append(pairs, pair)
			}
		}
		setIdx := map[string]int{}
		for si, on := range runsOn {
			if len(on) == 0 {
				v.setOf[si] = -1
				continue
			}
			key := fmt.Sprint(on)
			id, ok := setIdx[key]
			if !ok {
				id = len(v.sets)
				setIdx[key] = id
				v.sets = append(v.sets, newMinValuesSet(len(mins), pairs, on))
			}
			v.setOf[si] = id
		}
		mv.variants = append(mv.variants, v)
	}
	return mv
}

// newMinValuesSet gathers the values and rooms of pairs[on].
func newMinValuesSet(keys int, pairs []*minValuesPair, on []int) minValuesSet {
	set := minValuesSet{keys: make([][]valueRoom, keys)}
	for k := range keys {
		byValue := map[string][]Resources{}
		for _, i := range on {
			if pr := pairs[i]; pr.has[k] {
				byValue[pr.values[k]] = addRoom(byValue[pr.values[k]], pr.alloc)
			}
		}
		for value, rooms := range byValue {
			set.keys[k] = append(set.keys[k], valueRoom{value, rooms})
		}
		sort.Slice(set.keys[k], func(a, b int) bool { return set.keys[k][a].value < set.keys[k][b].value })
	}
	return set
}

// addRoom adds r to rooms unless one of them already holds it, dropping
// those r holds.
func addRoom(rooms []Resources, r Resources) []Resources {
	for _, o := range rooms {
		if r.Fits(o) {
			return rooms
		}
	}
	return append(slices.DeleteFunc(rooms, func(o Resources) bool { return o.Fits(r) }), r)
}

// kindPart is a share of the node constraints running on one offering
// with the room they may fill: sigs marks them (nil: all of them, with
// the offering's allocatable).
type kindPart struct {
	alloc Resources
	sigs  []bool
}

// split divides the signatures that run on offering (ti, oi) of variant vi
// by the set of offerings they could run on, and gives each share the
// room at which at least minValues values of every key still fit: the
// offering's allocatable, lowered to the rooms of the other values that
// keep the most of it. A share whose set lacks the values gets no part.
// The room is a sufficient condition, not the exact one (which is a
// union of such boxes); checkMinValues judges the plan exactly.
func (mv *minValuesPool) split(vi, ti, oi int, runs []bool) []kindPart {
	v := &mv.variants[vi]
	pair := v.pairs[[2]int{ti, oi}]
	if pair == nil {
		return nil
	}
	var parts []kindPart
	partOf := map[int]int{}
	for si, r := range runs {
		if !r || v.setOf[si] < 0 {
			continue
		}
		id := v.setOf[si]
		j, ok := partOf[id]
		if !ok {
			room, fits := mv.room(&v.sets[id], pair)
			if !fits {
				partOf[id] = -1
				continue
			}
			j = len(parts)
			partOf[id] = j
			parts = append(parts, kindPart{alloc: room, sigs: make([]bool, len(runs))})
		}
		if j >= 0 {
			parts[j].sigs[si] = true
		}
	}
	return parts
}

// room is the room on pair's offering within which the set's offerings
// carry at least minValues values of every key, and whether there is one.
func (mv *minValuesPool) room(set *minValuesSet, pair *minValuesPair) (Resources, bool) {
	room := pair.alloc
	type candidate struct {
		keep float64
		room Resources
	}
	var best []candidate
	for k, m := range mv.mins {
		if m.fixed >= 0 {
			if m.fixed < m.min {
				return Resources{}, false
			}
			continue
		}
		need := m.min
		if pair.has[k] {
			need-- // the offering's own value
		}
		if need <= 0 {
			continue
		}
		best = best[:0]
		for _, vr := range set.keys[k] {
			if pair.has[k] && vr.value == pair.values[k] {
				continue
			}
			c := candidate{keep: -1}
			for _, r := range vr.rooms {
				if f := keptShare(room, r); f > c.keep {
					c = candidate{f, r}
				}
			}
			// Keep the need best, in value order among equals.
			i := sort.Search(len(best), func(i int) bool { return best[i].keep < c.keep })
			if i < need {
				best = slices.Insert(best, i, c)
				best = best[:min(len(best), need)]
			}
		}
		if len(best) < need {
			return Resources{}, false
		}
		for _, c := range best {
			room = lesser(room, c.room)
		}
	}
	return room, (Resources{}).Fits(room)
}

// keptShare is the smallest share of room's quantities that o keeps.
func keptShare(room, o Resources) float64 {
	f := 1.0
	for r := range room {
		if room[r] > 0 {
			f = min(f, float64(max(min(o[r], room[r]), 0))/float64(room[r]))
		}
	}
	return f
}

// lesser is the element-wise minimum of a and b.
func lesser(a, b Resources) Resources {
	for r := range a {
		a[r] = min(a[r], b[r])
	}
	return a
}

// MinValuesShort is a minValues key the offerings that could take some
// pods fall short of: they carry Have distinct values of Key, the pool's
// requirements ask for Min.
type MinValuesShort struct {
	Key       string
	Min, Have int
}

// sentence names the pool, the key and its minValues.
func (m *MinValuesShort) sentence(pool string) string {
	return fmt.Sprintf("NodePool %s needs %d distinct %s values (minValues), only %d fit", pool, m.Min, m.Key, m.Have)
}

// minValuesShortOf counts, over the offerings of pool pi with the open
// labels open whose room holds req and that admit every pod of reps, the
// distinct values of each of the pool's minValues keys, and returns the
// first key short of its minValues, or nil.
func (p *Problem) minValuesShortOf(pi int, open map[string]string, req Resources, reps []*Pod) *MinValuesShort {
	mins := p.poolMinValues(&p.Pools[pi])
	if len(mins) == 0 {
		return nil
	}
	pool := &p.Pools[pi]
	values := make([]map[string]bool, len(mins))
	for i := range values {
		values[i] = map[string]bool{}
	}
	for _, c := range p.offered(pi, open) {
		if !req.Fits(c.alloc) || slices.ContainsFunc(reps, func(rep *Pod) bool { return !p.admits(rep, c.labels, pool) }) {
			continue
		}
		for i, m := range mins {
			if v, ok := c.labels.Label(m.key); ok {
				values[i][v] = true
			}
		}
	}
	return firstShort(mins, values)
}

// launchShort is the first minValues key of pool pi that the flexible
// launch of planned node n falls short of: its options (LaunchOptions,
// which keep the node's values of the keys its pods' topology depends
// on), truncated to the MaxLaunchInstanceTypes cheapest types as
// Karpenter truncates a NodeClaim's (cloudprovider InstanceTypes.Truncate,
// checked against minValues), carry too few values of it. Nil when none.
func (p *Problem) launchShort(pi int, n *NewNode, terms []topologyTerm) *MinValuesShort {
	mins := p.poolMinValues(&p.Pools[pi])
	types := p.PoolTypes(pi)
	byName := make(map[string]*InstanceType, len(types))
	for i := range types {
		byName[types[i].Name] = &types[i]
	}
	pl := poolLabels(&p.Pools[pi])
	maps.Copy(pl, n.Labels)
	opts := p.launchOptions(n, pi, p.offered(pi, n.Labels), terms, -1)
	allowed := InstanceTypeNames(opts)
	values := make([]map[string]bool, len(mins))
	for i := range values {
		values[i] = map[string]bool{}
	}
	for _, o := range opts {
		it := byName[o.InstanceType]
		if it == nil || !slices.Contains(allowed, o.InstanceType) {
			continue
		}
		labels := &candidateLabels{zone: o.Zone, capacityType: o.CapacityType, pool: pl, typ: it.Labels}
		for i, m := range mins {
			if v, ok := labels.Label(m.key); ok {
				values[i][v] = true
			}
		}
	}
	return firstShort(mins, values)
}

// firstShort is the first of mins whose values (by index) fall short.
func firstShort(mins []minValue, values []map[string]bool) *MinValuesShort {
	for i, m := range mins {
		have := len(values[i])
		if m.fixed >= 0 {
			have = m.fixed
		}
		if have < m.min {
			return &MinValuesShort{Key: m.key, Min: m.min, Have: have}
		}
	}
	return nil
}

// checkMinValues takes off the plan every new node Karpenter could not
// launch for its minValues (launchShort): one the packing's rooms do not
// cover, as a node the repair opens, or one whose pods' topology keeps it
// in a zone with fewer values. Its pods stay pending with the sentence
// that says so.
func (s *state) checkMinValues() {
	p := s.p
	var pools map[string]int
	for pi := range p.Pools {
		if len(p.poolMinValues(&p.Pools[pi])) > 0 {
			if pools == nil {
				pools = map[string]int{}
			}
			pools[p.Pools[pi].Name] = pi
		}
	}
	if pools == nil {
		return
	}
	terms := topologyTerms(p)
	kept := s.plan.NewNodes[:0]
	dropped := false
	for _, n := range s.plan.NewNodes {
		pi, ok := pools[n.Pool]
		if ok {
			if short := p.launchShort(pi, &n, terms); short != nil {
				why := short.sentence(n.Pool) + " a node in " + n.Zone + " with the pods planned together on it"
				for _, pod := range n.Pods {
					s.plan.Unschedulable = append(s.plan.Unschedulable, Unschedulable{Pod: pod, Reason: why})
				}
				s.plan.TotalPrice -= n.Price
				dropped = true
				continue
			}
		}
		kept = append(kept, n)
	}
	if !dropped {
		return
	}
	s.plan.NewNodes = kept
	onNew := map[int]bool{}
	for _, n := range kept {
		for _, pod := range n.Pods {
			onNew[pod] = true
		}
	}
	s.plan.Late = slices.DeleteFunc(s.plan.Late, func(pod int) bool {
		return !onNew[pod] && !slices.ContainsFunc(s.plan.Existing, func(pl Placement) bool { return pl.Pod == pod })
	})
	sort.Slice(s.plan.Unschedulable, func(a, b int) bool { return s.plan.Unschedulable[a].Pod < s.plan.Unschedulable[b].Pod })
	s.plan.TotalPrice = round6(math.Max(s.plan.TotalPrice, 0))
}
