package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/watch"
)

// zonalReservation is a Commitment of count reserved instances of typ in
// us-east-1a, as the watcher delivers it.
func zonalReservation(name, typ string, count int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rightsize.dev/v1alpha1", "kind": "Commitment",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"type": "ReservedInstances",
			"reservedInstances": map[string]any{
				"instanceType": typ, "instanceCount": count, "availabilityZone": "us-east-1a", "pricePerHour": "0.05",
			},
		},
	}}
}

// TestPendingPodsPlanSpendsTheClustersCommitments feeds the cluster of
// liveModel with and without a zonal reservation the blind plan does not
// use: with it, the pending pods are planned on the reserved type, the
// node is shown covered and the screen gives the bill, as explain does;
// without it, the plan is the blind one and no bill is shown. The launch
// confirmation says what of the list price the commitments pay.
func TestPendingPodsPlanSpendsTheClustersCommitments(t *testing.T) {
	blind := liveModel(t, Options{Launcher: &recordingLauncher{}})
	if blind.rep.Spending != nil {
		t.Fatalf("no Commitment in the cluster, yet a bill: %+v", blind.rep.Spending)
	}
	if len(blind.rep.Plan.NewNodes) != 1 {
		t.Fatalf("blind plan: %d new nodes, want 1", len(blind.rep.Plan.NewNodes))
	}
	const reserved = "m5.2xlarge" // larger than the three web pods need: never the blind plan's
	if got := blind.rep.Plan.NewNodes[0].InstanceType; got == reserved {
		t.Fatalf("blind plan already takes %s: the test needs another type", got)
	}
	drive(t, blind, keys("2")...)
	if s := screen(blind); strings.Contains(s, "bill with commitments") || strings.Contains(s, "covered") {
		t.Errorf("no Commitment, yet the screen speaks of one:\n%s", s)
	}

	b := cluster()
	b.Events = append(b.Events, watch.Event{Kind: watch.Commitment, Key: "m5-ri", Obj: zonalReservation("m5-ri", reserved, 1)})
	m := New(Options{Context: "test-ctx", Catalog: plan.Catalog{Region: "us-east-1"}, Debounce: time.Millisecond,
		Now: func() time.Time { return now }, Launcher: &recordingLauncher{}})
	drive(t, m, tea.WindowSizeMsg{Width: 220, Height: 30}, b, watch.Synced{Commitments: true})
	r := m.rep
	if r == nil || r.Spending == nil {
		t.Fatalf("no bill with the Commitment; plan error: %v", m.planErr)
	}
	if !r.Spending.Aware || len(r.Plan.NewNodes) != 1 || r.Plan.NewNodes[0].InstanceType != reserved {
		t.Fatalf("plan %+v (aware %v): want the pods on the reserved %s", r.Plan.NewNodes, r.Spending.Aware, reserved)
	}
	if got := r.Covered(0); got != 1 {
		t.Errorf("reserved node covered %.2f, want whole", got)
	}
	if r.Spending.Bill.Total >= r.Spending.Blind.Total {
		t.Errorf("bill $%.4f/h, blind plan's $%.4f/h: spending the reservation must bill less", r.Spending.Bill.Total, r.Spending.Blind.Total)
	}
	// The reserved node adds nothing to the bill beyond the fee paid
	// either way, less than the blind plan's node adds at list price.
	if r.Cost() > 0.01 || r.Cost() >= blind.rep.Cost() || r.Baseline != r.Cost() {
		t.Errorf("cost %.4f (blind plan's %.4f), baseline %.4f: want the reserved node to add nothing, and no what-if baseline of its own",
			r.Cost(), blind.rep.Cost(), r.Baseline)
	}
	drive(t, m, keys("2")...)
	mustContain(t, screen(m), "proposed, covered", "bill with commitments", "planned ignoring them")
	drive(t, m, keys("enter")...)
	mustContain(t, screen(m), "the commitments cover 100% of it")
	// The launch confirmation says what of the list price they pay.
	drive(t, m, keys("esc", "L")...)
	list := r.Plan.NewNodes[0].Price
	mustContain(t, screen(m), fmt.Sprintf("of which commitments cover $%.4f/h; billed on top: $0.0000/h", list))
	drive(t, m, keys("n")...)
	// A what-if compares what the new nodes add to the bill: the
	// baseline is the plan above's, not its whole bill.
	before := r.Cost()
	drive(t, m, keys("c")...)
	if w := m.rep; !w.WhatIf.Active() || w.Baseline != before || w.Delta() != w.Cost()-before {
		t.Errorf("what-if %v: baseline %.6f, delta %.6f, cost %.6f; want the baseline %.6f the plan without it added", w.WhatIf, w.Baseline, w.Delta(), w.Cost(), before)
	}
	mustContain(t, screen(m), "the new nodes add $0.0000/h")
}
