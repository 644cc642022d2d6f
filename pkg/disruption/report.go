package disruption

import (
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Whose guards a consolidation report applies, the values of
// Report.Guards.
const (
	// GuardsOperator: the rightsize operator's disruption controller, for
	// the nodes of rightsize.dev NodePools.
	GuardsOperator = "operator"
	// GuardsPlanner: the consolidation planner's own (policy,
	// consolidateAfter, budgets, minimum saving, PDBs, do-not-disrupt), as
	// Karpenter would apply them to the nodes of its NodePools.
	GuardsPlanner = "planner"
)

// Verdicts on a node, the values of NodeVerdict.Verdict.
const (
	// VerdictNext: the action the operator would carry out next removes it.
	VerdictNext = "next"
	// VerdictPlanned: an action removes it (for the operator: after the
	// one under way).
	VerdictPlanned = "planned"
	// VerdictKept: no action removes it now; the reason says which guard.
	VerdictKept = "kept"
)

// Report is what consolidation would do now: the planner's
// actions with their savings, and for every node the verdict of the guards
// that apply to it. Nothing is changed.
type Report struct {
	// ConsolidationPlan's actions are the planner's on the guarded
	// problem; its blocked nodes carry the same reasons as Nodes.
	*solver.ConsolidationPlan `json:",inline"`
	// Guards is GuardsOperator when rightsize.dev NodePools exist, else
	// GuardsPlanner.
	Guards string `json:"guards"`
	// Next is the action the operator would carry out next (after its
	// validation delay), if any passes every guard.
	Next *NextAction `json:"next,omitempty"`
	// Together are the other actions the operator would carry out at the
	// same time as Next, within the budgets and PDBs.
	Together []NextAction `json:"together,omitempty"`
	// Gap is how much more than packed from scratch the cluster costs,
	// $/h (never negative).
	Gap float64 `json:"gapPerHour"`
	// GapGuards are the guards that keep nodes no action removes, each with
	// the nodes it keeps, most nodes first: why the gap stays.
	GapGuards []GapGuard `json:"gapGuards,omitempty"`
	// Nodes has one verdict per existing node, by name.
	Nodes []NodeVerdict `json:"nodes"`
	// Launching names the rightsize NodeClaims whose node has not
	// registered yet ("name (pool)"): no pod is moved onto them.
	Launching []string `json:"launching,omitempty"`
}

// NextAction is the operator's next action and the disruption reason
// its pools' budgets count it under.
type NextAction struct {
	solver.Action `json:",inline"`
	// DisruptionReason is Empty, Underutilized, Drifted or Expired.
	DisruptionReason string `json:"disruptionReason"`
}

// GapGuard is one reason nodes are kept, and the nodes it keeps.
type GapGuard struct {
	Reason string   `json:"reason"`
	Nodes  []string `json:"nodes"`
	// PricePerHour is the summed price of those nodes.
	PricePerHour float64 `json:"pricePerHour"`
}

// NodeVerdict is what consolidation does with one node, and why, in
// one sentence.
type NodeVerdict struct {
	Node     string `json:"node"`
	NodePool string `json:"nodePool,omitempty"`
	// Owner is karpenter.sh or rightsize.dev when a NodePool of theirs
	// owns the node.
	Owner string `json:"owner,omitempty"`
	// Verdict is VerdictNext, VerdictPlanned or VerdictKept.
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
}

// Consolidation plans consolidation for a live cluster read by
// snapshot.ReadCluster (or FromObjects) and the problem explain built from
// it, whose nodes carry their prices. The nodes of rightsize.dev NodePools
// get the rightsize operator's verdicts (Decide, the function
// its controller runs); Karpenter's and other nodes get the planner's.
// The problem is not modified. consolidateAfter counts, as the operator
// counts it, from the later of the last pod arrival and the pod event the
// node's NodeClaim recorded (status.lastPodEventTime: a pod that left).
// repriced names the instance types a NodeOverlay re-priced
// (plan.Result.Repriced): their nodes are priced as the problem prices
// them, as the operator prices them, not at the price their NodeClaim
// recorded, so that a replacement of the same type is not a saving.
// reprice, when not nil, prices the operator's nodes again as its
// controller does (Input.Reprice: the Commitments' effective prices);
// Karpenter's verdicts keep list prices, for Karpenter knows no
// commitment.
func Consolidation(cl *snapshot.Cluster, p *solver.Problem, repriced map[string]bool, now time.Time, reprice func(*solver.Problem)) (*Report, error) {
	owner := func(n *solver.Node) string { return cl.PoolOwners[n.Pool] }
	rc := &Report{Guards: GuardsPlanner, Nodes: []NodeVerdict{}}
	verdicts := map[string]NodeVerdict{}

	karpenter := true
	if len(cl.Rightsize.Pools) > 0 {
		rc.Guards = GuardsOperator
		d, err := Decide(Input{
			Snapshot: &Snapshot{Problem: cloneProblem(p), Pools: cl.Rightsize.Pools, Repriced: repriced},
			Nodes:    cl.Rightsize.NodeObjects, Claims: cl.Rightsize.Claims, Now: now, Reprice: reprice,
		})
		if err != nil {
			return nil, err
		}
		rc.ConsolidationPlan = d.Plan
		rc.Launching = cl.Rightsize.InFlightClaims()
		for i, c := range d.Chosen {
			next := NextAction{Action: c.Action, DisruptionReason: c.Reason}
			if i == 0 {
				rc.Next = &next
			} else {
				rc.Together = append(rc.Together, next)
			}
			for _, n := range c.Action.Nodes {
				verdicts[n] = NodeVerdict{Verdict: VerdictNext, Reason: c.Action.Reason}
			}
		}
		for n, why := range d.Refused {
			v := NodeVerdict{Verdict: VerdictKept, Reason: why.Reason}
			if why.Later {
				v.Verdict = VerdictPlanned
			}
			verdicts[n] = v
		}
		for i := range d.Plan.Actions {
			a := &d.Plan.Actions[i]
			for _, n := range a.Nodes {
				if _, ok := verdicts[n]; !ok {
					verdicts[n] = NodeVerdict{Verdict: VerdictPlanned, Reason: a.Reason}
				}
			}
		}
		// Other nodes are Karpenter's to judge, if it runs here.
		karpenter = slices.ContainsFunc(p.Nodes, func(n solver.Node) bool { return owner(&n) == snapshot.OwnerKarpenter })
	}
	if karpenter {
		budgets, err := ReadBudgets(cl.Budgets)
		if err != nil {
			return nil, err
		}
		plan, err := PlannerConsolidate(cloneProblem(p), budgets, now)
		if err != nil {
			return nil, err
		}
		ours := func(n string) bool {
			i := slices.IndexFunc(p.Nodes, func(sn solver.Node) bool { return sn.Name == n })
			return rc.Guards == GuardsOperator && (i < 0 || owner(&p.Nodes[i]) != snapshot.OwnerKarpenter)
		}
		if rc.ConsolidationPlan == nil {
			rc.ConsolidationPlan = plan
		} else {
			for _, a := range plan.Actions {
				if !slices.ContainsFunc(a.Nodes, ours) {
					rc.Actions = append(rc.Actions, a)
					rc.Saving += a.Saving
				}
			}
		}
		for _, a := range plan.Actions {
			for _, n := range a.Nodes {
				if !ours(n) {
					verdicts[n] = NodeVerdict{Verdict: VerdictPlanned, Reason: a.Reason}
				}
			}
		}
		for _, b := range plan.Blocked {
			if !ours(b.Node) {
				verdicts[b.Node] = NodeVerdict{Verdict: VerdictKept, Reason: b.Reason}
			}
		}
	}
	rc.Blocked = nil
	for i := range p.Nodes {
		n := &p.Nodes[i]
		v, ok := verdicts[n.Name]
		if !ok {
			continue // an in-flight NodeClaim's node the planner does not judge
		}
		v.Node, v.NodePool, v.Owner, v.Reason = n.Name, n.Pool, owner(n), Clause(v.Reason)
		rc.Nodes = append(rc.Nodes, v)
		if v.Verdict == VerdictKept {
			rc.Blocked = append(rc.Blocked, solver.NodeBlock{Node: n.Name, Reason: v.Reason})
		}
	}
	rc.Gap = max(0, rc.CurrentPrice-rc.TargetPrice)
	rc.GapGuards = gapGuards(rc.Blocked, p)
	sort.Slice(rc.Nodes, func(a, b int) bool { return rc.Nodes[a].Node < rc.Nodes[b].Node })
	sort.Slice(rc.Blocked, func(a, b int) bool { return rc.Blocked[a].Node < rc.Blocked[b].Node })
	if rc.Blocked == nil {
		rc.Blocked = []solver.NodeBlock{}
	}
	return rc, nil
}

// digits matches the numbers in a reason (ages, prices, counts), which
// differ from node to node for one guard.
var digits = regexp.MustCompile(`[0-9][0-9.]*`)

// gapGuards groups the kept nodes by their guard: reasons that differ only
// in their numbers, or in the node or pod they name, are one guard, shown
// by its first reason. The guards keeping the most nodes come first.
func gapGuards(blocked []solver.NodeBlock, p *solver.Problem) []GapGuard {
	price := map[string]float64{}
	names := map[string]bool{}
	for i := range p.Nodes {
		price[p.Nodes[i].Name] = p.Nodes[i].Price
		names[p.Nodes[i].Name] = true
	}
	key := func(reason string) string {
		var words []string
		for _, w := range strings.Fields(reason) {
			w = strings.Trim(w, ",;:()")
			if names[w] || strings.Count(w, "/") == 1 && !strings.Contains(w, "$") {
				w = "#"
			}
			words = append(words, digits.ReplaceAllString(w, "#"))
		}
		return strings.Join(words, " ")
	}
	var out []GapGuard
	index := map[string]int{}
	for _, b := range blocked {
		k := key(b.Reason)
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, GapGuard{Reason: b.Reason})
		}
		out[i].Nodes = append(out[i].Nodes, b.Node)
		out[i].PricePerHour += price[b.Node]
	}
	sort.SliceStable(out, func(a, b int) bool { return len(out[a].Nodes) > len(out[b].Nodes) })
	return out
}

// cloneProblem copies what consolidation's preparation changes: the pools
// and the nodes with their pods.
func cloneProblem(p *solver.Problem) *solver.Problem {
	c := *p
	c.Pools = slices.Clone(p.Pools)
	c.Nodes = slices.Clone(p.Nodes)
	for i := range c.Nodes {
		c.Nodes[i].Pods = slices.Clone(c.Nodes[i].Pods)
	}
	return &c
}

// clause makes a reason one sentence without its full stop, for tables and
// for "… is kept: <reason>".
func Clause(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.TrimSuffix(s, ".")
}
