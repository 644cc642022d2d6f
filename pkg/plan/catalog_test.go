package plan

import (
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestApplyNodeClassesStorage checks the ephemeral storage a pool's node
// class gives its nodes, as Karpenter's AWS provider counts it
// (ephemeralStorage in pkg/providers/instancetype/types.go of
// aws/karpenter-provider-aws): under instanceStorePolicy RAID0 a type with
// NVMe instance store gets all of it (c6id.2xlarge: 474 GB) and a type
// without keeps the root volume; a class's root volume replaces the 20Gi
// default; pools with the same settings share one copy of the types.
func TestApplyNodeClassesStorage(t *testing.T) {
	const gi = int64(1) << 30
	c := &Catalog{Region: DefaultRegion}
	p := &solver.Problem{
		InstanceTypes: catalogTypes(t),
		Pools:         []solver.Pool{{Name: "raid0"}, {Name: "root"}, {Name: "plain"}, {Name: "raid0-too"}},
	}
	storage := map[string]snapshot.NodeStorage{
		"raid0":     {InstanceStore: true},
		"raid0-too": {InstanceStore: true},
		"root":      {RootVolume: 100 * gi},
	}
	if err := c.ApplyNodeClasses(p, nil, storage); err != nil {
		t.Fatal(err)
	}
	capacity := func(pool int, name string) int64 {
		types := p.Pools[pool].InstanceTypes
		if types == nil {
			types = p.InstanceTypes
		}
		for _, it := range types {
			if it.Name == name {
				return it.Capacity[solver.EphemeralStorage]
			}
		}
		t.Fatalf("pool %s has no type %s", p.Pools[pool].Name, name)
		return 0
	}
	tests := []struct {
		pool int
		typ  string
		want int64
	}{
		{0, "c6id.2xlarge", 474_000_000_000},
		{0, "c6i.2xlarge", 20 * gi}, // no instance store: the root volume
		{1, "c6id.2xlarge", 100 * gi},
		{1, "c6i.2xlarge", 100 * gi},
		{2, "c6id.2xlarge", 20 * gi},
		{3, "c6id.2xlarge", 474_000_000_000},
	}
	for _, tc := range tests {
		if got := capacity(tc.pool, tc.typ); got != tc.want {
			t.Errorf("pool %s, %s: ephemeral-storage capacity %d, want %d", p.Pools[tc.pool].Name, tc.typ, got, tc.want)
		}
	}
	if p.Pools[2].InstanceTypes != nil {
		t.Error("pool plain, whose class changes nothing, got its own copy of the types")
	}
	if &p.Pools[0].InstanceTypes[0] != &p.Pools[3].InstanceTypes[0] {
		t.Error("pools raid0 and raid0-too, with the same settings, do not share their types")
	}
	if n, m := len(p.Pools[0].InstanceTypes), len(p.InstanceTypes); n != m {
		t.Errorf("pool raid0 has %d types, the problem %d", n, m)
	}
}
