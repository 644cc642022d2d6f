package explaincmd

import (
	"context"
	"encoding/json"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestExplainPlansVolumes runs explain -f -o json on manifests with
// PersistentVolumes and claims, as a user would.
func TestExplainPlansVolumes(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		zone     string // the zone of the one planned node; "" for none
		pod      string // the pod left pending
		sentence string
	}{
		// Without its volume the pod would go to us-east-1a, the first
		// of the equally priced zones.
		{"a pod whose claim is bound to an EBS volume in us-east-1b is planned there", "testdata/volumes/ebs-bound.yaml", "us-east-1b", "", ""},
		{"a pod whose Immediate claim is not bound yet stays pending, with why", "testdata/volumes/immediate-unbound.yaml", "",
			"default/worker", "PVC data-0 is not bound yet (StorageClass gp2 binds Immediately)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parse(t, nil, "-f", tc.file, "-o", "json")
			if err != nil {
				t.Fatal(err)
			}
			streams, _, out, _ := genericiooptions.NewTestIOStreams()
			o.IOStreams = streams
			if err := o.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			var report struct {
				Nodes []struct {
					Zone string   `json:"zone"`
					Pods []string `json:"pods"`
				} `json:"nodes"`
				Unschedulable []struct {
					Pod, Reason string
				} `json:"unschedulable"`
			}
			if err := json.Unmarshal(out.Bytes(), &report); err != nil {
				t.Fatalf("%v in:\n%s", err, out)
			}
			switch {
			case tc.zone != "" && (len(report.Nodes) != 1 || report.Nodes[0].Zone != tc.zone):
				t.Errorf("nodes %+v, want one in %s", report.Nodes, tc.zone)
			case tc.zone == "" && len(report.Nodes) != 0:
				t.Errorf("nodes %+v, want none", report.Nodes)
			}
			if tc.pod == "" {
				if len(report.Unschedulable) != 0 {
					t.Errorf("unschedulable %+v, want none", report.Unschedulable)
				}
				return
			}
			if len(report.Unschedulable) != 1 || report.Unschedulable[0].Pod != tc.pod || report.Unschedulable[0].Reason != tc.sentence {
				t.Errorf("unschedulable %+v, want %s: %q", report.Unschedulable, tc.pod, tc.sentence)
			}
		})
	}
}
