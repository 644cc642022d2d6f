package solver

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
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

// maxMergeNodes bounds the nodes one Merge removes, as Karpenter bounds its
// multi-node consolidation to 100 candidates: a bigger action drains too
// much at once and takes too long to simulate.
const maxMergeNodes = 100

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
	// receiverFloor keeps simulations from moving pods onto candidates
	// (nodes an action may still remove) used less than it: pods moved
	// onto a node pin it. Zero lets every node take pods.
	receiverFloor float64
	// mergeFirst selects the merge-first search (see plan).
	mergeFirst bool
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
// replacements. Each action is applied to a working copy before the next is
// sought, and a node that receives pods is never removed by a later action.
// When that plan saves less than fallbackCapture of the gap between the
// current price and the cluster packed from scratch, a second search puts
// merges first, as Karpenter's multi-node consolidation comes before its
// single-node one, and the plan saving more is returned.
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
	out, err := plan(p, now, false)
	t := <-targetDone
	if err != nil {
		return nil, err
	}
	if t.err != nil {
		return nil, fmt.Errorf("pricing the cluster packed from scratch: %w", t.err)
	}
	out.TargetPrice = t.price
	if gap := out.CurrentPrice - out.TargetPrice; out.Saving < fallbackCapture*gap && !expired(p.Options.Deadline) {
		merged, err := plan(p, now, true)
		if err != nil {
			return nil, err
		}
		if merged.Saving > out.Saving {
			merged.TargetPrice = out.TargetPrice
			out = merged
		}
	}
	return out, nil
}

// fallbackCapture is the share of the possible saving (the current price
// less the price of the cluster packed from scratch) below which
// Consolidate also plans merges first and keeps that plan when it saves
// more: deleting nodes onto others' free room moves the fewest pods per
// dollar, but each delete pins the nodes it fills, and on a cluster of
// half-empty nodes that can leave much of the saving behind.
const fallbackCapture = 0.9

