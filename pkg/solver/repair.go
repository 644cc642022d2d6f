package solver

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// placePending is kube-scheduler's last word on the plan. The solver
// decides zone shares, cap groups and bundles per group of pods; when part
// of a group cannot be placed, the safety nets (enforceSpread) take back
// whole shares, and a follower whose leaders land late is left out. Yet
// once the planned nodes exist, kube-scheduler binds any pending pod its
// filters admit on them. So every pod the plan leaves pending is tried, in
// pod order, on the final nodes (existing first, then planned) with
// kube-scheduler's filters as it would run them on the final cluster:
// resources, node selector and affinity, taints, host ports, topology
// spread (over the final nodes' domains and, for the pod's own
// constraints, those a new node could still take it in), and inter-pod
// affinity and anti-affinity in both directions. A pod that passes is
// placed there; one no node admits gets a node of its own where one can
// take it (open). The constraints of the pods already placed stay
// satisfied (a placement that would break another pod's spread is
// refused), so the plan stays one kube-scheduler accepts. It reports
// whether it placed any pod.
func (s *state) placePending() bool {
	if len(s.plan.Unschedulable) == 0 {
		return false
	}
	c := s.finalCluster()
	classOf := make([]int, len(s.p.Pods))
	for ci, cl := range s.classes {
		for _, pod := range cl.pods {
			classOf[pod] = ci
		}
	}
	// Once a pod is refused, its class's later pods are not tried: they
	// would be refused alike unless a pod of another class placed since
	// changed the counts, which is rare and not worth a retry per pod.
	refused := map[int]bool{}
	kept := s.plan.Unschedulable[:0]
	placedAny := false
	for _, u := range s.plan.Unschedulable {
		ci := classOf[u.Pod]
		if refused[ci] || s.p.Pods[u.Pod].Unschedulable != "" || expired(s.p.Options.stopAt()) {
			kept = append(kept, u)
			continue
		}
		j := c.admit(u.Pod)
		if j < 0 {
			j = s.open(c, u.Pod)
		}
		if j < 0 {
			refused[ci] = true
			kept = append(kept, u)
			continue
		}
		s.place(c, u.Pod, j)
		placedAny = true
	}
	s.plan.Unschedulable = kept
	if s.bindLast(c) {
		placedAny = true
	}
	s.plan.TotalPrice = round6(s.plan.TotalPrice)
	return placedAny
}

// bindLast is what kube-scheduler does with the pods the plan still leaves
// pending once every planned pod runs: each, in turn, is bound to a final
// node whose filters admit it, and kube-scheduler's filters judge only the
// incoming pod's own spread, over the domains of the nodes that exist (a
// domain only a new node could bring does not count), besides resources,
// node affinity, taints, host ports and inter-pod affinity in both
// directions. The spreads of pods bound before it are not judged again
// (kube-scheduler never moves a running pod): a pod another pod's spread
// kept off a node in the first pass binds there now, as it will on the
// cluster. No node is opened for these pods; they are listed in Plan.Late.
// It reports whether it placed any pod.
//
// A pod with no topology of its own (no spread, pod (anti-)affinity or
// preferences) that no node admits is refused by resources, node
// affinity, taints, host ports or another pod's anti-affinity, none of
// which binding more pods can lift: the later pods of its class (the same
// requests and constraints) are refused without being tried. Thousands of
// GPU pods the default pool cannot place (issue 33's traces) were each
// tried on thousands of nodes.
func (s *state) bindLast(c *schedCluster) bool {
	c.last = true
	defer func() { c.last = false }()
	classOf := make([]int, len(s.p.Pods))
	for i := range classOf {
		classOf[i] = -1
	}
	for ci, cl := range s.classes {
		for _, pod := range cl.pods {
			classOf[pod] = ci
		}
	}
	refused := make([]bool, len(s.classes))
	kept := s.plan.Unschedulable[:0]
	placed := false
	for _, u := range s.plan.Unschedulable {
		j := -1
		pod := &s.p.Pods[u.Pod]
		ci := classOf[u.Pod]
		plain := ci >= 0 && !hasTopology(pod)
		if pod.Unschedulable == "" && !expired(s.p.Options.stopAt()) && !(plain && refused[ci]) {
			j = c.admit(u.Pod)
		}
		if j < 0 {
			if plain {
				refused[ci] = true
			}
			kept = append(kept, u)
			continue
		}
		s.place(c, u.Pod, j)
		s.plan.Late = append(s.plan.Late, u.Pod)
		placed = true
	}
	s.plan.Unschedulable = kept
	return placed
}

