package plan

import (
	"fmt"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestLimitsNodesCapsThePool plans pods that each need a node of their
// own (1500m of a 2-CPU type) under a NodePool's limits.nodes: no more
// nodes than the limit are planned, the rest of the pods stay pending.
func TestLimitsNodesCapsThePool(t *testing.T) {
	for _, tc := range []struct {
		limit     string // limits: ...
		pods      int
		wantNodes int
	}{
		{"{nodes: 2}", 4, 2},
		{"{nodes: 5}", 3, 3},
		{"{nodes: 0}", 2, 0},
		{"{cpu: 100}", 3, 3},
	} {
		t.Run(tc.limit, func(t *testing.T) {
			in := fmt.Sprintf(`apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: capped}
spec:
  limits: %s
  template: {spec: {requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, resources: {requests: {cpu: 1500m}}}]}
`, tc.limit, tc.pods)
			var m snapshot.Manifests
			if err := snapshot.Decode("in.yaml", []byte(in), &m); err != nil {
				t.Fatal(err)
			}
			r, err := Build(Input{Manifests: &m, InstanceTypes: testTypes()})
			if err != nil {
				t.Fatal(err)
			}
			plan, err := solver.Solve(r.Problem)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(plan.NewNodes); got != tc.wantNodes {
				t.Errorf("planned %d nodes, want %d", got, tc.wantNodes)
			}
			if got := len(plan.Unschedulable); got != tc.pods-tc.wantNodes {
				t.Errorf("%d pods unschedulable, want %d", got, tc.pods-tc.wantNodes)
			}
		})
	}
}

// TestAddNodeCountsCountsExistingNodes counts a pool's existing and
// in-flight nodes (by pool, or by the karpenter.sh/nodepool label when the
// node names no pool) against limits.nodes.
func TestAddNodeCountsCountsExistingNodes(t *testing.T) {
	r := solver.NumFixedResources
	p := &solver.Problem{
		ExtendedResources: []string{snapshot.NodeCountResource},
		InstanceTypes:     testTypes(),
		Pools:             []solver.Pool{{Name: "a"}, {Name: "b", InstanceTypes: testTypes()}},
		Nodes: []solver.Node{
			{Name: "a1", Pool: "a"},
			{Name: "a2", Labels: map[string]string{solver.LabelNodePool: "a"}},
			{Name: "b1", Pool: "b", InFlight: true},
			{Name: "other"},
		},
	}
	addNodeCounts(p)
	if got := p.Pools[0].Used[r]; got != 2 {
		t.Errorf("pool a uses %d nodes, want 2", got)
	}
	if got := p.Pools[1].Used[r]; got != 1 {
		t.Errorf("pool b uses %d nodes, want 1", got)
	}
	if p.InstanceTypes[0].Extended[snapshot.NodeCountResource] != 1 || p.Pools[1].InstanceTypes[0].Extended[snapshot.NodeCountResource] != 1 {
		t.Error("instance types do not count as one node each")
	}
	if testTypes()[0].Extended != nil {
		t.Error("input types changed")
	}
}
