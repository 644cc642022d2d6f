// Package check verifies a solver plan from scratch, independently of the
// solver's own code paths and with Kubernetes' own helpers as the judge of
// node affinity and taints. Tests and fuzzers run every plan through it.
package check

import (
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// Plan verifies a plan: every pod is placed exactly once or reported with a
// reason, every placement is allowed and fits, prices match offerings, no
// pool exceeds its limits, and the lower bound is not above the cost.
// Topology is judged on the final nodes, as kube-scheduler would see them.
func Plan(p *solver.Problem, plan *solver.Plan) error {
	return checkPlan(p, plan, false)
}

// PlanWithPoolDomains is Plan judging DoNotSchedule spread as Karpenter
// does: besides the final nodes' domains, every domain the pools could
// launch a node into for the pod counts (empty unless a final node is
// there), whether or not the pool's limits leave room for it. The solver
// plans spread this way; Plan accepts plans, such as naive baselines', that
// only kube-scheduler's view allows.
func PlanWithPoolDomains(p *solver.Problem, plan *solver.Plan) error {
	return checkPlan(p, plan, true)
}

// checkPlan is Plan and PlanWithPoolDomains, judging spread with the pools'
// domains when poolDomains is set.
func checkPlan(p *solver.Problem, plan *solver.Plan, poolDomains bool) error {
	seen := make([]int, len(p.Pods))
	for _, u := range plan.Unschedulable {
		if u.Pod < 0 || u.Pod >= len(p.Pods) {
			return fmt.Errorf("unschedulable pod index %d out of range", u.Pod)
		}
		if u.Reason == "" {
			return fmt.Errorf("pod %s unschedulable without a reason", p.Pods[u.Pod].Key())
		}
		seen[u.Pod]++
	}
	if err := checkExisting(p, plan, seen); err != nil {
		return err
	}
	used := make(map[string]solver.Resources)
	total := 0.0
	for ni, n := range plan.NewNodes {
		pool, it, err := checkNewNode(p, ni, &n, seen)
		if err != nil {
			return err
		}
		used[pool.Name] = used[pool.Name].Add(it.Capacity)
		total += n.Price
	}
	for i := range p.Pools {
		pool := &p.Pools[i]
		u := used[pool.Name].Add(pool.Used)
		for r := range u {
			if pool.HasLimit[r] && u[r] > pool.Limits[r] {
				return fmt.Errorf("pool %s exceeds its %s limit: %d > %d", pool.Name, p.ResourceName(r), u[r], pool.Limits[r])
			}
		}
	}
	for i, n := range seen {
		if n != 1 {
			return fmt.Errorf("pod %s appears %d times in the plan", p.Pods[i].Key(), n)
		}
	}
	if math.Abs(total-plan.TotalPrice) > 1e-4 {
		return fmt.Errorf("total price %v, nodes sum to %v", plan.TotalPrice, total)
	}
	if plan.LowerBound > plan.TotalPrice+1e-6 {
		return fmt.Errorf("lower bound %v above the plan's cost %v", plan.LowerBound, plan.TotalPrice)
	}
	return topology(p, plan, poolDomains)
}

// checkExisting verifies the placements on existing nodes, counting each
// placed pod in seen: every pod index is in range, every node is known and
// not cordoned, every pod is allowed there, no two pods' host ports clash
// on a node, and no node is overcommitted.
func checkExisting(p *solver.Problem, plan *solver.Plan, seen []int) error {
	free := map[string]solver.Resources{}
	for i := range p.Nodes {
		free[p.Nodes[i].Name] = p.Nodes[i].Allocatable.Sub(p.Nodes[i].Requested)
	}
	for _, e := range plan.Existing {
		if e.Pod < 0 || e.Pod >= len(p.Pods) {
			return fmt.Errorf("existing placement: pod index %d out of range", e.Pod)
		}
		seen[e.Pod]++
		var node *solver.Node
		for i := range p.Nodes {
			if p.Nodes[i].Name == e.Node {
				node = &p.Nodes[i]
			}
		}
		if node == nil {
			return fmt.Errorf("pod %s placed on unknown node %s", p.Pods[e.Pod].Key(), e.Node)
		}
		if node.Unschedulable {
			return fmt.Errorf("pod %s placed on cordoned node %s", p.Pods[e.Pod].Key(), e.Node)
		}
		if err := Allowed(&p.Pods[e.Pod], node.Labels, node.Taints); err != nil {
			return fmt.Errorf("pod %s on existing node %s: %w", p.Pods[e.Pod].Key(), e.Node, err)
		}
		free[e.Node] = free[e.Node].Sub(p.Pods[e.Pod].Requests)
	}
	for i := range p.Nodes {
		n := &p.Nodes[i]
		var bound [][]solver.HostPort
		for j := range n.Pods {
			bound = append(bound, n.Pods[j].HostPorts)
		}
		for _, e := range plan.Existing {
			if e.Node == n.Name {
				bound = append(bound, p.Pods[e.Pod].HostPorts)
			}
		}
		if err := hostPortClash(bound); err != nil {
			return fmt.Errorf("existing node %s: %w", n.Name, err)
		}
	}
	for name, f := range free {
		if !(solver.Resources{}).Fits(f) {
			return fmt.Errorf("existing node %s overcommitted: free %v", name, f)
		}
	}
	return nil
}

// checkNewNode verifies new node ni of the plan, counting each pod on it in
// seen: its instance type is offered at its zone, capacity type and price,
// it meets its pool's requirements, its pods are allowed on it, fit in its
// allocatable after overhead and DaemonSets, and bind no clashing host
// ports. It returns the node's pool and instance type.
func checkNewNode(p *solver.Problem, ni int, n *solver.NewNode, seen []int) (*solver.Pool, *solver.InstanceType, error) {
	pool, it, err := lookup(p, n)
	if err != nil {
		return nil, nil, fmt.Errorf("node %d: %w", ni, err)
	}
	offered := false
	for _, o := range it.Offerings {
		if o.Zone == n.Zone && o.CapacityType == n.CapacityType && o.Price == n.Price {
			offered = true
		}
	}
	if !offered {
		return nil, nil, fmt.Errorf("node %d: %s %s %s at %v is not an offering", ni, n.InstanceType, n.Zone, n.CapacityType, n.Price)
	}
	labels, _ := newNodeLabels(p, n)
	for _, r := range pool.Requirements {
		if !r.Matches(solver.MapLabels(labels)) {
			return nil, nil, fmt.Errorf("node %d (%s): pool %s requirement %v not met", ni, n.InstanceType, pool.Name, r)
		}
	}
	capacity := it.Capacity
	for j, name := range p.ExtendedResources { // named capacity (InstanceType.Extended)
		if v, ok := it.Extended[name]; ok && capacity[solver.NumFixedResources+j] == 0 {
			capacity[solver.NumFixedResources+j] = v
		}
	}
	capacity = capacity.Sub(it.Overhead)
	for _, ds := range p.DaemonSets {
		if allowedDS(&ds, labels, pool.Taints) {
			capacity = capacity.Sub(ds.Requests)
		}
	}
	var sum solver.Resources
	for _, pi := range n.Pods {
		if pi < 0 || pi >= len(p.Pods) {
			return nil, nil, fmt.Errorf("new node %d: pod index %d out of range", ni, pi)
		}
		seen[pi]++
		if err := Allowed(&p.Pods[pi], labels, pool.Taints); err != nil {
			return nil, nil, fmt.Errorf("pod %s on new node %d (%s): %w", p.Pods[pi].Key(), ni, n.InstanceType, err)
		}
		req := p.Pods[pi].Requests
		req[solver.Pods] = max(req[solver.Pods], 1)
		sum = sum.Add(req)
	}
	if !sum.Fits(capacity) {
		return nil, nil, fmt.Errorf("new node %d (%s) overcommitted: requests %v, allocatable %v", ni, n.InstanceType, sum, capacity)
	}
	var bound [][]solver.HostPort
	for _, ds := range p.DaemonSets {
		if allowedDS(&ds, labels, pool.Taints) {
			bound = append(bound, ds.HostPorts)
		}
	}
	for _, pi := range n.Pods {
		bound = append(bound, p.Pods[pi].HostPorts)
	}
	if err := hostPortClash(bound); err != nil {
		return nil, nil, fmt.Errorf("new node %d (%s): %w", ni, n.InstanceType, err)
	}
	return pool, it, nil
}

// hostPortClash applies kube-scheduler's NodePorts filter to the host ports
// each pod on one node binds: two bindings clash on the same port and
// protocol (TCP when unset) unless both name different host IPs (an empty
// IP or 0.0.0.0 is every IP).
func hostPortClash(pods [][]solver.HostPort) error {
	type bindingKey struct {
		port     int32
		protocol string
	}
	ips := map[bindingKey][]string{}
	for _, ports := range pods {
		mine := map[bindingKey][]string{}
		for _, h := range ports {
			if h.Port <= 0 {
				continue
			}
			k := bindingKey{h.Port, h.Protocol}
			if k.protocol == "" {
				k.protocol = "TCP"
			}
			ip := h.HostIP
			if ip == "" {
				ip = "0.0.0.0"
			}
			for _, other := range ips[k] {
				if ip == "0.0.0.0" || other == "0.0.0.0" || ip == other {
					return fmt.Errorf("host port %d/%s bound twice (%s and %s)", k.port, k.protocol, other, ip)
				}
			}
			mine[k] = append(mine[k], ip)
		}
		for k, v := range mine {
			ips[k] = append(ips[k], v...)
		}
	}
	return nil
}

// Cost is what the plan's new nodes cost per hour, summed from the
// problem's offerings rather than from the plan's own prices (the cheapest
// offering of the node's type, zone and capacity type; 0 for one that is not
// offered, which Plan reports).
func Cost(p *solver.Problem, plan *solver.Plan) float64 {
	total := 0.0
	for _, n := range plan.NewNodes {
		price := -1.0
		types := poolTypes(p, n.Pool)
		for i := range types {
			if types[i].Name != n.InstanceType {
				continue
			}
			for _, o := range types[i].Offerings {
				if o.Zone == n.Zone && o.CapacityType == n.CapacityType && (price < 0 || o.Price < price) {
					price = o.Price
				}
			}
		}
		total += max(price, 0)
	}
	return total
}

// poolTypes returns the instance types of the named pool: its own when it
// has them, else the problem's.
func poolTypes(p *solver.Problem, pool string) []solver.InstanceType {
	for i := range p.Pools {
		if p.Pools[i].Name == pool {
			return p.PoolTypes(i)
		}
	}
	return p.InstanceTypes
}

// lookup finds a planned node's pool and instance type.
func lookup(p *solver.Problem, n *solver.NewNode) (*solver.Pool, *solver.InstanceType, error) {
	var pool *solver.Pool
	for i := range p.Pools {
		if p.Pools[i].Name == n.Pool {
			pool = &p.Pools[i]
		}
	}
	var it *solver.InstanceType
	types := poolTypes(p, n.Pool)
	for i := range types {
		if types[i].Name == n.InstanceType {
			it = &types[i]
		}
	}
	if pool == nil || it == nil {
		return nil, nil, fmt.Errorf("unknown pool %q or type %q", n.Pool, n.InstanceType)
	}
	return pool, it, nil
}

// newNodeLabels are the labels a planned node carries: its instance type's,
// its pool's, then the pool name, zone and capacity type.
func newNodeLabels(p *solver.Problem, n *solver.NewNode) (map[string]string, error) {
	pool, it, err := lookup(p, n)
	if err != nil {
		return nil, err
	}
	labels := make(map[string]string, len(it.Labels)+len(pool.Labels)+3)
	for k, v := range it.Labels {
		labels[k] = v
	}
	for k, v := range pool.Labels {
		labels[k] = v
	}
	for k, v := range n.Labels {
		labels[k] = v
	}
	labels[solver.LabelNodePool] = pool.Name
	labels[solver.LabelZone] = n.Zone
	labels[solver.LabelCapacityType] = n.CapacityType
	// Selectors on deprecated keys (beta.kubernetes.io/arch, ...) match
	// the current keys' values, as Karpenter normalises them.
	for _, old := range []string{"failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
		"beta.kubernetes.io/arch", "beta.kubernetes.io/os", "beta.kubernetes.io/instance-type"} {
		if v, ok := labels[solver.NormalizeLabelKey(old)]; ok {
			labels[old] = v
		}
	}
	return labels, nil
}

// Allowed judges a pod against a node's labels and taints with Kubernetes' helpers.
func Allowed(pod *solver.Pod, labels map[string]string, taints []solver.Taint) error {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: v1.NodeSpec{Taints: toV1Taints(taints)}}
	if ok, err := nodeaffinity.NewRequiredNodeAffinity(pod.NodeSelector, toV1Affinity(pod.Affinity)).Match(node); err != nil || !ok {
		return fmt.Errorf("node affinity not satisfied by %v", labels)
	}
	if t, bad := corev1.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, toV1Tolerations(pod.Tolerations), func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}, false); bad {
		return fmt.Errorf("taint %v not tolerated", t)
	}
	return nil
}

