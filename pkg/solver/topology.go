package solver

import (
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
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
//     them); each pod's skew is taken over the domains its own node
//     affinity and taints admit (as the constraint's policies say), as
//     kube-scheduler does, and a zone no pool can launch a node in counts
//     but receives no pods; anti-affinity allows one pod per zone,
//     self-affinity puts the group in the zone its running pods are in, or
//     the first eligible one.
//     Each zone's share becomes its own class, pinned to the zone by a node
//     requirement. Domains come from the pod's node affinity before
//     preferences are applied. Spreads on other keys (capacity type, a
//     label a pool decides) are planned the same way; a key a pool's
//     requirement allows several values of (team In [a, b]) has each value
//     as a domain, one value per node.
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
// Required hostname self-affinity puts the group on one new node (as many
// of its pods as the largest allowed node holds, the rest pending), or,
// once some of its pods run, on the nodes they run on; groups whose such
// terms select each other's pods share that one node.

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

// LabelNamespaceName is the label every namespace carries with its name.
const LabelNamespaceName = "kubernetes.io/metadata.name"

// noNamespace is a namespace no pod is in, for a term that selects none.
const noNamespace = "\x00none"

// resolveNamespaces returns the problem with every pod (anti-)affinity
// namespace selector turned into the list of namespaces it selects among
// those of the problem's pods, so that matching needs no namespace labels;
// the problem itself when no term has one. Only the pods are copied.
func resolveNamespaces(p *Problem) *Problem {
	has := func(pods []Pod) bool {
		for i := range pods {
			for _, ts := range [][]PodAffinityTerm{pods[i].PodAffinity, pods[i].PodAntiAffinity} {
				for _, t := range ts {
					if t.NamespaceSelector != nil {
						return true
					}
				}
			}
			for _, pref := range pods[i].Preferences {
				if pref.PodTerm != nil && pref.PodTerm.NamespaceSelector != nil {
					return true
				}
			}
		}
		return false
	}
	found := has(p.Pods)
	for i := range p.Nodes {
		found = found || has(p.Nodes[i].Pods)
	}
	if !found {
		return p
	}
	var namespaces []string
	note := func(pods []Pod) {
		for i := range pods {
			if !slices.Contains(namespaces, pods[i].Namespace) {
				namespaces = append(namespaces, pods[i].Namespace)
			}
		}
	}
	note(p.Pods)
	for i := range p.Nodes {
		note(p.Nodes[i].Pods)
	}
	sort.Strings(namespaces)
	resolve := func(t PodAffinityTerm) PodAffinityTerm {
		if t.NamespaceSelector == nil {
			return t
		}
		out := slices.Clone(t.Namespaces)
		for _, ns := range namespaces {
			labels := map[string]string{LabelNamespaceName: ns}
			for k, v := range p.NamespaceLabels[ns] {
				labels[k] = v
			}
			if t.NamespaceSelector.Matches(labels) && !slices.Contains(out, ns) {
				out = append(out, ns)
			}
		}
		if len(out) == 0 {
			out = []string{noNamespace}
		}
		t.Namespaces, t.NamespaceSelector = out, nil
		return t
	}
	resolvePods := func(pods []Pod) []Pod {
		out := slices.Clone(pods)
		for i := range out {
			q := &out[i]
			q.PodAffinity, q.PodAntiAffinity = slices.Clone(q.PodAffinity), slices.Clone(q.PodAntiAffinity)
			for j := range q.PodAffinity {
				q.PodAffinity[j] = resolve(q.PodAffinity[j])
			}
			for j := range q.PodAntiAffinity {
				q.PodAntiAffinity[j] = resolve(q.PodAntiAffinity[j])
			}
			q.Preferences = slices.Clone(q.Preferences)
			for j := range q.Preferences {
				if pt := q.Preferences[j].PodTerm; pt != nil {
					r := resolve(*pt)
					q.Preferences[j].PodTerm = &r
				}
			}
		}
		return out
	}
	q := *p
	q.Pods = resolvePods(p.Pods)
	q.Nodes = slices.Clone(p.Nodes)
	for i := range q.Nodes {
		q.Nodes[i].Pods = resolvePods(q.Nodes[i].Pods)
	}
	return &q
}

// topologyKey identifies the topology fields of a pod, for grouping, with
// seen (which of the problem's selectors match it; "" when no pod has
// topology constraints).
func topologyKey(p *Pod, seen string) string {
	if seen == "" && !hasTopology(p) {
		return ""
	}
	// Its own terms read its labels (selfish rules) only through the
	// problem's selectors, which seen already records: labels no selector
	// reads (a StatefulSet's pod name, say) do not split groups.
	var w keyWriter
	w.str(p.Namespace)
	w.str(seen)
	w.topology(p)
	return w.String()
}

// problemSelector is one label selector some pod's topology reads, in the
// namespaces it reads it.
type problemSelector struct {
	sel     Selector
	matches func(*Pod) bool
}

// problemSelectors are every selector of the pending pods' spread and pod
// (anti-)affinity and of the running pods' anti-affinity.
type problemSelectors []problemSelector

// selectors collects the problem's selectors, once each.
func (p *Problem) selectors() problemSelectors {
	var out problemSelectors
	seen := map[string]bool{}
	add := func(key []byte, sel Selector, match func(*Pod) bool) {
		if !seen[string(key)] {
			seen[string(key)] = true
			out = append(out, problemSelector{sel, match})
		}
	}
	term := func(owner *Pod, t PodAffinityTerm) {
		var w keyWriter
		w.tag('t')
		w.str(owner.Namespace)
		w.strs(t.Namespaces, true)
		w.selector(&t.Selector)
		add(w.b, t.Selector, func(o *Pod) bool { return t.selects(owner, o) })
	}
	spread := func(owner *Pod, c *TopologySpread) {
		ns, sel := owner.Namespace, c.Selector
		var w keyWriter
		w.tag('s')
		w.str(ns)
		w.selector(&sel)
		add(w.b, sel, func(o *Pod) bool { return o.Namespace == ns && sel.Matches(o.Labels) })
	}
	for i := range p.Pods {
		pod := &p.Pods[i]
		for j := range pod.Spread {
			spread(pod, &pod.Spread[j])
		}
		for _, t := range pod.PodAffinity {
			term(pod, t)
		}
		for _, t := range pod.PodAntiAffinity {
			term(pod, t)
		}
		for _, pref := range pod.Preferences {
			if pref.PodTerm != nil {
				term(pod, *pref.PodTerm)
			}
			if pref.Spread != nil {
				spread(pod, pref.Spread)
			}
		}
	}
	for i := range p.Nodes {
		for j := range p.Nodes[i].Pods {
			pod := &p.Nodes[i].Pods[j]
			for _, t := range pod.PodAntiAffinity {
				term(pod, t)
			}
		}
	}
	return out
}

// seen says which selectors match the pod, one byte each.
func (ps problemSelectors) seen(p *Pod) string {
	b := make([]byte, len(ps)+1)
	b[0] = '|'
	for i := range ps {
		b[i+1] = '0'
		if ps[i].matches(p) {
			b[i+1] = '1'
		}
	}
	return string(b)
}

// applyPreferences returns the pod with its node-affinity preferences added
// as requirements, highest weight first, skipping any that would leave no
// candidate node.
func (s *state) applyPreferences(pod *Pod) *Pod {
	prefs := slices.Clone(pod.Preferences)
	sort.SliceStable(prefs, func(a, b int) bool { return prefs[a].Weight > prefs[b].Weight })
	// A preference must not take domains from a required spread: kube-
	// scheduler holds the spread over every domain and only scores by the
	// preference within it.
	var keys []string
	for _, c := range pod.Spread {
		if c.TopologyKey != LabelHostname && c.WhenUnsatisfiable != ScheduleAnyway && !slices.Contains(keys, c.TopologyKey) {
			keys = append(keys, c.TopologyKey)
		}
	}
	usable := func(p *Pod, key string) []string {
		return s.domainsOf(p, key, domainFilter{taints: true, affinity: true})
	}
	out := pod
	for _, pref := range prefs {
		if pref.Kind != PreferNodeAffinity || len(pref.NodeTerm) == 0 {
			continue
		}
		cand := clonePod(out)
		cand.Affinity = withRequirements(cand.Affinity, pref.NodeTerm...)
		if len(s.eligibleZones(cand)) == 0 {
			continue
		}
		shrinks := false
		for _, k := range keys {
			shrinks = shrinks || len(usable(cand, k)) < len(usable(out, k))
		}
		if !shrinks {
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

// eligibleZones lists the zones where the pod could run, cheapest first
// (see domainsOf).
func (s *state) eligibleZones(pod *Pod) []string {
	return s.domainsOf(pod, LabelZone, domainFilter{taints: true, affinity: true})
}

// domainFilter says which node properties decide whether a node's domain
// counts: its taints (the pod must tolerate them), its labels (the pod's
// node affinity must accept them) and, with launchable, whether its pool's
// limits leave room for one such new node at all (a pool with a zero
// limit still counts as a domain of a spread, but no pod can be sent
// there).
//
// With fits, only offerings whose nodes have room for the pod count.
type domainFilter struct{ taints, affinity, launchable, fits bool }

// spreadFilter is the filter of a spread constraint's domains, from its
// nodeTaintsPolicy (Ignore by default) and nodeAffinityPolicy (Honor by
// default), as kube-scheduler reads them.
func spreadFilter(c *TopologySpread) domainFilter {
	return domainFilter{taints: c.NodeTaintsPolicy == "Honor", affinity: c.NodeAffinityPolicy != "Ignore"}
}

// findDomains lists the values of key on the nodes the pod could get: new
// nodes of offerings some pool allows (every value a pool may give a key
// it decides, see poolKeyValues) and existing nodes, filtered as f says.
// The cheapest domains come first: ordered by what the pod would cost
// on its best offering there (price times the largest share of the node it
// takes), then by name.
func (s *state) findDomains(pod *Pod, key string, f domainFilter) []string {
	cells := s.findCells(pod, []string{key}, f)
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = c.values[0]
	}
	return out
}

// poolHolds reports whether pool pi's limits, less what its nodes use,
// leave room for one node of the given capacity.
func (s *state) poolHolds(pi int, capacity Resources) bool {
	pool := &s.p.Pools[pi]
	for r := range capacity {
		if pool.HasLimit[r] && capacity[r] > 0 && pool.Limits[r]-pool.Used[r] < capacity[r] {
			return false
		}
	}
	return true
}

// zoneCounts counts, per zone, the pods match accepts among those running
// and those earlier groups were assigned to zones in this solve. match
// reads only a pod's namespace and labels: pending pods alike in both are
// asked once per zone.
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
			counts[z.zone] += z.n
		}
	}
	return counts
}

