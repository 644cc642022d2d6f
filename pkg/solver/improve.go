package solver

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// Local improvement of a packing: every node moves to the cheapest kind that
// holds its pods (downsize), then pairs of poorly used nodes are merged onto
// one node when one node costs less than the two, then pods move from dearer
// nodes into cheaper nodes' free room and every node downsizes again
// (backfill).

// takesReq sums what the takes request.
func (s *state) takesReq(takes []take) Resources {
	var req Resources
	for _, t := range takes {
		req = req.Add(s.classes[t.class].req.Scale(int64(t.n)))
	}
	return req
}

// holds reports whether one node of kind k may run the takes: every class
// may run there, they fit, per-node caps hold and no two conflict.
func (s *state) holds(k *kind, takes []take, req Resources) bool {
	return req.Fits(k.alloc) && s.admitsAll(k, takes) && s.togetherOnNode(takes)
}

// admitsAll reports whether every class of the takes may run on kind k.
func (s *state) admitsAll(k *kind, takes []take) bool {
	for _, t := range takes {
		if !k.compat.has(s.classes[t.class].group) {
			return false
		}
	}
	return true
}

// togetherOnNode reports whether the takes may share one node, whatever
// its kind: per-node caps hold and no two conflict.
func (s *state) togetherOnNode(takes []take) bool {
	defer s.resetCaps(takes)
	for i, t := range takes {
		if t.n > s.capRoom(t.class) || s.conflictsWith(t.class, takes[:i]) {
			return false
		}
		s.countCap(t.class, t.n)
	}
	return true
}

// cheapestHolding returns the cheapest kind of a pool with the given weight
// that holds count nodes' worth of takes within its pool's limits, given
// capacity freed per pool, and costs less than below; -1 when none.
func (s *state) cheapestHolding(takes []take, count int, weight int32, freed []Resources, below float64) int {
	req := s.takesReq(takes)
	// s.kinds is sorted by price (pruneDominated), and so is every class's
	// list of the kinds it may run on, so the first kind that qualifies is
	// the cheapest. Only the kinds on the shortest such list of the takes'
	// classes can hold them all.
	together := 0 // togetherOnNode(takes), once known: 1 yes, -1 no
	for _, ki := range s.shortestKinds(takes) {
		k := s.kinds[ki]
		if k.price >= below {
			break
		}
		if s.p.Pools[k.pool].Weight != weight || !req.Fits(k.alloc) || !s.admitsAll(k, takes) {
			continue
		}
		if together == 0 {
			together = -1
			if s.togetherOnNode(takes) {
				together = 1
			}
		}
		if together < 0 {
			return -1 // no kind holds them
		}
		after := s.used[k.pool].Sub(freed[k.pool]).Add(s.p.PoolTypes(k.pool)[k.typ].Capacity.Scale(int64(count)))
		if !withinLimits(&s.p.Pools[k.pool], after) {
			continue
		}
		return ki
	}
	return -1
}

// shortestKinds returns the shortest list of kinds a class of takes may
// run on (every kind when there are no takes).
func (s *state) shortestKinds(takes []take) []int {
	if len(takes) == 0 {
		all := make([]int, len(s.kinds))
		for i := range all {
			all[i] = i
		}
		return all
	}
	list := s.classes[takes[0].class].kinds
	for _, t := range takes[1:] {
		if l := s.classes[t.class].kinds; len(l) < len(list) {
			list = l
		}
	}
	return list
}

// moveTo switches count nodes from kind from to kind to in the pools' usage.
func (s *state) moveTo(from, to, count int) {
	a, b := s.kinds[from], s.kinds[to]
	s.used[a.pool] = s.used[a.pool].Sub(s.p.PoolTypes(a.pool)[a.typ].Capacity.Scale(int64(count)))
	s.used[b.pool] = s.used[b.pool].Add(s.p.PoolTypes(b.pool)[b.typ].Capacity.Scale(int64(count)))
}

// downsize moves every planned node to the cheapest kind that still holds its
// pods, is allowed for all of them and stays within the pool's limits.
func (s *state) downsize(deadline stopAt) {
	freed := make([]Resources, len(s.p.Pools))
	for ni := range s.nodes {
		if expired(deadline) {
			return
		}
		n := &s.nodes[ni]
		cur := s.kinds[n.kind]
		freed[cur.pool] = s.p.PoolTypes(cur.pool)[cur.typ].Capacity.Scale(int64(n.count))
		if best := s.cheapestHolding(n.takes, n.count, s.p.Pools[cur.pool].Weight, freed, cur.price); best >= 0 {
			s.moveTo(n.kind, best, n.count)
			n.kind = best
		}
		freed[cur.pool] = Resources{}
	}
}

