// Package baseline holds yardsticks for the solver: simple planners written
// from the published descriptions of what Karpenter and Cluster Autoscaler
// do, run on the same problems so that benchmarks can report the solver's
// cost against theirs. They are deliberately plain; they are not used by the
// product.
//
// Both baselines
//   - use existing nodes' free capacity first (first fit, skipping cordoned
//     nodes), as kube-scheduler would before any node is added;
//   - subtract the DaemonSets that would run on a node from its allocatable;
//   - honour pool requirements, labels, taints, weights (a new node comes
//     from the highest-weight pool that can take its first pod) and limits;
//   - give a pod with a hostname topology spread constraint (DoNotSchedule)
//     or hostname anti-affinity a new node of its own, which satisfies both
//     however the rest is packed.
//
// Both ignore preferences, required pod affinity on the hostname key,
// anti-affinity between pods of different groups other than through the
// one-pod-per-node rule, topology keys other than zone and hostname, and
// running pods' anti-affinity towards the pods they plan.
package baseline

import (
	"encoding/json"
	"slices"
	"sort"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver/check"
)

// kind is one way to launch a node: a pool, an instance type and one of its
// offerings.
type kind struct {
	pool, typ int
	zone, ct  string
	price     float64
	alloc     solver.Resources // allocatable less the DaemonSets that run there
	capacity  solver.Resources // what counts against pool limits
	labels    map[string]string
	taints    []solver.Taint
}

// env is what both baselines precompute about a problem.
type env struct {
	p         *solver.Problem
	kinds     []kind
	poolOrder []int   // pools by descending weight, then name
	poolKinds [][]int // per pool, its kinds by ascending price
	req       []solver.Resources
	group     []int    // per pod, its node-constraint group
	compat    [][]bool // per group, per kind
	groupRep  []int    // per group, a pod of it
	remaining []solver.Resources
	plan      solver.Plan
}

func newEnv(p *solver.Problem) *env {
	e := &env{p: p, poolKinds: make([][]int, len(p.Pools)), remaining: make([]solver.Resources, len(p.Pools))}
	for i := range p.Pools {
		e.poolOrder = append(e.poolOrder, i)
		for r := range e.remaining[i] {
			if p.Pools[i].HasLimit[r] {
				e.remaining[i][r] = p.Pools[i].Limits[r] - p.Pools[i].Used[r]
			}
		}
	}
	sort.SliceStable(e.poolOrder, func(a, b int) bool {
		pa, pb := &p.Pools[e.poolOrder[a]], &p.Pools[e.poolOrder[b]]
		if pa.Weight != pb.Weight {
			return pa.Weight > pb.Weight
		}
		return pa.Name < pb.Name
	})
	for pi := range p.Pools {
		pool := &p.Pools[pi]
		types := p.PoolTypes(pi)
		for ti := range types {
			it := &types[ti]
			for _, o := range it.Offerings {
				labels := make(map[string]string, len(it.Labels)+len(pool.Labels)+3)
				for k, v := range it.Labels {
					labels[k] = v
				}
				for k, v := range pool.Labels {
					labels[k] = v
				}
				labels[solver.LabelNodePool] = pool.Name
				labels[solver.LabelZone] = o.Zone
				labels[solver.LabelCapacityType] = o.CapacityType
				ok := true
				for _, r := range pool.Requirements {
					if !r.Matches(solver.MapLabels(labels)) {
						ok = false
						break
					}
				}
				if !ok {
					continue
				}
				alloc := it.Capacity.Sub(it.Overhead)
				for _, ds := range p.DaemonSets {
					if check.Allowed(&solver.Pod{NodeSelector: ds.NodeSelector, Affinity: ds.Affinity, Tolerations: ds.Tolerations}, labels, pool.Taints) == nil {
						alloc = alloc.Sub(ds.Requests)
					}
				}
				if !(solver.Resources{}).Fits(alloc) {
					continue
				}
				e.poolKinds[pi] = append(e.poolKinds[pi], len(e.kinds))
				e.kinds = append(e.kinds, kind{pool: pi, typ: ti, zone: o.Zone, ct: o.CapacityType, price: o.Price,
					alloc: alloc, capacity: it.Capacity, labels: labels, taints: pool.Taints})
			}
		}
		sort.SliceStable(e.poolKinds[pi], func(a, b int) bool {
			return e.kinds[e.poolKinds[pi][a]].price < e.kinds[e.poolKinds[pi][b]].price
		})
	}
	groups := map[string]int{}
	e.req = make([]solver.Resources, len(p.Pods))
	e.group = make([]int, len(p.Pods))
	for i := range p.Pods {
		pod := &p.Pods[i]
		e.req[i] = pod.Requests
		e.req[i][solver.Pods] = max(e.req[i][solver.Pods], 1)
		key, _ := json.Marshal([]any{pod.NodeSelector, pod.Affinity, pod.Tolerations})
		g, ok := groups[string(key)]
		if !ok {
			g = len(e.groupRep)
			groups[string(key)] = g
			e.groupRep = append(e.groupRep, i)
			c := make([]bool, len(e.kinds))
			for k := range e.kinds {
				c[k] = check.Allowed(pod, e.kinds[k].labels, e.kinds[k].taints) == nil
			}
			e.compat = append(e.compat, c)
		}
		e.group[i] = g
	}
	return e
}

