package solver

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Consolidation action kinds.
const (
	// ActionDelete removes nodes whose pods all fit on the other nodes (or
	// that run no pods); nothing is launched.
	ActionDelete = "Delete"
	// ActionReplace removes one node and launches cheaper capacity for the
	// pods the other nodes cannot take.
	ActionReplace = "Replace"
	// ActionMerge removes several nodes and launches fewer or cheaper ones.
	ActionMerge = "Merge"
)

// DefaultMinSaving and DefaultMinSavingPerPod make the smallest saving, in
// dollars per hour, that an action evicting pods must bring when none of
// its pools sets MinSaving or MinSavingFraction: $0.01/h (about $7 a month,
// roughly the gap between neighbouring small instance types) plus
// $0.001/h for every pod it evicts, so that a replacement worth pennies
// never evicts pods and one that evicts hundreds must save in proportion.
// Deleting an empty node evicts nothing and is never held back by them.
const (
	DefaultMinSaving       = 0.01
	DefaultMinSavingPerPod = 0.001
)

// DefaultMinReplaceFraction is the share of the removed nodes' price that
// an action launching nodes (Replace or Merge) must save, on top of the
// default minimum, when none of its pools sets MinSaving or
// MinSavingFraction. A replacement evicts every pod of the nodes it
// removes and launches a node, for a saving that lasts only while the load
// stays as it is: measured live beside Karpenter (docs/benchmarks.md,
// "Live against Karpenter"), merges of two or three nodes that saved 3–5 %
// of their price moved 15 pods each and made us evict more pods than
// Karpenter on a ramp and under diurnal churn. Below 10 % a replacement is
// mostly a move sideways between neighbouring families or architectures
// (the catalog's c, m and r of one size are 13–30 % apart, arm64 about 15 %
// cheaper than amd64), which the next change in load undoes; moving down a
// size, to spot, or two nodes onto one of a size saves far more. Deletes
// are not held to it: a delete saves the whole price of the node.
const DefaultMinReplaceFraction = 0.10

// ConsolidationPlan is what consolidation would do with the existing nodes
// now, and why it leaves every other node alone.
type ConsolidationPlan struct {
	// Actions are ordered best first: largest saving per pod moved, then
	// largest saving. Each is valid on the current cluster on its own, and
	// any subset of them together: no node one action moves pods onto is
	// removed by another, and every pool's budget covers all of them.
	Actions []Action `json:"actions"`
	// Blocked lists every existing node no action removes, with the reason.
	Blocked []NodeBlock `json:"blocked"`
	// CurrentPrice is the summed price of the existing nodes, $/h.
	CurrentPrice float64 `json:"currentPricePerHour"`
	// TargetPrice is what the cluster would cost packed from scratch: the
	// solver's plan for every running and pending pod with no existing
	// node. Pods that plan cannot place are left out of it.
	TargetPrice float64 `json:"targetPricePerHour"`
	// Saving is the summed saving of Actions, $/h.
	Saving float64 `json:"savingPerHour"`
}

// Action is one consolidation step: remove Nodes, launch Replacements, move
// the pods as Moves says.
type Action struct {
	// Kind is ActionDelete, ActionReplace or ActionMerge.
	Kind string `json:"kind"`
	// Nodes are the existing nodes removed.
	Nodes []string `json:"nodes"`
	// Replacements are the nodes launched (none for Delete). Their Pods
	// field is empty: Moves names the pods, by "new-<i>" for Replacements[i].
	Replacements []NewNode `json:"replacements,omitempty"`
	// Saving is the removed nodes' price minus the replacements', $/h.
	Saving float64 `json:"savingPerHour"`
	// Moves lists every evicted pod and where it is expected to land.
	Moves []Move `json:"moves,omitempty"`
	// Reason says in one sentence why the action is safe and worth it.
	Reason string `json:"reason"`
}

// Move is one pod evicted by an action and where the plan expects it to
// land: an existing node's name, or "new-<i>" for the action's
// Replacements[i].
type Move struct {
	Pod string `json:"pod"` // namespace/name
	To  string `json:"to"`
}

// NodeBlock is an existing node consolidation leaves alone, and why.
type NodeBlock struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// consNode is an existing or planned node in the consolidation's working
// copy of the cluster: Requested and Pods follow the actions taken so far.
type consNode struct {
	Node
	// pending are pending pods the plan expects on the node's free capacity;
	// they are counted in Requested and move with it, but are not evicted.
	pending []Pod
	orig    int // index into Problem.Nodes; -1 for a planned replacement
	pool    int // index into Problem.Pools; -1 when no pool owns it
	removed bool
	// blocked is why the node may not be disrupted at all now.
	blocked string
	// pinned is why it may not be removed: an action moves pods onto it.
	pinned string
	// deleteWhy and replaceWhy explain failed attempts to remove it.
	deleteWhy, replaceWhy string
	pdb                   map[int]int // evictable pods per PDB index
}

