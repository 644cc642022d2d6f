package solver

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// LabelHostname is the topology key of one node.
const LabelHostname = "kubernetes.io/hostname"

// How topology constraints become packing rules (the solver places every pod
// at once, so rules are decided before packing):
//
//   - Zonal topology spread (DoNotSchedule, and ScheduleAnyway as a
//     preference), zonal pod anti-affinity against the pod's own group and
//     zonal self-affinity assign each pod of a group to a zone up front: spread
//     fills the least-loaded eligible zone first (counting matching pods
//     already running), anti-affinity allows one pod per zone, self-affinity
//     puts the group in the zone its running pods are in, or the first
//     eligible one. Each zone's share becomes its own class, pinned to the
//     zone by a node requirement.
//   - Hostname spread caps a class at maxSkew pods per node; hostname
//     anti-affinity against the pod's own group caps it at one; hostname
//     anti-affinity against other pods keeps the two classes off the same
//     node (a conflict) and off existing nodes running matching pods.
//   - Pod affinity to other pods' zones pins the class to the zones where
//     matching pods run; to other pods' nodes, to those existing nodes.
//   - Preferences are treated as requirements, highest weight first, as long
//     as some candidate node still satisfies the pod; one that would leave
//     none is relaxed (dropped). ScheduleAnyway spread and preferred pod
//     (anti-)affinity always hold in this way: more nodes or zones satisfy them.
//
// Known limits: pods that match a spread selector without carrying the
// constraint are not counted among the new pods; required hostname
// self-affinity (all pods on one node) is refused as unsupported rather
// than planned wrongly.

// Matches reports whether labels satisfy the selector. An empty selector
// matches everything, as in Kubernetes.
func (sel *Selector) Matches(labels map[string]string) bool {
	for k, v := range sel.MatchLabels {
		if labels[k] != v {
			return false
		}
	}
	return allMatch(sel.MatchExpressions, MapLabels(labels))
}

// selects reports whether the term, written by owner, matches pod other.
func (t *PodAffinityTerm) selects(owner, other *Pod) bool {
	if len(t.Namespaces) == 0 {
		if other.Namespace != owner.Namespace {
			return false
		}
	} else if !slices.Contains(t.Namespaces, other.Namespace) {
		return false
	}
	return t.Selector.Matches(other.Labels)
}

// topologyKey identifies the topology fields of a pod, for grouping.
func topologyKey(p *Pod) string {
	if len(p.Spread) == 0 && len(p.PodAffinity) == 0 && len(p.PodAntiAffinity) == 0 && len(p.Preferences) == 0 {
		return ""
	}
	data, _ := json.Marshal([]any{p.Labels, p.Spread, p.PodAffinity, p.PodAntiAffinity, p.Preferences})
	return string(data)
}

// applyPreferences returns the pod with its node-affinity preferences added
// as requirements, highest weight first, skipping any that would leave no
// candidate node.
func (s *state) applyPreferences(pod *Pod) *Pod {
	prefs := slices.Clone(pod.Preferences)
	sort.SliceStable(prefs, func(a, b int) bool { return prefs[a].Weight > prefs[b].Weight })
	out := pod
	for _, pref := range prefs {
		if pref.Kind != PreferNodeAffinity || len(pref.NodeTerm) == 0 {
			continue
		}
		cand := clonePod(out)
		cand.Affinity = withRequirements(cand.Affinity, pref.NodeTerm...)
		if len(s.eligibleZones(cand, false, false)) > 0 {
			out = cand
		}
	}
	return out
}

func clonePod(p *Pod) *Pod {
	c := *p
	c.Affinity = slices.Clone(p.Affinity)
	return &c
}

// withRequirements adds requirements to every term (or makes one term).
func withRequirements(terms []Term, reqs ...Requirement) []Term {
	if len(terms) == 0 {
		return []Term{slices.Clone(reqs)}
	}
	out := make([]Term, len(terms))
	for i, t := range terms {
		out[i] = append(slices.Clone(t), reqs...)
	}
	return out
}

