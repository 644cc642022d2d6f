package solver

import (
	"fmt"
	"slices"
)

// ConsolidateNodes plans one action that removes exactly the named nodes
// together, on the problem as it is now, under the guards Consolidate
// applies (the nodes may be disrupted, their pools' budgets and the PDBs
// allow removing them together, their pods fit on the other nodes or on
// new ones, the saving meets the minimum and, for Balanced pools, the
// disruption it causes). It returns the action, or why it does not hold.
//
// It is how a chosen action is validated after the validation delay: the
// same nodes are re-planned on the fresh problem, rather than asking a new
// search to find the same group again (a multi-node merge depends on the
// order the search took, and a later search on a slightly different
// cluster rarely meets the same group even when the merge still holds).
// It never modifies the problem.
func ConsolidateNodes(p *Problem, nodes []string) (*Action, string, error) {
	actions, whys, err := ConsolidateGroups(p, [][]string{nodes})
	if err != nil {
		return nil, "", err
	}
	return actions[0], whys[0], nil
}

// ConsolidateGroups plans, as ConsolidateNodes does, one action per group
// of nodes, in order, each on the cluster the earlier ones leave: the
// actions that hold can be carried out at the same time (no node one
// moves pods onto is removed by another, and the budgets cover them all).
// For each group it returns the action, or nil and why it does not hold.
func ConsolidateGroups(p *Problem, groups [][]string) ([]*Action, []string, error) {
	if err := p.validate(); err != nil {
		return nil, nil, err
	}
	p = p.normalized()
	c := &consolidator{p: p, now: p.Options.Now, pools: map[string]int{}, byName: map[string]*consNode{}}
	if c.now.IsZero() {
		return nil, nil, fmt.Errorf("consolidating nodes: Options.Now is not set")
	}
	if err := c.setup(); err != nil {
		return nil, nil, err
	}
	actions := make([]*Action, len(groups))
	whys := make([]string, len(groups))
	for i, names := range groups {
		why, err := c.replan(names)
		if err != nil {
			return nil, nil, err
		}
		if why != "" {
			whys[i] = why
			continue
		}
		actions[i] = &c.actions[len(c.actions)-1]
	}
	return actions, whys, nil
}

// replan applies the action removing the named nodes, or returns why it
// does not hold.
func (c *consolidator) replan(names []string) (string, error) {
	if len(names) == 0 {
		return "", fmt.Errorf("consolidating no nodes")
	}
	var set []*consNode
	empty := true
	price := 0.0
	for _, name := range names {
		n := c.byName[name]
		switch {
		case n == nil:
			return fmt.Sprintf("node %s is gone", name), nil
		case slices.Contains(set, n):
			continue
		case !n.candidate():
			return fmt.Sprintf("node %s: %s", name, c.blockReason(n)), nil
		}
		empty = empty && n.evictions() == 0 && len(n.pending) == 0
		price += n.Price
		set = append(set, n)
	}
	if why := c.budgetExceeded(set); why != "" {
		return why, nil
	}
	if why := c.pdbExceeded(set); why != "" {
		return why, nil
	}
	if empty {
		c.apply(set, &Plan{}, nil, emptyReason(len(set), price))
		return "", nil
	}
	// Onto the other nodes first, as a delete; then with new nodes, where
	// every pool of the set consolidates more than empty nodes.
	sim, err := c.simulate(set, placement{})
	if err != nil {
		return "", err
	}
	if len(sim.plan.Unschedulable) > 0 {
		if slices.ContainsFunc(set, func(n *consNode) bool { return c.p.Pools[n.pool].Consolidation.Policy == WhenEmpty }) {
			return c.unplacedReason(sim), nil
		}
		if sim, err = c.simulate(set, placement{newNodes: true}); err != nil {
			return "", err
		}
		if len(sim.plan.Unschedulable) > 0 {
			return c.unplacedReason(sim), nil
		}
	}
	if why := c.worthIt(set, sim.plan.NewNodes, price-sim.plan.TotalPrice); why != "" {
		return why, nil
	}
	if len(set) == 1 && len(sim.plan.NewNodes) > 0 {
		if why := c.spotToSpot(set[0], sim); why != "" {
			return why, nil
		}
	}
	c.apply(set, sim.plan, sim, "")
	return "", nil
}

// emptyReason is the reason of deleting nodes that run no pods.
func emptyReason(nodes int, price float64) string {
	if nodes == 1 {
		return fmt.Sprintf("it runs no pods; deleting it saves %s", formatDollars(price))
	}
	return fmt.Sprintf("%d nodes run no pods; deleting them saves %s", nodes, formatDollars(price))
}

// worthIt says why an action removing the nodes and launching the new
// ones for the saving is not worth its disruption, or "": the saving is
// below the minimum (see minSaving), a replacement's churn is not worth it
// (see replaceRefusal), or a Balanced pool's score refuses it (see
// balancedRefusal).
func (c *consolidator) worthIt(set []*consNode, launched []NewNode, saving float64) string {
	if saving <= 0 {
		return "no cheaper placement holds their pods"
	}
	if floor := c.minSaving(set); saving < floor {
		return fmt.Sprintf("it saves %s, below the %s minimum", formatDollars(saving), formatDollars(floor))
	}
	if why := c.replaceRefusal(set, launched, saving); why != "" {
		return why
	}
	return c.balancedRefusal(set, saving)
}