// movable returns the pods an action removing the node evicts: all but
// DaemonSet pods, which belong to the node and go with it.
func (n *consNode) movable() []Pod {
	out := make([]Pod, 0, len(n.Pods))
	for i := range n.Pods {
		if !strings.HasPrefix(n.Pods[i].Owner, "DaemonSet/") {
			out = append(out, n.Pods[i])
		}
	}
	return out
}

func (n *consNode) evictions() int {
	c := 0
	for i := range n.Pods {
		if !strings.HasPrefix(n.Pods[i].Owner, "DaemonSet/") {
			c++
		}
	}
	return c
}

// utilisation is the larger of the CPU and memory shares requested.
func (n *consNode) utilisation() float64 {
	u := 0.0
	for _, r := range []int{CPU, Memory} {
		if n.Allocatable[r] > 0 {
			u = max(u, float64(n.Requested[r])/float64(n.Allocatable[r]))
		}
	}
	return u
}

// consolidator is one consolidation planning run.
type consolidator struct {
	p       *Problem
	now     time.Time
	pools   map[string]int
	nodes   []*consNode
	byName  map[string]*consNode
	budget  []int       // per pool: nodes still allowed; negative = unlimited
	used    []Resources // per pool: capacity incl. planned replacements
	actions []Action
	// replacements counts planned nodes, for their working names.
	replacements int
	// reservedTaken counts, by capacity reservation (reservedName), the
	// replacements planned into it: a later action's replacements see
	// only what is left of it (lessReserved).
	reservedTaken map[string]int
}

// Consolidate plans consolidation actions for the problem's existing nodes:
// it deletes nodes whose pods fit elsewhere, merges underutilised nodes onto
// fewer or cheaper new ones and replaces nodes by cheaper ones, within every
// pool's policy, consolidateAfter, disruption budget and minimum saving and
// every PDB's allowance; and it explains, for every node it leaves alone,
// why. Pods move only where Solve would place them, so node affinity,
// taints, DaemonSets on new nodes, pool limits and topology constraints are
// those of the solver. It never modifies the problem.
//
// The search goes: empty nodes first; then single-node deletes, best saving
// per evicted pod first, each pod packed onto nodes no action may remove,
// then the fullest node that takes it, so that emptier nodes stay
// removable; then multi-node merges (see merge), growing the set while
// every added node pays at least the minimum saving; then single-node
// replacements. An action that launches nodes must also save
// DefaultMinReplaceFraction of the price it removes, and a merge launching
// one node may not launch it as dear as a removed one of its type and zone
// (see replaceRefusal). Each
// action is applied to a working copy before the next is
// sought, and a node that receives pods is never removed by a later action.
// When that plan saves less than fallbackCapture of the gap between the
// current price and the cluster packed from scratch, a second search puts
// merges first, as Karpenter's multi-node consolidation comes before its
// single-node one, and that plan is returned when it saves enough more for
// the extra pods it evicts (see mergesFirstPays).
//
// With Options.Deadline set, the search stops at the deadline and the plan
// holds the actions found by then (empty nodes are always deleted).
func Consolidate(p *Problem) (*ConsolidationPlan, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	p = p.normalized()
	now := p.Options.Now
	if now.IsZero() {
		now = time.Now()
	}
	type target struct {
		price float64
		err   error
	}
	targetDone := make(chan target, 1)
	go func() {
		plan, err := Solve(targetProblem(p))
		if err != nil {
			targetDone <- target{err: err}
			return
		}
		targetDone <- target{price: plan.TotalPrice}
	}()
	out, err := plan(p, now, deletesFirst)
	t := <-targetDone
	if err != nil {
		return nil, err
	}
	if t.err != nil {
		return nil, fmt.Errorf("pricing the cluster packed from scratch: %w", t.err)
	}
	if p.Options.stopAt().canceled() {
		return nil, errCanceled("consolidating")
	}
	out.TargetPrice = t.price
	if gap := out.CurrentPrice - out.TargetPrice; out.Saving < fallbackCapture*gap && !expired(p.Options.stopAt()) {
		merged, err := plan(p, now, mergesFirst)
		if err != nil {
			return nil, err
		}
		if p.Options.stopAt().canceled() {
			return nil, errCanceled("consolidating")
		}
		if mergesFirstPays(out, merged) {
			merged.TargetPrice = out.TargetPrice
			out = merged
		}
	}
	return out, nil
}

