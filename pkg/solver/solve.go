package solver

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// class is a set of pods that are interchangeable for placement: the same
// requests and the same scheduling constraints.
type class struct {
	pods  []int // indices into Problem.Pods
	req   Resources
	group int     // index into state.groups (the constraints)
	value float64 // dollars per hour the pod costs on its best node, fluidly
	// kinds lists the candidate kinds the class fits, by index; pools
	// groups them by pool, highest weight first.
	kinds []int
	pools []poolKinds
	// caps are the per-node cap groups (hostname spread and
	// anti-affinity) the class counts in or is limited by; conflicts lists
	// classes it may not share a node with; refused, when set, is why no
	// node may take it.
	caps      []capMember
	conflicts []int
	refused   string
	// bundle marks a class of a group whose required hostname affinity
	// selects its own pods: all of them go on one new node (planBundles).
	bundle bool
	// fit numbers the class's node constraints and requests: classes with
	// the same fit may run on, and fit, the same kinds (see buildKinds).
	fit int
}

// group is a set of pods with identical scheduling constraints; rep is one of
// them, with its node-affinity preferences applied once topology is; orig
// is rep before them (topology spread domains never depend on preferences).
type group struct {
	rep, orig *Pod
	from      int // 1 + the group a zone share was split from; 0 for none
}

// kind is a candidate node: an instance type bought through one offering in
// one pool. Offerings that no class can tell apart are merged into the
// cheapest.
type kind struct {
	pool, typ, offering int
	price               float64
	alloc               Resources         // allocatable minus DaemonSet overhead
	compat              bitset            // groups that may run on it
	labels              map[string]string // values the pool leaves open (see NewNode.Labels)
	order               []int             // compatible classes in fill order
	// buckets group the entries of order by requests and value, the
	// inputs of fillBalanced's score (see shapeBuckets).
	buckets []shapeBucket
	// dims is 1 + the last resource alloc or a bucket's requests has:
	// past it both are zero (see fillDims).
	dims int
	// ties are the merged offerings as cheap as offering (it included):
	// emit spreads the kind's nodes over their zones, which costs nothing.
	ties []int
	// reservation is 1 + the index in state.reservations of the capacity
	// reservation the kind draws on; 0 for none.
	reservation int
}

// classShape is a class's requests relative to one kind's allocatable.
type classShape struct {
	norm        Resources64
	length, max float64
}

type bitset []uint64

func newBitset(n int) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) set(i int)      { b[i/64] |= 1 << (uint(i) % 64) }
func (b bitset) has(i int) bool { return b[i/64]&(1<<(uint(i)%64)) != 0 }
func (b bitset) key() string {
	buf := make([]byte, 0, 8*len(b))
	for _, w := range b {
		buf = binary.LittleEndian.AppendUint64(buf, w)
	}
	return string(buf)
}
func (b bitset) subsetOf(o bitset) bool {
	for i := range b {
		if b[i]&^o[i] != 0 {
			return false
		}
	}
	return true
}
func (b bitset) empty() bool {
	for _, w := range b {
		if w != 0 {
			return false
		}
	}
	return true
}

// state is one solve in progress.
type state struct {
	p       *Problem
	classes []*class
	groups  []group
	kinds   []*kind
	rem     []int       // pods of each class still to place
	used    []Resources // per pool: capacity of existing and planned nodes
	plan    Plan
	// nodes are planned nodes as (kind, pods taken per class).
	nodes []plannedNode
	// start is, per class, the first pod not placed on an existing node.
	start []int
	// reasons explains, per class, why its pods cannot be placed.
	reasons map[int]string
	// topology is the bookkeeping of spreads, pod (anti-)affinity and
	// caps.
	topology
	// filler is the node filler's scratch space and counters.
	filler
	// derived are numbers and answers derived from the problem.
	derived
	// reserved are the capacity reservations and their kinds.
	reserved reservations
}

type plannedNode struct {
	kind  int
	takes []take
	count int // identical copies
}

type take struct{ class, n int }