// place binds pending pod i to node j of the cluster and records it in
// the plan.
func (s *state) place(c *schedCluster, i, j int) {
	c.bind(i, j)
	n := &c.nodes[j]
	if n.existing != "" {
		s.plan.Existing = append(s.plan.Existing, Placement{Pod: i, Node: n.existing})
		return
	}
	nn := &s.plan.NewNodes[n.planned]
	nn.Pods = append(nn.Pods, i)
	nn.Requested = nn.Requested.Add(podRequests(&s.p.Pods[i]))
	nn.moved = true
}

// open launches, for pending pod i that no final node admits, the cheapest
// node of the first pool (by weight) that holds it within the pool's
// limits and whose labels let kube-scheduler's filters admit it, adds it
// to the plan and the cluster, and returns its index in the cluster, or -1.
// The packing leaves such pods when a group's share could not be placed
// as planned; the pod's own constraints, judged on the final cluster, may
// still allow a node of its own (a zone no node is in yet, a node of its
// own for a hostname spread).
func (s *state) open(c *schedCluster, i int) int {
	pod := &s.p.Pods[i]
	req := podRequests(pod)
	keys := c.topologyKeys(pod)
	for _, pi := range s.p.poolOrder() {
		pool := &s.p.Pools[pi]
		if untolerated(pod.Tolerations, pool.Taints) != nil {
			continue
		}
		open := openLabels(pool, poolLabelsFor(pool, pod))
		// Offerings come cheapest first. The filters that can still
		// refuse one decide by its values of the topology keys, so an
		// offering whose values were refused is not tried again.
		refused := map[string]bool{}
		for _, of := range c.offeredByPrice(pi, open) {
			if !withinLimits(pool, c.used[pi].Add(of.typ.Capacity)) || !req.Fits(of.alloc) ||
				!matchesAffinity(pod.NodeSelector, pod.Affinity, of.labels) || s.p.daemonPortConflict(pod, of.labels, pool.Taints) {
				continue
			}
			sig := signature(of.labels, keys)
			if refused[sig] {
				continue
			}
			j := len(c.nodes)
			c.nodes = append(c.nodes, schedNode{labels: of.labels, taints: pool.Taints, free: of.alloc, planned: len(s.plan.NewNodes)})
			if !c.admits(i, j) {
				c.nodes = c.nodes[:j]
				refused[sig] = true
				continue
			}
			o := of.offering
			s.plan.NewNodes = append(s.plan.NewNodes, NewNode{
				Pool: pool.Name, InstanceType: of.typ.Name, Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price,
				Allocatable: of.alloc, Labels: open,
				Reason: fmt.Sprintf("cheapest %s offering of NodePool %s for %s, which the packed nodes could not take within its constraints", of.typ.Name, pool.Name, pod.Key()),
			})
			s.plan.TotalPrice += o.Price
			c.used[pi] = c.used[pi].Add(of.typ.Capacity)
			return j
		}
	}
	return -1
}

// offeredByPrice is Problem.offered (the pool's offerings for nodes with
// those open-key labels), cheapest first, computed once per pool and
// labels.
func (c *schedCluster) offeredByPrice(pi int, open map[string]string) []offered {
	k := fmt.Sprint(pi, open)
	if got, ok := c.offers[k]; ok {
		return got
	}
	out := c.p.offered(pi, open)
	slices.SortStableFunc(out, func(a, b offered) int { return cmp.Compare(a.offering.Price, b.offering.Price) })
	c.offers[k] = out
	return out
}

// topologyKeys are the keys whose values decide the topology filters for
// pod: of its own spread and pod (anti-)affinity, of the spread the placed
// pods carry, and of every pod's anti-affinity (symmetry).
func (c *schedCluster) topologyKeys(pod *Pod) []string {
	var keys []string
	add := func(k string) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for key := range pod.constraintKeys() {
		add(key)
	}
	for _, cs := range c.carried {
		add(cs.c.TopologyKey)
	}
	for o := range c.nodes {
		for _, q := range c.nodes[o].pods {
			for k := range q.PodAntiAffinity {
				add(q.PodAntiAffinity[k].TopologyKey)
			}
		}
	}
	return keys
}

// signature is a node's values of keys (a new node is its own hostname
// domain, whatever its labels).
func signature(labels Labels, keys []string) string {
	var b []byte
	for _, k := range keys {
		if k == LabelHostname {
			continue
		}
		v, ok := labels.Label(k)
		b = fmt.Appendf(b, "%s=%s,%t;", k, v, ok)
	}
	return string(b)
}

