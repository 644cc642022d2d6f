package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// ResultAdvice is a wider default pool that plans the same pods for less,
// or places pods the plan cannot place.
type ResultAdvice struct {
	// Allow is what the wider pool allows beyond the default: "arm64".
	Allow string `json:"allow"`
	// Flags plan with the wider pool.
	Flags string `json:"flags"`
	// PricePerHour is what the wider pool's plan costs; 0 when it was not
	// planned (AdviceSkipped says why) and PlacesPods comes from fitting the
	// pods alone.
	PricePerHour float64 `json:"pricePerHour"`
	// SavingPerHour is the plan's price minus PricePerHour (positive);
	// 0 when the advice places pods (PlacesPods).
	SavingPerHour float64 `json:"savingPerHour"`
	// SavingPercent is SavingPerHour as a percentage of the plan's price.
	SavingPercent float64 `json:"savingPercent"`
	// PlacesPods is how many of the pods the plan cannot place the wider
	// pool places (a pod selecting spot, arm64, … the default pool rules
	// out).
	PlacesPods int `json:"placesPods,omitempty"`
}

// Advice budget: each wider plan may take twice the time the plan took,
// within these bounds, so that advice never dominates the run. A plan that
// took longer than maxAdvicePlan gets no advice: the solver's deadline
// stops only its improvements, so a wider plan would take as long again.
const (
	minAdviceTime = 500 * time.Millisecond
	maxAdviceTime = 5 * time.Second
	maxAdvicePlan = 2 * time.Second
)

// setDefaults records on r what the input lacked and was planned for: the
// default pool and the EKS DaemonSets.
func setDefaults(r *Result, built *plan.Result) {
	r.DefaultPool, r.EKSDaemonSets = built.Defaults()
}

// setAdvice sets r's advice for a plan that took took (see newAdvice).
func setAdvice(ctx context.Context, r *Result, in plan.Input, orig *solver.Problem, solved *solver.Plan, took time.Duration, deadline time.Time) error {
	a, err := newAdvice(ctx, in, orig, solved, took, deadline, nil)
	if err != nil {
		return err
	}
	a.set(r, solved)
	return nil
}

// advice is what a result says of wider default pools (see newAdvice):
// its Advice and AdviceSkipped, and, by pod index, the widening that
// places each pod the plan leaves undiagnosed.
type advice struct {
	list    []ResultAdvice
	skipped string
	placing map[int]*plan.Widening
}

// newAdvice works out the advice for a plan that took took: the wider
// pools that cost less, or why they were not planned. Each wider plan is
// bounded by the advice budget and by what remains of the run's deadline
// (zero: none); a wider pool that is not planned still names the flags
// that would place the pods the plan cannot (placeableBy), which needs no
// solve. It only reads its arguments, so it may run while the plan's
// result is built. The wider plans held ready (holdAdvice; nil for none)
// are resumed or stopped.
func newAdvice(ctx context.Context, in plan.Input, orig *solver.Problem, solved *solver.Plan, took time.Duration, deadline time.Time, held *heldAdvice) (*advice, error) {
	defer held.stop()
	budget := adviceBudget(took)
	var skipped string
	switch {
	case took > maxAdvicePlan:
		skipped = fmt.Sprintf("not computed: the plan took %.1f s, and each wider pool would take as long (--arch, --capacity-type and --all-instance-types plan with one)", took.Seconds())
	case !deadline.IsZero() && time.Until(deadline) < minAdviceTime:
		skipped = "not computed: --timeout left no time to plan a wider pool (--arch, --capacity-type and --all-instance-types plan with one)"
	case !deadline.IsZero():
		budget = min(budget, time.Until(deadline)/time.Duration(max(1, len(in.Default.Widenings(in.InstanceTypes)))))
	}
	a := &advice{skipped: skipped}
	if skipped == "" {
		var cut []string
		var err error
		if a.list, cut, err = advise(ctx, in, solved, budget, held); err != nil {
			return nil, err
		}
		if len(cut) > 0 {
			a.skipped = fmt.Sprintf("not computed for %s: each wider plan ran past its budget of %.1f s, and a plan cut short can cost more than the pool would",
				strings.Join(cut, ", "), budget.Seconds())
		}
		if a.placing, err = notDiagnosedFlags(ctx, in, orig, solved); err != nil {
			return nil, err
		}
		return a, nil
	}
	placing, by, err := placeableBy(ctx, in, orig, solved)
	if err != nil {
		return nil, err
	}
	a.list, a.placing = placing, byPod(solved, by)
	return a, nil
}

// set puts the advice in r, the result of solved.
func (a *advice) set(r *Result, solved *solver.Plan) {
	r.Advice, r.AdviceSkipped = a.list, a.skipped
	namePlacing(r, solved, a.placing)
}

