package operator

import (
	"context"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestNewCmdOperatorParsesIntoOptions(t *testing.T) {
	tests := []struct {
		name          string
		args          []string
		wantRegionSet bool
		wantErr       string
	}{
		{"the root's kubeconfig flags", []string{"--kubeconfig", "../testdata/kubeconfig", "--cloud", "sim"}, false, ""},
		{"an explicit region", []string{"--kubeconfig", "../testdata/kubeconfig", "--cloud", "aws", "--region", "eu-west-1"}, true, ""},
		{"the interruption queue is for aws", []string{"--kubeconfig", "../testdata/kubeconfig", "--cloud", "sim", "--interruption-queue", "q"}, false,
			"--interruption-queue is for --cloud aws"},
		{"a missing kubeconfig", []string{"--kubeconfig", "../testdata/missing"}, false, "loading the kubeconfig: "},
		{"an unknown log level", []string{"--kubeconfig", "../testdata/kubeconfig", "--log-level", "trace"}, false, `--log-level "trace": want debug, info or error`},
		{"batches", []string{"--kubeconfig", "../testdata/kubeconfig", "--batch-idle", "20s", "--batch-max", "10s"}, false, "--batch-idle (20s) must be positive and at most --batch-max (10s)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			streams, _, _, _ := genericiooptions.NewTestIOStreams()
			config := genericclioptions.NewConfigFlags(false)
			var got *OperatorOptions
			cmd := NewCmdOperator(streams, config, func(_ context.Context, o *OperatorOptions) error { got = o; return nil })
			config.AddFlags(cmd.PersistentFlags())
			cmd.SetArgs(tc.args)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Kubeconfig != "../testdata/kubeconfig" || got.restConfig == nil || got.restConfig.Host != "https://127.0.0.1:1" || got.RegionSet != tc.wantRegionSet {
				t.Errorf("parsed %+v", got)
			}
		})
	}
}