// addZoned records that pending pod pod is assigned to zone.
func (s *state) addZoned(pod *Pod, zone string) {
	if s.zonedAt == nil {
		s.zonedAt = map[string]int{}
	}
	key := zonedKey(pod, zone)
	i, ok := s.zonedAt[key]
	if !ok {
		i = len(s.zoned)
		s.zonedAt[key] = i
		s.zoned = append(s.zoned, zonedPods{pod: pod, zone: zone})
	}
	s.zoned[i].n++
}

// zonedKey identifies the pods of one namespace and set of labels in one
// zone, all alike to zoneCounts' matches.
func zonedKey(pod *Pod, zone string) string {
	keys := slices.Sorted(maps.Keys(pod.Labels))
	// Each string is prefixed with its length: no byte can fake a border.
	var b []byte
	add := func(s string) {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
	}
	add(zone)
	add(pod.Namespace)
	for _, k := range keys {
		add(k)
		add(pod.Labels[k])
	}
	return string(b)
}

// runningMatches counts, per zone, the pods the term (written by owner) selects.
func (s *state) runningMatches(owner *Pod, t *PodAffinityTerm) map[string]int {
	return s.zoneCounts(func(p *Pod) bool { return t.selects(owner, p) })
}

// zonedPods are the n pending pods this solve has assigned to a zone
// that share pod's namespace and labels.
type zonedPods struct {
	pod  *Pod
	zone string
	n    int
}

