package solver

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// roomElsewhere is a quick necessary test for deleting the nodes: the other
// schedulable nodes together have room for their pods. It returns why not,
// or "".
func (c *consolidator) roomElsewhere(set []*consNode) string {
	var need, free Resources
	evicted, pending := 0, 0
	for _, n := range set {
		for _, pod := range n.movable() {
			need = need.Add(podRequests(&pod))
			evicted++
		}
		for i := range n.pending {
			need = need.Add(podRequests(&n.pending[i]))
			pending++
		}
	}
	in := map[*consNode]bool{}
	for _, n := range set {
		in[n] = true
	}
	for _, n := range c.nodes {
		if n.removed || n.Unschedulable || in[n] {
			continue
		}
		f := n.Allocatable.Sub(n.Requested)
		for r := range f {
			free[r] += max(f[r], 0)
		}
	}
	for r := range need {
		if need[r] > free[r] {
			return fmt.Sprintf("%s %s free and the other nodes have %s", podsNeed(evicted, pending), c.quantity(r, need[r]), c.quantity(r, free[r]))
		}
	}
	return ""
}

// podsNeed is the subject and verb of a sentence about a node's pods:
// "its 3 pods need", "the 1 pending pod that would land on it needs".
func podsNeed(evicted, pending int) string {
	verb := " need"
	if evicted+pending == 1 {
		verb = " needs"
	}
	var parts []string
	if evicted > 0 {
		parts = append(parts, "its "+plural(evicted, "pod"))
	}
	if pending > 0 {
		parts = append(parts, "the "+plural(pending, "pending pod")+" that would land on it")
	}
	return strings.Join(parts, " and ") + verb
}

// quantity renders an amount of one resource with its name.
func (c *consolidator) quantity(r int, v int64) string {
	switch r {
	case CPU:
		return FormatQuantity(r, v) + " vCPU"
	case Pods:
		return plural(int(v), "pod slot")
	}
	return FormatQuantity(r, v) + " " + c.p.ResourceName(r)
}

// unplacedReason explains why a simulation could not place every pod.
func (c *consolidator) unplacedReason(sim *simulation) string {
	if sim.scattered != "" {
		return sim.scattered
	}
	u := sim.plan.Unschedulable[0]
	pod := &sim.problem.Pods[u.Pod]
	if len(sim.problem.InstanceTypes) == 0 {
		return fmt.Sprintf("its pod %s (%s) fits on no other node", pod.Key(), c.p.describe(pod.Requests))
	}
	return fmt.Sprintf("its pod %s fits on no other node and no new one: %s", pod.Key(), u.Reason)
}

// simulation is one what-if: the pods of some nodes re-placed by Solve.
type simulation struct {
	problem *Problem
	from    []*consNode // source node of each pod of problem
	pending []bool      // the pod is pending, not evicted
	plan    *Plan
	// scattered is why kube-scheduler would not place the pods as plan
	// does (see scatter); plan then lists the pod it leaves without room.
	scattered string
}

// placement says where a simulation may put the pods of the nodes it
// removes.
type placement struct {
	// newNodes lets the simulation launch new nodes for them; without it
	// they go only onto the other nodes' free room.
	newNodes bool
	// receiverFloor keeps the pods off candidates (nodes an action may
	// still remove) used less than it: pods moved onto a node pin it.
	// Zero lets every node take pods.
	receiverFloor float64
}

// keptOff reports whether the placement keeps pods off the node.
func (pl placement) keptOff(n *consNode) bool {
	return pl.receiverFloor > 0 && n.candidate() && n.utilisation() < pl.receiverFloor
}

