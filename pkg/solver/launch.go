package solver

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// LaunchOption is an offering a planned node can be launched on in place
// of the one the plan chose: a node of it takes the same pods.
type LaunchOption struct {
	InstanceType string  `json:"instanceType"`
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"pricePerHour"`
	// Capacity is the type's capacity (what counts against pool limits);
	// Labels are the type's labels, shared with the problem's type.
	Capacity Resources         `json:"-"`
	Labels   map[string]string `json:"-"`
}

// LaunchOptions returns, for each node of plan (a plan Solve returned for
// p), the offerings of the node's pool a node could be launched on with
// the same pods, Karpenter's flexible launch: the pool's requirements
// hold for it; what is left of its allocatable once the DaemonSets that
// would run there are counted holds the pods' requests; every pod's node
// selector and required node affinity match it and no DaemonSet there
// binds a host port a pod binds; it keeps the preferred node affinity
// terms the planned offering meets; and it has the planned node's value
// of every topology key (other than the hostname) that a pod of the node,
// or a pod selecting one of them, spreads or (anti-)affines on, so that
// the plan's topology holds wherever the node lands.
//
// An option costs at most (1+maxPremium) times the planned price; a
// negative maxPremium sets no bound. The planned offering comes first,
// then the others by price, instance type and zone.
func LaunchOptions(p *Problem, plan *Plan, maxPremium float64) [][]LaunchOption {
	q := p.normalized()
	terms := topologyTerms(q)
	out := make([][]LaunchOption, len(plan.NewNodes))
	for i := range plan.NewNodes {
		out[i] = q.launchOptions(&plan.NewNodes[i], terms, maxPremium)
	}
	return out
}

// topologyTerm is a topology key and the pods it counts, of some pod's
// spread constraint or pod (anti-)affinity term, required or preferred.
type topologyTerm struct {
	key string
	sel *Selector
}

// topologyTerms collects the topology terms of every pod of the problem,
// pending or running, except those on the hostname.
func topologyTerms(p *Problem) []topologyTerm {
	var out []topologyTerm
	add := func(pod *Pod) {
		for i := range pod.Spread {
			out = append(out, topologyTerm{pod.Spread[i].TopologyKey, &pod.Spread[i].Selector})
		}
		for _, ts := range [][]PodAffinityTerm{pod.PodAffinity, pod.PodAntiAffinity} {
			for i := range ts {
				out = append(out, topologyTerm{ts[i].TopologyKey, &ts[i].Selector})
			}
		}
		for _, pr := range pod.Preferences {
			switch {
			case pr.Spread != nil:
				out = append(out, topologyTerm{pr.Spread.TopologyKey, &pr.Spread.Selector})
			case pr.PodTerm != nil:
				out = append(out, topologyTerm{pr.PodTerm.TopologyKey, &pr.PodTerm.Selector})
			}
		}
	}
	for i := range p.Pods {
		add(&p.Pods[i])
	}
	for n := range p.Nodes {
		for i := range p.Nodes[n].Pods {
			add(&p.Nodes[n].Pods[i])
		}
	}
	return slices.DeleteFunc(out, func(t topologyTerm) bool { return NormalizeLabelKey(t.key) == "kubernetes.io/hostname" })
}

// pinnedKeys returns the topology keys whose value a node's pods need kept:
// those of the pods' own topology terms, and of any term selecting one of
// them (namespaces are not looked at, which can only pin more).
func (p *Problem) pinnedKeys(n *NewNode, terms []topologyTerm) []string {
	var keys []string
	pin := func(k string) {
		if k = NormalizeLabelKey(k); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	own := topologyTerms(&Problem{Pods: podsOf(p, n)})
	for _, t := range own {
		pin(t.key)
	}
	for _, t := range terms {
		for _, pi := range n.Pods {
			if t.sel.Matches(p.Pods[pi].Labels) {
				pin(t.key)
				break
			}
		}
	}
	return keys
}

func podsOf(p *Problem, n *NewNode) []Pod {
	out := make([]Pod, len(n.Pods))
	for i, pi := range n.Pods {
		out[i] = p.Pods[pi]
	}
	return out
}

// launchOptions is LaunchOptions for one node of the normalized problem.
func (p *Problem) launchOptions(n *NewNode, terms []topologyTerm, maxPremium float64) []LaunchOption {
	pi := slices.IndexFunc(p.Pools, func(pool Pool) bool { return pool.Name == n.Pool })
	if pi < 0 {
		return nil
	}
	pool := &p.Pools[pi]
	types := p.PoolTypes(pi)
	poolLabels := poolLabels(pool)
	maps.Copy(poolLabels, n.Labels)
	planned := &candidateLabels{zone: n.Zone, capacityType: n.CapacityType, pool: poolLabels}
	if ti := slices.IndexFunc(types, func(t InstanceType) bool { return t.Name == n.InstanceType }); ti >= 0 {
		planned.typ = types[ti].Labels
	}
	pinned := p.pinnedKeys(n, terms)
	var preferred []Term
	for _, pi := range n.Pods {
		for _, pr := range p.Pods[pi].Preferences {
			if pr.Kind == PreferNodeAffinity && pr.NodeTerm.Matches(planned) {
				preferred = append(preferred, pr.NodeTerm)
			}
		}
	}
	var out []LaunchOption
	for ti := range types {
		it := &types[ti]
		for _, o := range it.Offerings {
			isPlanned := it.Name == n.InstanceType && o.Zone == n.Zone && o.CapacityType == n.CapacityType
			if !isPlanned && maxPremium >= 0 && o.Price > n.Price*(1+maxPremium)+1e-9 {
				continue
			}
			labels := &candidateLabels{zone: o.Zone, capacityType: o.CapacityType, pool: poolLabels, typ: it.Labels}
			if !isPlanned && !p.holds(n, pool, it, labels, planned, pinned, preferred) {
				continue
			}
			out = append(out, LaunchOption{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price, Capacity: it.Capacity, Labels: it.Labels})
		}
	}
	slices.SortStableFunc(out, func(a, b LaunchOption) int {
		ap := a.InstanceType == n.InstanceType && a.Zone == n.Zone && a.CapacityType == n.CapacityType
		bp := b.InstanceType == n.InstanceType && b.Zone == n.Zone && b.CapacityType == n.CapacityType
		switch {
		case ap && !bp:
			return -1
		case bp && !ap:
			return 1
		}
		return cmp.Or(cmp.Compare(a.Price, b.Price), strings.Compare(a.InstanceType, b.InstanceType),
			strings.Compare(a.Zone, b.Zone), strings.Compare(a.CapacityType, b.CapacityType))
	})
	return out
}

// holds reports whether a node of type it with labels takes node n's pods
// as the planned one does (see LaunchOptions).
func (p *Problem) holds(n *NewNode, pool *Pool, it *InstanceType, labels, planned *candidateLabels, pinned []string, preferred []Term) bool {
	if !allMatch(pool.Requirements, labels) {
		return false
	}
	if !n.Requested.Fits(it.Allocatable().Sub(p.daemonOverhead(labels, pool.Taints))) {
		return false
	}
	for _, k := range pinned {
		want, had := planned.Label(k)
		got, has := labels.Label(k)
		if want != got || had != has {
			return false
		}
	}
	for _, t := range preferred {
		if !t.Matches(labels) {
			return false
		}
	}
	for _, pi := range n.Pods {
		pod := &p.Pods[pi]
		if !matchesAffinity(pod.NodeSelector, pod.Affinity, labels) || p.daemonPortConflict(pod, labels, pool.Taints) {
			return false
		}
	}
	return true
}