// zonePlan is how a group's pods are split across the domains of one key.
type zonePlan struct {
	zones  []string // domain of each pod, in pod order; "" = refused
	reason string   // why refused pods are refused
}

// zoneSpread is one DoNotSchedule spread constraint of the pending pods on
// a key other than the hostname, over one set of domains, shared by every
// group carrying it whose own node affinity and taints (as the
// constraint's policies read them) admit exactly those domains, with the
// pods its selector matches counted per domain: running ones, and pending
// ones as they are assigned domains, whatever workload they belong to.
//
// kube-scheduler computes a pod's skew over the domains that pod's own
// node affinity admits, so two groups carrying the same constraint under
// different node affinity get one zoneSpread each: a pod is held to the
// one of its own group (groups) and only counted in the others.
type zoneSpread struct {
	c       TopologySpread
	ns      string
	domains []string
	counts  map[string]int
	groups  map[int]bool // the groups held to it
}

func (z *zoneSpread) matches(p *Pod) bool {
	return p.Namespace == z.ns && z.c.Selector.Matches(p.Labels)
}

// heldBy reports whether the pods of group g are held to z: they carry
// the constraint and its domains are theirs.
func (z *zoneSpread) heldBy(g int) bool {
	return z.groups[g]
}

// skewAfter is the skew of domain d once a pod is added there (adding one
// to its count when the pod matches). A domain outside z's is none of its
// carriers' business: 0.
func (z *zoneSpread) skewAfter(d string, matches bool) int {
	if !slices.Contains(z.domains, d) {
		return 0
	}
	add := 0
	if matches {
		add = 1
	}
	lo := math.MaxInt
	for _, o := range z.domains {
		c := z.counts[o]
		if o == d {
			c += add
		}
		lo = min(lo, c)
	}
	if lo == math.MaxInt || int32(len(z.domains)) < z.c.MinDomains {
		lo = 0
	}
	return z.counts[d] + add - lo
}

// zoneAnti is one required zonal anti-affinity term, of pending pods or of
// running ones: no zone may hold both a pod carrying it and a pod it
// selects (kube-scheduler checks it both ways). carriers and selected count
// those pods per zone, running ones and pending ones as they are assigned.
type zoneAnti struct {
	owner              *Pod
	term               PodAffinityTerm
	carriers, selected map[string]int
}

