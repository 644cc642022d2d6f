package disruption

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Candidate is an action the controller may carry out, with the reason its
// pools' budgets count it under.
type Candidate struct {
	Action solver.Action
	// Reason is ReasonEmpty, ReasonUnderutilized, ReasonDrifted or
	// ReasonExpired.
	Reason string
}

// Refusal is why a node is left alone this round.
type Refusal struct {
	// Reason is one sentence, without its full stop.
	Reason string
	// Later is set when a planned action removes the node once the chosen
	// one is done: only one action runs at a time.
	Later bool
}

// Pools returns the NodePools of the candidate's nodes, sorted.
func (v *View) Pools(c *Candidate) []string {
	set := map[string]bool{}
	for _, n := range c.Action.Nodes {
		if info := v.nodes[n]; info != nil {
			set[v.problem.Nodes[info.index].Pool] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// Choose picks the actions to carry out now, together, Karpenter's order:
// empty nodes (all the budgets allow, in one action), or else one expired or
// drifted node (replaced one at a time), then the planner's consolidation
// actions, best first, as many as the budgets and PDBs allow together,
// beside the actions the view holds (see Hold). The planner's actions are
// independent of each other (no node one moves pods onto is removed by
// another), so they run in parallel. It returns no candidates when no action
// passes every guard, and, for every node left alone, why.
func (v *View) Choose(plan *solver.ConsolidationPlan) ([]*Candidate, map[string]Refusal) {
	refused := map[string]Refusal{}
	for _, b := range plan.Blocked {
		refused[b.Node] = Refusal{Reason: b.Reason}
	}
	for name, why := range v.blocked {
		if _, ok := v.nodes[name]; ok {
			refused[name] = Refusal{Reason: why}
		}
	}
	t := newTally(v)
	var chosen []*Candidate
	// Empty nodes: deleted together, within the budgets for Empty.
	empty := &Candidate{Action: solver.Action{Kind: solver.ActionDelete}, Reason: ReasonEmpty}
	for _, a := range plan.Actions {
		if a.Kind != solver.ActionDelete || len(a.Moves) > 0 {
			continue
		}
		if why := t.refusal(a.Nodes, nil, ReasonEmpty); why != "" {
			for _, n := range a.Nodes {
				refused[n] = Refusal{Reason: "it is empty, but " + why}
			}
			continue
		}
		t.add(&a, nil)
		empty.Action.Nodes = append(empty.Action.Nodes, a.Nodes...)
		empty.Action.Saving += a.Saving
	}
	if len(empty.Action.Nodes) > 0 {
		empty.Action.Reason = emptyReason(empty.Action.Nodes, empty.Action.Saving)
		chosen = append(chosen, empty)
	}
	// Expired and drifted nodes: replaced whatever the saving, one at a
	// time and alone, since the replacement is planned on the whole
	// cluster rather than among the planner's independent actions.
	var forcedOne *Candidate
	for _, name := range slices.Sorted(maps.Keys(v.nodes)) {
		info := v.nodes[name]
		if info.claim == nil || info.pool == nil || v.blocked[name] != "" || v.problem.Nodes[info.index].InFlight ||
			slices.Contains(empty.Action.Nodes, name) {
			continue
		}
		reason, why := ReasonExpired, expired(info.claim, v.now)
		if why == "" {
			reason, why = ReasonDrifted, drifted(info.node, info.claim, info.pool)
		}
		if why == "" {
			continue
		}
		if len(chosen) > 0 || v.held > 0 {
			refused[name] = Refusal{Reason: why + "; it is replaced once the actions under way are done"}
			continue
		}
		c, refusal := v.forced(name, reason, why)
		if refusal != "" {
			refused[name] = Refusal{Reason: why + ", but " + refusal}
			continue
		}
		forcedOne = c
		chosen = append(chosen, c)
	}
	// Consolidation, best first, as many as the budgets and PDBs allow.
	for _, a := range plan.Actions {
		if a.Kind == solver.ActionDelete && len(a.Moves) == 0 {
			continue
		}
		later := func(why string) {
			for _, n := range a.Nodes {
				refused[n] = Refusal{Reason: "consolidation would " + Describe(&a) + ", after the actions under way (" + why + ")", Later: true}
			}
		}
		if forcedOne != nil || v.heldForced {
			later("a replacement runs alone")
			continue
		}
		pods := v.evicted(a.Nodes)
		if why := t.refusal(a.Nodes, pods, ReasonUnderutilized); why != "" {
			if len(chosen) == 0 {
				for _, n := range a.Nodes {
					refused[n] = Refusal{Reason: why}
				}
			} else {
				later(why)
			}
			continue
		}
		t.add(&a, pods)
		chosen = append(chosen, &Candidate{Action: a, Reason: ReasonUnderutilized})
	}
	for _, c := range chosen {
		for _, n := range c.Action.Nodes {
			delete(refused, n)
		}
	}
	return chosen, refused
}

// tally counts what the actions chosen so far disrupt: nodes per pool,
// and pods per PDB.
type tally struct {
	v *View
	// nodes counts the chosen actions' nodes per pool.
	nodes map[string]int
	// pdb counts the chosen actions' evicted pods per PDB index.
	pdb map[int]int
}

func newTally(v *View) *tally {
	return &tally{v: v, nodes: map[string]int{}, pdb: map[int]int{}}
}

// refusal says why disrupting the nodes (evicting the pods) for the
// reason, on top of the actions chosen so far, would exceed a pool's
// budget or a PDB's allowance, or "". Every chosen node counts against
// every budget, whatever its reason, as nodes already disrupting do.
func (t *tally) refusal(nodes []string, pods []solver.Pod, reason string) string {
	count := map[string]int{}
	for _, n := range nodes {
		info := t.v.nodes[n]
		if info == nil {
			return fmt.Sprintf("node %s is gone", n)
		}
		count[t.v.problem.Nodes[info.index].Pool]++
	}
	for _, pool := range slices.Sorted(maps.Keys(count)) {
		taken := t.nodes[pool]
		if a := t.v.allowed(pool, reason); count[pool]+taken > a {
			return fmt.Sprintf("NodePool %s's disruption budget allows %d more node(s) for reason %s now (%d of %d already disrupting, %d in the actions chosen)",
				pool, a, reason, t.v.disrupting[pool], t.v.total[pool], taken)
		}
	}
	for _, i := range t.v.pdbsOf(pods) {
		pdb := &t.v.problem.PDBs[i]
		if allowed := int(pdb.DisruptionsAllowed); t.pdb[i] >= allowed {
			if t.pdb[i] == 0 {
				return pdb.Exhausted()
			}
			return fmt.Sprintf("PDB %s/%s allows %s, each used by one of the actions chosen", pdb.Namespace, pdb.Name, Plural(max(allowed, 0), "disruption", "disruptions"))
		}
	}
	return ""
}

// add counts a chosen action: its nodes, and one disruption of each PDB
// whose pods it evicts (the eviction API paces the rest; see
// solver's pdbExceeded).
func (t *tally) add(a *solver.Action, pods []solver.Pod) {
	for _, n := range a.Nodes {
		t.nodes[t.v.Pool(n)]++
	}
	for _, i := range t.v.pdbsOf(pods) {
		t.pdb[i]++
	}
}

// pdbsOf returns the indices of the PDBs that select some of the pods.
func (v *View) pdbsOf(pods []solver.Pod) []int {
	var out []int
	for i := range v.problem.PDBs {
		pdb := &v.problem.PDBs[i]
		if slices.ContainsFunc(pods, func(pod solver.Pod) bool {
			return pod.Namespace == pdb.Namespace && pdb.Selector.Matches(pod.Labels)
		}) {
			out = append(out, i)
		}
	}
	return out
}

// evicted returns the pods removing the nodes evicts: all but DaemonSet
// pods.
func (v *View) evicted(nodes []string) []solver.Pod {
	var out []solver.Pod
	for _, n := range nodes {
		if info := v.nodes[n]; info != nil {
			for _, pod := range v.problem.Nodes[info.index].Pods {
				if !strings.HasPrefix(pod.Owner, "DaemonSet/") {
					out = append(out, pod)
				}
			}
		}
	}
	return out
}

// forced plans the replacement of an expired or drifted node: its pods go
// where the solver would put them, on other nodes or new ones, whatever the
// saving. It returns why the node may not be replaced now instead when a
// guard fails.
func (v *View) forced(name, reason, why string) (*Candidate, string) {
	info := v.nodes[name]
	sn := &v.problem.Nodes[info.index]
	// Expiry is forceful, as in Karpenter: no disruption budget or
	// PodDisruptionBudget holds it back. The NodeClaim is deleted once its
	// replacements are up, and the lifecycle's drain honours the PDBs until
	// the claim's terminationGracePeriod. A do-not-disrupt pod does not
	// hold it either: as in Karpenter, the node is deleted and the
	// lifecycle's drain holds only the pod, until the grace period. The
	// node's own do-not-disrupt still holds it, and so do pods nothing
	// would recreate.
	forceful := reason == ReasonExpired
	if sn.DoNotDisrupt {
		return nil, "the node has do-not-disrupt"
	}
	var pods []solver.Pod
	for _, pod := range sn.Pods {
		if strings.HasPrefix(pod.Owner, "DaemonSet/") {
			continue
		}
		switch {
		case pod.DoNotDisrupt && !forceful:
			return nil, fmt.Sprintf("pod %s has do-not-disrupt", pod.Key())
		case !pod.Controller:
			return nil, fmt.Sprintf("pod %s has no controller and would be lost", pod.Key())
		}
		pods = append(pods, pod)
	}
	if !forceful {
		if refusal := v.pdbRefusal(pods); refusal != "" {
			return nil, refusal
		}
		if refusal := v.budgetRefusal([]string{name}, reason); refusal != "" {
			return nil, refusal
		}
	}
	p := *v.problem
	p.Pods = pods
	p.Nodes = make([]solver.Node, 0, len(v.problem.Nodes)-1)
	for i := range v.problem.Nodes {
		if i != info.index {
			p.Nodes = append(p.Nodes, v.problem.Nodes[i])
		}
	}
	plan, err := solver.Solve(&p)
	if err != nil {
		return nil, "planning its replacement failed: " + err.Error()
	}
	if len(plan.Unschedulable) > 0 {
		u := plan.Unschedulable[0]
		return nil, fmt.Sprintf("its pod %s fits on no other node and no new one: %s", p.Pods[u.Pod].Key(), u.Reason)
	}
	a := solver.Action{Kind: solver.ActionDelete, Nodes: []string{name}, Saving: sn.Price - plan.TotalPrice}
	dest := map[int]string{}
	for _, e := range plan.Existing {
		dest[e.Pod] = e.Node
	}
	for i, nn := range plan.NewNodes {
		for _, pi := range nn.Pods {
			dest[pi] = "new-" + strconv.Itoa(i)
		}
		nn.Pods = nil
		a.Replacements = append(a.Replacements, nn)
	}
	for i := range p.Pods {
		a.Moves = append(a.Moves, solver.Move{Pod: p.Pods[i].Key(), To: dest[i]})
	}
	if len(a.Replacements) > 0 {
		a.Kind = solver.ActionReplace
	}
	a.Reason = why
	return &Candidate{Action: a, Reason: reason}, ""
}

// pdbRefusal says why a PDB forbids evicting the pods (it allows no
// disruption now), or "".
func (v *View) pdbRefusal(pods []solver.Pod) string {
	for _, i := range v.pdbsOf(pods) {
		if pdb := &v.problem.PDBs[i]; pdb.DisruptionsAllowed <= 0 {
			return pdb.Exhausted()
		}
	}
	return ""
}

// Revalidate checks, on a fresh view, that the candidates chosen earlier
// still hold together: the same nodes are still empty, expired or drifted,
// and each consolidation is re-planned for exactly its nodes on the fresh
// problem (solver.ConsolidateGroups), in order, so that the ones that hold
// still hold together and within the budgets and PDBs. It returns the
// candidates as planned now (their replacements may be fresher) and, for
// each one dropped, why; an empty deletion keeps the nodes still empty.
func (v *View) Revalidate(old []*Candidate) ([]*Candidate, []Dropped, error) {
	var valid []*Candidate
	var dropped []Dropped
	drop := func(c *Candidate, why string) { dropped = append(dropped, Dropped{Candidate: c, Why: why}) }
	// The planner's part, empty nodes one by one and consolidations whole.
	var groups [][]string
	for _, c := range old {
		switch c.Reason {
		case ReasonDrifted, ReasonExpired:
		case ReasonEmpty:
			for _, n := range c.Action.Nodes {
				groups = append(groups, []string{n})
			}
		default:
			groups = append(groups, c.Action.Nodes)
		}
	}
	var actions []*solver.Action
	var whys []string
	if len(groups) > 0 {
		var err error
		if actions, whys, err = solver.ConsolidateGroups(v.problem, groups); err != nil {
			return nil, nil, fmt.Errorf("re-planning the chosen actions: %w", err)
		}
	}
	t := newTally(v)
	next := 0
	for _, c := range old {
		switch c.Reason {
		case ReasonDrifted, ReasonExpired:
			nc, why := v.revalidateForced(c)
			if nc == nil {
				drop(c, why)
				continue
			}
			valid = append(valid, nc)
		case ReasonEmpty:
			nc := &Candidate{Action: solver.Action{Kind: solver.ActionDelete}, Reason: ReasonEmpty}
			var lost []string
			for _, n := range c.Action.Nodes {
				a, why := actions[next], whys[next]
				next++
				if a != nil && len(a.Moves) > 0 {
					a, why = nil, "it runs pods now"
				}
				if a == nil {
					lost = append(lost, n+": "+v.blockedNow(n, why))
					continue
				}
				if why := t.refusal(a.Nodes, nil, ReasonEmpty); why != "" {
					lost = append(lost, n+": "+why)
					continue
				}
				t.add(a, nil)
				nc.Action.Nodes = append(nc.Action.Nodes, n)
				nc.Action.Saving += a.Saving
			}
			if len(nc.Action.Nodes) == 0 {
				drop(c, strings.Join(lost, "; "))
				continue
			}
			nc.Action.Reason = emptyReason(nc.Action.Nodes, nc.Action.Saving)
			valid = append(valid, nc)
		default:
			a, why := actions[next], whys[next]
			next++
			if a == nil {
				drop(c, v.blockedNow(c.Action.Nodes[0], why))
				continue
			}
			pods := v.evicted(a.Nodes)
			if why := t.refusal(a.Nodes, pods, c.Reason); why != "" {
				drop(c, why)
				continue
			}
			t.add(a, pods)
			valid = append(valid, &Candidate{Action: *a, Reason: c.Reason})
		}
	}
	return valid, dropped, nil
}

// Dropped is a chosen candidate that no longer holds, and why.
type Dropped struct {
	Candidate *Candidate
	Why       string
}

// blockedNow prefers the controller's reason for a node over the
// planner's: it is gone, or it is disrupting, cordoned or not ours.
func (v *View) blockedNow(name, planner string) string {
	if _, ok := v.nodes[name]; !ok {
		return "node " + name + " is gone"
	}
	if why := v.blocked[name]; why != "" {
		return "node " + name + ": " + why
	}
	return planner
}

// revalidateForced checks that an expired or drifted node still is, and
// plans its replacement again.
func (v *View) revalidateForced(old *Candidate) (*Candidate, string) {
	name := old.Action.Nodes[0]
	info := v.nodes[name]
	if info == nil || info.claim == nil || info.pool == nil || v.blocked[name] != "" {
		return nil, v.blockedNow(name, "it is no longer ours to replace")
	}
	why := expired(info.claim, v.now)
	if old.Reason == ReasonDrifted {
		why = drifted(info.node, info.claim, info.pool)
	}
	if why == "" {
		return nil, "it no longer needs replacing"
	}
	c, refusal := v.forced(name, old.Reason, why)
	if refusal != "" {
		return nil, refusal
	}
	return c, ""
}

// emptyReason is the reason of deleting empty nodes together.
func emptyReason(nodes []string, saving float64) string {
	return fmt.Sprintf("%s no pods; deleting %s saves %s", Plural(len(nodes), "node runs", "nodes run"), pronoun(len(nodes)), Dollars(saving))
}

// Describe says what an action does in a few words, for events and
// reports: "delete node-a" or "replace node-a by m5.large on-demand".
func Describe(a *solver.Action) string {
	nodes := strings.Join(a.Nodes, ", ")
	switch a.Kind {
	case solver.ActionDelete:
		return "delete " + nodes
	}
	var types []string
	for _, r := range a.Replacements {
		types = append(types, r.InstanceType+" "+r.CapacityType)
	}
	return fmt.Sprintf("replace %s by %s", nodes, strings.Join(types, ", "))
}

// Plural counts n things: "1 pod", "3 pods".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// Dollars writes an hourly price rounded to 4 decimals: "$0.1008/h".
func Dollars(x float64) string {
	return "$" + strconv.FormatFloat(float64(int64(x*10000+0.5))/10000, 'f', -1, 64) + "/h"
}

// Decision is what the controller would decide on one look at the cluster.
type Decision struct {
	// Plan is the consolidation planner's answer on the guarded problem.
	Plan *solver.ConsolidationPlan
	// Action is what the controller would carry out next (after
	// validation), nil when no action passes every guard. It may be an
	// expiry or drift replacement that Plan does not list.
	Action *solver.Action
	// Reason is the disruption reason Action counts under in the budgets:
	// Empty, Underutilized, Drifted or Expired.
	Reason string
	// Chosen are all the actions the controller would carry out together
	// next, Action first.
	Chosen []*Candidate
	// Refused says, for every node left alone, why, and whether a planned
	// action removes it once Action is done.
	Refused map[string]Refusal
}

// Decide applies the controller's guards (policy, consolidateAfter,
// minimum saving, budgets with their schedules and reasons, nodes already
// disrupting, NotReady or cordoned, do-not-disrupt, PDBs, pods without a
// controller, expiry, drift) and plans exactly as a controller round does
// (NewView, solver.Consolidate, Choose), without reading or changing the
// cluster: explain shows what it returns.
func Decide(in Input) (*Decision, error) {
	v, err := NewView(in)
	if err != nil {
		return nil, err
	}
	plan, err := solver.Consolidate(v.problem)
	if err != nil {
		return nil, fmt.Errorf("planning consolidation: %w", err)
	}
	chosen, refused := v.Choose(plan)
	d := &Decision{Plan: plan, Refused: refused, Chosen: chosen}
	if len(chosen) > 0 {
		d.Action, d.Reason = &chosen[0].Action, chosen[0].Reason
	}
	return d, nil
}
