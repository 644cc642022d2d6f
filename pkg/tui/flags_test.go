package tui

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"the defaults", nil, ""},
		{"spot and families", []string{"--capacity-type", "spot,on-demand", "--instance-family", "m7i,c7i", "--max-pods", "0"}, ""},
		{"negative max pods", []string{"--max-pods", "-1"}, "--max-pods -1: must not be negative"},
		{"overhead of one", []string{"--vm-memory-overhead-percent", "1"}, "--vm-memory-overhead-percent 1: must be at least 0 and below 1"},
		{"negative overhead", []string{"--vm-memory-overhead-percent", "-0.1"}, "--vm-memory-overhead-percent -0.1"},
		{"unknown capacity type", []string{"--capacity-type", "reserved"}, `--capacity-type "reserved": must be on-demand or spot`},
		{"both architectures, every type, no EKS DaemonSets", []string{"--arch", "amd64", "--arch", "arm64", "--all-instance-types", "--no-eks-daemonsets"}, ""},
		{"unknown architecture", []string{"--arch", "amd64,x86_64"}, `--arch "x86_64": must be amd64 or arm64`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p Options
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			p.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := p.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	var p Options
	p.AddFlags(pflag.NewFlagSet("test", pflag.ContinueOnError))
	if p.Catalog.Model.MaxPods != 110 || p.Catalog.Model.VMMemoryOverheadPercent != 0.075 ||
		len(p.Default.CapacityTypes) != 1 || p.Default.CapacityTypes[0] != "on-demand" || p.Catalog.Region != "" ||
		p.Timeout != DefaultTimeout || p.ReadOnly {
		t.Errorf("defaults %+v", p)
	}
}
