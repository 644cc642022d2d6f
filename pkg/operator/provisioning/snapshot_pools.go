package provisioning

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// poolOffer is the instance types one pool's node class offers.
type poolOffer struct {
	pool  string
	types []cloud.InstanceType
}

// typePartition is how the pools' instance types are planned: most pools
// share one list of types (each pool allowed only the names it offers);
// a pool whose node class has kubelet settings, or offers a type otherwise
// than a pool before it (other zones, a capacity reservation), has its
// own list.
type typePartition struct {
	// shared are the shared types by name, as the first pool offering
	// each one offers it.
	shared map[string]cloud.InstanceType
	// names are, by pool, the names of the shared types the pool offers,
	// in the order it offers them.
	names map[string][]string
	// own are the types of the pools that have their own, by pool.
	own map[string][]cloud.InstanceType
}

// partitionTypes splits the pools' types, in the pools' order, into the
// shared list and the pools' own (see typePartition).
func partitionTypes(offers []poolOffer) typePartition {
	part := typePartition{shared: map[string]cloud.InstanceType{}, names: map[string][]string{}, own: map[string][]cloud.InstanceType{}}
	for _, o := range offers {
		if slices.ContainsFunc(o.types, func(t cloud.InstanceType) bool {
			u, ok := part.shared[t.Name]
			return t.Kubelet != nil || ok && !slices.Equal(u.Offerings, t.Offerings)
		}) {
			part.own[o.pool] = o.types
			continue
		}
		for _, t := range o.types {
			if _, ok := part.shared[t.Name]; !ok {
				part.shared[t.Name] = t
			}
			part.names[o.pool] = append(part.names[o.pool], t.Name)
		}
	}
	return part
}

// sharedTypes returns the shared types in name order.
func (part *typePartition) sharedTypes() []cloud.InstanceType {
	out := make([]cloud.InstanceType, 0, len(part.shared))
	for _, name := range slices.Sorted(maps.Keys(part.shared)) {
		out = append(out, part.shared[name])
	}
	return out
}

// readPools asks the cloud for the instance types of every NodePool not
// being deleted, in list order. A pool whose node class does not resolve
// (or that does not encode) is left out and b.skippedPools says why; the
// others go to b.pools, and are returned as JSON for the snapshot with
// the types they offer.
func (p *Provisioner) readPools(ctx context.Context, b *batch, pools []v1alpha1.NodePool) (offers []poolOffer, raws []json.RawMessage) {
	for i := range pools {
		np := &pools[i]
		if np.DeletionTimestamp != nil {
			continue
		}
		ts, err := p.cloud.InstanceTypes(ctx, np)
		if err != nil {
			b.skippedPools[np.Name] = err.Error()
			continue
		}
		raw, err := json.Marshal(np)
		if err != nil {
			b.skippedPools[np.Name] = err.Error()
			continue
		}
		b.pools[np.Name] = np
		raws = append(raws, raw)
		offers = append(offers, poolOffer{pool: np.Name, types: ts})
	}
	return offers, raws
}

// labelPools gives the snapshot's pools the labels our pools' nodes
// carry besides the template's (rightsize.dev/nodepool).
func labelPools(pools []solver.Pool, ours map[string]*v1alpha1.NodePool) {
	for pi := range pools {
		if np := ours[pools[pi].Name]; np != nil {
			for k, v := range np.NodeLabels() {
				pools[pi].Labels[k] = v
			}
		}
	}
}

// restrictPools gives each pool the types it may use: a pool with its
// own types gets them (and b.poolTypes indexes them); a pool that offers
// fewer of the shared types than there are is held to those by an
// instance-type requirement.
func (p *Provisioner) restrictPools(b *batch, pools []solver.Pool, part *typePartition) {
	for pi := range pools {
		pool := &pools[pi]
		if ts, ok := part.own[pool.Name]; ok {
			pool.InstanceTypes = p.solverTypes(ts)
			byName := make(map[string]*solver.InstanceType, len(pool.InstanceTypes))
			for i := range pool.InstanceTypes {
				byName[pool.InstanceTypes[i].Name] = &pool.InstanceTypes[i]
			}
			b.poolTypes[pool.Name] = byName
			continue
		}
		if names := part.names[pool.Name]; len(names) < len(part.shared) {
			pool.Requirements = append(pool.Requirements, solver.Requirement{Key: solver.LabelInstanceType, Operator: solver.OpIn, Values: names})
		}
	}
}

// typesOf returns the instance types of a pool by name: its own when its
// node class has kubelet settings, else the shared ones.
func (b *batch) typesOf(pool string) map[string]*solver.InstanceType {
	if t, ok := b.poolTypes[pool]; ok {
		return t
	}
	return b.types
}

// solverTypes converts instance types for the solver, without the
// offerings marked unavailable and the types left with none.
func (p *Provisioner) solverTypes(ts []cloud.InstanceType) []solver.InstanceType {
	out := make([]solver.InstanceType, 0, len(ts))
	for i := range ts {
		st := p.opts.Model.SolverType(&ts[i], p.opts.Region)
		st.Offerings = slices.DeleteFunc(st.Offerings, func(o solver.Offering) bool {
			return p.unavailable.Has(st.Name, o.Zone, o.CapacityType)
		})
		if len(st.Offerings) > 0 {
			out = append(out, st)
		}
	}
	return out
}
