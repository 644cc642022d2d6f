package conformance

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"
)

// Well-known label keys.
const (
	labelZone         = "topology.kubernetes.io/zone"
	labelHostname     = "kubernetes.io/hostname"
	labelInstanceType = "node.kubernetes.io/instance-type"
	labelArch         = "kubernetes.io/arch"
	labelOS           = "kubernetes.io/os"
	labelCapacityType = "karpenter.sh/capacity-type"
	labelNodePool     = "karpenter.sh/nodepool"
)

// plan is the part of `explain -o json` the judge reads.
type plan struct {
	Nodes []struct {
		Name         string            `json:"name"`
		InstanceType string            `json:"instanceType"`
		CapacityType string            `json:"capacityType"`
		Zone         string            `json:"zone"`
		NodePool     string            `json:"nodePool"`
		PricePerHour float64           `json:"pricePerHour"`
		Pods         []string          `json:"pods"`
		Allocatable  map[string]string `json:"allocatable"`
		Labels       map[string]string `json:"labels"`
		Taints       []v1.Taint        `json:"taints"`
	} `json:"nodes"`
	TotalPricePerHour float64 `json:"totalPricePerHour"`
	Unschedulable     []struct {
		Pod    string `json:"pod"`
		Reason string `json:"reason"`
	} `json:"unschedulable"`
}

// instanceType is one entry of an --instance-types file, read by the judge itself.
type instanceType struct {
	Name         string            `json:"name"`
	CPU          resource.Quantity `json:"cpu"`
	Memory       resource.Quantity `json:"memory"`
	Pods         int64             `json:"pods"`
	GPU          int64             `json:"gpu"`
	Architecture string            `json:"architecture"`
	Overhead     struct {
		CPU    resource.Quantity `json:"cpu"`
		Memory resource.Quantity `json:"memory"`
	} `json:"overhead"`
	Offerings []struct {
		Zone         string  `json:"zone"`
		CapacityType string  `json:"capacityType"`
		Price        float64 `json:"price"`
	} `json:"offerings"`
}

