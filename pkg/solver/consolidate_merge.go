package solver

import (
	"math"
	"sort"
)

// maxMergeNodes bounds the nodes one Merge removes, as Karpenter bounds its
// multi-node consolidation to 100 candidates: a bigger action drains too
// much at once and takes too long to simulate.
const maxMergeNodes = 100

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
