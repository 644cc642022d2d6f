package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "karpenterlive:", err)
		os.Exit(1)
	}
}

// config is what one invocation runs.
type config struct {
	workloads  []string
	trace      string
	scale      float64
	rampUp     time.Duration
	rampDown   time.Duration
	traceWin   time.Duration
	traceLife  time.Duration
	traceEvery int
	traceTail  time.Duration
	synthetic  int
	dPeriod    time.Duration
	dCycles    int
	dStep      time.Duration
	parallel   bool
	out        string
	keep       string
	// oursArgs are extra flags for our operator (experiments).
	oursArgs []string
	// boundEvery samples the packed-from-scratch bound (0: not computed);
	// boundOnly computes it without running either system.
	boundEvery time.Duration
	boundOnly  bool
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("karpenterlive", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workloads := fs.String("workloads", "ramp,trace,diurnal", "comma-separated workloads: ramp, trace, diurnal")
	fs.StringVar(&c.trace, "trace", "", "path of Alibaba's openb_pod_list_default.csv (cluster-trace-gpu-v2023) for the trace workload; empty: a synthetic sample of -synthetic pods with the same columns")
	fs.IntVar(&c.synthetic, "synthetic", 150, "pods of the synthetic trace used when -trace is empty")
	fs.Float64Var(&c.scale, "scale", 1, "ramp and diurnal replicas × this (1: 2,000 ramp pods, 560 diurnal at the peak)")
	fs.DurationVar(&c.rampUp, "ramp-up", 10*time.Minute, "ramp: time from creating the Deployments to scaling them to a quarter")
	fs.DurationVar(&c.rampDown, "ramp-down", 8*time.Minute, "ramp: time measured after the scale-down")
	fs.DurationVar(&c.traceWin, "trace-window", 20*time.Minute, "trace: the replay's length (creation and deletion times scaled onto it)")
	fs.DurationVar(&c.traceLife, "trace-min-life", time.Minute, "trace: shortest pod lifetime after scaling")
	fs.IntVar(&c.traceEvery, "trace-every", 4, "trace: replay every n-th pod of the file (1: all 8,152)")
	fs.DurationVar(&c.traceTail, "trace-tail", 3*time.Minute, "trace: time measured after the last event")
	fs.DurationVar(&c.dPeriod, "diurnal-period", 6*time.Minute, "diurnal: length of one cycle")
	fs.IntVar(&c.dCycles, "diurnal-cycles", 3, "diurnal: cycles")
	fs.DurationVar(&c.dStep, "diurnal-step", 30*time.Second, "diurnal: how often replicas are reset")
	fs.BoolVar(&c.parallel, "parallel", false, "run both systems at once (two planes on the machine: faster, but CPU figures distorted); default one after the other")
	fs.StringVar(&c.out, "out", "", "write the table as OUT.md and OUT.json too")
	fs.StringVar(&c.keep, "keep", "", "keep the catalog files, binaries and controller logs in this directory")
	fs.DurationVar(&c.boundEvery, "bound-every", 30*time.Second, "plan what each workload has alive every this often of its run from scratch (explain -f) and report the cost-hours no system could beat; 0: not computed")
	fs.BoolVar(&c.boundOnly, "bound-only", false, "compute only that bound: build neither controller's plane, run neither system (minutes, not tens of minutes)")
	oursArgs := fs.String("ours-args", "", "extra space-separated flags for our operator, after its defaults (for experiments, e.g. \"--batch-max 30s\")")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.oursArgs = strings.Fields(*oursArgs)
	for _, w := range strings.Split(*workloads, ",") {
		switch w = strings.TrimSpace(w); w {
		case "ramp", "trace", "diurnal":
			c.workloads = append(c.workloads, w)
		default:
			return c, fmt.Errorf("-workloads: unknown workload %q (want ramp, trace or diurnal)", w)
		}
	}
	if c.scale <= 0 || c.scale > 4 {
		return c, fmt.Errorf("-scale %g: want a number in (0, 4]", c.scale)
	}
	if c.boundOnly && c.boundEvery <= 0 {
		return c, errors.New("-bound-only needs a positive -bound-every")
	}
	if c.traceEvery < 1 || c.synthetic < 1 || c.dCycles < 1 || c.dStep <= 0 || c.dPeriod <= 0 || c.traceWin <= 0 {
		return c, errors.New("-trace-every, -synthetic, -diurnal-cycles, -diurnal-step, -diurnal-period and -trace-window must be positive")
	}
	return c, nil
}

// bench is an invocation's shared state.
type bench struct {
	cfg     config
	cat     *sharedCatalog
	systems []system
	dir     string
	logf    func(string, ...any)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "%s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, a...)...)
	}
	rep, err := runBench(ctx, cfg, logf)
	if err != nil {
		return err
	}
	if err := rep.writeMarkdown(stdout); err != nil {
		return err
	}
	for _, l := range rep.lines() {
		fmt.Fprintln(stdout, l)
	}
	if cfg.out != "" {
		if err := rep.writeFiles(cfg.out); err != nil {
			return err
		}
	}
	return nil
}

