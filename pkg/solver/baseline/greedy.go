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
// node each; a zonal spread pod is pinned to the eligible zone with the
// fewest matching pods so far (running ones included); a zonal
// pod-affinity pod is pinned to the zone of the first matching pod (running
// or planned), else the first zone it can use. See the package comment for
// what is ignored.
func KarpenterGreedy(p *solver.Problem) *solver.Plan {
	e := newEnv(p)
	g := &greedy{env: e, zoneOf: map[string]string{}, spreadCounts: map[string]map[string]int{}}
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
	// spreadCounts counts matching pods per zone for each zonal spread.
	spreadCounts map[string]map[string]int
	scratch      []int
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
	for _, s := range pod.Spread {
		if s.TopologyKey != solver.LabelZone || s.WhenUnsatisfiable == solver.ScheduleAnyway {
			continue
		}
		key, _ := json.Marshal([]any{s.Selector, pod.Namespace})
		counts, ok := g.spreadCounts[string(key)]
		if !ok {
			counts = g.runningCounts(pod, &s)
			g.spreadCounts[string(key)] = counts
		}
		best := ""
		for _, z := range possible() {
			if best == "" || counts[z] < counts[best] {
				best = z
			}
		}
		if best == "" {
			return "", false
		}
		if s.Selector.Matches(pod.Labels) {
			counts[best]++
		}
		return best, true
	}
	return "", true
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
