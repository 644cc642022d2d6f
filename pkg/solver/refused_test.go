package solver_test

import (
	"testing"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestSolveLeavesPodsMarkedUnschedulablePending checks that a pod whose
// Unschedulable reason was decided before planning (an unbound volume
// claim) takes neither an existing node's room nor a new node, and keeps
// its own sentence, while an identical pod without the mark is placed.
func TestSolveLeavesPodsMarkedUnschedulablePending(t *testing.T) {
	const why = "PVC data-0 is not bound yet (StorageClass gp2 binds Immediately)"
	existing := Node{Name: "node-1", Allocatable: res(4000, 8*gi)}
	existing.Allocatable[Pods] = 20
	tests := []struct {
		name  string
		nodes []Node
	}{
		{"new nodes only", nil},
		{"an existing node with room", []Node{existing}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := pods("db", 2, res(1000, gi))
			ps[0].Unschedulable = why
			p := &Problem{Pods: ps, Nodes: tc.nodes, Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()}
			plan := solveChecked(t, p)
			if len(plan.Unschedulable) != 1 || plan.Unschedulable[0].Pod != 0 || plan.Unschedulable[0].Reason != why {
				t.Fatalf("unschedulable %+v, want pod 0 only, with %q", plan.Unschedulable, why)
			}
			placed := len(plan.Existing)
			for _, n := range plan.NewNodes {
				placed += len(n.Pods)
			}
			if placed != 1 {
				t.Errorf("%d pods placed, want 1 (the unmarked one)", placed)
			}
		})
	}
}
