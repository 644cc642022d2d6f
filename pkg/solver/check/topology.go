package check

import (
	"encoding/json"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// LabelHostname is the topology key of a single node.
const LabelHostname = "kubernetes.io/hostname"

// The topology rules below judge the final placement: the cluster as it will
// be once every planned node has joined and every planned pod runs, with the
// pods already running on existing nodes. The solver places all pods at once,
// so "no violation" means kube-scheduler, looking at that final cluster,
// would accept every planned pod where the plan put it. Planned nodes have no
// names yet; each is its own hostname domain, "(new node i)".
//
// What is judged, as kube-scheduler does:
//   - topology spread with whenUnsatisfiable DoNotSchedule: the domain of the
//     pod's node holds at most maxSkew more matching pods (of the pod's
//     namespace) than the emptiest eligible domain; eligible domains are those
//     of nodes that match the pod's node selector and affinity
//     (nodeAffinityPolicy Honor, the default) or of all nodes (Ignore); with
//     fewer eligible domains than minDomains the emptiest counts as 0.
//     ScheduleAnyway constraints are preferences and are not judged. The
//     plan's late pods (Plan.Late) bind after all the others, so a pod's
//     spread counts the late pods only up to itself.
//   - required pod anti-affinity: no other matching pod in the pod's domain,
//     and symmetrically no planned pod in the domain of a running pod whose
//     anti-affinity matches it.
//   - required pod affinity: another matching pod in the pod's domain, or, for
//     the first pod of a group that matches its own terms, no matching pod
//     anywhere else.
//
//     With nodeTaintsPolicy Honor, nodes with taints the pod does not
//     tolerate are not eligible (Ignore, the default, counts them).
//
// Pod (anti-)affinity terms select pods in their listed namespaces and in
// those their namespace selector matches (by Problem.NamespaceLabels and
// kubernetes.io/metadata.name), or in the owner's when neither is given.
//
// Not judged: matchLabelKeys (the snapshot resolves it into the selector),
// and running pods' own constraints (IgnoredDuringExecution).

// cluster is the final placement.
type cluster struct {
	p     *solver.Problem
	nodes []clusterNode
	pods  []placedPod
	// selectors caches converted label selectors by their JSON.
	selectors map[string]labels.Selector
	// counts caches per-domain counts by term signature.
	counts map[string]*domainCounts
	// eligible caches, per node affinity signature, which nodes match.
	eligible map[string][]bool
	// eligibleDomains caches, per topology key and node affinity
	// signature, the domains of the eligible nodes.
	eligibleDomains map[domainsKey]map[string]bool
	// launchable caches, per topology key and node affinity signature,
	// the domains each pool's instance type could launch into, and
	// potential what potentialDomains answered for each pod's requests:
	// without them, PlanWithPoolDomains walked every offering for every pod.
	launchable map[domainsKey][]typeDomains
	potential  map[potentialKey][]string
	// opened records the self-selecting affinity terms openedOnce judged.
	opened map[string]bool
	// poolDomains counts, for spread, the domains pools could launch into
	// (PlanWithPoolDomains).
	poolDomains bool
	// late numbers the plan's late pods from 1 in Plan.Late's order.
	late map[*solver.Pod]int
}

type clusterNode struct {
	name   string // for messages
	labels map[string]string
	v1     *v1.Node
}

type placedPod struct {
	pod  *solver.Pod
	node int
	// planned is true for pods the plan places (on new or existing nodes),
	// false for pods already running.
	planned bool
	index   int // index into Problem.Pods when planned
}

// domainCounts counts matching pods per domain of one topology key.
type domainCounts struct {
	all, planned map[string]int
	// total is the number of matching pods anywhere.
	total int
	// min is the count of the emptiest of domains eligible domains, once
	// computed (domains < 0 before).
	min, domains int
}

// domainsKey names a topology key over the nodes one node affinity
// signature (eligibleKey) makes eligible.
type domainsKey struct{ topologyKey, eligible string }

// potentialKey is a domainsKey for a pod of the given requests.
type potentialKey struct {
	domainsKey
	requests solver.Resources
}

// typeDomains are the domains one instance type of one pool could launch
// into for a spread constraint, whatever the pod's requests; err, when not
// nil, is what judging the type's offerings against the pod's node
// affinity failed with, to report for pods the type fits.
type typeDomains struct {
	allocatable solver.Resources
	domains     []string
	err         error
}

// emptiest returns the smallest count among domains, and how many domains
// there are (-1 and 0 when none).
func emptiest(domains map[string]bool, counts map[string]int) (int, int) {
	minCount := -1
	for d := range domains {
		if cnt := counts[d]; minCount < 0 || cnt < minCount {
			minCount = cnt
		}
	}
	return minCount, len(domains)
}

// domainsOf returns the domains of key among the eligible nodes, which
// the node affinity signature sig (eligibleKey) selected.
func (c *cluster) domainsOf(key, sig string, eligible []bool) map[string]bool {
	dk := domainsKey{key, sig}
	if ds, ok := c.eligibleDomains[dk]; ok {
		return ds
	}
	ds := map[string]bool{}
	for ni, n := range c.nodes {
		if d, ok := n.labels[key]; ok && eligible[ni] {
			ds[d] = true
		}
	}
	c.eligibleDomains[dk] = ds
	return ds
}

func newCluster(p *solver.Problem, plan *solver.Plan, newLabels []map[string]string) *cluster {
	poolTaints := map[string][]solver.Taint{}
	for i := range p.Pools {
		poolTaints[p.Pools[i].Name] = p.Pools[i].Taints
	}
	c := &cluster{p: p, selectors: map[string]labels.Selector{}, counts: map[string]*domainCounts{}, eligible: map[string][]bool{}, opened: map[string]bool{},
		eligibleDomains: map[domainsKey]map[string]bool{}, launchable: map[domainsKey][]typeDomains{}, potential: map[potentialKey][]string{}}
	c.late = make(map[*solver.Pod]int, len(plan.Late))
	for k, i := range plan.Late {
		if i >= 0 && i < len(p.Pods) {
			c.late[&p.Pods[i]] = k + 1
		}
	}
	byName := map[string]int{}
	for i := range p.Nodes {
		n := &p.Nodes[i]
		l := make(map[string]string, len(n.Labels)+2)
		for k, v := range n.Labels {
			l[k] = v
		}
		if _, ok := l[LabelHostname]; !ok {
			l[LabelHostname] = n.Name
		}
		if _, ok := l[solver.LabelZone]; !ok && n.Zone != "" {
			l[solver.LabelZone] = n.Zone
		}
		byName[n.Name] = len(c.nodes)
		c.addNode(n.Name, l, n.Taints)
		for j := range n.Pods {
			c.pods = append(c.pods, placedPod{pod: &n.Pods[j], node: len(c.nodes) - 1})
		}
	}
	for _, e := range plan.Existing {
		c.pods = append(c.pods, placedPod{pod: &p.Pods[e.Pod], node: byName[e.Node], planned: true, index: e.Pod})
	}
	for ni, n := range plan.NewNodes {
		name := fmt.Sprintf("(new node %d)", ni)
		l := make(map[string]string, len(newLabels[ni])+1)
		for k, v := range newLabels[ni] {
			l[k] = v
		}
		l[LabelHostname] = name
		c.addNode(name, l, poolTaints[n.Pool])
		for _, pi := range n.Pods {
			c.pods = append(c.pods, placedPod{pod: &p.Pods[pi], node: len(c.nodes) - 1, planned: true, index: pi})
		}
	}
	return c
}

func (c *cluster) addNode(name string, l map[string]string, taints []solver.Taint) {
	c.nodes = append(c.nodes, clusterNode{name: name, labels: l, v1: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}, Spec: v1.NodeSpec{Taints: toV1Taints(taints)}}})
}

