package solver

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Spreads on several keys at once. A group carrying DoNotSchedule spreads
// on two or more keys other than the hostname (zone and capacity type, as
// in Karpenter's docs for a spot/on-demand ratio) cannot have its keys
// planned one after the other: the zones chosen first fix how many pods
// each zone's capacity types must take, and a zone with one capacity type
// only (no spot in it) then breaks the capacity-type skew. kube-scheduler
// adds one pod at a time, each to a node whose domain of every key is
// within its constraint's skew at that moment, so the reachable
// placements are sequences, and some dead-end: with zones 2/2/1 and
// on-demand 3 / spot 2, the next pod must go to the third zone and to
// spot, and the third zone has no spot. planCells therefore plans the
// keys together, over the cells (combinations of values) a node the pods
// may get carries, as a search over such sequences: greedy first (the
// emptiest domains, then the cheapest cell), backtracking out of dead
// ends, with the states already explored remembered. The search looks a
// few pods past the group (one per cell): of the sequences placing every
// pod, it keeps one the workload can still grow from (one more replica,
// pods the next solve brings), where the greedy answer may leave a state
// no pod can join, on-demand 3 / spot 2 above; and among equally empty
// domains it reuses a cell its pods already have, for fewer nodes.

// cell is one combination of values of several topology keys carried by a
// node the pod could get, with what the pod would cost there (see
// findDomains).
type cell struct {
	values []string // one per key
	cost   float64
}

// findCells lists the distinct combinations of values of keys carried by
// the nodes the pod could get, filtered as f says (findDomains for several
// keys at once; a node lacking one of the keys is left out), cheapest
// first, then by values.
func (s *state) findCells(pod *Pod, keys []string, f domainFilter) []cell {
	byValues := map[string]int{}
	var out []cell
	values := make([]string, len(keys))
	note := func(c float64) {
		k := strings.Join(values, "\x00")
		if i, ok := byValues[k]; ok {
			out[i].cost = min(out[i].cost, c)
			return
		}
		byValues[k] = len(out)
		out = append(out, cell{values: slices.Clone(values), cost: c})
	}
	read := func(l Labels) bool {
		for i, k := range keys {
			v, ok := l.Label(k)
			if !ok {
				return false
			}
			values[i] = v
		}
		return true
	}
	// Pods without node selector or affinity accept every node: their
	// affinity filter needs no labels.
	anyNode := len(pod.NodeSelector) == 0 && len(pod.Affinity) == 0
	var cost []float64 // per cell of a variant: the cheapest offering's
	for pi := range s.p.Pools {
		pool := &s.p.Pools[pi]
		if f.taints && untolerated(pod.Tolerations, pool.Taints) != nil {
			continue
		}
		variants := keyVariants(pool, poolLabelsFor(pool, pod), keys)
		types := s.p.PoolTypes(pi)
		// What the pod asks of each type alone: launchable, and whether
		// it fits (the cost of a cell it does not fit is +Inf), and the
		// largest share of the type's allocatable it takes.
		fits := make([]int8, len(types)) // 0: unknown, 1: fits, 2: does not, 3: left out
		shares := make([]float64, len(types))
		for _, pl := range variants {
			pc := s.poolCells(pi, pl, keys)
			cost = slices.Grow(cost[:0], len(pc.values))[:len(pc.values)]
			for c := range cost {
				cost[c] = math.NaN() // no offering of the cell yet
			}
			for j, ref := range pc.refs {
				it := &types[ref.typ]
				if fits[ref.typ] == 0 {
					fits[ref.typ] = 1
					alloc := it.Allocatable()
					switch {
					case f.launchable && !s.poolHolds(pi, it.Capacity):
						fits[ref.typ] = 3
					case !pod.Requests.Fits(alloc):
						fits[ref.typ] = 2
						if f.fits {
							fits[ref.typ] = 3
						}
					default:
						shares[ref.typ] = share(pod.Requests, alloc)
					}
				}
				if fits[ref.typ] == 3 {
					continue
				}
				o := &it.Offerings[ref.offering]
				if f.affinity && !anyNode && !matchesAffinity(pod.NodeSelector, pod.Affinity, &candidateLabels{zone: o.Zone, capacityType: o.CapacityType, pool: pl, typ: it.Labels}) {
					continue
				}
				c := math.Inf(1)
				if fits[ref.typ] == 1 {
					c = o.Price * shares[ref.typ]
				}
				if ci := pc.cell[j]; math.IsNaN(cost[ci]) || c < cost[ci] {
					cost[ci] = c
				}
			}
			for ci, c := range cost {
				if !math.IsNaN(c) {
					copy(values, pc.values[ci])
					note(c)
				}
			}
		}
	}
	for i := range s.p.Nodes {
		n := &s.p.Nodes[i]
		if !read(MapLabels(n.Labels)) || f.taints && untolerated(pod.Tolerations, n.Taints) != nil || f.affinity && !matchesAffinity(pod.NodeSelector, pod.Affinity, MapLabels(n.Labels)) {
			continue
		}
		c := math.Inf(1)
		if !n.Unschedulable && pod.Requests.Fits(n.Allocatable.Sub(n.Requested)) {
			c = 0 // room already paid for
		} else if f.fits {
			continue
		}
		note(c)
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].cost != out[b].cost {
			return out[a].cost < out[b].cost
		}
		return slices.Compare(out[a].values, out[b].values) < 0
	})
	return out
}

