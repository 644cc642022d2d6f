package solver

// Enforcing topology on nodes: hostname conflicts, and the spread and
// affinity a finished plan must still keep.

import (
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"sort"
)

// buildConflicts records, for every pair of classes where one's hostname
// anti-affinity selects the other's pods, that they must not share a node.
func (s *state) buildConflicts() {
	// The classes of a group share its terms and its pods' labels: each
	// group's terms are asked once whether they select each group's pods
	// (sel: 0 not asked yet, 1 one of them does, 2 none does), a group at
	// a time so that one answer vector serves. A class listed once per
	// term that selects is listed once in the end (sorted, compacted).
	byGroup := make([][]int, len(s.groups))
	for a, ca := range s.classes {
		byGroup[ca.group] = append(byGroup[ca.group], a)
	}
	sel := make([]int8, len(s.groups))
	for g, members := range byGroup {
		if len(members) == 0 {
			continue
		}
		ra := s.groups[g].rep
		terms := hostnameAntiTerms(ra)
		if len(terms) == 0 {
			continue
		}
		clear(sel)
		for _, a := range members {
			ca := s.classes[a]
			for b, cb := range s.classes {
				// A cap group of one pod per node already keeps its classes apart.
				if a == b || s.unitCapTogether(ca, cb) {
					continue
				}
				if sel[cb.group] == 0 {
					sel[cb.group] = 2
					rb := s.groups[cb.group].rep
					for i := range terms {
						if terms[i].selects(ra, rb) {
							sel[cb.group] = 1
							break
						}
					}
				}
				if sel[cb.group] == 1 {
					ca.conflicts = append(ca.conflicts, b)
					cb.conflicts = append(cb.conflicts, a)
				}
			}
		}
	}
	for _, c := range s.classes {
		slices.Sort(c.conflicts)
		c.conflicts = slices.Compact(c.conflicts)
	}
}

// existingRoom is how many pods of the class an existing node may take
// given hostname (anti-)affinity: zero when anti-affinity (either way) or a
// required affinity to other pods' nodes rules the node out, else no limit
// (per-node caps are capRoomOn's).
func (s *state) existingRoom(c *class, n *Node) int {
	room := math.MaxInt
	if !s.hasTopology {
		return room
	}
	rep := s.groups[c.group].rep
	for _, t := range hostnameAntiTerms(rep) {
		for j := range n.Pods {
			if t.selects(rep, &n.Pods[j]) {
				return 0
			}
		}
	}
	for j := range n.Pods {
		for _, t := range n.Pods[j].PodAntiAffinity {
			if (t.TopologyKey == LabelHostname) && t.selects(&n.Pods[j], rep) {
				return 0
			}
		}
	}
	for _, t := range rep.PodAffinity {
		if s.mustJoinRunning(rep, &t) {
			found := false
			for j := range n.Pods {
				found = found || t.selects(rep, &n.Pods[j])
			}
			if !found {
				return 0
			}
		}
	}
	return room
}

// onlyExisting reports whether the class may only join existing nodes
// (required affinity to other pods' nodes).
func (s *state) onlyExisting(c *class) bool {
	rep := s.groups[c.group].rep
	for _, t := range rep.PodAffinity {
		if s.mustJoinRunning(rep, &t) {
			return true
		}
	}
	return false
}

// conflictsWith reports whether class ci may not share a node with any
// class already taken.
func (s *state) conflictsWith(ci int, takes []take) bool {
	c := s.classes[ci]
	if len(c.conflicts) == 0 {
		return false
	}
	for _, t := range takes {
		if _, found := slices.BinarySearch(c.conflicts, t.class); found {
			return true
		}
	}
	return false
}

