package solver

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// searchOrder is the order of one consolidation search's steps.
type searchOrder int

const (
	// deletesFirst goes in the order Consolidate documents: empty nodes,
	// single-node deletes, merges (mergeMarginal), single-node
	// replacements.
	deletesFirst searchOrder = iota
	// mergesFirst puts merges right after empty nodes, each growing to the
	// largest group whose merge pays the minimum saving as a whole
	// (mergeWhole; Karpenter's multi-node consolidation takes the largest
	// group that consolidates at all); then single-node deletes and
	// replacements.
	mergesFirst
)

// plan runs one consolidation search, its steps in the given order.
func plan(p *Problem, now time.Time, order searchOrder) (*ConsolidationPlan, error) {
	c := &consolidator{p: p, now: now, pools: map[string]int{}, byName: map[string]*consNode{}}
	out := &ConsolidationPlan{}
	if err := c.setup(); err != nil {
		return nil, err
	}
	for _, n := range c.nodes {
		out.CurrentPrice += n.Price
	}
	var steps []func() error
	switch order {
	case deletesFirst:
		steps = []func() error{c.deleteEmpty, c.deleteSingles, func() error { return c.merge(mergeMarginal) }, c.replaceSingles}
	case mergesFirst:
		steps = []func() error{c.deleteEmpty, func() error { return c.merge(mergeWhole) }, c.deleteSingles, c.replaceSingles}
	default:
		return nil, fmt.Errorf("consolidation search order %d is unknown", order)
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}

	for _, n := range c.nodes {
		if n.orig < 0 || n.removed {
			continue
		}
		out.Blocked = append(out.Blocked, NodeBlock{Node: n.Name, Reason: c.blockReason(n)})
	}
	out.Actions = orderActions(c.actions, movedPods(p))
	for i := range out.Actions {
		out.Saving += out.Actions[i].Saving
	}
	out.CurrentPrice, out.Saving = round6(out.CurrentPrice), round6(out.Saving)
	return out, nil
}

// orderActions sorts the actions best first (saving per pod moved, then
// saving, then name) without putting an action ahead of an earlier-planned
// one it depends on. Each action was planned on the cluster as the earlier
// ones left it. For capacity that order does not matter (an action's
// replacements take no other pods, and two actions moving pods onto one
// node fit together), but for topology it does: counts of pods per zone or
// node move with every action, so an action whose moved pods' topology
// spread or pod (anti-)affinity selects pods an earlier action moved, or
// the other way round, keeps its place after that action.
func orderActions(actions []Action, pods map[string]*Pod) []Action {
	moved := make([][]*Pod, len(actions))
	for i := range actions {
		for _, m := range actions[i].Moves {
			if pod := pods[m.Pod]; pod != nil {
				moved[i] = append(moved[i], pod)
			}
		}
	}
	// deps[i] counts the earlier actions action i must follow; after[j]
	// lists the later ones that follow j.
	deps := make([]int, len(actions))
	after := make([][]int, len(actions))
	for i := range actions {
		for j := range i {
			if topologyLinked(moved[i], moved[j]) {
				deps[i]++
				after[j] = append(after[j], i)
			}
		}
	}
	better := func(x, y *Action) bool {
		px, py := savingPerMove(x), savingPerMove(y)
		if px != py {
			return px > py
		}
		if x.Saving != y.Saving {
			return x.Saving > y.Saving
		}
		return x.Nodes[0] < y.Nodes[0]
	}
	out := make([]Action, 0, len(actions))
	done := make([]bool, len(actions))
	for range actions {
		best := -1
		for i := range actions {
			if !done[i] && deps[i] == 0 && (best < 0 || better(&actions[i], &actions[best])) {
				best = i
			}
		}
		done[best] = true
		out = append(out, actions[best])
		for _, i := range after[best] {
			deps[i]--
		}
	}
	return out
}

// topologyLinked reports whether a hard topology constraint (DoNotSchedule
// spread, required pod affinity or anti-affinity) of a pod in one set
// selects a pod of the other.
func topologyLinked(a, b []*Pod) bool {
	selects := func(from, to []*Pod) bool {
		for _, p := range from {
			for i := range p.Spread {
				if p.Spread[i].WhenUnsatisfiable == DoNotSchedule && selectsAny(&p.Spread[i].Selector, to) {
					return true
				}
			}
			for _, terms := range [][]PodAffinityTerm{p.PodAffinity, p.PodAntiAffinity} {
				for i := range terms {
					if selectsAny(&terms[i].Selector, to) {
						return true
					}
				}
			}
		}
		return false
	}
	return selects(a, b) || selects(b, a)
}

func selectsAny(sel *Selector, pods []*Pod) bool {
	for _, p := range pods {
		if sel.Matches(p.Labels) {
			return true
		}
	}
	return false
}

// movedPods indexes the pods of the problem's nodes by key.
func movedPods(p *Problem) map[string]*Pod {
	out := map[string]*Pod{}
	for i := range p.Nodes {
		for j := range p.Nodes[i].Pods {
			pod := &p.Nodes[i].Pods[j]
			out[pod.Key()] = pod
		}
	}
	return out
}