// carriedBy reports whether the pod carries the term (the same term, read
// in the same namespace).
func (a *zoneAnti) carriedBy(p *Pod) bool {
	if p.Namespace != a.owner.Namespace && len(a.term.Namespaces) == 0 {
		return false
	}
	for _, t := range p.PodAntiAffinity {
		if t.TopologyKey == LabelZone && selectorEqual(&t.Selector, &a.term.Selector) && slices.Equal(t.Namespaces, a.term.Namespaces) {
			return true
		}
	}
	return false
}

// allows reports whether a pod carrying the term (carries) or selected by
// it (selected) may join zone z.
func (a *zoneAnti) allows(z string, carries, selected bool) bool {
	return !(carries && a.selected[z] > 0 || selected && a.carriers[z] > 0)
}

// collectZoneAntis gathers the required zonal anti-affinity terms of the
// first n groups and of running pods, with their carriers and the pods they
// select counted per zone among running pods.
func (s *state) collectZoneAntis(n int) {
	byKey := map[string]*zoneAnti{}
	add := func(owner *Pod) {
		for _, t := range owner.PodAntiAffinity {
			if t.TopologyKey != LabelZone {
				continue
			}
			ns := t.Namespaces
			if len(ns) == 0 {
				ns = []string{owner.Namespace}
			}
			var w keyWriter
			w.strs(ns, true)
			w.selector(&t.Selector)
			key := w.String()
			if _, ok := byKey[key]; !ok {
				a := &zoneAnti{owner: owner, term: t, carriers: map[string]int{}, selected: map[string]int{}}
				byKey[key] = a
				s.zoneAntis = append(s.zoneAntis, a)
			}
		}
	}
	for g := 0; g < n; g++ {
		add(s.groups[g].rep)
	}
	for i := range s.p.Nodes {
		for j := range s.p.Nodes[i].Pods {
			add(&s.p.Nodes[i].Pods[j])
		}
	}
	for _, a := range s.zoneAntis {
		for i := range s.p.Nodes {
			node := &s.p.Nodes[i]
			z, ok := node.Labels[LabelZone]
			if !ok {
				continue
			}
			for j := range node.Pods {
				if a.carriedBy(&node.Pods[j]) {
					a.carriers[z]++
				}
				if a.term.selects(a.owner, &node.Pods[j]) {
					a.selected[z]++
				}
			}
		}
	}
}

// zoneAffinityTarget reports whether some group's required zonal affinity
// to other pods selects the pod: then its pods are assigned zones first, so
// that the followers can be put where it is planned.
func (s *state) zoneAffinityTarget(rep *Pod, n int) bool {
	for g := 0; g < n; g++ {
		o := s.groups[g].rep
		for _, t := range o.PodAffinity {
			if t.TopologyKey == LabelZone && !t.selects(o, o) && t.selects(o, rep) {
				return true
			}
		}
	}
	return false
}

// followsOthers reports whether the pod has required zonal affinity to
// pods other than its own.
func followsOthers(rep *Pod) bool {
	for _, t := range rep.PodAffinity {
		if t.TopologyKey == LabelZone && !t.selects(rep, rep) {
			return true
		}
	}
	return false
}

// collectZoneSpreads gathers the DoNotSchedule spread constraints on keys
// other than the hostname of the first n groups, counts the running pods
// each selects, and returns their keys, the zone first.
func (s *state) collectZoneSpreads(n int) []string {
	byKey := map[string]*zoneSpread{}
	var keys []string
	for g := 0; g < n; g++ {
		rep, orig := s.groups[g].rep, s.groups[g].orig
		for _, c := range rep.Spread {
			if c.TopologyKey == LabelHostname || c.WhenUnsatisfiable == ScheduleAnyway {
				continue
			}
			domains := s.domainsOf(orig, c.TopologyKey, spreadFilter(&c))
			var w keyWriter
			w.str(rep.Namespace)
			w.spread(&c)
			w.strs(domains, true)
			key := w.String()
			if z, ok := byKey[key]; ok {
				z.groups[g] = true
				continue
			}
			z := &zoneSpread{c: c, ns: rep.Namespace, domains: domains, counts: map[string]int{}, groups: map[int]bool{g: true}}
			for i := range s.p.Nodes {
				node := &s.p.Nodes[i]
				d, ok := node.Labels[c.TopologyKey]
				if !ok {
					continue
				}
				for j := range node.Pods {
					if z.matches(&node.Pods[j]) {
						z.counts[d]++
					}
				}
			}
			byKey[key] = z
			s.zoneSpreads = append(s.zoneSpreads, z)
			if !slices.Contains(keys, c.TopologyKey) {
				keys = append(keys, c.TopologyKey)
			}
		}
	}
	sort.Slice(keys, func(a, b int) bool {
		if (keys[a] == LabelZone) != (keys[b] == LabelZone) {
			return keys[a] == LabelZone
		}
		return keys[a] < keys[b]
	})
	if !slices.Contains(keys, LabelZone) {
		keys = append([]string{LabelZone}, keys...) // zonal pod (anti-)affinity
	}
	return keys
}

