package plan

import (
	"context"
	"fmt"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/catalog"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// DefaultRegion is the catalog region used when neither the user nor the
// nodes' topology.kubernetes.io/region label says otherwise.
const DefaultRegion = "us-east-1"

// Catalog says where instance types and prices come from.
type Catalog struct {
	// Region picks the embedded catalog's region.
	Region string
	// InstanceTypesFile, when set, replaces the embedded catalog.
	InstanceTypesFile string
	// MaxInputSize bounds InstanceTypesFile (--max-input-size); 0 is
	// snapshot.DefaultMaxInputSize.
	MaxInputSize int64
	// Model is the allocatable model applied to every type.
	Model cloud.NodeModel
}

// InstanceTypes loads the catalog (the embedded one for Region, with
// burstable types priced for sustained use (cloud.PriceSustained), or
// InstanceTypesFile, whose prices are kept) and converts it for the solver. It also returns a
// one-line description of where the data came from, e.g. "embedded AWS
// catalog of 2026-07-20, region us-east-1 (spot 2025-05-28)" (see
// EmbeddedDescription).
func (c *Catalog) InstanceTypes() ([]solver.InstanceType, string, error) {
	types, source, region, err := c.load()
	if err != nil {
		return nil, "", err
	}
	out := make([]solver.InstanceType, len(types))
	for i := range types {
		out[i] = c.Model.SolverType(&types[i], region)
	}
	return out, source, nil
}

// load reads the catalog's instance types, the description of where they
// came from and the region their labels name ("" for a file).
func (c *Catalog) load() ([]cloud.InstanceType, string, string, error) {
	if c.InstanceTypesFile != "" {
		data, err := snapshot.ReadFile(context.Background(), c.InstanceTypesFile, c.MaxInputSize)
		if err != nil {
			return nil, "", "", fmt.Errorf("--instance-types: %w", err)
		}
		types, err := cloud.ReadInstanceTypes(c.InstanceTypesFile, data)
		if err != nil {
			return nil, "", "", err
		}
		return types, fmt.Sprintf("instance types from %s", c.InstanceTypesFile), "", nil
	}
	cat, err := catalog.Load()
	if err != nil {
		return nil, "", "", fmt.Errorf("loading the embedded catalog: %w", err)
	}
	types, err := cat.InstanceTypes(c.Region)
	if err != nil {
		return nil, "", "", err
	}
	for i := range types {
		cloud.PriceSustained(&types[i])
	}
	return types, EmbeddedDescription(cat, c.Region), c.Region, nil
}

// EmbeddedDescription says in one line where the embedded catalog's prices
// of region come from and how old they are: the date of the region's
// on-demand prices, and that of its spot prices when they are older
// ("embedded AWS catalog of 2026-07-20, region us-east-1 (spot 2025-05-28)").
// It fits an 80-column line after "prices: " for every region.
func EmbeddedDescription(cat *catalog.Catalog, region string) string {
	od, spot := cat.PriceDates(region)
	s := fmt.Sprintf("embedded AWS catalog of %s, region %s", od, region)
	if spot != "" && spot != od {
		s += fmt.Sprintf(" (spot %s)", spot)
	}
	return s
}

// ApplyNodeClasses gives every pool of p whose node class changes what a
// node gives pods — kubelet settings in kubelets (by pool name; see
// snapshot.Manifests.Kubelets), ephemeral storage in storage
// (snapshot.Manifests.Storage) — its own copy of the catalog's instance
// types, with the settings applied to pods and allocatable
// (cloud.NodeModel). Pools with the same settings share one copy; settings
// that change no allocatable (clusterDNS, image GC) leave a pool on the
// shared types. Only types p already offers are kept, so that a filtered
// catalog stays filtered.
func (c *Catalog) ApplyNodeClasses(p *solver.Problem, kubelets map[string]*v1alpha1.KubeletConfiguration, storage map[string]snapshot.NodeStorage) error {
	if len(kubelets) == 0 && len(storage) == 0 {
		return nil
	}
	type settings struct {
		kubelet    cloud.Kubelet
		hasKubelet bool
		storage    snapshot.NodeStorage
	}
	var raw []cloud.InstanceType
	var region string
	bySettings := map[settings][]solver.InstanceType{}
	for i := range p.Pools {
		pool := &p.Pools[i]
		k, err := cloud.NewKubelet(kubelets[pool.Name])
		if err != nil {
			return fmt.Errorf("NodePool %s: %w", pool.Name, err)
		}
		key := settings{storage: storage[pool.Name]}
		if k != nil {
			key.kubelet, key.hasKubelet = *k, true
		}
		if key == (settings{}) {
			continue
		}
		if list, ok := bySettings[key]; ok {
			pool.InstanceTypes = list
			continue
		}
		if raw == nil {
			if raw, _, region, err = c.load(); err != nil {
				return err
			}
		}
		offered := make(map[string]int, len(p.InstanceTypes))
		for j := range p.InstanceTypes {
			offered[p.InstanceTypes[j].Name] = j
		}
		list := make([]solver.InstanceType, 0, len(p.InstanceTypes))
		for j := range raw {
			shared, ok := offered[raw[j].Name]
			if !ok {
				continue
			}
			t := raw[j]
			t.Kubelet = k
			st := c.nodeModel(key.storage, &t).SolverType(&t, region)
			st.Offerings = p.InstanceTypes[shared].Offerings
			list = append(list, st)
		}
		bySettings[key] = list
		pool.InstanceTypes = list
	}
	return nil
}

// nodeModel is the catalog's node model for a node of type t whose node
// class gives it storage s: the instance store (LocalNVMe, in GB as
// Karpenter counts it) under RAID0 when t has one, else the root volume
// the class sets, else the model's default.
func (c *Catalog) nodeModel(s snapshot.NodeStorage, t *cloud.InstanceType) cloud.NodeModel {
	m := c.Model
	switch {
	case s.InstanceStore && t.LocalNVMe > 0:
		m.EphemeralStorage = t.LocalNVMe * 1_000_000_000
	case s.RootVolume > 0:
		m.EphemeralStorage = s.RootVolume
	}
	return m
}