// ffdOrder returns pod indices by descending CPU, then memory, then index.
func (e *env) ffdOrder(pods []int) []int {
	out := slices.Clone(pods)
	sort.SliceStable(out, func(a, b int) bool {
		ra, rb := e.req[out[a]], e.req[out[b]]
		if ra[solver.CPU] != rb[solver.CPU] {
			return ra[solver.CPU] > rb[solver.CPU]
		}
		return ra[solver.Memory] > rb[solver.Memory]
	})
	return out
}

// allPods returns 0..n-1.
func (e *env) allPods() []int {
	out := make([]int, len(e.p.Pods))
	for i := range out {
		out[i] = i
	}
	return out
}

// existingFit tracks existing nodes' free capacity.
type existingFit struct {
	free []solver.Resources
}

func (e *env) newExistingFit() *existingFit {
	f := &existingFit{free: make([]solver.Resources, len(e.p.Nodes))}
	for i := range e.p.Nodes {
		f.free[i] = e.p.Nodes[i].Allocatable.Sub(e.p.Nodes[i].Requested)
	}
	return f
}

// place puts pod on the first existing node that takes it and is in zone
// (any zone when empty), and reports whether it did.
func (e *env) placeExisting(f *existingFit, pod int, zone string) bool {
	for i := range e.p.Nodes {
		n := &e.p.Nodes[i]
		if n.Unschedulable || !e.req[pod].Fits(f.free[i]) {
			continue
		}
		if zone != "" && nodeZone(n) != zone {
			continue
		}
		if check.Allowed(&e.p.Pods[pod], n.Labels, n.Taints) != nil {
			continue
		}
		f.free[i] = f.free[i].Sub(e.req[pod])
		e.plan.Existing = append(e.plan.Existing, solver.Placement{Pod: pod, Node: n.Name})
		return true
	}
	return false
}

func nodeZone(n *solver.Node) string {
	if z, ok := n.Labels[solver.LabelZone]; ok {
		return z
	}
	return n.Zone
}

// withinLimits reports whether a node of kind k fits in its pool's remaining limits.
func (e *env) withinLimits(k int) bool {
	pool := &e.p.Pools[e.kinds[k].pool]
	for r := range pool.HasLimit {
		if pool.HasLimit[r] && e.kinds[k].capacity[r] > e.remaining[e.kinds[k].pool][r] {
			return false
		}
	}
	return true
}

// launch adds a new node of kind k with pods to the plan.
func (e *env) launch(k int, pods []int) {
	kd := &e.kinds[k]
	n := solver.NewNode{Pool: e.p.Pools[kd.pool].Name, InstanceType: e.p.PoolTypes(kd.pool)[kd.typ].Name, Zone: kd.zone,
		CapacityType: kd.ct, Price: kd.price, Pods: slices.Clone(pods), Allocatable: kd.alloc}
	for _, pi := range pods {
		n.Requested = n.Requested.Add(e.req[pi])
	}
	e.plan.NewNodes = append(e.plan.NewNodes, n)
	e.plan.TotalPrice += kd.price
}

func (e *env) unschedulable(pod int, reason string) {
	e.plan.Unschedulable = append(e.plan.Unschedulable, solver.Unschedulable{Pod: pod, Reason: reason})
}

// finish sorts the plan's lists for stable output.
func (e *env) finish() *solver.Plan {
	sort.Slice(e.plan.Unschedulable, func(a, b int) bool { return e.plan.Unschedulable[a].Pod < e.plan.Unschedulable[b].Pod })
	return &e.plan
}

// hostnameExclusive reports whether the pod gets a node of its own: it has a
// hostname spread constraint (DoNotSchedule) or hostname anti-affinity.
func hostnameExclusive(pod *solver.Pod) bool {
	for _, s := range pod.Spread {
		if s.TopologyKey == check.LabelHostname && s.WhenUnsatisfiable != solver.ScheduleAnyway {
			return true
		}
	}
	for _, t := range pod.PodAntiAffinity {
		if t.TopologyKey == check.LabelHostname {
			return true
		}
	}
	return false
}
