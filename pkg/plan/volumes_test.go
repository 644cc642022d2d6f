package plan

import (
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func TestBuildGivesNewNodesTheEBSAttachLimit(t *testing.T) {
	ebs := solver.Pod{Namespace: "default", Name: "db", Owner: "Pod/db"}
	ebs.Requests[solver.NumFixedResources] = 1
	tests := []struct {
		name     string
		extended []string
		want     int64 // the attach limit on the problem's and the pool's types; 0 for none
	}{
		{"a pod mounts EBS volumes", []string{snapshot.EBSAttachResource}, snapshot.EBSAttachLimit},
		{"no pod does", []string{"nvidia.com/gpu"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			types := testTypes()
			m := &snapshot.Manifests{Pods: []solver.Pod{ebs}, ExtendedResources: tc.extended,
				Pools: []solver.Pool{{Name: "own", InstanceTypes: testTypes()}, {Name: "shared"}}}
			r, err := Build(Input{Manifests: m, InstanceTypes: types})
			if err != nil {
				t.Fatal(err)
			}
			for _, list := range [][]solver.InstanceType{r.Problem.InstanceTypes, r.Problem.Pools[0].InstanceTypes} {
				if got := list[0].Extended[snapshot.EBSAttachResource]; got != tc.want {
					t.Errorf("%s offers %d EBS attachments, want %d", list[0].Name, got, tc.want)
				}
			}
			if types[0].Extended != nil || m.Pools[0].InstanceTypes[0].Extended != nil {
				t.Error("the input's instance types were modified")
			}
		})
	}
}
