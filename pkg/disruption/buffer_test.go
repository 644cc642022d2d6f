package disruption

import (
	"slices"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestConsolidationKeepsBufferRoom: a CapacityBuffer's pods are in the
// snapshot's problem as pending pods (plan.Build appends them), and the
// consolidation planner reserves room for pending pods, so a node whose
// free room holds buffer chunks that fit nowhere else is not removed; the
// same node with no buffer is.
func TestConsolidationKeepsBufferRoom(t *testing.T) {
	buffer := func(n int, cpu int64) []solver.Pod {
		var out []solver.Pod
		for i := range n {
			out = append(out, solver.Pod{Namespace: "ns", Name: "headroom-buffer-" + string(rune('0'+i)), Owner: "CapacityBuffer/headroom",
				Requests: res(cpu, gi), Controller: true})
		}
		return out
	}
	tests := []struct {
		name    string
		pending []solver.Pod
		deleted bool // whether the empty node "a" is deleted
	}{
		{"no buffer: the empty node goes", nil, true},
		{"buffer room that fits only there keeps it", buffer(2, 1000), false},
		{"buffer room that fits elsewhere lets it go", buffer(1, 500), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			f.node("a", "small")
			f.node("c", "large", 7000) // 1 CPU free
			f.p.Pods = tc.pending
			_, chosen, refused := f.choose(t)
			gone := chosen != nil && slices.Contains(chosen.Action.Nodes, "a")
			if gone != tc.deleted {
				t.Errorf("node a deleted %v, want %v (chosen %+v, refused %v)", gone, tc.deleted, chosen, refused)
			}
		})
	}
}