// eligibleZones lists the zones where the pod could run: zones of offerings
// some pool allows whose taints the pod tolerates and whose labels its node
// affinity accepts, and of existing nodes likewise. As domains for topology
// spread (domains true), taints do not count (Kubernetes' default
// nodeTaintsPolicy) and neither does node affinity when ignoreAffinity.
func (s *state) eligibleZones(pod *Pod, domains, ignoreAffinity bool) []string {
	zones := map[string]bool{}
	for pi := range s.p.Pools {
		pool := &s.p.Pools[pi]
		if !domains && untolerated(pod.Tolerations, pool.Taints) != nil {
			continue
		}
		pl := poolLabelsFor(pool, pod)
		types := s.p.PoolTypes(pi)
		for ti := range types {
			it := &types[ti]
			for _, o := range it.Offerings {
				if zones[o.Zone] {
					continue
				}
				labels := &candidateLabels{zone: o.Zone, capacityType: o.CapacityType, pool: pl, typ: it.Labels}
				if allMatch(pool.Requirements, labels) && (ignoreAffinity || matchesAffinity(pod.NodeSelector, pod.Affinity, labels)) {
					zones[o.Zone] = true
				}
			}
		}
	}
	for i := range s.p.Nodes {
		n := &s.p.Nodes[i]
		z := n.Labels[LabelZone]
		if z != "" && (domains || untolerated(pod.Tolerations, n.Taints) == nil) && (ignoreAffinity || matchesAffinity(pod.NodeSelector, pod.Affinity, MapLabels(n.Labels))) {
			zones[z] = true
		}
	}
	out := make([]string, 0, len(zones))
	for z := range zones {
		out = append(out, z)
	}
	sort.Strings(out)
	return out
}

// zoneCounts counts, per zone, the pods match accepts among those running
// and those earlier groups were assigned to zones in this solve.
func (s *state) zoneCounts(match func(*Pod) bool) map[string]int {
	counts := map[string]int{}
	for i := range s.p.Nodes {
		n := &s.p.Nodes[i]
		for j := range n.Pods {
			if match(&n.Pods[j]) {
				counts[n.Labels[LabelZone]]++
			}
		}
	}
	for _, z := range s.zoned {
		if match(z.pod) {
			counts[z.zone]++
		}
	}
	return counts
}

// runningMatches counts, per zone, the pods the term (written by owner) selects.
func (s *state) runningMatches(owner *Pod, t *PodAffinityTerm) map[string]int {
	return s.zoneCounts(func(p *Pod) bool { return t.selects(owner, p) })
}

// zonedPod is a pending pod this solve has assigned to a zone.
type zonedPod struct {
	pod  *Pod
	zone string
}

// zonePlan is how a group's pods are split across zones.
type zonePlan struct {
	zones  []string // zone of each pod, in pod order; "" = refused
	reason string   // why refused pods are refused
}

// planZones decides each pod's zone for a group with zonal constraints, or
// returns nil when the group has none.
func (s *state) planZones(rep *Pod, n int) *zonePlan {
	selfSpread, selfAnti, selfAff, otherAff := (*TopologySpread)(nil), (*PodAffinityTerm)(nil), (*PodAffinityTerm)(nil), (*PodAffinityTerm)(nil)
	for i := range rep.Spread {
		if rep.Spread[i].TopologyKey == LabelZone && rep.Spread[i].WhenUnsatisfiable != ScheduleAnyway {
			selfSpread = &rep.Spread[i]
			break
		}
	}
	if selfSpread == nil {
		for i := range rep.Spread {
			if rep.Spread[i].TopologyKey == LabelZone {
				selfSpread = &rep.Spread[i]
				break
			}
		}
	}
	if selfSpread == nil {
		for _, pref := range rep.Preferences {
			if pref.Kind == PreferScheduleAnywaySpread && pref.Spread != nil && pref.Spread.TopologyKey == LabelZone {
				selfSpread = pref.Spread
				break
			}
		}
	}
	terms := func(required []PodAffinityTerm, kind string) []PodAffinityTerm {
		out := slices.Clone(required)
		for _, pref := range rep.Preferences {
			if pref.Kind == kind && pref.PodTerm != nil {
				out = append(out, *pref.PodTerm)
			}
		}
		return out
	}
	for _, t := range terms(rep.PodAntiAffinity, PreferPodAntiAffinity) {
		if t.TopologyKey == LabelZone && t.selects(rep, rep) {
			selfAnti = &t
			break
		}
	}
	for _, t := range terms(rep.PodAffinity, PreferPodAffinity) {
		if t.TopologyKey != LabelZone {
			continue
		}
		if t.selects(rep, rep) {
			selfAff = &t
		} else {
			otherAff = &t
		}
		break
	}
	if selfSpread == nil && selfAnti == nil && selfAff == nil && otherAff == nil {
		return nil
	}
	usable := s.eligibleZones(rep, false, false)
	plan := &zonePlan{zones: make([]string, n)}
	if len(usable) == 0 {
		plan.reason = "no zone has an allowed node for it"
		return plan
	}
	switch {
	case otherAff != nil:
		counts := s.runningMatches(rep, otherAff)
		zone := ""
		for _, z := range usable {
			if counts[z] > 0 {
				zone = z
				break
			}
		}
		if zone == "" {
			plan.reason = "its required pod affinity on " + LabelZone + " matches no running pod in a zone it may use"
			return plan
		}
		for i := range plan.zones {
			plan.zones[i] = zone
		}
	case selfAff != nil:
		counts := s.runningMatches(rep, selfAff)
		zone := usable[0]
		for _, z := range usable {
			if counts[z] > 0 {
				zone = z
				break
			}
		}
		for i := range plan.zones {
			plan.zones[i] = zone
		}
	case selfAnti != nil:
		counts := s.runningMatches(rep, selfAnti)
		i := 0
		for _, z := range usable {
			if counts[z] == 0 && i < n {
				plan.zones[i] = z
				i++
			}
		}
		if i < n {
			plan.reason = fmt.Sprintf("its pod anti-affinity on %s allows one such pod per zone and only %d zone(s) are free", LabelZone, i)
		}
	default:
		s.spreadZones(rep, selfSpread, usable, plan)
	}
	return plan
}

