package baseline

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// SingleTypeFFD plans nodes the way Cluster Autoscaler's estimator is
// described to: each node group template — here one instance type of one
// pool at its cheapest allowed offering — is tried on its own by packing
// the pending pods first-fit-decreasing (CPU, then memory) onto nodes of
// that one type, and the cheapest template that takes every pod any
// template can take wins. When no single template takes them all (a GPU
// pool beside a general one, say), the template taking the most pods wins,
// ties to the cheaper, and the rest are planned again the same way, as a
// scale-up loop would over several rounds.
//
// Pods first go to existing nodes with room. Hostname spread and hostname
// anti-affinity pods get a node each. Zonal constraints are ignored beyond
// what one template gives for free: all of its nodes are in one zone.
func SingleTypeFFD(p *solver.Problem) *solver.Plan {
	e := newEnv(p)
	fit := e.newExistingFit()
	var pending []int
	for _, pi := range e.ffdOrder(e.allPods()) {
		if hostnameExclusive(&p.Pods[pi]) || !e.placeExisting(fit, pi, "") {
			pending = append(pending, pi)
		}
	}
	templates := e.templates()
	for len(pending) > 0 {
		covered := make([]bool, len(p.Pods))
		anyCovered := 0
		cover := make([]int, len(templates))
		for ti, t := range templates {
			for _, pi := range pending {
				if t.takes(e, pi) {
					cover[ti]++
					if !covered[pi] {
						covered[pi] = true
						anyCovered++
					}
				}
			}
		}
		if anyCovered == 0 {
			for _, pi := range pending {
				e.unschedulable(pi, "no instance type of any pool can take it")
			}
			break
		}
		most := 0
		for _, c := range cover {
			most = max(most, c)
		}
		// Cheapest packing among the templates taking the most pods, trying
		// them by a lower bound on their cost and stopping once the bound
		// cannot beat the best found.
		var cands []int
		bounds := make([]float64, len(templates))
		for ti, t := range templates {
			if cover[ti] == most {
				cands = append(cands, ti)
				bounds[ti] = t.bound(e, pending)
			}
		}
		sort.SliceStable(cands, func(a, b int) bool { return bounds[cands[a]] < bounds[cands[b]] })
		best, bestCost := -1, math.Inf(1)
		var bestBins []bin
		for _, ti := range cands {
			if bounds[ti] >= bestCost {
				break
			}
			bins, ok := templates[ti].pack(e, pending)
			if !ok {
				continue
			}
			if cost := float64(len(bins)) * templates[ti].price; cost < bestCost {
				best, bestCost, bestBins = ti, cost, bins
			}
		}
		if best < 0 {
			for _, pi := range pending {
				e.unschedulable(pi, "the pool limits leave no room for the nodes it needs")
			}
			break
		}
		t := templates[best]
		for _, b := range bestBins {
			e.launch(t.kind, b.pods)
			for r := range e.remaining[t.pool] {
				e.remaining[t.pool][r] -= e.kinds[t.kind].capacity[r]
			}
		}
		var rest []int
		for _, pi := range pending {
			if !t.takes(e, pi) {
				rest = append(rest, pi)
			}
		}
		if len(rest) == len(pending) {
			panic(fmt.Sprintf("baseline: template %d took no pods", best))
		}
		pending = rest
	}
	return e.finish()
}

// template is a node group: one instance type of one pool, at the cheapest
// offering among those that accept the same pods.
type template struct {
	kind, pool int
	price      float64
	group      []bool // per pod group: compatible
}

// templates groups kinds by pool, type, allocatable and compatible pod
// groups, keeping the cheapest offering of each.
func (e *env) templates() []template {
	type key struct {
		pool, typ int
		alloc     solver.Resources
		compat    string
	}
	idx := map[key]int{}
	var out []template
	for _, pool := range e.poolOrder {
		for _, k := range e.poolKinds[pool] {
			kd := &e.kinds[k]
			groups := make([]bool, len(e.compat))
			sig := make([]byte, len(e.compat))
			any := false
			for g := range e.compat {
				groups[g] = e.compat[g][k]
				if groups[g] {
					sig[g], any = 1, true
				}
			}
			if !any {
				continue
			}
			kk := key{pool, kd.typ, kd.alloc, string(sig)}
			if i, ok := idx[kk]; ok {
				if kd.price < out[i].price {
					out[i].kind, out[i].price = k, kd.price
				}
				continue
			}
			idx[kk] = len(out)
			out = append(out, template{kind: k, pool: pool, price: kd.price, group: groups})
		}
	}
	return out
}

