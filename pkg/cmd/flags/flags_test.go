package flags

import (
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/internal/cmdtest"
)

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