func savingPerMove(a *Action) float64 {
	if len(a.Moves) == 0 {
		return math.Inf(1)
	}
	return a.Saving / float64(len(a.Moves))
}

// deleteEmpty deletes nodes that run no pods, most expensive first.
func (c *consolidator) deleteEmpty() error {
	var empty []*consNode
	for _, n := range c.nodes {
		if n.candidate() && n.evictions() == 0 && len(n.pending) == 0 {
			empty = append(empty, n)
		}
	}
	sort.SliceStable(empty, func(a, b int) bool {
		if empty[a].Price != empty[b].Price {
			return empty[a].Price > empty[b].Price
		}
		return empty[a].Name < empty[b].Name
	})
	for _, n := range empty {
		set := []*consNode{n}
		if why := c.budgetExceeded(set); why != "" {
			n.deleteWhy = why
			continue
		}
		c.apply(set, &Plan{}, nil, fmt.Sprintf("it runs no pods; deleting it saves %s", formatDollars(n.Price)))
	}
	return nil
}

// deleteSingles deletes, one at a time, nodes whose pods fit on the other
// nodes, the largest saving per evicted pod first.
func (c *consolidator) deleteSingles() error {
	var cands []*consNode
	for _, n := range c.nodes {
		if n.candidate() {
			cands = append(cands, n)
		}
	}
	perPod := func(n *consNode) float64 { return n.Price / float64(max(n.evictions()+len(n.pending), 1)) }
	sort.SliceStable(cands, func(a, b int) bool {
		x, y := cands[a], cands[b]
		if px, py := perPod(x), perPod(y); px != py {
			return px > py
		}
		if ux, uy := x.utilisation(), y.utilisation(); ux != uy {
			return ux < uy
		}
		return x.Name < y.Name
	})
	for _, n := range cands {
		if !n.candidate() {
			continue
		}
		if c.expired() {
			n.deleteWhy = "the planning deadline passed before it was considered"
			continue
		}
		set := []*consNode{n}
		if why := c.budgetExceeded(set); why != "" {
			n.deleteWhy = why
			continue
		}
		if n.Price < c.minSaving(set) {
			n.deleteWhy = fmt.Sprintf("deleting it saves %s, below the %s minimum", formatDollars(n.Price), formatDollars(c.minSaving(set)))
			continue
		}
		if why := c.balancedRefusal(set, n.Price); why != "" {
			n.deleteWhy = "deleting it: " + why
			continue
		}
		if why := c.roomElsewhere(set); why != "" {
			n.deleteWhy = why
			continue
		}
		sim, err := c.simulate(set, placement{newNodes: false})
		if err != nil {
			return err
		}
		if len(sim.plan.Unschedulable) > 0 {
			n.deleteWhy = c.unplacedReason(sim)
			continue
		}
		c.apply(set, sim.plan, sim, "")
	}
	return nil
}

func removeNode(list []*consNode, n *consNode) []*consNode {
	out := list[:0]
	for _, m := range list {
		if m != n {
			out = append(out, m)
		}
	}
	return out
}

// replaceSingles replaces remaining nodes one at a time by cheaper
// capacity, the most expensive first.
func (c *consolidator) replaceSingles() error {
	var cands []*consNode
	for _, n := range c.nodes {
		if n.candidate() && n.evictions()+len(n.pending) > 0 && c.p.Pools[n.pool].Consolidation.Policy != WhenEmpty {
			cands = append(cands, n)
		}
	}
	sort.SliceStable(cands, func(a, b int) bool {
		if cands[a].Price != cands[b].Price {
			return cands[a].Price > cands[b].Price
		}
		return cands[a].Name < cands[b].Name
	})
	for _, n := range cands {
		if !n.candidate() || c.expired() {
			continue
		}
		set := []*consNode{n}
		if why := c.budgetExceeded(set); why != "" {
			n.replaceWhy = why
			continue
		}
		replaceFloor, _ := c.replaceFloor(set)
		floor := max(c.minSaving(set), replaceFloor)
		if bound := c.cheapestHolding(set); bound > n.Price-floor {
			n.replaceWhy = fmt.Sprintf("no replacement saves the %s minimum: no instance type cheaper than %s has room for its pods", formatDollars(floor), formatDollars(bound))
			continue
		}
		sim, err := c.simulate(set, placement{newNodes: true})
		if err != nil {
			return err
		}
		if len(sim.plan.Unschedulable) > 0 {
			n.replaceWhy = c.unplacedReason(sim)
			continue
		}
		if saving := n.Price - sim.plan.TotalPrice; saving <= 0 {
			n.replaceWhy = "no cheaper node holds its pods"
			continue
		} else if saving < floor {
			n.replaceWhy = fmt.Sprintf("the best replacement saves %s, below the %s minimum", formatDollars(saving), formatDollars(floor))
			continue
		} else if why := c.replaceRefusal(set, sim.plan.NewNodes, saving); why != "" {
			n.replaceWhy = "replacing it: " + why
			continue
		} else if why := c.balancedRefusal(set, saving); why != "" {
			n.replaceWhy = "replacing it: " + why
			continue
		}
		if why := c.spotToSpot(n, sim); why != "" {
			n.replaceWhy = why
			continue
		}
		c.apply(set, sim.plan, sim, "")
	}
	return nil
}
