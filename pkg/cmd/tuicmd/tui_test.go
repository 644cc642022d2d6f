package tuicmd

import (
	"context"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/flags"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui"
)

const flashSale = "../../../examples/flash-sale.yaml"

// parse runs the command line through NewCmdTUI and returns the options
// it would run with.
func parse(t *testing.T, cluster genericclioptions.RESTClientGetter, args ...string) (*TUIOptions, error) {
	t.Helper()
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	var got *TUIOptions
	cmd := NewCmdTUI(streams, cluster, func(_ context.Context, o *TUIOptions) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return got, cmd.Execute()
}

func TestNewCmdTUIParsesIntoOptions(t *testing.T) {
	o, err := parse(t, nil, "-f", flashSale, "--read-only", "--region", "eu-west-1", "--capacity-type", "spot", "--max-pods", "58")
	if err != nil {
		t.Fatal(err)
	}
	if !o.ReadOnly || o.Catalog.Region != "eu-west-1" || o.Default.CapacityTypes[0] != "spot" ||
		o.Catalog.Model.MaxPods != 58 || o.Timeout != tui.DefaultTimeout || o.ClusterName != "" || o.NewCloud == nil {
		t.Errorf("parsed %+v", o)
	}
}

func TestNewCmdTUIResolvesTheCluster(t *testing.T) {
	path, ctx := "../testdata/kubeconfig", ""
	o, err := parse(t, &genericclioptions.ConfigFlags{KubeConfig: &path, Context: &ctx})
	if err != nil {
		t.Fatal(err)
	}
	if o.cluster == nil || o.cluster.Context != "nowhere" || o.cluster.RESTConfig.Timeout != flags.DefaultRequestTimeout {
		t.Errorf("cluster %+v", o.cluster)
	}
}

func TestTUIRejectsBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"negative max pods, as explain", []string{"-f", flashSale, "--max-pods", "-1"}, "--max-pods -1: must not be negative"},
		{"overhead too big", []string{"-f", flashSale, "--vm-memory-overhead-percent", "1"}, "--vm-memory-overhead-percent 1"},
		{"bad capacity type", []string{"-f", flashSale, "--capacity-type", "reserved"}, `--capacity-type "reserved": must be on-demand or spot`},
		{"no input", nil, "no input: pass manifests with -f FILE, -f DIR or -f -, or point at a cluster with --kubeconfig or --context (no kubeconfig found)"},
		{"stdin", []string{"-f", "-"}, "-f -: the TUI reads keys from the terminal"},
		{"arguments", []string{"-f", flashSale, "web"}, `tui takes no arguments, got ["web"]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, nil, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line containing %q", err, tc.want)
			}
		})
	}
}

// Moved from pkg/tui/direct_test.go with the options.
func TestCommandRejectsCloudWithOfflineReadOnlyOrUnknownClouds(t *testing.T) {
	newCloud := func(context.Context, string, *rest.Config, client.Client) (cloud.CloudProvider, error) {
		return nil, nil
	}
	live := &flags.Cluster{RESTConfig: &rest.Config{}}
	for _, tc := range []struct {
		name string
		o    TUIOptions
		want string
	}{
		{"-f", TUIOptions{Cloud: "sim", Input: snapshot.Input{Filenames: []string{"x.yaml"}}, ClusterName: "c", NewCloud: newCloud}, "--cloud sim launches into a cluster, and -f works offline"},
		{"--read-only", TUIOptions{Cloud: "aws", Options: tui.Options{ReadOnly: true}, ClusterName: "c", NewCloud: newCloud, cluster: live}, "--cloud aws is for launching, which --read-only turns off"},
		{"no cluster name on aws", TUIOptions{Cloud: "aws", NewCloud: newCloud, cluster: live}, "--cluster-name is required with --cloud aws"},
		{"unknown", TUIOptions{Cloud: "gcp", cluster: live}, `--cloud "gcp": must be sim or aws`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Validate() = %v; want one line with %q", err, tc.want)
			}
		})
	}
}

func TestTUIAcceptsCloudOnALiveCluster(t *testing.T) {
	o := TUIOptions{Cloud: "sim", ClusterName: "c", cluster: &flags.Cluster{RESTConfig: &rest.Config{}},
		NewCloud: func(context.Context, string, *rest.Config, client.Client) (cloud.CloudProvider, error) {
			return nil, nil
		}}
	o.Catalog.Model.VMMemoryOverheadPercent = 0.075
	if err := o.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
}

// TestClusterNameDefaultsOnlyForSim: the simulated cloud keeps the
// operator's default cluster name; AWS has none (see the aws case above).
func TestClusterNameDefaultsOnlyForSim(t *testing.T) {
	newCloud := func(context.Context, string, *rest.Config, client.Client) (cloud.CloudProvider, error) {
		return nil, nil
	}
	o := TUIOptions{Cloud: "sim", NewCloud: newCloud, cluster: &flags.Cluster{RESTConfig: &rest.Config{}}}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.ClusterName != "rightsize" {
		t.Errorf("cluster name %q, want rightsize with --cloud sim", o.ClusterName)
	}
}
