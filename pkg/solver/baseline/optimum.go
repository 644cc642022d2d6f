package baseline

import (
	"math"
	"slices"
	"sort"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Optimum finds the cheapest set of new nodes for a small problem by branch
// and bound: pods, largest first, go into each node opened so far or a new
// one; a node costs its cheapest offering that is compatible with all its
// pods and holds them. Identical pods are interchangeable, so each goes to
// a node no earlier than its twin's. It handles pools, taints, selectors
// and DaemonSets, not existing nodes, pool limits or topology constraints,
// and places only pods some offering can take. It gives up (false) after
// maxSteps search nodes.
func Optimum(p *solver.Problem, maxSteps int) (cost float64, ok bool) {
	cost, _, ok = optimumOf(p, maxSteps)
	return cost, ok
}

// Exact is Optimum for the problems Optimum models completely, for the
// product to tell a user that a plan is optimal: new nodes only (no
// existing nodes, no pool limits), pools of one weight, no topology spread,
// pod (anti-)affinity, host ports or preferences, and every pod placeable
// on some offering. On any other problem, or when the search gives up
// after maxSteps search nodes, ok is false.
func Exact(p *solver.Problem, maxSteps int) (cost float64, ok bool) {
	if len(p.Nodes) > 0 {
		return 0, false
	}
	for i := range p.Pools {
		pool := &p.Pools[i]
		if pool.Weight != p.Pools[0].Weight || slices.Contains(pool.HasLimit[:], true) {
			return 0, false
		}
	}
	for i := range p.Pods {
		pod := &p.Pods[i]
		if len(pod.Spread) > 0 || len(pod.PodAffinity) > 0 || len(pod.PodAntiAffinity) > 0 || len(pod.HostPorts) > 0 || len(pod.Preferences) > 0 {
			return 0, false
		}
	}
	cost, placed, ok := optimumOf(p, maxSteps)
	if !ok || placed < len(p.Pods) {
		return 0, false
	}
	return cost, true
}

// optimumOf is Optimum, also returning how many pods it placed.
func optimumOf(p *solver.Problem, maxSteps int) (cost float64, placed int, ok bool) {
	e := newEnv(p)
	byPrice := make([]int, len(e.kinds))
	for i := range byPrice {
		byPrice[i] = i
	}
	sort.SliceStable(byPrice, func(a, b int) bool { return e.kinds[byPrice[a]].price < e.kinds[byPrice[b]].price })
	var pods []int
	for _, pi := range e.ffdOrder(e.allPods()) {
		for _, k := range byPrice {
			if e.compat[e.group[pi]][k] && e.req[pi].Fits(e.kinds[k].alloc) {
				pods = append(pods, pi)
				break
			}
		}
	}
	o := &optimum{e: e, byPrice: byPrice, pods: pods, best: math.Inf(1), steps: maxSteps}
	// A fluid bound on the whole: every resource must be bought at no less
	// than the cheapest price per unit.
	var sum solver.Resources
	for _, pi := range pods {
		sum = sum.Add(e.req[pi])
	}
	for r, q := range sum {
		if q == 0 {
			continue
		}
		unit := math.Inf(1)
		for _, k := range e.kinds {
			if k.alloc[r] > 0 {
				unit = min(unit, k.price/float64(k.alloc[r]))
			}
		}
		if !math.IsInf(unit, 1) {
			o.fluid = max(o.fluid, unit*float64(q))
		}
	}
	o.twinBin = make([]int, len(pods))
	o.search(0, 0)
	if o.steps < 0 {
		return o.best, len(pods), false
	}
	return o.best, len(pods), true
}

type optimum struct {
	e       *env
	byPrice []int
	pods    []int
	bins    []optBin
	twinBin []int // per position in pods, the bin it went to
	best    float64
	fluid   float64
	steps   int
}

type optBin struct {
	sum   solver.Resources
	group map[int]bool
	cost  float64
}

// binCost is the cheapest kind compatible with the groups that holds sum.
func (o *optimum) binCost(groups map[int]bool, extra int, sum solver.Resources) float64 {
	for _, k := range o.byPrice {
		if !sum.Fits(o.e.kinds[k].alloc) || !o.e.compat[extra][k] {
			continue
		}
		ok := true
		for g := range groups {
			if !o.e.compat[g][k] {
				ok = false
				break
			}
		}
		if ok {
			return o.e.kinds[k].price
		}
	}
	return math.Inf(1)
}

func (o *optimum) search(i int, partial float64) {
	o.steps--
	if o.steps < 0 {
		return
	}
	if max(partial, o.fluid) >= o.best-1e-9 {
		return
	}
	if i == len(o.pods) {
		o.best = partial
		return
	}
	pi := o.pods[i]
	req, g := o.e.req[pi], o.e.group[pi]
	from := 0
	if i > 0 {
		prev := o.pods[i-1]
		if o.e.req[prev] == req && o.e.group[prev] == g {
			from = o.twinBin[i-1]
		}
	}
	for b := from; b < len(o.bins); b++ {
		bin := &o.bins[b]
		sum := bin.sum.Add(req)
		c := o.binCost(bin.group, g, sum)
		if math.IsInf(c, 1) {
			continue
		}
		oldSum, oldCost := bin.sum, bin.cost
		had := bin.group[g]
		bin.sum, bin.cost, bin.group[g] = sum, c, true
		o.twinBin[i] = b
		o.search(i+1, partial-oldCost+c)
		bin = &o.bins[b]
		bin.sum, bin.cost = oldSum, oldCost
		if !had {
			delete(bin.group, g)
		}
	}
	c := o.binCost(nil, g, req)
	if math.IsInf(c, 1) {
		return
	}
	o.bins = append(o.bins, optBin{sum: req, group: map[int]bool{g: true}, cost: c})
	o.twinBin[i] = len(o.bins) - 1
	o.search(i+1, partial+c)
	o.bins = o.bins[:len(o.bins)-1]
}
