package plan

import (
	"maps"
	"slices"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// addNodeCounts makes a pool's limits.nodes (snapshot.NodeCountResource)
// a limit the solver enforces: every instance type a new node may be has
// one of the resource, and each pool's use of it is the number of its
// existing and in-flight nodes (none reports the resource in its
// capacity). The types are copied: the input's lists are shared. Run it
// after the problem's nodes are in.
func addNodeCounts(p *solver.Problem) {
	j := slices.Index(p.ExtendedResources, snapshot.NodeCountResource)
	if j < 0 {
		return
	}
	with := func(types []solver.InstanceType) []solver.InstanceType {
		out := slices.Clone(types)
		for i := range out {
			out[i].Extended = maps.Clone(out[i].Extended)
			if out[i].Extended == nil {
				out[i].Extended = map[string]int64{}
			}
			out[i].Extended[snapshot.NodeCountResource] = 1
		}
		return out
	}
	p.InstanceTypes = with(p.InstanceTypes)
	r := solver.NumFixedResources + j
	for i := range p.Pools {
		pool := &p.Pools[i]
		if pool.InstanceTypes != nil {
			pool.InstanceTypes = with(pool.InstanceTypes)
		}
		pool.Used[r] = 0
		for k := range p.Nodes {
			n := &p.Nodes[k]
			if n.Pool == pool.Name || n.Pool == "" && n.Labels[solver.LabelNodePool] == pool.Name {
				pool.Used[r]++
				n.Allocatable[r] = 1
			}
		}
	}
}