// spreadZones water-fills the pods over zones: each goes to the usable zone
// with the fewest matching pods, as long as the skew over all domains stays
// within maxSkew.
func (s *state) spreadZones(rep *Pod, c *TopologySpread, usable []string, plan *zonePlan) {
	domains := s.eligibleZones(rep, true, c.NodeAffinityPolicy == "Ignore")
	counts := s.zoneCounts(func(p *Pod) bool { return p.Namespace == rep.Namespace && c.Selector.Matches(p.Labels) })
	skew := max(int(c.MaxSkew), 1)
	for i := range plan.zones {
		globalMin := math.MaxInt
		for _, z := range domains {
			globalMin = min(globalMin, counts[z])
		}
		if int32(len(domains)) < c.MinDomains {
			globalMin = 0
		}
		best := ""
		for _, z := range usable {
			if best == "" || counts[z] < counts[best] {
				best = z
			}
		}
		if c.WhenUnsatisfiable != ScheduleAnyway && counts[best]+1-globalMin > skew {
			plan.reason = fmt.Sprintf("its topology spread on %s (maxSkew %d) would be broken: zones it may use are full relative to %s", LabelZone, skew, strings.Join(domains, ", "))
			return
		}
		plan.zones[i] = best
		counts[best]++
	}
}

// hostnameRules sets the per-node cap of a class and whether it is refused,
// from hostname spread and self anti-affinity (required or preferred).
func hostnameRules(rep *Pod) (perNode int, unsupported string) {
	for _, c := range rep.Spread {
		if c.TopologyKey == LabelHostname && c.Selector.Matches(rep.Labels) {
			perNode = minCap(perNode, max(int(c.MaxSkew), 1))
		}
	}
	for _, pref := range rep.Preferences {
		if pref.Kind == PreferScheduleAnywaySpread && pref.Spread != nil && pref.Spread.TopologyKey == LabelHostname && pref.Spread.Selector.Matches(rep.Labels) {
			perNode = minCap(perNode, max(int(pref.Spread.MaxSkew), 1))
		}
		if pref.Kind == PreferPodAntiAffinity && pref.PodTerm != nil && pref.PodTerm.TopologyKey == LabelHostname && pref.PodTerm.selects(rep, rep) {
			perNode = 1
		}
	}
	for _, t := range rep.PodAntiAffinity {
		if t.TopologyKey == LabelHostname && t.selects(rep, rep) {
			perNode = 1
		}
	}
	for _, t := range rep.PodAffinity {
		if t.TopologyKey == LabelHostname && t.selects(rep, rep) {
			unsupported = "required pod affinity on " + LabelHostname + " to its own pods (all on one node) is not supported yet"
		}
	}
	return perNode, unsupported
}

func minCap(a, b int) int {
	if a == 0 {
		return b
	}
	return min(a, b)
}