// schedCluster is the final cluster as placePending sees it: every node
// with its labels, taints, free room and pods.
type schedCluster struct {
	p     *Problem
	nodes []schedNode
	// nodeOf is the node of each pod of the problem on a planned node
	// (by the packing or by placePending) or placed on an existing one.
	nodeOf map[int]int
	// carried are the DoNotSchedule spread constraints of those pods,
	// each once.
	carried []carriedSpread
	// used is, per pool, the capacity of its existing and planned nodes.
	used []Resources
	// scopes memoises scopesOf, offers offeredByPrice.
	scopes map[*Pod][]string
	offers map[string][]offered
	// launchable lists the domains of key a pool could still launch a
	// node into that would take pod: they count as empty domains of the
	// pod's spread, as Karpenter counts them (a node may yet go there),
	// and as kube-scheduler will once one does. A domain no node can reach
	// for the pod does not count: kube-scheduler never sees a node there.
	launchable func(pod *Pod, key string) []string
	// last judges as kube-scheduler does a pod that comes after every
	// planned pod (bindLast): its own spread over the nodes' domains
	// only, and not the spread of the pods already placed.
	last bool
}

type schedNode struct {
	labels   Labels
	taints   []Taint
	free     Resources
	cordoned bool
	// pods are the pods on the node: running ones and placed pending ones.
	pods []*Pod
	// existing names an existing node; planned indexes Plan.NewNodes.
	existing string
	planned  int
}

// carriedSpread is a spread constraint some placed pods carry.
type carriedSpread struct {
	owner *Pod
	c     *TopologySpread
	scope string // spreadScope(owner, c)
}

// newSchedCluster is an empty cluster of problem p's pools; launchable is
// as the field says.
func newSchedCluster(p *Problem, launchable func(pod *Pod, key string) []string) *schedCluster {
	return &schedCluster{p: p, nodeOf: map[int]int{}, used: make([]Resources, len(p.Pools)), scopes: map[*Pod][]string{}, offers: map[string][]offered{}, launchable: launchable}
}

// finalCluster is the cluster the plan leaves: existing nodes with their
// running pods and the pods the plan puts there, then the planned nodes.
func (s *state) finalCluster() *schedCluster {
	c := newSchedCluster(s.p, nil)
	c.launchable = func(pod *Pod, key string) []string {
		domains := s.domainsOf(pod, key, domainFilter{taints: true, affinity: true, launchable: true, fits: true})
		// A new node takes the pod only where its required pod affinity
		// can hold: never on hostname (an empty node runs no pod it
		// selects), and on key only in the domains a selected pod is in.
		for k := range pod.PodAffinity {
			t := &pod.PodAffinity[k]
			selected := c.selectedDomains(pod, t)
			if len(selected) == 0 && t.selects(pod, pod) {
				continue // the first pod of a group its own term selects
			}
			if t.TopologyKey == LabelHostname {
				return nil
			}
			if t.TopologyKey == key {
				domains = slices.DeleteFunc(domains, func(d string) bool { return !selected[d] })
			}
		}
		return domains
	}
	for pi := range s.p.Pools {
		c.used[pi] = s.p.Pools[pi].Used
	}
	byName := map[string]int{}
	for i := range s.p.Nodes {
		n := &s.p.Nodes[i]
		byName[n.Name] = len(c.nodes)
		sn := schedNode{labels: MapLabels(n.Labels), taints: n.Taints, free: n.Allocatable.Sub(n.Requested),
			cordoned: n.Unschedulable, existing: n.Name, planned: -1}
		for j := range n.Pods {
			sn.pods = append(sn.pods, &n.Pods[j])
		}
		c.nodes = append(c.nodes, sn)
	}
	for _, e := range s.plan.Existing {
		c.bind(e.Pod, byName[e.Node])
	}
	for ni := range s.plan.NewNodes {
		n := &s.plan.NewNodes[ni]
		pi, labels, taints, it := s.plannedNode(n)
		if pi >= 0 && it != nil {
			c.used[pi] = c.used[pi].Add(it.Capacity)
		}
		j := len(c.nodes)
		c.nodes = append(c.nodes, schedNode{labels: labels, taints: taints, free: n.Allocatable.Sub(n.Requested), planned: ni})
		for _, pod := range n.Pods {
			c.nodes[j].pods = append(c.nodes[j].pods, &s.p.Pods[pod])
			c.nodeOf[pod] = j
			c.carry(&s.p.Pods[pod])
		}
	}
	return c
}