// enforceSpread is the safety net for spread and zonal affinity: when
// packing could not place some of a group's domain shares (pool limits,
// say), the placed pods can be more skewed than maxSkew allows, or followers
// can be left in a zone without their leaders. It takes such pods back
// (from the fullest domain, newest first, for spread), reports them
// unschedulable, and drops new nodes left empty. It returns whether it
// changed the plan.
func (s *state) enforceSpread() bool {
	if !s.hasTopology {
		return false
	}
	// The final nodes (existing, then planned) and where each placed pod is.
	var final []finalNode
	nodeOf := map[int]int{}
	existingIdx := map[string]int{}
	for i := range s.p.Nodes {
		n := &s.p.Nodes[i]
		existingIdx[n.Name] = len(final)
		final = append(final, finalNode{labels: MapLabels(n.Labels), taints: n.Taints, running: n.Pods})
	}
	for _, e := range s.plan.Existing {
		nodeOf[e.Pod] = existingIdx[e.Node]
	}
	for ni := range s.plan.NewNodes {
		n := &s.plan.NewNodes[ni]
		_, labels, taints, _ := s.plannedNode(n)
		for _, pod := range n.Pods {
			nodeOf[pod] = len(final)
		}
		final = append(final, finalNode{labels: labels, taints: taints})
	}
	// Taking pods back for one rule can break another; repeat until none
	// takes any more.
	removed := map[int]string{}
	// Each constraint once per way of choosing its domains (zone shares of
	// a group and groups differing only in labels share both).
	type constraint struct {
		orig *Pod
		c    *TopologySpread
	}
	var constraints []constraint
	seen := map[string]bool{}
	for g := range s.groups {
		if s.groups[g].from > 0 {
			continue
		}
		orig := s.groups[g].orig
		for ci := range orig.Spread {
			c := &orig.Spread[ci]
			if c.TopologyKey == LabelHostname || c.WhenUnsatisfiable == ScheduleAnyway {
				continue
			}
			if key := spreadScope(orig, c); !seen[key] {
				seen[key] = true
				constraints = append(constraints, constraint{orig, c})
			}
		}
	}
	for before := -1; before != len(removed); {
		before = len(removed)
		for _, k := range constraints {
			s.trimSpread(k.orig, k.c, final, nodeOf, removed)
		}
		s.trimAffinity(final, nodeOf, removed)
	}
	if len(removed) == 0 {
		return false
	}
	nodes := s.plan.NewNodes[:0]
	s.plan.TotalPrice = 0
	for _, n := range s.plan.NewNodes {
		kept := n.Pods[:0]
		for _, pod := range n.Pods {
			if _, gone := removed[pod]; gone {
				n.Requested = n.Requested.Sub(podRequests(&s.p.Pods[pod]))
				n.moved = true
				continue
			}
			kept = append(kept, pod)
		}
		n.Pods = kept
		if len(kept) > 0 {
			nodes = append(nodes, n)
			s.plan.TotalPrice += n.Price
		}
	}
	s.plan.NewNodes = nodes
	s.plan.TotalPrice = round6(s.plan.TotalPrice)
	existing := s.plan.Existing[:0]
	for _, e := range s.plan.Existing {
		if _, gone := removed[e.Pod]; !gone {
			existing = append(existing, e)
		}
	}
	s.plan.Existing = existing
	for pod, reason := range removed {
		s.plan.Unschedulable = append(s.plan.Unschedulable, Unschedulable{Pod: pod, Reason: reason})
	}
	sort.Slice(s.plan.Unschedulable, func(a, b int) bool { return s.plan.Unschedulable[a].Pod < s.plan.Unschedulable[b].Pod })
	return true
}

