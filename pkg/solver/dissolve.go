package solver

import (
	"math"
	"slices"
	"sort"
)

// dissolveDonors bounds the nodes dissolve tries to empty (the cheapest
// first), dissolvePartners the nodes each batch of a donor's pods may go
// to, alone or in pairs, and dissolveSteps the batches one donor may take.
const dissolveDonors, dissolvePartners, dissolveSteps = 200, 10, 12

// dissolvePods bounds the pods of a node dissolve tries to empty.
const dissolvePods = 32

// podCount is how many pods takes hold.
func podCount(takes []take) int {
	n := 0
	for _, t := range takes {
		n += t.n
	}
	return n
}

// dissolve empties planned nodes whose pods the other planned nodes can
// take for less than the node costs. A donor's pods go, a batch at a
// time, wherever the batch adds least per pod: into another node's free
// room, onto another node moved to a larger kind, or onto one node that
// replaces two others; the donor goes when all its pods found a place for
// less, in all, than its price, and nothing changes otherwise.
//
// It takes what single moves (mergePairs, backfill) cannot: with large
// pods that each fill most of a small node and small pods packed on
// nodes of their own (Karpenter's "should pack small and large pods
// together"), merging two large pods' nodes onto one node of twice the
// size, with room for one small pod, is cost-neutral; only the last of a
// donor's small pods makes the chain pay.
//
// It leaves plans with topology rules alone: on the kube-scheduler judge's
// 220 problems, moving pods there after the packing left one pod pending
// that the later passes (enforceSpread, placePending) placed without it.
func (s *state) dissolve(deadline stopAt) {
	if s.hasTopology {
		return
	}
	nodes := s.singleNodes()
	if len(nodes) < 3 {
		return
	}
	d := &dissolver{s: s, nodes: nodes, req: make([]Resources, len(nodes)), alive: make([]bool, len(nodes)), freed: make([]Resources, len(s.p.Pools))}
	for i := range nodes {
		d.req[i] = s.takesReq(nodes[i].takes)
		d.alive[i] = true
	}
	d.byPrice = make([]int, len(nodes))
	for i := range d.byPrice {
		d.byPrice[i] = i
	}
	sort.SliceStable(d.byPrice, func(a, b int) bool {
		return s.kinds[nodes[d.byPrice[a]].kind].price < s.kinds[nodes[d.byPrice[b]].kind].price
	})
	changed := false
	for x, donor := range d.byPrice {
		if x == dissolveDonors || expired(deadline) {
			break
		}
		// Each step moves pods of one take: a donor of more takes than
		// steps cannot be emptied; nor, in practice, one of many pods,
		// whose try costs most (suite a-plain: some 600 pods a node).
		if d.alive[donor] && len(nodes[donor].takes) <= dissolveSteps && podCount(nodes[donor].takes) <= dissolvePods && d.empty(donor) {
			changed = true
		}
	}
	if !changed {
		return
	}
	kept := nodes[:0]
	for i, n := range nodes {
		if d.alive[i] {
			kept = append(kept, n)
		}
	}
	s.nodes = kept
}

// singleNodes returns the planned nodes one copy each, their takes cloned.
func (s *state) singleNodes() []plannedNode {
	var nodes []plannedNode
	for _, n := range s.nodes {
		for range n.count {
			nodes = append(nodes, plannedNode{kind: n.kind, takes: slices.Clone(n.takes), count: 1})
		}
	}
	return nodes
}

// dissolver is one dissolve pass: single planned nodes, what each
// requests, which are still planned, and the nodes by price.
type dissolver struct {
	s       *state
	nodes   []plannedNode
	req     []Resources
	alive   []bool
	byPrice []int
	freed   []Resources // scratch for cheapestHolding
	buf     []take      // scratch for with
	undo    []dissolveUndo
}

// dissolveUndo is a node as it was before a tentative move.
type dissolveUndo struct {
	i     int
	node  plannedNode
	req   Resources
	alive bool
}

// home is where a batch of a donor's pods may go: onto node a (and b,
// when b >= 0, merged with it) as kind, n pods, adding cost.
type home struct {
	a, b, kind, n int
	cost          float64
}

