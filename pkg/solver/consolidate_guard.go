package solver

import (
	"fmt"
	"slices"
	"strings"
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

// pdbExceeded returns why a PDB forbids evicting the pods of the nodes, or
// "". As in Karpenter (pkg/utils/pdb CanEvictPods), a PDB that allows at
// least one disruption lets all its pods go: the eviction API paces them,
// one replacement Ready before the next eviction, so an action need not
// wait for a PDB to allow all its evictions at once (which a PDB with
// maxUnavailable 1 never does for a node of two of its pods).
func (c *consolidator) pdbExceeded(set []*consNode) string {
	worst := -1
	for _, n := range set {
		for i, k := range n.pdb {
			if k > 0 && c.p.PDBs[i].DisruptionsAllowed <= 0 && (worst < 0 || i < worst) {
				worst = i
			}
		}
	}
	if worst < 0 {
		return ""
	}
	return c.p.PDBs[worst].Exhausted()
}

// Exhausted is the sentence that says the PDB allows no disruption now:
// the reason a node whose pods it selects stays.
func (p *PDB) Exhausted() string {
	return fmt.Sprintf("PDB %s/%s allows 0 disruptions", p.Namespace, p.Name)
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
// no pod need only save something. Actions that launch nodes must also
// pass replaceRefusal.
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
		if cons.defaultMinimum() {
			floor = max(floor, DefaultMinSaving+DefaultMinSavingPerPod*float64(evicted))
			continue
		}
		floor = max(floor, cons.MinSaving, cons.MinSavingFraction*price)
	}
	return max(floor, 1e-9)
}

// defaultMinimum reports whether the pool leaves its minimum saving to the
// defaults (DefaultMinSaving, DefaultMinSavingPerPod and, for actions
// launching nodes, DefaultMinReplaceFraction).
func (cons *Consolidation) defaultMinimum() bool {
	return !cons.MinSavingSet && cons.MinSaving == 0 && cons.MinSavingFraction == 0
}

// replaceRefusal says why an action that removes the nodes and launches
// new ones for the saving is not worth its churn although it meets the
// minimum saving, or "" (and always "" when it launches nothing):
//
//   - when one of the nodes' pools keeps the default minimum and the action
//     evicts pods, it must save DefaultMinReplaceFraction of the removed
//     nodes' price;
//   - a merge launching one node may not launch it of the instance type
//     and zone of a removed node for as much as that node costs or more:
//     that node could stay and take all the others' pods itself, and
//     deleting them would save as much while moving fewer pods. Karpenter's
//     multi-node consolidation, which launches at most one node, filters
//     its replacement's types the same way (filterOutSameInstanceType).
//     A merge launching several nodes is not held to it: keeping the node
//     would still need the others replaced, which the search may not find.
func (c *consolidator) replaceRefusal(set []*consNode, launched []NewNode, saving float64) string {
	if len(launched) == 0 {
		return ""
	}
	if floor, price := c.replaceFloor(set); saving < floor {
		return fmt.Sprintf("launching a replacement saves %s, %.1f%% of the %s it removes, below the %.0f%% a replacement must save",
			formatDollars(saving), 100*saving/price, formatDollars(price), 100*DefaultMinReplaceFraction)
	}
	if len(launched) > 1 || len(set) < 2 {
		return ""
	}
	for _, nn := range launched {
		for _, n := range set {
			if nn.InstanceType == n.InstanceType && nn.Zone == n.Zone && nn.Price >= n.Price {
				return fmt.Sprintf("it would launch a %s in %s for %s, as dear as %s: keeping %s and deleting the others moves fewer pods",
					nn.InstanceType, nn.Zone, formatDollars(nn.Price), n.Name, n.Name)
			}
		}
	}
	return ""
}