// mergesFirstPays reports whether the merges-first plan is kept over the
// deletes-first one: it must save more, and when it evicts more pods, its
// extra saving must bring DefaultMinSavingPerPod for every extra pod, as an
// action of its own evicting them would. Otherwise the saving of the two
// is close for the pods it moves and the deletes are kept: measured on
// suite (f)'s 62 nodes of the AWS catalog, merges first saved $1.30/h
// against $1.12/h for the deletes, but evicted all 1,218 pods against 251,
// $0.0002/h more for each extra pod.
func mergesFirstPays(deletes, merges *ConsolidationPlan) bool {
	extra := merges.Saving - deletes.Saving
	if extra <= 0 {
		return false
	}
	more := evictedPods(merges) - evictedPods(deletes)
	return more <= 0 || extra >= DefaultMinSavingPerPod*float64(more)
}

// evictedPods counts the pods the plan's actions evict.
func evictedPods(plan *ConsolidationPlan) int {
	n := 0
	for i := range plan.Actions {
		n += len(plan.Actions[i].Moves)
	}
	return n
}

// fallbackCapture is the share of the possible saving (the current price
// less the price of the cluster packed from scratch) below which
// Consolidate also plans merges first and keeps that plan when it saves
// more: deleting nodes onto others' free room moves the fewest pods per
// dollar, but each delete pins the nodes it fills, and on a cluster of
// half-empty nodes that can leave much of the saving behind.
const fallbackCapture = 0.9

// targetProblem is the problem with every running pod pending again and no
// existing node: the cluster packed from scratch.
func targetProblem(p *Problem) *Problem {
	t := *p
	t.Nodes = nil
	t.Pods = nil
	for i := range p.Nodes {
		for _, pod := range p.Nodes[i].Pods {
			if !strings.HasPrefix(pod.Owner, "DaemonSet/") {
				t.Pods = append(t.Pods, pod)
			}
		}
	}
	t.Pods = append(t.Pods, p.Pods...)
	t.Pools = make([]Pool, len(p.Pools))
	copy(t.Pools, p.Pools)
	for i := range t.Pools {
		t.Pools[i].Used = Resources{}
	}
	return &t
}

// podRequests is what a pod takes of a node: its requests, and one pod slot.
func podRequests(p *Pod) Resources {
	r := p.Requests
	r[Pods] = max(r[Pods], 1)
	return r
}

// setup builds the working copy, prices nodes the snapshot could not price,
// reserves room for pending pods and decides which nodes are never
// candidates.
func (c *consolidator) setup() error {
	p := c.p
	c.budget = make([]int, len(p.Pools))
	c.used = make([]Resources, len(p.Pools))
	for i := range p.Pools {
		c.pools[p.Pools[i].Name] = i
		c.budget[i] = p.Pools[i].Consolidation.NodesAllowed
		c.used[i] = p.Pools[i].Used
	}
	c.nodes = make([]*consNode, len(p.Nodes))
	for i := range p.Nodes {
		n := &consNode{Node: p.Nodes[i], orig: i, pool: -1}
		n.Pods = append([]Pod(nil), n.Pods...)
		if pi, ok := c.pools[n.Pool]; ok {
			n.pool = pi
		} else if pi, ok := c.pools[n.Labels[LabelNodePool]]; ok && n.Pool == "" {
			n.pool = pi
		}
		if n.Price <= 0 {
			n.Price = c.offeringPrice(n)
		}
		c.nodes[i] = n
		c.byName[n.Name] = n
	}
	if len(p.Pods) > 0 {
		// Pending pods go where the solver would put them; that room is not
		// free for consolidation, and moves with a node that is removed.
		plan, err := Solve(p)
		if err != nil {
			return fmt.Errorf("placing pending pods: %w", err)
		}
		for _, e := range plan.Existing {
			if n := c.byName[e.Node]; n != nil {
				pod := p.Pods[e.Pod]
				n.pending = append(n.pending, pod)
				n.Requested = n.Requested.Add(podRequests(&pod))
			}
		}
	}
	for i := range p.PDBs {
		pdb := &p.PDBs[i]
		for _, n := range c.nodes {
			for _, pod := range n.movable() {
				if pod.Namespace == pdb.Namespace && pdb.Selector.Matches(pod.Labels) {
					if n.pdb == nil {
						n.pdb = map[int]int{}
					}
					n.pdb[i]++
				}
			}
		}
	}
	for _, n := range c.nodes {
		n.blocked = c.staticBlock(n)
	}
	return nil
}