// trimAffinity is the safety net for required pod (anti-)affinity on every
// key but hostname (which caps and bundles decide per node): zone, whose
// followers can be left in a zone without their leaders when those could
// not all be placed, and keys the packing does not plan for at all
// (kubernetes.io/arch, a pool label). A placed pod whose term the final
// nodes break is taken back, and so on until none is left alone;
// placePending then puts it where the term holds, if anywhere. An affinity
// term holds when a pod it selects is in the pod's domain of the key, or
// when none is anywhere and the term selects the pod itself (the first of
// its group); an anti-affinity term when no other selected pod shares the
// domain (of two pods the term keeps apart, the later in pod order is
// taken back).
func (s *state) trimAffinity(final []finalNode, nodeOf map[int]int, removed map[int]string) {
	domainOf := func(ni int, key string) (string, bool) { return final[ni].labels.Label(key) }
	// The pods each distinct term selects, counted per domain of its key
	// over the running pods and the placed ones not taken back, once per
	// term (a term is read once per pod of a class; counting per pod made
	// this quadratic in the pods).
	type selectedCount struct {
		owner    *Pod
		t        *PodAffinityTerm
		byDomain map[string]int
		total    int
	}
	counts := map[string]*selectedCount{}
	count := func(owner *Pod, t *PodAffinityTerm) *selectedCount {
		var w keyWriter
		w.str(owner.Namespace)
		w.affinityTerm(t)
		k := w.String()
		if c, ok := counts[k]; ok {
			return c
		}
		c := &selectedCount{owner: owner, t: t, byDomain: map[string]int{}}
		note := func(ni int, q *Pod) {
			if t.selects(owner, q) {
				c.total++
				if d, ok := domainOf(ni, t.TopologyKey); ok {
					c.byDomain[d]++
				}
			}
		}
		for ni := range final {
			for j := range final[ni].running {
				note(ni, &final[ni].running[j])
			}
		}
		for q, ni := range nodeOf {
			if _, gone := removed[q]; !gone {
				note(ni, &s.p.Pods[q])
			}
		}
		counts[string(k)] = c
		return c
	}
	// others is how many pods other than pod the term selects in pod's
	// domain, and anywhere.
	others := func(pod int, t *PodAffinityTerm) (inDomain, total int, ok bool) {
		p := &s.p.Pods[pod]
		c := count(p, t)
		d, ok := domainOf(nodeOf[pod], t.TopologyKey)
		inDomain, total = c.byDomain[d], c.total
		if t.selects(p, p) { // pod itself is placed and counted
			inDomain, total = inDomain-1, total-1
		}
		return inDomain, total, ok
	}
	broken := func(pod int) string {
		p := &s.p.Pods[pod]
		for k := range p.PodAffinity {
			t := &p.PodAffinity[k]
			if t.TopologyKey == LabelHostname {
				continue
			}
			in, total, ok := others(pod, t)
			if (total == 0 && t.selects(p, p)) || (ok && in > 0) {
				continue
			}
			return fmt.Sprintf("its required pod affinity on %s: the pods it must join could not all be placed, and none is on a node with its node's %s", t.TopologyKey, t.TopologyKey)
		}
		for k := range p.PodAntiAffinity {
			t := &p.PodAntiAffinity[k]
			if t.TopologyKey == LabelHostname {
				continue
			}
			if in, _, ok := others(pod, t); ok && in > 0 {
				return fmt.Sprintf("its required pod anti-affinity on %s: a pod it selects is on a node with the same %s", t.TopologyKey, t.TopologyKey)
			}
		}
		return ""
	}
	for changed := true; changed; {
		changed = false
		for pod := len(s.p.Pods) - 1; pod >= 0; pod-- {
			ni, placed := nodeOf[pod]
			if _, gone := removed[pod]; !placed || gone {
				continue
			}
			why := broken(pod)
			if why == "" {
				continue
			}
			removed[pod] = why
			changed = true
			q := &s.p.Pods[pod]
			for _, c := range counts {
				if c.t.selects(c.owner, q) {
					c.total--
					if d, ok := domainOf(ni, c.t.TopologyKey); ok {
						c.byDomain[d]--
					}
				}
			}
		}
	}
}

// finalNode is a node of the final cluster as the safety net sees it.
type finalNode struct {
	labels  Labels
	taints  []Taint
	running []Pod
}

// trimSpread removes placed pods carrying constraint c (of pods like orig)
// from the fullest domain until every carrier's domain is within maxSkew of
// the emptiest, counting as kube-scheduler does: domains and matching pods
// of the final nodes the constraint's node affinity and taints policies
// accept, and, as Karpenter does, the domains the pools could launch into.
func (s *state) trimSpread(orig *Pod, c *TopologySpread, nodes []finalNode, nodeOf map[int]int, removed map[int]string) {
	f := spreadFilter(c)
	key := c.TopologyKey
	eligible := make([]bool, len(nodes))
	domainOf := make([]string, len(nodes))
	counts := map[string]int{}
	var domains []string
	matches := func(p *Pod) bool { return p.Namespace == orig.Namespace && c.Selector.Matches(p.Labels) }
	for i := range nodes {
		n := &nodes[i]
		d, ok := n.labels.Label(key)
		domainOf[i] = d
		eligible[i] = ok && (!f.affinity || matchesAffinity(orig.NodeSelector, orig.Affinity, n.labels)) &&
			(!f.taints || untolerated(orig.Tolerations, n.taints) == nil)
		if !eligible[i] {
			continue
		}
		if !slices.Contains(domains, d) {
			domains = append(domains, d)
		}
		for j := range n.running {
			if matches(&n.running[j]) {
				counts[d]++
			}
		}
	}
	// Domains the pools could launch a node into count too (empty unless
	// a final node is there), as the solver planned them (domainsOf) and
	// as Karpenter counts them.
	if len(domains) > 0 {
		for _, d := range s.domainsOf(orig, key, f) {
			if !slices.Contains(domains, d) {
				domains = append(domains, d)
			}
		}
	}
	if len(domains) == 0 {
		return
	}
	var mine []int // placed pods carrying this constraint, in pod order
	for pod := range s.p.Pods {
		ni, placed := nodeOf[pod]
		if _, gone := removed[pod]; !placed || gone {
			continue
		}
		if eligible[ni] && matches(&s.p.Pods[pod]) {
			counts[domainOf[ni]]++
		}
		if hasSpread(&s.p.Pods[pod], c) {
			mine = append(mine, pod)
		}
	}
	skew := max(int(c.MaxSkew), 1)
	for {
		lo := math.MaxInt
		for _, z := range domains {
			lo = min(lo, counts[z])
		}
		if int32(len(domains)) < c.MinDomains {
			lo = 0
		}
		// The newest carrier in the fullest domain that breaks the skew.
		victim := -1
		for i := len(mine) - 1; i >= 0; i-- {
			p := mine[i]
			d := domainOf[nodeOf[p]]
			if _, gone := removed[p]; gone || counts[d]-lo <= skew {
				continue
			}
			if victim < 0 || counts[d] > counts[domainOf[nodeOf[victim]]] {
				victim = p
			}
		}
		if victim < 0 {
			return
		}
		removed[victim] = fmt.Sprintf("its topology spread on %s (maxSkew %d) would be broken: the other domains' share of the pods it selects could not be placed", key, skew)
		if ni := nodeOf[victim]; eligible[ni] && matches(&s.p.Pods[victim]) {
			counts[domainOf[ni]]--
		}
	}
}

