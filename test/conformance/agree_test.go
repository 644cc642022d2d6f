package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/flags"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/tuicmd"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/explain"
	rsplan "github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/report"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/report/detailtest"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// verdict is what one front end says of one pod: placed on a new node, on
// an existing one, or pending, and the one sentence it gives for it.
type verdict struct {
	// Kind is "new", "existing" or "pending".
	Kind string
	// Node is the proposed node ("new-2 m5.large us-east-1a on-demand
	// $0.0960/h") or the existing node's name; "" when pending.
	Node   string
	Reason string
	// Contradicted is what the detail view's pool-by-pool diagnosis says
	// against the verdict; always "" for explain's.
	Contradicted string
}

func (v verdict) String() string {
	s := v.Kind
	if v.Node != "" {
		s += " " + v.Node
	}
	s += " — " + v.Reason
	if v.Contradicted != "" {
		s += " [but the detail view: " + v.Contradicted + "]"
	}
	return s
}

// TestTUIAgreesWithExplain builds every conformance scenario's input the
// way both front ends get it (the same -f directory and --instance-types
// file, the commands' flag defaults), plans it with explain (what
// `explain -o json` prints) and with the TUI's report, and compares their
// verdict on every pod: the TUI's as its detail view (what enter on the
// pod's row shows) reads, explain's from its result. They must give the
// same outcome, the same node (name, type, zone, capacity type, price) and
// the same sentence.
func TestTUIAgreesWithExplain(t *testing.T) {
	scenarios, err := loadSuites("testdata")
	if err != nil {
		t.Fatal(err)
	}
	planner := report.NewPlanner()
	var mu sync.Mutex
	pods, agree, diag := 0, 0, 0
	kinds := map[string]int{}
	t.Run("scenarios", func(t *testing.T) {
		for i := range scenarios {
			sc := &scenarios[i]
			t.Run(sc.Name, func(t *testing.T) {
				t.Parallel()
				ex, tv, checked, err := bothVerdicts(sc, planner, t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				var diffs []string
				for _, pod := range sortedPods(ex, tv) {
					e, inExplain := ex[pod]
					v, inTUI := tv[pod]
					switch {
					case !inExplain:
						diffs = append(diffs, fmt.Sprintf("%s: explain does not account for it; the TUI says %s", pod, v))
					case !inTUI:
						diffs = append(diffs, fmt.Sprintf("%s: the TUI does not show it; explain says %s", pod, e))
					case e != v:
						diffs = append(diffs, fmt.Sprintf("%s:\n      explain: %s\n      TUI:     %s", pod, e, v))
					}
				}
				mu.Lock()
				pods += len(ex)
				for _, v := range ex {
					kinds[v.Kind]++
				}
				agree += len(ex) - len(diffs)
				diag += checked
				mu.Unlock()
				if len(diffs) > 0 {
					t.Errorf("%s (%s): the TUI's detail view and explain disagree on %d of %d pod(s):\n  %s", sc.Name, sc.file, len(diffs), len(ex), strings.Join(diffs, "\n  "))
				}
			})
		}
	})
	t.Logf("%d pods in %d scenarios: %d agree (explain: %d on new nodes, %d pending; %d pending pods' diagnosis also read pool by pool in the detail view)",
		pods, len(scenarios), agree, kinds["new"], kinds["pending"], diag)
	if pods == 0 {
		t.Error("no pod compared")
	}
}

// bothVerdicts plans the scenario with explain and with the TUI's report
// and returns each one's verdict per pod key (namespace/name), and how many
// pending pods' detail views were checked pool by pool.
func bothVerdicts(sc *scenario, planner *report.Planner, dir string) (ex, tv map[string]verdict, checked int, err error) {
	in, err := sc.writeInput(dir)
	if err != nil {
		return nil, nil, 0, err
	}
	typesFile, err := sc.typesFile()
	if err != nil {
		return nil, nil, 0, err
	}
	// The commands' own flags and defaults, as both commands register them.
	var planning flags.Planning
	fs := pflag.NewFlagSet("agree", pflag.ContinueOnError)
	planning.AddFlags(fs)
	if err := fs.Parse(append([]string{"--instance-types", typesFile}, sc.Args...)); err != nil {
		return nil, nil, 0, err
	}
	input := snapshot.Input{Filenames: []string{in}}

	var out, errOut bytes.Buffer
	o := explain.Options{Input: input, Output: "json", Catalog: planning.Catalog, Default: planning.Default,
		IOStreams: genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}}
	if err := o.Run(context.Background()); err != nil {
		return nil, nil, 0, fmt.Errorf("explain: %w: %s", err, errOut.String())
	}
	var res explain.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return nil, nil, 0, fmt.Errorf("explain -o json: %w", err)
	}

	m, err := input.Read(nil)
	if err != nil {
		return nil, nil, 0, err
	}
	r, err := planner.Build(report.Input{Manifests: m, Catalog: planning.Catalog, Default: planning.Default, Timeout: tuicmd.DefaultTimeout})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("TUI report: %w", err)
	}
	tv = map[string]verdict{}
	for gi := range r.Pending {
		g := &r.Pending[gi]
		lines := r.Detail(g)
		v, nodes, err := readDetail(lines)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("detail of %s: %w\n%s", g.Owner, err, strings.Join(lines, "\n"))
		}
		compared, diffs := poolVerdicts(r, g, lines, v)
		if compared {
			checked += len(g.Pods)
		}
		for _, pod := range g.Pods {
			pv := v
			if v.Kind == "new" {
				pv.Node = nodes[proposedNode(r, pod)]
			}
			pv.Contradicted = strings.Join(diffs, "; ")
			tv[pod] = pv
		}
	}
	if e, v := rsplan.DefaultsNotices(res.DefaultPool, res.EKSDaemonSets), r.Notices(); !slices.Equal(e, v) {
		return nil, nil, 0, fmt.Errorf("what the input lacked: explain says %q, the TUI %q", e, v)
	}
	return explainVerdicts(&res), tv, checked, nil
}

// explainVerdicts reads explain's verdict on every pod from its result.
func explainVerdicts(res *explain.Result) map[string]verdict {
	out := map[string]verdict{}
	for _, n := range res.Nodes {
		node := fmt.Sprintf("%s %s %s %s $%.4f/h", n.Name, n.InstanceType, n.Zone, n.CapacityType, n.PricePerHour)
		for _, pod := range n.Pods {
			out[pod] = verdict{Kind: "new", Node: node, Reason: n.Reason}
		}
	}
	for _, u := range res.Unschedulable {
		out[u.Pod] = verdict{Kind: "pending", Reason: u.Reason}
	}
	return out
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

func sortedPods(a, b map[string]verdict) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]verdict{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}