// offeringPrice looks up a node's price in the catalog by its type, zone
// and capacity type; zero when unknown.
func (c *consolidator) offeringPrice(n *consNode) float64 {
	types := c.p.InstanceTypes
	if pi, ok := c.pools[n.Pool]; ok {
		types = c.p.PoolTypes(pi)
	}
	for i := range types {
		it := &types[i]
		if it.Name != n.InstanceType {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == n.Zone && o.CapacityType == n.CapacityType {
				return o.Price
			}
		}
	}
	return 0
}

// apply records an action removing the nodes, with the simulation's plan
// for their pods (nil sim: they have none), and updates the working copy.
func (c *consolidator) apply(set []*consNode, plan *Plan, sim *simulation, reason string) {
	a := Action{}
	removed := 0.0
	for _, n := range set {
		a.Nodes = append(a.Nodes, n.Name)
		removed += n.Price
		n.removed = true
		if c.budget[n.pool] > 0 {
			c.budget[n.pool]--
		}
	}
	a.Saving = round6(removed - plan.TotalPrice)
	switch {
	case len(plan.NewNodes) == 0:
		a.Kind = ActionDelete
	case len(set) == 1:
		a.Kind = ActionReplace
	default:
		a.Kind = ActionMerge
	}
	dest := map[int]string{} // sub-problem pod index → destination
	var targets []string
	seen := map[string]bool{}
	for _, e := range plan.Existing {
		dest[e.Pod] = e.Node
		to := c.byName[e.Node]
		pod := sim.problem.Pods[e.Pod]
		if sim.pending[e.Pod] {
			to.pending = append(to.pending, pod)
		} else {
			to.Pods = append(to.Pods, pod)
		}
		to.Requested = to.Requested.Add(podRequests(&pod))
		if to.orig >= 0 && to.pinned == "" {
			to.pinned = fmt.Sprintf("it takes pods from %s in another action", names(set))
		}
		if !seen[e.Node] {
			seen[e.Node] = true
			targets = append(targets, e.Node)
		}
	}
	for i, nn := range plan.NewNodes {
		name := "new-" + strconv.Itoa(i)
		work := c.launched(nn)
		for _, pi := range nn.Pods {
			dest[pi] = name
			if sim.pending[pi] {
				work.pending = append(work.pending, sim.problem.Pods[pi])
			} else {
				work.Pods = append(work.Pods, sim.problem.Pods[pi])
			}
		}
		nn.Pods = nil
		if nn.reservation != "" {
			if c.reservedTaken == nil {
				c.reservedTaken = map[string]int{}
			}
			c.reservedTaken[nn.reservation]++
		}
		a.Replacements = append(a.Replacements, nn)
	}
	if sim != nil {
		for i := range sim.problem.Pods {
			if !sim.pending[i] {
				a.Moves = append(a.Moves, Move{Pod: sim.problem.Pods[i].Key(), To: dest[i]})
			}
		}
	}
	if reason == "" {
		reason = c.actionReason(&a, set, targets, removed)
	}
	a.Reason = reason
	c.actions = append(c.actions, a)
}

// launched adds a planned replacement to the working copy. It takes no
// further pods (so that actions stay independent of each other) but its
// pods count for topology, and its capacity for its pool's limits.
func (c *consolidator) launched(nn NewNode) *consNode {
	c.replacements++
	name := "rightsize-planned-" + strconv.Itoa(c.replacements)
	labels := map[string]string{}
	var capacity Resources
	pi := c.pools[nn.Pool]
	types := c.p.PoolTypes(pi)
	for i := range types {
		if it := &types[i]; it.Name == nn.InstanceType {
			for k, v := range it.Labels {
				labels[k] = v
			}
			capacity = it.Capacity
			break
		}
	}
	for k, v := range poolLabels(&c.p.Pools[pi]) {
		labels[k] = v
	}
	for k, v := range nn.Labels { // the values the node's pods chose (team In [a, b])
		labels[k] = v
	}
	labels[LabelZone], labels[LabelCapacityType], labels[LabelHostname] = nn.Zone, nn.CapacityType, name
	c.used[pi] = c.used[pi].Add(capacity)
	n := &consNode{orig: -1, pool: pi, Node: Node{
		Name: name, Pool: nn.Pool, InstanceType: nn.InstanceType, Zone: nn.Zone, CapacityType: nn.CapacityType,
		Price: nn.Price, Labels: labels, Taints: c.p.Pools[pi].Taints, Allocatable: nn.Allocatable, Requested: nn.Requested,
		Unschedulable: true, InFlight: true,
	}}
	c.nodes = append(c.nodes, n)
	c.byName[name] = n
	return n
}
