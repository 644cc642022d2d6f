package conformance

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/pflag"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/report"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/report/detailtest"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui"
)

// verdict is what the detail view says of a pod: placed on a new node, on
// an existing one, or pending, and the one sentence it gives for it.
type verdict struct {
	// Kind is "new", "existing" or "pending".
	Kind string
	// Node is the existing node's name; "" otherwise.
	Node   string
	Reason string
}

// TestDetailViewAgreesWithDiagnosis builds every conformance scenario's
// input the way the TUI gets it (the same -f directory and
// --instance-types file, the command's flag defaults) and reads the detail
// view of every pending group (what enter on the pod's row shows): its
// "Plan:" line gives the group's outcome and sentence and lists every
// proposed node that takes its pods; a pod on a new node fits some
// NodePool; a pending pod whose sentence is the solver's diagnosis gets,
// in every NodePool's block, the verdict that sentence gives the pool.
// explain prints the same rows (pkg/report builds them once for both), so
// what the view says of the plan is what explain says.
func TestDetailViewAgreesWithDiagnosis(t *testing.T) {
	scenarios, err := loadSuites("testdata")
	if err != nil {
		t.Fatal(err)
	}
	planner := report.NewPlanner()
	var mu sync.Mutex
	pods, diag := 0, 0
	t.Run("scenarios", func(t *testing.T) {
		for i := range scenarios {
			sc := &scenarios[i]
			t.Run(sc.Name, func(t *testing.T) {
				t.Parallel()
				r, err := scenarioReport(sc, planner, t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				n, checked, diffs := detailDiffs(r)
				mu.Lock()
				pods, diag = pods+n, diag+checked
				mu.Unlock()
				if len(diffs) > 0 {
					t.Errorf("%s (%s): the detail view contradicts the plan on %d group(s):\n  %s", sc.Name, sc.file, len(diffs), strings.Join(diffs, "\n  "))
				}
			})
		}
	})
	t.Logf("%d pods in %d scenarios; %d pending pods' diagnosis read pool by pool in the detail view", pods, len(scenarios), diag)
	if pods == 0 {
		t.Error("no pod read")
	}
}

// scenarioReport builds the TUI's report of the scenario, with the
// program's own flags and defaults (tui.Options.AddFlags).
func scenarioReport(sc *scenario, planner *report.Planner, dir string) (*report.Report, error) {
	in, err := sc.writeInput(dir)
	if err != nil {
		return nil, err
	}
	typesFile, err := sc.typesFile()
	if err != nil {
		return nil, err
	}
	var o tui.Options
	fs := pflag.NewFlagSet("detail", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(append([]string{"--instance-types", typesFile}, sc.Args...)); err != nil {
		return nil, fmt.Errorf("flags: %w", err)
	}
	m, err := snapshot.Input{Filenames: []string{in}}.Read(nil)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", in, err)
	}
	r, err := planner.Build(report.Input{Manifests: m, Catalog: o.Catalog, Default: o.Default, Timeout: o.Timeout})
	if err != nil {
		return nil, fmt.Errorf("TUI report: %w", err)
	}
	return r, nil
}

// detailDiffs reads the detail view of every pending group of r and
// returns how many pods they hold, how many pending pods' views were
// compared pool by pool, and every contradiction.
func detailDiffs(r *report.Report) (pods, checked int, diffs []string) {
	for gi := range r.Pending {
		g := &r.Pending[gi]
		pods += len(g.Pods)
		lines := r.Detail(g)
		v, nodes, err := readDetail(lines)
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: %v\n%s", g.Owner, err, strings.Join(lines, "\n")))
			continue
		}
		if want := groupVerdict(g); v != want {
			diffs = append(diffs, fmt.Sprintf("%s: the view says %+v, the plan %+v", g.Owner, v, want))
		}
		if v.Kind == "new" {
			for _, pod := range g.Pods {
				if name := proposedNode(r, pod); nodes[name] == "" {
					diffs = append(diffs, fmt.Sprintf("%s: the view does not list %s's node %q", g.Owner, pod, name))
				}
			}
		}
		compared, pd := poolVerdicts(r, g, lines, v)
		if compared {
			checked += len(g.Pods)
		}
		for _, d := range pd {
			diffs = append(diffs, g.Owner+": "+d)
		}
	}
	return pods, checked, diffs
}