// planDomains decides each of n pods' domain of key for the pods of group
// g, whose representative (pinned to the domains earlier keys chose) is
// rep, when they have constraints on key or other pods' spread on key
// selects them; it returns nil when neither.
func (s *state) planDomains(g int, rep *Pod, n int, key string) *zonePlan {
	var carried, matched []*zoneSpread
	for _, z := range s.zoneSpreads {
		if z.c.TopologyKey != key {
			continue
		}
		if z.heldBy(g) {
			carried = append(carried, z)
		}
		if z.matches(rep) {
			matched = append(matched, z)
		}
	}
	selfAnti, selfAff, otherAff := (*PodAffinityTerm)(nil), (*PodAffinityTerm)(nil), (*PodAffinityTerm)(nil)
	// Whether selfAnti and selfAff are required terms rather than
	// preferences held as requirements (terms lists the required first).
	antiRequired, affRequired := false, false
	var softSpread *TopologySpread
	if key == LabelZone {
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
		for i, t := range terms(rep.PodAntiAffinity, PreferPodAntiAffinity) {
			if t.TopologyKey == LabelZone && t.selects(rep, rep) {
				selfAnti, antiRequired = &t, i < len(rep.PodAntiAffinity)
				break
			}
		}
		for i, t := range terms(rep.PodAffinity, PreferPodAffinity) {
			if t.TopologyKey != LabelZone {
				continue
			}
			if t.selects(rep, rep) {
				selfAff, affRequired = &t, i < len(rep.PodAffinity)
			} else {
				otherAff = &t
			}
			break
		}
	}
	type antiRole struct {
		a                 *zoneAnti
		carries, selected bool
	}
	var antis []antiRole
	target := false
	if key == LabelZone {
		for _, a := range s.zoneAntis {
			c, sel := a.carriedBy(rep), a.term.selects(a.owner, rep)
			if c || sel {
				antis = append(antis, antiRole{a, c, sel})
			}
		}
		target = s.isTarget[s.origin(g)]
	}
	if len(carried) == 0 && len(matched) == 0 && softSpread == nil && selfAnti == nil && selfAff == nil && otherAff == nil && len(antis) == 0 && !target {
		return nil
	}
	usable := s.domainsOf(rep, key, domainFilter{taints: true, affinity: true, launchable: true})
	if len(antis) > 0 {
		// Zonal anti-affinity, either way: leave out zones holding pods
		// that forbid these or that these forbid.
		kept := usable[:0:0]
		for _, z := range usable {
			ok := true
			for _, r := range antis {
				ok = ok && r.a.allows(z, r.carries, r.selected)
			}
			if ok {
				kept = append(kept, z)
			}
		}
		if len(kept) == 0 && len(usable) > 0 {
			plan := &zonePlan{zones: make([]string, n), reason: fmt.Sprintf("its pod anti-affinity on %s (its own, or that of pods it would join) rules out every zone it may use: %s", LabelZone, strings.Join(usable, ", "))}
			return plan
		}
		usable = kept
	}
	plan := &zonePlan{zones: make([]string, n)}
	if len(usable) == 0 {
		if len(carried) == 0 && key != LabelZone {
			return nil // only selected by others' spread: a node without the key is outside it
		}
		plan.reason = "no zone has an allowed node for it"
		if key != LabelZone {
			plan.reason = fmt.Sprintf("its topology spread on %s (DoNotSchedule) needs a node labelled %s and no node it may use has that label", key, key)
		}
		return plan
	}
	// The pods' domains count in every constraint that selects them
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
		var joinable []string // zones holding pods it must join, cheapest first
		for _, z := range usable {
			if counts[z] > 0 {
				joinable = append(joinable, z)
			}
		}
		if len(joinable) == 0 {
			plan.reason = "its required pod affinity on " + LabelZone + " matches no running pod in a zone it may use"
			return plan
		}
		if selfAnti != nil && antiRequired {
			// Required anti-affinity against its own pods as well: one
			// per zone, among the zones it may join.
			anti := s.runningMatches(rep, selfAnti)
			i := 0
			for _, z := range joinable {
				if anti[z] == 0 && i < n {
					plan.zones[i] = z
					i++
				}
			}
			if i < n {
				plan.reason = fmt.Sprintf("its pod affinity on %s allows only the zones of the pods it joins (%s) and its anti-affinity one such pod per zone", LabelZone, strings.Join(joinable, ", "))
			}
			break
		}
		for i := range plan.zones {
			plan.zones[i] = joinable[0]
		}
	case selfAff != nil && selfAnti != nil && affRequired && antiRequired:
		// Required affinity to its own pods' zone and required
		// anti-affinity against them: a second pod would need a matching
		// pod in its zone and may have none, so one pod at most can run,
		// and none once a matching pod runs anywhere (kube-scheduler's
		// InterPodAffinity filter).
		running := 0
		for _, c := range s.runningMatches(rep, selfAff) {
			running += c
		}
		if running == 0 && n > 0 {
			plan.zones[0] = usable[0]
		}
		if n > 1 || running > 0 {
			plan.reason = fmt.Sprintf("its required pod affinity and anti-affinity on %s both select its own pods, so at most one of them can run", LabelZone)
		}
	case selfAff != nil:
		counts := s.runningMatches(rep, selfAff)
		zone := ""
		for _, z := range usable {
			if counts[z] > 0 {
				zone = z
				break
			}
		}
		if zone == "" {
			zone = s.groupZone(g, rep, selfAff, usable)
		}
		// Only the first pod of a group may start a zone, while no pod
		// the term selects runs (kube-scheduler's InterPodAffinity filter
		// counts the pods on nodes): once some do, none in a zone it may
		// use leaves it pending.
		var elsewhere []string
		for _, z := range slices.Sorted(maps.Keys(counts)) {
			if z != "" && counts[z] > 0 && !slices.Contains(usable, z) {
				elsewhere = append(elsewhere, z)
			}
		}
		if affRequired && counts[zone] == 0 && len(elsewhere) > 0 {
			plan.reason = fmt.Sprintf("its required pod affinity on %s selects pods that run, or are planned, only in %s, where it may not run: a pod may start a zone of its own only while no pod the term selects runs", LabelZone, strings.Join(elsewhere, ", "))
			break
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

// groupZone is the zone a group with zonal self-affinity term t starts
// when no pod t selects runs or is planned yet: of the usable ones
// (cheapest first), the one where the most pods of the other workloads
// bound to it (t selects them and their own such term selects rep's pods)
// may run too, since those may then only join it.
func (s *state) groupZone(g int, rep *Pod, t *PodAffinityTerm, usable []string) string {
	score := make([]int, len(usable))
	podsOf := map[int]int{}
	for _, c := range s.classes {
		podsOf[c.group] += len(c.pods)
	}
	for o := range s.groups {
		other := s.groups[o].rep
		if o == s.origin(g) || s.groups[o].from > 0 || !t.selects(rep, other) ||
			!slices.ContainsFunc(other.PodAffinity, func(u PodAffinityTerm) bool { return u.TopologyKey == LabelZone && u.selects(other, rep) }) {
			continue
		}
		zones := s.eligibleZones(other)
		for i, z := range usable {
			if slices.Contains(zones, z) {
				score[i] += podsOf[o]
			}
		}
	}
	best := 0
	for i := range usable {
		if score[i] > score[best] {
			best = i
		}
	}
	return usable[best]
}

// balanceZones assigns the pods one at a time to the usable domain that
// keeps every spread constraint they carry within its maxSkew, and, among
// those, the one with the fewest pods matching the constraints that select
// them (water-filling every selector, whichever workloads it spans), then
// the cheapest (usable is cheapest first). A domain that would push a
// constraint the pod is merely selected by past its maxSkew is avoided
// while another is not; the pod itself is refused only when every domain
// breaks a constraint it carries.
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
			plan.reason = fmt.Sprintf("its topology spread on %s (maxSkew %d) would be broken: the domains it may use are full relative to %s", broken.c.TopologyKey, max(broken.c.MaxSkew, 1), strings.Join(broken.domains, ", "))
			if int32(len(broken.domains)) < broken.c.MinDomains {
				plan.reason += fmt.Sprintf(" (minDomains %d, only %d domain(s), so each may hold %d)", broken.c.MinDomains, len(broken.domains), max(broken.c.MaxSkew, 1))
			}
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
// matching pods, the cheapest on a tie.
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

// selfHostnameAffinity returns the pod's required hostname affinity term
// that selects its own pods, or nil.
func selfHostnameAffinity(rep *Pod) *PodAffinityTerm {
	for i := range rep.PodAffinity {
		if t := &rep.PodAffinity[i]; t.TopologyKey == LabelHostname && t.selects(rep, rep) {
			return t
		}
	}
	return nil
}

// runningMatch reports whether some running pod matches the term of owner.
func (s *state) runningMatch(owner *Pod, t *PodAffinityTerm) bool {
	for i := range s.p.Nodes {
		for j := range s.p.Nodes[i].Pods {
			if t.selects(owner, &s.p.Nodes[i].Pods[j]) {
				return true
			}
		}
	}
	return false
}

// mustJoinRunning reports whether a required hostname affinity term binds
// the pod to nodes already running pods it selects: a term for other pods
// always, one for its own pods when such pods already run (kube-scheduler
// lets only the first pod of a group go anywhere).
func (s *state) mustJoinRunning(rep *Pod, t *PodAffinityTerm) bool {
	return t.TopologyKey == LabelHostname && (!t.selects(rep, rep) || s.runningMatch(rep, t))
}

// planBundles puts the pods of each group whose required hostname affinity
// selects its own pods (and none of which run yet) on one new node: the
// cheapest kind that holds them all, or else the one that holds the most.
// Groups whose such terms select each other's pods form one bundle: the
// first pod to run anywhere opens the only node the others may join, so
// they share that node, and a group no kind holds together with the
// others' stays pending. Pods beyond what one node holds stay pending with
// a sentence. The bundle classes are then kept out of packing. It returns
// the nodes to add to the plan.
func (s *state) planBundles() []plannedNode {
	byGroup := map[int][]int{}
	var groups []int
	for ci, c := range s.classes {
		if !c.bundle || s.rem[ci] == 0 {
			continue
		}
		g := s.origin(c.group)
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], ci)
	}
	// Join groups into bundles, in order of their first group.
	bundleOf := map[int]int{}
	var bundles [][]int
	for _, g := range groups {
		b := -1
		for _, o := range groups {
			if ob, ok := bundleOf[o]; ok && s.bundledWith(g, o) {
				b = ob
				break
			}
		}
		if b < 0 {
			b = len(bundles)
			bundles = append(bundles, nil)
		}
		bundleOf[g] = b
		bundles[b] = append(bundles[b], g)
	}
	var out []plannedNode
	for _, members := range bundles {
		total := 0
		for _, g := range members {
			for _, ci := range byGroup[g] {
				total += s.rem[ci]
			}
		}
		bestKind, bestPods := -1, 0
		var bestTakes []take
		for ki, k := range s.kinds { // cheapest first
			if s.limitRoom(k) == 0 {
				continue
			}
			free, n := k.alloc, 0
			var takes []take
			for _, g := range members {
				// A group goes whole onto the kind or not at all.
				compatible := true
				for _, ci := range byGroup[g] {
					compatible = compatible && k.compat.has(s.classes[ci].group)
				}
				if !compatible {
					continue
				}
				for _, ci := range byGroup[g] {
					if m := min(fitCount(free, s.classes[ci].req), s.rem[ci]); m > 0 {
						free = free.Sub(s.classes[ci].req.Scale(int64(m)))
						takes = append(takes, take{ci, m})
						n += m
					}
				}
			}
			if n > bestPods {
				bestKind, bestPods, bestTakes = ki, n, takes
			}
			if n == total {
				break
			}
		}
		if bestKind >= 0 {
			k := s.kinds[bestKind]
			s.used[k.pool] = s.used[k.pool].Add(s.p.PoolTypes(k.pool)[k.typ].Capacity)
			for _, t := range bestTakes {
				s.rem[t.class] -= t.n
			}
			out = append(out, plannedNode{kind: bestKind, takes: bestTakes, count: 1})
		}
		for _, g := range members {
			for _, ci := range byGroup[g] {
				if s.rem[ci] > 0 {
					if _, explained := s.reasons[ci]; !explained {
						s.reasons[ci] = s.bundleReason(members, total, bestPods)
					}
				}
				s.classes[ci].kinds, s.classes[ci].pools = nil, nil
			}
		}
	}
	return out
}

