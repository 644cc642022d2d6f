package explain

import (
	"bytes"
	"strings"
	"testing"
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
