// Command testtime reads `go test -json` output and reports where the time
// went: the slowest tests (package, test, seconds) and each package's time,
// as Markdown, then the plain line
//
//	tests: N passed, N failed, N skipped
//
// that CI reads (every test and subtest with a result counts once).
//
// As a filter it also passes a human-readable stream through while the tests
// run, keeps the raw JSON in a file, and prints the whole output of every
// failed test and package, so nothing that failed is hidden:
//
//	go test -json ./... | testtime -json bin/test-unit.json
//	testtime bin/test-*.json          # the report of runs already recorded
//	testtime -steps bin/steps.tsv     # the step table of make test (hack/step.sh)
//
// It exits 1 when a test or a package failed (or a package did not build),
// 2 on bad input or usage, else 0.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Time        time.Time
	Action      string
	Package     string
	ImportPath  string // build-output and build-fail lines
	Test        string
	Elapsed     float64 // seconds
	Output      string
	FailedBuild string
}

// testResult is one test's (or subtest's) outcome.
type testResult struct {
	Package, Test string
	Action        string  // pass, fail or skip
	Seconds       float64 // its own time: elapsed less Waited
	Waited        float64 // seconds it waited for a shared control plane
}

// waitedRe is the line test/e2e logs when a test gets a shared control
// plane (planes_test.go): the time before it is the pool's, not the test's.
var waitedRe = regexp.MustCompile(`e2e: waited (\S+) for shared control plane`)

// pkgResult is one package's outcome.
type pkgResult struct {
	Package string
	Action  string // pass, fail or skip ("no test files")
	Seconds float64
	Tests   int // top-level tests with a result
}

// report gathers the results of one or more `go test -json` streams.
type report struct {
	tests    []testResult
	pkgs     map[string]*pkgResult
	order    []string // packages in order of first result
	output   map[string][]string
	waited   map[string]float64  // seconds each test waited for a control plane
	buildOut map[string][]string // build-output lines by import path
	failures []string            // keys of failed tests and packages, in order
	bad      int                 // lines that were not JSON (go's own messages, e.g. a package's setup failure)

	// stream, when not nil, receives the human-readable run.
	stream io.Writer
	// slowAt is the elapsed time from which the stream names a passing
	// top-level test.
	slowAt float64
}

func newReport(stream io.Writer) *report {
	return &report{pkgs: map[string]*pkgResult{}, output: map[string][]string{}, waited: map[string]float64{}, buildOut: map[string][]string{},
		stream: stream, slowAt: 10}
}

// key names a test's (or, with test "", a package's) output buffer.
func key(pkg, test string) string { return pkg + "\x00" + test }

// add takes one line of input.
func (r *report) add(line []byte) {
	var ev event
	if len(line) == 0 {
		return
	}
	if line[0] != '{' || json.Unmarshal(line, &ev) != nil {
		// go test prints build errors of packages it could not build
		// outside the JSON stream.
		r.bad++
		if strings.HasPrefix(string(line), "FAIL") {
			r.failures = append(r.failures, key(strings.TrimSpace(string(line)), ""))
		}
		r.printf("%s\n", line)
		return
	}
	if ev.Package != "" {
		r.pkg(ev.Package) // so that a package that never ends is seen
	}
	switch ev.Action {
	case "build-output":
		r.buildOut[ev.ImportPath] = append(r.buildOut[ev.ImportPath], ev.Output)
		return
	case "build-fail":
		// The failed package's "fail" line, with FailedBuild, follows.
		r.printf("%s", strings.Join(r.buildOut[ev.ImportPath], ""))
		r.printf("FAIL\t%s [build failed]\n", ev.ImportPath)
		return
	case "output":
		k := key(ev.Package, ev.Test)
		r.output[k] = append(r.output[k], ev.Output)
		if m := waitedRe.FindStringSubmatch(ev.Output); m != nil {
			if d, err := time.ParseDuration(m[1]); err == nil {
				r.waited[k] += d.Seconds()
			}
		}
		return
	case "pass", "fail", "skip":
	default: // start, run, pause, cont, bench
		return
	}
	if ev.Test != "" {
		waited := r.waited[key(ev.Package, ev.Test)]
		r.tests = append(r.tests, testResult{Package: ev.Package, Test: ev.Test, Action: ev.Action, Seconds: ev.Elapsed - waited, Waited: waited})
		p := r.pkg(ev.Package)
		if !strings.Contains(ev.Test, "/") {
			p.Tests++
		}
		k := key(ev.Package, ev.Test)
		switch {
		case ev.Action == "fail":
			r.failures = append(r.failures, k)
			r.printf("%s", strings.Join(r.output[k], ""))
		case !strings.Contains(ev.Test, "/") && ev.Elapsed >= r.slowAt:
			r.printf("--- %s: %s (%.2fs) [%s]\n", strings.ToUpper(ev.Action), ev.Test, ev.Elapsed, ev.Package)
		}
		if ev.Action != "fail" {
			delete(r.output, k) // only failures are printed at the end
		}
		return
	}
	p := r.pkg(ev.Package)
	p.Action, p.Seconds = ev.Action, ev.Elapsed
	k := key(ev.Package, "")
	switch ev.Action {
	case "fail":
		r.failures = append(r.failures, k)
		// The package's own output: a panic, TestMain's messages, FAIL.
		r.printf("%s", strings.Join(r.output[k], ""))
		if ev.FailedBuild != "" {
			r.printf("FAIL\t%s [build failed: %s]\n", ev.Package, ev.FailedBuild)
		}
	case "pass":
		r.printf("ok  \t%s\t%.3fs\t(%d tests)\n", ev.Package, ev.Elapsed, p.Tests)
		delete(r.output, k)
	case "skip":
		delete(r.output, k)
	}
}