// runBench runs every workload of cfg on both systems.
func runBench(ctx context.Context, cfg config, logf func(string, ...any)) (*report, error) {
	b := &bench{cfg: cfg, logf: logf}
	var err error
	if b.dir = cfg.keep; b.dir == "" {
		if b.dir, err = os.MkdirTemp("", "karpenterlive"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(b.dir)
	} else if err := os.MkdirAll(b.dir, 0o750); err != nil {
		return nil, fmt.Errorf("-keep: %w", err)
	}
	if b.cat, err = newSharedCatalog(); err != nil {
		return nil, err
	}
	oursFile, karpFile, err := b.cat.writeFiles(b.dir)
	if err != nil {
		return nil, err
	}
	n, err := checkFiles(oursFile, karpFile)
	if err != nil {
		return nil, fmt.Errorf("the two instance-type files differ: %w", err)
	}
	logf("shared catalog: %d instance types, %d zones, on-demand and spot; both systems read the same types, offerings, prices and allocatable", n, len(benchZones))
	rep := &report{Date: time.Now().UTC().Format(time.RFC3339), Catalog: b.cat.Source, Types: n}
	began := time.Now()
	karpBin, oursBin, builds, err := buildBinaries(b.dir, !cfg.boundOnly, logf)
	if err != nil {
		return nil, err
	}
	rep.Builds = builds
	rep.BuildSeconds = time.Since(began).Seconds()
	modDir, err := karpenterModuleDir()
	if err != nil {
		return nil, err
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return nil, err
	}
	b.systems = []system{karpenterSystem(karpBin, karpFile, modDir), oursSystem(oursBin, oursFile, root, cfg.oursArgs)}
	for _, name := range cfg.workloads {
		w, err := b.workload(name)
		if err != nil {
			return nil, err
		}
		wr := workloadReport{Name: w.name, Desc: w.desc}
		if !cfg.boundOnly {
			if wr.Rows, err = b.runWorkload(ctx, w); err != nil {
				return nil, fmt.Errorf("workload %s: %w", name, err)
			}
			logf("%s", wr.line())
		}
		if cfg.boundEvery > 0 {
			bound, err := boundOf(ctx, oursBin, oursFile, b.dir, benchPools(b.cat), w.end, cfg.boundEvery, w.alive)
			if err != nil {
				return nil, fmt.Errorf("workload %s: %w", name, err)
			}
			wr.Bound = &bound
			logf("%s", wr.boundLine())
		}
		rep.Workloads = append(rep.Workloads, wr)
	}
	return rep, nil
}

// workload builds the named workload from the flags.
func (b *bench) workload(name string) (workload, error) {
	c := b.cfg
	switch name {
	case "ramp":
		return rampWorkload(c.scale, c.rampUp, c.rampDown), nil
	case "diurnal":
		return diurnalWorkload(c.scale, c.dPeriod, c.dCycles, c.dStep), nil
	}
	path, src := c.trace, "Alibaba cluster-trace-gpu-v2023 "+filepath.Base(c.trace)
	if path == "" {
		path = filepath.Join(b.dir, "synthetic-trace.csv")
		if err := syntheticTrace(path, c.synthetic); err != nil {
			return workload{}, err
		}
		src = fmt.Sprintf("a synthetic %d-pod sample with the trace's columns", c.synthetic)
	}
	pods, err := readTrace(path)
	if err != nil {
		return workload{}, err
	}
	kept, evs := compress(pods, c.traceWin, c.traceLife, c.traceEvery)
	gpu := 0
	for _, p := range kept {
		if p.GPUs > 0 {
			gpu++
		}
	}
	desc := fmt.Sprintf("%s: every %d. pod, %d pods (%d with GPUs), compressed to %s, lifetimes at least %s, %s measured after",
		src, c.traceEvery, len(kept), gpu, c.traceWin, c.traceLife, c.traceTail)
	return traceWorkload(kept, evs, c.traceTail, desc), nil
}

// runWorkload runs w on each system, each on a fresh plane of its own:
// one after the other (two planes at once on a 2-core machine would
// distort CPU time and pending time), or at once with -parallel.
func (b *bench) runWorkload(ctx context.Context, w workload) ([]result, error) {
	rows := make([]result, len(b.systems))
	errs := make([]error, len(b.systems))
	if !b.cfg.parallel {
		for i, s := range b.systems {
			if rows[i], errs[i] = b.runOne(ctx, s, w); errs[i] != nil {
				return nil, errs[i]
			}
		}
		return rows, nil
	}
	var wg sync.WaitGroup
	for i, s := range b.systems {
		wg.Go(func() { rows[i], errs[i] = b.runOne(ctx, s, w) })
	}
	wg.Wait()
	return rows, errors.Join(errs...)
}

// runOne starts a plane, installs s, starts its controller, replays w and
// measures it.
func (b *bench) runOne(ctx context.Context, s system, w workload) (res result, err error) {
	logf := func(format string, a ...any) { b.logf("%s/%s: "+format, append([]any{w.name, s.name}, a...)...) }
	env, err := testenv.New(ctx, logf)
	if err != nil {
		return res, err
	}
	defer env.Stop()
	pools := benchPools(b.cat)
	if err := s.install(ctx, env, pools); err != nil {
		return res, err
	}
	logPath := filepath.Join(b.dir, w.name+"-"+s.name+".log")
	c, err := s.start(env, logPath)
	if err != nil {
		return res, err
	}
	defer c.stop()
	defer func() {
		if err != nil {
			err = fmt.Errorf("%s: %w\n%s log, last lines:\n%s", s.name, err, s.name, tailFile(logPath, 30))
		}
	}()
	if err := s.ready(ctx, env, c); err != nil {
		return res, err
	}
	logf("controller ready")
	rec := newRecorder(b.cat)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := rec.run(rctx, env.Client()); err != nil {
		return res, err
	}
	const ns = "bench"
	if _, err := env.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return res, fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	// The controller must live through the run: a crash is an error, not a
	// row.
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	go func() {
		select {
		case <-c.done:
			wcancel()
		case <-wctx.Done():
		}
	}()
	planeBefore := planeCPU(env)
	start := time.Now()
	werr := w.run(wctx, env.Client(), ns, logf)
	end := time.Now()
	planeAfter := planeCPU(env)
	if err := c.exited(); err != nil {
		return res, err
	}
	if werr != nil {
		return res, werr
	}
	res = rec.result(s.name, w.name, start, end)
	c.stop()
	res.ControllerCPU, res.ControllerRSSMB = c.CPU.Seconds(), float64(c.MaxRSS)/(1<<20)
	res.SchedulerCPU = (planeAfter[0] - planeBefore[0]).Seconds()
	res.APIServerCPU = (planeAfter[1] - planeBefore[1]).Seconds()
	logf("cost-hours $%.3f, peak %d nodes (%d created, %d deleted), %d pods (%d ran, %d pending at the end), p95 pending %.1f s, %d evicted, controller CPU %.1f s, RSS %.0f MiB",
		res.CostHours, res.PeakNodes, res.NodesCreated, res.NodesDeleted, res.Pods, res.PodsRan, res.PodsPendingEnd, res.PendingP95, res.Evicted, res.ControllerCPU, res.ControllerRSSMB)
	if res.Unpriced > 0 {
		return res, fmt.Errorf("%d nodes carry labels that name no offering of the shared catalog (e.g. %v)", res.Unpriced, firstValue(rec.unpriced))
	}
	return res, nil
}

// planeCPU is the CPU time kube-scheduler and kube-apiserver have used so
// far (zero where it cannot be read).
func planeCPU(env *testenv.Env) [2]time.Duration {
	cpu := env.CPUTime()
	return [2]time.Duration{cpu["kube-scheduler"], cpu["kube-apiserver"]}
}

func firstValue(m map[string]string) string {
	for k, v := range m {
		return k + ": " + v
	}
	return ""
}

// tailFile is the last n lines of a file.
func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
