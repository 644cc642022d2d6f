package main

import (
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestCommands(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    string
		wantErr string
	}{
		{"help reads as a kubectl plugin", []string{"--help"}, "kubectl rightsize [command]", ""},
		{"explain help shows examples", []string{"explain", "--help"}, "kubectl rightsize explain -f deploy/", ""},
		{"version", []string{"version"}, "kubectl-rightsize ", ""},
		{"version json", []string{"version", "-o", "json"}, `"goVersion"`, ""},
		{"explain offline", []string{"explain", "-f", "../../examples/flash-sale.yaml"}, "TOTAL", ""},
		{"unknown flag", []string{"explain", "--bogus"}, "", "unknown flag: --bogus"},
		{"no kubeconfig and no -f", []string{"explain", "--kubeconfig", "testdata/none"}, "", "no input: pass manifests with -f"},
		{"a workload needs a cluster", []string{"explain", "pod/x", "-f", "../../examples/flash-sale.yaml"}, "", "naming a workload needs a live cluster"},
		{"one workload at most", []string{"explain", "pod/x", "pod/y"}, "", "at most one workload"},
		{"unknown workload type", []string{"explain", "service/x", "--kubeconfig", "testdata/kubeconfig"}, "", `unknown workload type "service"`},
		{"the interruption queue is for aws", []string{"operator", "--cloud", "sim", "--interruption-queue", "q", "--log-format", "text", "--kubeconfig", "testdata/kubeconfig"},
			"", "--interruption-queue is for --cloud aws"},
		{"unreachable cluster", []string{"explain", "--kubeconfig", "testdata/kubeconfig", "--request-timeout", "5s"}, "", "cannot list pods: cannot reach the cluster at https://127.0.0.1:1: connection refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			streams, _, out, _ := genericiooptions.NewTestIOStreams()
			cmd := NewCmdRoot(streams)
			cmd.SetArgs(tc.args)
			err := cmd.Execute()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out.String())
			}
		})
	}
}