// advise re-plans the input with each of the default pool's widenings
// (plan.DefaultPool.Widenings) and returns those that place pods the plan
// cannot, and those that place the pods the plan places for less. Each
// re-plan is bounded by budget; it also returns what the widenings whose
// re-plan ran past it and gave no advice allow, with their flags ("arm64
// (--arch amd64,arm64)"): their plans, cut short,
// can cost far more than the pool would (several times, measured on
// Karpenter's mix), so no advice is no evidence.
func advise(ctx context.Context, in plan.Input, solved *solver.Plan, budget time.Duration, held *heldAdvice) (out []ResultAdvice, cut []string, err error) {
	if in.Default == nil || (solved.TotalPrice <= 0 && len(solved.Unschedulable) == 0) {
		return nil, nil, nil
	}
	widenings := in.Default.Widenings(in.InstanceTypes)
	// The wider plans run side by side, one per CPU: each runs one
	// member of the portfolio (Options.Packing), mostly on one core.
	// They are taken last first: the last widening, every instance
	// type, plans the most kinds and takes longest, and on fewer CPUs
	// than widenings it then runs beside the others, not after them
	// with a CPU idle (Karpenter's mix, 5,000 pods, on two: the advice
	// took 0.32 s, now 0.26 s, best of 20).
	type replan struct {
		alt  *solver.Plan
		late bool
		err  error
	}
	plans := make([]replan, len(widenings))
	var next atomic.Int64
	work := func() {
		for {
			i := len(widenings) - int(next.Add(1))
			if i < 0 {
				return
			}
			plans[i].alt, plans[i].late, plans[i].err = replanWider(ctx, in, &widenings[i], solved, budget, held.at(i))
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(widenings)) {
		wg.Go(work)
	}
	wg.Wait()
	for i, w := range widenings {
		alt, late := plans[i].alt, plans[i].late
		if plans[i].err != nil {
			return nil, nil, plans[i].err
		}
		if placed := len(solved.Unschedulable) - len(alt.Unschedulable); placed > 0 {
			out = append(out, ResultAdvice{Allow: w.What, Flags: w.Flags, PricePerHour: alt.TotalPrice, PlacesPods: placed})
			continue
		}
		saving := solved.TotalPrice - alt.TotalPrice
		// Less than a hundredth of a percent is noise, not advice.
		if len(alt.Unschedulable) > len(solved.Unschedulable) || saving <= solved.TotalPrice*1e-4 {
			if late {
				cut = append(cut, fmt.Sprintf("%s (%s)", w.What, w.Flags))
			}
			continue
		}
		out = append(out, ResultAdvice{
			Allow: w.What, Flags: w.Flags, PricePerHour: alt.TotalPrice,
			SavingPerHour: round6(saving), SavingPercent: round2(100 * saving / solved.TotalPrice),
		})
	}
	return out, cut, nil
}

// replanWider plans the input with the widening's pool within budget and
// reports whether the plan ran past it; h, when not nil, is that plan's
// solve held ready (holdAdvice).
func replanWider(ctx context.Context, in plan.Input, w *plan.Widening, solved *solver.Plan, budget time.Duration, h *heldSolve) (*solver.Plan, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, fmt.Errorf("advice: %w", err)
	}
	var built *plan.Result
	var alt *solver.Plan
	var err error
	deadline := time.Now().Add(budget)
	if h != nil {
		// Its set-up done already (holdAdvice), the held solve packs
		// with the member that won the plan, by the same deadline.
		built = h.built
		alt, err = h.resume(ctx, solver.Resume{Packing: solved.Packing(), Deadline: deadline})
		built.Problem.Options.Resume = nil
	} else {
		wide := in
		wide.Default = &w.Pool
		if built, err = plan.Build(wide); err != nil {
			return nil, false, fmt.Errorf("advice for %s: %w", w.What, err)
		}
		built.Problem.Options.Deadline = deadline
		// Advice compares pools: the narrowed re-solves that keep a plan
		// monotone in choice are the main plan's business.
		built.Problem.Options.NoNarrowing = true
		// Only the portfolio member that won the plan re-plans the same
		// pods on the wider pool: a real plan, so its price is one the
		// pool reaches, in a third or so of the time (Karpenter's mix).
		built.Problem.Options.Packing = solved.Packing()
		alt, err = solveCtx(ctx, built.Problem)
	}
	if err != nil {
		return nil, false, fmt.Errorf("advice for %s: planning: %w", w.What, err)
	}
	// A member that finds no saving on the wider pool may lose to
	// another one there (DLRM's trace: arm64 saves 1.1 % with the whole
	// portfolio, nothing with the member that won the plan): while the
	// budget lasts, the whole portfolio re-plans (stopping at the same
	// deadline), and the cheaper of the two plans stands.
	if len(alt.Unschedulable) >= len(solved.Unschedulable) && alt.TotalPrice >= solved.TotalPrice*(1-1e-4) && time.Until(deadline) > 0 {
		built.Problem.Options.Packing, built.Problem.Options.Deadline = solver.Packing{}, deadline
		full, err := solveCtx(ctx, built.Problem)
		if err != nil {
			return nil, false, fmt.Errorf("advice for %s: planning: %w", w.What, err)
		}
		if len(full.Unschedulable) < len(alt.Unschedulable) || len(full.Unschedulable) == len(alt.Unschedulable) && full.TotalPrice < alt.TotalPrice {
			alt = full
		}
	}
	return alt, time.Now().After(deadline), nil
}