func (t *template) takes(e *env, pi int) bool {
	return t.group[e.group[pi]] && e.req[pi].Fits(e.kinds[t.kind].alloc)
}

// bound is a lower bound on the template's cost for the pods it takes: the
// node count the most demanded resource needs, and one node per exclusive pod.
func (t *template) bound(e *env, pending []int) float64 {
	var sum solver.Resources
	exclusive := 0
	for _, pi := range pending {
		if !t.takes(e, pi) {
			continue
		}
		if hostnameExclusive(&e.p.Pods[pi]) {
			exclusive++
			continue
		}
		sum = sum.Add(e.req[pi])
	}
	alloc := e.kinds[t.kind].alloc
	nodes := 0.0
	for r, q := range sum {
		if q > 0 && alloc[r] > 0 {
			nodes = max(nodes, math.Ceil(float64(q)/float64(alloc[r])))
		}
	}
	return (nodes + float64(exclusive)) * t.price
}

type bin struct {
	free solver.Resources
	pods []int
}

// pack puts the pods the template takes first-fit-decreasing onto nodes of
// its type; false when the pool's limits do not allow that many nodes.
//
// Identical pods in a row are packed together: first fit sends the next of
// them to the bin the previous one went to or a later one, so filling each
// open bin in turn with as many as fit is the same packing, done per run of
// identical pods instead of per pod.
func (t *template) pack(e *env, pending []int) ([]bin, bool) {
	kd := &e.kinds[t.kind]
	maxNodes := math.MaxInt
	pool := &e.p.Pools[t.pool]
	for r := range pool.HasLimit {
		if pool.HasLimit[r] && kd.capacity[r] > 0 {
			maxNodes = min(maxNodes, int(max(e.remaining[t.pool][r], 0)/kd.capacity[r]))
		}
	}
	// Runs of identical shared pods, and exclusive pods alone.
	type run struct {
		req       solver.Resources
		pods      []int
		exclusive bool
	}
	var runs []run
	var smallest solver.Resources
	first := true
	for _, pi := range pending {
		if !t.takes(e, pi) {
			continue
		}
		ex := hostnameExclusive(&e.p.Pods[pi])
		if n := len(runs); !ex && n > 0 && !runs[n-1].exclusive && runs[n-1].req == e.req[pi] {
			runs[n-1].pods = append(runs[n-1].pods, pi)
			continue
		}
		runs = append(runs, run{req: e.req[pi], pods: []int{pi}, exclusive: ex})
		if !ex {
			if first {
				smallest, first = e.req[pi], false
			}
			for r, q := range e.req[pi] {
				smallest[r] = min(smallest[r], q)
			}
		}
	}
	var bins []bin
	var open []int // bins that may still take a pod
	for _, rn := range runs {
		pods := rn.pods
		if !rn.exclusive {
			for j := 0; j < len(open) && len(pods) > 0; j++ {
				b := &bins[open[j]]
				k := min(fitCount(b.free, rn.req), len(pods))
				if k == 0 {
					continue
				}
				b.free = b.free.Sub(rn.req.Scale(int64(k)))
				b.pods = append(b.pods, pods[:k]...)
				pods = pods[k:]
				if !smallest.Fits(b.free) {
					open = append(open[:j], open[j+1:]...)
					j--
				}
			}
		}
		for len(pods) > 0 {
			if len(bins) >= maxNodes {
				return nil, false
			}
			k := 1
			if !rn.exclusive {
				k = min(fitCount(kd.alloc, rn.req), len(pods))
			}
			b := bin{free: kd.alloc.Sub(rn.req.Scale(int64(k))), pods: slices.Clone(pods[:k])}
			pods = pods[k:]
			bins = append(bins, b)
			if !rn.exclusive && smallest.Fits(b.free) {
				open = append(open, len(bins)-1)
			}
		}
	}
	return bins, true
}

// fitCount is how many copies of req fit in free.
func fitCount(free, req solver.Resources) int {
	n := math.MaxInt
	for r, q := range req {
		if q > 0 {
			n = min(n, int(max(free[r], 0)/q))
		}
	}
	return n
}
