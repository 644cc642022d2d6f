package disruption

import (
	"fmt"
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
	return sortedKeys(set)
}

// Choose picks the action to carry out, Karpenter's order: empty nodes
// (all the budgets allow, together), then expired and drifted nodes
// (replaced one at a time), then the planner's consolidation actions, best
// first. It returns nil when no action passes every guard, and, for every
// node left alone, why.
func (v *View) Choose(plan *solver.ConsolidationPlan) (*Candidate, map[string]Refusal) {
	refused := map[string]Refusal{}
	for _, b := range plan.Blocked {
		refused[b.Node] = Refusal{Reason: b.Reason}
	}
	for name, why := range v.blocked {
		if _, ok := v.nodes[name]; ok {
			refused[name] = Refusal{Reason: why}
		}
	}
	var chosen *Candidate
	// Empty nodes: deleted together, within the budgets for Empty.
	empty := &Candidate{Action: solver.Action{Kind: solver.ActionDelete}, Reason: ReasonEmpty}
	for _, a := range plan.Actions {
		if a.Kind != solver.ActionDelete || len(a.Moves) > 0 {
			continue
		}
		try := append(slices.Clone(empty.Action.Nodes), a.Nodes...)
		if why := v.budgetRefusal(try, ReasonEmpty); why != "" {
			for _, n := range a.Nodes {
				refused[n] = Refusal{Reason: "it is empty, but " + why}
			}
			continue
		}
		empty.Action.Nodes = try
		empty.Action.Saving += a.Saving
	}
	if len(empty.Action.Nodes) > 0 {
		empty.Action.Reason = emptyReason(empty.Action.Nodes, empty.Action.Saving)
		chosen = empty
	}
	// Expired and drifted nodes: replaced whatever the saving.
	for _, name := range sortedKeys(v.nodes) {
		info := v.nodes[name]
		if info.claim == nil || info.pool == nil || v.blocked[name] != "" || v.problem.Nodes[info.index].InFlight ||
			chosen != nil && slices.Contains(chosen.Action.Nodes, name) {
			continue
		}
		reason, why := ReasonExpired, expired(info.claim, v.now)
		if why == "" {
			reason, why = ReasonDrifted, drifted(info.node, info.claim, info.pool)
		}
		if why == "" {
			continue
		}
		if chosen != nil {
			refused[name] = Refusal{Reason: why + "; it is replaced once the empty nodes are gone"}
			continue
		}
		c, refusal := v.forced(name, reason, why)
		if refusal != "" {
			refused[name] = Refusal{Reason: why + ", but " + refusal}
			continue
		}
		chosen = c
	}
	// Consolidation, best first.
	for _, a := range plan.Actions {
		if a.Kind == solver.ActionDelete && len(a.Moves) == 0 {
			continue
		}
		if chosen != nil {
			for _, n := range a.Nodes {
				if !slices.Contains(chosen.Action.Nodes, n) {
					refused[n] = Refusal{Reason: "consolidation would " + Describe(&a) + ", after the action under way", Later: true}
				}
			}
			continue
		}
		if why := v.budgetRefusal(a.Nodes, ReasonUnderutilized); why != "" {
			for _, n := range a.Nodes {
				refused[n] = Refusal{Reason: why}
			}
			continue
		}
		chosen = &Candidate{Action: a, Reason: ReasonUnderutilized}
	}
	if chosen != nil {
		for _, n := range chosen.Action.Nodes {
			delete(refused, n)
		}
	}
	return chosen, refused
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
	// the claim's terminationGracePeriod. do-not-disrupt still holds it
	// (Karpenter would delete the node and hold only the pod, until the
	// grace period; the lifecycle's drain cannot hold a pod yet), and so do
	// pods nothing would recreate.
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
		case pod.DoNotDisrupt:
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

// pdbRefusal says why evicting the pods would exceed a PDB's allowance, or "".
func (v *View) pdbRefusal(pods []solver.Pod) string {
	for i := range v.problem.PDBs {
		pdb := &v.problem.PDBs[i]
		n := 0
		for _, pod := range pods {
			if pod.Namespace == pdb.Namespace && pdb.Selector.Matches(pod.Labels) {
				n++
			}
		}
		if n > int(max(pdb.DisruptionsAllowed, 0)) {
			return fmt.Sprintf("PDB %s/%s allows %d disruption(s) and this would evict %d of its pods", pdb.Namespace, pdb.Name, max(pdb.DisruptionsAllowed, 0), n)
		}
	}
	return ""
}

// Revalidate checks, on a fresh view and plan, that the candidate chosen
// earlier is still valid and still saves: the same nodes are still empty,
// expired or drifted, or the planner still removes exactly the same nodes
// together. It returns the action as planned now (its replacements may be
// fresher), or why it no longer holds.
func (v *View) Revalidate(old *Candidate, plan *solver.ConsolidationPlan) (*Candidate, string) {
	blockedNow := func(name string) string {
		if why := v.blocked[name]; why != "" {
			return why
		}
		if _, ok := v.nodes[name]; !ok {
			return "it is gone"
		}
		for _, b := range plan.Blocked {
			if b.Node == name {
				return b.Reason
			}
		}
		return "the planner no longer removes it in the same action"
	}
	switch old.Reason {
	case ReasonEmpty:
		c := &Candidate{Action: solver.Action{Kind: solver.ActionDelete}, Reason: old.Reason}
		var lost []string
		for _, name := range old.Action.Nodes {
			i := slices.IndexFunc(plan.Actions, func(a solver.Action) bool {
				return a.Kind == solver.ActionDelete && len(a.Moves) == 0 && slices.Equal(a.Nodes, []string{name})
			})
			if i < 0 {
				lost = append(lost, name+": "+blockedNow(name))
				continue
			}
			c.Action.Nodes = append(c.Action.Nodes, name)
			c.Action.Saving += plan.Actions[i].Saving
		}
		if len(c.Action.Nodes) == 0 {
			return nil, strings.Join(lost, "; ")
		}
		if why := v.budgetRefusal(c.Action.Nodes, c.Reason); why != "" {
			return nil, why
		}
		c.Action.Reason = emptyReason(c.Action.Nodes, c.Action.Saving)
		return c, ""
	case ReasonDrifted, ReasonExpired:
		name := old.Action.Nodes[0]
		info := v.nodes[name]
		if info == nil || info.claim == nil || info.pool == nil || v.blocked[name] != "" {
			return nil, blockedNow(name)
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
	want := slices.Sorted(slices.Values(old.Action.Nodes))
	for _, a := range plan.Actions {
		if slices.Equal(slices.Sorted(slices.Values(a.Nodes)), want) {
			if why := v.budgetRefusal(a.Nodes, old.Reason); why != "" {
				return nil, why
			}
			return &Candidate{Action: a, Reason: old.Reason}, ""
		}
	}
	return nil, old.Action.Nodes[0] + ": " + blockedNow(old.Action.Nodes[0])
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
	d := &Decision{Plan: plan, Refused: refused}
	if chosen != nil {
		d.Action, d.Reason = &chosen.Action, chosen.Reason
	}
	return d, nil
}
