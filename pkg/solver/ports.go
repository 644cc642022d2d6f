package solver

import "slices"

// Host ports follow kube-scheduler's NodePorts filter: two bindings
// conflict when they use the same port and protocol and either binds every
// address (an empty HostIP or 0.0.0.0) or both bind the same address.

// protocol returns the binding's protocol, TCP when unset.
func (h *HostPort) protocol() string {
	if h.Protocol == "" {
		return "TCP"
	}
	return h.Protocol
}

// wildcard reports whether the binding is on every address of the node.
func (h *HostPort) wildcard() bool { return h.HostIP == "" || h.HostIP == "0.0.0.0" }

// conflicts reports whether h and o may not both be bound on one node.
func (h *HostPort) conflicts(o *HostPort) bool {
	if h.Port <= 0 || h.Port != o.Port || h.protocol() != o.protocol() {
		return false
	}
	return h.wildcard() || o.wildcard() || h.HostIP == o.HostIP
}

// portsConflict reports whether some binding of a conflicts with one of b.
func portsConflict(a, b []HostPort) bool {
	for i := range a {
		for j := range b {
			if a[i].conflicts(&b[j]) {
				return true
			}
		}
	}
	return false
}

// hostPortsUsed reports whether any pod of the problem binds a host port,
// which makes the solver keep such pods apart (see applyHostPorts).
func (p *Problem) hostPortsUsed() bool {
	for i := range p.Pods {
		if len(p.Pods[i].HostPorts) > 0 {
			return true
		}
	}
	return false
}

// daemonPortConflict reports whether a DaemonSet that would run on a node
// with these labels and taints binds a host port the pod binds.
func (p *Problem) daemonPortConflict(pod *Pod, labels Labels, taints []Taint) bool {
	if len(pod.HostPorts) == 0 {
		return false
	}
	for i := range p.DaemonSets {
		ds := &p.DaemonSets[i]
		if len(ds.HostPorts) > 0 && portsConflict(pod.HostPorts, ds.HostPorts) &&
			matchesAffinity(ds.NodeSelector, ds.Affinity, labels) && untolerated(ds.Tolerations, taints) == nil {
			return true
		}
	}
	return false
}

// nodePortConflict reports whether a pod bound to the existing node binds a
// host port the pod binds.
func nodePortConflict(pod *Pod, n *Node) bool {
	if len(pod.HostPorts) == 0 {
		return false
	}
	for j := range n.Pods {
		if portsConflict(pod.HostPorts, n.Pods[j].HostPorts) {
			return true
		}
	}
	return false
}

// applyHostPorts keeps pods with overlapping host ports apart: the pods of
// a group whose ports overlap their replicas' run at most one per node (a
// cap group of limit 1 across the group's classes and zone shares), and
// classes of different groups whose ports overlap conflict. It runs after
// applyTopology, whose cap groups and conflicts it extends.
func (s *state) applyHostPorts() {
	capOf := map[int]int{} // original group → its host-port cap group
	portCap := make([]int, len(s.classes))
	for ci, c := range s.classes {
		portCap[ci] = -1
		rep := s.groups[c.group].rep
		if !portsConflict(rep.HostPorts, rep.HostPorts) {
			continue
		}
		o := s.origin(c.group)
		g, ok := capOf[o]
		if !ok {
			g = len(s.caps)
			capOf[o] = g
			ports := rep.HostPorts
			s.caps = append(s.caps, capGroup{limit: 1, counts: func(p *Pod) bool { return portsConflict(ports, p.HostPorts) }})
		}
		c.caps = append(c.caps, capMember{group: g, carrier: true, weight: 1})
		portCap[ci] = g
	}
	for a, ca := range s.classes {
		ra := s.groups[ca.group].rep
		if len(ra.HostPorts) == 0 {
			continue
		}
		for b := a + 1; b < len(s.classes); b++ {
			cb := s.classes[b]
			if portCap[a] >= 0 && portCap[a] == portCap[b] {
				continue // one pod per node already
			}
			if portsConflict(ra.HostPorts, s.groups[cb.group].rep.HostPorts) {
				ca.conflicts = append(ca.conflicts, b)
				cb.conflicts = append(cb.conflicts, a)
			}
		}
	}
	for _, c := range s.classes {
		slices.Sort(c.conflicts)
		c.conflicts = slices.Compact(c.conflicts)
	}
	s.capCount = make([]int, len(s.caps))
	s.capCarrier = make([]int, len(s.caps))
}