// Topology checks the plan's placements against topology spread and required
// pod (anti-)affinity, on the final placement. Plan calls it after the
// per-node checks; it assumes every pod and node index is valid.
func Topology(p *solver.Problem, plan *solver.Plan) error {
	return topology(p, plan, false)
}

func topology(p *solver.Problem, plan *solver.Plan, poolDomains bool) error {
	newLabels := make([]map[string]string, len(plan.NewNodes))
	for ni := range plan.NewNodes {
		l, err := newNodeLabels(p, &plan.NewNodes[ni])
		if err != nil {
			return fmt.Errorf("node %d: %w", ni, err)
		}
		newLabels[ni] = l
	}
	c := newCluster(p, plan, newLabels)
	c.poolDomains = poolDomains
	for _, rule := range []func(*cluster) error{checkSpread, checkAntiAffinity, checkAffinity} {
		if err := rule(c); err != nil {
			return err
		}
	}
	return nil
}

// checkSpread judges every planned pod's DoNotSchedule spread constraints.
func checkSpread(c *cluster) error {
	for _, pp := range c.pods {
		if !pp.planned {
			continue
		}
		for _, sc := range pp.pod.Spread {
			if sc.WhenUnsatisfiable == solver.ScheduleAnyway {
				continue
			}
			if err := c.spreadOK(pp, &sc); err != nil {
				return fmt.Errorf("pod %s on %s: topology spread on %s: %w", pp.pod.Key(), c.nodes[pp.node].name, sc.TopologyKey, err)
			}
		}
	}
	return nil
}

