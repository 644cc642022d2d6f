package solver

import (
	"math"
	"sort"
)

// maxMergeNodes bounds the nodes one Merge removes, as Karpenter bounds its
// multi-node consolidation to 100 candidates: a bigger action drains too
// much at once and takes too long to simulate.
const maxMergeNodes = 100

// mergeGoal is which size of a group of candidates a merge keeps.
type mergeGoal int

const (
	// mergeMarginal keeps the largest size whose nodes beyond the best
	// smaller size still bring at least the minimum saving of an action of
	// their own. It tries 2, 4, 8, … of the first nodes, then bisects
	// between the last size that paid and the first that did not.
	mergeMarginal mergeGoal = iota
	// mergeWhole keeps the largest size whose merge pays the minimum as a
	// whole, trying the whole group first, and moves the pods only onto new
	// nodes, nodes no action may remove, and candidates at least as used as
	// every node merged, so that the emptier nodes stay removable.
	mergeWhole
)

// merge replaces groups of remaining nodes by fewer or cheaper nodes (and
// the other nodes' free room). Candidates go best first (see
// mergeCandidates); each group is the first of them that budgets and PDBs
// allow together (see mergeGroup), and the goal says which size of it is
// merged. It stops after a few groups in a row that save nothing.
func (c *consolidator) merge(goal mergeGoal) error {
	cands := c.mergeCandidates()
	failures := 0
	for failures < 3 && !c.expired() {
		group := c.mergeGroup(cands)
		if len(group) == 0 {
			return nil
		}
		if len(group) == 1 {
			// Alone within the budgets and PDBs: nothing to merge it with.
			cands = removeNode(cands, group[0])
			continue
		}
		best, k, why, err := c.bestMerge(group, goal)
		if err != nil {
			return err
		}
		if best == nil {
			group[0].replaceWhy = "merging it with the next candidate nodes saves less than the minimum"
			if why != "" {
				group[0].replaceWhy = "merging it with the next candidate nodes: " + why
			}
			cands = removeNode(cands, group[0])
			failures++
			continue
		}
		failures = 0
		c.apply(group[:k], best.plan, best, "")
	}
	return nil
}

// mergeCandidates are the nodes a merge may remove, best first: the most a
// node costs beyond the fluid price of its pods (its price times its unused
// share), less the minimum saving its evictions must bring.
func (c *consolidator) mergeCandidates() []*consNode {
	var cands []*consNode
	for _, n := range c.nodes {
		if n.candidate() && n.evictions()+len(n.pending) > 0 && c.p.Pools[n.pool].Consolidation.Policy != WhenEmpty {
			cands = append(cands, n)
		}
	}
	worth := func(n *consNode) float64 { return n.Price*(1-n.utilisation()) - c.minSaving([]*consNode{n}) }
	sort.SliceStable(cands, func(a, b int) bool {
		wa, wb := worth(cands[a]), worth(cands[b])
		if wa != wb {
			return wa > wb
		}
		return cands[a].Name < cands[b].Name
	})
	return cands
}

// mergeGroup is the next group to merge: the first candidates still
// removable, at most maxMergeNodes, as many as budgets and PDBs allow
// together. As in Karpenter's multi-node consolidation, the group may hold
// nodes of several pools (their pods then move wherever their requirements
// allow); each pool's minimum saving is then met by its own share of the
// saving (see crossPoolRefusal).
func (c *consolidator) mergeGroup(cands []*consNode) []*consNode {
	var group []*consNode
	for _, n := range cands {
		if len(group) == maxMergeNodes {
			break
		}
		if !n.candidate() {
			continue
		}
		try := append(group[:len(group):len(group)], n)
		if c.budgetExceeded(try) != "" || c.pdbExceeded(try) != "" {
			continue
		}
		group = try
	}
	return group
}

// bestMerge finds the size k of the group whose merge of its first k nodes
// the goal keeps, and that merge's simulation; nil when no size pays, with
// why the last size tried was refused when a guard beyond the minimum
// saving refused it.
func (c *consolidator) bestMerge(group []*consNode, goal mergeGoal) (*simulation, int, string, error) {
	s := &mergeSearch{c: c, group: group, goal: goal}
	// Double the size while it pays, then bisect between the last size
	// that paid and the first that did not. mergeWhole wants the largest
	// group that pays as a whole: it tries the whole group first.
	failed := 0
	if goal == mergeWhole {
		pays, err := s.try(len(group))
		if err != nil {
			return nil, 0, "", err
		}
		if !pays {
			failed = len(group)
		}
	}
	for k := 2; k != failed && !(goal == mergeWhole && s.best != nil); k = min(2*k, len(group)) {
		pays, err := s.try(k)
		if err != nil {
			return nil, 0, "", err
		}
		if !pays && s.best != nil {
			failed = k
			break
		}
		if k == len(group) {
			break
		}
	}
	for s.best != nil && failed > 0 && failed-s.bestK > 1 {
		mid := (s.bestK + failed) / 2
		pays, err := s.try(mid)
		if err != nil {
			return nil, 0, "", err
		}
		if !pays {
			failed = mid
		}
	}
	return s.best, s.bestK, s.why, nil
}

// mergeSearch is the state of bestMerge: the best merge of the group's
// first bestK nodes found so far, and its saving.
type mergeSearch struct {
	c          *consolidator
	group      []*consNode
	goal       mergeGoal
	best       *simulation
	bestK      int
	bestSaving float64
	// why is why replaceRefusal refused the last size tried, if it did.
	why string
}

// try simulates merging the first k nodes of the group and keeps it when it
// pays and, for mergeMarginal, its nodes beyond the best so far pay too.
func (s *mergeSearch) try(k int) (bool, error) {
	set := s.group[:k]
	place := placement{newNodes: true}
	if s.goal == mergeWhole {
		for _, n := range set {
			place.receiverFloor = max(place.receiverFloor, n.utilisation())
		}
	}
	sim, err := s.c.simulate(set, place)
	if err != nil {
		return false, err
	}
	saving := -math.Inf(1)
	if len(sim.plan.Unschedulable) == 0 {
		price := 0.0
		for _, n := range set {
			price += n.Price
		}
		saving = price - sim.plan.TotalPrice
	}
	s.why = ""
	pays := saving >= s.c.minSaving(set)
	if pays {
		s.why = s.c.replaceRefusal(set, sim.plan.NewNodes, saving)
		pays = s.why == ""
	}
	pays = pays && s.c.crossPoolRefusal(set, len(sim.plan.NewNodes), saving) == "" && s.c.balancedRefusal(set, saving) == ""
	if s.goal == mergeMarginal && s.best != nil && k > s.bestK {
		// The nodes added must pay their way.
		pays = pays && saving-s.bestSaving >= s.c.minSaving(s.group[s.bestK:k])
	}
	if pays {
		s.best, s.bestK, s.bestSaving = sim, k, saving
	}
	return pays, nil
}
