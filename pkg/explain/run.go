package explain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/catalog"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/report"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver/baseline"
)

// Options are the inputs of one explain report. The explain command
// (pkg/cmd/explaincmd) fills them from its validated flags.
type Options struct {
	// Input names the manifests to read. When none are given, explain reads
	// the live cluster of RESTConfig.
	Input snapshot.Input
	// Output is "", "wide", "json" or "yaml".
	Output  string
	Catalog plan.Catalog
	Default plan.DefaultPool
	// Timeout bounds the whole run (reading, planning, the lower bound and
	// advice); the best plan found by then is printed.
	Timeout time.Duration
	// AllNamespaces reports the pending pods of every namespace rather than
	// those of Namespace (-A).
	AllNamespaces bool
	// Consolidation adds what the consolidation planner would do now (live
	// clusters only; read-only).
	Consolidation bool
	// Workload narrows the report to one workload: "NAME" or "pod/NAME" for
	// a pod, "TYPE/NAME" for a controller (deployment/web). The plan still
	// considers every pending pod.
	Workload string
	// RESTConfig is the live cluster's, read when Input names no manifests.
	RESTConfig *rest.Config
	// Namespace is the namespace whose pending pods are reported.
	Namespace string

	genericiooptions.IOStreams

	// Set by Run.
	target       *workload
	stoppedEarly bool      // the solve ran into Timeout
	solvedAt     time.Time // when the solve returned
	deadline     time.Time // when Timeout ends the run; zero without one
	result       *Result   // what was printed
}

// ExactLimit is the most pods for which explain searches for the optimum
// plan, to say "optimal" rather than how far above the lower bound a plan
// is; exactSteps bounds that search.
const (
	ExactLimit = 20
	exactSteps = 100_000 // about a second for 20 mixed pods on the full catalog
)

// Unplaced returns how many pods the printed report says cannot be placed
// (in scope, for a live cluster); 0 before Run has printed.
func (o *Options) Unplaced() int {
	r := o.result
	switch {
	case r == nil:
		return 0
	case r.LiveResult != nil:
		n := 0
		for _, p := range r.Pending {
			if p.Reason != "" {
				n++
			}
		}
		return n
	}
	return len(r.Unschedulable)
}

// Run reads the manifests or the cluster, solves and prints. It returns
// early with ctx's error when ctx ends first.
func (o *Options) Run(ctx context.Context) error {
	if o.Timeout > 0 {
		// --timeout bounds the whole run: what reading and building leave,
		// less what printing will take (workDeadline), is the solve's, and
		// what the solve leaves the advice's.
		o.deadline = time.Now().Add(o.Timeout)
	}
	if o.Workload != "" {
		w, err := parseWorkload(o.Workload)
		if err != nil {
			return err
		}
		o.target = w
	}
	if o.Catalog.InstanceTypesFile != "" && o.Catalog.Region != "" {
		o.warn([]string{fmt.Sprintf("--region %s is ignored: the instance types, zones and prices come from --instance-types %s", o.Catalog.Region, o.Catalog.InstanceTypesFile)})
	}
	if !o.Input.Given() {
		if o.RESTConfig == nil {
			return errors.New("explain: neither manifests nor a cluster to read")
		}
		return o.runLive(ctx)
	}
	if o.Catalog.Region == "" {
		o.Catalog.Region = plan.DefaultRegion
	}
	// The embedded catalog (~10 ms) loads while the manifests are read;
	// a file of instance types is read after them, as it always was.
	var catalog chan loadedTypes
	if o.Catalog.InstanceTypesFile == "" {
		catalog = make(chan loadedTypes, 1)
		go func() {
			var l loadedTypes
			l.types, l.source, l.err = o.instanceTypes()
			catalog <- l
		}()
	}
	m, err := o.Input.ReadContext(ctx, o.In)
	if err != nil {
		return err
	}
	return o.runManifests(ctx, m, catalog)
}

// loadedTypes is what Options.instanceTypes returns.
type loadedTypes struct {
	types  []solver.InstanceType
	source ResultSource
	err    error
}