// bundledWith reports whether groups g and o must share one node: the
// required hostname affinity of either, to its own pods, selects the
// other's pods too.
func (s *state) bundledWith(g, o int) bool {
	a, b := s.groups[g].rep, s.groups[o].rep
	if t := selfHostnameAffinity(a); t != nil && t.selects(a, b) {
		return true
	}
	t := selfHostnameAffinity(b)
	return t != nil && t.selects(b, a)
}

// bundleReason says why pods of a bundle stay pending: the one node they
// must share holds placed of the total.
func (s *state) bundleReason(members []int, total, placed int) string {
	if len(members) == 1 {
		return fmt.Sprintf("its required pod affinity on %s to its own pods puts all %d on one node, and the largest node it may get holds %d of them", LabelHostname, total, placed)
	}
	return fmt.Sprintf("its required pod affinity on %s puts it on one node with the %d pods of %d workloads that term selects, and the node they may share holds %d of them (no node it may get takes it with the others)", LabelHostname, total, len(members), placed)
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

// applyTopology rewrites the classes for topology constraints: domain-pinned
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
	keys := s.collectZoneSpreads(ngroups)
	s.collectZoneAntis(ngroups)
	s.isTarget = map[int]bool{}
	order := make([]int, 0, ngroups)
	var followers []int
	for g := 0; g < ngroups; g++ {
		s.isTarget[g] = s.zoneAffinityTarget(s.groups[g].rep, ngroups)
		if followsOthers(s.groups[g].rep) {
			followers = append(followers, g)
		} else {
			order = append(order, g)
		}
	}
	// Followers of other pods' zones come last, once their leaders, pending
	// ones too, have zones.
	order = append(order, followers...)
	for _, g := range order {
		cs := groupClasses[g]
		if len(cs) == 0 {
			continue
		}
		rep := s.groups[g].rep
		n := 0
		for _, c := range cs {
			n += len(c.pods)
		}
		pins, refused := s.planGroupDomains(g, n, keys)
		if pins == nil {
			classes = append(classes, cs...)
			continue
		}
		// Split every class of the group by its pods' domains, in pod order.
		pinGroup := map[string]int{}
		i := 0
		for _, c := range cs {
			byPin := map[string]*class{}
			var order []string
			for _, pod := range c.pods {
				pin, why := pins[i], refused[i]
				i++
				id := pinID(pin)
				if why != "" {
					id = "refused"
				} else if z := pinValue(pin, LabelZone); z != "" {
					s.addZoned(&s.p.Pods[pod], z)
				}
				sub, ok := byPin[id]
				if !ok {
					sub = &class{req: c.req, group: g}
					switch {
					case why != "":
						sub.refused = why
					case len(pin) > 0:
						zg, ok := pinGroup[id]
						if !ok {
							pinned := clonePod(rep)
							pinned.Affinity = withRequirements(pinned.Affinity, pin...)
							zg = len(s.groups)
							s.groups = append(s.groups, group{rep: pinned, orig: s.groups[g].orig, from: g + 1})
							pinGroup[id] = zg
						}
						sub.group = zg
					}
					byPin[id] = sub
					order = append(order, id)
				}
				sub.pods = append(sub.pods, pod)
			}
			for _, id := range order {
				classes = append(classes, byPin[id])
			}
		}
	}
	s.classes = classes
	for _, c := range s.classes {
		rep := s.groups[c.group].rep
		if t := selfHostnameAffinity(rep); t != nil && !s.runningMatch(rep, t) {
			c.bundle = true
		}
	}
	s.buildCaps()
	s.buildConflicts()
}

