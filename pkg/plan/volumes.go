package plan

import (
	"maps"
	"slices"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// addAttachLimits gives every instance type new nodes may be, the
// problem's and each pool's own, snapshot.EBSAttachLimit of
// snapshot.EBSAttachResource when some pod requests it (a pod mounting EBS
// volumes), so that a new node takes no more EBS volumes than it can
// attach. The types are copied: the input's lists are shared.
func addAttachLimits(p *solver.Problem) {
	if !slices.Contains(p.ExtendedResources, snapshot.EBSAttachResource) {
		return
	}
	with := func(types []solver.InstanceType) []solver.InstanceType {
		out := slices.Clone(types)
		for i := range out {
			out[i].Extended = maps.Clone(out[i].Extended)
			if out[i].Extended == nil {
				out[i].Extended = map[string]int64{}
			}
			out[i].Extended[snapshot.EBSAttachResource] = snapshot.EBSAttachLimit
		}
		return out
	}
	p.InstanceTypes = with(p.InstanceTypes)
	for i := range p.Pools {
		if p.Pools[i].InstanceTypes != nil {
			p.Pools[i].InstanceTypes = with(p.Pools[i].InstanceTypes)
		}
	}
}

// attachLimit gives an in-flight node the attach limit of a new one: its
// NodeClaim's allocatable does not name the attach resource.
func attachLimit(n *solver.Node, extended []string) {
	if i := slices.Index(extended, snapshot.EBSAttachResource); i >= 0 && n.Allocatable[solver.NumFixedResources+i] == 0 {
		n.Allocatable[solver.NumFixedResources+i] = snapshot.EBSAttachLimit
	}
}