// replaceFloor is the least saving DefaultMinReplaceFraction asks of an
// action launching nodes that removes the set (zero when every pool of the
// set sets its own minimum, or when the nodes run no pod to evict), and
// the set's price.
func (c *consolidator) replaceFloor(set []*consNode) (floor, price float64) {
	defaults, evicted := false, 0
	for _, n := range set {
		price += n.Price
		evicted += n.evictions()
		defaults = defaults || c.p.Pools[n.pool].Consolidation.defaultMinimum()
	}
	if !defaults || evicted == 0 {
		return 0, price
	}
	return DefaultMinReplaceFraction * price, price
}

// expired reports whether Options.Deadline has passed: the search then
// stops and the plan holds the actions found so far.
func (c *consolidator) expired() bool {
	return expired(c.p.Options.stopAt())
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

// Balanced is the consolidation policy of Karpenter v1.14 that takes a
// consolidation only when its saving is worth the disruption it causes
// (see balancedRefusal); otherwise it consolidates as
// WhenEmptyOrUnderutilized.
const Balanced = "Balanced"

// BalancedK is Karpenter's scoring parameter for Balanced (v1.BalancedK in
// kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go): an action passes when
// its score is at least 1/BalancedK.
const BalancedK = 2

// balancedRefusal scores an action for every Balanced pool among the
// nodes' pools, as Karpenter's EvaluateBalancedMove does
// (pkg/controllers/disruption/balanced.go): the pool's share of the saving
// as a fraction of the pool's price, divided by the action's disruption as
// a fraction of the pool's, must be at least 1/BalancedK. A node's
// disruption costs 1 for draining it plus 1 per pod evicted (Karpenter's
// PerNodeBaseDisruptionCost and the eviction cost of a pod of default
// priority); the pool's is the sum over all its nodes. When several pools
// lose nodes, the saving is split by the price each one loses. It returns
// why a pool refuses, or "".
func (c *consolidator) balancedRefusal(set []*consNode, saving float64) string {
	byPool, lost, total := c.splitByPool(set)
	disruption := map[int]float64{}
	for _, n := range set {
		disruption[n.pool] += 1 + float64(n.evictions())
	}
	for _, pi := range sortedInts(byPool) {
		pool := &c.p.Pools[pi]
		if pool.Consolidation.Policy != Balanced {
			continue
		}
		poolPrice, poolDisruption := 0.0, 0.0
		for _, n := range c.nodes {
			if n.orig >= 0 && !n.removed && n.pool == pi || slices.Contains(set, n) {
				poolPrice += n.Price
				poolDisruption += 1 + float64(n.evictions())
			}
		}
		share := saving
		if total > 0 {
			share = saving * lost[pi] / total
		}
		if poolPrice <= 0 || poolDisruption <= 0 {
			continue
		}
		savingFraction, disruptionFraction := share/poolPrice, disruption[pi]/poolDisruption
		if score := savingFraction / disruptionFraction; score < 1.0/BalancedK {
			return fmt.Sprintf("NodePool %s is Balanced: saving %.1f%% of its price for %.1f%% of its disruption scores %.2f, below %.2f",
				pool.Name, 100*savingFraction, 100*disruptionFraction, score, 1.0/BalancedK)
		}
	}
	return ""
}

// splitByPool groups the nodes of an action by pool, with the price each
// pool loses and the price of them all: an action's saving is split
// between its pools by the price each one loses.
func (c *consolidator) splitByPool(set []*consNode) (byPool map[int][]*consNode, lost map[int]float64, total float64) {
	byPool, lost = map[int][]*consNode{}, map[int]float64{}
	for _, n := range set {
		byPool[n.pool] = append(byPool[n.pool], n)
		lost[n.pool] += n.Price
		total += n.Price
	}
	return byPool, lost, total
}

// crossPoolRefusal says why a merge removing nodes of several pools is
// refused: it must launch fewer nodes than it removes (otherwise it is
// only independent replacements bundled into one action, which Karpenter's
// multi-node consolidation, launching at most one node, would not take),
// and each pool's share of the saving (split by the price each loses) must
// meet the minimum its own nodes would need alone, so that no pool's pods
// are evicted for another pool's saving. It returns "" for a merge within
// one pool.
func (c *consolidator) crossPoolRefusal(set []*consNode, launched int, saving float64) string {
	byPool, lost, total := c.splitByPool(set)
	if len(byPool) < 2 || total <= 0 {
		return ""
	}
	if launched >= len(set) {
		return fmt.Sprintf("merging %d nodes of %d NodePools would launch %d", len(set), len(byPool), launched)
	}
	for _, pi := range sortedInts(byPool) {
		share, need := saving*lost[pi]/total, c.minSaving(byPool[pi])
		if share < need {
			return fmt.Sprintf("NodePool %s's share of the saving, $%.4f/h, is below its minimum of $%.4f/h", c.p.Pools[pi].Name, share, need)
		}
	}
	return ""
}

func sortedInts[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// MinSpotToSpotTypes is how many cheaper spot instance types must hold a
// spot node's pods before it is replaced by another spot node, Karpenter's
// MinInstanceTypesForSpotToSpotConsolidation
// (pkg/controllers/disruption/consolidation.go): replacing spot by the
// cheapest spot offering races towards the offerings most often
// interrupted, and with fewer options the replacement is likely to be
// consolidated again at once.
const MinSpotToSpotTypes = 15

// capacitySpot is the karpenter.sh/capacity-type value of spot capacity.
const capacitySpot = "spot"

// spotToSpot says why a spot node may not be replaced by the spot
// replacements the simulation planned, or "": fewer than
// MinSpotToSpotTypes instance types of the replacement's pool have a spot
// offering cheaper than the node and room for its pods (requests summed,
// node affinity and the pool's requirements matched). Replacing a spot node
// by on-demand capacity, and merging several nodes, are not limited, as in
// Karpenter.
func (c *consolidator) spotToSpot(n *consNode, sim *simulation) string {
	if n.CapacityType != capacitySpot {
		return ""
	}
	for _, nn := range sim.plan.NewNodes {
		if nn.CapacityType != capacitySpot {
			return ""
		}
	}
	var need Resources
	for i := range sim.problem.Pods {
		need = need.Add(podRequests(&sim.problem.Pods[i]))
	}
	pi := c.pools[sim.plan.NewNodes[0].Pool]
	pool := &c.p.Pools[pi]
	reqs := poolRequirements(pool)
	cheaper := 0
	types := c.p.PoolTypes(pi)
	for ti := range types {
		it := &types[ti]
		if !need.Fits(it.Allocatable()) {
			continue
		}
		labels := MapLabels{}
		for k, v := range it.Labels {
			labels[k] = v
		}
		for k, v := range poolLabels(pool) {
			labels[k] = v
		}
		labels[LabelInstanceType] = it.Name
		for _, o := range it.Offerings {
			if o.CapacityType != capacitySpot || o.Price >= n.Price {
				continue
			}
			labels[LabelZone], labels[LabelCapacityType] = o.Zone, o.CapacityType
			if c.typeAdmits(reqs, labels, sim.problem.Pods) {
				cheaper++
				break
			}
		}
	}
	if cheaper < MinSpotToSpotTypes {
		return fmt.Sprintf("replacing spot by spot needs %d cheaper spot instance types that hold its pods and %d do (Karpenter's spot-to-spot guard)",
			MinSpotToSpotTypes, cheaper)
	}
	return ""
}

// typeAdmits reports whether an offering's labels satisfy the pool's
// requirements and every pod's node selector and affinity.
func (c *consolidator) typeAdmits(reqs []Requirement, labels MapLabels, pods []Pod) bool {
	for i := range reqs {
		if !reqs[i].Matches(labels) {
			return false
		}
	}
	for i := range pods {
		if !matchesAffinity(pods[i].NodeSelector, pods[i].Affinity, labels) {
			return false
		}
	}
	return true
}
