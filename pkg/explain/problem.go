// Package explain answers "what nodes would these workloads need, and what
// would they cost?": it builds the solver's problem from manifests and a
// catalog, asks the solver, and prints the plan for people or machines.
package explain

import (
	"fmt"
	"os"
	"slices"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/catalog"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Catalog says where instance types and prices come from.
type Catalog struct {
	// Region picks the embedded catalog's region.
	Region string
	// InstanceTypesFile, when set, replaces the embedded catalog.
	InstanceTypesFile string
	// Model is the allocatable model applied to every type.
	Model cloud.NodeModel
}

// DefaultPool describes the pool used when the input defines none.
type DefaultPool struct {
	CapacityTypes    []string
	InstanceFamilies []string
}

// instanceTypes loads the catalog and converts it for the solver. It also
// returns a one-line description of where the data came from.
func (c *Catalog) instanceTypes() ([]solver.InstanceType, string, error) {
	var types []cloud.InstanceType
	var source string
	if c.InstanceTypesFile != "" {
		data, err := os.ReadFile(c.InstanceTypesFile)
		if err != nil {
			return nil, "", fmt.Errorf("reading --instance-types: %w", err)
		}
		if types, err = cloud.ReadInstanceTypes(c.InstanceTypesFile, data); err != nil {
			return nil, "", err
		}
		source = fmt.Sprintf("instance types from %s", c.InstanceTypesFile)
	} else {
		cat, err := catalog.Load()
		if err != nil {
			return nil, "", fmt.Errorf("loading the embedded catalog: %w", err)
		}
		if types, err = cat.InstanceTypes(c.Region); err != nil {
			return nil, "", err
		}
		source = fmt.Sprintf("embedded AWS catalog, region %s", c.Region)
	}
	out := make([]solver.InstanceType, len(types))
	region := c.Region
	if c.InstanceTypesFile != "" {
		region = ""
	}
	for i := range types {
		out[i] = c.Model.SolverType(&types[i], region)
	}
	return out, source, nil
}

// Pool returns the default pool: every instance type of the given families
// (all when empty) in the given capacity types.
func (d *DefaultPool) Pool() (solver.Pool, error) {
	cts := d.CapacityTypes
	if len(cts) == 0 {
		cts = []string{cloud.CapacityTypeOnDemand}
	}
	for _, ct := range cts {
		if ct != cloud.CapacityTypeOnDemand && ct != cloud.CapacityTypeSpot {
			return solver.Pool{}, fmt.Errorf("--capacity-type %q: must be on-demand or spot", ct)
		}
	}
	pool := solver.Pool{
		Name:         "default",
		Labels:       map[string]string{},
		Requirements: []solver.Requirement{{Key: solver.LabelCapacityType, Operator: solver.OpIn, Values: slices.Clone(cts)}},
	}
	if len(d.InstanceFamilies) > 0 {
		pool.Requirements = append(pool.Requirements, solver.Requirement{Key: cloud.LabelInstanceFamily, Operator: solver.OpIn, Values: slices.Clone(d.InstanceFamilies)})
	}
	return pool, nil
}

// Problem builds the solver's problem from what was read and the catalog.
func Problem(m *snapshot.Manifests, types []solver.InstanceType, def DefaultPool) (*solver.Problem, error) {
	pools := m.Pools
	if len(pools) == 0 {
		pool, err := def.Pool()
		if err != nil {
			return nil, err
		}
		pools = []solver.Pool{pool}
	}
	return &solver.Problem{
		ExtendedResources: m.ExtendedResources,
		Pods:              m.Pods,
		DaemonSets:        m.DaemonSets,
		Pools:             pools,
		InstanceTypes:     types,
	}, nil
}
