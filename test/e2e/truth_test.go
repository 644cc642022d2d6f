package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Manifests of the answers-that-tell-the-truth cases (issue 18), written
// to a temporary directory by TestAnswersTellTheTruth.
var truthManifests = map[string]string{
	"web.yaml": webDeployment(3, `{requests: {cpu: "1", memory: 2Gi}}`),
	"windows-pod.yaml": `apiVersion: v1
kind: Pod
metadata: {name: iis}
spec:
  nodeSelector: {kubernetes.io/os: windows}
  containers:
  - name: c
    image: mcr.microsoft.com/windows/servercore/iis
    resources: {requests: {cpu: "1", memory: 1Gi}}
`,
	"windows-pool.yaml": `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: win}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: kubernetes.io/os, operator: In, values: [windows]}
`,
	"types.yaml": `instanceTypes:
- name: x.large
  cpu: "4"
  memory: 16Gi
  offerings:
  - {zone: z-1a, capacityType: on-demand, price: 0.2}
`,
}

// TestAnswersTellTheTruth runs the built plugin offline over the inputs a
// newcomer feeds it and asserts the line (or exit status) they see: flags
// that cannot be right are named, what is ignored is said, a search cut
// short says so, Windows is said to be unsupported, --exit-code tells CI
// whether every pod can be placed, small inputs are called optimal rather
// than measured against the bound, and the prices say how old they are.
func TestAnswersTellTheTruth(t *testing.T) {
	t.Parallel() // no control plane: runs beside the other tests that need none
	dir := t.TempDir()
	for name, data := range truthManifests {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	in := func(name string) string { return filepath.Join(dir, name) }
	flashSale := filepath.Join(repoRootDir(t), "examples", "flash-sale.yaml")
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string
		wantStderr []string
	}{
		{"an unknown instance family is named, with what was meant",
			[]string{"explain", "-f", in("web.yaml"), "--instance-family", "m7x"}, 1,
			nil, []string{`error: --instance-family "m7x": no such instance family in the embedded AWS catalog of 2026-07-20, region us-east-1 (spot 2025-05-28); did you mean m7a, m7g, m7i?`}},
		{"a family nothing is near is named",
			[]string{"explain", "-f", in("web.yaml"), "--instance-family", "foo"}, 1,
			nil, []string{`error: --instance-family "foo": no such instance family in the embedded AWS catalog`}},
		{"--region with --instance-types is said to be ignored",
			[]string{"explain", "-f", in("web.yaml"), "--instance-types", in("types.yaml"), "--region", "eu-west-1"}, 0,
			[]string{"Prices: instance types from " + in("types.yaml") + "."},
			[]string{"Warning: --region eu-west-1 is ignored: the instance types, zones and prices come from --instance-types " + in("types.yaml")}},
		{"a search cut short by --timeout says so",
			[]string{"explain", "-f", flashSale, "--timeout", "1ns"}, 0,
			[]string{"The search reached --timeout and stopped early; the plan may be dearer than one found with more time."}, nil},
		{"a pod selecting Windows is told Windows is not supported",
			[]string{"explain", "-f", in("windows-pod.yaml")}, 0,
			[]string{"default/iis   Windows nodes are not supported yet: the pod selects kubernetes.io/os windows, and every instance type is linux"}, nil},
		{"a Windows NodePool is told Windows is not supported",
			[]string{"explain", "-f", in("windows-pool.yaml"), "-f", in("web.yaml")}, 0,
			nil, []string{"Warning: NodePool win requires kubernetes.io/os In [windows]: Windows nodes are not supported yet; the pool can launch no node"}},
		{"--exit-code: 1 when a pod cannot be placed",
			[]string{"explain", "-f", in("windows-pod.yaml"), "--exit-code"}, 1,
			[]string{"1 pod(s) cannot be placed"}, nil},
		{"--exit-code: 0 when every pod can be placed",
			[]string{"explain", "-f", in("web.yaml"), "--exit-code"}, 0, []string{"TOTAL"}, nil},
		{"--exit-code: 2 when explain fails",
			[]string{"explain", "-f", in("missing.yaml"), "--exit-code"}, 2, nil, []string{"error: "}},
		{"without --exit-code an unplaceable pod is no failure",
			[]string{"explain", "-f", in("windows-pod.yaml")}, 0, nil, nil},
		{"explain's help documents --exit-code",
			[]string{"explain", "--help"}, 0, []string{"--exit-code", "0 when every pod can be\nplaced, 1 when any cannot, 2 when explain itself failed"}, nil},
		{"a small input planned at its optimum is called optimal",
			[]string{"explain", "-f", in("web.yaml")}, 0,
			[]string{"This plan is optimal: an exhaustive search finds none cheaper for these 3 pods."}, nil},
		{"the prices say how old they are",
			[]string{"explain", "-f", in("web.yaml"), "--region", "eu-west-1"}, 0,
			[]string{"Prices: embedded AWS catalog of 2025-05-28, region eu-west-1."}, nil},
		{"tui without a terminal says what to use instead",
			[]string{"tui", "-f", in("web.yaml")}, 1, nil, []string{"error: tui needs a terminal; use explain for scripts"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := plugin(t, "", tc.args...)
			if code := exitCode(t, r.err); code != tc.wantCode {
				t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, r.stdout, r.stderr)
			}
			for _, want := range tc.wantStdout {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
				}
			}
			for _, want := range tc.wantStderr {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
		})
	}

	t.Run("-o json says where the prices come from and how old they are", func(t *testing.T) {
		r := plugin(t, "", "explain", "-f", in("web.yaml"), "-o", "json")
		if r.err != nil {
			t.Fatalf("%v: %s", r.err, r.stderr)
		}
		var got struct {
			Source  struct{ Origin, Region, Date, Description string } `json:"source"`
			Optimal float64                                            `json:"optimalPricePerHour"`
			Total   float64                                            `json:"totalPricePerHour"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatal(err)
		}
		s := got.Source
		if s.Origin != "embedded" || s.Region != "us-east-1" || s.Date != "2026-07-20" || s.Description != "embedded AWS catalog of 2026-07-20, region us-east-1 (spot 2025-05-28)" {
			t.Errorf("source = %+v", s)
		}
		if got.Optimal <= 0 || got.Optimal > got.Total+1e-9 {
			t.Errorf("optimalPricePerHour %v, totalPricePerHour %v: want 0 < optimal ≤ total", got.Optimal, got.Total)
		}
	})
}

// exitCode is the exit status of a finished run.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	}
	t.Fatalf("the plugin did not run: %v", err)
	return -1
}

// repoRootDir is the repository's root: test/e2e's grandparent.
func repoRootDir(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(filepath.Dir(wd))
}