// hostnameAntiTerms are the pod's hostname anti-affinity terms (required
// and preferred) that select other pods.
func hostnameAntiTerms(rep *Pod) []PodAffinityTerm {
	var out []PodAffinityTerm
	for _, t := range rep.PodAntiAffinity {
		if t.TopologyKey == LabelHostname {
			out = append(out, t)
		}
	}
	for _, pref := range rep.Preferences {
		if pref.Kind == PreferPodAntiAffinity && pref.PodTerm != nil && pref.PodTerm.TopologyKey == LabelHostname {
			out = append(out, *pref.PodTerm)
		}
	}
	return out
}

// applyTopology rewrites the classes for topology constraints: zone-pinned
// sub-classes, per-node caps, conflicts, refusals. It runs after grouping and
// before candidate kinds are built.
func (s *state) applyTopology() {
	if !s.hasTopology {
		return
	}
	var classes []*class
	groupClasses := map[int][]*class{}
	for _, c := range s.classes {
		groupClasses[c.group] = append(groupClasses[c.group], c)
	}
	for g := 0; g < len(s.groups); g++ {
		cs := groupClasses[g]
		if len(cs) == 0 {
			continue
		}
		rep := s.applyPreferences(s.groups[g].rep)
		s.groups[g].rep = rep
		perNode, unsupported := hostnameRules(rep)
		capGroup := -1
		if perNode > 0 {
			capGroup = len(s.capLimit)
			s.capLimit = append(s.capLimit, perNode)
		}
		n := 0
		for _, c := range cs {
			n += len(c.pods)
		}
		zp := s.planZones(rep, n)
		if zp == nil {
			for _, c := range cs {
				c.capGroup, c.refused = capGroup, unsupported
				classes = append(classes, c)
			}
			continue
		}
		// Split every class of the group by zone, in pod order.
		zoneGroup := map[string]int{}
		i := 0
		for _, c := range cs {
			byZone := map[string]*class{}
			var order []string
			for _, pod := range c.pods {
				z := zp.zones[i]
				i++
				if z != "" {
					s.zoned = append(s.zoned, zonedPod{&s.p.Pods[pod], z})
				}
				sub, ok := byZone[z]
				if !ok {
					sub = &class{req: c.req, group: g, capGroup: capGroup, refused: unsupported}
					if z == "" {
						sub.refused = zp.reason
					} else {
						zg, ok := zoneGroup[z]
						if !ok {
							pinned := clonePod(rep)
							pinned.Affinity = withRequirements(pinned.Affinity, Requirement{Key: LabelZone, Operator: OpIn, Values: []string{z}})
							zg = len(s.groups)
							s.groups = append(s.groups, group{rep: pinned})
							zoneGroup[z] = zg
						}
						sub.group = zg
					}
					byZone[z] = sub
					order = append(order, z)
				}
				sub.pods = append(sub.pods, pod)
			}
			for _, z := range order {
				classes = append(classes, byZone[z])
			}
		}
	}
	s.classes = classes
	s.capCount = make([]int, len(s.capLimit))
	s.buildConflicts()
}