// Solve plans the cheapest set of new nodes it can find for the problem's
// pods, after using existing nodes' free capacity, and explains every pod it
// cannot place. It never modifies the problem.
func Solve(p *Problem) (*Plan, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	ordered, orig := p.inPlanningOrder()
	if ordered.Options.Resume != nil {
		q := *ordered // solve sets its options from the Resume
		ordered = &q
	}
	plan, facets := ordered.solve()
	plan = ordered.narrowerIfCheaper(plan, facets)
	if plan == nil || p.Options.stopAt().canceled() {
		return nil, errCanceled("planning")
	}
	if orig != nil {
		plan.toCallerIndices(orig)
	}
	return plan, nil
}

// solve is Solve on a valid problem whose pods are in planning order. It
// also returns the facets of the kinds the pods may use (see facetsOf).
// Held at Options.Resume, it sets p's Packing and Deadline from the
// Resume it receives, and returns a nil plan when cancelled meanwhile.
func (p *Problem) solve() (*Plan, facetValues) {
	s := &state{p: resolveNamespaces(p.normalized()), derived: derived{domains: &domainMemo{seen: map[string][]string{}}}}
	s.buildClasses()
	s.buildKinds()
	s.placeOnExisting()
	s.explainInfeasible()
	facets := s.facetsOf()
	bundles := s.planBundles()
	reserved := s.planReserved()
	pending := slices.Clone(s.rem)
	for ci, c := range s.classes {
		if len(c.kinds) == 0 {
			pending[ci] = 0
		}
	}
	var bound float64
	var approx bool
	var prices *Resources64
	fluid := func() *Resources64 {
		if !p.Options.noBound {
			bound, prices, approx = s.fluidBound(pending)
		}
		return prices
	}
	if p.Options.Resume != nil {
		// The bound needs no packing: a held solve works it out before
		// it waits. (Its time limit, lbTimeBudget, is the same unless the
		// Resume's deadline comes sooner.)
		if d := p.Options.Deadline; d.IsZero() || time.Until(d) >= lbTimeBudget {
			fluid()
			fluid = func() *Resources64 { return prices }
		}
		if !p.awaitResume() {
			return nil, facetValues{}
		}
		s.p.Options.Packing, s.p.Options.Deadline = p.Options.Packing, p.Options.Deadline
	}
	s.bestPacking(fluid)
	if p.Options.stopAt().canceled() {
		return &s.plan, facetValues{} // Solve discards it
	}
	s.dissolve(s.p.Options.stopAt())
	s.nodes = append(s.nodes, bundles...)
	s.kinds = append(s.kinds, s.reserved.kinds...)
	s.nodes = append(s.nodes, reserved...)
	s.emit()
	// The bound is that of the pods beyond the reservations' nodes.
	placed := make([]int, len(s.classes))
	for _, n := range s.nodes[:len(s.nodes)-len(reserved)] {
		for _, t := range n.takes {
			placed[t.class] += t.n * n.count
		}
	}
	if s.enforceSpread() {
		placed = s.placedFromPlan()
		for _, n := range reserved {
			for _, t := range n.takes {
				placed[t.class] = max(placed[t.class]-t.n*n.count, 0)
			}
		}
	}
	// The bound stays that of the pods the packing placed: the pods
	// placePending adds ride on the same nodes, and the fluid relaxation
	// models their groups' zone shares, which kube-scheduler's final
	// placement need not follow.
	s.placePending()
	s.checkMinValues()
	s.refreshReasons()
	if !slices.Equal(placed, pending) && !p.Options.noBound {
		bound, _, approx = s.fluidBound(placed)
	}
	s.plan.LowerBound, s.plan.BoundApproximate = bound, approx
	return &s.plan, facets
}

// awaitResume waits for a Resume on p.Options.Resume and puts its
// packing and deadline in p's options; false when the solve was
// cancelled first (Done closed) or Resume closed without one.
func (p *Problem) awaitResume() bool {
	select {
	case r, ok := <-p.Options.Resume:
		if !ok {
			return false
		}
		p.Options.Packing, p.Options.Deadline, p.Options.Resume = r.Packing, r.Deadline, nil
		return true
	case <-p.Options.Done:
		return false
	}
}