func (c *cluster) spreadOK(pp placedPod, sc *solver.TopologySpread) error {
	domain, ok := c.nodes[pp.node].labels[sc.TopologyKey]
	if !ok {
		return fmt.Errorf("node has no %s label", sc.TopologyKey)
	}
	sig := eligibleKey(pp.pod, sc.NodeAffinityPolicy, sc.NodeTaintsPolicy)
	eligible, err := c.eligibleNodes(pp.pod, sig, sc.NodeAffinityPolicy, sc.NodeTaintsPolicy)
	if err != nil {
		return err
	}
	sel, err := c.selector(sc.Selector)
	if err != nil {
		return err
	}
	// kube-scheduler judges the spread as the pod binds: a late pod
	// (Plan.Late) binds after the others, so it counts for its own spread
	// and those of the late pods after it only.
	horizon := c.late[pp.pod]
	key, _ := json.Marshal([]any{"spread", sc.TopologyKey, sc.Selector, pp.pod.Namespace, sig, horizon})
	counts := c.count(string(key), sc.TopologyKey, eligible, func(o *solver.Pod) bool {
		return o.Namespace == pp.pod.Namespace && sel.Matches(labels.Set(o.Labels)) && c.late[o] <= horizon
	})
	domainSet := c.domainsOf(sc.TopologyKey, sig, eligible)
	if counts.domains < 0 {
		counts.min, counts.domains = emptiest(domainSet, counts.all)
	}
	minCount, domains := counts.min, counts.domains
	if c.poolDomains && sc.TopologyKey != LabelHostname {
		// Domains only the pools could launch into count too, empty unless
		// some final node is already there (Karpenter counts them; a
		// node that joins one makes it kube-scheduler's domain too).
		potential, err := c.potentialDomains(pp.pod, sc, sig)
		if err != nil {
			return err
		}
		for _, d := range potential {
			if domainSet[d] {
				continue
			}
			domains++
			if cnt := counts.all[d]; minCount < 0 || cnt < minCount {
				minCount = cnt
			}
		}
	}
	if domains < int(sc.MinDomains) || minCount < 0 {
		minCount = 0
	}
	if skew := counts.all[domain] - minCount; skew > int(max(sc.MaxSkew, 1)) {
		return fmt.Errorf("%d matching pods in %s, %d in the emptiest of %d eligible domains: skew %d > maxSkew %d",
			counts.all[domain], domain, minCount, domains, skew, max(sc.MaxSkew, 1))
	}
	return nil
}

// checkAntiAffinity judges required pod anti-affinity both ways: a planned
// pod's terms against every pod, and running pods' terms against planned pods.
func checkAntiAffinity(c *cluster) error {
	for qi, q := range c.pods {
		for ti := range q.pod.PodAntiAffinity {
			t := &q.pod.PodAntiAffinity[ti]
			domain, ok := c.nodes[q.node].labels[t.TopologyKey]
			if !ok {
				continue // a node without the key is never in a conflicting domain
			}
			match, err := c.termMatcher(q.pod, t)
			if err != nil {
				return fmt.Errorf("pod %s: anti-affinity: %w", q.pod.Key(), err)
			}
			counts := c.count(termKey("anti", q.pod, t), t.TopologyKey, nil, match)
			conflicts := counts.planned[domain]
			if q.planned {
				conflicts = counts.all[domain]
			}
			if q.planned && match(q.pod) {
				conflicts-- // a pod does not conflict with itself
			}
			if conflicts > 0 {
				other := c.findOther(qi, t.TopologyKey, domain, match, !q.planned)
				who := "running pod"
				if q.planned {
					who = "pod"
				}
				return fmt.Errorf("%s %s on %s: required anti-affinity on %s forbids pod %s in the same domain %s",
					who, q.pod.Key(), c.nodes[q.node].name, t.TopologyKey, other, domain)
			}
		}
	}
	return nil
}

