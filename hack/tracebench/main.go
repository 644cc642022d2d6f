// Command tracebench times the whole `kubectl rightsize explain` command on
// public production traces (Alibaba's clusterdata, converted by
// hack/clusterdata) and compares each plan with its lower bound and with
// the best one-type first-fit-decreasing packing of the same pods,
// computed here, independently of the solver.
//
//	make bench-traces CLUSTERDATA=/path/to/clusterdata
//
// For every row (an input and the flags a user would pass) it runs the
// binary -runs times and reports wall time, CPU time and peak RSS of the
// slowest run, cost ÷ bound, cost ÷ FFD; then one run with --timeout 1s
// (it must print a plan within 2 s) and one sent SIGTERM after 3 s (it
// must have ended by 4 s). It exits non-zero when a row breaks a target.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
)

// row is one input and flag set.
type row struct {
	name    string
	trace   string   // path under the clusterdata checkout
	convert []string // hack/clusterdata flags
	flags   []string // explain flags
}

const (
	openbDefault = "cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv"
	openbSpec33  = "cluster-trace-gpu-v2023/csv/openb_pod_list_gpuspec33.csv"
	dlrm         = "cluster-trace-gpu-v2025/disaggregated_DLRM_trace.csv"
)

// rows are the ten input × flag rows of issue 33.
var rows = []row{
	{"openb all", openbDefault, nil, nil},
	{"openb all, all types", openbDefault, nil, []string{"--all-instance-types", "--arch", "amd64"}},
	{"openb CPU", openbDefault, []string{"-gpu=false"}, nil},
	{"openb CPU, amd64+arm64", openbDefault, []string{"-gpu=false"}, []string{"--arch", "amd64,arm64"}},
	{"openb gpuspec33, all types", openbSpec33, nil, []string{"--all-instance-types", "--arch", "amd64"}},
	{"DLRM busiest", dlrm, []string{"-at", "busiest"}, nil},
	{"DLRM busiest, all types amd64+arm64", dlrm, []string{"-at", "busiest"}, []string{"--all-instance-types", "--arch", "amd64,arm64"}},
	{"DLRM busiest 2,800 CN + 200 HN, all types", dlrm, []string{"-at", "busiest", "-first-cn", "2800", "-first-hn", "200"}, []string{"--all-instance-types", "--arch", "amd64"}},
	{"DLRM all", dlrm, nil, nil},
	{"DLRM all, all types amd64+arm64", dlrm, nil, []string{"--all-instance-types", "--arch", "amd64,arm64"}},
}

// Targets of issue 33.
const (
	maxWall        = 5 * time.Second
	maxRSS         = 1 << 30
	timeoutFlag    = "1s"
	maxTimeoutWall = 2 * time.Second
	termAfter      = 3 * time.Second
	maxTermWall    = 4 * time.Second
)