func (p *Problem) validate() error {
	if len(p.ExtendedResources) > MaxResources-NumFixedResources {
		return fmt.Errorf("%d extended resources given, at most %d supported", len(p.ExtendedResources), MaxResources-NumFixedResources)
	}
	for i := range p.Pods {
		for r, q := range p.Pods[i].Requests {
			if q < 0 {
				return fmt.Errorf("pod %s: negative %s request %d", p.Pods[i].Key(), p.ResourceName(r), q)
			}
		}
	}
	for _, types := range p.typeLists() {
		for i := range types {
			for _, o := range types[i].Offerings {
				if !(o.Price >= 0) || math.IsInf(o.Price, 0) {
					return fmt.Errorf("instance type %s: offering %s/%s has invalid price %v", types[i].Name, o.Zone, o.CapacityType, o.Price)
				}
			}
		}
	}
	return nil
}

// constraintKey identifies a pod's scheduling constraints; seen, when any
// pod has topology constraints, says which of the problem's selectors match
// the pod (see selectorsSeen), which is all of its labels other pods see.
func constraintKey(p *Pod, seen string) string {
	var b strings.Builder
	b.WriteString(nodeConstraintKey(p))
	b.WriteByte(1)
	b.WriteString(topologyKey(p, seen))
	b.WriteByte(1)
	b.WriteString(p.Unschedulable)
	return b.String()
}

// nodeConstraintKey identifies what a pod asks of a node by itself: node
// selector and affinity, tolerations and host ports.
func nodeConstraintKey(p *Pod) string {
	var b strings.Builder
	keys := make([]string, 0, len(p.NodeSelector))
	for k := range p.NodeSelector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(p.NodeSelector[k])
		b.WriteByte(0)
	}
	b.WriteByte(1)
	for _, t := range p.Affinity {
		for _, r := range t {
			b.WriteString(r.Key)
			b.WriteByte(0)
			b.WriteString(r.Operator)
			for _, v := range r.Values {
				b.WriteByte(0)
				b.WriteString(v)
			}
			b.WriteByte(2)
		}
		b.WriteByte(3)
	}
	b.WriteByte(1)
	for _, t := range p.Tolerations {
		b.WriteString(t.Key)
		b.WriteByte(0)
		b.WriteString(t.Operator)
		b.WriteByte(0)
		b.WriteString(t.Value)
		b.WriteByte(0)
		b.WriteString(t.Effect)
		b.WriteByte(2)
	}
	b.WriteByte(1)
	for _, h := range p.HostPorts {
		fmt.Fprintf(&b, "%d/%s/%s", h.Port, h.Protocol, h.HostIP)
		b.WriteByte(2)
	}
	return b.String()
}

func (s *state) buildClasses() {
	groupIdx := map[string]int{}
	type classKey struct {
		group int
		req   Resources
	}
	classIdx := map[classKey]int{}
	for i := range s.p.Pods {
		if hasTopology(&s.p.Pods[i]) || len(s.p.Pods[i].HostPorts) > 0 {
			s.hasTopology = true
		}
	}
	// Running pods' anti-affinity keeps pending pods away (kube-scheduler
	// checks it for every incoming pod).
	for i := range s.p.Nodes {
		for j := range s.p.Nodes[i].Pods {
			if len(s.p.Nodes[i].Pods[j].PodAntiAffinity) > 0 {
				s.hasTopology = true
			}
		}
	}
	var sels problemSelectors
	if s.hasTopology {
		sels = s.p.selectors()
	}
	// Which selectors match a pod depends on its namespace and labels
	// only (see problemSelector), which many pods share.
	seenBy := map[string]string{}
	var w keyWriter
	for i := range s.p.Pods {
		pod := &s.p.Pods[i]
		seen := ""
		if s.hasTopology {
			w.b = w.b[:0]
			w.str(pod.Namespace)
			w.labels(pod.Labels, false)
			var ok bool
			if seen, ok = seenBy[string(w.b)]; !ok {
				seen = sels.seen(pod)
				seenBy[string(w.b)] = seen
			}
		}
		ck := constraintKey(pod, seen)
		g, ok := groupIdx[ck]
		if !ok {
			g = len(s.groups)
			groupIdx[ck] = g
			s.groups = append(s.groups, group{rep: pod, orig: pod})
		}
		req := pod.Requests
		req[Pods] = max(req[Pods], 1)
		key := classKey{g, req}
		c, ok := classIdx[key]
		if !ok {
			c = len(s.classes)
			classIdx[key] = c
			s.classes = append(s.classes, &class{req: req, group: g})
		}
		s.classes[c].pods = append(s.classes[c].pods, i)
	}
	s.applyTopology()
	for _, c := range s.classes {
		if len(c.pods) > 0 && s.p.Pods[c.pods[0]].Unschedulable != "" {
			c.refused = s.p.Pods[c.pods[0]].Unschedulable
		}
	}
	if s.p.hostPortsUsed() {
		s.applyHostPorts()
	}
	s.rem = make([]int, len(s.classes))
	for i, c := range s.classes {
		s.rem[i] = len(c.pods)
	}
}