// checkAffinity judges planned pods' required pod affinity.
func checkAffinity(c *cluster) error {
	for _, q := range c.pods {
		if !q.planned || len(q.pod.PodAffinity) == 0 {
			continue
		}
		var failed *solver.PodAffinityTerm
		selfAffine, othersAnywhere := true, 0
		for ti := range q.pod.PodAffinity {
			t := &q.pod.PodAffinity[ti]
			match, err := c.termMatcher(q.pod, t)
			if err != nil {
				return fmt.Errorf("pod %s: affinity: %w", q.pod.Key(), err)
			}
			counts := c.count(termKey("affinity", q.pod, t), t.TopologyKey, nil, match)
			self := 0
			if match(q.pod) {
				self = 1
			} else {
				selfAffine = false
			}
			othersAnywhere += counts.total - self
			domain, ok := c.nodes[q.node].labels[t.TopologyKey]
			if failed == nil && (!ok || counts.all[domain]-self == 0) {
				failed = t
			}
		}
		// kube-scheduler lets the first pod of a group that matches its own
		// terms go anywhere when no other pod matches them.
		if failed != nil && !(selfAffine && othersAnywhere == 0) {
			return fmt.Errorf("pod %s on %s: required affinity on %s: no matching pod in its domain %q",
				q.pod.Key(), c.nodes[q.node].name, failed.TopologyKey, c.nodes[q.node].labels[failed.TopologyKey])
		}
		if err := c.openedOnce(q); err != nil {
			return err
		}
	}
	return nil
}

// openedOnce judges what the final state alone does not show: pods whose
// required affinity term selects themselves can only start one domain of
// their own. kube-scheduler, adding pods one at a time, lets a pod carrying
// the term into a domain holding no pod it selects only while no such pod
// exists anywhere: so at most one domain may hold planned carriers and no
// pod that was free to be there first (a running one, or a planned one not
// carrying the term), and none when such pods already run.
func (c *cluster) openedOnce(q placedPod) error {
	for ti := range q.pod.PodAffinity {
		t := &q.pod.PodAffinity[ti]
		match, err := c.termMatcher(q.pod, t)
		if err != nil {
			return fmt.Errorf("pod %s: affinity: %w", q.pod.Key(), err)
		}
		if !match(q.pod) {
			continue
		}
		sig := termKey("affinity", q.pod, t)
		if c.opened[sig] {
			continue
		}
		c.opened[sig] = true
		carries := func(o *solver.Pod) bool {
			for i := range o.PodAffinity {
				if termKey("affinity", o, &o.PodAffinity[i]) == sig {
					return true
				}
			}
			return false
		}
		anchored := map[string]bool{}
		carried := map[string]bool{}
		running := false
		for _, pp := range c.pods {
			if !match(pp.pod) {
				continue
			}
			d, ok := c.nodes[pp.node].labels[t.TopologyKey]
			switch {
			case !pp.planned:
				running = true
				if ok {
					anchored[d] = true
				}
			case !ok:
			case carries(pp.pod):
				carried[d] = true
			default:
				anchored[d] = true
			}
		}
		var opened []string
		for d := range carried {
			if !anchored[d] {
				opened = append(opened, d)
			}
		}
		if len(opened) > 1 || len(opened) == 1 && running {
			slices.Sort(opened)
			return fmt.Errorf("pod %s: required affinity on %s: its pods start %d domain(s) of their own (%v); only the first of them may go where no pod it selects is, and only while none runs",
				q.pod.Key(), t.TopologyKey, len(opened), opened)
		}
	}
	return nil
}

// count returns, for one signature, the matching pods per domain of key,
// over eligible nodes (all when nil).
func (c *cluster) count(sig, key string, eligible []bool, match func(*solver.Pod) bool) *domainCounts {
	if dc, ok := c.counts[sig]; ok {
		return dc
	}
	dc := &domainCounts{all: map[string]int{}, planned: map[string]int{}, domains: -1}
	for _, pp := range c.pods {
		if eligible != nil && !eligible[pp.node] {
			continue
		}
		if !match(pp.pod) {
			continue
		}
		dc.total++
		d, ok := c.nodes[pp.node].labels[key]
		if !ok {
			continue
		}
		dc.all[d]++
		if pp.planned {
			dc.planned[d]++
		}
	}
	c.counts[sig] = dc
	return dc
}

