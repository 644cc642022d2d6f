package root

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/internal/cmdtest"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/version"
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
		{"explain offline", []string{"explain", "-f", "../../../examples/flash-sale.yaml"}, "TOTAL", ""},
		{"unknown flag", []string{"explain", "--bogus"}, "", "unknown flag: --bogus"},
		{"no kubeconfig and no -f", []string{"explain", "--kubeconfig", "../testdata/none"}, "", "no input: pass manifests with -f"},
		{"a workload needs a cluster", []string{"explain", "pod/x", "-f", "../../../examples/flash-sale.yaml"}, "", "naming a workload needs a live cluster"},
		{"one workload at most", []string{"explain", "pod/x", "pod/y"}, "", "at most one workload"},
		{"unknown workload type", []string{"explain", "service/x", "--kubeconfig", "../testdata/kubeconfig"}, "", `unknown workload type "service"`},
		{"the interruption queue is for aws", []string{"operator", "--cloud", "sim", "--interruption-queue", "q", "--log-format", "text", "--kubeconfig", "../testdata/kubeconfig"},
			"", "--interruption-queue is for --cloud aws"},
		{"unreachable cluster", []string{"explain", "--kubeconfig", "../testdata/kubeconfig", "--request-timeout", "5s"}, "", "cannot list pods: cannot reach the cluster at https://127.0.0.1:1: connection refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			streams, _, out, _ := genericiooptions.NewTestIOStreams()
			cmd := NewCmdRoot(streams, version.Info{})
			cmd.SetArgs(tc.args)
			err := cmd.Execute()
			if cmdtest.WantErr(t, err, tc.wantErr) {
				return
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out.String())
			}
		})
	}
}

// TestCompletion checks the completions that need no cluster; the ones
// that read it (pending pods, namespaces, through kubectl) are proven in
// test/e2e.
func TestCompletion(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		want      []string
		unwanted  []string
		directive string
	}{
		{"regions of the catalog", []string{"explain", "--region", "eu-west-"}, []string{"eu-west-1", "eu-west-2"}, []string{"us-east-1"}, "NoFileComp"},
		{"families of the catalog", []string{"tui", "--instance-family", "m7"}, []string{"m7i", "m7g"}, []string{"c7i", "m7i.large"}, "NoFileComp"},
		{"output formats", []string{"explain", "-o", ""}, []string{"wide", "json", "yaml"}, nil, "NoFileComp"},
		{"clouds", []string{"operator", "--cloud", "a"}, []string{"aws"}, []string{"sim"}, "NoFileComp"},
		{"capacity types", []string{"explain", "--capacity-type", ""}, []string{"on-demand", "spot"}, nil, "NoFileComp"},
		{"a workload type goes on to its names", []string{"explain", "--kubeconfig", "../testdata/none", "deploy"}, []string{"deployment/"}, []string{"daemonset/"}, "NoSpace"},
		{"manifests are files", []string{"explain", "-f", ""}, []string{"json"}, nil, "FilterFileExt"},
		{"a second workload is refused", []string{"explain", "--kubeconfig", "../testdata/none", "pod/x", ""}, nil, []string{"deployment/"}, "NoFileComp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			streams, _, out, errOut := genericiooptions.NewTestIOStreams()
			cmd := NewCmdRoot(streams, version.Info{})
			cmd.SetArgs(append([]string{"__complete"}, tc.args...))
			if err := cmd.Execute(); err != nil {
				t.Fatalf("error: %v", err)
			}
			got := strings.Fields(out.String())
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("completions %v lack %q", got, w)
				}
			}
			for _, u := range tc.unwanted {
				if slices.Contains(got, u) {
					t.Errorf("completions %v offer %q", got, u)
				}
			}
			if !strings.Contains(errOut.String(), tc.directive) {
				t.Errorf("directive %q, want %s", errOut.String(), tc.directive)
			}
		})
	}
}

func TestExecutePrintsErrorsOnOneLine(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    string
		wantErrOut string
	}{
		{"success", []string{"version"}, 0, "kubectl-rightsize v1.2.3 (commit abc", ""},
		{"an error is one line after error:", []string{"explain", "--kubeconfig", "../testdata/none"}, 1, "",
			"error: no input: pass manifests with -f FILE, -f DIR or -f -, or point at a cluster with --kubeconfig or --context (the kubeconfig cannot be used: stat ../testdata/none: no such file or directory)\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			streams, _, out, errOut := genericiooptions.NewTestIOStreams()
			code := Execute(context.Background(), streams, version.Info{Version: "v1.2.3", Commit: "abc"}, tc.args)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tc.wantCode, errOut.String())
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("stdout %q lacks %q", out.String(), tc.wantOut)
			}
			if tc.wantErrOut != "" && errOut.String() != tc.wantErrOut {
				t.Errorf("stderr %q, want %q", errOut.String(), tc.wantErrOut)
			}
		})
	}
}

func TestOneLine(t *testing.T) {
	if got := oneLine("cannot list pods:\n  connection refused\t (retry)\n"); got != "cannot list pods: connection refused (retry)" {
		t.Errorf("oneLine = %q", got)
	}
}
