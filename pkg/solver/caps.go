package solver

import (
	"math"
)

// A cap group is one per-node limit from hostname topology: a hostname
// spread (maxSkew pods matching its selector on a node that runs a pod
// carrying it: the emptiest node is assumed to have none, which only errs
// on the safe side) or self anti-affinity on the hostname (one pod of the
// group per node). Its members are the classes that carry the constraint
// (carriers) and the classes its selector matches; a class may belong to
// several. On a node that runs a carrier, the pods its selector matches
// (weight 1) number at most limit; a node without carriers is not limited,
// which is how a spread selector that spans workloads leaves the other
// workloads' nodes alone.
type capGroup struct {
	limit int
	// counts reports whether a running pod counts in the group.
	counts func(*Pod) bool
}

// capMember is a class's part in one cap group.
type capMember struct {
	group   int
	carrier bool
	weight  int // 1 when the group's selector matches the class's pods
}

// buildCaps gives every class its cap groups, from the hostname spread and
// self anti-affinity of the classes' representatives.
func (s *state) buildCaps() {
	s.caps = s.caps[:0]
	byKey := map[string]int{}
	type carried struct {
		group int
		match func(*Pod) bool
	}
	// Cap groups from hostname spread, keyed by namespace, selector and
	// skew, so that workloads sharing a selector share the cap.
	var spreads []carried
	carriers := make([][]int, len(s.classes)) // cap groups each class carries
	for ci, c := range s.classes {
		rep := s.groups[c.group].rep
		for _, sp := range hostnameSpreads(rep) {
			var w keyWriter
			w.tag('s')
			w.str(rep.Namespace)
			w.selector(&sp.Selector)
			w.int(int64(max(sp.MaxSkew, 1)))
			key := w.String()
			g, ok := byKey[key]
			if !ok {
				g = len(s.caps)
				byKey[key] = g
				ns, sel := rep.Namespace, sp.Selector
				match := func(p *Pod) bool { return p.Namespace == ns && sel.Matches(p.Labels) }
				s.caps = append(s.caps, capGroup{limit: int(max(sp.MaxSkew, 1)), counts: match})
				spreads = append(spreads, carried{g, match})
			}
			carriers[ci] = append(carriers[ci], g)
		}
	}
	for ci, c := range s.classes {
		rep := s.groups[c.group].rep
		c.caps = c.caps[:0]
		for _, sg := range spreads {
			carrier := false
			for _, g := range carriers[ci] {
				carrier = carrier || g == sg.group
			}
			matched := sg.match(rep)
			if carrier || matched {
				w := 0
				if matched {
					w = 1
				}
				c.caps = append(c.caps, capMember{group: sg.group, carrier: carrier, weight: w})
			}
		}
	}
	// Self anti-affinity on the hostname: one cap group per original group
	// (its zone shares included), one pod per node.
	for ci, c := range s.classes {
		rep := s.groups[c.group].rep
		if !selfHostnameAnti(rep) {
			continue
		}
		var w keyWriter
		w.tag('a')
		w.int(int64(s.origin(c.group)))
		key := w.String()
		g, ok := byKey[key]
		if !ok {
			g = len(s.caps)
			byKey[key] = g
			terms := hostnameAntiTerms(rep)
			owner := rep
			s.caps = append(s.caps, capGroup{limit: 1, counts: func(p *Pod) bool {
				for i := range terms {
					if terms[i].selects(owner, p) {
						return true
					}
				}
				return false
			}})
		}
		s.classes[ci].caps = append(s.classes[ci].caps, capMember{group: g, carrier: true, weight: 1})
	}
	s.capCount = make([]int, len(s.caps))
	s.capCarrier = make([]int, len(s.caps))
}

// origin is the group a zone-pinned group was split from (itself if none).
func (s *state) origin(g int) int {
	if o := s.groups[g].from; o > 0 {
		return o - 1
	}
	return g
}