// placedFromPlan counts, per class, the pods the plan puts on new nodes.
func (s *state) placedFromPlan() []int {
	classOf := make([]int, len(s.p.Pods))
	for ci, c := range s.classes {
		for _, pod := range c.pods {
			classOf[pod] = ci
		}
	}
	placed := make([]int, len(s.classes))
	for _, n := range s.plan.NewNodes {
		for _, pod := range n.Pods {
			placed[classOf[pod]]++
		}
	}
	return placed
}

// classesBySize orders classes by descending CPU then memory.
func (s *state) classesBySize() []int {
	order := make([]int, len(s.classes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ra, rb := s.classes[order[a]].req, s.classes[order[b]].req
		if ra[CPU] != rb[CPU] {
			return ra[CPU] > rb[CPU]
		}
		return ra[Memory] > rb[Memory]
	})
	return order
}

// fitCount is how many copies of req fit in free (MaxInt when req is zero).
func fitCount(free, req Resources) int {
	n := math.MaxInt
	for r := range req {
		if req[r] <= 0 {
			continue
		}
		if free[r] < req[r] {
			return 0
		}
		n = min(n, int(free[r]/req[r]))
	}
	return n
}

// share is the largest fraction of alloc that req takes on any resource.
func share(req, alloc Resources) float64 {
	m := 0.0
	for r := range req {
		if req[r] > 0 {
			m = max(m, float64(req[r])/float64(alloc[r]))
		}
	}
	return m
}

// poolHasRoom reports whether the pool's limits allow one more node of any
// of the kinds.
func (s *state) poolHasRoom(pk poolKinds) bool {
	pool := &s.p.Pools[pk.pool]
	limited := false
	for _, h := range pool.HasLimit {
		limited = limited || h
	}
	if !limited {
		return true
	}
	for _, ki := range pk.kinds {
		if s.limitRoom(s.kinds[ki]) > 0 {
			return true
		}
	}
	return false
}

// limitRoom is how many more nodes of kind k its pool's limits allow.
func (s *state) limitRoom(k *kind) int {
	pool := &s.p.Pools[k.pool]
	capacity := s.p.PoolTypes(k.pool)[k.typ].Capacity
	room := math.MaxInt
	if k.reservation > 0 {
		room = s.reserved.left[k.reservation-1]
	}
	for r := range capacity {
		if !pool.HasLimit[r] || capacity[r] == 0 {
			continue
		}
		left := pool.Limits[r] - s.used[k.pool][r]
		if left < capacity[r] {
			return 0
		}
		room = min(room, int(left/capacity[r]))
	}
	return room
}