// stopAt is when a solve stops: its deadline and its cancellation (see
// Options.Deadline and Options.Done).
type stopAt struct {
	deadline time.Time
	done     <-chan struct{}
}

// stopAt returns the options' deadline and cancellation.
func (o *Options) stopAt() stopAt { return stopAt{o.Deadline, o.Done} }

// expired reports whether the deadline has passed or the solve was
// cancelled: anytime loops then stop and keep what they have.
func expired(t stopAt) bool {
	return t.canceled() || (!t.deadline.IsZero() && time.Now().After(t.deadline))
}

// canceled reports whether the solve was cancelled: its plan is discarded.
func (t stopAt) canceled() bool {
	if t.done == nil {
		return false
	}
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// errCanceled is the error Solve and Consolidate return when Options.Done
// is closed before they finish: it wraps context.Canceled.
func errCanceled(what string) error {
	return fmt.Errorf("%s: cancelled: %w", what, context.Canceled)
}

// mergeCandidates bounds the pairs merge tries: each of the worst-used nodes
// against its next few.
const mergeCandidates, mergePartners = 400, 40

// mergePairs merges two planned nodes onto one cheaper node while it finds
// such a pair among the nodes with the least pod value per dollar.
func (s *state) mergePairs(deadline stopAt) {
	nodes := s.singleNodes()
	use := func(n *plannedNode) float64 {
		v := 0.0
		for _, t := range n.takes {
			v += float64(t.n) * s.classes[t.class].value
		}
		return v / math.Max(s.kinds[n.kind].price, 1e-9)
	}
	freed := make([]Resources, len(s.p.Pools))
	for improved := true; improved && !expired(deadline); {
		improved = false
		order := make([]int, len(nodes))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return use(&nodes[order[a]]) < use(&nodes[order[b]]) })
		if len(order) > mergeCandidates {
			order = order[:mergeCandidates]
		}
		dead := make([]bool, len(nodes))
		for x, i := range order {
			if dead[i] || expired(deadline) {
				continue
			}
			for _, j := range order[x+1 : min(len(order), x+1+mergePartners)] {
				if dead[j] || dead[i] {
					continue
				}
				a, b := &nodes[i], &nodes[j]
				ka, kb := s.kinds[a.kind], s.kinds[b.kind]
				if s.p.Pools[ka.pool].Weight != s.p.Pools[kb.pool].Weight {
					continue
				}
				merged := mergeTakes(a.takes, b.takes)
				freed[ka.pool] = freed[ka.pool].Add(s.p.PoolTypes(ka.pool)[ka.typ].Capacity)
				freed[kb.pool] = freed[kb.pool].Add(s.p.PoolTypes(kb.pool)[kb.typ].Capacity)
				best := s.cheapestHolding(merged, 1, s.p.Pools[ka.pool].Weight, freed, ka.price+kb.price-1e-9)
				freed[ka.pool], freed[kb.pool] = Resources{}, Resources{}
				if best < 0 {
					continue
				}
				s.used[ka.pool] = s.used[ka.pool].Sub(s.p.PoolTypes(ka.pool)[ka.typ].Capacity)
				s.used[kb.pool] = s.used[kb.pool].Sub(s.p.PoolTypes(kb.pool)[kb.typ].Capacity)
				k := s.kinds[best]
				s.used[k.pool] = s.used[k.pool].Add(s.p.PoolTypes(k.pool)[k.typ].Capacity)
				*a = plannedNode{kind: best, takes: merged, count: 1}
				dead[j] = true
				improved = true
			}
		}
		kept := nodes[:0]
		for i, n := range nodes {
			if !dead[i] {
				kept = append(kept, n)
			}
		}
		nodes = kept
	}
	s.nodes = nodes
}

// mergeTakes adds two nodes' takes class by class, in class order.
func mergeTakes(a, b []take) []take {
	out := slices.Clone(a)
	for _, t := range b {
		found := false
		for i := range out {
			if out[i].class == t.class {
				out[i].n += t.n
				found = true
				break
			}
		}
		if !found {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].class < out[j].class })
	return out
}

// smallestReq returns, resource by resource, the smallest request among
// the classes of takes (the largest value when there are none).
func (s *state) smallestReq(takes []take) Resources {
	var out Resources
	for r := range out {
		out[r] = math.MaxInt64
	}
	for _, t := range takes {
		out = minResources(out, s.classes[t.class].req)
	}
	return out
}

// takeShape is the CPU and memory a take's class requests and its
// constraint group, which decide most of the time that it cannot move to a
// host, and the take's position among its node's takes.
type takeShape struct {
	cpu, memory int64
	group       int
	at          int
}