func main() {
	dir := flag.String("clusterdata", "", "path of a checkout of github.com/alibaba/clusterdata (required)")
	bin := flag.String("bin", "bin/kubectl-rightsize", "the kubectl-rightsize binary")
	convert := flag.String("convert", "bin/clusterdata", "the hack/clusterdata binary")
	runs := flag.Int("runs", 5, "runs of each row")
	only := flag.String("only", "", "run only the rows whose name contains this")
	work := flag.String("work", "", "directory for the converted pods (default: a temporary one)")
	jsonOut := flag.String("json", "", "also write the results as JSON to this file")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "tracebench: -clusterdata is required: the path of a clusterdata checkout (CLUSTERDATA=… for make bench-traces)")
		os.Exit(2)
	}
	if *work == "" {
		d, err := os.MkdirTemp("", "tracebench")
		if err != nil {
			fmt.Fprintln(os.Stderr, "tracebench:", err)
			os.Exit(1)
		}
		defer os.RemoveAll(d)
		*work = d
	}
	var results []result
	failed := false
	fmt.Println("| input | flags | pods | runs | wall max s | CPU s | peak RSS MiB | $/h | unplaced | ÷ bound | bound | ÷ FFD | FFD | --timeout 1s | SIGTERM at 3 s |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for i, r := range rows {
		if *only != "" && !strings.Contains(r.name, *only) {
			continue
		}
		res, err := measure(r, *dir, *bin, *convert, filepath.Join(*work, fmt.Sprintf("row%d.yaml", i)), *runs)
		if err != nil {
			fmt.Fprintf(os.Stderr, "tracebench: %s: %v\n", r.name, err)
			failed = true
			continue
		}
		fmt.Println(res.markdown())
		if problems := res.problems(); len(problems) > 0 {
			fmt.Fprintf(os.Stderr, "tracebench: %s: %s\n", r.name, strings.Join(problems, "; "))
			failed = true
		}
		results = append(results, res)
	}
	if *jsonOut != "" {
		data, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(*jsonOut, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "tracebench:", err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// result is what one row measured.
type result struct {
	Name         string   `json:"name"`
	Flags        []string `json:"flags"`
	Pods         int      `json:"pods"`
	Runs         int      `json:"runs"`
	WallMax      float64  `json:"wallMaxSeconds"`
	CPU          float64  `json:"cpuSecondsOfSlowest"`
	RSS          int64    `json:"peakRSSBytes"`
	Price        float64  `json:"pricePerHour"`
	Unplaced     int      `json:"unplaced"`
	Bound        float64  `json:"lowerBoundPerHour"`
	FFD          float64  `json:"ffdPerHour"`
	FFDPlaced    int      `json:"ffdPlaced"`
	FFDTypes     []string `json:"ffdTypes"`
	TimeoutWall  float64  `json:"timeoutWallSeconds"`
	TimeoutPlan  bool     `json:"timeoutPrintedPlan"`
	TermWall     float64  `json:"termWallSeconds"`
	TermFinished bool     `json:"termFinishedBeforeSignal"`
	Errors       []string `json:"errors,omitempty"`
}

func (r *result) markdown() string {
	ratio := func(a, b float64) string {
		if b <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", a/b)
	}
	ffdRatio := ratio(r.Price, r.FFD)
	if r.FFDPlaced != r.Pods-r.Unplaced {
		ffdRatio = fmt.Sprintf("- (FFD places %d, the plan %d)", r.FFDPlaced, r.Pods-r.Unplaced)
	}
	term := fmt.Sprintf("ended %.2f s", r.TermWall)
	if r.TermFinished {
		term = fmt.Sprintf("done at %.2f s", r.TermWall)
	}
	to := fmt.Sprintf("%.2f s", r.TimeoutWall)
	if !r.TimeoutPlan {
		to += ", no plan"
	}
	return fmt.Sprintf("| %s | `%s` | %d | %d | %.2f | %.2f | %d | %.2f | %d | %s | %.2f | %s | %.2f (%s) | %s | %s |",
		r.Name, strings.Join(r.Flags, " "), r.Pods, r.Runs, r.WallMax, r.CPU, r.RSS>>20, r.Price, r.Unplaced,
		ratio(r.Price, r.Bound), r.Bound, ffdRatio, r.FFD, strings.Join(r.FFDTypes, ", "), to, term)
}

// problems lists the targets the row misses.
func (r *result) problems() []string {
	out := slices.Clone(r.Errors)
	if r.WallMax > maxWall.Seconds() {
		out = append(out, fmt.Sprintf("slowest run %.2f s > %s", r.WallMax, maxWall))
	}
	if r.RSS > maxRSS {
		out = append(out, fmt.Sprintf("peak RSS %d MiB > %d MiB", r.RSS>>20, maxRSS>>20))
	}
	if r.FFD > 0 && r.Pods-r.Unplaced == r.FFDPlaced && r.Price > r.FFD*(1+1e-9) {
		out = append(out, fmt.Sprintf("plan $%.2f/h dearer than the one-type FFD $%.2f/h", r.Price, r.FFD))
	}
	if r.Pods-r.Unplaced < r.FFDPlaced {
		out = append(out, fmt.Sprintf("plan places %d pods, the one-type FFD %d", r.Pods-r.Unplaced, r.FFDPlaced))
	}
	if r.TimeoutWall > maxTimeoutWall.Seconds() || !r.TimeoutPlan {
		out = append(out, fmt.Sprintf("--timeout %s: %.2f s, plan printed %v", timeoutFlag, r.TimeoutWall, r.TimeoutPlan))
	}
	if r.TermWall > maxTermWall.Seconds() {
		out = append(out, fmt.Sprintf("SIGTERM at %s: ended after %.2f s", termAfter, r.TermWall))
	}
	return out
}

// planJSON is what tracebench reads of explain -o json.
type planJSON struct {
	Total         float64 `json:"totalPricePerHour"`
	Bound         float64 `json:"lowerBoundPricePerHour"`
	Unschedulable []struct {
		Pod string `json:"pod"`
	} `json:"unschedulable"`
}

func measure(r row, dir, bin, convert, pods string, runs int) (result, error) {
	res := result{Name: r.name, Flags: r.flags, Runs: runs}
	var out bytes.Buffer
	cmd := exec.Command(convert, append([]string{"-in", filepath.Join(dir, r.trace)}, r.convert...)...)
	cmd.Stdout, cmd.Stderr = &out, io.Discard
	if err := cmd.Run(); err != nil {
		return res, fmt.Errorf("converting %s: %w", r.trace, err)
	}
	if err := os.WriteFile(pods, out.Bytes(), 0o644); err != nil {
		return res, err
	}
	res.Pods = bytes.Count(out.Bytes(), []byte("\nkind: Pod\n"))
	args := append([]string{"explain", "-f", pods, "-o", "json"}, r.flags...)
	for i := 0; i < runs; i++ {
		run := runOnce(bin, args, 0)
		if run.err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("run %d: %v", i+1, run.err))
			continue
		}
		if run.wall.Seconds() >= res.WallMax {
			res.WallMax, res.CPU = run.wall.Seconds(), run.cpu.Seconds()
		}
		res.RSS = max(res.RSS, run.rss)
		var p planJSON
		if err := json.Unmarshal(run.stdout, &p); err != nil {
			return res, fmt.Errorf("run %d: reading the plan: %w", i+1, err)
		}
		res.Price, res.Bound, res.Unplaced = p.Total, p.Bound, len(p.Unschedulable)
	}
	to := runOnce(bin, append(slices.Clone(args), "--timeout", timeoutFlag), 0)
	res.TimeoutWall = to.wall.Seconds()
	var p planJSON
	res.TimeoutPlan = to.err == nil && json.Unmarshal(to.stdout, &p) == nil
	term := runOnce(bin, args, termAfter)
	res.TermWall, res.TermFinished = term.wall.Seconds(), !term.signalled
	k, err := baseline(pods, r.flags)
	if err != nil {
		return res, fmt.Errorf("one-type FFD: %w", err)
	}
	res.FFD, res.FFDPlaced, res.FFDTypes = k.Price, k.Placed, k.Types
	return res, nil
}