// empty moves every pod of node donor elsewhere if that costs less than
// the donor, and reports whether it did; otherwise it leaves every node
// and the pools' usage as they were.
func (d *dissolver) empty(donor int) bool {
	s := d.s
	kd := s.kinds[d.nodes[donor].kind]
	weight := s.p.Pools[kd.pool].Weight
	used := slices.Clone(s.used)
	d.undo = d.undo[:0]
	d.save(donor)
	d.alive[donor] = false
	s.used[kd.pool] = s.used[kd.pool].Sub(s.p.PoolTypes(kd.pool)[kd.typ].Capacity)
	slack := kd.price - 1e-9
	takes := slices.Clone(d.nodes[donor].takes)
	// The largest pods first: they have the fewest places to go.
	sort.SliceStable(takes, func(a, b int) bool {
		return share(s.classes[takes[a].class].req, kd.alloc) > share(s.classes[takes[b].class].req, kd.alloc)
	})
	steps, pods := 0, 0
	for _, t := range takes {
		pods += t.n
	}
	for _, t := range takes {
		for left := t.n; left > 0; {
			steps++
			if steps > dissolveSteps {
				d.rollback(used)
				return false
			}
			h, ok := d.bestHome(donor, t.class, left, weight, slack)
			if !ok {
				d.rollback(used)
				return false
			}
			d.apply(h, t.class)
			slack -= h.cost
			left -= h.n
			pods -= h.n
			// Give up when the donor's other pods, at this step's cost
			// per pod, would use the rest of the slack.
			if h.cost > 0 && h.cost/float64(h.n)*float64(pods) >= slack {
				d.rollback(used)
				return false
			}
		}
	}
	return true
}

// save records node i before a tentative move changes it.
func (d *dissolver) save(i int) {
	d.undo = append(d.undo, dissolveUndo{i, d.nodes[i], d.req[i], d.alive[i]})
}

// rollback restores every node saved since the donor's attempt began, and
// the pools' usage.
func (d *dissolver) rollback(used []Resources) {
	for x := len(d.undo) - 1; x >= 0; x-- {
		u := d.undo[x]
		d.nodes[u.i], d.req[u.i], d.alive[u.i] = u.node, u.req, u.alive
	}
	copy(d.s.used, used)
}

// apply moves h.n pods of class ci to h.
func (d *dissolver) apply(h home, ci int) {
	s := d.s
	add := []take{{ci, h.n}}
	d.save(h.a)
	a := &d.nodes[h.a]
	takes := mergeTakes(a.takes, add)
	req := d.req[h.a].Add(s.classes[ci].req.Scale(int64(h.n)))
	if h.b >= 0 {
		d.save(h.b)
		takes = mergeTakes(takes, d.nodes[h.b].takes)
		req = req.Add(d.req[h.b])
		d.alive[h.b] = false
		d.release(d.nodes[h.b].kind)
	}
	if h.kind != a.kind {
		d.release(a.kind)
		k := s.kinds[h.kind]
		s.used[k.pool] = s.used[k.pool].Add(s.p.PoolTypes(k.pool)[k.typ].Capacity)
	}
	*a = plannedNode{kind: h.kind, takes: takes, count: 1}
	d.req[h.a] = req
}

// release takes one node of kind ki out of its pool's usage.
func (d *dissolver) release(ki int) {
	s := d.s
	k := s.kinds[ki]
	s.used[k.pool] = s.used[k.pool].Sub(s.p.PoolTypes(k.pool)[k.typ].Capacity)
}

