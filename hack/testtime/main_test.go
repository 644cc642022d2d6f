package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportOfStaticStreams feeds hand-written `go test -json` lines and
// checks the counts, the exit code, the tables and what the stream shows.
func TestReportOfStaticStreams(t *testing.T) {
	const pkg = `"Package":"example.com/m/a"`
	line := func(action, test string, elapsed string, output string) string {
		s := `{"Action":"` + action + `",` + pkg
		if test != "" {
			s += `,"Test":"` + test + `"`
		}
		if elapsed != "" {
			s += `,"Elapsed":` + elapsed
		}
		if output != "" {
			s += `,"Output":"` + output + `\n"`
		}
		return s + "}\n"
	}
	tests := []struct {
		name       string
		in         string
		wantRC     int
		wantCounts string
		wantOut    []string // in the stdout
		notOut     []string // not in the stdout
	}{
		{
			name: "all pass, the slow one named in the stream",
			in: line("run", "TestFast", "", "") + line("output", "TestFast", "", "quiet log") + line("pass", "TestFast", "0.01", "") +
				line("run", "TestSlow", "", "") + line("pass", "TestSlow/sub", "11", "") + line("pass", "TestSlow", "12.5", "") +
				line("run", "TestWaited", "", "") + line("output", "TestWaited", "", "    planes_test.go:130: e2e: waited 1m0.5s for shared control plane 2") +
				line("pass", "TestWaited", "62.5", "") +
				line("skip", "TestSkipped", "0", "") + line("pass", "", "13", ""),
			wantRC:     0,
			wantCounts: "tests: 4 passed, 0 failed, 1 skipped",
			wantOut: []string{"--- PASS: TestSlow (12.50s) [example.com/m/a]", "| 1 | example.com/m/a | TestSlow | 12.5 | 0.0 | pass |",
				"| 2 | example.com/m/a | TestWaited | 2.0 | 60.5 | pass |",
				"| example.com/m/a | 13.0 | 4 | pass |", "ok  \texample.com/m/a\t13.000s\t(4 tests)"},
			notOut: []string{"quiet log", "TestSlow/sub |", "TestFast (0.01s)"},
		},
		{
			name: "a failed subtest: its output and its parent's, exit 1",
			in: line("run", "TestX", "", "") + line("output", "TestX/case", "", "    x_test.go:9: got 1, want 2") +
				line("fail", "TestX/case", "0.5", "") + line("output", "TestX", "", "--- FAIL: TestX (0.60s)") +
				line("fail", "TestX", "0.6", "") + line("output", "", "", "FAIL") + line("fail", "", "0.7", ""),
			wantRC:     1,
			wantCounts: "tests: 0 passed, 2 failed, 0 skipped",
			wantOut:    []string{"x_test.go:9: got 1, want 2", "--- FAIL: TestX (0.60s)", "### Failed (3)", "--- FAIL: TestX/case (example.com/m/a)", "FAIL example.com/m/a"},
		},
		{
			name: "the summary repeats a failed test's messages, not the logs dumped after them",
			in: line("run", "TestY", "", "") + line("output", "TestY", "", "    y_test.go:3: rollout status: timed out") +
				line("output", "TestY", "", "        events: FailedScheduling") +
				strings.Repeat(line("output", "TestY", "", `        {\"msg\":\"Patch pod\"}`), 50) +
				line("output", "TestY", "", "    framework_test.go:205: I1207 scheduler.go:1] a klog line") +
				strings.Repeat(line("output", "TestY", "", "        I1207 more klog"), 20) +
				line("output", "TestY", "", `        E1207 run.go:72] command failed err=bind: address already in use`) +
				line("fail", "TestY", "2", "") + line("fail", "", "3", ""),
			wantRC:     1,
			wantCounts: "tests: 0 passed, 1 failed, 0 skipped",
			wantOut: []string{"### Failed (2)\n\n--- FAIL: TestY (example.com/m/a)\n    y_test.go:3: rollout status: timed out\n    events: FailedScheduling\n" +
				"    framework_test.go:205: I1207 scheduler.go:1] a klog line\n" + strings.Repeat("    I1207 more klog\n", 6) +
				"    E1207 run.go:72] command failed err=bind: address already in use\n" + "FAIL example.com/m/a"},
		},
		{
			name:       "a package that never ended (killed) fails",
			in:         line("run", "TestHang", "", "") + line("output", "TestHang", "", "waiting"),
			wantRC:     1,
			wantCounts: "tests: 0 passed, 0 failed, 0 skipped",
			wantOut:    []string{"| example.com/m/a | 0.0 | 0 | did not finish |"},
		},
		{
			name:       "go's own FAIL line outside the JSON fails",
			in:         "FAIL\texample.com/m/b [setup failed]\n",
			wantRC:     1,
			wantCounts: "tests: 0 passed, 0 failed, 0 skipped",
			wantOut:    []string{"FAIL\texample.com/m/b [setup failed]"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			rc := run(nil, strings.NewReader(tc.in), &out, &errOut)
			if rc != tc.wantRC {
				t.Errorf("exit %d, want %d; stderr %s", rc, tc.wantRC, errOut.String())
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if last := lines[len(lines)-1]; last != tc.wantCounts {
				t.Errorf("last line %q, want %q", last, tc.wantCounts)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range tc.notOut {
				if strings.Contains(out.String(), w) {
					t.Errorf("output has %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// TestReportOfARealRun runs `go test -json` on a throwaway module with a
// passing, a failing, a skipped test and subtests, and a package that does
// not compile, as a filter keeping the JSON, then reads the kept JSON back
// as a file.
func TestReportOfARealRun(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a throwaway module")
	}
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	write("a/a_test.go", `package a

import "testing"

func TestPass(t *testing.T) {
	for _, n := range []string{"one", "two"} {
		t.Run(n, func(t *testing.T) {})
	}
}
func TestFail(t *testing.T) { t.Log("the why of it"); t.Fatal("boom") }
func TestSkip(t *testing.T) { t.Skip("not here") }
`)
	write("b/b_test.go", "package b\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) { undefined() }\n")
	cmd := exec.Command("go", "test", "-json", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	in, err := cmd.Output() // exits 1: a test fails
	if len(in) == 0 {
		t.Fatalf("go test -json printed nothing: %v", err)
	}
	kept := filepath.Join(dir, "kept.json")
	var out, errOut bytes.Buffer
	if rc := run([]string{"-json", kept, "-md", filepath.Join(dir, "report.md")}, bytes.NewReader(in), &out, &errOut); rc != 1 {
		t.Errorf("exit %d, want 1; stderr %s", rc, errOut.String())
	}
	for _, w := range []string{"the why of it", "boom", "undefined: undefined", "FAIL\texample.com/m/b", "--- FAIL: TestFail (example.com/m/a)",
		"tests: 3 passed, 1 failed, 1 skipped"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(md), "| a | ") && !strings.Contains(string(md), "example.com/m/a") {
		t.Errorf("report.md %q (%v) lacks package a", md, err)
	}
	// The kept JSON, read back as a recorded run: the same counts, no stream.
	out.Reset()
	if rc := run([]string{kept}, nil, &out, &errOut); rc != 1 {
		t.Errorf("recorded run: exit %d, want 1", rc)
	}
	if !strings.HasSuffix(strings.TrimSpace(out.String()), "tests: 3 passed, 1 failed, 1 skipped") {
		t.Errorf("recorded run:\n%s", out.String())
	}
	// Its messages once: in the summary, not in a stream.
	if !strings.Contains(out.String(), "--- FAIL: TestFail (example.com/m/a)\n    a_test.go:10: the why of it\n    a_test.go:10: boom\n") ||
		strings.Count(out.String(), "the why of it") != 1 {
		t.Errorf("recorded run: want the failed test listed with its messages, and no stream:\n%s", out.String())
	}
}

// TestSteps reads a steps.tsv and prints the table; bad lines are refused
// with the line named.
func TestSteps(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "steps.tsv")
	if err := os.WriteFile(good, []byte("vet\t100\t130.5\t0\t50.2\ne2e\t130.5\t1330.5\t1\t\nunit\t130.5\t200.5\t0\t100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if rc := run([]string{"-steps", good}, nil, &out, &errOut); rc != 0 {
		t.Fatalf("exit %d: %s", rc, errOut.String())
	}
	for _, w := range []string{"| vet | +0.0 s | 30.5 s | 50.2 s | 0 |", "| e2e | +30.5 s | 20 min 00 s | ? | 1 |", "| unit | +30.5 s | 1 min 10 s | 1 min 40 s | 0 |", "| **total** | | **20 min 30 s** | 2 min 30 s | |"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("step table lacks %q:\n%s", w, out.String())
		}
	}
	bad := filepath.Join(dir, "bad.tsv")
	if err := os.WriteFile(bad, []byte("vet\t100\tlater\t0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	if rc := run([]string{"-steps", bad}, nil, &out, &errOut); rc != 2 || !strings.Contains(errOut.String(), `line 1: end "later"`) {
		t.Errorf("bad steps: exit %d, stderr %q; want 2 and the line named", rc, errOut.String())
	}
}
