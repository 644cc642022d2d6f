package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// binary is the kubectl-rightsize built once for the suite.
var binary string

func TestMain(m *testing.M) {
	// CONFORMANCE_BINARY names a binary already built (from this tree),
	// to skip the build while iterating on scenarios.
	if binary = os.Getenv("CONFORMANCE_BINARY"); binary != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "conformance-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "kubectl-rightsize")
	build := exec.Command("go", "build", "-o", binary, "./cmd/kubectl-rightsize")
	build.Dir = filepath.Join("..", "..")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building kubectl-rightsize: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// outcome is one scenario's result.
type outcome struct {
	sc   *scenario
	errs []string
}

// TestConformance runs every scenario through `explain -f DIR -o json` and
// judges its plan. A scenario marked knownGap may fail (it is counted as
// not passing); one that passes while marked fails the test, so the mark
// goes when the fix lands.
func TestConformance(t *testing.T) {
	scenarios, err := loadSuites("testdata")
	if err != nil {
		t.Fatal(err)
	}
	results := make([]outcome, len(scenarios))
	sem := make(chan struct{}, 2*runtime.NumCPU())
	var wg sync.WaitGroup
	for i := range scenarios {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = outcome{sc: &scenarios[i], errs: run(&scenarios[i], t.TempDir())}
		}()
	}
	wg.Wait()

	pass := 0
	var gaps, report []string
	for _, r := range results {
		sc := r.sc
		t.Run(sc.Name, func(t *testing.T) {
			switch {
			case sc.KnownGap != "" && len(r.errs) == 0:
				t.Errorf("%s (%s) passes but is marked knownGap %q: remove the mark", sc.Name, sc.file, sc.KnownGap)
			case sc.KnownGap != "":
				t.Logf("known gap (%s): %s", sc.KnownGap, strings.Join(r.errs, "; "))
			case len(r.errs) > 0:
				t.Errorf("%s (%s; from %s):\n  %s", sc.Name, sc.file, sc.Source, strings.Join(r.errs, "\n  "))
			}
		})
		switch {
		case len(r.errs) == 0 && sc.KnownGap != "":
			pass++
			report = append(report, fmt.Sprintf("PASSES BUT MARKED knownGap (remove the mark): %s (%s)", sc.Name, sc.file))
		case len(r.errs) == 0:
			pass++
		case sc.KnownGap != "":
			gaps = append(gaps, fmt.Sprintf("known gap: %s (%s): %s", sc.Name, sc.file, sc.KnownGap))
		default:
			report = append(report, fmt.Sprintf("FAIL: %s (%s): %s", sc.Name, sc.file, r.errs[0]))
		}
	}
	sort.Strings(gaps)
	sort.Strings(report)
	summary := strings.Join(append(append(report, gaps...), fmt.Sprintf("conformance: %d/%d pass", pass, len(results))), "\n") + "\n"
	if path := os.Getenv("CONFORMANCE_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(summary), 0o644); err != nil {
			t.Error(err)
		}
	}
	t.Log("\n" + summary)
}

// run writes a scenario's manifests, runs explain and judges the plan.
func run(sc *scenario, dir string) []string {
	in, err := sc.writeInput(dir)
	if err != nil {
		return []string{err.Error()}
	}
	pods := sc.pods()
	typesFile, err := sc.typesFile()
	if err != nil {
		return []string{err.Error()}
	}
	types, err := readTypes(typesFile)
	if err != nil {
		return []string{err.Error()}
	}
	args := append([]string{"explain", "-f", in, "-o", "json", "--instance-types", typesFile}, sc.Args...)
	// A plan that takes this long is a failure of its own, not a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return []string{fmt.Sprintf("explain: %v: %s", err, strings.TrimSpace(stderr.String()))}
	}
	var p plan
	if err := json.Unmarshal(stdout.Bytes(), &p); err != nil {
		return []string{fmt.Sprintf("plan JSON: %v", err)}
	}
	j := &judge{sc: sc, pods: pods, types: types, plan: &p}
	return j.check()
}