// bestPacking runs the greedy with each way of valuing pods (stand-alone
// cost, and the fluid optimum's resource prices when known) and each way of
// filling a node, improves each result, and keeps the cheapest. bound
// computes the lower bound and returns the fluid optimum's prices (nil
// when unknown); it runs beside the strategies that do not need them.
//
// The bound and the strategies run concurrently, one per available CPU,
// each strategy on its own fork of the state's mutable parts; the bound
// only reads the state. The result does not depend on their timing: the
// cheapest wins, ties going to the earliest strategy in the list, as when
// they ran one after another. Only the deadline can make it depend on
// timing: once it has passed and some strategy has finished, no further
// strategy starts.
func (s *state) bestPacking(bound func() *Resources64) {
	type strategy struct {
		priced bool // valued at the fluid optimum's prices
		fill   fillMode
		ffd    []int // the kinds of a first-fit packing first (see ffd.go); nil for none
	}
	fills := []fillMode{fillWeighted, fillShape}
	if len(s.p.Pods) <= denseFillPods {
		fills = append(fills, fillDense)
	}
	var strategies []strategy
	for _, priced := range []bool{false, true} {
		for _, f := range fills {
			// With the LP's prices, weighting the shape match by value
			// per share never won on suites a–e (measured); it is skipped.
			if priced && f == fillWeighted {
				continue
			}
			strategies = append(strategies, strategy{priced: priced, fill: f})
		}
	}
	efficient := s.efficientKinds()
	// One-type packings come last, so that they win only when strictly
	// cheaper.
	var on [][]int
	if s.ffdEligible() {
		for _, kinds := range s.ffdPortfolio(efficient) {
			strategies = append(strategies, strategy{fill: fillShape, ffd: kinds})
		}
		on = s.classesOnKinds()
	}

	// One member only (Options.Packing): it runs priced or not, as the
	// prices allow.
	one := false
	if only := s.p.Options.Packing; only.set {
		kept := slices.DeleteFunc(slices.Clone(strategies), func(st strategy) bool {
			return st.priced != only.priced || st.fill != only.fill || (st.ffd != nil) != only.ffd
		})
		if len(kept) > 0 {
			strategies, one = kept, true
		}
	}
	deadline := s.p.Options.stopAt()
	results := make([]*plannedState, len(strategies))
	// Task 0 is the bound, so that it is under way before any strategy
	// waits for its prices; task i > 0 is strategy i-1.
	var prices *Resources64
	priced := make(chan struct{})
	var next atomic.Int64
	if len(s.p.Pods) <= denseFillPods {
		// Small problems solve in a millisecond or so: handing the bound
		// to another goroutine costs more than it saves (suite e).
		prices = bound()
		close(priced)
		next.Store(1)
	}
	var finished atomic.Bool // some strategy planned at least one node
	work := func() {
		for {
			i := int(next.Add(1)) - 1
			if i == 0 {
				prices = bound()
				close(priced)
				continue
			}
			i--
			if i >= len(strategies) || (finished.Load() && expired(deadline)) {
				return // anytime: keep the best plan found so far
			}
			var pr *Resources64
			if strategies[i].priced {
				<-priced
				if pr = prices; pr == nil && !one {
					continue // no prices: the strategy is the unpriced one
				}
			}
			w := s.fork()
			kinds := efficient
			w.valueClasses(pr, kinds)
			if strategies[i].ffd != nil {
				w.packFFD(strategies[i].ffd, on, w.topWeight())
			}
			w.greedy(kinds, strategies[i].fill)
			w.downsize(deadline)
			w.mergePairs(deadline)
			w.backfill(deadline)
			// Costed on s: pods a facet cannot place count against it.
			results[i] = &plannedState{w.rem, w.used, w.nodes, s.costOf(w.rem, w.nodes)}
			if w.nodes != nil {
				finished.Store(true)
			}
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), 1+len(strategies)) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	<-priced
	var best *plannedState
	for i, r := range results {
		if r != nil && (best == nil || r.cost < best.cost-1e-9) {
			best = r
			st := strategies[i]
			s.plan.packing = Packing{set: true, priced: st.priced, fill: st.fill, ffd: st.ffd != nil}
		}
	}
	s.rem, s.used, s.nodes = best.rem, best.used, best.nodes
}

// fork returns a copy of the state that one packing strategy may change
// without touching s or any other fork: its own pods left, pool usage,
// planned nodes, class values, fill orders and scratch space. Everything
// else is shared and only read while packing.
func (s *state) fork() *state {
	w := *s
	w.rem, w.used, w.nodes = slices.Clone(s.rem), slices.Clone(s.used), nil
	w.classes = make([]*class, len(s.classes))
	for i, c := range s.classes {
		cc := *c
		w.classes[i] = &cc
	}
	w.kinds = make([]*kind, len(s.kinds))
	for i, k := range s.kinds {
		kk := *k
		kk.order, kk.buckets = nil, nil
		w.kinds[i] = &kk
	}
	w.capCount, w.capCarrier = make([]int, len(s.capCount)), make([]int, len(s.capCarrier))
	w.taken, w.cursors, w.nearLast, w.needs = nil, nil, nil, nil
	return &w
}

type plannedState struct {
	rem   []int
	used  []Resources
	nodes []plannedNode
	cost  float64
}

// cost is the price of the planned nodes, with pods left over costed at
// infinity so that a packing placing more pods always wins.
func (s *state) cost() float64 { return s.costOf(s.rem, s.nodes) }