// plan runs one consolidation search. Without mergeFirst it goes in the
// order Consolidate documents; with it, merges come right after empty
// nodes, each grows to the largest group whose merge pays the minimum
// saving as a whole (Karpenter's multi-node consolidation takes the largest
// group that consolidates at all), and merged pods go only onto new nodes,
// nodes no action may remove, and candidates at least as used as every
// node of the group, so that the emptier nodes stay removable.
func plan(p *Problem, now time.Time, mergeFirst bool) (*ConsolidationPlan, error) {
	c := &consolidator{p: p, now: now, pools: map[string]int{}, byName: map[string]*consNode{}, mergeFirst: mergeFirst}
	out := &ConsolidationPlan{}
	if err := c.setup(); err != nil {
		return nil, err
	}
	for _, n := range c.nodes {
		out.CurrentPrice += n.Price
	}
	steps := []func() error{c.deleteEmpty, c.deleteSingles, c.merge, c.replaceSingles}
	if mergeFirst {
		steps = []func() error{c.deleteEmpty, c.merge, c.deleteSingles, c.replaceSingles}
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

// staticBlock returns why the node can never be disrupted in this plan, or "".
func (c *consolidator) staticBlock(n *consNode) string {
	switch {
	case n.InFlight:
		return "it is still launching"
	case n.DoNotDisrupt:
		return "the node has do-not-disrupt"
	case n.pool < 0:
		return "no NodePool owns it, so consolidation leaves it alone"
	case n.Price <= 0:
		return fmt.Sprintf("its price is unknown (%s %s %s is not in the catalog), so no saving can be shown", n.InstanceType, n.Zone, n.CapacityType)
	}
	for i := range n.Pods {
		if n.Pods[i].DoNotDisrupt {
			return fmt.Sprintf("pod %s has do-not-disrupt", n.Pods[i].Key())
		}
	}
	for i := range n.Pods {
		if !n.Pods[i].Controller && !strings.HasPrefix(n.Pods[i].Owner, "DaemonSet/") {
			return fmt.Sprintf("pod %s has no controller and would be lost", n.Pods[i].Key())
		}
	}
	pool := &c.p.Pools[n.pool]
	cons := &pool.Consolidation
	if pods := n.evictions(); cons.Policy == WhenEmpty && pods > 0 {
		return fmt.Sprintf("NodePool %s consolidates only empty nodes (WhenEmpty) and it runs %s", pool.Name, plural(pods, "pod"))
	}
	if cons.After > 0 {
		last := n.LastPodChange
		if last.IsZero() {
			last = n.Created
		}
		if !last.IsZero() && c.now.Sub(last) < cons.After {
			what := "pods changed"
			if n.LastPodChange.IsZero() {
				what = "it launched"
			}
			return fmt.Sprintf("%s %s ago; consolidateAfter is %s", what, formatAge(c.now.Sub(last)), formatAge(cons.After))
		}
	}
	if cons.NodesAllowed == 0 {
		return fmt.Sprintf("NodePool %s's disruption budget allows 0 more nodes now", pool.Name)
	}
	if why := c.pdbExceeded([]*consNode{n}); why != "" {
		return why
	}
	return ""
}

// formatAge renders a duration as a person says it: "45s", "2m", "1h30m".
func formatAge(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(max(d, 0)/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	}
	s := strconv.Itoa(int(d/time.Hour)) + "h"
	if m := int(d % time.Hour / time.Minute); m > 0 {
		s += strconv.Itoa(m) + "m"
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func formatDollars(x float64) string {
	return "$" + strconv.FormatFloat(math.Round(x*10000)/10000, 'f', -1, 64) + "/h"
}

// pdbExceeded returns why evicting the pods of the nodes together would
// exceed a PDB's allowance, or "".
func (c *consolidator) pdbExceeded(set []*consNode) string {
	if len(c.p.PDBs) == 0 {
		return ""
	}
	count := map[int]int{}
	for _, n := range set {
		for i, k := range n.pdb {
			count[i] += k
		}
	}
	worst := -1
	for i, k := range count {
		if k > int(c.p.PDBs[i].DisruptionsAllowed) && (worst < 0 || i < worst) {
			worst = i
		}
	}
	if worst < 0 {
		return ""
	}
	pdb := &c.p.PDBs[worst]
	allowed := max(int(pdb.DisruptionsAllowed), 0)
	if allowed == 0 {
		return fmt.Sprintf("PDB %s/%s allows 0 disruptions", pdb.Namespace, pdb.Name)
	}
	return fmt.Sprintf("PDB %s/%s allows %s and this would evict %d of its pods", pdb.Namespace, pdb.Name, plural(allowed, "disruption"), count[worst])
}

// budgetExceeded returns why removing the nodes would exceed a pool's
// disruption budget, counting the actions already planned, or "".
func (c *consolidator) budgetExceeded(set []*consNode) string {
	count := map[int]int{}
	for _, n := range set {
		count[n.pool]++
	}
	for pi, k := range count {
		if b := c.budget[pi]; b >= 0 && k > b {
			return fmt.Sprintf("NodePool %s's disruption budget allows %d more nodes now", c.p.Pools[pi].Name, b)
		}
	}
	return ""
}

// minSaving is the smallest saving an action removing the nodes must bring:
// the strictest of their pools' thresholds, the default (DefaultMinSaving
// plus DefaultMinSavingPerPod per evicted pod) for a pool that sets none;
// a pool that sets zero (MinSavingSet) has no minimum. Actions that evict
// no pod need only save something.
func (c *consolidator) minSaving(set []*consNode) float64 {
	price, evicted := 0.0, 0
	for _, n := range set {
		price += n.Price
		evicted += n.evictions()
	}
	if evicted == 0 {
		return 1e-9
	}
	floor := 0.0
	for _, n := range set {
		cons := &c.p.Pools[n.pool].Consolidation
		if !cons.MinSavingSet && cons.MinSaving == 0 && cons.MinSavingFraction == 0 {
			floor = max(floor, DefaultMinSaving+DefaultMinSavingPerPod*float64(evicted))
			continue
		}
		floor = max(floor, cons.MinSaving, cons.MinSavingFraction*price)
	}
	return max(floor, 1e-9)
}

// expired reports whether Options.Deadline has passed: the search then
// stops and the plan holds the actions found so far.
func (c *consolidator) expired() bool {
	d := c.p.Options.Deadline
	return !d.IsZero() && time.Now().After(d)
}

// candidate reports whether the node may still be removed.
func (n *consNode) candidate() bool {
	return n.orig >= 0 && !n.removed && n.blocked == "" && n.pinned == ""
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
		if why := c.roomElsewhere(set); why != "" {
			n.deleteWhy = why
			continue
		}
		sim, err := c.simulate(set, false)
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
}

// simulate asks Solve where the pods of the nodes would go if the nodes
// were removed: onto the other nodes' free room (the fullest first, so that
// emptier nodes stay removable), and onto new nodes when allowNew.
func (c *consolidator) simulate(set []*consNode, allowNew bool) (*simulation, error) {
	p := c.p
	sim := &simulation{problem: &Problem{ExtendedResources: p.ExtendedResources, DaemonSets: p.DaemonSets, Options: Options{Now: c.now, noBound: true}}}
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
		if !n.Unschedulable && minReq.Fits(n.Allocatable.Sub(n.Requested)) && !c.keptOff(n) {
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
		// They count for topology as they are; a candidate kept off by
		// receiverFloor is marked unschedulable so that it takes no pod
		// (the flag only stops placement).
		node := n.Node
		if c.keptOff(n) {
			node.Unschedulable = true
		}
		sim.problem.Nodes = append(sim.problem.Nodes, node)
	}
	if allowNew {
		sim.problem.InstanceTypes = p.InstanceTypes
		sim.problem.Pools = make([]Pool, len(p.Pools))
		copy(sim.problem.Pools, p.Pools)
		for i := range sim.problem.Pools {
			sim.problem.Pools[i].Used = c.used[i]
		}
	}
	plan, err := Solve(sim.problem)
	if err != nil {
		return nil, fmt.Errorf("simulating the removal of %s: %w", names(set), err)
	}
	sim.plan = plan
	return sim, nil
}

func names(set []*consNode) string {
	out := make([]string, len(set))
	for i, n := range set {
		out[i] = n.Name
	}
	return strings.Join(out, ", ")
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

// actionReason says why an action is safe and worth it, in one sentence.
func (c *consolidator) actionReason(a *Action, set []*consNode, targets []string, removed float64) string {
	var where []string
	if len(targets) > 0 {
		where = append(where, "on "+listNames(targets, 3))
	}
	if len(a.Replacements) > 0 {
		types := map[string]int{}
		var order []string
		for _, r := range a.Replacements {
			key := r.InstanceType + " " + r.CapacityType
			if types[key] == 0 {
				order = append(order, key)
			}
			types[key]++
		}
		var parts []string
		for _, k := range order {
			if types[k] == 1 {
				parts = append(parts, "a new "+k)
			} else {
				parts = append(parts, strconv.Itoa(types[k])+" new "+k)
			}
		}
		where = append(where, "on "+andList(parts)+" ("+formatDollars(removed-a.Saving)+")")
	}
	subject := "its"
	if len(set) > 1 {
		subject = "their"
	}
	if len(a.Replacements) == 0 {
		verb := "deleting it"
		if len(set) > 1 {
			verb = "deleting them"
		}
		return fmt.Sprintf("%s %s fit %s within every PDB and budget; %s saves %s",
			subject, plural(len(a.Moves), "pod"), strings.Join(where, " and "), verb, formatDollars(a.Saving))
	}
	return fmt.Sprintf("%s %s fit %s within every PDB and budget, saving %s of %s (%.0f%%)",
		subject, plural(len(a.Moves), "pod"), strings.Join(where, " and "), formatDollars(a.Saving), formatDollars(removed), 100*a.Saving/removed)
}

// andList joins "a", "b" and "c" as "a, b and c".
func andList(parts []string) string {
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

func listNames(names []string, n int) string {
	if len(names) <= n {
		return andList(names)
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d other nodes", len(names)-n)
}

func (c *consolidator) keptOff(n *consNode) bool {
	return c.receiverFloor > 0 && n.candidate() && n.utilisation() < c.receiverFloor
}

// merge replaces groups of remaining nodes by fewer or cheaper nodes (and
// the other nodes' free room). Candidates go best first: the most a node
// costs beyond the fluid price of its pods, less the minimum saving its
// evictions must bring. For each group it tries 2, 4, 8, … of the first
// nodes, then bisects between the last size that paid and the first that
// did not, and keeps the largest size whose added nodes still bring at
// least the minimum saving of an action of their own (in the merge-first
// search: whose merge pays the minimum as a whole). A group holds the
// nodes of one pool, so that each pool's minimum saving is met by its own
// nodes. It stops after a few groups in a row that save nothing.
func (c *consolidator) merge() error {
	var cands []*consNode
	for _, n := range c.nodes {
		if n.candidate() && n.evictions()+len(n.pending) > 0 && c.p.Pools[n.pool].Consolidation.Policy != WhenEmpty {
			cands = append(cands, n)
		}
	}
	// Best first: what a node costs beyond the fluid price of its pods
	// (its price times its unused share), less the minimum saving its
	// evictions must bring.
	worth := func(n *consNode) float64 { return n.Price*(1-n.utilisation()) - c.minSaving([]*consNode{n}) }
	sort.SliceStable(cands, func(a, b int) bool {
		wa, wb := worth(cands[a]), worth(cands[b])
		if wa != wb {
			return wa > wb
		}
		return cands[a].Name < cands[b].Name
	})
	failures := 0
	for failures < 3 && !c.expired() {
		// The group: the first candidates, as many as budgets and
		// PDBs allow together.
		var group []*consNode
		for _, n := range cands {
			if len(group) == maxMergeNodes {
				break
			}
			// One pool per merge: each pool's minimum saving is then met by
			// its own nodes, not by another pool's saving.
			if !n.candidate() || len(group) > 0 && n.pool != group[0].pool {
				continue
			}
			try := append(group[:len(group):len(group)], n)
			if c.budgetExceeded(try) != "" || c.pdbExceeded(try) != "" {
				continue
			}
			group = try
		}
		if len(group) == 0 {
			return nil
		}
		if len(group) == 1 {
			// Alone in its pool (or its budget): nothing to merge it with.
			cands = removeNode(cands, group[0])
			continue
		}
		var best *simulation
		bestK, bestSaving := 0, 0.0
		// try simulates merging the first k nodes of the group and keeps
		// it when it pays, and its nodes beyond the best so far pay too.
		try := func(k int) (bool, error) {
			if c.mergeFirst {
				for _, n := range group[:k] {
					c.receiverFloor = max(c.receiverFloor, n.utilisation())
				}
			}
			sim, err := c.simulate(group[:k], true)
			c.receiverFloor = 0
			if err != nil {
				return false, err
			}
			saving := -math.Inf(1)
			if len(sim.plan.Unschedulable) == 0 {
				price := 0.0
				for _, n := range group[:k] {
					price += n.Price
				}
				saving = price - sim.plan.TotalPrice
			}
			pays := saving >= c.minSaving(group[:k])
			if best != nil && k > bestK && !c.mergeFirst {
				// The nodes added must pay their way.
				pays = pays && saving-bestSaving >= c.minSaving(group[bestK:k])
			}
			if pays {
				best, bestK, bestSaving = sim, k, saving
			}
			return pays, nil
		}
		// Double the size while it pays, then bisect between the last size
		// that paid and the first that did not. The merge-first search
		// wants the largest group that pays as a whole: it tries the whole
		// group first.
		failed := 0
		if c.mergeFirst {
			pays, err := try(len(group))
			if err != nil {
				return err
			}
			if !pays {
				failed = len(group)
			}
		}
		for k := 2; k != failed && !(c.mergeFirst && best != nil); k = min(2*k, len(group)) {
			pays, err := try(k)
			if err != nil {
				return err
			}
			if !pays && best != nil {
				failed = k
				break
			}
			if k == len(group) {
				break
			}
		}
		for best != nil && failed > 0 && failed-bestK > 1 {
			mid := (bestK + failed) / 2
			pays, err := try(mid)
			if err != nil {
				return err
			}
			if !pays {
				failed = mid
			}
		}
		if best == nil {
			group[0].replaceWhy = "merging it with the next candidate nodes saves less than the minimum"
			cands = removeNode(cands, group[0])
			failures++
			continue
		}
		failures = 0
		c.apply(group[:bestK], best.plan, best, "")
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
		floor := c.minSaving(set)
		if bound := c.cheapestHolding(set); bound > n.Price-floor {
			n.replaceWhy = fmt.Sprintf("no replacement saves the %s minimum: no instance type cheaper than %s has room for its pods", formatDollars(floor), formatDollars(bound))
			continue
		}
		sim, err := c.simulate(set, true)
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
		}
		c.apply(set, sim.plan, sim, "")
	}
	return nil
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

// blockReason is why a node no action removes stays, in one sentence.
func (c *consolidator) blockReason(n *consNode) string {
	switch {
	case n.blocked != "":
		return n.blocked
	case n.pinned != "":
		return n.pinned
	case n.deleteWhy != "" && n.replaceWhy != "":
		return n.deleteWhy + ", and " + n.replaceWhy
	case n.deleteWhy != "":
		return n.deleteWhy
	case n.replaceWhy != "":
		return n.replaceWhy
	}
	return "no action found for it saves the minimum"
}
