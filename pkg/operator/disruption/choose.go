package disruption

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/disruption"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/provisioning"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// candidate is an action the controller may carry out, with the reason its
// pools' budgets count it under.
type candidate struct {
	action solver.Action
	// reason is disruption.ReasonEmpty, ReasonUnderutilized, ReasonDrifted
	// or ReasonExpired.
	reason string
}

// pools returns the NodePools of the action's nodes, sorted.
func (v *view) pools(c *candidate) []string {
	set := map[string]bool{}
	for _, n := range c.action.Nodes {
		if info := v.nodes[n]; info != nil {
			set[v.problem.Nodes[info.index].Pool] = true
		}
	}
	return sortedKeys(set)
}

// afterChosen ends the refusal of a node a planned action removes once the
// chosen action is done.
const afterChosen = ", after the action under way"

// choose picks the action to carry out, Karpenter's order: empty nodes
// (all the budgets allow, together), then expired and drifted nodes
// (replaced one at a time), then the planner's consolidation actions, best
// first. It returns nil when no action passes every guard, and, for every
// node left alone, why in one sentence.
func (v *view) choose(plan *solver.ConsolidationPlan) (*candidate, map[string]string) {
	refused := map[string]string{}
	for _, b := range plan.Blocked {
		refused[b.Node] = b.Reason
	}
	for name, why := range v.blocked {
		if _, ok := v.nodes[name]; ok {
			refused[name] = why
		}
	}
	var chosen *candidate
	// Empty nodes: deleted together, within the budgets for Empty.
	empty := &candidate{action: solver.Action{Kind: solver.ActionDelete}, reason: disruption.ReasonEmpty}
	for _, a := range plan.Actions {
		if a.Kind != solver.ActionDelete || len(a.Moves) > 0 {
			continue
		}
		try := append(slices.Clone(empty.action.Nodes), a.Nodes...)
		if why := v.budgetRefusal(try, disruption.ReasonEmpty); why != "" {
			for _, n := range a.Nodes {
				refused[n] = "it is empty, but " + why
			}
			continue
		}
		empty.action.Nodes = try
		empty.action.Saving += a.Saving
	}
	if len(empty.action.Nodes) > 0 {
		empty.action.Reason = fmt.Sprintf("%s no pods; deleting %s saves %s",
			plural(len(empty.action.Nodes), "node runs", "nodes run"), pronoun(len(empty.action.Nodes)), dollars(empty.action.Saving))
		chosen = empty
	}
	// Expired and drifted nodes: replaced whatever the saving.
	for _, name := range sortedKeys(v.nodes) {
		info := v.nodes[name]
		if info.claim == nil || info.pool == nil || v.blocked[name] != "" || v.problem.Nodes[info.index].InFlight ||
			chosen != nil && slices.Contains(chosen.action.Nodes, name) {
			continue
		}
		reason, why := ReasonExpired, expired(info.claim, v.now)
		if why == "" {
			reason, why = disruption.ReasonDrifted, drifted(info.node, info.claim, info.pool)
		}
		if why == "" {
			continue
		}
		if chosen != nil {
			refused[name] = why + "; it is replaced once the empty nodes are gone"
			continue
		}
		c, refusal := v.forced(name, reason, why)
		if refusal != "" {
			refused[name] = why + ", but " + refusal
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
				if !slices.Contains(chosen.action.Nodes, n) {
					refused[n] = "consolidation would " + describe(&a) + afterChosen
				}
			}
			continue
		}
		if why := v.budgetRefusal(a.Nodes, disruption.ReasonUnderutilized); why != "" {
			for _, n := range a.Nodes {
				refused[n] = why
			}
			continue
		}
		chosen = &candidate{action: a, reason: disruption.ReasonUnderutilized}
	}
	if chosen != nil {
		for _, n := range chosen.action.Nodes {
			delete(refused, n)
		}
	}
	return chosen, refused
}

