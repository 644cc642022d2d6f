package solver

import (
	"testing"
	"time"
)

// TestPlacementKeepsPodsOffEmptierCandidates: a placement's receiverFloor
// keeps pods off nodes an action may still remove that are used less than
// the floor, and only those; zero keeps pods off no node.
func TestPlacementKeepsPodsOffEmptierCandidates(t *testing.T) {
	node := func(cpu int64, pinned string) *consNode {
		n := &consNode{orig: 0, pinned: pinned}
		n.Allocatable[CPU], n.Requested[CPU] = 1000, cpu
		return n
	}
	tests := []struct {
		name  string
		floor float64
		n     *consNode
		want  bool
	}{
		{"no floor: every node takes pods", 0, node(100, ""), false},
		{"candidate used less than the floor", 0.5, node(400, ""), true},
		{"candidate used as much as the floor", 0.5, node(500, ""), false},
		{"candidate used more than the floor", 0.5, node(900, ""), false},
		{"pinned node used less than the floor: no action removes it", 0.5, node(100, "it takes pods"), false},
		{"planned replacement: not a candidate", 0.5, &consNode{orig: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (placement{newNodes: true, receiverFloor: tt.floor}).keptOff(tt.n); got != tt.want {
				t.Errorf("keptOff = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPlanRejectsUnknownSearchOrder: plan answers an error, not an empty
// plan, for a search order it does not know.
func TestPlanRejectsUnknownSearchOrder(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, order := range []searchOrder{deletesFirst, mergesFirst} {
		if _, err := plan(&Problem{}, now, order); err != nil {
			t.Errorf("plan(order %d): %v", order, err)
		}
	}
	if out, err := plan(&Problem{}, now, mergesFirst+1); err == nil {
		t.Errorf("plan(unknown order) = %+v, want an error", out)
	}
}