// bind puts pending pod i on node j (which must admit it).
func (c *schedCluster) bind(i, j int) {
	pod := &c.p.Pods[i]
	n := &c.nodes[j]
	n.free = n.free.Sub(podRequests(pod))
	n.pods = append(n.pods, pod)
	c.nodeOf[i] = j
	c.carry(pod)
}

// carry records the pod's DoNotSchedule spread constraints.
func (c *schedCluster) carry(pod *Pod) {
	k := 0
	for i := range pod.Spread {
		sc := &pod.Spread[i]
		if sc.WhenUnsatisfiable == ScheduleAnyway {
			continue
		}
		scope := c.scopesOf(pod)[k]
		k++
		if !slices.ContainsFunc(c.carried, func(o carriedSpread) bool { return o.scope == scope }) {
			c.carried = append(c.carried, carriedSpread{owner: pod, c: sc, scope: scope})
		}
	}
}

// domain is node j's value of key: each node is its own hostname domain.
func (c *schedCluster) domain(j int, key string) (string, bool) {
	if key == LabelHostname {
		return fmt.Sprintf("#%d", j), true
	}
	return c.nodes[j].labels.Label(key)
}

// admit returns the first node whose filters admit pending pod i, or -1.
// What the filters count is gathered once per call (the cluster changes
// only when a pod is bound); each node is then judged by lookups.
func (c *schedCluster) admit(i int) int { return c.admitOn(i, -1) }

// admitOn is admit judging only node only, or every node when only is -1.
func (c *schedCluster) admitOn(i, only int) int {
	pod := &c.p.Pods[i]
	req := podRequests(pod)
	var checks []func(j int) bool
	for k := range pod.Spread {
		if sc := &pod.Spread[k]; sc.WhenUnsatisfiable != ScheduleAnyway {
			checks = append(checks, c.skewCheck(pod, sc, ""))
		}
	}
	for _, cs := range c.carried {
		if !c.last && cs.owner.Namespace == pod.Namespace && cs.c.Selector.Matches(pod.Labels) {
			checks = append(checks, c.skewCheck(cs.owner, cs.c, cs.scope))
		}
	}
	checks = append(checks, c.affinityChecks(pod)...)
	for j := range c.nodes {
		n := &c.nodes[j]
		if n.cordoned || !req.Fits(n.free) ||
			!matchesAffinity(pod.NodeSelector, pod.Affinity, n.labels) || untolerated(pod.Tolerations, n.taints) != nil ||
			c.portConflict(pod, j) {
			continue
		}
		if only >= 0 && j != only {
			continue
		}
		if !slices.ContainsFunc(checks, func(ok func(int) bool) bool { return !ok(j) }) {
			return j
		}
	}
	return -1
}

// admits reports whether node j admits pending pod i.
func (c *schedCluster) admits(i, j int) bool { return c.admitOn(i, j) == j }

func (c *schedCluster) portConflict(pod *Pod, j int) bool {
	if len(pod.HostPorts) == 0 {
		return false
	}
	n := &c.nodes[j]
	for _, o := range n.pods {
		if portsConflict(pod.HostPorts, o.HostPorts) {
			return true
		}
	}
	return c.p.daemonPortConflict(pod, n.labels, n.taints)
}

// skewCheck applies PodTopologySpread's constraint sc of owner to a pod
// the constraint selects. For the incoming pod's own constraint (scope
// ""), as kube-scheduler does: the node must have the key, and its domain
// may hold at most maxSkew more selected pods, the pod included, than the
// emptiest domain of the nodes eligible for the constraint (0 with fewer
// domains than minDomains). For a constraint the placed pods carry (scope
// is its spreadScope), the final cluster must keep every carrier's domain
// within the skew.
func (c *schedCluster) skewCheck(owner *Pod, sc *TopologySpread, scope string) func(j int) bool {
	own := scope == ""
	f := spreadFilter(sc)
	counts := map[string]int{}
	eligible := make([]bool, len(c.nodes))
	carriers := map[string]bool{}
	for j := range c.nodes {
		n := &c.nodes[j]
		d, ok := c.domain(j, sc.TopologyKey)
		if !ok || (f.affinity && !matchesAffinity(owner.NodeSelector, owner.Affinity, n.labels)) ||
			(f.taints && untolerated(owner.Tolerations, n.taints) != nil) {
			continue
		}
		eligible[j] = true
		counts[d] += 0
		for _, o := range n.pods {
			if o.Namespace == owner.Namespace && sc.Selector.Matches(o.Labels) {
				counts[d]++
			}
			if !own && !carriers[d] && slices.Contains(c.scopesOf(o), scope) {
				carriers[d] = true
			}
		}
	}
	// The incoming pod's own constraint also counts the domains a new
	// node could take it in (so that it is sent there rather than piled
	// where nodes are); a placed pod's is judged, as the final cluster
	// will be, over the nodes' domains.
	switch {
	case !own || c.last:
	case sc.TopologyKey == LabelHostname:
		if len(c.launchable(owner, LabelZone)) > 0 {
			counts["(a new node)"] += 0
		}
	default:
		for _, d := range c.launchable(owner, sc.TopologyKey) {
			counts[d] += 0
		}
	}
	skew := int(max(sc.MaxSkew, 1))
	self := 1
	if own && !sc.Selector.Matches(owner.Labels) {
		self = 0
	}
	return func(j int) bool {
		if !eligible[j] {
			return !own
		}
		d, _ := c.domain(j, sc.TopologyKey)
		counts[d] += self
		defer func() { counts[d] -= self }()
		after := emptiest(counts, sc.MinDomains)
		if own {
			return counts[d]-after <= skew
		}
		for dom := range carriers {
			if counts[dom]-after > skew {
				return false
			}
		}
		return true
	}
}