// groupVerdict is what the plan does with the group's pods, as the view
// should say it.
func groupVerdict(g *report.PendingGroup) verdict {
	switch g.Outcome {
	case report.OutcomeNew:
		return verdict{Kind: "new", Reason: g.Reason}
	case report.OutcomeExisting, report.OutcomeLaunching:
		return verdict{Kind: "existing", Node: g.Node, Reason: g.Reason}
	}
	return verdict{Kind: "pending", Reason: g.Reason}
}

var (
	planLine = regexp.MustCompile(`^Plan: +(new node|fits on|cannot be placed)(?: (.+?))? — (.*)$`)
	nodeLine = regexp.MustCompile(`^ +(new-\d+): (\S+) (\S+) (\S+) \$([0-9.]+)/h, \d+ pods$`)
)

// readDetail reads the verdict the detail view's "Plan:" line gives, and
// the proposed nodes listed under it by name, as "new-1 TYPE ZONE
// CAPACITY $PRICE/h".
func readDetail(lines []string) (verdict, map[string]string, error) {
	for i, l := range lines {
		m := planLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		v := verdict{Reason: m[3]}
		switch m[1] {
		case "new node":
			v.Kind = "new"
		case "fits on":
			v.Kind, v.Node = "existing", m[2]
		default:
			v.Kind = "pending"
		}
		nodes := map[string]string{}
		for _, l := range lines[i+1:] {
			n := nodeLine.FindStringSubmatch(l)
			if n == nil {
				break
			}
			nodes[n[1]] = fmt.Sprintf("%s %s %s %s $%s/h", n[1], n[2], n[3], n[4], n[5])
		}
		if v.Kind == "new" && len(nodes) == 0 {
			return v, nil, fmt.Errorf("a new node without the nodes listed")
		}
		return v, nodes, nil
	}
	return verdict{}, nil, fmt.Errorf("no Plan: line")
}

// proposedNode names the TUI's proposed node (its Proposed view) that
// takes pod.
func proposedNode(r *report.Report, pod string) string {
	for _, n := range r.Proposed {
		for _, p := range n.Pods {
			if p == pod {
				return n.Name
			}
		}
	}
	return ""
}

// poolVerdicts checks the detail view's pool-by-pool diagnosis of the
// group's pod against the verdict: a pod placed on a new node fits some
// pool's types; a pending pod whose sentence is the solver's diagnosis
// (solver.Diagnose; not a limit, topology or refusal sentence) gets, in
// every pool's block, the verdict that sentence gives the pool. It returns
// whether the pool verdicts were compared, and the disagreements.
func poolVerdicts(r *report.Report, g *report.PendingGroup, lines []string, v verdict) (bool, []string) {
	blocks, order := detailtest.Blocks(lines)
	switch v.Kind {
	case "new":
		for _, b := range blocks {
			if detailtest.ViewVerdict(b) == detailtest.Fits {
				return false, nil
			}
		}
		return false, []string{"it fits the pod in no NodePool"}
	case "pending":
	default:
		return false, nil
	}
	d := solver.Diagnose(r.Problem, g.PodIndex)
	switch {
	case d.Reason() != v.Reason:
		return false, nil
	case d.NoPools || d.Unanswerable != "":
		// No pool can be judged: the view says why instead, in the same words.
		if want := "✗ " + d.Reason(); !slices.Contains(lines, want) || len(order) > 0 {
			return true, []string{fmt.Sprintf("the detail view lacks %q or judges pools %v", want, order)}
		}
		return true, nil
	}
	var diffs []string
	if len(order) != len(r.Problem.Pools) {
		diffs = append(diffs, fmt.Sprintf("the detail view shows NodePools %v, the problem has %d", order, len(r.Problem.Pools)))
	}
	for _, pool := range order {
		if view, sentence := detailtest.ViewVerdict(blocks[pool]), detailtest.SentenceVerdict(v.Reason, pool); view != sentence || view == detailtest.Fits {
			diffs = append(diffs, fmt.Sprintf("NodePool %s: the detail view says %q, explain's sentence %q", pool, view, sentence))
		}
	}
	return true, diffs
}