// findOther names a pod other than c.pods[self] in the domain that match
// selects (only planned pods when plannedOnly), for error messages.
func (c *cluster) findOther(self int, key, domain string, match func(*solver.Pod) bool, plannedOnly bool) string {
	for i, pp := range c.pods {
		if i == self || plannedOnly && !pp.planned || c.nodes[pp.node].labels[key] != domain || !match(pp.pod) {
			continue
		}
		return pp.pod.Key() + " on " + c.nodes[pp.node].name
	}
	return "?"
}

// termMatcher returns whether a pod is selected by owner's term: in the
// term's namespaces (the owner's when none) and matching its selector.
func (c *cluster) termMatcher(owner *solver.Pod, t *solver.PodAffinityTerm) (func(*solver.Pod) bool, error) {
	sel, err := c.selector(t.Selector)
	if err != nil {
		return nil, err
	}
	namespaces := t.Namespaces
	if len(namespaces) == 0 && t.NamespaceSelector == nil {
		namespaces = []string{owner.Namespace}
	}
	var nsSel labels.Selector
	if t.NamespaceSelector != nil {
		if nsSel, err = c.selector(*t.NamespaceSelector); err != nil {
			return nil, fmt.Errorf("namespace selector: %w", err)
		}
	}
	return func(o *solver.Pod) bool {
		inNamespace := slices.Contains(namespaces, o.Namespace)
		if !inNamespace && nsSel != nil {
			// Every namespace carries its name as a label.
			nsLabels := labels.Set{"kubernetes.io/metadata.name": o.Namespace}
			for k, v := range c.p.NamespaceLabels[o.Namespace] {
				nsLabels[k] = v
			}
			inNamespace = nsSel.Matches(nsLabels)
		}
		return inNamespace && sel.Matches(labels.Set(o.Labels))
	}, nil
}

func termKey(kind string, owner *solver.Pod, t *solver.PodAffinityTerm) string {
	namespaces := t.Namespaces
	if len(namespaces) == 0 && t.NamespaceSelector == nil {
		namespaces = []string{owner.Namespace}
	}
	key, _ := json.Marshal([]any{kind, t.TopologyKey, t.Selector, namespaces, t.NamespaceSelector})
	return string(key)
}

// selector converts a solver selector with apimachinery's own conversion,
// so that its semantics (an empty selector matches everything) are
// Kubernetes'.
func (c *cluster) selector(s solver.Selector) (labels.Selector, error) {
	key, _ := json.Marshal(s)
	if sel, ok := c.selectors[string(key)]; ok {
		return sel, nil
	}
	ls := &metav1.LabelSelector{MatchLabels: s.MatchLabels}
	for _, r := range s.MatchExpressions {
		ls.MatchExpressions = append(ls.MatchExpressions, metav1.LabelSelectorRequirement{Key: r.Key, Operator: metav1.LabelSelectorOperator(r.Operator), Values: r.Values})
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("invalid selector %s: %w", key, err)
	}
	c.selectors[string(key)] = sel
	return sel, nil
}

// eligibleNodes returns which nodes a spread constraint counts: those
// matching the pod's node selector and required affinity (affinity policy
// Honor, the default) or all (Ignore), and of those only nodes whose
// NoSchedule and NoExecute taints the pod tolerates when the taints policy is
// Honor (by default taints do not matter), as kube-scheduler's
// PodTopologySpread filter does. key is the pod's eligibleKey for the
// policies.
func (c *cluster) eligibleNodes(pod *solver.Pod, key, affinityPolicy, taintsPolicy string) ([]bool, error) {
	if e, ok := c.eligible[key]; ok {
		return e, nil
	}
	e := make([]bool, len(c.nodes))
	required := nodeaffinity.NewRequiredNodeAffinity(pod.NodeSelector, toV1Affinity(pod.Affinity))
	tolerations := toV1Tolerations(pod.Tolerations)
	for i := range c.nodes {
		e[i] = true
		if affinityPolicy != "Ignore" {
			ok, err := required.Match(c.nodes[i].v1)
			if err != nil {
				return nil, fmt.Errorf("node affinity: %w", err)
			}
			e[i] = ok
		}
		if e[i] && taintsPolicy == "Honor" {
			_, untolerated := corev1.FindMatchingUntoleratedTaint(klog.Background(), c.nodes[i].v1.Spec.Taints, tolerations, func(t *v1.Taint) bool {
				return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
			}, false)
			e[i] = !untolerated
		}
	}
	c.eligible[key] = e
	return e, nil
}