// scopesOf lists the spreadScope of each DoNotSchedule spread constraint
// of pod, computed once per pod.
func (c *schedCluster) scopesOf(pod *Pod) []string {
	if got, ok := c.scopes[pod]; ok {
		return got
	}
	var out []string
	for k := range pod.Spread {
		if sc := &pod.Spread[k]; sc.WhenUnsatisfiable != ScheduleAnyway {
			out = append(out, spreadScope(pod, sc))
		}
	}
	c.scopes[pod] = out
	return out
}

// emptiest is the smallest count over the domains, 0 when fewer domains
// than minDomains exist.
func emptiest(counts map[string]int, minDomains int32) int {
	lo := math.MaxInt
	for _, n := range counts {
		lo = min(lo, n)
	}
	if int32(len(counts)) < minDomains || lo == math.MaxInt {
		return 0
	}
	return lo
}

// affinityChecks apply InterPodAffinity to pod: its required anti-affinity
// (no selected pod in the node's domain), the anti-affinity of every pod in
// the cluster that selects it (symmetry), and its required affinity (a
// selected pod in the node's domain, or, for a pod its own term selects,
// none anywhere).
func (c *schedCluster) affinityChecks(pod *Pod) []func(j int) bool {
	var checks []func(j int) bool
	inDomain := func(key string, set map[string]bool) func(j int) bool {
		return func(j int) bool {
			d, ok := c.domain(j, key)
			return ok && set[d]
		}
	}
	for k := range pod.PodAntiAffinity {
		t := &pod.PodAntiAffinity[k]
		in := inDomain(t.TopologyKey, c.selectedDomains(pod, t))
		checks = append(checks, func(j int) bool { return !in(j) })
	}
	// Symmetry: domains of pods whose anti-affinity selects pod.
	forbidden := map[string]map[string]bool{}
	for o := range c.nodes {
		for _, q := range c.nodes[o].pods {
			for k := range q.PodAntiAffinity {
				t := &q.PodAntiAffinity[k]
				if !t.selects(q, pod) {
					continue
				}
				if d, ok := c.domain(o, t.TopologyKey); ok {
					if forbidden[t.TopologyKey] == nil {
						forbidden[t.TopologyKey] = map[string]bool{}
					}
					forbidden[t.TopologyKey][d] = true
				}
			}
		}
	}
	for key, set := range forbidden {
		in := inDomain(key, set)
		checks = append(checks, func(j int) bool { return !in(j) })
	}
	for k := range pod.PodAffinity {
		t := &pod.PodAffinity[k]
		set := c.selectedDomains(pod, t)
		if len(set) == 0 && t.selects(pod, pod) {
			continue // the first pod of a group its own term selects
		}
		checks = append(checks, inDomain(t.TopologyKey, set))
	}
	return checks
}

// selectedDomains lists the domains of the term's key holding a pod other
// than owner that the term selects.
func (c *schedCluster) selectedDomains(owner *Pod, t *PodAffinityTerm) map[string]bool {
	out := map[string]bool{}
	for o := range c.nodes {
		d, ok := c.domain(o, t.TopologyKey)
		if !ok || out[d] {
			continue
		}
		if slices.ContainsFunc(c.nodes[o].pods, func(q *Pod) bool { return q != owner && t.selects(owner, q) }) {
			out[d] = true
		}
	}
	return out
}
