package tui

import (
	"strings"
	"testing"
)

func TestProposedViewNeverSaysNoNodesWhilePodsPend(t *testing.T) {
	m := liveModel(t, Options{})
	m.view = viewProposed
	if n := len(m.rep.Plan.Unschedulable); n != 1 {
		t.Fatalf("fixture has %d unschedulable pods, want 1 (Pod/huge)", n)
	}
	if got := m.emptyText(); !strings.Contains(got, "No new node can be proposed: 1 pod(s) cannot be placed") {
		t.Errorf("empty proposed view says %q", got)
	}
	m.rep.Plan.Unschedulable = nil
	if got := m.emptyText(); got != "No new nodes needed." {
		t.Errorf("with every pod placed the empty view says %q", got)
	}
}
