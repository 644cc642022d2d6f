// Command benchtable reads `go test -bench` output of the solver suites
// (pkg/solver/baseline, and the consolidation suite f of pkg/solver) on
// stdin and prints one table: suite, pods, solver
// time, pods per second, and the plan's cost over the lower bound, over the
// Karpenter-like greedy, over the single-type FFD and, for tiny problems,
// over the exact optimum. It exits non-zero when the input reports a
// failure, so that `make bench` fails too.
//
//	go test ./pkg/solver/baseline -run '^$' -bench . -benchtime 3x | go run ./hack/benchtable
package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
)

// row is one benchmark result: its name's key=value parts and its metrics.
type row struct {
	suite, pods string
	metrics     map[string]float64
}

// column is a printed column: a header and the metric it shows.
type column struct {
	header, metric, format string
}

var columns = []column{
	{"ms", "ms", "%.1f"},
	{"pods/s", "pods/s", "%.0f"},
	{"cost÷LB", "cost/LB", "%.3f"},
	{"cost÷greedy", "cost/greedy", "%.3f"},
	{"cost÷FFD", "cost/FFD", "%.3f"},
	{"cost÷opt", "cost/opt", "%.3f"},
	{"worst÷opt", "max-cost/opt", "%.3f"},
	{"peak MB", "peak-MB", "%.1f"},
	{"greedy ms", "greedy-ms", "%.1f"},
	{"FFD ms", "ffd-ms", "%.1f"},
	// Consolidation (suite f): share of the achievable saving captured and
	// pods evicted per dollar per hour saved.
	{"captured", "captured", "%.3f"},
	{"evicted/$", "evicted/$", "%.1f"},
}

var procSuffix = regexp.MustCompile(`-\d+$`)

func main() {
	rows, failed, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(2)
	}
	print(os.Stdout, rows)
	if failed {
		fmt.Fprintln(os.Stderr, "benchtable: the benchmarks reported a failure (see above)")
		os.Exit(1)
	}
}

// parse reads benchmark lines: "BenchmarkX/suite=a/pods=1000-2  3  123 ns/op  1.02 cost/LB ...".
func parse(r io.Reader) ([]row, bool, error) {
	var rows []row
	failed := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "FAIL") || strings.HasPrefix(line, "--- FAIL") {
			failed = true
		}
		fields := strings.Fields(line)
		if len(fields) < 2 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue // a benchmark's log line, not its result
		}
		rw := row{metrics: map[string]float64{}}
		for _, part := range strings.Split(procSuffix.ReplaceAllString(fields[0], ""), "/") {
			k, v, ok := strings.Cut(part, "=")
			switch {
			case ok && k == "suite":
				rw.suite = v
			case ok && k == "pods":
				rw.pods = v
			case ok && k == "problems":
				rw.suite += fmt.Sprintf(" (%s problems)", v)
			}
		}
		if rw.suite == "" {
			rw.suite = fields[0]
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, failed, fmt.Errorf("metric %q of %s: %w", fields[i+1], fields[0], err)
			}
			rw.metrics[fields[i+1]] = v
		}
		if rw.pods == "" {
			if n, ok := rw.metrics["pods"]; ok {
				rw.pods = strconv.Itoa(int(n))
			}
		}
		rows = append(rows, rw)
	}
	return rows, failed, sc.Err()
}

func print(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "suite\tpods\t")
	for _, c := range columns {
		fmt.Fprint(tw, c.header, "\t")
	}
	fmt.Fprintln(tw)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t", r.suite, r.pods)
		for _, c := range columns {
			fmt.Fprint(tw, cell(r.metrics, c), "\t")
		}
		fmt.Fprintln(tw)
	}
	// The targets are geometric means over suites b–d.
	geo := map[string]float64{}
	for _, m := range []string{"cost/LB", "cost/greedy", "cost/FFD"} {
		sum, n := 0.0, 0
		for _, r := range rows {
			if v, ok := r.metrics[m]; ok && v > 0 && strings.ContainsAny(r.suite[:1], "bcd") {
				sum += math.Log(v)
				n++
			}
		}
		if n > 0 {
			geo[m] = math.Exp(sum / float64(n))
		}
	}
	if len(geo) > 0 {
		fmt.Fprint(tw, "geomean b–d\t\t")
		for _, c := range columns {
			fmt.Fprint(tw, cell(geo, c), "\t")
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

func cell(metrics map[string]float64, c column) string {
	v, ok := metrics[c.metric]
	if !ok || math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf(c.format, v)
}