// heldAdvice is the wider plans of the advice, one per widening of the
// default pool, started before the plan is known and held once set up
// (solver.Options.Resume) until the plan says how to pack them: their
// set-up (grouping the pods, the kinds of node, what the topology allows)
// runs while the plan's own solve leaves a CPU idle.
type heldAdvice struct {
	solves []*heldSolve // per widening; nil where none is held
	cancel context.CancelFunc
}

// heldSolve is one held wider plan: its problem and the solve's outcome
// once resumed.
type heldSolve struct {
	built  *plan.Result
	wake   chan solver.Resume
	solved chan solvedPlan
}

// solvedPlan is a solve's outcome.
type solvedPlan struct {
	plan *solver.Plan
	err  error
}

// holdAdvice builds the wider pools' problems (plan.DefaultPool.Widenings)
// and starts their solves, held until newAdvice resumes or stops them. A
// widening whose problem does not build is not held: its re-plan builds
// it again and reports why.
func holdAdvice(ctx context.Context, in plan.Input) *heldAdvice {
	if in.Default == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	h := &heldAdvice{cancel: cancel}
	for _, w := range in.Default.Widenings(in.InstanceTypes) {
		wide := in
		wide.Default = &w.Pool
		built, err := plan.Build(wide)
		if err != nil {
			h.solves = append(h.solves, nil)
			continue
		}
		built.Problem.Options.NoNarrowing = true // as replanWider's
		hs := &heldSolve{built: built, wake: make(chan solver.Resume, 1), solved: make(chan solvedPlan, 1)}
		built.Problem.Options.Resume = hs.wake
		go func() {
			p, err := solveCtx(ctx, built.Problem)
			hs.solved <- solvedPlan{p, err}
		}()
		h.solves = append(h.solves, hs)
	}
	return h
}

// at is the held solve of widening i; nil for none.
func (h *heldAdvice) at(i int) *heldSolve {
	if h == nil || i >= len(h.solves) {
		return nil
	}
	return h.solves[i]
}

// stop cancels the held solves not resumed (and ends the others' context
// once they are done).
func (h *heldAdvice) stop() {
	if h != nil {
		h.cancel()
	}
}

