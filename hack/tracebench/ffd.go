package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// packing is the best one-type first-fit-decreasing packing of a problem:
// for each group of pods that can share a node type (same selectors and
// affinity, GPU or not), the single instance type whose FFD packing of the
// group costs least; the groups' costs summed. It is what a person packing
// by hand would do (one node group per kind of pod), independent of the
// solver: it reads only the problem's pods, pools, types and DaemonSets.
type packing struct {
	Price  float64
	Nodes  int
	Types  []string // the type chosen for each group, "type×nodes"
	Placed int      // pods placed; pods no single type can hold are left out
}

// ffd packs p's pods with one type per group. Only the first pool is used
// (the inputs here have one: the default pool).
func ffd(p *solver.Problem) packing {
	if len(p.Pools) == 0 {
		return packing{}
	}
	pool := &p.Pools[0]
	// One candidate per instance type: its cheapest offering the pool
	// allows, with the allocatable left by the DaemonSets.
	type candidate struct {
		name   string
		price  float64
		alloc  solver.Resources
		labels solver.MapLabels
	}
	var cands []candidate
	for _, it := range p.PoolTypes(0) {
		best := -1
		var bestLabels solver.MapLabels
		for oi, o := range it.Offerings {
			labels := solver.MapLabels{}
			for k, v := range it.Labels {
				labels[k] = v
			}
			for k, v := range pool.Labels {
				labels[k] = v
			}
			labels[solver.LabelZone] = o.Zone
			labels[solver.LabelCapacityType] = o.CapacityType
			labels[solver.LabelNodePool] = pool.Name
			if !allMatch(pool.Requirements, labels) {
				continue
			}
			if best < 0 || o.Price < it.Offerings[best].Price {
				best, bestLabels = oi, labels
			}
		}
		if best < 0 {
			continue
		}
		alloc := it.Allocatable().Sub(plan.DaemonOverhead(p.DaemonSets, bestLabels, pool.Taints))
		cands = append(cands, candidate{it.Name, it.Offerings[best].Price, alloc, bestLabels})
	}
	// Groups: pods with the same selectors and GPU need.
	groups := map[string][]int{}
	var order []string
	for i := range p.Pods {
		pd := &p.Pods[i]
		if pd.Unschedulable != "" {
			continue
		}
		k := fmt.Sprintf("%v|%v|%v", pd.NodeSelector, pd.Affinity, pd.Requests[solver.GPU] > 0)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	var out packing
	for _, k := range order {
		pods := groups[k]
		rep := &p.Pods[pods[0]]
		bestPrice, bestNodes, bestName, bestPlaced := math.Inf(1), 0, "", 0
		// Which pods any candidate can hold: a type is a candidate for the
		// group only if it holds every one of those.
		holdable := make([]bool, len(pods))
		var cs []int
		for ci := range cands {
			c := &cands[ci]
			if solver.SelectorFailure(rep, c.labels) != "" || solver.Untolerated(rep.Tolerations, pool.Taints) != nil {
				continue
			}
			cs = append(cs, ci)
			for j, pi := range pods {
				if need(&p.Pods[pi]).Fits(c.alloc) {
					holdable[j] = true
				}
			}
		}
		var held []int
		for j, pi := range pods {
			if holdable[j] {
				held = append(held, pi)
			}
		}
		if len(held) == 0 {
			continue
		}
		// FFD on the types whose fluid estimate (the group's summed
		// requests at the type's price per unit of its scarcest resource)
		// is among the lowest: FFD never needs fewer nodes than that
		// estimate, and is within a few percent of it on these inputs, so
		// the cheapest packing is among them. Packing all of ~800 types
		// would take minutes.
		// A type is a candidate only if it holds every one of those pods.
		cs = slices.DeleteFunc(cs, func(ci int) bool {
			return slices.ContainsFunc(held, func(pi int) bool { return !need(&p.Pods[pi]).Fits(cands[ci].alloc) })
		})
		var total solver.Resources
		for _, pi := range held {
			total = total.Add(need(&p.Pods[pi]))
		}
		estimate := func(ci int) float64 {
			c := &cands[ci]
			n := 0.0
			for r := range total {
				if total[r] > 0 {
					if c.alloc[r] <= 0 {
						return math.Inf(1)
					}
					n = max(n, float64(total[r])/float64(c.alloc[r]))
				}
			}
			return math.Ceil(n) * c.price
		}
		slices.SortStableFunc(cs, func(a, b int) int { return cmp.Compare(estimate(a), estimate(b)) })
		cs = cs[:min(len(cs), ffdCandidates)]
		for _, ci := range cs {
			c := &cands[ci]
			nodes, ok := firstFitDecreasing(p, held, c.alloc)
			if !ok {
				continue
			}
			if price := float64(nodes) * c.price; price < bestPrice {
				bestPrice, bestNodes, bestName, bestPlaced = price, nodes, c.name, len(held)
			}
		}
		if bestName == "" {
			continue
		}
		out.Price += bestPrice
		out.Nodes += bestNodes
		out.Placed += bestPlaced
		out.Types = append(out.Types, fmt.Sprintf("%s×%d", bestName, bestNodes))
	}
	return out
}

func allMatch(reqs []solver.Requirement, labels solver.Labels) bool {
	for i := range reqs {
		if !reqs[i].Matches(labels) {
			return false
		}
	}
	return true
}

// ffdCandidates is how many types, by fluid estimate, FFD packs per group.
const ffdCandidates = 24

// need is what a pod takes of a node: its requests and one pod slot.
func need(p *solver.Pod) solver.Resources {
	r := p.Requests
	r[solver.Pods] = max(r[solver.Pods], 1)
	return r
}

// firstFitDecreasing packs pods onto nodes of allocatable alloc, largest
// first (by their largest share of the node), each into the first open
// node with room; ok is false when some pod fits no empty node.
func firstFitDecreasing(p *solver.Problem, pods []int, alloc solver.Resources) (nodes int, ok bool) {
	share := func(r solver.Resources) float64 {
		s := 0.0
		for i := range r {
			if r[i] > 0 && alloc[i] > 0 {
				s = max(s, float64(r[i])/float64(alloc[i]))
			}
		}
		return s
	}
	sorted := slices.Clone(pods)
	slices.SortStableFunc(sorted, func(a, b int) int { return cmp.Compare(share(need(&p.Pods[b])), share(need(&p.Pods[a]))) })
	var free []solver.Resources
	// Nodes with room for the smallest pod seen so far are kept at the
	// front; full ones are dropped from the scan.
	for _, pi := range sorted {
		r := need(&p.Pods[pi])
		if !r.Fits(alloc) {
			return 0, false
		}
		placed := false
		for i := range free {
			if r.Fits(free[i]) {
				free[i] = free[i].Sub(r)
				placed = true
				break
			}
		}
		if !placed {
			free = append(free, alloc.Sub(r))
		}
	}
	return len(free), true
}

func (k packing) String() string {
	return fmt.Sprintf("$%.2f/h (%d nodes: %s)", k.Price, k.Nodes, strings.Join(k.Types, ", "))
}
