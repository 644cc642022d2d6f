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
