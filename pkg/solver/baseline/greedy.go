package baseline

import (
	"encoding/json"
	"slices"
	"sort"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// KarpenterGreedy plans nodes the way Karpenter's provisioner is described
// to: one greedy pass over the pods sorted by CPU, then memory, descending.
// Each pod goes to the first existing node with room, else to the first
// in-progress new node that can still take it — one whose candidate
// offerings, narrowed to those compatible with the pod and big enough for
// all its pods, are not all gone — else it opens a new node from the
// highest-weight pool, with every compatible offering that fits it as a
// candidate. At the end each new node launches its cheapest remaining
// candidate. Pool limits are reserved as Karpenter does: opening a node
// subtracts the largest capacity among its candidates.
//
// Topology, naively: hostname spread and hostname anti-affinity pods get a
// node each; a zonal spread pod, and a pod without one that a zonal
// spread's selector matches, is pinned to the eligible zone with the
// fewest matching pods so far (running ones included); a zonal
// pod-affinity pod is pinned to the zone of the first matching pod (running
// or planned), else the first zone it can use. See the package comment for
// what is ignored.
func KarpenterGreedy(p *solver.Problem) *solver.Plan {
	e := newEnv(p)
	g := &greedy{env: e, zoneOf: map[string]string{}, spreadOf: map[string]*spreadGroup{}}
	g.findSpreads()
	fit := e.newExistingFit()
	for _, pi := range e.ffdOrder(e.allPods()) {
		pod := &p.Pods[pi]
		zone, ok := g.zoneFor(pi)
		if !ok {
			e.unschedulable(pi, "no offering in a zone its topology constraints allow")
			continue
		}
		exclusive := hostnameExclusive(pod)
		if !exclusive && e.placeExisting(fit, pi, zone) {
			continue
		}
		if !exclusive && g.addToOpen(pi, zone) {
			continue
		}
		if !g.open(pi, zone, exclusive) {
			e.unschedulable(pi, "no instance type of any pool can take it within the pool limits")
		}
	}
	for _, n := range g.nodes {
		e.launch(n.cands[0], n.pods)
	}
	return e.finish()
}

type greedy struct {
	*env
	nodes []*openNode
	// shared are the open nodes other pods may join, in opening order.
	shared []*openNode
	// zoneOf is the zone chosen for each zonal affinity term.
	zoneOf map[string]string
	// spreads are the zonal DoNotSchedule spreads of the pods, one per
	// selector and namespace; spreadOf finds them by spreadKey.
	spreads  []*spreadGroup
	spreadOf map[string]*spreadGroup
	scratch  []int
}

// spreadGroup is one zonal spread: the pods its selector matches in its
// namespace, running or planned, counted per zone.
type spreadGroup struct {
	sel    solver.Selector
	ns     string
	counts map[string]int
}

func spreadKey(s *solver.TopologySpread, ns string) string {
	key, _ := json.Marshal([]any{s.Selector, ns})
	return string(key)
}

// findSpreads registers every zonal spread before any pod is placed, so
// that each pod a spread's selector matches is counted in it, whether or
// not the pod carries the spread itself.
func (g *greedy) findSpreads() {
	for pi := range g.p.Pods {
		pod := &g.p.Pods[pi]
		for _, s := range pod.Spread {
			if s.TopologyKey != solver.LabelZone || s.WhenUnsatisfiable == solver.ScheduleAnyway {
				continue
			}
			key := spreadKey(&s, pod.Namespace)
			if g.spreadOf[key] == nil {
				gr := &spreadGroup{sel: s.Selector, ns: pod.Namespace, counts: g.runningCounts(pod, &s)}
				g.spreadOf[key] = gr
				g.spreads = append(g.spreads, gr)
			}
		}
	}
}

// openNode is a new node in progress.
type openNode struct {
	cands    []int // kinds still possible, by ascending price
	pods     []int
	sum      solver.Resources
	maxAlloc solver.Resources // elementwise maximum over cands, a quick filter
}

func (g *greedy) addToOpen(pi int, zone string) bool {
	req := g.req[pi]
	compat := g.compat[g.group[pi]]
	for _, n := range g.shared {
		want := n.sum.Add(req)
		if !want.Fits(n.maxAlloc) {
			continue
		}
		keep := g.scratch[:0]
		for _, k := range n.cands {
			if compat[k] && want.Fits(g.kinds[k].alloc) && (zone == "" || g.kinds[k].zone == zone) {
				keep = append(keep, k)
			}
		}
		g.scratch = keep
		if len(keep) == 0 {
			continue
		}
		n.cands = append(n.cands[:0], keep...)
		n.sum = want
		n.pods = append(n.pods, pi)
		n.maxAlloc = g.maxAlloc(n.cands)
		return true
	}
	return false
}

// open starts a new node for the pod from the first pool (by weight) with a
// compatible offering that fits it within the pool's limits.
func (g *greedy) open(pi int, zone string, exclusive bool) bool {
	req := g.req[pi]
	compat := g.compat[g.group[pi]]
	for _, pool := range g.poolOrder {
		var cands []int
		for _, k := range g.poolKinds[pool] {
			if compat[k] && req.Fits(g.kinds[k].alloc) && (zone == "" || g.kinds[k].zone == zone) && g.withinLimits(k) {
				cands = append(cands, k)
			}
		}
		if len(cands) == 0 {
			continue
		}
		var reserve solver.Resources
		for _, k := range cands {
			for r, q := range g.kinds[k].capacity {
				reserve[r] = max(reserve[r], q)
			}
		}
		for r := range reserve {
			if g.p.Pools[pool].HasLimit[r] {
				g.remaining[pool][r] -= reserve[r]
			}
		}
		n := &openNode{cands: cands, pods: []int{pi}, sum: req, maxAlloc: g.maxAlloc(cands)}
		g.nodes = append(g.nodes, n)
		if !exclusive {
			g.shared = append(g.shared, n)
		}
		return true
	}
	return false
}

func (g *greedy) maxAlloc(cands []int) solver.Resources {
	var m solver.Resources
	for _, k := range cands {
		for r, q := range g.kinds[k].alloc {
			m[r] = max(m[r], q)
		}
	}
	return m
}

// zoneFor returns the zone the pod's zonal constraints pin it to ("" for
// none), and false when it has no zone to go to.
func (g *greedy) zoneFor(pi int) (string, bool) {
	pod := &g.p.Pods[pi]
	var zones []string // the zones the pod could get a new node in, sorted
	possible := func() []string {
		if zones == nil {
			set := map[string]bool{}
			for k, ok := range g.compat[g.group[pi]] {
				if ok && g.req[pi].Fits(g.kinds[k].alloc) {
					set[g.kinds[k].zone] = true
				}
			}
			zones = make([]string, 0, len(set))
			for z := range set {
				zones = append(zones, z)
			}
			sort.Strings(zones)
		}
		return zones
	}
	for _, t := range pod.PodAffinity {
		if t.TopologyKey != solver.LabelZone {
			continue
		}
		key, _ := json.Marshal([]any{t.Selector, namespacesOf(pod, &t)})
		z, ok := g.zoneOf[string(key)]
		if !ok {
			z = g.runningZone(pod, &t)
			if z == "" {
				if len(possible()) == 0 {
					return "", false
				}
				z = possible()[0]
			}
			g.zoneOf[string(key)] = z
		}
		return z, true
	}
	// The pod's own first zonal spread pins it to that spread's emptiest
	// zone; a pod without one that some spread's selector matches goes to
	// that spread's emptiest zone too, since the spread counts it (left
	// anywhere, such pods piled into the cheapest zone and broke the skew
	// of the pods that carry the spread).
	var pin *spreadGroup
	for _, s := range pod.Spread {
		if s.TopologyKey == solver.LabelZone && s.WhenUnsatisfiable != solver.ScheduleAnyway {
			pin = g.spreadOf[spreadKey(&s, pod.Namespace)]
			break
		}
	}
	if pin == nil {
		for _, gr := range g.spreads {
			if gr.ns == pod.Namespace && gr.sel.Matches(pod.Labels) {
				pin = gr
				break
			}
		}
	}
	if pin == nil {
		return "", true
	}
	best := ""
	for _, z := range possible() {
		if best == "" || pin.counts[z] < pin.counts[best] {
			best = z
		}
	}
	if best == "" {
		return "", false
	}
	for _, gr := range g.spreads {
		if gr.ns == pod.Namespace && gr.sel.Matches(pod.Labels) {
			gr.counts[best]++
		}
	}
	return best, true
}

func namespacesOf(pod *solver.Pod, t *solver.PodAffinityTerm) []string {
	if len(t.Namespaces) == 0 {
		return []string{pod.Namespace}
	}
	return t.Namespaces
}

// runningZone is the zone of the first running pod the term selects.
func (g *greedy) runningZone(pod *solver.Pod, t *solver.PodAffinityTerm) string {
	ns := namespacesOf(pod, t)
	for i := range g.p.Nodes {
		for _, o := range g.p.Nodes[i].Pods {
			if slices.Contains(ns, o.Namespace) && t.Selector.Matches(o.Labels) {
				return nodeZone(&g.p.Nodes[i])
			}
		}
	}
	return ""
}

// runningCounts counts running pods the spread selects, per zone.
func (g *greedy) runningCounts(pod *solver.Pod, s *solver.TopologySpread) map[string]int {
	counts := map[string]int{}
	for i := range g.p.Nodes {
		for _, o := range g.p.Nodes[i].Pods {
			if o.Namespace == pod.Namespace && s.Selector.Matches(o.Labels) {
				counts[nodeZone(&g.p.Nodes[i])]++
			}
		}
	}
	return counts
}
