package explain

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/report"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func TestHeadlineNeverSaysNoNodesWhilePodsPend(t *testing.T) {
	tests := []struct {
		name      string
		r         Result
		want, not string
	}{
		{"nothing to place", Result{}, "No new nodes needed.", "cannot be placed"},
		{"pods cannot be placed", Result{Unschedulable: []ResultUnscheduled{{Pod: "default/a", Reason: "x"}, {Pod: "default/b", Reason: "x"}}},
			"No new node can be proposed: 2 pod(s) cannot be placed (see below).", "No new nodes needed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := PrintHuman(&b, &tt.r, false); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tt.want) || strings.Contains(b.String(), tt.not) {
				t.Errorf("output\n%s\nwant %q and not %q", b.String(), tt.want, tt.not)
			}
		})
	}
}

func TestBestEffortPodsMakeAFloor(t *testing.T) {
	p := &solver.Problem{Pods: []solver.Pod{
		{Namespace: "default", Name: "a"},
		{Namespace: "default", Name: "b", Requests: solver.Resources{solver.CPU: 100}},
		{Namespace: "default", Name: "c", Requests: solver.Resources{solver.Memory: 1 << 20}},
		{Namespace: "default", Name: "d", Requests: solver.Resources{solver.Pods: 1}},
	}}
	r := NewResult(report.FromPlan(p, &solver.Plan{}, nil), ResultSource{})
	if r.BestEffortPods != 2 {
		t.Errorf("BestEffortPods %d, want 2 (a and d)", r.BestEffortPods)
	}
	var b bytes.Buffer
	if err := PrintHuman(&b, r, false); err != nil {
		t.Fatal(err)
	}
	if want := "2 pod(s) request no CPU or memory; they are planned as taking none, so this plan is a floor."; !strings.Contains(b.String(), want) {
		t.Errorf("output\n%s\nlacks %q", b.String(), want)
	}
	data, err := json.Marshal(r)
	if err != nil || !strings.Contains(string(data), `"bestEffortPods":2`) {
		t.Errorf("json %s (%v) lacks bestEffortPods", data, err)
	}
}
