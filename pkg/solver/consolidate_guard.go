package solver

import (
	"fmt"
	"strings"
	"time"
)

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