// offerRef is one offering (by index) of one of a pool's types (by index
// in its PoolTypes).
type offerRef struct{ typ, offering int }

// poolOffers lists the offerings of pool pi's types whose nodes, carrying
// the pool labels pl, meet the pool's requirements: the part of findCells
// that does not depend on the pod, remembered per pool and labels (in
// s.domains, when there is one) since every pod's domains read it.
func (s *state) poolOffers(pi int, pl map[string]string) []offerRef {
	var key string
	if s.domains != nil {
		key = string(offersKey(pi, pl))
		s.domains.mu.Lock()
		out, ok := s.domains.offers[key]
		s.domains.mu.Unlock()
		if ok {
			return out
		}
	}
	pool := &s.p.Pools[pi]
	types := s.p.PoolTypes(pi)
	var out []offerRef
	for ti := range types {
		it := &types[ti]
		for oi, o := range it.Offerings {
			labels := &candidateLabels{zone: o.Zone, capacityType: o.CapacityType, pool: pl, typ: it.Labels}
			if allMatch(pool.Requirements, labels) {
				out = append(out, offerRef{ti, oi})
			}
		}
	}
	if s.domains != nil {
		s.domains.mu.Lock()
		if s.domains.offers == nil {
			s.domains.offers = map[string][]offerRef{}
		}
		s.domains.offers[key] = out
		s.domains.mu.Unlock()
	}
	return out
}

// offerCells are the offerings of a pool's types whose nodes, carrying
// given pool labels, meet the pool's requirements (poolOffers) and carry
// every one of some topology keys, each with the index in values of the
// keys' values there: the part of findCells that does not depend on the
// pod.
type offerCells struct {
	refs   []offerRef
	cell   []int // per entry of refs
	values [][]string
}

// poolCells is offerCells for pool pi, pool labels pl and keys,
// remembered as poolOffers is.
func (s *state) poolCells(pi int, pl map[string]string, keys []string) *offerCells {
	var key string
	if s.domains != nil {
		b := offersKey(pi, pl)
		for _, k := range keys {
			b = append(b, 2)
			b = append(b, k...)
		}
		key = string(b)
		s.domains.mu.Lock()
		out, ok := s.domains.cells[key]
		s.domains.mu.Unlock()
		if ok {
			return out
		}
	}
	types := s.p.PoolTypes(pi)
	out := &offerCells{}
	byValues := map[string]int{}
	values := make([]string, len(keys))
	for _, ref := range s.poolOffers(pi, pl) {
		it := &types[ref.typ]
		o := &it.Offerings[ref.offering]
		labels := &candidateLabels{zone: o.Zone, capacityType: o.CapacityType, pool: pl, typ: it.Labels}
		ok := true
		for i, k := range keys {
			if values[i], ok = labels.Label(k); !ok {
				break
			}
		}
		if !ok {
			continue
		}
		k := strings.Join(values, "\x00")
		ci, seen := byValues[k]
		if !seen {
			ci = len(out.values)
			byValues[k] = ci
			out.values = append(out.values, slices.Clone(values))
		}
		out.refs = append(out.refs, ref)
		out.cell = append(out.cell, ci)
	}
	if s.domains != nil {
		s.domains.mu.Lock()
		if s.domains.cells == nil {
			s.domains.cells = map[string]*offerCells{}
		}
		s.domains.cells[key] = out
		s.domains.mu.Unlock()
	}
	return out
}

// offersKey identifies pool pi with pool labels pl in the memo.
func offersKey(pi int, pl map[string]string) []byte {
	b := strconv.AppendInt(nil, int64(pi), 10)
	for _, k := range slices.Sorted(maps.Keys(pl)) {
		b = append(b, 0)
		b = append(b, k...)
		b = append(b, 1)
		b = append(b, pl[k]...)
	}
	return b
}

