package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// The judge releases a plan's pods to kube-scheduler one after another, each
// nominated to its planned node, and the scheduler binds each as soon as it
// is released. A plan is a final placement; the scheduler checks one pod at
// a time against the pods already bound. So the judge needs an order in
// which every pod, when its turn comes, is allowed on its planned node by
// the pods before it: affinity leaders before their followers, and
// topology-spread domains filled evenly instead of one after the other.
//
// judgeOrder finds such an order by simulating the scheduler's filters for
// topology spread (DoNotSchedule) and required inter-pod affinity and
// anti-affinity — only to choose the order; kube-scheduler alone judges the
// result. The simulation follows kube-scheduler's PodTopologySpread and
// InterPodAffinity filter plugins (pkg/scheduler/framework/plugins in
// k8s.io/kubernetes): spread counts matching pods of the pod's namespace on
// nodes that match the pod's node affinity and carry every constraint's key,
// with the global minimum 0 below minDomains; an affinity term is met by a
// pod matching all of the pod's terms in the node's domain, or by nothing
// anywhere when the pod matches its own terms; anti-affinity holds both ways.

// orderSim is the simulated cluster of one plan.
type orderSim struct {
	p     *solver.Problem
	nodes []map[string]string // labels of the planned nodes
	// nodeOf is each pod's planned node, -1 for a pod the plan leaves pending.
	nodeOf []int
	sigs   map[string]*orderSig
	// count[sig][node] counts placed pods matching the signature.
	placed   []int // placed pods
	anti     map[antiKey]map[string]bool
	eligible map[string][]bool
}

// orderSig is a label selector over a set of namespaces.
type orderSig struct {
	key     string
	matches []bool // per pod of the problem
	count   []int  // placed matching pods per node
	total   int
}

// antiKey is an anti-affinity term of a placed pod: its signature and
// topology key; the value set holds the domains it forbids.
type antiKey struct {
	sig, topology string
}

func newOrderSim(p *solver.Problem, plan *solver.Plan, nodeLabels []map[string]string) (*orderSim, error) {
	s := &orderSim{p: p, nodes: nodeLabels, nodeOf: make([]int, len(p.Pods)), sigs: map[string]*orderSig{},
		anti: map[antiKey]map[string]bool{}, eligible: map[string][]bool{}}
	for i := range s.nodeOf {
		s.nodeOf[i] = -1
	}
	for ni, n := range plan.NewNodes {
		for _, pi := range n.Pods {
			s.nodeOf[pi] = ni
		}
	}
	for i := range p.Pods {
		pod := &p.Pods[i]
		for _, sc := range pod.Spread {
			if _, err := s.sig([]string{pod.Namespace}, sc.Selector); err != nil {
				return nil, fmt.Errorf("pod %s: spread selector: %w", pod.Key(), err)
			}
		}
		for _, t := range append(slices.Clone(pod.PodAffinity), pod.PodAntiAffinity...) {
			if _, err := s.sig(termNamespaces(pod, &t), t.Selector); err != nil {
				return nil, fmt.Errorf("pod %s: affinity selector: %w", pod.Key(), err)
			}
		}
	}
	return s, nil
}

func termNamespaces(pod *solver.Pod, t *solver.PodAffinityTerm) []string {
	if len(t.Namespaces) == 0 {
		return []string{pod.Namespace}
	}
	return t.Namespaces
}

// sig returns the signature of a selector over namespaces, building it (and
// which pods it matches) on first use.
func (s *orderSim) sig(namespaces []string, sel solver.Selector) (*orderSig, error) {
	ns := slices.Clone(namespaces)
	sort.Strings(ns)
	b, err := json.Marshal(sel)
	if err != nil {
		return nil, err
	}
	key := strings.Join(ns, ",") + "|" + string(b)
	if sg, ok := s.sigs[key]; ok {
		return sg, nil
	}
	ls, err := metav1.LabelSelectorAsSelector(v1Selector(sel))
	if err != nil {
		return nil, err
	}
	sg := &orderSig{key: key, matches: make([]bool, len(s.p.Pods)), count: make([]int, len(s.nodes))}
	for i := range s.p.Pods {
		q := &s.p.Pods[i]
		sg.matches[i] = slices.Contains(ns, q.Namespace) && ls.Matches(labels.Set(q.Labels))
	}
	s.sigs[key] = sg
	return sg, nil
}

func (s *orderSim) mustSig(namespaces []string, sel solver.Selector) *orderSig {
	sg, err := s.sig(namespaces, sel)
	if err != nil {
		panic(err) // every selector was converted in newOrderSim
	}
	return sg
}