// forced plans the replacement of an expired or drifted node: its pods go
// where the solver would put them, on other nodes or new ones, whatever the
// saving. It returns why the node may not be replaced now instead when a
// guard fails.
func (v *view) forced(name, reason, why string) (*candidate, string) {
	info := v.nodes[name]
	sn := &v.problem.Nodes[info.index]
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
	if refusal := v.pdbRefusal(pods); refusal != "" {
		return nil, refusal
	}
	if refusal := v.budgetRefusal([]string{name}, reason); refusal != "" {
		return nil, refusal
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
	return &candidate{action: a, reason: reason}, ""
}

// pdbRefusal says why evicting the pods would exceed a PDB's allowance, or "".
func (v *view) pdbRefusal(pods []solver.Pod) string {
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

// revalidate checks, on a fresh view and plan, that the candidate chosen
// earlier is still valid and still saves: the same nodes are still empty,
// expired or drifted, or the planner still removes exactly the same nodes
// together. It returns the action as planned now (its replacements may be
// fresher), or why it no longer holds.
func (v *view) revalidate(old *candidate, plan *solver.ConsolidationPlan) (*candidate, string) {
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
	switch old.reason {
	case disruption.ReasonEmpty:
		c := &candidate{action: solver.Action{Kind: solver.ActionDelete}, reason: old.reason}
		var lost []string
		for _, name := range old.action.Nodes {
			i := slices.IndexFunc(plan.Actions, func(a solver.Action) bool {
				return a.Kind == solver.ActionDelete && len(a.Moves) == 0 && slices.Equal(a.Nodes, []string{name})
			})
			if i < 0 {
				lost = append(lost, name+": "+blockedNow(name))
				continue
			}
			c.action.Nodes = append(c.action.Nodes, name)
			c.action.Saving += plan.Actions[i].Saving
		}
		if len(c.action.Nodes) == 0 {
			return nil, strings.Join(lost, "; ")
		}
		if why := v.budgetRefusal(c.action.Nodes, c.reason); why != "" {
			return nil, why
		}
		c.action.Reason = fmt.Sprintf("%s no pods; deleting %s saves %s",
			plural(len(c.action.Nodes), "node runs", "nodes run"), pronoun(len(c.action.Nodes)), dollars(c.action.Saving))
		return c, ""
	case disruption.ReasonDrifted, ReasonExpired:
		name := old.action.Nodes[0]
		info := v.nodes[name]
		if info == nil || info.claim == nil || info.pool == nil || v.blocked[name] != "" {
			return nil, blockedNow(name)
		}
		why := expired(info.claim, v.now)
		if old.reason == disruption.ReasonDrifted {
			why = drifted(info.node, info.claim, info.pool)
		}
		if why == "" {
			return nil, "it no longer needs replacing"
		}
		c, refusal := v.forced(name, old.reason, why)
		if refusal != "" {
			return nil, refusal
		}
		return c, ""
	}
	want := slices.Sorted(slices.Values(old.action.Nodes))
	for _, a := range plan.Actions {
		if slices.Equal(slices.Sorted(slices.Values(a.Nodes)), want) {
			if why := v.budgetRefusal(a.Nodes, old.reason); why != "" {
				return nil, why
			}
			return &candidate{action: a, reason: old.reason}, ""
		}
	}
	return nil, old.action.Nodes[0] + ": " + blockedNow(old.action.Nodes[0])
}

// describe says what an action does, for events: "replace node-a by a new
// m5.large on-demand".
func describe(a *solver.Action) string {
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

func plural(n int, one, many string) string {
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

func dollars(x float64) string {
	return "$" + strconv.FormatFloat(float64(int64(x*10000+0.5))/10000, 'f', -1, 64) + "/h"
}

// Input is one look at the cluster for Decide: the provisioner's snapshot
// (or one built the same way) and the objects the guards read.
type Input struct {
	// Snapshot's Problem is prepared for consolidation in place: callers
	// pass a problem they do not reuse. Its Options.Deadline bounds the plan.
	Snapshot *provisioning.Snapshot
	Nodes    []corev1.Node
	Claims   []v1alpha1.NodeClaim
	// AllowUncontrolled lets actions evict pods no controller recreates.
	AllowUncontrolled bool
	Now               time.Time
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
	// Refused says in one sentence, for every node left alone, why.
	Refused map[string]string
	// Later are the nodes of Refused that a planned action removes once
	// Action is done: only one action runs at a time.
	Later map[string]bool
}

// Decide applies the controller's guards (policy, consolidateAfter,
// minimum saving, budgets with their schedules and reasons, nodes already
// disrupting, NotReady or cordoned, do-not-disrupt, PDBs, pods without a
// controller, expiry, drift) and plans exactly as a controller round does,
// without reading or changing the cluster: explain shows what it returns.
func Decide(in Input) (*Decision, error) {
	v, err := newView(viewInput{snap: in.Snapshot, nodes: in.Nodes, claims: in.Claims,
		allowUncontrolled: in.AllowUncontrolled, now: in.Now})
	if err != nil {
		return nil, err
	}
	plan, err := solver.Consolidate(v.problem)
	if err != nil {
		return nil, fmt.Errorf("planning consolidation: %w", err)
	}
	chosen, refused := v.choose(plan)
	d := &Decision{Plan: plan, Refused: refused, Later: map[string]bool{}}
	for n, why := range refused {
		if strings.HasSuffix(why, afterChosen) {
			d.Later[n] = true
		}
	}
	if chosen != nil {
		d.Action, d.Reason = &chosen.action, chosen.reason
	}
	return d, nil
}

// Describe says what an action does in a few words: "delete node-a" or
// "replace node-a by m5.large on-demand".
func Describe(a *solver.Action) string { return describe(a) }