// simulate asks Solve where the pods of the nodes would go if the nodes
// were removed: onto the other nodes' free room (the fullest first, so that
// emptier nodes stay removable) that the placement allows, and onto new
// nodes when it allows them. A plan that launches nothing (a delete) must
// also find the pods room as kube-scheduler would place them (see scatter).
func (c *consolidator) simulate(set []*consNode, place placement) (*simulation, error) {
	p := c.p
	sim := &simulation{problem: &Problem{ExtendedResources: p.ExtendedResources, DaemonSets: p.DaemonSets, Options: Options{Now: c.now, Done: p.Options.Done, noBound: true}}}
	in := map[*consNode]bool{}
	minReq := Resources{}
	for r := range minReq {
		minReq[r] = math.MaxInt64
	}
	for _, n := range set {
		in[n] = true
		for _, pod := range n.movable() {
			sim.problem.Pods = append(sim.problem.Pods, pod)
			sim.from = append(sim.from, n)
			sim.pending = append(sim.pending, false)
		}
		for _, pod := range n.pending {
			sim.problem.Pods = append(sim.problem.Pods, pod)
			sim.from = append(sim.from, n)
			sim.pending = append(sim.pending, true)
		}
	}
	for i := range sim.problem.Pods {
		req := podRequests(&sim.problem.Pods[i])
		for r := range req {
			minReq[r] = min(minReq[r], req[r])
		}
	}
	// Nodes with room for the smallest pod come first, fullest first; the
	// rest, which take no pod, follow for topology counts.
	type ranked struct {
		n    *consNode
		util float64
	}
	var open []ranked
	var closed []*consNode
	for _, n := range c.nodes {
		if n.removed || in[n] {
			continue
		}
		if !n.Unschedulable && minReq.Fits(n.Allocatable.Sub(n.Requested)) && !place.keptOff(n) {
			open = append(open, ranked{n, n.utilisation()})
		} else {
			closed = append(closed, n)
		}
	}
	// Nodes that no action may remove (pinned by an earlier action, or
	// blocked) come first: filling them costs no later action anything,
	// while pods moved onto a candidate pin it.
	slices.SortStableFunc(open, func(a, b ranked) int {
		if ca, cb := a.n.candidate(), b.n.candidate(); ca != cb {
			if cb {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.util, a.util)
	})
	sim.problem.Nodes = make([]Node, 0, len(open)+len(closed))
	for _, o := range open {
		sim.problem.Nodes = append(sim.problem.Nodes, o.n.Node)
	}
	for _, n := range closed {
		// They count for topology as they are; a candidate the placement
		// keeps off is marked unschedulable so that it takes no pod (the
		// flag only stops placement).
		node := n.Node
		if place.keptOff(n) {
			node.Unschedulable = true
		}
		sim.problem.Nodes = append(sim.problem.Nodes, node)
	}
	if place.newNodes {
		// The capacity reservations the earlier actions' replacements
		// draw on have that much less left.
		sim.problem.InstanceTypes = lessReserved(p.InstanceTypes, c.reservedTaken)
		sim.problem.Pools = make([]Pool, len(p.Pools))
		copy(sim.problem.Pools, p.Pools)
		for i := range sim.problem.Pools {
			sim.problem.Pools[i].Used = c.used[i]
			sim.problem.Pools[i].InstanceTypes = lessReserved(p.Pools[i].InstanceTypes, c.reservedTaken)
		}
	}
	plan, err := Solve(sim.problem)
	if err != nil {
		return nil, fmt.Errorf("simulating the removal of %s: %w", names(set), err)
	}
	sim.plan = plan
	if len(plan.NewNodes) == 0 && len(plan.Unschedulable) == 0 && len(plan.Existing) > 0 {
		if sim.scattered = c.scatter(sim); sim.scattered != "" {
			plan.Unschedulable = []Unschedulable{{Pod: plan.Existing[0].Pod, Reason: sim.scattered}}
		}
	}
	return sim, nil
}

// cheapestHolding is a quick estimate of what new capacity for the nodes'
// pods costs at least: the cheapest offering any pool allows whose
// allocatable holds the largest pod, or the pods' summed requests at the
// lowest price per unit of each resource, whichever is higher. It ignores
// the other nodes' free room, which the earlier delete already tried.
func (c *consolidator) cheapestHolding(set []*consNode) float64 {
	var need, largest Resources
	for _, n := range set {
		for _, pod := range append(n.movable(), n.pending...) {
			req := podRequests(&pod)
			need = need.Add(req)
			for r := range req {
				largest[r] = max(largest[r], req[r])
			}
		}
	}
	best := math.Inf(1)
	perUnit := make([]float64, MaxResources)
	for r := range perUnit {
		perUnit[r] = math.Inf(1)
	}
	for _, types := range c.p.typeLists() {
		for ti := range types {
			it := &types[ti]
			alloc := it.Allocatable()
			for _, o := range it.Offerings {
				if largest.Fits(alloc) {
					best = min(best, o.Price)
				}
				for r := range alloc {
					if alloc[r] > 0 {
						perUnit[r] = min(perUnit[r], o.Price/float64(alloc[r]))
					}
				}
			}
		}
	}
	fluid := 0.0
	for r := range need {
		if need[r] > 0 && !math.IsInf(perUnit[r], 1) {
			fluid = max(fluid, float64(need[r])*perUnit[r])
		}
	}
	if math.IsInf(best, 1) {
		return math.Inf(1)
	}
	return max(best, fluid)
}

// scatter replays a simulation that moves every pod onto existing nodes as
// kube-scheduler would place the evicted pods, and says why they would not
// all find room, or "". kube-scheduler takes them one at a time (the replay
// takes the smallest first, the order that leaves the least room for the
// largest) and puts each on the feasible node its default scoring ranks
// highest (NodeResourcesFit's LeastAllocated plus
// NodeResourcesBalancedAllocation, over CPU and memory): it spreads pods
// onto the emptiest nodes where the simulation packs them onto the fullest.
// A delete whose pods fit only as the simulation packs them leaves one
// pending; the provisioner launches a node for it, which the next plan
// deletes again. That churn is what this check prevents.
//
// A pod whose placement depends on other pods (topology spread, pod
// affinity or anti-affinity, host ports) keeps to the nodes sharing every
// topology domain of its constraints with the node the simulation chose,
// where the same counts hold. The replay judges the rest on resources, node
// affinity and taints, and ignores preferred terms. The action keeps the
// simulation's moves: they pin their nodes, which keeps the emptier nodes
// removable by later actions.
func (c *consolidator) scatter(sim *simulation) string {
	nodes := sim.problem.Nodes
	index := make(map[string]int, len(nodes))
	free := make([]Resources, len(nodes))
	for i := range nodes {
		index[nodes[i].Name] = i
		free[i] = nodes[i].Allocatable.Sub(nodes[i].Requested)
	}
	chosen := make([]int, len(sim.problem.Pods)) // the simulation's node of each pod
	for _, e := range sim.plan.Existing {
		chosen[e.Pod] = index[e.Node]
	}
	order := make([]int, len(sim.problem.Pods))
	for i := range order {
		order[i] = i
	}
	pods := sim.problem.Pods
	slices.SortStableFunc(order, func(a, b int) int {
		ra, rb := pods[a].Requests, pods[b].Requests
		return cmp.Or(cmp.Compare(ra[CPU], rb[CPU]), cmp.Compare(ra[Memory], rb[Memory]))
	})
	for _, pi := range order {
		pod := &pods[pi]
		req := podRequests(pod)
		best, bestScore := -1, math.Inf(-1)
		for ni := range nodes {
			n := &nodes[ni]
			if n.Unschedulable || fitCount(free[ni], req) == 0 || !sameDomains(pod, n, &nodes[chosen[pi]]) ||
				!matchesAffinity(pod.NodeSelector, pod.Affinity, MapLabels(n.Labels)) || untolerated(pod.Tolerations, n.Taints) != nil {
				continue
			}
			if score := schedulerScore(n.Allocatable, free[ni].Sub(req)); score > bestScore {
				best, bestScore = ni, score
			}
		}
		if best < 0 {
			return fmt.Sprintf("kube-scheduler would spread its pods onto the emptiest nodes and leave %s (%s) without room", pod.Key(), c.p.describe(pod.Requests))
		}
		free[best] = free[best].Sub(req)
	}
	return ""
}

// sameDomains reports whether node n may stand in for node at for the pod:
// it shares every topology domain the pod's spread and pod-affinity terms
// count in, and is the same node when the pod has host ports.
func sameDomains(pod *Pod, n, at *Node) bool {
	if len(pod.HostPorts) > 0 && n.Name != at.Name {
		return false
	}
	same := func(key string) bool {
		if key == LabelHostname {
			return n.Name == at.Name
		}
		return n.Labels[key] == at.Labels[key]
	}
	for key := range pod.constraintKeys() {
		if !same(key) {
			return false
		}
	}
	return true
}

// schedulerScore is kube-scheduler's default resource score of a node with
// allocatable alloc left with free after taking a pod: LeastAllocated (the
// mean unrequested share of CPU and memory) plus BalancedAllocation (one
// less the standard deviation of their requested shares), each weight 1.
func schedulerScore(alloc, free Resources) float64 {
	var unused [2]float64
	for i, r := range [2]int{CPU, Memory} {
		if alloc[r] > 0 {
			unused[i] = float64(free[r]) / float64(alloc[r])
		}
	}
	least := (unused[0] + unused[1]) / 2
	balanced := 1 - math.Abs(unused[0]-unused[1])/2
	return least + balanced
}