type run struct {
	stdout    []byte
	wall, cpu time.Duration
	rss       int64
	signalled bool // SIGTERM was sent before it ended
	err       error
}

// runOnce runs the binary; with term > 0 it sends SIGTERM after term if
// the command is still running, and a kill 30 s after that.
func runOnce(bin string, args []string, term time.Duration) run {
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return run{err: err}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var r run
	var err error
	limit := time.After(10 * time.Minute)
	var sig <-chan time.Time
	if term > 0 {
		sig = time.After(term)
	}
wait:
	for {
		select {
		case err = <-done:
			break wait
		case <-sig:
			r.signalled = true
			_ = cmd.Process.Signal(syscall.SIGTERM)
			limit = time.After(30 * time.Second)
			sig = nil
		case <-limit:
			_ = cmd.Process.Kill()
			err = <-done
			err = fmt.Errorf("killed: still running (%w)", err)
			break wait
		}
	}
	r.wall = time.Since(start)
	r.stdout = out.Bytes()
	if st := cmd.ProcessState; st != nil {
		r.cpu = st.UserTime() + st.SystemTime()
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			r.rss = ru.Maxrss << 10
		}
	}
	if err != nil && !r.signalled {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(errb.String()))
		}
		r.err = err
	}
	return r
}

// baseline builds the problem explain plans for the pods and flags (the
// default pool, the EKS DaemonSets, the embedded catalog) and packs it one
// type per group of pods.
func baseline(pods string, flags []string) (packing, error) {
	m, err := snapshot.Read([]string{pods}, nil)
	if err != nil {
		return packing{}, err
	}
	def := plan.DefaultPool{}
	for i := 0; i < len(flags); i++ {
		switch flags[i] {
		case "--all-instance-types":
			def.AllInstanceTypes = true
		case "--arch":
			i++
			def.Architectures = strings.Split(flags[i], ",")
		default:
			return packing{}, fmt.Errorf("flag %s: not understood by the baseline", flags[i])
		}
	}
	cat := plan.Catalog{Region: plan.DefaultRegion}
	types, _, err := cat.InstanceTypes()
	if err != nil {
		return packing{}, err
	}
	built, err := plan.Build(plan.Input{Manifests: m, InstanceTypes: types, Catalog: &cat, Default: &def})
	if err != nil {
		return packing{}, err
	}
	return ffd(built.Problem), nil
}