// hostnameSpreads are the pod's hostname spread constraints, required and
// preferred (preferences are held as requirements while they can be).
func hostnameSpreads(rep *Pod) []TopologySpread {
	var out []TopologySpread
	for _, c := range rep.Spread {
		if c.TopologyKey == LabelHostname {
			out = append(out, c)
		}
	}
	for _, pref := range rep.Preferences {
		if pref.Kind == PreferScheduleAnywaySpread && pref.Spread != nil && pref.Spread.TopologyKey == LabelHostname {
			out = append(out, *pref.Spread)
		}
	}
	return out
}

// selfHostnameAnti reports whether the pod has hostname anti-affinity
// (required or preferred) selecting its own group.
func selfHostnameAnti(rep *Pod) bool {
	for _, t := range hostnameAntiTerms(rep) {
		if t.selects(rep, rep) {
			return true
		}
	}
	return false
}

// roomUnder is how many more pods of a member may join a node whose cap
// group counts count pods and carrier carriers.
func roomUnder(m capMember, limit, count, carrier int) int {
	switch {
	case m.carrier && m.weight == 1:
		return limit - count
	case m.carrier:
		if count > limit {
			return 0
		}
		return math.MaxInt
	case carrier > 0:
		return limit - count
	}
	return math.MaxInt
}

// capRoom is how many more pods of class ci the node being filled may take
// under its cap groups (MaxInt without any).
func (s *state) capRoom(ci int) int {
	room := math.MaxInt
	for _, m := range s.classes[ci].caps {
		room = min(room, roomUnder(m, s.caps[m.group].limit, s.capCount[m.group], s.capCarrier[m.group]))
	}
	return max(room, 0)
}

// capMask has a bit for each of the class's cap groups, a group's bit
// being its number modulo 64: two classes whose masks do not meet share
// no cap group, so taking pods of one leaves the other's capRoom as it was.
func capMask(c *class) uint64 {
	var m uint64
	for _, cm := range c.caps {
		m |= 1 << (uint(cm.group) % 64)
	}
	return m
}

// countCap records n pods of class ci on the node being filled.
func (s *state) countCap(ci, n int) {
	for _, m := range s.classes[ci].caps {
		s.capCount[m.group] += n * m.weight
		if m.carrier {
			s.capCarrier[m.group] += n
		}
	}
}

// resetCaps clears the counts the takes added.
func (s *state) resetCaps(takes []take) {
	for _, t := range takes {
		for _, m := range s.classes[t.class].caps {
			s.capCount[m.group], s.capCarrier[m.group] = 0, 0
		}
	}
}

// capRoomOn is how many more pods of class ci a node may take under its cap
// groups, given the takes already planned on it and, for an existing node
// (nil for a new one), the pods running there. Running pods count but are
// not carriers: their own constraints are not re-judged.
func (s *state) capRoomOn(ci int, n *Node, takes []take) int {
	room := math.MaxInt
	for _, m := range s.classes[ci].caps {
		g := &s.caps[m.group]
		count, carrier := 0, 0
		if n != nil {
			for j := range n.Pods {
				if g.counts(&n.Pods[j]) {
					count++
				}
			}
		}
		for _, t := range takes {
			for _, o := range s.classes[t.class].caps {
				if o.group == m.group {
					count += t.n * o.weight
					if o.carrier {
						carrier += t.n
					}
				}
			}
		}
		room = min(room, roomUnder(m, g.limit, count, carrier))
	}
	return max(room, 0)
}

// unitCapTogether reports whether classes a and b share a cap group of one
// pod per node in which both count as carriers, which already keeps them
// apart.
func (s *state) unitCapTogether(a, b *class) bool {
	for _, ma := range a.caps {
		if !ma.carrier || ma.weight == 0 || s.caps[ma.group].limit != 1 {
			continue
		}
		for _, mb := range b.caps {
			if mb.group == ma.group && mb.carrier && mb.weight == 1 {
				return true
			}
		}
	}
	return false
}