// takeShapes returns the shapes of the takes that have pods, in their order.
func (s *state) takeShapes(takes []take) []takeShape {
	out := make([]takeShape, 0, len(takes))
	for i, t := range takes {
		if t.n > 0 {
			c := s.classes[t.class]
			out = append(out, takeShape{c.req[CPU], c.req[Memory], c.group, i})
		}
	}
	return out
}

// dropEmpty removes takes of no pods.
func dropEmpty(takes []take) []take {
	return slices.DeleteFunc(takes, func(t take) bool { return t.n == 0 })
}

// minResources returns the smaller of a and b resource by resource.
func minResources(a, b Resources) Resources {
	for r := range a {
		a[r] = min(a[r], b[r])
	}
	return a
}

// donorBlock is how many donors, in price order, backfill passes over at
// once when a host has no room for the smallest request among them.
const donorBlock = 32

// superBlock is how many donors a super-block of donorBlock blocks spans.
const superBlock = donorBlock * donorBlock

// backfill moves pods from dearer nodes into the free room of cheaper ones
// of the same pool weight, cheapest hosts first, dearest donors first, then
// moves every node to the cheapest kind that holds what it kept and drops
// nodes left empty. It matters when some pods need nodes of their own
// (hostname anti-affinity, spread): the greedy launches their nodes last,
// one pod each, after the other pods filled large nodes, and the room
// those small nodes have left can take pods the large ones then shed.
// A pod moves only where its class may run, within per-node caps and
// conflicts, and only to a strictly cheaper node, so no pod moves back.
func (s *state) backfill(deadline stopAt) {
	nodes := s.singleNodes()
	if len(nodes) < 2 {
		return
	}
	free := make([]Resources, len(nodes))
	for i, n := range nodes {
		free[i] = s.kinds[n.kind].alloc.Sub(s.takesReq(n.takes))
	}
	ix := s.newDonorIndex(nodes)
	moved := false
	for _, hi := range ix.byPrice {
		if expired(deadline) {
			break
		}
		if s.backfillHost(nodes, free, ix, hi) {
			moved = true
		}
	}
	if !moved {
		return
	}
	s.nodes = s.dropEmptyNodes(nodes)
	s.downsize(deadline)
}

// donorIndex is what backfill knows of its nodes before it moves a pod.
// A node donates only before its own turn as a host (donors are dearer
// than their host) and only loses pods then, so the indexes built from its
// takes stay valid while it donates: smallest[x], the smallest request per
// resource of node byPrice[x]'s classes, lets a host skip a donor it has no
// room for at once, and shapes[x] holds the CPU, memory and constraint
// group of each take with pods, side by side, in the takes' order, so that
// a host passes over the takes it has no room for, or may not run, without
// visiting their classes (at 20,000 pods of Karpenter's mix: 7,315
// classes, most of them of one pod, up to some 64 on a node). Takes a
// donor gave away stay as zero counts until its turn as a host so that
// positions hold. minReq, the smallest request of all, ends a host's scan
// once it has no room left.
type donorIndex struct {
	// byPrice holds the nodes' indexes, cheapest kind first.
	byPrice []int
	// smallest is the smallest request per resource of each position's
	// classes.
	smallest []Resources
	// shapes is built lazily, the first time a host scans the donor.
	shapes [][]takeShape
	// minReq is the smallest request of all.
	minReq Resources
	// blockMin[b] is the smallest request per resource of the donors at
	// positions b·donorBlock … (b+1)·donorBlock−1: a host with no room for
	// it has room for none of them, and since its room only shrinks while
	// it scans, it passes over the whole block at once. The scan stays
	// quadratic only in blocks, not in nodes (4,000 nodes at 20,000 pods
	// of Karpenter's mix).
	blockMin []Resources
	// superMin is blockMin again over donorBlock blocks at a time: at
	// 23,871 pods of Alibaba's DLRM trace on every type (16,000 nodes,
	// most with some room) the block scan alone took half the solve.
	superMin []Resources
}

// newDonorIndex orders the nodes by price and computes their smallest
// requests, alone, by block and by super-block.
func (s *state) newDonorIndex(nodes []plannedNode) *donorIndex {
	byPrice := make([]int, len(nodes))
	for i := range byPrice {
		byPrice[i] = i
	}
	sort.SliceStable(byPrice, func(a, b int) bool {
		return s.kinds[nodes[byPrice[a]].kind].price < s.kinds[nodes[byPrice[b]].kind].price
	})
	ix := &donorIndex{
		byPrice:  byPrice,
		smallest: make([]Resources, len(byPrice)),
		shapes:   make([][]takeShape, len(byPrice)),
		minReq:   s.smallestReq(nil),
	}
	for x, i := range byPrice {
		ix.smallest[x] = s.smallestReq(nodes[i].takes)
		ix.minReq = minResources(ix.minReq, ix.smallest[x])
	}
	ix.blockMin = s.blockMins(ix.smallest)
	ix.superMin = s.blockMins(ix.blockMin)
	return ix
}