// bestHome finds, among the cheapest planned nodes that could take a pod
// of class ci besides what they hold, the place for up to left such pods
// that adds least per pod and less than slack in all.
func (d *dissolver) bestHome(donor, ci, left int, weight int32, slack float64) (home, bool) {
	s := d.s
	c := s.classes[ci]
	var most Resources // the largest allocatable of any kind c fits
	for _, ki := range c.kinds {
		most = maxResources(most, s.kinds[ki].alloc)
	}
	if len(c.kinds) == 0 {
		return home{}, false
	}
	var partners []int
	for _, i := range d.byPrice {
		if len(partners) == dissolvePartners {
			break
		}
		k := s.kinds[d.nodes[i].kind]
		if i == donor || !d.alive[i] || s.p.Pools[k.pool].Weight != weight || !d.req[i].Add(c.req).Fits(most) {
			continue
		}
		partners = append(partners, i)
	}
	best, bestPer := home{}, math.Inf(1)
	consider := func(h home) {
		if per := h.cost / float64(h.n); per < bestPer {
			best, bestPer = h, per
		}
	}
	for x, i := range partners {
		n := &d.nodes[i]
		k := s.kinds[n.kind]
		if m := d.fits(n.kind, d.req[i], ci, left, n.takes); m > 0 {
			return home{a: i, b: -1, kind: n.kind, n: m}, true // free room costs nothing
		}
		if s.mayFit(c.kinds, d.req[i].Add(c.req), k.price+slack) {
			d.freed[k.pool] = s.p.PoolTypes(k.pool)[k.typ].Capacity
			if ki := s.cheapestHolding(d.with(ci, 1, n.takes), 1, weight, d.freed, k.price+slack); ki >= 0 {
				consider(home{a: i, b: -1, kind: ki, n: d.fits(ki, d.req[i], ci, left, n.takes), cost: s.kinds[ki].price - k.price})
			}
			d.freed[k.pool] = Resources{}
		}
		for _, j := range partners[x+1:] {
			m := &d.nodes[j]
			km := s.kinds[m.kind]
			req := d.req[i].Add(d.req[j])
			if !s.mayFit(c.kinds, req.Add(c.req), k.price+km.price+slack) {
				continue
			}
			d.freed[k.pool] = s.p.PoolTypes(k.pool)[k.typ].Capacity
			d.freed[km.pool] = d.freed[km.pool].Add(s.p.PoolTypes(km.pool)[km.typ].Capacity)
			ki := s.cheapestHolding(d.with(ci, 1, n.takes, m.takes), 1, weight, d.freed, k.price+km.price+slack)
			d.freed[k.pool], d.freed[km.pool] = Resources{}, Resources{}
			if ki >= 0 {
				consider(home{a: i, b: j, kind: ki, n: d.fits(ki, req, ci, left, n.takes, m.takes), cost: s.kinds[ki].price - k.price - km.price})
			}
		}
	}
	if bestPer == math.Inf(1) || best.cost >= slack {
		return home{}, false
	}
	// The scratch lists stood for the merged takes; judge those too.
	takes := mergeTakes(d.nodes[best.a].takes, []take{{ci, best.n}})
	req := d.req[best.a].Add(c.req.Scale(int64(best.n)))
	if best.b >= 0 {
		takes = mergeTakes(takes, d.nodes[best.b].takes)
		req = req.Add(d.req[best.b])
	}
	return best, s.holds(s.kinds[best.kind], takes, req)
}

// fits returns how many pods of class ci, up to left, a node of kind ki
// holding the takes of lists (requesting req) may take besides; 0 when
// none.
func (d *dissolver) fits(ki int, req Resources, ci, left int, lists ...[]take) int {
	s := d.s
	k := s.kinds[ki]
	c := s.classes[ci]
	m := min(left, fitCount(k.alloc.Sub(req), c.req))
	for ; m > 0; m /= 2 {
		if s.holds(k, d.with(ci, m, lists...), req.Add(c.req.Scale(int64(m)))) {
			return m
		}
	}
	return 0
}

// with returns, in scratch space valid until its next call, the takes of
// lists and n pods of class ci. A class may appear more than once: holds
// and cheapestHolding count its caps take by take, so the list stands
// for the merged takes without the cost of merging them.
func (d *dissolver) with(ci, n int, lists ...[]take) []take {
	d.buf = d.buf[:0]
	for _, l := range lists {
		d.buf = append(d.buf, l...)
	}
	d.buf = append(d.buf, take{ci, n})
	return d.buf
}

// mayFit reports whether a kind of list (sorted by price) cheaper than
// below has room for req: a quick test before cheapestHolding's.
func (s *state) mayFit(list []int, req Resources, below float64) bool {
	for _, ki := range list {
		k := s.kinds[ki]
		if k.price >= below {
			return false
		}
		if req.Fits(k.alloc) {
			return true
		}
	}
	return false
}

// maxResources returns the larger of a and b resource by resource.
func maxResources(a, b Resources) Resources {
	for r := range a {
		a[r] = max(a[r], b[r])
	}
	return a
}