// potentialDomains lists the domains of the spread's key that the pools
// could launch a node into for the pod: an offering of a type the pod fits
// on, in a pool whose requirements its labels meet, kept as the
// constraint's node affinity and taints policies say (as eligibleNodes).
// A key the pool requires with In but does not label takes each of the
// requirement's values. sig is the pod's eligibleKey for the policies.
func (c *cluster) potentialDomains(pod *solver.Pod, sc *solver.TopologySpread, sig string) ([]string, error) {
	dk := domainsKey{sc.TopologyKey, sig}
	pk := potentialKey{dk, pod.Requests}
	if out, ok := c.potential[pk]; ok {
		return out, nil
	}
	types, ok := c.launchable[dk]
	if !ok {
		types = c.launchableDomains(pod, sc)
		c.launchable[dk] = types
	}
	var out []string
	for _, t := range types {
		if !pod.Requests.Fits(t.allocatable) {
			continue
		}
		if t.err != nil {
			return nil, t.err
		}
		for _, d := range t.domains {
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	c.potential[pk] = out
	return out, nil
}

// launchableDomains returns, for every instance type of every pool whose
// taints the constraint's taints policy lets the pod onto, the domains of
// the spread's key its offerings could launch a node into for the pod, in
// pool and type order. Only the pod's node selector, affinity and
// tolerations (as the policies say) matter, not its requests.
func (c *cluster) launchableDomains(pod *solver.Pod, sc *solver.TopologySpread) []typeDomains {
	key := sc.TopologyKey
	var out []typeDomains
	required := nodeaffinity.NewRequiredNodeAffinity(pod.NodeSelector, toV1Affinity(pod.Affinity))
	tolerations := toV1Tolerations(pod.Tolerations)
	for pi := range c.p.Pools {
		pool := &c.p.Pools[pi]
		if sc.NodeTaintsPolicy == "Honor" {
			if _, untolerated := corev1.FindMatchingUntoleratedTaint(klog.Background(), toV1Taints(pool.Taints), tolerations, func(t *v1.Taint) bool {
				return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
			}, false); untolerated {
				continue
			}
		}
		var values []string // of key, when the pool requires it without labelling it
		if _, labelled := pool.Labels[key]; !labelled {
			for _, r := range pool.Requirements {
				if r.Key == key && r.Operator == solver.OpIn {
					values = r.Values
				}
			}
		}
		types := c.p.PoolTypes(pi)
		for ti := range types {
			it := &types[ti]
			td := typeDomains{allocatable: it.Allocatable()}
		offerings:
			for _, o := range it.Offerings {
				l := map[string]string{}
				for k, v := range it.Labels {
					l[k] = v
				}
				for k, v := range pool.Labels {
					l[k] = v
				}
				l[solver.LabelNodePool] = pool.Name
				l[solver.LabelZone] = o.Zone
				l[solver.LabelCapacityType] = o.CapacityType
				variants := []string{l[key]}
				if _, ok := l[key]; !ok {
					variants = values
				}
				for _, v := range variants {
					l[key] = v
					ok := true
					for _, r := range pool.Requirements {
						ok = ok && r.Matches(solver.MapLabels(l))
					}
					if ok && sc.NodeAffinityPolicy != "Ignore" {
						m, err := required.Match(&v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: l}})
						if err != nil {
							td.err = fmt.Errorf("node affinity: %w", err)
							break offerings
						}
						ok = m
					}
					if ok && !slices.Contains(td.domains, v) {
						td.domains = append(td.domains, v)
					}
				}
			}
			out = append(out, td)
		}
	}
	return out
}

func eligibleKey(pod *solver.Pod, affinityPolicy, taintsPolicy string) string {
	var key []byte
	if affinityPolicy == "Ignore" {
		key = []byte("ignore")
	} else {
		key, _ = json.Marshal([]any{pod.NodeSelector, pod.Affinity})
	}
	if taintsPolicy == "Honor" {
		tols, _ := json.Marshal(pod.Tolerations)
		key = append(append(key, " honor "...), tols...)
	}
	return string(key)
}
