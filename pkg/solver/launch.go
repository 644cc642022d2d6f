package solver

import (
	"cmp"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
)

// MaxLaunchInstanceTypes is how many instance types a flexible launch
// allows at most, the cheapest: the number Karpenter's AWS provider sends
// to CreateFleet (aws/karpenter-provider-aws
// pkg/providers/instance/instance.go, maxInstanceTypes).
const MaxLaunchInstanceTypes = 60

// InstanceTypeNames returns the distinct instance types of opts in their
// order, at most MaxLaunchInstanceTypes.
func InstanceTypeNames(opts []LaunchOption) []string {
	var out []string
	for _, o := range opts {
		if len(out) == MaxLaunchInstanceTypes {
			break
		}
		if !slices.Contains(out, o.InstanceType) {
			out = append(out, o.InstanceType)
		}
	}
	return out
}

// LaunchOption is an offering a planned node can be launched on in place
// of the one the plan chose: a node of it takes the same pods.
type LaunchOption struct {
	InstanceType string  `json:"instanceType"`
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"pricePerHour"`
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
// then the others by price (ties in the problem's order of instance
// types and their offerings).
func LaunchOptions(p *Problem, plan *Plan, maxPremium float64) [][]LaunchOption {
	out := launchOptionsOf(p, plan, maxPremium, false)
	for i := range out {
		out[i] = slices.Clone(out[i]) // alike nodes share one list: each caller's own
	}
	return out
}

// LaunchInstanceTypes returns, for each node of plan, InstanceTypeNames
// of its LaunchOptions, without listing the options past the
// MaxLaunchInstanceTypes-th type: on a plan of thousands of nodes with
// hundreds of types each, most of LaunchOptions' work.
func LaunchInstanceTypes(p *Problem, plan *Plan, maxPremium float64) [][]string {
	opts := launchOptionsOf(p, plan, maxPremium, true)
	out := make([][]string, len(opts))
	named := map[*LaunchOption][]string{} // alike nodes share one list
	for i, o := range opts {
		if len(o) == 0 {
			continue
		}
		names, ok := named[&o[0]]
		if !ok {
			names = InstanceTypeNames(o)
			named[&o[0]] = names
		}
		out[i] = slices.Clone(names)
	}
	return out
}

// launchOptionsOf is LaunchOptions; with truncate, each node's list ends
// at its MaxLaunchInstanceTypes-th distinct type. Nodes alike share one
// list: the lists are read-only.
func launchOptionsOf(p *Problem, plan *Plan, maxPremium float64, truncate bool) [][]LaunchOption {
	q := p.normalized()
	terms := topologyTerms(q)
	lists := map[string]*offerList{}
	pools := make([]int, len(plan.NewNodes))
	keys := make([]string, len(plan.NewNodes))
	for i := range plan.NewNodes {
		n := &plan.NewNodes[i]
		pools[i] = slices.IndexFunc(q.Pools, func(pool Pool) bool { return pool.Name == n.Pool })
		if pools[i] < 0 {
			continue
		}
		keys[i] = fmt.Sprint(pools[i], n.Labels)
		if _, ok := lists[keys[i]]; !ok {
			lists[keys[i]] = newOfferList(q.offered(pools[i], n.Labels), keys[i])
		}
	}
	// Each node's options only read the problem: the nodes are shared out
	// among the CPUs (a plan of thousands of nodes on hundreds of types).
	// Nodes alike in what holds checks of labels share its answers (see
	// labelChecks).
	out := make([][]LaunchOption, len(plan.NewNodes))
	checks := &labelChecks{seen: map[string][]bool{}, lists: map[string][]LaunchOption{}, types: map[typeOfPool]int{}}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(plan.NewNodes)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(plan.NewNodes); i = int(next.Add(1)) - 1 {
				if pools[i] >= 0 {
					out[i] = q.launchOptionsWith(&plan.NewNodes[i], pools[i], lists[keys[i]], terms, maxPremium, checks, truncate)
				}
			}
		})
	}
	wg.Wait()
	return out
}

// offerList is the offerings of a pool's node with some labels (see
// offered), named by key, with their indices by price (ties in their
// order): every node's options come in that order.
type offerList struct {
	offered []offered
	byPrice []int
	key     string
}

func newOfferList(offerings []offered, key string) *offerList {
	l := &offerList{offered: offerings, byPrice: make([]int, len(offerings)), key: key}
	for i := range l.byPrice {
		l.byPrice[i] = i
	}
	slices.SortStableFunc(l.byPrice, func(a, b int) int { return cmp.Compare(offerings[a].offering.Price, offerings[b].offering.Price) })
	return l
}

// labelChecks remembers, per node signature (see launchOptionsWith), which
// offerings of the node's list pass holds' checks of labels: the pinned
// topology values, the preferred terms and the pods' node affinity and
// DaemonSet ports. Only requests then differ from node to node. The
// nodes are shared out among goroutines, hence the lock.
//
// lists remembers whole answers: nodes alike in those checks that also
// have the same planned offering and the same requests get the same
// options (a plan of thousands of nodes has a few hundred distinct ones).
// types remembers where in its pool's types a planned type is.
type labelChecks struct {
	mu    sync.Mutex
	seen  map[string][]bool
	lists map[string][]LaunchOption
	types map[typeOfPool]int
}

// typeOfPool names an instance type of a pool.
type typeOfPool struct {
	pool int
	name string
}

// typeIndex returns the index of the type named name among types, the
// types of pool pi (-1: none), remembered in checks when not nil.
func (checks *labelChecks) typeIndex(pi int, name string, types []InstanceType) int {
	find := func() int { return slices.IndexFunc(types, func(t InstanceType) bool { return t.Name == name }) }
	if checks == nil {
		return find()
	}
	key := typeOfPool{pi, name}
	checks.mu.Lock()
	ti, ok := checks.types[key]
	checks.mu.Unlock()
	if !ok {
		ti = find()
		checks.mu.Lock()
		checks.types[key] = ti
		checks.mu.Unlock()
	}
	return ti
}

// offered is an offering of a pool's node with some labels: the pool's
// requirements hold for it, and alloc is what its allocatable leaves
// once the DaemonSets that would run there are counted.
type offered struct {
	typ      *InstanceType
	offering Offering
	labels   *candidateLabels
	alloc    Resources
}

// offered returns the offerings of pool pi for nodes with the open-key
// labels open (NewNode.Labels), those of capacity reservations (a Count)
// left out: only planReserved plans them, counted.
func (p *Problem) offered(pi int, open map[string]string) []offered {
	pool := &p.Pools[pi]
	pl := poolLabels(pool)
	maps.Copy(pl, open)
	types := p.PoolTypes(pi)
	var out []offered
	for ti := range types {
		it := &types[ti]
		for _, o := range it.Offerings {
			labels := &candidateLabels{zone: o.Zone, capacityType: o.CapacityType, pool: pl, typ: it.Labels}
			if o.Count == 0 && allMatch(pool.Requirements, labels) {
				out = append(out, offered{typ: it, offering: o, labels: labels, alloc: it.Allocatable().Sub(p.daemonOverhead(labels, pool.Taints))})
			}
		}
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
	// Replicas repeat their terms: keep one of each.
	seen := map[string]bool{}
	return slices.DeleteFunc(out, func(t topologyTerm) bool {
		k := fmt.Sprint(NormalizeLabelKey(t.key), *t.sel)
		dup := seen[k]
		seen[k] = true
		return dup || NormalizeLabelKey(t.key) == "kubernetes.io/hostname"
	})
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
	var labels []map[string]string // the pods' distinct label sets
	for _, pi := range n.Pods {
		pod := &p.Pods[pi]
		if !slices.ContainsFunc(labels, func(l map[string]string) bool { return maps.Equal(l, pod.Labels) }) {
			labels = append(labels, pod.Labels)
		}
		// The pod's own terms, as topologyTerms lists them.
		own := func(key string) {
			if NormalizeLabelKey(key) != "kubernetes.io/hostname" {
				pin(key)
			}
		}
		for key := range pod.constraintKeys() {
			own(key)
		}
		for _, pr := range pod.Preferences {
			switch {
			case pr.Spread != nil:
				own(pr.Spread.TopologyKey)
			case pr.PodTerm != nil:
				own(pr.PodTerm.TopologyKey)
			}
		}
	}
	for _, t := range terms {
		if slices.ContainsFunc(labels, t.sel.Matches) {
			pin(t.key)
		}
	}
	return keys
}

// distinctPods returns one pod of the node for each distinct set of node
// constraints (selector, affinity, tolerations, host ports) among its pods.
func (p *Problem) distinctPods(n *NewNode) []*Pod {
	var out []*Pod
	seen := map[string]bool{}
	for _, pi := range n.Pods {
		if k := constraintKey(&p.Pods[pi], ""); !seen[k] {
			seen[k] = true
			out = append(out, &p.Pods[pi])
		}
	}
	return out
}

// launchOptions is LaunchOptions for one node of pool pi of the
// normalized problem, among the pool's offerings for it.
func (p *Problem) launchOptions(n *NewNode, pi int, offerings []offered, terms []topologyTerm, maxPremium float64) []LaunchOption {
	return p.launchOptionsWith(n, pi, newOfferList(offerings, ""), terms, maxPremium, nil, false)
}

// launchOptionsWith is launchOptions among list's offerings, remembering
// in checks (when not nil) which offerings pass holds' checks of labels
// for nodes alike in them: the same list of offerings, the same values of
// the pinned keys, the same preferred terms and pods with the same node
// constraints, and the whole answer for nodes alike in those that also
// have the same planned offering and requests. With truncate, the list
// ends at its MaxLaunchInstanceTypes-th distinct type.
func (p *Problem) launchOptionsWith(n *NewNode, pi int, list *offerList, terms []topologyTerm, maxPremium float64, checks *labelChecks, truncate bool) (out []LaunchOption) {
	offerings := list.offered
	pool := &p.Pools[pi]
	pl := poolLabels(pool)
	maps.Copy(pl, n.Labels)
	planned := &candidateLabels{zone: n.Zone, capacityType: n.CapacityType, pool: pl}
	types := p.PoolTypes(pi)
	if ti := checks.typeIndex(pi, n.InstanceType, types); ti >= 0 {
		planned.typ = types[ti].Labels
	}
	pinned := p.pinnedKeys(n, terms)
	reps := p.distinctPods(n)
	var preferred []Term
	var preferredKeys []string
	seen := map[string]bool{}
	for _, pi := range n.Pods {
		for _, pr := range p.Pods[pi].Preferences {
			if k := fmt.Sprint(pr.NodeTerm); pr.Kind == PreferNodeAffinity && !seen[k] && pr.NodeTerm.Matches(planned) {
				seen[k] = true
				preferred = append(preferred, pr.NodeTerm)
				preferredKeys = append(preferredKeys, k)
			}
		}
	}
	var ok []bool // by offering: holds' checks of labels pass
	if checks != nil {
		var sig []byte
		add := func(s string) {
			sig = strconv.AppendInt(sig, int64(len(s)), 10)
			sig = append(sig, ':')
			sig = append(sig, s...)
		}
		add(list.key)
		for _, k := range pinned {
			v, has := planned.Label(k)
			add(k)
			add(strconv.FormatBool(has))
			add(v)
		}
		add("preferred")
		for _, k := range preferredKeys {
			add(k)
		}
		add("pods")
		for _, pod := range reps {
			add(nodeConstraintKey(pod))
		}
		labelSig := string(sig)
		// The answer depends on the node beyond sig only through its
		// planned offering and its requests.
		add("planned")
		add(n.InstanceType)
		add(n.Zone)
		add(n.CapacityType)
		add(strconv.FormatFloat(n.Price, 'g', -1, 64))
		for _, q := range n.Requested {
			sig = strconv.AppendInt(sig, q, 10)
			sig = append(sig, ',')
		}
		checks.mu.Lock()
		done, have := checks.lists[string(sig)]
		checks.mu.Unlock()
		if have {
			return done
		}
		defer func() {
			checks.mu.Lock()
			checks.lists[string(sig)] = out
			checks.mu.Unlock()
		}()
		checks.mu.Lock()
		ok = checks.seen[labelSig]
		checks.mu.Unlock()
		if ok == nil {
			ok = make([]bool, len(offerings))
			for i := range offerings {
				ok[i] = p.holdsLabels(reps, pool, &offerings[i], planned, pinned, preferred)
			}
			checks.mu.Lock()
			checks.seen[labelSig] = ok
			checks.mu.Unlock()
		}
	}
	// The planned offering, then the others by price (ties in the
	// problem's order of types and offerings): the list's order.
	out = []LaunchOption{{InstanceType: n.InstanceType, Zone: n.Zone, CapacityType: n.CapacityType, Price: n.Price}}
	names := []string{n.InstanceType} // with truncate: the distinct types so far
	for _, i := range list.byPrice {
		c := &offerings[i]
		it, o := c.typ, c.offering
		if maxPremium >= 0 && o.Price > n.Price*(1+maxPremium)+1e-9 {
			break // by price: every later one costs as much or more
		}
		switch {
		case it.Name == n.InstanceType && o.Zone == n.Zone && o.CapacityType == n.CapacityType:
			continue
		case ok != nil:
			if !ok[i] || !n.Requested.Fits(c.alloc) {
				continue
			}
		case !p.holds(n, reps, pool, c, planned, pinned, preferred):
			continue
		}
		if truncate && !slices.Contains(names, it.Name) {
			if len(names) == MaxLaunchInstanceTypes {
				break
			}
			names = append(names, it.Name)
		}
		out = append(out, LaunchOption{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price})
	}
	return out
}

// holds reports whether a node of offering c takes node n's pods as the
// planned one does (see LaunchOptions); reps are its distinct pods.
func (p *Problem) holds(n *NewNode, reps []*Pod, pool *Pool, c *offered, planned *candidateLabels, pinned []string, preferred []Term) bool {
	return n.Requested.Fits(c.alloc) && p.holdsLabels(reps, pool, c, planned, pinned, preferred)
}

// holdsLabels is holds without the requests: the checks of labels.
func (p *Problem) holdsLabels(reps []*Pod, pool *Pool, c *offered, planned *candidateLabels, pinned []string, preferred []Term) bool {
	labels := c.labels
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
	for _, pod := range reps {
		if !matchesAffinity(pod.NodeSelector, pod.Affinity, labels) || p.daemonPortConflict(pod, labels, pool.Taints) {
			return false
		}
	}
	return true
}