// planGroupDomains plans, key by key, each of the n pods of group g into
// domains: the requirements pinning each pod, and why a pod is refused
// ("" when placed). It returns nil pins when no key concerns the group.
// A later key is planned for the pods that share earlier domains together,
// with those domains pinned, so that every combination chosen exists.
func (s *state) planGroupDomains(g, n int, keys []string) ([][]Requirement, []string) {
	rep := s.groups[g].rep
	pins := make([][]Requirement, n)
	refused := make([]string, n)
	planned := false
	// Keys whose spreads the group carries together are planned together
	// (see cells.go), first; the others key by key.
	joint := s.jointKeys(g, rep, keys)
	if joint != nil {
		planned = true
		cp := s.planCells(g, rep, n, joint)
		for i, values := range cp.cells {
			if values == nil {
				refused[i] = cp.reason
				continue
			}
			for k, key := range joint {
				pins[i] = append(pins[i], Requirement{Key: key, Operator: OpIn, Values: []string{values[k]}})
			}
		}
	}
	for _, key := range keys {
		if slices.Contains(joint, key) {
			continue
		}
		byPin := map[string][]int{}
		var order []string
		for i := 0; i < n; i++ {
			if refused[i] != "" {
				continue
			}
			id := pinID(pins[i])
			if _, ok := byPin[id]; !ok {
				order = append(order, id)
			}
			byPin[id] = append(byPin[id], i)
		}
		for _, id := range order {
			idx := byPin[id]
			r := rep
			if pin := pins[idx[0]]; len(pin) > 0 {
				r = clonePod(rep)
				r.Affinity = withRequirements(r.Affinity, pin...)
			}
			zp := s.planDomains(g, r, len(idx), key)
			if zp == nil {
				continue
			}
			planned = true
			for j, i := range idx {
				if zp.zones[j] == "" {
					refused[i] = zp.reason
					continue
				}
				if key == LabelZone {
					for _, a := range s.zoneAntis {
						if a.carriedBy(r) {
							a.carriers[zp.zones[j]]++
						}
						if a.term.selects(a.owner, r) {
							a.selected[zp.zones[j]]++
						}
					}
				}
				pins[i] = append(slices.Clone(pins[i]), Requirement{Key: key, Operator: OpIn, Values: []string{zp.zones[j]}})
			}
		}
	}
	if !planned {
		return nil, nil
	}
	return pins, refused
}

// pinID identifies a list of pinning requirements.
func pinID(pin []Requirement) string {
	var b strings.Builder
	for _, r := range pin {
		b.WriteString(r.Key)
		b.WriteByte('=')
		b.WriteString(r.Values[0])
		b.WriteByte(0)
	}
	return b.String()
}

// pinValue is the domain a pin gives key ("" for none).
func pinValue(pin []Requirement, key string) string {
	for _, r := range pin {
		if r.Key == key {
			return r.Values[0]
		}
	}
	return ""
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