// spreadScope identifies what a spread constraint of owner counts: the
// same pods (namespace, selector) over the same eligible nodes (the
// owner's node selector, affinity and tolerations, as the policies read
// them) against the same skew. Constraints with one scope are judged once.
func spreadScope(owner *Pod, c *TopologySpread) string {
	var w keyWriter
	w.str(owner.Namespace)
	w.spread(c)
	w.nodeConstraints(owner)
	return w.String()
}

// hasSpread reports whether the pod carries a constraint equal to c.
func hasSpread(p *Pod, c *TopologySpread) bool {
	for i := range p.Spread {
		a := &p.Spread[i]
		if a.TopologyKey == c.TopologyKey && a.MaxSkew == c.MaxSkew && a.WhenUnsatisfiable == c.WhenUnsatisfiable && selectorEqual(&a.Selector, &c.Selector) {
			return true
		}
	}
	return false
}

// selectorEqual reports whether two selectors are the same (a nil map or
// list equal to an empty one).
func selectorEqual(a, b *Selector) bool {
	return maps.Equal(a.MatchLabels, b.MatchLabels) && slices.EqualFunc(a.MatchExpressions, b.MatchExpressions, func(x, y Requirement) bool {
		return x.Key == y.Key && x.Operator == y.Operator && slices.Equal(x.Values, y.Values)
	})
}

// plannedNode finds a planned node's pool (pi is -1 for a pool the problem
// lacks) and the labels and taints the node will carry: the candidate
// labels of its offering, pool and type, with the values the plan chose
// for the keys the pool leaves open (NewNode.Labels).
func (s *state) plannedNode(n *NewNode) (pi int, labels Labels, taints []Taint, it *InstanceType) {
	l := &candidateLabels{zone: n.Zone, capacityType: n.CapacityType}
	pi = slices.IndexFunc(s.p.Pools, func(p Pool) bool { return p.Name == n.Pool })
	if pi < 0 {
		return pi, l, nil, nil
	}
	pool := &s.p.Pools[pi]
	l.pool = poolLabels(pool)
	if len(n.Labels) > 0 {
		l.pool = maps.Clone(l.pool)
		maps.Copy(l.pool, n.Labels)
	}
	types := s.p.PoolTypes(pi)
	if ti := slices.IndexFunc(types, func(t InstanceType) bool { return t.Name == n.InstanceType }); ti >= 0 {
		it = &types[ti]
		l.typ = it.Labels
	}
	return pi, l, pool.Taints, it
}

// constraintKeys yields the topology key of each of the pod's spread,
// pod affinity and pod anti-affinity terms, in that order.
func (p *Pod) constraintKeys() iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := range p.Spread {
			if !yield(p.Spread[i].TopologyKey) {
				return
			}
		}
		for _, terms := range [][]PodAffinityTerm{p.PodAffinity, p.PodAntiAffinity} {
			for i := range terms {
				if !yield(terms[i].TopologyKey) {
					return
				}
			}
		}
	}
}
