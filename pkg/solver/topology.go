package solver

import (
	"maps"
	"math"
	"slices"
	"strconv"
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

// topology is the solve's bookkeeping of the constraints between pods
// across domains, as Karpenter's scheduling.Topology is: the zonal
// DoNotSchedule spreads and anti-affinity terms with their pods counted per
// zone, the pending pods committed to zones so far, and the per-node cap
// groups (caps.go). A group's pods are admitted to domains (spreadsOn,
// antisOf and admitZones narrow the zones; planDomains decides) and
// committed to them (commitZone, and the spreads' counts); zoneCounts and
// runningMatches read both. A state embeds it by value.
type topology struct {
	// hasTopology is set when any pod has spread, pod (anti-)affinity or
	// preferences; the topology rules are skipped otherwise.
	hasTopology bool
	// zoned are the pending pods assigned to zones so far, counted by
	// namespace, labels and zone (zonedAt numbers them by zonedKey).
	zoned   []zonedPods
	zonedAt map[string]int
	// zoneSpreads are the zonal DoNotSchedule spread constraints of the
	// pending pods, with the matching pods counted per zone as pods are
	// assigned to zones.
	zoneSpreads []*zoneSpread
	// zoneAntis are the required zonal anti-affinity terms of pending and
	// running pods; isTarget marks the groups other groups' zonal affinity
	// selects.
	zoneAntis []*zoneAnti
	isTarget  map[int]bool
	// caps are the per-node cap groups (caps.go).
	caps []capGroup
}

// zoneCounts counts, per zone, the pods match accepts among those running
// (on the running nodes)
// and those earlier groups were assigned to zones in this solve. match
// reads only a pod's namespace and labels: pending pods alike in both are
// asked once per zone.
func (t *topology) zoneCounts(running []Node, match func(*Pod) bool) map[string]int {
	counts := map[string]int{}
	for i := range running {
		n := &running[i]
		for j := range n.Pods {
			if match(&n.Pods[j]) {
				counts[n.Labels[LabelZone]]++
			}
		}
	}
	for _, z := range t.zoned {
		if match(z.pod) {
			counts[z.zone] += z.n
		}
	}
	return counts
}

// commitZone records that pending pod pod is assigned to zone: later
// zoneCounts count it.
func (t *topology) commitZone(pod *Pod, zone string) {
	if t.zonedAt == nil {
		t.zonedAt = map[string]int{}
	}
	key := zonedKey(pod, zone)
	i, ok := t.zonedAt[key]
	if !ok {
		i = len(t.zoned)
		t.zonedAt[key] = i
		t.zoned = append(t.zoned, zonedPods{pod: pod, zone: zone})
	}
	t.zoned[i].n++
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

// runningMatches counts, per zone, the pods the term (written by owner)
// selects, running (on the running nodes) or committed to a zone.
func (t *topology) runningMatches(running []Node, owner *Pod, term *PodAffinityTerm) map[string]int {
	return t.zoneCounts(running, func(p *Pod) bool { return term.selects(owner, p) })
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
// pods reps (the first groups' representatives) and of the pods on the
// running nodes, with their carriers and the pods they select counted per
// zone among running pods.
func (t *topology) collectZoneAntis(reps []*Pod, running []Node) {
	byKey := map[string]*zoneAnti{}
	add := func(owner *Pod) {
		for _, term := range owner.PodAntiAffinity {
			if term.TopologyKey != LabelZone {
				continue
			}
			ns := term.Namespaces
			if len(ns) == 0 {
				ns = []string{owner.Namespace}
			}
			var w keyWriter
			w.strs(ns, true)
			w.selector(&term.Selector)
			key := w.String()
			if _, ok := byKey[key]; !ok {
				a := &zoneAnti{owner: owner, term: term, carriers: map[string]int{}, selected: map[string]int{}}
				byKey[key] = a
				t.zoneAntis = append(t.zoneAntis, a)
			}
		}
	}
	for _, rep := range reps {
		add(rep)
	}
	for i := range running {
		for j := range running[i].Pods {
			add(&running[i].Pods[j])
		}
	}
	for _, a := range t.zoneAntis {
		for i := range running {
			node := &running[i]
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

// spreadsOn returns the DoNotSchedule spreads on key that hold the pods
// of group g (carried) and those that count pods like rep (matched).
func (t *topology) spreadsOn(key string, g int, rep *Pod) (carried, matched []*zoneSpread) {
	for _, z := range t.zoneSpreads {
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
	return carried, matched
}

// holdsSpreadOn reports whether a DoNotSchedule spread on key holds the
// pods of group g.
func (t *topology) holdsSpreadOn(key string, g int) bool {
	return slices.ContainsFunc(t.zoneSpreads, func(z *zoneSpread) bool { return z.c.TopologyKey == key && z.heldBy(g) })
}

// inZoneAnti reports whether rep carries a zonal anti-affinity term or is
// selected by one.
func (t *topology) inZoneAnti(rep *Pod) bool {
	return slices.ContainsFunc(t.zoneAntis, func(a *zoneAnti) bool { return a.carriedBy(rep) || a.term.selects(a.owner, rep) })
}

// antiRole is a zonal anti-affinity term as one pod sees it: it carries
// the term, is selected by it, or both.
type antiRole struct {
	a                 *zoneAnti
	carries, selected bool
}

// antisOf returns the zonal anti-affinity terms rep carries or is
// selected by.
func (t *topology) antisOf(rep *Pod) []antiRole {
	var antis []antiRole
	for _, a := range t.zoneAntis {
		c, sel := a.carriedBy(rep), a.term.selects(a.owner, rep)
		if c || sel {
			antis = append(antis, antiRole{a, c, sel})
		}
	}
	return antis
}

// admitZones returns the zones of usable that every anti-affinity term
// of antis allows the pod into.
func admitZones(antis []antiRole, usable []string) []string {
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
	return kept
}