// blockMins returns, for every run of donorBlock entries of mins, their
// smallest request per resource.
func (s *state) blockMins(mins []Resources) []Resources {
	out := make([]Resources, (len(mins)+donorBlock-1)/donorBlock)
	for b := range out {
		out[b] = s.smallestReq(nil)
		for x := b * donorBlock; x < min((b+1)*donorBlock, len(mins)); x++ {
			out[b] = minResources(out[b], mins[x])
		}
	}
	return out
}

// backfillHost moves into node hi what it has room for from the dearer
// nodes of its pool weight, dearest first, and reports whether a pod moved.
func (s *state) backfillHost(nodes []plannedNode, free []Resources, ix *donorIndex, hi int) bool {
	h := &nodes[hi]
	h.takes = dropEmpty(h.takes)
	kh := s.kinds[h.kind]
	weight := s.p.Pools[kh.pool].Weight
	// Donors no dearer than the host end the scan: it stops above them
	// (lo, by binary search over the price order). A block or super-block
	// is tested as the scan enters it: the host's room only shrinks, so a
	// donor it passes while the test is stale is one whose own smallest
	// request does not fit either.
	lo := sort.Search(len(ix.byPrice), func(x int) bool { return s.kinds[nodes[ix.byPrice[x]].kind].price > kh.price })
	enteredBlock, enteredSuper := -1, -1
	moved := false
	for x := len(ix.byPrice) - 1; x >= lo && ix.minReq.Fits(free[hi]); x-- {
		if sb := x / superBlock; sb != enteredSuper {
			enteredSuper = sb
			if !ix.superMin[sb].Fits(free[hi]) {
				x = sb * superBlock
				continue
			}
		}
		if b := x / donorBlock; b != enteredBlock {
			enteredBlock = b
			if !ix.blockMin[b].Fits(free[hi]) {
				// Skipped donors would each have been passed over.
				x = b * donorBlock
				continue
			}
		}
		di := ix.byPrice[x]
		kd := s.kinds[nodes[di].kind]
		if kd.price <= kh.price {
			break
		}
		if !ix.smallest[x].Fits(free[hi]) || s.p.Pools[kd.pool].Weight != weight {
			continue
		}
		if ix.shapes[x] == nil {
			ix.shapes[x] = s.takeShapes(nodes[di].takes)
		}
		if s.takeFromDonor(nodes, free, &ix.shapes[x], hi, di) {
			moved = true
		}
	}
	return moved
}

// takeFromDonor moves into node hi as many pods of donor di's takes as
// its room, the classes' per-node caps and conflicts allow, and reports
// whether a pod moved. Takes the donor gives away entirely leave shapes,
// so that later hosts need not pass over them.
func (s *state) takeFromDonor(nodes []plannedNode, free []Resources, shapes *[]takeShape, hi, di int) bool {
	h, d := &nodes[hi], &nodes[di]
	kh := s.kinds[h.kind]
	moved := false
	for si := 0; si < len(*shapes); si++ {
		sh := &(*shapes)[si]
		if sh.cpu > free[hi][CPU] || sh.memory > free[hi][Memory] || !kh.compat.has(sh.group) {
			continue
		}
		t := &d.takes[sh.at]
		c := s.classes[t.class]
		if !c.req.Fits(free[hi]) || s.conflictsWith(t.class, h.takes) {
			continue
		}
		n := min(t.n, fitCount(free[hi], c.req), s.capRoomOn(t.class, nil, h.takes))
		if n <= 0 {
			continue
		}
		t.n -= n
		if t.n == 0 {
			*shapes = slices.Delete(*shapes, si, si+1)
			si--
		}
		h.takes = mergeTakes(h.takes, []take{{t.class, n}})
		free[hi] = free[hi].Sub(c.req.Scale(int64(n)))
		free[di] = free[di].Add(c.req.Scale(int64(n)))
		moved = true
	}
	return moved
}

// dropEmptyNodes returns the nodes that kept a pod, giving the capacity of
// the others back to their pools.
func (s *state) dropEmptyNodes(nodes []plannedNode) []plannedNode {
	kept := nodes[:0]
	for _, n := range nodes {
		n.takes = dropEmpty(n.takes)
		if len(n.takes) == 0 {
			k := s.kinds[n.kind]
			s.used[k.pool] = s.used[k.pool].Sub(s.p.PoolTypes(k.pool)[k.typ].Capacity)
			continue
		}
		kept = append(kept, n)
	}
	return kept
}