// eligibleNodes returns which planned nodes count for the pod's spread
// constraints: those matching its node selector and required affinity
// (nodeAffinityPolicy Honor) or all (Ignore), that carry every key of the
// pod's constraints.
func (s *orderSim) eligibleNodes(pod *solver.Pod, sc *solver.TopologySpread) []bool {
	keys := make([]string, 0, len(pod.Spread))
	for _, c := range pod.Spread {
		if c.WhenUnsatisfiable == solver.DoNotSchedule {
			keys = append(keys, c.TopologyKey)
		}
	}
	honor := sc.NodeAffinityPolicy != "Ignore"
	cacheKey := strings.Join(keys, ",") + "|" + fmt.Sprint(honor)
	if honor {
		b, _ := json.Marshal([]any{pod.NodeSelector, pod.Affinity})
		cacheKey += string(b)
	}
	if e, ok := s.eligible[cacheKey]; ok {
		return e
	}
	req := nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: corev1.PodSpec{NodeSelector: pod.NodeSelector, Affinity: v1NodeAffinity(pod.Affinity)}})
	e := make([]bool, len(s.nodes))
	for ni, l := range s.nodes {
		ok := true
		for _, k := range keys {
			if _, has := l[k]; !has {
				ok = false
			}
		}
		if ok && honor {
			match, err := req.Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: l}})
			ok = err == nil && match
		}
		e[ni] = ok
	}
	s.eligible[cacheKey] = e
	return e
}

// allowed reports whether pod i may go on node n given the pods placed so
// far, and if not, why.
func (s *orderSim) allowed(i, n int) string {
	pod := &s.p.Pods[i]
	node := s.nodes[n]
	for ci := range pod.Spread {
		sc := &pod.Spread[ci]
		if sc.WhenUnsatisfiable != solver.DoNotSchedule {
			continue
		}
		dom, ok := node[sc.TopologyKey]
		if !ok {
			return "spread: node lacks " + sc.TopologyKey
		}
		sg := s.mustSig([]string{pod.Namespace}, sc.Selector)
		counts := map[string]int{}
		for m, el := range s.eligibleNodes(pod, sc) {
			if el {
				counts[s.nodes[m][sc.TopologyKey]] += sg.count[m]
			}
		}
		minCount := -1
		for _, c := range counts {
			if minCount < 0 || c < minCount {
				minCount = c
			}
		}
		if minCount < 0 || int32(len(counts)) < sc.MinDomains {
			minCount = 0
		}
		self := 0
		if sg.matches[i] {
			self = 1
		}
		if counts[dom]+self-minCount > int(sc.MaxSkew) {
			return fmt.Sprintf("spread %s: %d+%d-%d > %d", sc.TopologyKey, counts[dom], self, minCount, sc.MaxSkew)
		}
	}
	for ti := range pod.PodAntiAffinity {
		t := &pod.PodAntiAffinity[ti]
		dom, ok := node[t.TopologyKey]
		if !ok {
			continue
		}
		sg := s.mustSig(termNamespaces(pod, t), t.Selector)
		for m, c := range sg.count {
			if c > 0 && s.nodes[m][t.TopologyKey] == dom {
				return "anti-affinity: a matching pod in " + dom
			}
		}
	}
	for ak, doms := range s.anti {
		if s.sigs[ak.sig].matches[i] {
			if dom, ok := node[ak.topology]; ok && doms[dom] {
				return "anti-affinity of a placed pod in " + dom
			}
		}
	}
	if len(pod.PodAffinity) > 0 {
		// A placed pod counts when it matches every term (kube-scheduler's
		// podMatchesAllAffinityTerms).
		var sigs []*orderSig
		for ti := range pod.PodAffinity {
			t := &pod.PodAffinity[ti]
			if _, ok := node[t.TopologyKey]; !ok {
				return "affinity: node lacks " + t.TopologyKey
			}
			sigs = append(sigs, s.mustSig(termNamespaces(pod, t), t.Selector))
		}
		matchesAll := func(q int) bool {
			for _, sg := range sigs {
				if !sg.matches[q] {
					return false
				}
			}
			return true
		}
		anywhere := false
		exist := make([]bool, len(sigs))
		for _, q := range s.placed {
			if !matchesAll(q) {
				continue
			}
			anywhere = true
			for ti := range pod.PodAffinity {
				key := pod.PodAffinity[ti].TopologyKey
				if v, ok := s.nodes[s.nodeOf[q]][key]; ok && v == node[key] {
					exist[ti] = true
				}
			}
		}
		if !anywhere {
			if !matchesAll(i) {
				return "affinity: no matching pod placed yet"
			}
		} else if slices.Contains(exist, false) {
			return "affinity: no matching pod in the node's domain"
		}
	}
	return ""
}