func readTypes(path string) ([]instanceType, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		InstanceTypes []instanceType `json:"instanceTypes"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f.InstanceTypes, nil
}

// allocatable of a type as the judge models it: capacity less overhead.
func (t *instanceType) allocatable() v1.ResourceList {
	cpu, mem := t.CPU.DeepCopy(), t.Memory.DeepCopy()
	cpu.Sub(t.Overhead.CPU)
	mem.Sub(t.Overhead.Memory)
	out := v1.ResourceList{v1.ResourceCPU: cpu, v1.ResourceMemory: mem, v1.ResourcePods: *resource.NewQuantity(t.Pods, resource.DecimalSI)}
	if t.GPU > 0 {
		out["nvidia.com/gpu"] = *resource.NewQuantity(t.GPU, resource.DecimalSI)
	}
	return out
}

// node is a planned node, or one that could be launched, as a v1.Node.
type node struct {
	*v1.Node
	alloc   v1.ResourceList
	pods    []*v1.Pod
	planned bool
}

// judge holds one scenario's input and plan.
type judge struct {
	sc      *scenario
	pods    []*v1.Pod
	byKey   map[string]*v1.Pod
	types   []instanceType
	plan    *plan
	nodes   []*node // planned
	nodeOf  map[string]*node
	pending map[string]string // pod key -> reason
	// potential are the nodes every pool could launch, one per type,
	// offering and value of a multi-valued custom requirement.
	potential []*node
	errs      []string
}

func (j *judge) failf(format string, args ...any) {
	j.errs = append(j.errs, fmt.Sprintf(format, args...))
}

func podKey(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

func workloadOf(p *v1.Pod) string {
	return p.Name[:strings.LastIndex(p.Name, "-")]
}

// check runs every generic check and the scenario's expectations.
func (j *judge) check() []string {
	j.byKey = map[string]*v1.Pod{}
	for _, p := range j.pods {
		j.byKey[podKey(p)] = p
	}
	j.buildPotential()
	j.checkAccounting()
	j.checkNodes()
	for _, n := range j.nodes {
		j.checkNodePods(n)
		j.checkMinValues(n)
	}
	j.checkSpread()
	j.checkPodAffinity()
	j.checkExpectations()
	return j.errs
}

// checkAccounting: every pod is on exactly one node or pending, once.
func (j *judge) checkAccounting() {
	j.nodeOf = map[string]*node{}
	j.pending = map[string]string{}
	for _, pn := range j.plan.Nodes {
		n := &node{Node: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: pn.Name, Labels: map[string]string{}}, Spec: v1.NodeSpec{Taints: pn.Taints}}, planned: true}
		for k, v := range pn.Labels {
			n.Labels[k] = v
		}
		n.Labels[labelHostname] = pn.Name
		n.alloc = v1.ResourceList{}
		for k, v := range pn.Allocatable {
			q, err := resource.ParseQuantity(v)
			if err != nil {
				j.failf("node %s: allocatable %s=%q: %v", pn.Name, k, v, err)
				continue
			}
			n.alloc[v1.ResourceName(k)] = q
		}
		for _, key := range pn.Pods {
			p, ok := j.byKey[key]
			if !ok {
				j.failf("node %s: unknown pod %s", pn.Name, key)
				continue
			}
			if prev, dup := j.nodeOf[key]; dup {
				j.failf("pod %s on both %s and %s", key, prev.Name, pn.Name)
			}
			j.nodeOf[key] = n
			n.pods = append(n.pods, p)
		}
		j.nodes = append(j.nodes, n)
	}
	for _, u := range j.plan.Unschedulable {
		if _, ok := j.byKey[u.Pod]; !ok {
			j.failf("unknown pending pod %s", u.Pod)
		}
		if n, dup := j.nodeOf[u.Pod]; dup {
			j.failf("pod %s both pending and on %s", u.Pod, n.Name)
		}
		j.pending[u.Pod] = u.Reason
	}
	for _, p := range j.pods {
		_, placed := j.nodeOf[podKey(p)]
		_, pending := j.pending[podKey(p)]
		if !placed && !pending {
			j.failf("pod %s neither placed nor pending", podKey(p))
		}
	}
}

func (j *judge) pool(name string) *pool {
	for i := range j.sc.Pools {
		if j.sc.Pools[i].Name == name {
			return &j.sc.Pools[i]
		}
	}
	return nil
}

func (j *judge) typ(name string) *instanceType {
	for i := range j.types {
		if j.types[i].Name == name {
			return &j.types[i]
		}
	}
	return nil
}

// poolAllows judges node labels against a pool's requirements with
// Kubernetes' node selector semantics.
func poolAllows(p *pool, n *v1.Node) bool {
	if len(p.Requirements) == 0 {
		return true
	}
	sel, err := nodeaffinity.NewNodeSelector(&v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: p.selectorRequirements()}}})
	return err == nil && sel.Match(n)
}

// checkNodes: each planned node is a real offering of its type, in a pool
// whose requirements, labels and taints it carries.
func (j *judge) checkNodes() {
	for i, pn := range j.plan.Nodes {
		n := j.nodes[i]
		p := j.pool(pn.NodePool)
		t := j.typ(pn.InstanceType)
		if p == nil || t == nil {
			j.failf("node %s: unknown pool %q or type %q", pn.Name, pn.NodePool, pn.InstanceType)
			continue
		}
		offered := false
		for _, o := range t.Offerings {
			if o.Zone == pn.Zone && o.CapacityType == pn.CapacityType {
				offered = true
				if diff := o.Price - pn.PricePerHour; diff > 1e-9 || diff < -1e-9 {
					j.failf("node %s: price %v, offering costs %v", pn.Name, pn.PricePerHour, o.Price)
				}
			}
		}
		if !offered {
			j.failf("node %s: %s has no %s offering in %s", pn.Name, t.Name, pn.CapacityType, pn.Zone)
		}
		for k, want := range map[string]string{labelZone: pn.Zone, labelCapacityType: pn.CapacityType, labelInstanceType: t.Name, labelNodePool: p.Name} {
			if got := n.Labels[k]; got != want {
				j.failf("node %s: label %s=%q, want %q", pn.Name, k, got, want)
			}
		}
		for k, v := range p.Labels {
			if n.Labels[k] != v {
				j.failf("node %s: pool label %s=%s missing", pn.Name, k, v)
			}
		}
		if !poolAllows(p, n.Node) {
			j.failf("node %s: labels %v break pool %s's requirements", pn.Name, n.Labels, p.Name)
		}
		for _, want := range p.Taints {
			if !slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.MatchTaint(&want) }) {
				j.failf("node %s: pool taint %s missing", pn.Name, want.ToString())
			}
		}
		for k, q := range n.alloc {
			if c, ok := t.allocatable()[k]; ok && q.Cmp(c) > 0 {
				j.failf("node %s: allocatable %s %s above the type's %s", pn.Name, k, q.String(), c.String())
			}
		}
	}
}

// checkMinValues: a node of a pool whose requirements have minValues is
// one Karpenter could launch (kubernetes-sigs/karpenter scheduling
// nodeclaim.go, filterInstanceTypesByRequirements): the types with an
// offering the pool allows, that every pod of the node may run on and
// that hold the pods together, carry at least minValues distinct values
// of each such key (the largest minValues where several requirements name
// one key).
func (j *judge) checkMinValues(n *node) {
	p := j.pool(n.Labels[labelNodePool])
	if p == nil {
		return
	}
	mins := map[string]int{}
	for _, r := range p.Requirements {
		if r.MinValues != nil {
			mins[r.Key] = max(mins[r.Key], *r.MinValues)
		}
	}
	if len(mins) == 0 {
		return
	}
	values := map[string]map[string]bool{}
	for k := range mins {
		values[k] = map[string]bool{}
	}
	for i := range j.types {
		t := &j.types[i]
		if fits(n.pods, t.allocatable()) != nil {
			continue
		}
		for _, o := range t.Offerings {
			l := map[string]string{}
			for k, v := range n.Labels {
				l[k] = v
			}
			l[labelInstanceType], l[labelArch], l[labelZone], l[labelCapacityType] = t.Name, orDefault(t.Architecture, "amd64"), o.Zone, o.CapacityType
			cand := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: l}, Spec: n.Spec}
			if !poolAllows(p, cand) || slices.ContainsFunc(n.pods, func(pod *v1.Pod) bool { return allowed(pod, cand) != nil }) {
				continue
			}
			for k := range mins {
				if v, ok := l[k]; ok {
					values[k][v] = true
				}
			}
		}
	}
	for k, m := range mins {
		if len(values[k]) < m {
			j.failf("node %s: pool %s needs %d values of %s (minValues), the types that hold its pods carry %d", n.Name, p.Name, m, k, len(values[k]))
		}
	}
}

// allowed: node affinity, node selector and taints, with Kubernetes' helpers.
func allowed(p *v1.Pod, n *v1.Node) error {
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(n); err != nil || !ok {
		return fmt.Errorf("node affinity/selector not satisfied")
	}
	if t, bad := corev1helper.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, p.Spec.Tolerations, func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}, false); bad {
		return fmt.Errorf("taint %s not tolerated", t.ToString())
	}
	return nil
}

func requests(p *v1.Pod) v1.ResourceList {
	return resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
}

// fits: the pods' summed requests within allocatable, pods counted.
func fits(pods []*v1.Pod, alloc v1.ResourceList) error {
	sum := v1.ResourceList{}
	for _, p := range pods {
		for k, q := range requests(p) {
			s := sum[k]
			s.Add(q)
			sum[k] = s
		}
	}
	for k, q := range sum {
		if q.IsZero() {
			continue
		}
		a := alloc[k]
		if q.Cmp(a) > 0 {
			return fmt.Errorf("%s requested %s > allocatable %s", k, q.String(), a.String())
		}
	}
	if a, ok := alloc[v1.ResourcePods]; ok && int64(len(pods)) > a.Value() {
		return fmt.Errorf("%d pods > allocatable %d", len(pods), a.Value())
	}
	return nil
}

// checkNodePods: each node's pods are allowed there, fit, and use distinct host ports.
func (j *judge) checkNodePods(n *node) {
	for _, p := range n.pods {
		if err := allowed(p, n.Node); err != nil {
			j.failf("pod %s on %s: %v", podKey(p), n.Name, err)
		}
	}
	if err := fits(n.pods, n.alloc); err != nil {
		j.failf("node %s: %v", n.Name, err)
	}
	type port struct {
		proto string
		port  int32
	}
	used := map[port][]string{}
	for _, p := range n.pods {
		for _, c := range p.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.HostPort == 0 {
					continue
				}
				proto := string(cp.Protocol)
				if proto == "" {
					proto = "TCP"
				}
				k := port{proto, cp.HostPort}
				for _, ip := range used[k] {
					if ip == cp.HostIP || ip == "" || ip == "0.0.0.0" || cp.HostIP == "" || cp.HostIP == "0.0.0.0" {
						j.failf("node %s: host port %s/%d used twice (pod %s)", n.Name, proto, cp.HostPort, podKey(p))
					}
				}
				used[k] = append(used[k], cp.HostIP)
			}
		}
	}
}

// withinLimits: a pool's limits leave room for one node of that size.
func withinLimits(p *pool, alloc v1.ResourceList) bool {
	for r, limit := range p.Limits {
		if q, ok := alloc[v1.ResourceName(r)]; ok && q.Cmp(limit) > 0 {
			return false
		}
	}
	return true
}

// buildPotential lists the nodes each pool could launch.
func (j *judge) buildPotential() {
	for pi := range j.sc.Pools {
		p := &j.sc.Pools[pi]
		// Custom keys the pool requires with In but does not label fix
		// one value per node: one potential node per value.
		variants := []map[string]string{{}}
		for _, r := range p.Requirements {
			if r.Operator != v1.NodeSelectorOpIn || p.Labels[r.Key] != "" || wellKnown(r.Key) {
				continue
			}
			var next []map[string]string
			for _, v := range variants {
				for _, val := range r.Values {
					m := map[string]string{r.Key: val}
					for k, x := range v {
						m[k] = x
					}
					next = append(next, m)
				}
			}
			variants = next
		}
		for ti := range j.types {
			t := &j.types[ti]
			for _, o := range t.Offerings {
				for _, v := range variants {
					// A node yet to launch has a hostname of its own, so it
					// is an empty hostname domain.
					l := map[string]string{labelInstanceType: t.Name, labelArch: orDefault(t.Architecture, "amd64"), labelOS: "linux",
						labelZone: o.Zone, labelCapacityType: o.CapacityType, labelNodePool: p.Name, labelHostname: "potential"}
					for k, x := range p.Labels {
						l[k] = x
					}
					for k, x := range v {
						l[k] = x
					}
					n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "potential", Labels: l}, Spec: v1.NodeSpec{Taints: p.Taints}}
					if poolAllows(p, n) && withinLimits(p, t.allocatable()) {
						j.potential = append(j.potential, &node{Node: n, alloc: t.allocatable()})
					}
				}
			}
		}
	}
}

func wellKnown(k string) bool {
	switch k {
	case labelZone, labelInstanceType, labelArch, labelOS, labelCapacityType, labelNodePool, labelHostname:
		return true
	}
	return strings.HasPrefix(k, "karpenter.k8s.aws/") || strings.HasPrefix(k, "node.kubernetes.io/")
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// spreadSelector is a constraint's selector with matchLabelKeys folded in.
func spreadSelector(p *v1.Pod, c *v1.TopologySpreadConstraint) (labels.Selector, error) {
	if c.LabelSelector == nil {
		return labels.Nothing(), nil
	}
	ls := c.LabelSelector.DeepCopy()
	for _, k := range c.MatchLabelKeys {
		if v, ok := p.Labels[k]; ok {
			ls.MatchExpressions = append(ls.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{v}})
		}
	}
	return metav1.LabelSelectorAsSelector(ls)
}

// eligible: does a node count for a pod's spread constraint.
func eligible(p *v1.Pod, c *v1.TopologySpreadConstraint, n *v1.Node) bool {
	if _, ok := n.Labels[c.TopologyKey]; !ok {
		return false
	}
	if c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == v1.NodeInclusionPolicyHonor {
		if ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(n); err != nil || !ok {
			return false
		}
	}
	if c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor {
		if _, bad := corev1helper.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, p.Spec.Tolerations, func(t *v1.Taint) bool {
			return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
		}, false); bad {
			return false
		}
	}
	return true
}

// checkSpread: for every placed pod and DoNotSchedule constraint, its
// domain holds at most maxSkew more matching pods than the emptiest
// domain it could have used (domains of planned nodes and of nodes the
// pools could launch for it; a hostname constraint always has an empty
// new node). Judging the final state this way is what kube-scheduler's
// per-pod filter allows when pods are added emptiest domain first.
func (j *judge) checkSpread() {
	for _, p := range j.pods {
		n := j.nodeOf[podKey(p)]
		if n == nil {
			continue
		}
		for ci := range p.Spec.TopologySpreadConstraints {
			c := &p.Spec.TopologySpreadConstraints[ci]
			if c.WhenUnsatisfiable != v1.DoNotSchedule {
				continue
			}
			sel, err := spreadSelector(p, c)
			if err != nil {
				continue
			}
			dom, ok := n.Labels[c.TopologyKey]
			if !ok {
				j.failf("pod %s: node %s lacks spread key %s", podKey(p), n.Name, c.TopologyKey)
				continue
			}
			counts := map[string]int{}
			for _, m := range j.nodes {
				if !eligible(p, c, m.Node) {
					continue
				}
				d := m.Labels[c.TopologyKey]
				if c.TopologyKey == labelHostname {
					d = m.Name
				}
				if _, seen := counts[d]; !seen {
					counts[d] = 0
				}
				for _, q := range m.pods {
					if q.Namespace == p.Namespace && sel.Matches(labels.Set(q.Labels)) {
						counts[d]++
					}
				}
			}
			canGrow := false
			for _, m := range j.potential {
				// A domain no final node is in counts only where the pod
				// itself could get a node: kube-scheduler sees nodes,
				// not pools, so once the planned nodes exist it binds
				// pods there as if a domain no pod can reach (a pool
				// whose taints the pod does not tolerate, or without
				// room under its limits) were not there.
				if !eligible(p, c, m.Node) || fits([]*v1.Pod{p}, m.alloc) != nil || allowed(p, m.Node) != nil {
					continue
				}
				canGrow = true
				if d := m.Labels[c.TopologyKey]; c.TopologyKey != labelHostname {
					if _, seen := counts[d]; !seen {
						counts[d] = 0
					}
				}
			}
			minCount := -1
			for _, v := range counts {
				if minCount < 0 || v < minCount {
					minCount = v
				}
			}
			if c.TopologyKey == labelHostname && canGrow {
				minCount = 0
			}
			if c.MinDomains != nil && int32(len(counts)) < *c.MinDomains {
				minCount = 0
			}
			if skew := counts[dom] - minCount; skew > int(c.MaxSkew) {
				j.failf("pod %s: spread on %s skew %d > maxSkew %d (counts %v)", podKey(p), c.TopologyKey, skew, c.MaxSkew, counts)
			}
		}
	}
}

// termMatches: does pod q match a pod (anti-)affinity term of pod p.
func termMatches(p *v1.Pod, t *v1.PodAffinityTerm, q *v1.Pod) bool {
	ns := t.Namespaces
	switch {
	case t.NamespaceSelector != nil && len(t.NamespaceSelector.MatchLabels) == 0 && len(t.NamespaceSelector.MatchExpressions) == 0:
		// every namespace
	case len(ns) == 0 && t.NamespaceSelector == nil:
		if q.Namespace != p.Namespace {
			return false
		}
	default:
		if !slices.Contains(ns, q.Namespace) {
			return false
		}
	}
	if t.LabelSelector == nil {
		return false
	}
	ls := t.LabelSelector.DeepCopy()
	for _, k := range t.MatchLabelKeys {
		if v, ok := p.Labels[k]; ok {
			ls.MatchExpressions = append(ls.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{v}})
		}
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	return err == nil && sel.Matches(labels.Set(q.Labels))
}

// checkPodAffinity: required anti-affinity never shares a domain with a
// matching pod; required affinity always does, unless no other pod
// matches anywhere and the pod matches its own term (the first of a group).
func (j *judge) checkPodAffinity() {
	for _, p := range j.pods {
		n := j.nodeOf[podKey(p)]
		if n == nil || p.Spec.Affinity == nil {
			continue
		}
		if a := p.Spec.Affinity.PodAntiAffinity; a != nil {
			for ti := range a.RequiredDuringSchedulingIgnoredDuringExecution {
				t := &a.RequiredDuringSchedulingIgnoredDuringExecution[ti]
				dom, ok := n.Labels[t.TopologyKey]
				if !ok {
					continue
				}
				for _, m := range j.nodes {
					if m.Labels[t.TopologyKey] != dom {
						continue
					}
					for _, q := range m.pods {
						if q != p && termMatches(p, t, q) {
							j.failf("pod %s: anti-affinity on %s broken by %s on %s", podKey(p), t.TopologyKey, podKey(q), m.Name)
						}
					}
				}
			}
		}
		if a := p.Spec.Affinity.PodAffinity; a != nil {
			for ti := range a.RequiredDuringSchedulingIgnoredDuringExecution {
				t := &a.RequiredDuringSchedulingIgnoredDuringExecution[ti]
				dom, ok := n.Labels[t.TopologyKey]
				if !ok {
					j.failf("pod %s: node %s lacks affinity key %s", podKey(p), n.Name, t.TopologyKey)
					continue
				}
				var doms []string
				near := false
				for _, m := range j.nodes {
					for _, q := range m.pods {
						if q == p || !termMatches(p, t, q) {
							continue
						}
						doms = append(doms, m.Labels[t.TopologyKey])
						if m.Labels[t.TopologyKey] == dom {
							near = true
						}
					}
				}
				// Pending pods do not count: kube-scheduler's InterPodAffinity
				// filter counts the pods on nodes, so the first pod of a
				// self-affine group starts its domain while the others
				// wait (k8s.io/kubernetes pkg/scheduler/framework/plugins/
				// interpodaffinity/filtering.go, getIncomingAffinityAntiAffinityCounts
				// and satisfyPodAffinity).
				switch {
				case near:
					// A matching pod shares the domain; a self-affine group
					// must also share one domain (its first pod opened it).
					if termMatches(p, t, p) && onlySelfAffine(j, p, t) {
						for _, d := range doms {
							if d != dom && d != "" {
								j.failf("pod %s: self-affine group split over %s domains %s and %s", podKey(p), t.TopologyKey, dom, d)
								break
							}
						}
					}
				case len(doms) == 0 && termMatches(p, t, p):
					// The first pod of its group.
				default:
					j.failf("pod %s: affinity on %s: no matching pod in %s %q", podKey(p), t.TopologyKey, t.TopologyKey, dom)
				}
			}
		}
	}
}

// onlySelfAffine: every pod matching the term carries the same term, so
// the group had to start in one domain.
func onlySelfAffine(j *judge, p *v1.Pod, t *v1.PodAffinityTerm) bool {
	for _, q := range j.pods {
		if q == p || !termMatches(p, t, q) {
			continue
		}
		if q.Spec.Affinity == nil || q.Spec.Affinity.PodAffinity == nil {
			return false
		}
		same := false
		for _, u := range q.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if u.TopologyKey == t.TopologyKey && termMatches(q, &u, p) {
				same = true
			}
		}
		if !same {
			return false
		}
	}
	return true
}

// checkExpectations judges the scenario's own expectations.
func (j *judge) checkExpectations() {
	e := &j.sc.Expect
	total := map[string]int{}
	pending := map[string]int{}
	for _, p := range j.pods {
		w := workloadOf(p)
		total[w]++
		if _, ok := j.pending[podKey(p)]; ok {
			pending[w]++
		}
	}
	for w := range e.Pending {
		if _, ok := total[w]; !ok {
			j.failf("expect.pending: unknown workload %q", w)
		}
	}
	for w, n := range total {
		want := 0
		if s, ok := e.Pending[w]; ok {
			if s == "any" {
				continue
			}
			if s == "all" {
				want = n
			} else if v, err := strconv.Atoi(s); err == nil {
				want = v
			} else {
				j.failf("expect.pending[%s]: %q is not a number or all", w, s)
			}
		}
		if pending[w] != want {
			j.failf("%s: %d of %d pods pending, want %d", w, pending[w], n, want)
		}
	}
	for w, phrase := range e.Reason {
		for _, p := range j.pods {
			if workloadOf(p) != w {
				continue
			}
			if r, ok := j.pending[podKey(p)]; ok && !strings.Contains(strings.ToLower(r), strings.ToLower(phrase)) {
				j.failf("pod %s: reason %q does not mention %q", podKey(p), r, phrase)
			}
		}
	}
	nodesOf := func(w string) map[*node]bool {
		out := map[*node]bool{}
		for _, p := range j.pods {
			if workloadOf(p) == w {
				if n := j.nodeOf[podKey(p)]; n != nil {
					out[n] = true
				}
			}
		}
		return out
	}
	for w, want := range e.Labels {
		for n := range nodesOf(w) {
			for k, v := range want {
				if got, ok := n.Labels[k]; !ok || got != v {
					j.failf("%s: node %s has %s=%q, want %q", w, n.Name, k, got, v)
				}
			}
		}
	}
	for w, bad := range e.NotLabels {
		for n := range nodesOf(w) {
			for _, kv := range bad {
				k, v, withValue := strings.Cut(kv, "=")
				if got, ok := n.Labels[k]; ok && (!withValue || got == v) {
					j.failf("%s: node %s has %s=%s", w, n.Name, k, got)
				}
			}
		}
	}
	for w, keys := range e.Taints {
		for n := range nodesOf(w) {
			for _, k := range keys {
				if !slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == k }) {
					j.failf("%s: node %s lacks taint %s", w, n.Name, k)
				}
			}
		}
	}
	for w, types := range e.InstanceTypes {
		for n := range nodesOf(w) {
			if !slices.Contains(types, n.Labels[labelInstanceType]) {
				j.failf("%s: node %s is %s, want one of %v", w, n.Name, n.Labels[labelInstanceType], types)
			}
		}
	}
	for w, max := range e.NodesOf {
		if got := len(nodesOf(w)); got != max {
			j.failf("%s: on %d nodes, want %d", w, got, max)
		}
	}
	if e.MaxPricePerHour != nil && j.plan.TotalPricePerHour > *e.MaxPricePerHour+1e-6 {
		j.failf("plan costs $%.4f/h, want at most $%.4f/h", j.plan.TotalPricePerHour, *e.MaxPricePerHour)
	}
	if e.Nodes != nil && len(j.nodes) != *e.Nodes {
		j.failf("%d nodes, want %d", len(j.nodes), *e.Nodes)
	}
	if e.MinNodes != nil && len(j.nodes) < *e.MinNodes {
		j.failf("%d nodes, want at least %d", len(j.nodes), *e.MinNodes)
	}
	if e.MaxNodes != nil && len(j.nodes) > *e.MaxNodes {
		j.failf("%d nodes, want at most %d", len(j.nodes), *e.MaxNodes)
	}
	for _, group := range e.SameNode {
		all := map[*node]bool{}
		for _, w := range group {
			for n := range nodesOf(w) {
				all[n] = true
			}
		}
		if len(all) > 1 {
			j.failf("%v: on %d nodes, want one", group, len(all))
		}
	}
	for _, d := range e.Domains {
		counts := map[string]int{}
		for _, p := range j.pods {
			if !slices.Contains(d.Workloads, workloadOf(p)) {
				continue
			}
			n := j.nodeOf[podKey(p)]
			if n == nil {
				continue
			}
			counts[n.Labels[d.Key]]++
		}
		var got []int
		for _, c := range counts {
			got = append(got, c)
		}
		sort.Sort(sort.Reverse(sort.IntSlice(got)))
		if d.Counts != nil && !slices.Equal(got, d.Counts) {
			j.failf("%v over %s: counts %v (%v), want %v", d.Workloads, d.Key, got, counts, d.Counts)
		}
		if d.MinDomains > 0 && len(counts) < d.MinDomains {
			j.failf("%v over %s: %d domains (%v), want at least %d", d.Workloads, d.Key, len(counts), counts, d.MinDomains)
		}
		for dom := range counts {
			if d.Only != nil && !slices.Contains(d.Only, dom) {
				j.failf("%v over %s: pods in %q, want only %v", d.Workloads, d.Key, dom, d.Only)
			}
		}
		if d.MaxSkew != nil {
			of := d.Of
			if of == nil {
				for dom := range counts {
					of = append(of, dom)
				}
			}
			lo, hi := -1, 0
			for _, dom := range of {
				c := counts[dom]
				if lo < 0 || c < lo {
					lo = c
				}
				hi = max(hi, c)
			}
			if hi-lo > *d.MaxSkew {
				j.failf("%v over %s: skew %d (%v), want at most %d", d.Workloads, d.Key, hi-lo, counts, *d.MaxSkew)
			}
		}
	}
}
