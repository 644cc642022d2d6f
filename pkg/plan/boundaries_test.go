package plan

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// module is this project's module path.
const module = "github.com/rightsize-dev/kubectl-rightsize"

// deps lists, for every package the patterns match, the packages it
// imports directly or indirectly (tests excluded), with `go list`.
func deps(t *testing.T, patterns ...string) map[string][]string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	args := append([]string{"list", "-e", "-f", "{{.ImportPath}} {{join .Deps \" \"}}"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.." // the module root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	got := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 {
			got[fields[0]] = fields[1:]
		}
	}
	if len(got) == 0 {
		t.Fatalf("go list %v matched no packages", patterns)
	}
	return got
}

// violations returns "pkg imports dep" for every dependency allowed rejects.
func violations(graph map[string][]string, allowed func(pkg, dep string) bool) []string {
	var out []string
	for pkg, ds := range graph {
		for _, d := range ds {
			if !allowed(pkg, d) {
				out = append(out, pkg+" imports "+d)
			}
		}
	}
	return out
}

// frontEnd allows a front end (explain, the TUI, commands) anything but
// the operator: they plan through pkg/plan and decide through
// pkg/disruption, as the operator does.
func frontEnd(_, dep string) bool {
	return dep != module+"/pkg/operator" && !strings.HasPrefix(dep, module+"/pkg/operator/")
}

// solverKnownExceptions are the packages under pkg/solver that break the
// solver's rule today, each with why; the list may only shrink (the test
// fails when one is gone or a new package breaks the rule). The solver
// itself, pkg/solver, has none.
var solverKnownExceptions = map[string]string{
	// The independent checker judges node affinity and taints with
	// Kubernetes' own helpers (k8s.io/component-helpers), on purpose.
	module + "/pkg/solver/check": "k8s.io/component-helpers as the judge",
	// The baselines run every plan through the checker.
	module + "/pkg/solver/baseline": "imports pkg/solver/check",
}

// pure allows the solver the standard library, gonum and itself only: no
// client-go, no cloud SDK, no I/O-bound packages of this project.
func pure(pkg, dep string) bool {
	if _, ok := solverKnownExceptions[pkg]; ok {
		return true
	}
	first, _, _ := strings.Cut(dep, "/")
	switch {
	case !strings.Contains(first, "."): // the standard library
		return true
	case dep == "gonum.org/v1/gonum" || strings.HasPrefix(dep, "gonum.org/v1/gonum/"):
		return true
	case dep == module+"/pkg/solver" || strings.HasPrefix(dep, module+"/pkg/solver/"):
		_, exception := solverKnownExceptions[dep]
		return !exception
	}
	return false
}

func TestRules(t *testing.T) {
	tests := []struct {
		name    string
		rule    func(pkg, dep string) bool
		pkg     string
		dep     string
		allowed bool
	}{
		{"a front end may plan", frontEnd, module + "/pkg/tui", module + "/pkg/plan", true},
		{"a front end may decide disruption", frontEnd, module + "/pkg/explain", module + "/pkg/disruption", true},
		{"a front end may not import the operator", frontEnd, module + "/pkg/tui/launch", module + "/pkg/operator/nodeclaim", false},
		{"nor its root", frontEnd, module + "/pkg/cmd/tuicmd", module + "/pkg/operator", false},
		{"a name that only starts like it", frontEnd, module + "/pkg/explain", module + "/pkg/operatorx", true},
		{"the solver may use the standard library", pure, module + "/pkg/solver", "container/heap", true},
		{"and gonum", pure, module + "/pkg/solver", "gonum.org/v1/gonum/optimize/convex/lp", true},
		{"and itself", pure, module + "/pkg/solver/check", module + "/pkg/solver", true},
		{"not client-go", pure, module + "/pkg/solver", "k8s.io/client-go/kubernetes", false},
		{"not the cloud", pure, module + "/pkg/solver", module + "/pkg/cloud", false},
		{"not through a known exception", pure, module + "/pkg/solver", module + "/pkg/solver/check", false},
		{"a known exception is let be", pure, module + "/pkg/solver/check", "k8s.io/component-helpers/scheduling/corev1", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rule(tc.pkg, tc.dep); got != tc.allowed {
				t.Errorf("%s -> %s allowed = %v, want %v", tc.pkg, tc.dep, got, tc.allowed)
			}
		})
	}
}

// TestFrontEndsDoNotImportTheOperator checks DESIGN.md's rule: no package
// under pkg/explain, pkg/tui or pkg/cmd imports pkg/operator/... — but the
// operator's own command (pkg/cmd/operatorcmd, which runs it) and the root
// command that wires every command in.
func TestFrontEndsDoNotImportTheOperator(t *testing.T) {
	graph := deps(t, "./pkg/explain/...", "./pkg/tui/...", "./pkg/cmd/...")
	delete(graph, module+"/pkg/cmd/operatorcmd")
	delete(graph, module+"/pkg/cmd/root")
	for _, v := range violations(graph, frontEnd) {
		t.Error(v)
	}
}

// TestSolverIsPure checks that nothing under pkg/solver imports anything
// but pkg/solver, the standard library and gonum, but for the known
// exceptions.
func TestSolverIsPure(t *testing.T) {
	graph := deps(t, "./pkg/solver/...")
	for _, v := range violations(graph, pure) {
		t.Error(v)
	}
	for pkg := range solverKnownExceptions {
		if _, ok := graph[pkg]; !ok {
			t.Errorf("%s is gone: drop it from solverKnownExceptions", pkg)
		}
	}
}