// buildConflicts records, for every pair of classes where one's hostname
// anti-affinity selects the other's pods, that they must not share a node.
func (s *state) buildConflicts() {
	for a, ca := range s.classes {
		ra := s.groups[ca.group].rep
		for _, t := range hostnameAntiTerms(ra) {
			for b, cb := range s.classes {
				// A cap group of one pod per node already keeps its classes apart.
				if a == b || (ca.capGroup >= 0 && ca.capGroup == cb.capGroup && s.capLimit[ca.capGroup] == 1) {
					continue
				}
				rb := s.groups[cb.group].rep
				if t.selects(ra, rb) {
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
// given topology: its per-node cap less matching pods already there, zero
// when anti-affinity (either way) or a required affinity to other pods' nodes
// rules the node out.
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
		if t.TopologyKey == LabelHostname && !t.selects(rep, rep) {
			found := false
			for j := range n.Pods {
				found = found || t.selects(rep, &n.Pods[j])
			}
			if !found {
				return 0
			}
		}
	}
	if c.capGroup >= 0 {
		same := 0
		for j := range n.Pods {
			for _, sp := range rep.Spread {
				if sp.TopologyKey == LabelHostname && n.Pods[j].Namespace == rep.Namespace && sp.Selector.Matches(n.Pods[j].Labels) {
					same++
					break
				}
			}
		}
		room = max(0, s.capLimit[c.capGroup]-same)
	}
	return room
}

// onlyExisting reports whether the class may only join existing nodes
// (required affinity to other pods' nodes).
func (s *state) onlyExisting(c *class) bool {
	rep := s.groups[c.group].rep
	for _, t := range rep.PodAffinity {
		if t.TopologyKey == LabelHostname && !t.selects(rep, rep) {
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

// conflict reports whether classes ci and cj may not share a node.
func (s *state) conflict(ci, cj int) bool {
	_, found := slices.BinarySearch(s.classes[ci].conflicts, cj)
	return found
}

// enforceSpread is the safety net for zonal spread: when packing could not
// place some of a group's zone shares (pool limits, say), the placed pods can
// be more skewed than maxSkew allows. It takes pods back from the fullest
// zone, newest first, until the skew holds, reports them unschedulable, and
// drops new nodes left empty. It returns whether it changed the plan.
func (s *state) enforceSpread() bool {
	if !s.hasTopology {
		return false
	}
	zoneOf := map[int]string{} // pod → zone of its placement
	where := map[int]int{}     // pod → new node index, -1 for existing
	for ni, n := range s.plan.NewNodes {
		for _, pod := range n.Pods {
			zoneOf[pod], where[pod] = n.Zone, ni
		}
	}
	nodeZone := map[string]string{}
	for i := range s.p.Nodes {
		nodeZone[s.p.Nodes[i].Name] = s.p.Nodes[i].Labels[LabelZone]
	}
	for _, e := range s.plan.Existing {
		zoneOf[e.Pod], where[e.Pod] = nodeZone[e.Node], -1
	}
	removed := map[int]string{}
	for g := range s.groups {
		rep := s.groups[g].rep
		for ci := range rep.Spread {
			c := &rep.Spread[ci]
			if c.TopologyKey != LabelZone || c.WhenUnsatisfiable == ScheduleAnyway {
				continue
			}
			s.trimSpread(rep, c, zoneOf, where, removed)
		}
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

// trimSpread removes placed pods carrying constraint c from the fullest zone
// until the final skew is within maxSkew.
func (s *state) trimSpread(rep *Pod, c *TopologySpread, zoneOf map[int]string, where map[int]int, removed map[int]string) {
	domains := s.eligibleZones(rep, true, c.NodeAffinityPolicy == "Ignore")
	if len(domains) == 0 {
		return
	}
	matches := func(p *Pod) bool { return p.Namespace == rep.Namespace && c.Selector.Matches(p.Labels) }
	counts := map[string]int{}
	for i := range s.p.Nodes {
		n := &s.p.Nodes[i]
		for j := range n.Pods {
			if matches(&n.Pods[j]) {
				counts[n.Labels[LabelZone]]++
			}
		}
	}
	var mine []int // placed pods carrying this constraint, in pod order
	for pod := range s.p.Pods {
		z, placed := zoneOf[pod]
		if _, gone := removed[pod]; !placed || gone || !matches(&s.p.Pods[pod]) {
			continue
		}
		counts[z]++
		if hasSpread(&s.p.Pods[pod], c) {
			mine = append(mine, pod)
		}
	}
	skew := max(int(c.MaxSkew), 1)
	for {
		lo, hi := math.MaxInt, ""
		for _, z := range domains {
			lo = min(lo, counts[z])
			if hi == "" || counts[z] > counts[hi] {
				hi = z
			}
		}
		if int32(len(domains)) < c.MinDomains {
			lo = 0
		}
		if counts[hi]-lo <= skew {
			return
		}
		victim := -1
		for i := len(mine) - 1; i >= 0; i-- {
			if _, gone := removed[mine[i]]; !gone && zoneOf[mine[i]] == hi {
				victim = mine[i]
				break
			}
		}
		if victim < 0 {
			return
		}
		removed[victim] = fmt.Sprintf("its topology spread on %s (maxSkew %d) would be broken: the other zones' share of its workload could not be placed", LabelZone, skew)
		counts[hi]--
	}
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

func selectorEqual(a, b *Selector) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// capRoom is how many more pods of class ci the node being filled may take
// under its cap group (MaxInt without one).
func (s *state) capRoom(ci int) int {
	g := s.classes[ci].capGroup
	if g < 0 {
		return math.MaxInt
	}
	return max(0, s.capLimit[g]-s.capCount[g])
}

// countCap records n pods of class ci on the node being filled.
func (s *state) countCap(ci, n int) {
	if g := s.classes[ci].capGroup; g >= 0 {
		s.capCount[g] += n
	}
}

// resetCaps clears the counts the takes added.
func (s *state) resetCaps(takes []take) {
	for _, t := range takes {
		if g := s.classes[t.class].capGroup; g >= 0 {
			s.capCount[g] = 0
		}
	}
}
