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
//     zonal self-affinity assign each pod of a group to a zone up front:
//     spread water-fills every required zonal selector over its eligible
//     zones, counting every pod it matches (running ones, and pending ones
//     of any workload, which are assigned zones too when a selector matches
//     them), anti-affinity allows one pod per zone, self-affinity puts the
//     group in the zone its running pods are in, or the first eligible one.
//     Each zone's share becomes its own class, pinned to the zone by a node
//     requirement. Domains come from the pod's node affinity before
//     preferences are applied.
//   - Hostname spread becomes a cap group: on a node running a pod that
//     carries it, at most maxSkew pods its selector matches, whichever
//     workload they belong to; hostname anti-affinity against the pod's own
//     group caps it at one; hostname anti-affinity against other pods keeps
//     the two classes off the same node (a conflict) and off existing nodes
//     running matching pods. See caps.go.
//   - Pod affinity to other pods' zones pins the class to the zones where
//     matching pods run; to other pods' nodes, to those existing nodes.
//   - Preferences are treated as requirements, highest weight first, as long
//     as some candidate node still satisfies the pod; one that would leave
//     none is relaxed (dropped). ScheduleAnyway spread and preferred pod
//     (anti-)affinity always hold in this way: more nodes or zones satisfy them.
//
// Required hostname self-affinity (all pods on one node) is refused as
// unsupported rather than planned wrongly.

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

// hasTopology reports whether the pod has topology constraints or
// preferences.
func hasTopology(p *Pod) bool {
	return len(p.Spread) > 0 || len(p.PodAffinity) > 0 || len(p.PodAntiAffinity) > 0 || len(p.Preferences) > 0
}