// runManifests plans the manifests read and prints the report. catalog,
// when not nil, brings the instance types already being loaded.
func (o *Options) runManifests(ctx context.Context, m *snapshot.Manifests, catalog <-chan loadedTypes) error {
	o.warn(m.Warnings)
	if o.Catalog.Region == "" {
		o.Catalog.Region = plan.DefaultRegion
	}
	var l loadedTypes
	if catalog != nil {
		l = <-catalog
	} else {
		l.types, l.source, l.err = o.instanceTypes()
	}
	types, source, err := l.types, l.source, l.err
	if err != nil {
		return err
	}
	in := plan.Input{Manifests: m, InstanceTypes: types, Catalog: &o.Catalog, Default: &o.Default}
	built, err := plan.Build(in)
	if err != nil {
		return err
	}
	p := built.Problem
	// Without --timeout, the advice's wider plans set up while the plan
	// is solved (Karpenter's mix, 5,000 pods: ~0.05 s each, where the
	// plan's solve leaves a CPU idle); with it, the plan has the CPUs.
	var held *heldAdvice
	if built.DefaultPool != "" && o.deadline.IsZero() {
		held = holdAdvice(ctx, in)
		defer held.stop()
	}
	start := time.Now()
	o.warn(plan.WindowsPools(p))
	o.warn(built.Overlays)
	solved, err := o.solve(ctx, p)
	if err != nil {
		return err
	}
	solved, spent, err := o.spend(ctx, p, solved, m, source)
	if err != nil {
		return err
	}
	// The advice re-plans the pods on wider pools and only reads the
	// plan: it runs while the result is built, which on two CPUs takes
	// what the wider plans leave idle (Karpenter's mix, 5,000 pods: the
	// result is ~0.04 s, three wider plans on two CPUs ~0.3 s).
	type advised struct {
		a   *advice
		err error
	}
	var adviceDone chan advised
	if built.DefaultPool != "" {
		adviceDone = make(chan advised, 1)
		took, deadline := time.Since(start), o.workDeadline(len(p.Pods))
		go func() {
			a, err := newAdvice(ctx, in, p, solved, took, deadline, held)
			adviceDone <- advised{a, err}
		}()
	}
	result := o.newResult(report.FromPlan(p, solved, built.InFlight), source)
	result.Buffers = newBuffers(p, solved, built.Buffers)
	setCommitments(result, spent)
	setDefaults(result, built)
	if adviceDone != nil {
		d := <-adviceDone
		if d.err != nil {
			return d.err
		}
		d.a.set(result, solved)
	}
	return o.print(result)
}

// spend plans the pods again with the input's commitments as a budget
// (plan.Spend), keeping the blind plan solved when none bills less, and
// returns the plan to show with what it spent (blind and nil when the
// input holds no Commitment); past --timeout's planning time it makes no
// more plans, and the report says the search stopped early when any plan
// it made was cut short.
func (o *Options) spend(ctx context.Context, p *solver.Problem, blind *solver.Plan, m *snapshot.Manifests, source ResultSource) (*solver.Plan, *plan.Spending, error) {
	if len(m.Commitments) == 0 {
		return blind, nil, nil
	}
	cs, warnings, err := plan.CommitmentsOf(m.Commitments, source.Region)
	if err != nil {
		return nil, nil, err
	}
	o.warn(warnings)
	spent, err := plan.Spend(p, blind, cs, func(q *solver.Problem) (*solver.Plan, error) {
		if d := o.workDeadline(len(q.Pods)); !d.IsZero() && time.Now().After(d) {
			return nil, nil // --timeout: the plans made so far
		}
		cut := o.stoppedEarly
		solved, err := o.solve(ctx, q)
		o.stoppedEarly = o.stoppedEarly || cut
		return solved, err
	})
	if err != nil {
		return nil, nil, err
	}
	return spent.Plan, spent, nil
}

// setCommitments puts what the plan spent of the commitments in the
// result (nothing without commitments).
func setCommitments(r *Result, spent *plan.Spending) {
	if spent == nil {
		return
	}
	r.Commitments = newCommitments(spent)
	if spent.Aware {
		// The exhaustive search minimises the list price, which a plan
		// made for the bill does not.
		r.OptimalPricePerHour = 0
	}
}

// instanceTypes loads the catalog and checks --instance-family against it.
func (o *Options) instanceTypes() ([]solver.InstanceType, ResultSource, error) {
	types, desc, err := o.Catalog.InstanceTypes()
	if err != nil {
		return nil, ResultSource{}, err
	}
	if err := plan.CheckFamilies(types, o.Default.InstanceFamilies, "--instance-family", desc); err != nil {
		return nil, ResultSource{}, err
	}
	src := ResultSource{Origin: "file", File: o.Catalog.InstanceTypesFile, Description: desc}
	if src.File == "" {
		src = ResultSource{Origin: "embedded", Region: o.Catalog.Region, Description: desc}
		if cat, err := catalog.Load(); err == nil { // loaded already: cannot fail here
			src.Date, _ = cat.PriceDates(o.Catalog.Region)
		}
	}
	return types, src, nil
}

