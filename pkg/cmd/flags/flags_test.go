package flags

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/internal/cmdtest"
)

func TestPlanningValidate(t *testing.T) {
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
			var p Planning
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

func TestPlanningDefaults(t *testing.T) {
	var p Planning
	p.AddFlags(pflag.NewFlagSet("test", pflag.ContinueOnError))
	if p.Catalog.Model.MaxPods != 110 || p.Catalog.Model.VMMemoryOverheadPercent != 0.075 ||
		len(p.Default.CapacityTypes) != 1 || p.Default.CapacityTypes[0] != "on-demand" || p.Catalog.Region != "" {
		t.Errorf("defaults %+v", p)
	}
}

func TestResolveCluster(t *testing.T) {
	flags := func(path, context, namespace string) *genericclioptions.ConfigFlags {
		f := genericclioptions.NewConfigFlags(false)
		f.KubeConfig, f.Context, f.Namespace = &path, &context, &namespace
		return f
	}
	tests := []struct {
		name                   string
		getter                 genericclioptions.RESTClientGetter
		wantNamespace, wantCtx string
		wantErr                string
	}{
		{"the kubeconfig's context and namespace", flags("../testdata/kubeconfig", "", ""), "default", "nowhere", ""},
		{"-n wins", flags("../testdata/kubeconfig", "", "shop"), "shop", "nowhere", ""},
		{"a missing kubeconfig", flags("testdata/missing", "", ""), "", "", "stat testdata/missing"},
		{"an unknown context", flags("../testdata/kubeconfig", "elsewhere", ""), "", "", `context "elsewhere" does not exist`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ResolveCluster(tc.getter)
			if cmdtest.WantErr(t, err, tc.wantErr) {
				return
			}
			if c.Namespace != tc.wantNamespace || c.Context != tc.wantCtx || c.RESTConfig.Timeout != DefaultRequestTimeout || c.RESTConfig.Host != "https://127.0.0.1:1" {
				t.Errorf("resolved %+v (host %s, timeout %s)", c, c.RESTConfig.Host, c.RESTConfig.Timeout)
			}
		})
	}
}

func TestResolveClusterWithoutAnyKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", t.TempDir()+"/none")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, err := ResolveCluster(genericclioptions.NewConfigFlags(false))
	if !clientcmd.IsEmptyConfig(err) {
		t.Fatalf("error %v, want the empty-config error", err)
	}
	if msg := NoInputError(err).Error(); !strings.HasSuffix(msg, "(no kubeconfig found)") {
		t.Errorf("NoInputError = %q", msg)
	}
}

func TestNoInputError(t *testing.T) {
	tests := []struct {
		name string
		why  error
		want string
	}{
		{"no kubeconfig flags", nil, "--kubeconfig or --context (no kubeconfig found)"},
		{"an empty kubeconfig", clientcmd.ErrEmptyConfig, "(no kubeconfig found)"},
		{"a broken kubeconfig", clientcmd.ErrNoContext, "(the kubeconfig cannot be used: " + clientcmd.ErrNoContext.Error() + ")"},
	}
	for _, tc := range tests {
		err := NoInputError(tc.why)
		if !strings.HasPrefix(err.Error(), "no input: pass manifests with -f FILE") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %q, want it to contain %q", tc.name, err, tc.want)
		}
	}
}