// topologyKey identifies the topology fields of a pod, for grouping. With
// withLabels (some pod of the problem has topology constraints) every pod's
// namespace and labels are part of it, since another pod's selector may
// match them.
func topologyKey(p *Pod, withLabels bool) string {
	if !withLabels {
		return ""
	}
	data, _ := json.Marshal([]any{p.Namespace, p.Labels, p.Spread, p.PodAffinity, p.PodAntiAffinity, p.Preferences})
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
		pl := poolLabels(pool)
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

// zoneSpread is one zonal DoNotSchedule spread constraint of the pending
// pods, shared by every group carrying it, with the pods its selector
// matches counted per zone: running ones, and pending ones as they are
// assigned to zones, whatever workload they belong to.
type zoneSpread struct {
	c       TopologySpread
	ns      string
	domains []string
	counts  map[string]int
}

func (z *zoneSpread) matches(p *Pod) bool {
	return p.Namespace == z.ns && z.c.Selector.Matches(p.Labels)
}

// skewAfter is the skew of zone zone once a pod is added there (adding
// one to the zone's count when the pod matches).
func (z *zoneSpread) skewAfter(zone string, matches bool) int {
	add := 0
	if matches {
		add = 1
	}
	lo := math.MaxInt
	for _, d := range z.domains {
		c := z.counts[d]
		if d == zone {
			c += add
		}
		lo = min(lo, c)
	}
	if lo == math.MaxInt || int32(len(z.domains)) < z.c.MinDomains {
		lo = 0
	}
	return z.counts[zone] + add - lo
}

// collectZoneSpreads gathers the zonal DoNotSchedule spread constraints of
// the first n groups and counts the running pods each selects.
func (s *state) collectZoneSpreads(n int) {
	byKey := map[string]*zoneSpread{}
	for g := 0; g < n; g++ {
		rep, orig := s.groups[g].rep, s.groups[g].orig
		for _, c := range rep.Spread {
			if c.TopologyKey != LabelZone || c.WhenUnsatisfiable == ScheduleAnyway {
				continue
			}
			domains := s.eligibleZones(orig, true, c.NodeAffinityPolicy == "Ignore")
			key, _ := json.Marshal([]any{rep.Namespace, c, domains})
			if _, ok := byKey[string(key)]; ok {
				continue
			}
			z := &zoneSpread{c: c, ns: rep.Namespace, domains: domains, counts: map[string]int{}}
			for i := range s.p.Nodes {
				node := &s.p.Nodes[i]
				for j := range node.Pods {
					if z.matches(&node.Pods[j]) {
						z.counts[node.Labels[LabelZone]]++
					}
				}
			}
			byKey[string(key)] = z
			s.zoneSpreads = append(s.zoneSpreads, z)
		}
	}
}

// carriedBy reports whether the pod carries constraint z.
func (z *zoneSpread) carriedBy(p *Pod) bool {
	return p.Namespace == z.ns && hasSpread(p, &z.c)
}

// planZones decides each pod's zone for group g of n pods when it has zonal
// constraints or other pods' zonal spread selects it, or returns nil.
func (s *state) planZones(g, n int) *zonePlan {
	rep := s.groups[g].rep
	var carried, matched []*zoneSpread
	for _, z := range s.zoneSpreads {
		if z.carriedBy(rep) {
			carried = append(carried, z)
		}
		if z.matches(rep) {
			matched = append(matched, z)
		}
	}
	selfAnti, selfAff, otherAff := (*PodAffinityTerm)(nil), (*PodAffinityTerm)(nil), (*PodAffinityTerm)(nil)
	var softSpread *TopologySpread
	for i := range rep.Spread {
		if rep.Spread[i].TopologyKey == LabelZone && rep.Spread[i].WhenUnsatisfiable == ScheduleAnyway {
			softSpread = &rep.Spread[i]
			break
		}
	}
	if softSpread == nil {
		for _, pref := range rep.Preferences {
			if pref.Kind == PreferScheduleAnywaySpread && pref.Spread != nil && pref.Spread.TopologyKey == LabelZone {
				softSpread = pref.Spread
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
	if len(carried) == 0 && len(matched) == 0 && softSpread == nil && selfAnti == nil && selfAff == nil && otherAff == nil {
		return nil
	}
	usable := s.eligibleZones(rep, false, false)
	plan := &zonePlan{zones: make([]string, n)}
	if len(usable) == 0 {
		plan.reason = "no zone has an allowed node for it"
		return plan
	}
	// The pods' zones count in every constraint that selects them
	// (balanceZones counts as it goes).
	if selfAnti == nil && selfAff == nil && otherAff == nil && (len(carried) > 0 || softSpread == nil) {
		s.balanceZones(rep, carried, matched, usable, plan)
		return plan
	}
	defer func() {
		for _, z := range plan.zones {
			for _, m := range matched {
				if z != "" {
					m.counts[z]++
				}
			}
		}
	}()
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
		s.spreadZones(rep, softSpread, usable, plan)
	}
	return plan
}

// balanceZones assigns the pods one at a time to the usable zone that keeps
// every spread constraint they carry within its maxSkew, and, among those,
// the one with the fewest pods matching the constraints that select them
// (water-filling every selector, whichever workloads it spans). A zone that
// would push a constraint the pod is merely selected by past its maxSkew is
// avoided while another is not; the pod itself is refused only when every
// zone breaks a constraint it carries.
func (s *state) balanceZones(rep *Pod, carried, matched []*zoneSpread, usable []string, plan *zonePlan) {
	relevant := slices.Clone(carried)
	for _, m := range matched {
		if !slices.Contains(relevant, m) {
			relevant = append(relevant, m)
		}
	}
	for i := range plan.zones {
		best, bestHard, bestSoft, bestLoad := "", 0, 0, 0
		for _, z := range usable {
			hard, soft, load := 0, 0, 0
			for _, c := range relevant {
				m := c.matches(rep)
				if c.skewAfter(z, m) > int(max(c.c.MaxSkew, 1)) {
					if slices.Contains(carried, c) {
						hard++
					} else {
						soft++
					}
				}
				if m {
					load += c.counts[z]
				}
			}
			if best == "" || hard < bestHard || hard == bestHard && (soft < bestSoft || soft == bestSoft && load < bestLoad) {
				best, bestHard, bestSoft, bestLoad = z, hard, soft, load
			}
		}
		if bestHard > 0 {
			var broken *zoneSpread
			for _, c := range carried {
				if c.skewAfter(best, c.matches(rep)) > int(max(c.c.MaxSkew, 1)) {
					broken = c
					break
				}
			}
			plan.reason = fmt.Sprintf("its topology spread on %s (maxSkew %d) would be broken: zones it may use are full relative to %s", LabelZone, max(broken.c.MaxSkew, 1), strings.Join(broken.domains, ", "))
			return
		}
		plan.zones[i] = best
		for _, c := range matched {
			c.counts[best]++
		}
	}
}

// spreadZones water-fills the pods over zones for a ScheduleAnyway spread
// no pending pod requires: each goes to the usable zone with the fewest
// matching pods.
func (s *state) spreadZones(rep *Pod, c *TopologySpread, usable []string, plan *zonePlan) {
	counts := s.zoneCounts(func(p *Pod) bool { return p.Namespace == rep.Namespace && c.Selector.Matches(p.Labels) })
	for i := range plan.zones {
		best := ""
		for _, z := range usable {
			if best == "" || counts[z] < counts[best] {
				best = z
			}
		}
		plan.zones[i] = best
		counts[best]++
	}
}

// hostnameRefusal says why a class is refused from hostname rules the
// solver does not plan ("" when none).
func hostnameRefusal(rep *Pod) string {
	for _, t := range rep.PodAffinity {
		if t.TopologyKey == LabelHostname && t.selects(rep, rep) {
			return "required pod affinity on " + LabelHostname + " to its own pods (all on one node) is not supported yet"
		}
	}
	return ""
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
	ngroups := len(s.groups)
	for g := 0; g < ngroups; g++ {
		s.groups[g].rep = s.applyPreferences(s.groups[g].rep)
	}
	s.collectZoneSpreads(ngroups)
	for g := 0; g < ngroups; g++ {
		cs := groupClasses[g]
		if len(cs) == 0 {
			continue
		}
		rep := s.groups[g].rep
		unsupported := hostnameRefusal(rep)
		n := 0
		for _, c := range cs {
			n += len(c.pods)
		}
		zp := s.planZones(g, n)
		if zp == nil {
			for _, c := range cs {
				c.refused = unsupported
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
					sub = &class{req: c.req, group: g, refused: unsupported}
					if z == "" {
						sub.refused = zp.reason
					} else {
						zg, ok := zoneGroup[z]
						if !ok {
							pinned := clonePod(rep)
							pinned.Affinity = withRequirements(pinned.Affinity, Requirement{Key: LabelZone, Operator: OpIn, Values: []string{z}})
							zg = len(s.groups)
							s.groups = append(s.groups, group{rep: pinned, orig: s.groups[g].orig, from: g + 1})
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
	s.buildCaps()
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
				if a == b || s.unitCapTogether(ca, cb) {
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
			s.trimSpread(rep, s.groups[g].orig, c, zoneOf, where, removed)
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
func (s *state) trimSpread(rep, orig *Pod, c *TopologySpread, zoneOf map[int]string, where map[int]int, removed map[int]string) {
	domains := s.eligibleZones(orig, true, c.NodeAffinityPolicy == "Ignore")
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