// keyVariants returns the pool labels pl once per combination of the
// values the pool may give those of keys it decides (poolKeyValues): pl
// itself when it decides none of them with several values.
func keyVariants(pool *Pool, pl map[string]string, keys []string) []map[string]string {
	out := []map[string]string{pl}
	for _, k := range keys {
		k = NormalizeLabelKey(k)
		vals := poolKeyValues(pool, k)
		if vals == nil {
			continue
		}
		next := make([]map[string]string, 0, len(out)*len(vals))
		for _, l := range out {
			for _, v := range vals {
				m := maps.Clone(l)
				m[k] = v
				next = append(next, m)
			}
		}
		out = next
	}
	return out
}

// jointKeys returns the keys (of keys, the hostname never among them) on
// which group g, represented by rep, carries a DoNotSchedule spread, when
// there are two or more and no zonal pod (anti-)affinity asks for the
// zone to be planned by its own rules; nil otherwise.
func (s *state) jointKeys(g int, rep *Pod, keys []string) []string {
	var out []string
	for _, k := range keys {
		if s.holdsSpreadOn(k, g) {
			out = append(out, k)
		}
	}
	if len(out) < 2 || slices.Contains(out, LabelZone) && s.zonalAffinity(rep) {
		return nil
	}
	return out
}

// zonalAffinity reports whether zonal pod affinity or anti-affinity,
// required or preferred, the pod's own or another's, concerns the pod.
func (s *state) zonalAffinity(rep *Pod) bool {
	zonal := func(ts []PodAffinityTerm) bool {
		return slices.ContainsFunc(ts, func(t PodAffinityTerm) bool { return t.TopologyKey == LabelZone })
	}
	if zonal(rep.PodAffinity) || zonal(rep.PodAntiAffinity) {
		return true
	}
	for _, pref := range rep.Preferences {
		if pref.PodTerm != nil && pref.PodTerm.TopologyKey == LabelZone {
			return true
		}
	}
	return s.inZoneAnti(rep)
}

// cellPlan is how a group's pods are split across the cells of several
// keys.
type cellPlan struct {
	cells  [][]string // values of the keys for each pod, in pod order; nil = refused
	reason string     // why refused pods are refused
}

// heldSpread is a spread constraint as the cell search reads it: the index
// of its key, and whether the group's pods match its selector (add to its
// counts).
type heldSpread struct {
	z     *zoneSpread
	key   int
	match bool
}

// cellSearch finds the longest sequence of cells, up to n, in which each
// pod's cell keeps every constraint it carries within its maxSkew when the
// pod is added (kube-scheduler's PodTopologySpread filter, pod by pod).
type cellSearch struct {
	cells   []cell
	carried []heldSpread // the constraints the pods are held to
	soft    []heldSpread // other pods' constraints that select them
	n       int
	used    []int // pods on each cell in the sequence being explored
	// best remembers, per state explored, how many more pods it can take
	// and through which cell (-1: none).
	best   map[string][2]int
	budget int
}

// cellBudget bounds the states a cell search explores beyond one per pod;
// past it, the best sequence found so far is kept.
const cellBudget = 20000

// add adds d pods (1, or -1 to take one back) to cell ci.
func (cs *cellSearch) add(ci, d int) {
	cs.used[ci] += d
	for _, h := range cs.carried {
		if h.match {
			h.z.counts[cs.cells[ci].values[h.key]] += d
		}
	}
}

// broken returns the first constraint the pod breaks in cell ci, or nil.
func (cs *cellSearch) broken(ci int) *zoneSpread {
	for _, h := range cs.carried {
		if h.z.skewAfter(cs.cells[ci].values[h.key], h.match) > int(max(h.z.c.MaxSkew, 1)) {
			return h.z
		}
	}
	return nil
}

// spreadsOnKeys returns the DoNotSchedule spreads on any of keys that
// hold the pods of group g (carried) and, of the others, those that count
// pods like rep (soft), each with its key's index in keys.
func (t *topology) spreadsOnKeys(keys []string, g int, rep *Pod) (carried, soft []heldSpread) {
	for _, z := range t.zoneSpreads {
		ki := slices.Index(keys, z.c.TopologyKey)
		if ki < 0 {
			continue
		}
		switch m := z.matches(rep); {
		case z.heldBy(g):
			carried = append(carried, heldSpread{z, ki, m})
		case m:
			soft = append(soft, heldSpread{z, ki, true})
		}
	}
	return carried, soft
}