func (r *report) pkg(name string) *pkgResult {
	p, ok := r.pkgs[name]
	if !ok {
		p = &pkgResult{Package: name}
		r.pkgs[name] = p
		r.order = append(r.order, name)
	}
	return p
}

func (r *report) printf(format string, args ...any) {
	if r.stream != nil {
		fmt.Fprintf(r.stream, format, args...)
	}
}

// counts returns how many tests (and subtests) passed, failed and were skipped.
func (r *report) counts() (passed, failed, skipped int) {
	for _, t := range r.tests {
		switch t.Action {
		case "pass":
			passed++
		case "fail":
			failed++
		case "skip":
			skipped++
		}
	}
	return passed, failed, skipped
}

// failed reports whether a test or a package failed, or the input held
// lines go test prints only for a package it could not build.
func (r *report) failed() bool {
	if len(r.failures) > 0 {
		return true
	}
	for _, p := range r.pkgs {
		if p.Action == "" { // started, never ended: killed or timed out
			return true
		}
	}
	return false
}

// writeMarkdown writes the slowest top-level tests, then every package's time.
func (r *report) writeMarkdown(w io.Writer, slowest int) {
	var top []testResult
	for _, t := range r.tests {
		if !strings.Contains(t.Test, "/") {
			top = append(top, t)
		}
	}
	sort.SliceStable(top, func(i, j int) bool { return top[i].Seconds > top[j].Seconds })
	if len(top) > slowest {
		top = top[:slowest]
	}
	fmt.Fprintf(w, "\n### The %d slowest tests\n\n", len(top))
	fmt.Fprintln(w, "Seconds are the test's own; a test/e2e test's wait for a shared control plane is apart.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| # | package | test | seconds | waited for a plane | result |")
	fmt.Fprintln(w, "|---:|---|---|---:|---:|---|")
	for i, t := range top {
		fmt.Fprintf(w, "| %d | %s | %s | %.1f | %.1f | %s |\n", i+1, short(t.Package), t.Test, t.Seconds, t.Waited, t.Action)
	}

	pkgs := make([]*pkgResult, 0, len(r.order))
	var total float64
	for _, name := range r.order {
		pkgs = append(pkgs, r.pkgs[name])
		total += r.pkgs[name].Seconds
	}
	sort.SliceStable(pkgs, func(i, j int) bool { return pkgs[i].Seconds > pkgs[j].Seconds })
	fmt.Fprintf(w, "\n### Packages (%d, %.0f s in all; packages run side by side, so the sum exceeds the wall time)\n\n", len(pkgs), total)
	fmt.Fprintln(w, "| package | seconds | tests | result |")
	fmt.Fprintln(w, "|---|---:|---:|---|")
	for _, p := range pkgs {
		if p.Action == "skip" && p.Tests == 0 {
			continue // no test files
		}
		action := p.Action
		if action == "" {
			action = "did not finish"
		}
		fmt.Fprintf(w, "| %s | %.1f | %d | %s |\n", short(p.Package), p.Seconds, p.Tests, action)
	}
}