// costOf is cost for the given pods left and planned nodes.
func (s *state) costOf(rem []int, nodes []plannedNode) float64 {
	total := 0.0
	for _, n := range nodes {
		total += float64(n.count) * s.kinds[n.kind].price
	}
	for ci, r := range rem {
		if r > 0 && len(s.classes[ci].kinds) > 0 {
			total += float64(r) * 1e6
		}
	}
	return total
}

// fillMode is how the greedy fills a candidate node.
type fillMode int

const (
	// fillWeighted and fillShape take pods a batch at a time, the class
	// whose shape best matches the free room first (weighted by value per
	// share, or not); see fillBalanced.
	fillWeighted fillMode = iota
	fillShape
	// fillDense takes, in value-density order, as many of each class as
	// fit. It only wins on small problems (the benchmark suites' tiny
	// ones), so it is tried only up to denseFillPods pods.
	fillDense
)

const denseFillPods = 2000

// fillDensest packs remaining pods onto one node of kind k in its fill
// order, as many of each class as fit.
func (s *state) fillDensest(k *kind, weights []int32, takes []take) ([]take, float64) {
	free := k.alloc
	value := 0.0
	poolWeight := s.p.Pools[k.pool].Weight
	start := len(takes)
	defer func() { s.resetCaps(takes[start:]) }()
	for _, ci := range k.order {
		if s.rem[ci] == 0 || weights[ci] != poolWeight || s.conflictsWith(ci, takes[start:]) {
			continue
		}
		n := min(fitCount(free, s.classes[ci].req), s.rem[ci], s.capRoom(ci))
		if n == 0 {
			continue
		}
		free = free.Sub(s.classes[ci].req.Scale(int64(n)))
		value += float64(n) * s.classes[ci].value
		s.countCap(ci, n)
		takes = append(takes, take{ci, n})
	}
	return takes, value
}

// greedy launches, one configuration at a time, the node with the lowest
// price per value of the pods it takes, and repeats it while the remaining
// pods allow.
//
// It considers the given kinds and fills each candidate node as mode says.
// Past Options.Deadline it stops comparing kinds: it launches the kind it
// launched last while that still takes pods, and compares all kinds again
// only when it does not, so that every pod still gets a node, soon.
func (s *state) greedy(kinds []int, mode fillMode) {
	var best, cur []take
	// Without pool limits a class's top weight changes only when its pods
	// run out, which the fills check themselves: weigh classes once.
	limited := s.anyLimit()
	var weights []int32
	// Balanced fills are remembered per kind while they hold (fillMemo),
	// which needs weights and room that do not change between launches.
	var memo []fillMemo
	if mode != fillDense && !limited && !s.refill {
		memo = make([]fillMemo, len(s.kinds))
	}
	lastKind := -1
	for {
		if weights == nil || limited {
			weights = s.topWeight()
		}
		candidates := kinds
		if s.p.Options.stopAt().canceled() {
			return // the solve is discarded
		}
		if lastKind >= 0 && expired(s.p.Options.stopAt()) {
			candidates = []int{lastKind}
		}
		bestKind := s.bestFill(candidates, mode, weights, memo, &cur, &best)
		if bestKind < 0 && len(candidates) < len(kinds) {
			bestKind = s.bestFill(kinds, mode, weights, memo, &cur, &best)
		}
		if bestKind < 0 {
			return
		}
		lastKind = bestKind
		k := s.kinds[bestKind]
		copies := s.limitRoom(k)
		for _, t := range best {
			copies = min(copies, s.rem[t.class]/t.n)
		}
		copies = max(copies, 1)
		for _, t := range best {
			s.rem[t.class] -= t.n * copies
		}
		s.used[k.pool] = s.used[k.pool].Add(s.p.PoolTypes(k.pool)[k.typ].Capacity.Scale(int64(copies)))
		s.nodes = append(s.nodes, plannedNode{kind: bestKind, takes: slices.Clone(best), count: copies})
		exhausted := false
		for _, t := range best {
			exhausted = exhausted || s.rem[t.class] == 0
		}
		if exhausted && mode == fillDense {
			s.dropExhausted(kinds)
		}
	}
}