// state identifies the counts the search has reached after depth pods.
func (cs *cellSearch) state(depth int) string {
	b := strconv.AppendInt(nil, int64(depth), 10)
	for _, h := range cs.carried {
		for _, d := range h.z.domains {
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(h.z.counts[d]), 10)
		}
	}
	return string(b)
}

// order lists the cells the next pod may take, best first: fewest other
// constraints pushed past their skew, then fewest matching pods already in
// its domains (water-filling), then one the pods already use, then the
// cheapest.
func (cs *cellSearch) order() []int {
	type cand struct {
		ci, soft, load int
		used           bool
	}
	var cands []cand
	for ci := range cs.cells {
		if cs.broken(ci) != nil {
			continue
		}
		c := cand{ci: ci, used: cs.used[ci] > 0}
		for _, h := range cs.carried {
			if h.match {
				c.load += h.z.counts[cs.cells[ci].values[h.key]]
			}
		}
		for _, h := range cs.soft {
			v := cs.cells[ci].values[h.key]
			if h.z.skewAfter(v, true) > int(max(h.z.c.MaxSkew, 1)) {
				c.soft++
			}
			c.load += h.z.counts[v]
		}
		cands = append(cands, c)
	}
	sort.SliceStable(cands, func(a, b int) bool {
		if cands[a].soft != cands[b].soft {
			return cands[a].soft < cands[b].soft
		}
		if cands[a].load != cands[b].load {
			return cands[a].load < cands[b].load
		}
		return cands[a].used && !cands[b].used
	})
	out := make([]int, len(cands))
	for i, c := range cands {
		out[i] = c.ci
	}
	return out
}

// longest returns how many more pods, after depth, the counts reached can
// take, remembering through which cell.
func (cs *cellSearch) longest(depth int) int {
	if depth == cs.n || cs.budget <= 0 {
		return 0
	}
	key := cs.state(depth)
	if got, ok := cs.best[key]; ok {
		return got[0]
	}
	cs.budget--
	best, via := 0, -1
	for _, ci := range cs.order() {
		cs.add(ci, 1)
		r := 1 + cs.longest(depth+1)
		cs.add(ci, -1)
		if r > best {
			best, via = r, ci
		}
		if best == cs.n-depth {
			break
		}
	}
	cs.best[key] = [2]int{best, via}
	return best
}

// planCells assigns each of the n pods of group g (represented by rep) to
// a cell of keys: the first n of the longest sequence cellSearch finds for
// a few more pods than n, counted in every constraint on those keys that
// selects the pods; the pods beyond it are refused.
func (s *state) planCells(g int, rep *Pod, n int, keys []string) cellPlan {
	plan := cellPlan{cells: make([][]string, n)}
	cells := s.findCells(rep, keys, domainFilter{taints: true, affinity: true, launchable: true})
	if len(cells) == 0 {
		plan.reason = fmt.Sprintf("its topology spreads on %s (DoNotSchedule) need a node carrying every one of those keys and no node it may use has them all", strings.Join(keys, ", "))
		return plan
	}
	ahead := len(cells) // pods looked for past the group's
	cs := &cellSearch{cells: cells, n: n + ahead, used: make([]int, len(cells)), best: map[string][2]int{}, budget: n + ahead + cellBudget}
	cs.carried, cs.soft = s.spreadsOnKeys(keys, g, rep)
	cs.longest(0)
	i := 0
	for ; i < n; i++ {
		got, ok := cs.best[cs.state(i)]
		if !ok || got[1] < 0 {
			break
		}
		plan.cells[i] = cells[got[1]].values
		cs.add(got[1], 1)
		for _, h := range cs.soft {
			h.z.counts[cells[got[1]].values[h.key]]++
		}
	}
	if i < n {
		plan.reason = cs.reason(keys)
	}
	return plan
}

// reason says why no further pod has a cell: the constraint each cell
// would break, the cheapest cell's first.
func (cs *cellSearch) reason(keys []string) string {
	var parts []string
	for ci := range cs.cells {
		z := cs.broken(ci)
		if z == nil {
			continue
		}
		part := fmt.Sprintf("on %s (maxSkew %d)", z.c.TopologyKey, max(z.c.MaxSkew, 1))
		if !slices.Contains(parts, part) {
			parts = append(parts, part)
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("its topology spreads on %s (DoNotSchedule) cannot all hold for it: no order of its pods reaches it", strings.Join(keys, " and "))
	}
	return fmt.Sprintf("its topology spreads on %s (DoNotSchedule) cannot all hold for it: every node it may use would break its spread %s", strings.Join(keys, " and "), strings.Join(parts, " or "))
}