func allowedDS(ds *solver.DaemonSet, labels map[string]string, taints []solver.Taint) bool {
	return Allowed(&solver.Pod{NodeSelector: ds.NodeSelector, Affinity: ds.Affinity, Tolerations: ds.Tolerations}, labels, taints) == nil
}

func toV1Affinity(terms []solver.Term) *v1.Affinity {
	if len(terms) == 0 {
		return nil
	}
	sel := &v1.NodeSelector{}
	for _, t := range terms {
		var term v1.NodeSelectorTerm
		for _, r := range t {
			term.MatchExpressions = append(term.MatchExpressions, v1.NodeSelectorRequirement{Key: r.Key, Operator: v1.NodeSelectorOperator(r.Operator), Values: r.Values})
		}
		sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, term)
	}
	return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: sel}}
}

func toV1Taints(taints []solver.Taint) []v1.Taint {
	out := make([]v1.Taint, len(taints))
	for i, t := range taints {
		out[i] = v1.Taint{Key: t.Key, Value: t.Value, Effect: v1.TaintEffect(t.Effect)}
	}
	return out
}

func toV1Tolerations(tols []solver.Toleration) []v1.Toleration {
	out := make([]v1.Toleration, len(tols))
	for i, t := range tols {
		out[i] = v1.Toleration{Key: t.Key, Operator: v1.TolerationOperator(t.Operator), Value: t.Value, Effect: v1.TaintEffect(t.Effect)}
	}
	return out
}
