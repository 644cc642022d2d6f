//go:build planhashes

package solver_test

import (
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/bench"
	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// updatePlanHashes rewrites testdata/planhashes.txt instead of comparing.
var updatePlanHashes = flag.Bool("update-planhashes", false, "rewrite testdata/planhashes.txt")

// hashedProblem is one benchmark problem whose plan JSON is hashed.
type hashedProblem struct {
	name string
	make func() (*Problem, error)
	// consolidate plans consolidation instead of provisioning.
	consolidate bool
}

// hashedProblems are the problems of BenchmarkSuites (suites a-plain, a,
// b, c, d, h and the 200 tiny problems of e), BenchmarkKarpenterMix and
// BenchmarkConsolidate (suite f).
func hashedProblems() []hashedProblem {
	var ps []hashedProblem
	add := func(suite string, sizes []int, make func(n int) (*Problem, error)) {
		for _, n := range sizes {
			ps = append(ps, hashedProblem{name: fmt.Sprintf("suite=%s/pods=%d", suite, n), make: func() (*Problem, error) { return make(n) }})
		}
	}
	add("a-plain", []int{1000, 5000, 20000}, func(n int) (*Problem, error) { return bench.Karpenter(n, 1, false), nil })
	add("a", []int{1000, 5000, 20000}, func(n int) (*Problem, error) { return bench.Karpenter(n, 1, true), nil })
	add("b", []int{1000, 10000}, func(n int) (*Problem, error) { return bench.Catalog(n, 1) })
	add("c", []int{1000, 10000}, func(n int) (*Problem, error) { return bench.Bimodal(n, 1) })
	add("d", []int{1000, 10000}, func(n int) (*Problem, error) { return bench.GPU(n, 1) })
	add("h", []int{50000}, func(n int) (*Problem, error) { return bench.Heterogeneous(n, 1) })
	add("karpenter-mix", []int{1000, 5000, 20000}, func(n int) (*Problem, error) { return bench.KarpenterMix(n, 42), nil })
	for seed := uint64(0); seed < 200; seed++ {
		ps = append(ps, hashedProblem{name: fmt.Sprintf("suite=e/seed=%d", seed), make: func() (*Problem, error) { return bench.Tiny(seed), nil }})
	}
	for _, size := range []int{2000, 33000} {
		ps = append(ps, hashedProblem{name: fmt.Sprintf("suite=f-test-catalog/size=%d", size), consolidate: true, make: func() (*Problem, error) {
			return consolidationCluster(rand.New(rand.NewPCG(11, uint64(size))), size, 0.8), nil
		}})
	}
	for _, size := range []int{2000, 33000} {
		ps = append(ps, hashedProblem{name: fmt.Sprintf("suite=f-aws-catalog/size=%d", size), consolidate: true, make: func() (*Problem, error) {
			src, err := bench.Catalog(size, 7)
			if err != nil {
				return nil, err
			}
			return provisioned(rand.New(rand.NewPCG(12, uint64(size))), src, 0.8), nil
		}})
	}
	return ps
}

// TestPlanHashes guards refactors that must not change any plan: it
// solves every benchmark problem and compares the sha256 of each plan's
// JSON with testdata/planhashes.txt (-update-planhashes rewrites it). It
// is built only with -tags planhashes (make planhashes): a solver change
// meant to change plans updates the file, and make test does not carry a
// test that tens of seconds of solving would only skip.
func TestPlanHashes(t *testing.T) {
	var lines []string
	for _, hp := range hashedProblems() {
		p, err := hp.make()
		if err != nil {
			t.Fatalf("%s: %v", hp.name, err)
		}
		var out any
		if hp.consolidate {
			out, err = Consolidate(p)
		} else {
			out, err = Solve(p)
		}
		if err != nil {
			t.Fatalf("%s: %v", hp.name, err)
		}
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatalf("%s: %v", hp.name, err)
		}
		lines = append(lines, fmt.Sprintf("%x  %s", sha256.Sum256(b), hp.name))
	}
	got := strings.Join(lines, "\n") + "\n"
	path := filepath.Join("testdata", "planhashes.txt")
	if *updatePlanHashes {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wantLines := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
	if len(wantLines) != len(lines) {
		t.Fatalf("%d plan hashes, %s has %d", len(lines), path, len(wantLines))
	}
	differ := 0
	for i := range lines {
		if lines[i] != wantLines[i] {
			differ++
			t.Errorf("plan changed:\n  got  %s\n  want %s", lines[i], wantLines[i])
		}
	}
	t.Logf("%d plan hashes, %d differ from %s", len(lines), differ, path)
}