// bestFill fills one node of each of the kinds and returns the kind with
// the lowest price per value of what it takes, which it leaves in best; -1
// when no kind takes a pod. cur is scratch space; memo, when not nil,
// holds each kind's last balanced fill.
func (s *state) bestFill(kinds []int, mode fillMode, weights []int32, memo []fillMemo, cur, best *[]take) int {
	bestKind, bestRatio, bestValue := -1, math.Inf(1), 0.0
	for _, ki := range kinds {
		k := s.kinds[ki]
		if s.limitRoom(k) == 0 {
			continue
		}
		var value float64
		s.fills++
		switch {
		case mode == fillDense:
			*cur, value = s.fillDensest(k, weights, (*cur)[:0])
		case memo != nil && memo[ki].holds(s.rem):
			*cur, value = append((*cur)[:0], memo[ki].takes...), memo[ki].value
		default:
			*cur, value = s.fillBalanced(k, weights, (*cur)[:0], mode == fillWeighted)
			if memo != nil {
				memo[ki].remember(*cur, s.needs, value)
			}
		}
		if value <= 0 {
			continue
		}
		ratio := k.price / value
		if ratio < bestRatio || (ratio == bestRatio && value > bestValue) {
			bestKind, bestRatio, bestValue = ki, ratio, value
			*best = append((*best)[:0], *cur...)
		}
	}
	return bestKind
}

// anyLimit reports whether any pool has a limit.
func (s *state) anyLimit() bool {
	for i := range s.p.Pools {
		if slices.Contains(s.p.Pools[i].HasLimit[:], true) {
			return true
		}
	}
	return false
}

// dropExhausted removes classes with no pods left from the kinds' fill
// orders, so that filling a node densest-first scans only classes it could
// still take (fillBalanced forgets them itself).
func (s *state) dropExhausted(kinds []int) {
	for _, ki := range kinds {
		k := s.kinds[ki]
		j := 0
		for _, ci := range k.order {
			if s.rem[ci] > 0 {
				k.order[j] = ci
				j++
			}
		}
		k.order = k.order[:j]
	}
}

func withinLimits(pool *Pool, used Resources) bool {
	for r := range used {
		if pool.HasLimit[r] && used[r] > pool.Limits[r] {
			return false
		}
	}
	return true
}

// emit turns planned nodes into the plan, assigning concrete pods. A node
// whose kind merged equally cheap offerings in several zones goes to the
// one with the fewest new nodes so far, so that free spreading is taken.
func (s *state) emit() {
	next := slices.Clone(s.start) // pods of each class handed out so far
	perZone := map[string]int{}
	for _, n := range s.nodes {
		k := s.kinds[n.kind]
		it := &s.p.PoolTypes(k.pool)[k.typ]
		reason, offering := s.placementReason(n), s.offeringName(k)
		for copy := 0; copy < n.count; copy++ {
			o := it.Offerings[k.offering]
			for _, t := range k.ties {
				if z := it.Offerings[t].Zone; perZone[z] < perZone[o.Zone] {
					o = it.Offerings[t]
				}
			}
			perZone[o.Zone]++
			node := NewNode{
				Pool: s.p.Pools[k.pool].Name, InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType,
				Price: o.Price, Allocatable: k.alloc, Reason: reason, Labels: k.labels,
				offering: offering, pool: k.pool,
			}
			if k.reservation > 0 {
				node.reservation = s.reserved.names[k.reservation-1]
			}
			for _, t := range n.takes {
				c := s.classes[t.class]
				node.Pods = append(node.Pods, c.pods[next[t.class]:next[t.class]+t.n]...)
				next[t.class] += t.n
				node.Requested = node.Requested.Add(c.req.Scale(int64(t.n)))
			}
			s.plan.NewNodes = append(s.plan.NewNodes, node)
			s.plan.TotalPrice += o.Price
		}
	}
	for ci, c := range s.classes {
		for _, pod := range c.pods[next[ci]:] {
			if _, explained := s.reasons[ci]; !explained {
				s.reasons[ci] = s.limitReason(ci)
			}
			s.plan.Unschedulable = append(s.plan.Unschedulable, Unschedulable{Pod: pod, Reason: s.reasons[ci]})
		}
	}
	sort.Slice(s.plan.Unschedulable, func(a, b int) bool { return s.plan.Unschedulable[a].Pod < s.plan.Unschedulable[b].Pod })
	s.plan.TotalPrice = round6(s.plan.TotalPrice)
}

func round6(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 6, 64), 64)
	return v
}