// writeFailures names every failed test and package again, each test with
// its messages (failureLines), so that the end of a long log shows what
// went wrong.
func (r *report) writeFailures(w io.Writer) {
	if len(r.failures) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Failed (%d)\n\n", len(r.failures))
	for _, k := range r.failures {
		pkg, test, _ := strings.Cut(k, "\x00")
		if test == "" {
			fmt.Fprintf(w, "FAIL %s\n", pkg)
			continue
		}
		fmt.Fprintf(w, "--- FAIL: %s (%s)\n", test, pkg)
		for _, l := range failureLines(r.output[k]) {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
}

// errorLineRe matches a component's error line in a dumped log (klog's
// E-prefixed lines, or one that says an error), which the summary keeps
// past a message's continuation cap: a dump's last line may be its cause.
var errorLineRe = regexp.MustCompile(`^E\d{4} |(?i)\berror\b|address already in use|panic:`)

func errorLine(line string) bool { return errorLineRe.MatchString(line) }

// messageRe matches the start of a t.Log, t.Error or t.Fatal message.
var messageRe = regexp.MustCompile(`^\s+[\w.-]+_test\.go:\d+: `)

// The most of a failed test's messages writeFailures repeats: the summary
// at the end of a long run must show why a test failed even when the
// test dumped its components' logs after the failure.
const (
	maxFailureLines  = 40
	maxContinuations = 6
	maxLineBytes     = 300
)

// failureLines picks from a failed test's output its messages (the lines
// t.Log, t.Error and t.Fatal start), each with a few of its continuation
// lines, leaving out JSON log lines (a component's log dumped into a
// message) and cutting long lines.
func failureLines(output []string) []string {
	var lines []string
	cont := 0
	for _, chunk := range output {
		for _, l := range strings.Split(strings.TrimRight(chunk, "\n"), "\n") {
			if len(lines) == maxFailureLines {
				return append(lines, "…")
			}
			switch t := strings.TrimSpace(l); {
			case messageRe.MatchString(l):
				cont = 0
			case t == "" || strings.HasPrefix(t, "{") || strings.HasPrefix(t, "--- ") || strings.HasPrefix(t, "=== "):
				continue
			case cont >= maxContinuations && !errorLine(t):
				continue
			default:
				cont++
			}
			if len(l) > maxLineBytes {
				l = l[:maxLineBytes] + "…"
			}
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return lines
}

// short drops the module path from a package name.
func short(pkg string) string {
	return strings.TrimPrefix(pkg, "github.com/rightsize-dev/kubectl-rightsize/")
}

// read feeds every line of in to r.
func (r *report) read(in io.Reader, tee io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		if tee != nil {
			if _, err := fmt.Fprintf(tee, "%s\n", sc.Bytes()); err != nil {
				return fmt.Errorf("writing the JSON copy: %w", err)
			}
		}
		r.add(sc.Bytes())
	}
	return sc.Err()
}

// step is one line of bin/steps.tsv: a step of make test, when it started
// and ended (Unix seconds) and its exit code.
type step struct {
	name       string
	start, end float64
	rc         int
	cpu        float64 // user+system CPU seconds of the step and its children; -1 unknown
}

// readSteps parses the TSV hack/step.sh writes: name, start, end, exit code,
// CPU seconds.
func readSteps(in io.Reader) ([]step, error) {
	var steps []step
	sc := bufio.NewScanner(in)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) < 4 {
			return nil, fmt.Errorf("line %d: %q: want name, start, end, exit code[, CPU seconds] separated by tabs", n, line)
		}
		s := step{name: f[0], cpu: -1}
		var err error
		if s.start, err = strconv.ParseFloat(f[1], 64); err != nil {
			return nil, fmt.Errorf("line %d: start %q: %w", n, f[1], err)
		}
		if s.end, err = strconv.ParseFloat(f[2], 64); err != nil {
			return nil, fmt.Errorf("line %d: end %q: %w", n, f[2], err)
		}
		if s.rc, err = strconv.Atoi(f[3]); err != nil {
			return nil, fmt.Errorf("line %d: exit code %q: %w", n, f[3], err)
		}
		if len(f) > 4 && f[4] != "" {
			if s.cpu, err = strconv.ParseFloat(f[4], 64); err != nil {
				return nil, fmt.Errorf("line %d: CPU seconds %q: %w", n, f[4], err)
			}
		}
		steps = append(steps, s)
	}
	return steps, sc.Err()
}

// writeSteps writes the step table in the order the steps started, each
// with its start after the first (make test runs some side by side), and
// the total from the first start to the last end.
func writeSteps(w io.Writer, steps []step) {
	fmt.Fprintln(w, "\n### Steps of make test")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| step | start | wall | CPU | exit |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	if len(steps) == 0 {
		return
	}
	steps = slices.Clone(steps)
	slices.SortStableFunc(steps, func(a, b step) int { return cmp.Compare(a.start, b.start) })
	first, last := steps[0].start, steps[0].end
	var cpu float64
	for _, s := range steps {
		last = max(last, s.end)
		fmt.Fprintf(w, "| %s | +%s | %s | %s | %d |\n", s.name, dur(s.start-first), dur(s.end-s.start), cpuText(s.cpu), s.rc)
		if s.cpu > 0 {
			cpu += s.cpu
		}
	}
	fmt.Fprintf(w, "| **total** | | **%s** | %s | |\n", dur(last-first), cpuText(cpu))
}

func cpuText(s float64) string {
	if s < 0 {
		return "?"
	}
	return dur(s)
}

// dur prints seconds as "1 h 02 min", "12 min 05 s" or "8.2 s".
func dur(s float64) string {
	switch {
	case s >= 3600:
		return fmt.Sprintf("%d h %02d min", int(s)/3600, int(s)%3600/60)
	case s >= 60:
		return fmt.Sprintf("%d min %02d s", int(s)/60, int(s)%60)
	default:
		return fmt.Sprintf("%.1f s", s)
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("testtime", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonOut := fs.String("json", "", "also write the raw `go test -json` input to this file")
	mdOut := fs.String("md", "", "also write the Markdown report to this file")
	slowest := fs.Int("n", 30, "how many of the slowest tests to list")
	quiet := fs.Bool("q", false, "no stream: only the report")
	steps := fs.String("steps", "", "print the step table of this steps.tsv (written by hack/step.sh) and exit")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: go test -json ./... | testtime [-json FILE] [-md FILE] [-n 30] [-q]\n       testtime [flags] FILE.json...\n       testtime -steps bin/steps.tsv")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *steps != "" {
		f, err := os.Open(*steps)
		if err != nil {
			fmt.Fprintf(stderr, "testtime: %v\n", err)
			return 2
		}
		defer f.Close()
		s, err := readSteps(f)
		if err != nil {
			fmt.Fprintf(stderr, "testtime: %s: %v\n", *steps, err)
			return 2
		}
		writeSteps(stdout, s)
		return 0
	}
	var stream io.Writer = stdout
	if *quiet || fs.NArg() > 0 {
		stream = nil // recorded runs: their stream was printed when they ran
	}
	r := newReport(stream)
	var tee io.Writer
	if *jsonOut != "" {
		f, err := os.Create(*jsonOut)
		if err != nil {
			fmt.Fprintf(stderr, "testtime: %v\n", err)
			return 2
		}
		defer f.Close()
		bw := bufio.NewWriter(f)
		defer bw.Flush()
		tee = bw
	}
	if fs.NArg() == 0 {
		if err := r.read(stdin, tee); err != nil {
			fmt.Fprintf(stderr, "testtime: reading stdin: %v\n", err)
			return 2
		}
	}
	for _, name := range fs.Args() {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "testtime: %v\n", err)
			return 2
		}
		err = r.read(f, tee)
		f.Close()
		if err != nil {
			fmt.Fprintf(stderr, "testtime: reading %s: %v\n", name, err)
			return 2
		}
	}
	var out io.Writer = stdout
	var md *os.File
	if *mdOut != "" {
		var err error
		if md, err = os.Create(*mdOut); err != nil {
			fmt.Fprintf(stderr, "testtime: %v\n", err)
			return 2
		}
		defer md.Close()
		out = io.MultiWriter(stdout, md)
	}
	r.writeMarkdown(out, *slowest)
	r.writeFailures(out)
	passed, failed, skipped := r.counts()
	fmt.Fprintf(out, "\ntests: %d passed, %d failed, %d skipped\n", passed, failed, skipped)
	if md != nil {
		if err := md.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			fmt.Fprintf(stderr, "testtime: %v\n", err)
			return 2
		}
	}
	if r.failed() {
		return 1
	}
	return 0
}