// place records pod i on its planned node.
func (s *orderSim) place(i int) {
	n := s.nodeOf[i]
	s.placed = append(s.placed, i)
	for _, sg := range s.sigs {
		if sg.matches[i] {
			sg.count[n]++
			sg.total++
		}
	}
	pod := &s.p.Pods[i]
	for ti := range pod.PodAntiAffinity {
		t := &pod.PodAntiAffinity[ti]
		dom, ok := s.nodes[n][t.TopologyKey]
		if !ok {
			continue
		}
		k := antiKey{sig: s.mustSig(termNamespaces(pod, t), t.Selector).key, topology: t.TopologyKey}
		if s.anti[k] == nil {
			s.anti[k] = map[string]bool{}
		}
		s.anti[k][dom] = true
	}
}

// judgeOrder returns the plan's placed pods in an order in which each is
// allowed on its planned node after the ones before it, and how many pods
// had to be released with no such pod left (stuck: each is a pod the plan
// puts where, at its turn, the scheduler's filters would refuse it; the
// scheduler then gives its verdict). It starts from a round robin over the
// planned nodes, zones interleaved, and takes the first allowed pod each
// time.
func judgeOrder(p *solver.Problem, plan *solver.Plan, nodeLabels []map[string]string) (order []int, stuck []string, err error) {
	s, err := newOrderSim(p, plan, nodeLabels)
	if err != nil {
		return nil, nil, err
	}
	// Nodes interleaved by zone, then their pods round robin.
	byZone := map[string][]int{}
	var zones []string
	for ni := range plan.NewNodes {
		z := plan.NewNodes[ni].Zone
		if _, ok := byZone[z]; !ok {
			zones = append(zones, z)
		}
		byZone[z] = append(byZone[z], ni)
	}
	sort.Strings(zones)
	var nodeOrder []int
	for r := 0; len(nodeOrder) < len(plan.NewNodes); r++ {
		for _, z := range zones {
			if r < len(byZone[z]) {
				nodeOrder = append(nodeOrder, byZone[z][r])
			}
		}
	}
	// The plan's late pods go after all the others, in the plan's order
	// (kube-scheduler binds them once the rest run).
	var rest []int
	for r := 0; ; r++ {
		added := false
		for _, ni := range nodeOrder {
			if r < len(plan.NewNodes[ni].Pods) {
				if i := plan.NewNodes[ni].Pods[r]; !slices.Contains(plan.Late, i) {
					rest = append(rest, i)
				}
				added = true
			}
		}
		if !added {
			break
		}
	}
	var late []int
	for _, i := range plan.Late {
		if s.nodeOf[i] >= 0 {
			late = append(late, i)
		}
	}
	for len(rest) > 0 || len(late) > 0 {
		if len(rest) == 0 {
			rest, late = late, nil
		}
		pick, why := -1, ""
		for k, i := range rest {
			reason := s.allowed(i, s.nodeOf[i])
			if reason == "" {
				pick = k
				break
			}
			if k == 0 {
				why = reason
			}
		}
		if pick < 0 {
			pick = 0
			stuck = append(stuck, fmt.Sprintf("%s on planned node %d: %s", p.Pods[rest[0]].Key(), s.nodeOf[rest[0]], why))
		}
		i := rest[pick]
		rest = slices.Delete(rest, pick, pick+1)
		s.place(i)
		order = append(order, i)
	}
	return order, stuck, nil
}

// v1Selector converts a solver selector to a Kubernetes label selector.
func v1Selector(sel solver.Selector) *metav1.LabelSelector {
	ls := &metav1.LabelSelector{MatchLabels: sel.MatchLabels}
	for _, r := range sel.MatchExpressions {
		ls.MatchExpressions = append(ls.MatchExpressions, metav1.LabelSelectorRequirement{Key: r.Key, Operator: metav1.LabelSelectorOperator(r.Operator), Values: r.Values})
	}
	return ls
}

// v1NodeAffinity converts required node affinity terms.
func v1NodeAffinity(terms []solver.Term) *corev1.Affinity {
	if len(terms) == 0 {
		return nil
	}
	sel := &corev1.NodeSelector{}
	for _, t := range terms {
		var term corev1.NodeSelectorTerm
		for _, r := range t {
			term.MatchExpressions = append(term.MatchExpressions, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOperator(r.Operator), Values: r.Values})
		}
		sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, term)
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: sel}}
}
