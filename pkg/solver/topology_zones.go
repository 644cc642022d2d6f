package solver

// Planning a group's pods into zones (and the domains of other spread
// keys) before packing.

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

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
	carried, matched := s.spreadsOn(key, g, rep)
	var zt zoneTerms
	var antis []antiRole
	target := false
	if key == LabelZone {
		zt = zoneTermsOf(rep)
		antis = s.antisOf(rep)
		target = s.isTarget[s.origin(g)]
	}
	if len(carried) == 0 && len(matched) == 0 && zt.none() && len(antis) == 0 && !target {
		return nil
	}
	usable := s.domainsOf(rep, key, domainFilter{taints: true, affinity: true, launchable: true})
	if len(antis) > 0 {
		// Zonal anti-affinity, either way: leave out zones holding pods
		// that forbid these or that these forbid.
		kept := admitZones(antis, usable)
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
	if zt.selfAnti == nil && zt.selfAff == nil && zt.otherAff == nil && (len(carried) > 0 || zt.softSpread == nil) {
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
	s.planZoneTerms(g, rep, n, usable, &zt, plan)
	return plan
}

// zoneTerms are the terms on the zone a group's representative carries
// besides its DoNotSchedule spreads: a ScheduleAnyway spread, zonal
// anti-affinity and affinity to its own pods, affinity to other pods, each
// a requirement or a preference held as one (antiRequired and affRequired
// say which).
type zoneTerms struct {
	softSpread                  *TopologySpread
	selfAnti, selfAff, otherAff *PodAffinityTerm
	antiRequired, affRequired   bool
}

// none reports whether the pod carries none of the terms.
func (zt *zoneTerms) none() bool {
	return zt.softSpread == nil && zt.selfAnti == nil && zt.selfAff == nil && zt.otherAff == nil
}

// zoneTermsOf reads rep's zoneTerms; required terms come before
// preferences.
func zoneTermsOf(rep *Pod) zoneTerms {
	var zt zoneTerms
	for i := range rep.Spread {
		if rep.Spread[i].TopologyKey == LabelZone && rep.Spread[i].WhenUnsatisfiable == ScheduleAnyway {
			zt.softSpread = &rep.Spread[i]
			break
		}
	}
	if zt.softSpread == nil {
		for _, pref := range rep.Preferences {
			if pref.Kind == PreferScheduleAnywaySpread && pref.Spread != nil && pref.Spread.TopologyKey == LabelZone {
				zt.softSpread = pref.Spread
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
			zt.selfAnti, zt.antiRequired = &t, i < len(rep.PodAntiAffinity)
			break
		}
	}
	for i, t := range terms(rep.PodAffinity, PreferPodAffinity) {
		if t.TopologyKey != LabelZone {
			continue
		}
		if t.selects(rep, rep) {
			zt.selfAff, zt.affRequired = &t, i < len(rep.PodAffinity)
		} else {
			zt.otherAff = &t
		}
		break
	}
	return zt
}

// planZoneTerms plans the n pods of group g (representative rep) into
// the usable zones by its zoneTerms zt, when it has some that
// balanceZones does not plan: affinity to other pods first, then affinity
// and anti-affinity to its own, then the ScheduleAnyway spread.
func (s *state) planZoneTerms(g int, rep *Pod, n int, usable []string, zt *zoneTerms, plan *zonePlan) {
	switch {
	case zt.otherAff != nil:
		counts := s.runningMatches(s.p.Nodes, rep, zt.otherAff)
		var joinable []string // zones holding pods it must join, cheapest first
		for _, z := range usable {
			if counts[z] > 0 {
				joinable = append(joinable, z)
			}
		}
		if len(joinable) == 0 {
			plan.reason = "its required pod affinity on " + LabelZone + " matches no running pod in a zone it may use"
			return
		}
		if zt.selfAnti != nil && zt.antiRequired {
			// Required anti-affinity against its own pods as well: one
			// per zone, among the zones it may join.
			anti := s.runningMatches(s.p.Nodes, rep, zt.selfAnti)
			if i := freeZones(plan.zones, joinable, anti); i < n {
				plan.reason = fmt.Sprintf("its pod affinity on %s allows only the zones of the pods it joins (%s) and its anti-affinity one such pod per zone", LabelZone, strings.Join(joinable, ", "))
			}
			break
		}
		for i := range plan.zones {
			plan.zones[i] = joinable[0]
		}
	case zt.selfAff != nil && zt.selfAnti != nil && zt.affRequired && zt.antiRequired:
		// Required affinity to its own pods' zone and required
		// anti-affinity against them: a second pod would need a matching
		// pod in its zone and may have none, so one pod at most can run,
		// and none once a matching pod runs anywhere (kube-scheduler's
		// InterPodAffinity filter).
		running := 0
		for _, c := range s.runningMatches(s.p.Nodes, rep, zt.selfAff) {
			running += c
		}
		if running == 0 && n > 0 {
			plan.zones[0] = usable[0]
		}
		if n > 1 || running > 0 {
			plan.reason = fmt.Sprintf("its required pod affinity and anti-affinity on %s both select its own pods, so at most one of them can run", LabelZone)
		}
	case zt.selfAff != nil:
		counts := s.runningMatches(s.p.Nodes, rep, zt.selfAff)
		zone := ""
		for _, z := range usable {
			if counts[z] > 0 {
				zone = z
				break
			}
		}
		if zone == "" {
			zone = s.groupZone(g, rep, zt.selfAff, usable)
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
		if zt.affRequired && counts[zone] == 0 && len(elsewhere) > 0 {
			plan.reason = fmt.Sprintf("its required pod affinity on %s selects pods that run, or are planned, only in %s, where it may not run: a pod may start a zone of its own only while no pod the term selects runs", LabelZone, strings.Join(elsewhere, ", "))
			break
		}
		for i := range plan.zones {
			plan.zones[i] = zone
		}
	case zt.selfAnti != nil:
		counts := s.runningMatches(s.p.Nodes, rep, zt.selfAnti)
		if i := freeZones(plan.zones, usable, counts); i < n {
			plan.reason = fmt.Sprintf("its pod anti-affinity on %s allows one such pod per zone and only %d zone(s) are free", LabelZone, i)
		}
	default:
		s.spreadZones(rep, zt.softSpread, usable, plan)
	}
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
	// Whether rep matches each constraint, and carries it, holds for
	// every pod and zone: worked out once, not per pod and zone.
	matches := make([]bool, len(relevant))
	carries := make([]bool, len(relevant))
	for j, c := range relevant {
		matches[j], carries[j] = c.matches(rep), slices.Contains(carried, c)
	}
	for i := range plan.zones {
		best, bestHard, bestSoft, bestLoad := "", 0, 0, 0
		for _, z := range usable {
			hard, soft, load := 0, 0, 0
			for j, c := range relevant {
				m := matches[j]
				if c.skewAfter(z, m) > int(max(c.c.MaxSkew, 1)) {
					if carries[j] {
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
	counts := s.zoneCounts(s.p.Nodes, func(p *Pod) bool { return p.Namespace == rep.Namespace && c.Selector.Matches(p.Labels) })
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

// freeZones fills out, in order, with the zones where no pod counts runs
// (one pod per zone, for anti-affinity against the pod's own kind), at
// most len(out) of them, and returns how many it filled.
func freeZones(out []string, zones []string, counts map[string]int) int {
	i := 0
	for _, z := range zones {
		if counts[z] == 0 && i < len(out) {
			out[i] = z
			i++
		}
	}
	return i
}
