package solver

// Applying topology to the classes: hostname bundles, each group split by
// its pods' planned domains.

import (
	"fmt"
	"slices"
	"strings"
)

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
	reps := make([]*Pod, ngroups)
	for g := range reps {
		reps[g] = s.groups[g].rep
	}
	s.collectZoneAntis(reps, s.p.Nodes)
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
					s.commitZone(&s.p.Pods[pod], z)
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