// newResult renders the plan's report with what the run learnt about it:
// whether the search stopped at --timeout, and for small inputs the
// optimum.
func (o *Options) newResult(rep *report.Report, source ResultSource) *Result {
	p, solved := rep.Problem, rep.Plan
	r := NewResult(rep, source)
	r.StoppedEarly = o.stoppedEarly
	if len(p.Pods) <= ExactLimit && len(solved.Unschedulable) == 0 && len(solved.Existing) == 0 && len(solved.NewNodes) > 0 && !o.stoppedEarly {
		if opt, ok := baseline.Exact(p, exactSteps); ok {
			r.OptimalPricePerHour = opt
		}
	}
	return r
}

func (o *Options) warn(warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", w)
	}
}

// solve runs the solver until it finishes or ctx ends; past the run's
// deadline (--timeout), less what printing the plan will take
// (workDeadline), the solver returns the best plan found by then.
func (o *Options) solve(ctx context.Context, p *solver.Problem) (*solver.Plan, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("planning: %w", err)
	}
	deadline := o.workDeadline(len(p.Pods))
	p.Options.Deadline = deadline
	plan, err := solveCtx(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("planning: %w", err)
	}
	// The solver stops improving at the deadline and returns the best
	// plan found; returning after it means the search was cut short.
	o.solvedAt = time.Now()
	o.stoppedEarly = !deadline.IsZero() && o.solvedAt.After(deadline)
	return plan, nil
}

// Printing a plan (building the result, the JSON or the tables) takes
// about 5 µs a pod on an idle core of this project's 2-core machine, and
// 13-15 µs at a load of 8-9 (DLRM's 23,871 pods on every type: 0.3 s,
// 33 MB of JSON; TestTimeoutCoversPrinting's 20,000: 0.29 s); renderReserve
// keeps the upper figure and some.
const (
	renderPerPod = 20 * time.Microsecond
	renderBase   = 25 * time.Millisecond
)

// renderReserve is the part of --timeout kept for what follows the
// planning of pods pods: building the result and printing it.
func renderReserve(pods int) time.Duration {
	return renderBase + time.Duration(pods)*renderPerPod
}

// workDeadline is when planning (the solve, the advice, consolidation)
// of pods pods must stop so that the report is printed by the run's
// deadline; zero without --timeout.
func (o *Options) workDeadline(pods int) time.Time {
	if o.deadline.IsZero() {
		return time.Time{}
	}
	return o.deadline.Add(-renderReserve(pods))
}

// solveCtx is solver.Solve returning as soon as ctx ends. The solver is
// pure: it stops at p.Options.Deadline with its best plan, and returns
// promptly when p.Options.Done (set here to ctx's) is closed.
func solveCtx(ctx context.Context, p *solver.Problem) (*solver.Plan, error) {
	type solved struct {
		plan *solver.Plan
		err  error
	}
	p.Options.Done = ctx.Done()
	done := make(chan solved, 1)
	go func() {
		plan, err := solver.Solve(p)
		done <- solved{plan, err}
	}()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case s := <-done:
		return s.plan, s.err
	}
}

// readCluster is snapshot.ReadCluster returning as soon as ctx ends. Not
// every read it makes takes a context (discovery of the NodePool and node
// class CRDs does not), so on cancellation those requests are left to end
// at their request timeout in the background.
func readCluster(ctx context.Context, c snapshot.ClusterClients, opts snapshot.ClusterOptions) (*snapshot.Cluster, error) {
	type read struct {
		cl  *snapshot.Cluster
		err error
	}
	done := make(chan read, 1)
	go func() {
		cl, err := snapshot.ReadCluster(ctx, c, opts)
		done <- read{cl, err}
	}()
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("reading the cluster: %w", ctx.Err())
	case r := <-done:
		return r.cl, r.err
	}
}

func (o *Options) print(result *Result) error {
	o.result = result
	switch o.Output {
	case "json":
		return writeJSON(o.Out, result)
	case "yaml":
		printer, err := genericclioptions.NewJSONYamlPrintFlags().ToPrinter(o.Output)
		if err != nil {
			return err
		}
		return printer.PrintObj(result, o.Out)
	}
	return PrintHuman(o.Out, result, o.Output == "wide")
}
