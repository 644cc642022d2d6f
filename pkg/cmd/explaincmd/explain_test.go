package explaincmd

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/flags"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/explain"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
)

const flashSale = "../../../examples/flash-sale.yaml"

// kubeconfig returns ConfigFlags reading the kubeconfig at path.
func kubeconfig(path string) *genericclioptions.ConfigFlags {
	f := genericclioptions.NewConfigFlags(false)
	f.KubeConfig = &path
	return f
}

// parse runs the command line through NewCmdExplain and returns the
// options it would run with.
func parse(t *testing.T, cluster genericclioptions.RESTClientGetter, args ...string) (*ExplainOptions, error) {
	t.Helper()
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	var got *ExplainOptions
	cmd := NewCmdExplain(streams, cluster, func(_ context.Context, o *ExplainOptions) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return got, cmd.Execute()
}

func TestNewCmdExplainParsesIntoOptions(t *testing.T) {
	o, err := parse(t, nil, "-f", flashSale, "-o", "wide", "--region", "eu-west-1", "--capacity-type", "spot,on-demand",
		"--instance-family", "m7i", "--max-pods", "58", "--vm-memory-overhead-percent", "0.05", "--timeout", "3s")
	if err != nil {
		t.Fatal(err)
	}
	if o.Output != "wide" || o.Catalog.Region != "eu-west-1" || strings.Join(o.Default.CapacityTypes, ",") != "spot,on-demand" ||
		strings.Join(o.Default.InstanceFamilies, ",") != "m7i" || o.Catalog.Model.MaxPods != 58 ||
		o.Catalog.Model.VMMemoryOverheadPercent != 0.05 || o.Timeout != 3*time.Second || o.Input.Filenames[0] != flashSale {
		t.Errorf("parsed %+v", o)
	}
	// Complete hands --max-input-size to the catalog and --timeout to the
	// remote bases.
	if o.Catalog.MaxInputSize != snapshot.DefaultMaxInputSize || o.Input.RemoteTimeout != 3*time.Second {
		t.Errorf("completed catalog bound %d, remote timeout %s", o.Catalog.MaxInputSize, o.Input.RemoteTimeout)
	}
}

func TestExplainOptionsRejectBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no input", nil, "no input: pass manifests with -f FILE, -f DIR or -f -, or point at a cluster with --kubeconfig or --context (no kubeconfig found)"},
		{"bad output", []string{"-f", flashSale, "-o", "xml"}, `--output "xml": must be one of wide, json, yaml`},
		{"negative max pods", []string{"-f", flashSale, "--max-pods", "-1"}, "--max-pods -1: must not be negative"},
		{"overhead too big", []string{"-f", flashSale, "--vm-memory-overhead-percent", "1.5"}, "--vm-memory-overhead-percent 1.5"},
		{"bad capacity type", []string{"-f", flashSale, "--capacity-type", "reserved"}, `--capacity-type "reserved": must be on-demand or spot`},
		{"consolidation offline", []string{"-f", flashSale, "--consolidation"}, "--consolidation reads a live cluster's nodes"},
		{"a workload offline", []string{"-f", flashSale, "pod/a"}, "naming a workload needs a live cluster"},
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

// Moved from pkg/explain/live_test.go with the options.
func TestCompleteUsesTheKubeconfigWhenNoFilesAreGiven(t *testing.T) {
	const usable = "../testdata/kubeconfig"
	tests := []struct {
		name    string
		opts    ExplainOptions
		args    []string
		wantErr string
	}{
		{"a usable kubeconfig is input", ExplainOptions{Cluster: kubeconfig(usable)}, nil, ""},
		{"a workload with a kubeconfig", ExplainOptions{Cluster: kubeconfig(usable)}, []string{"deploy/web"}, ""},
		{"a missing kubeconfig is no input", ExplainOptions{Cluster: kubeconfig("testdata/missing")}, nil, "no input: pass manifests with -f FILE, -f DIR or -f -, or point at a cluster with --kubeconfig or --context (the kubeconfig cannot be used: stat testdata/missing"},
		{"no cluster at all", ExplainOptions{}, nil, "(no kubeconfig found)"},
		{"two workloads", ExplainOptions{Cluster: kubeconfig(usable)}, []string{"a", "b"}, "at most one workload"},
		{"a workload with -f", ExplainOptions{Options: explain.Options{Input: snapshot.Input{Filenames: []string{"x.yaml"}}}}, []string{"pod/a"}, "needs a live cluster"},
		{"an unknown workload type", ExplainOptions{Cluster: kubeconfig(usable)}, []string{"service/web"}, `unknown workload type "service"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Complete(tc.args)
			if err == nil {
				err = tc.opts.Validate()
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			case tc.wantErr == "" && (tc.opts.cluster == nil || tc.opts.cluster.RESTConfig.Timeout != flags.DefaultRequestTimeout || tc.opts.cluster.Namespace != "default" ||
				tc.opts.RESTConfig != tc.opts.cluster.RESTConfig || tc.opts.Namespace != "default"):
				t.Errorf("cluster not resolved: %+v", tc.opts)
			}
		})
	}
}

func TestExplainRunPrintsTheReport(t *testing.T) {
	o, err := parse(t, nil, "-f", flashSale)
	if err != nil {
		t.Fatal(err)
	}
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	o.IOStreams = streams
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NODEPOOL", "INSTANCE TYPE", "TOTAL", "Lower bound"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestExplainStopsWhenTheContextEnds(t *testing.T) {
	// A cluster that accepts requests and never answers: only the
	// context can end the read (the request timeout is 30s).
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(stop) }) // first: Close waits for the handlers
	cfg := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(cfg, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \""+hang.URL+"\"}\n"+
		"users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: c\n  context: {cluster: c, user: u, namespace: default}\ncurrent-context: c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cluster genericclioptions.RESTClientGetter
		args    []string
		cancel  time.Duration // after Run starts; negative: before
	}{
		{"offline, cancelled before the solve", nil, []string{"-f", flashSale}, -1},
		{"live, cancelled while reading the cluster", kubeconfig(cfg), nil, 200 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parse(t, tc.cluster, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			streams, _, out, _ := genericiooptions.NewTestIOStreams()
			o.IOStreams = streams
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel < 0 {
				cancel()
			} else {
				time.AfterFunc(tc.cancel, cancel)
			}
			start := time.Now()
			err = o.Run(ctx)
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("Run took %s after the context ended", took)
			}
			if err == nil || !strings.HasPrefix(err.Error(), "interrupted before the report was ready, nothing printed: ") || !strings.Contains(err.Error(), "context canceled") {
				t.Errorf("error %v, want one saying it was interrupted", err)
			}
			if out.Len() != 0 {
				t.Errorf("printed a report:\n%s", out.String())
			}
		})
	}
}
