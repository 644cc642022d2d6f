package disruption

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// budgetCount counts a look at the cluster against the pools' disruption
// budgets: each pool's nodes and those disrupting already, at one moment.
// It is the one place budgets are counted: the operator's View and the
// planner's guards (PlannerConsolidate) both count with it.
type budgetCount struct {
	budgets map[string][]Budget
	// total and disrupting count each pool's nodes; nodes in flight are
	// left out, as Karpenter leaves out nodes not initialized.
	total, disrupting map[string]int
	now               time.Time
}

func newBudgetCount(budgets map[string][]Budget, now time.Time) budgetCount {
	return budgetCount{budgets: budgets, total: map[string]int{}, disrupting: map[string]int{}, now: now}
}

// allowed is how many more of a pool's nodes its budgets let be disrupted
// now for the reason; a pool no budget limits for the reason allows all
// its nodes.
func (c *budgetCount) allowed(pool, reason string) int {
	a := Allowed(c.budgets[pool], reason, c.total[pool], c.disrupting[pool], c.now)
	if a == math.MaxInt {
		return c.total[pool]
	}
	return a
}

// setNodesAllowed tells the planner how many of each pool's nodes its
// budgets let be disrupted now: the more of what they allow for Empty and
// for Underutilized, the reasons consolidation acts for, at most the
// pool's nodes. Each action is then held to the budgets of its own reason
// (Choose, PlannerConsolidate).
func (c *budgetCount) setNodesAllowed(pools []solver.Pool) {
	for i := range pools {
		pool := &pools[i]
		pool.Consolidation.NodesAllowed = min(max(c.allowed(pool.Name, ReasonEmpty), c.allowed(pool.Name, ReasonUnderutilized)), c.total[pool.Name])
	}
}

// actionReason is the disruption reason a planner's action counts under in
// the budgets: Empty for deleting nodes no pod is moved from, Underutilized
// for the rest.
func actionReason(a *solver.Action) string {
	if a.Kind == solver.ActionDelete && len(a.Moves) == 0 {
		return ReasonEmpty
	}
	return ReasonUnderutilized
}

// PlannerConsolidate plans consolidation under the planner's own guards,
// as Karpenter applies them to the nodes of its NodePools (explain shows
// them for nodes the operator does not own). Each pool's budgets (by pool
// name, from ReadBudgets) are counted against its nodes of the problem,
// the cordoned ones as disrupting already and the in-flight ones left out;
// then every action is kept only while the budgets of its reason allow
// its nodes on top of the actions kept before it, and the nodes of the
// others are blocked with the budget's sentence. The problem's pools and
// Options.Now are set; callers pass a problem they do not reuse.
func PlannerConsolidate(p *solver.Problem, budgets map[string][]Budget, now time.Time) (*solver.ConsolidationPlan, error) {
	c := newBudgetCount(budgets, now)
	pool := make(map[string]string, len(p.Nodes))
	for i := range p.Nodes {
		n := &p.Nodes[i]
		pool[n.Name] = n.Pool
		if n.InFlight || n.Pool == "" {
			continue
		}
		c.total[n.Pool]++
		if n.Unschedulable {
			c.disrupting[n.Pool]++
		}
	}
	c.setNodesAllowed(p.Pools)
	p.Options.Now = now
	plan, err := solver.Consolidate(p)
	if err != nil {
		return nil, fmt.Errorf("planning consolidation: %w", err)
	}
	taken := map[string]int{}
	kept := plan.Actions[:0]
	for _, a := range plan.Actions {
		reason := actionReason(&a)
		count := map[string]int{}
		for _, n := range a.Nodes {
			count[pool[n]]++
		}
		why := ""
		for _, name := range slices.Sorted(maps.Keys(count)) {
			if allowed := c.allowed(name, reason); count[name]+taken[name] > allowed {
				why = fmt.Sprintf("NodePool %s's disruption budget allows %d more node(s) for reason %s now (%d of %d already disrupting, %d in the actions before)",
					name, allowed, reason, c.disrupting[name], c.total[name], taken[name])
				break
			}
		}
		if why != "" {
			for _, n := range a.Nodes {
				plan.Blocked = append(plan.Blocked, solver.NodeBlock{Node: n, Reason: why})
			}
			plan.Saving -= a.Saving
			continue
		}
		for name, k := range count {
			taken[name] += k
		}
		kept = append(kept, a)
	}
	plan.Actions = kept
	return plan, nil
}