// resume lets the held solve go on with r and waits for its plan, or for
// ctx to end.
func (h *heldSolve) resume(ctx context.Context, r solver.Resume) (*solver.Plan, error) {
	h.wake <- r
	select {
	case s := <-h.solved:
		return s.plan, s.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// placeableBy returns, without planning, the widenings under which some of
// the pods the plan cannot place would fit a new node (solver.Placeable),
// with how many: advice that needs no solve, for when there is no time for
// one. PricePerHour is 0: not planned. It also returns, by index in
// solved.Unschedulable, the first widening that places each such pod.
func placeableBy(ctx context.Context, in plan.Input, orig *solver.Problem, solved *solver.Plan) ([]ResultAdvice, map[int]*plan.Widening, error) {
	if in.Default == nil || len(solved.Unschedulable) == 0 {
		return nil, nil, nil
	}
	// Pods of one shape and the same selectors get the same verdict: the
	// keys are the same under every widening (only the pools differ).
	keys := make([]string, len(solved.Unschedulable))
	shapes := map[string]string{}
	for k, u := range solved.Unschedulable {
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("advice: %w", err)
		}
		pod := &orig.Pods[u.Pod]
		keys[k] = shapeKey(pod)
		if _, ok := shapes[keys[k]]; !ok {
			shapes[keys[k]] = pod.Key()
		}
	}
	var out []ResultAdvice
	by := map[int]*plan.Widening{}
	widenings := in.Default.Widenings(in.InstanceTypes)
	for wi := range widenings {
		w := &widenings[wi]
		wide := in
		wide.Default = &w.Pool
		built, err := plan.Build(wide)
		if err != nil {
			return nil, nil, fmt.Errorf("advice for %s: %w", w.What, err)
		}
		p := built.Problem
		index := make(map[string]int, len(p.Pods))
		for i := range p.Pods {
			index[p.Pods[i].Key()] = i
		}
		verdicts := make(map[string]bool, len(shapes))
		for key, pod := range shapes {
			if err := ctx.Err(); err != nil {
				return nil, nil, fmt.Errorf("advice: %w", err)
			}
			if i, ok := index[pod]; ok {
				verdicts[key] = solver.Placeable(p, i)
			}
		}
		placed := 0
		for k := range solved.Unschedulable {
			if verdicts[keys[k]] {
				placed++
				if by[k] == nil {
					by[k] = w
				}
			}
		}
		if placed > 0 {
			out = append(out, ResultAdvice{Allow: w.What, Flags: w.Flags, PlacesPods: placed})
		}
	}
	return out, by, nil
}

// shapeKey identifies what solver.Placeable reads of a pod: its requests,
// node selector, affinity and tolerations.
func shapeKey(p *solver.Pod) string {
	b, _ := json.Marshal(struct {
		R solver.Resources
		S map[string]string
		A []solver.Term
		T []solver.Toleration
	}{p.Requests, p.NodeSelector, p.Affinity, p.Tolerations})
	return string(b)
}

// notDiagnosedFlags returns, by index in orig.Pods, the widening that
// would place each pod the plan leaves undiagnosed (solver.NotDiagnosed),
// known without a solve (placeableBy); nil when no pod is undiagnosed.
// explain -f and explain against a cluster both name the flag from it
// (withPlacingFlag).
func notDiagnosedFlags(ctx context.Context, in plan.Input, orig *solver.Problem, solved *solver.Plan) (map[int]*plan.Widening, error) {
	if !slices.ContainsFunc(solved.Unschedulable, func(u solver.Unschedulable) bool { return u.Reason == solver.NotDiagnosed }) {
		return nil, nil
	}
	_, by, err := placeableBy(ctx, in, orig, solved)
	if err != nil {
		return nil, err
	}
	return byPod(solved, by), nil
}

// byPod re-keys by (by index in solved.Unschedulable) by pod index.
func byPod(solved *solver.Plan, by map[int]*plan.Widening) map[int]*plan.Widening {
	out := make(map[int]*plan.Widening, len(by))
	for k, w := range by {
		out[solved.Unschedulable[k].Pod] = w
	}
	return out
}

// namePlacing adds to the reason of each pod not diagnosed the widening
// by (by pod index) says places it; r.Unschedulable follows
// solved.Unschedulable.
func namePlacing(r *Result, solved *solver.Plan, by map[int]*plan.Widening) {
	for k := range r.Unschedulable {
		u := &r.Unschedulable[k]
		u.Reason = withPlacingFlag(u.Reason, by[solved.Unschedulable[k].Pod])
	}
}

// withPlacingFlag is a pod's reason as shown: when the solver did not
// diagnose the pod and a widening w would place it, the reason names w's
// flags. Every front end words it here.
func withPlacingFlag(reason string, w *plan.Widening) string {
	if reason != solver.NotDiagnosed || w == nil {
		return reason
	}
	return reason + fmt.Sprintf("; allowing %s (%s) would place it", w.What, w.Flags)
}

func round6(x float64) float64 { return float64(int64(x*1e6+0.5)) / 1e6 }

// adviceBudget is the time each wider plan may take, given how long the
// plan took.
func adviceBudget(took time.Duration) time.Duration {
	return min(max(2*took, minAdviceTime), maxAdviceTime)
}

// printDefaults writes one line for each thing the input lacked and was
// planned for, and one per piece of advice.
func printDefaults(w io.Writer, r *Result) {
	if r.DefaultPool != "" {
		fmt.Fprintln(w)
	}
	var unread []string
	if r.LiveResult != nil {
		unread = r.Scope.NodePoolsUnread
	}
	for _, n := range plan.DefaultsNotices(r.DefaultPool, r.EKSDaemonSets, unread...) {
		fmt.Fprintln(w, n)
	}
	if r.AdviceSkipped != "" {
		fmt.Fprintf(w, "Advice: %s.\n", r.AdviceSkipped)
	}
	for _, a := range r.Advice {
		if a.PlacesPods > 0 && a.PricePerHour == 0 {
			fmt.Fprintf(w, "Advice: allowing %s (%s) would place %d of the pod(s) that cannot be placed (not planned: no time to price it).\n", a.Allow, a.Flags, a.PlacesPods)
			continue
		}
		if a.PlacesPods > 0 {
			fmt.Fprintf(w, "Advice: allowing %s (%s) would place %d of the pod(s) that cannot be placed, for $%.4f/h in all.\n", a.Allow, a.Flags, a.PlacesPods, a.PricePerHour)
			continue
		}
		fmt.Fprintf(w, "Advice: allowing %s (%s) would cost $%.4f/h less (−%.1f %%).\n", a.Allow, a.Flags, a.SavingPerHour, a.SavingPercent)
	}
}
