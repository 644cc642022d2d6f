package explain

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/report"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestExplainSaysWhatItPlannedForWithoutAPool: manifests with no NodePool
// and no DaemonSets are planned with Karpenter's general-purpose pool and
// the EKS DaemonSets, each said in one line, and the advice lines name
// the wider pools that would cost less (computed by planning them).
func TestExplainSaysWhatItPlannedForWithoutAPool(t *testing.T) {
	const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 200
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
`
	f := filepath.Join(t.TempDir(), "in.yaml")
	writeFile(t, f, deployment)
	tests := []struct {
		name          string
		def           plan.DefaultPool
		want, notWant []string
	}{
		{"the defaults", plan.DefaultPool{}, []string{
			"NodePool: none in the input; planned with Karpenter's recommended general-purpose NodePool (on-demand, amd64, linux, instance categories c/m/r, generation > 2)",
			"DaemonSets: none in the input; every node counts the ones EKS runs on each node (aws-node, kube-proxy, eks-pod-identity-agent)",
			"Advice: allowing arm64 (--arch amd64,arm64) would cost $",
			"Advice: allowing spot (--capacity-type on-demand,spot) would cost $",
		}, nil},
		{"arm64 and spot already allowed", plan.DefaultPool{Architectures: []string{"amd64", "arm64"}, CapacityTypes: []string{"spot"}, NoEKSDaemonSets: true},
			[]string{"(spot, amd64/arm64, linux"}, []string{"allowing arm64", "allowing spot", "DaemonSets:"}},
		{"every type: nothing to widen", plan.DefaultPool{AllInstanceTypes: true}, []string{"every instance type (on-demand, every architecture; --all-instance-types)"}, []string{"Advice:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := run(t, Options{Input: snapshot.Input{Filenames: []string{f}}, Default: tc.def})
			if err != nil {
				t.Fatalf("explain: %v\n%s", err, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestExplainJSONCarriesDefaultsAndAdvice(t *testing.T) {
	f := filepath.Join(t.TempDir(), "in.yaml")
	writeFile(t, f, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 50
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, resources: {requests: {cpu: "1", memory: 2Gi}}}]
`)
	out, errOut, err := run(t, Options{Input: snapshot.Input{Filenames: []string{f}}, Output: "json"})
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, errOut)
	}
	var got Result
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.DefaultPool, "general-purpose") || len(got.EKSDaemonSets) != 3 {
		t.Errorf("defaultPool %q, eksDaemonSets %v", got.DefaultPool, got.EKSDaemonSets)
	}
	if len(got.Advice) == 0 {
		t.Fatalf("no advice:\n%s", out)
	}
	for _, a := range got.Advice {
		if !(a.PricePerHour > 0 && a.SavingPerHour > 0) || math.Abs(a.PricePerHour+a.SavingPerHour-got.TotalPricePerHour) > 1e-4 || a.SavingPercent <= 0 || a.SavingPercent >= 100 {
			t.Errorf("advice %+v for a plan of $%v/h", a, got.TotalPricePerHour)
		}
	}
}

// TestAdviceNamesTheFlagThatPlacesAPod: a pod the default pool cannot
// take because it selects what the pool leaves out (spot, arm64) gets the
// flag that allows it, in the table's advice and in JSON; the pod that
// fits is planned as before, and a pod no widening places gets none.
func TestAdviceNamesTheFlagThatPlacesAPod(t *testing.T) {
	pod := func(name, selector string) string {
		return `
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `}
spec:
  nodeSelector: {` + selector + `}
  containers: [{name: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---`
	}
	tests := []struct {
		name     string
		manifest string
		want     []string
		places   map[string]int // allow -> pods placed
	}{
		{"a pod selecting spot", pod("batch", "karpenter.sh/capacity-type: spot"),
			[]string{"Advice: allowing spot (--capacity-type on-demand,spot) would place 1 of the pod(s) that cannot be placed, for $"},
			map[string]int{"spot": 1}},
		{"a pod selecting arm64 beside one that fits", pod("arm", "kubernetes.io/arch: arm64") + pod("x86", "kubernetes.io/arch: amd64"),
			[]string{"Advice: allowing arm64 (--arch amd64,arm64) would place 1 of the pod(s) that cannot be placed, for $"},
			map[string]int{"arm64": 1}},
		{"a Windows pod: nothing to advise", pod("iis", "kubernetes.io/os: windows"), nil, map[string]int{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "in.yaml")
			writeFile(t, f, tc.manifest)
			out, errOut, err := run(t, Options{Input: snapshot.Input{Filenames: []string{f}}})
			if err != nil {
				t.Fatalf("explain: %v\n%s", err, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			out, errOut, err = run(t, Options{Input: snapshot.Input{Filenames: []string{f}}, Output: "json"})
			if err != nil {
				t.Fatalf("explain -o json: %v\n%s", err, errOut)
			}
			var got Result
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatal(err)
			}
			places := map[string]int{}
			for _, a := range got.Advice {
				if a.PlacesPods > 0 {
					places[a.Allow] = a.PlacesPods
				}
			}
			if !maps.Equal(places, tc.places) {
				t.Errorf("advice places %v, want %v: %+v", places, tc.places, got.Advice)
			}
		})
	}
}

// TestDefaultsNoticesSayWhyNoPoolWasPlanned: the default pool's line says
// "none in the input" offline, and names the NodePool resources a live
// cluster would not let be listed when that is why; nothing without it.
func TestDefaultsNoticesSayWhyNoPoolWasPlanned(t *testing.T) {
	const pool = "every instance type (on-demand)"
	for _, tc := range []struct {
		name   string
		pool   string
		unread []string
		want   []string
	}{
		{"offline", pool, nil, []string{"NodePool: none in the input; planned with " + pool + "."}},
		{"NodePools forbidden", pool, []string{"nodepools.rightsize.dev"},
			[]string{"NodePool: none could be read (you may not list nodepools.rightsize.dev); planned with " + pool + "."}},
		{"both kinds forbidden", pool, []string{"nodepools.karpenter.sh", "nodepools.rightsize.dev"},
			[]string{"NodePool: none could be read (you may not list nodepools.karpenter.sh or nodepools.rightsize.dev); planned with " + pool + "."}},
		{"pools read, some forbidden: no default pool, no line", "", []string{"nodepools.karpenter.sh"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := plan.DefaultsNotices(tc.pool, nil, tc.unread...); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestSkippedAdviceStillNamesTheFlagThatPlacesAPod: when the plan took
// too long to plan the wider pools again, the pods it cannot place still
// get the flag that would place them, found without a solve (issue 33:
// slow plans left GPU pods with no hint at all).
func TestSkippedAdviceStillNamesTheFlagThatPlacesAPod(t *testing.T) {
	f := filepath.Join(t.TempDir(), "in.yaml")
	writeFile(t, f, `
apiVersion: v1
kind: Pod
metadata: {name: batch}
spec:
  nodeSelector: {karpenter.sh/capacity-type: spot}
  containers: [{name: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]
`)
	in := defaultPoolInput(t, f)
	built, solved := buildAndSolve(t, in)
	var r Result
	if err := setAdvice(context.Background(), &r, in, built.Problem, solved, 10*time.Second, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.AdviceSkipped, "not computed: the plan took 10.0 s") {
		t.Errorf("advice skipped %q, want it said why", r.AdviceSkipped)
	}
	if len(r.Advice) != 1 || r.Advice[0].Allow != "spot" || r.Advice[0].PlacesPods != 1 || r.Advice[0].PricePerHour != 0 {
		t.Fatalf("advice %+v, want spot placing the pod, not priced", r.Advice)
	}
	var out strings.Builder
	printDefaults(&out, &r)
	if want := "Advice: allowing spot (--capacity-type on-demand,spot) would place 1 of the pod(s) that cannot be placed (not planned: no time to price it)."; !strings.Contains(out.String(), want) {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
}

// TestPodsNotDiagnosedStillGetTheFlagThatPlacesThem: when the deadline
// passed before the solver diagnosed the pods it cannot place, each says
// so, and names the flag that would place it when a wider pool does
// (solver.Placeable, no solve), whether the advice was planned or not.
func TestPodsNotDiagnosedStillGetTheFlagThatPlacesThem(t *testing.T) {
	f := filepath.Join(t.TempDir(), "in.yaml")
	writeFile(t, f, `
apiVersion: v1
kind: Pod
metadata: {name: batch}
spec:
  nodeSelector: {karpenter.sh/capacity-type: spot}
  containers: [{name: c, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: giant}
spec:
  containers: [{name: c, resources: {requests: {cpu: "5000", memory: 1Gi}}}]
`)
	in := defaultPoolInput(t, f)
	want := map[string]string{
		"default/batch": solver.NotDiagnosed + "; allowing spot (--capacity-type on-demand,spot) would place it",
		"default/giant": solver.NotDiagnosed,
	}
	for _, took := range []time.Duration{10 * time.Millisecond, 10 * time.Second} {
		t.Run(took.String(), func(t *testing.T) {
			built, err := plan.Build(in)
			if err != nil {
				t.Fatal(err)
			}
			built.Problem.Options.Deadline = time.Now().Add(-time.Second)
			solved, err := solver.Solve(built.Problem)
			if err != nil {
				t.Fatal(err)
			}
			r := NewResult(report.FromPlan(built.Problem, solved, built.InFlight), ResultSource{})
			if err := setAdvice(context.Background(), r, in, built.Problem, solved, took, time.Time{}); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, u := range r.Unschedulable {
				got[u.Pod] = u.Reason
			}
			if !maps.Equal(got, want) {
				t.Errorf("reasons\n%q\nwant\n%q", got, want)
			}
		})
	}
}

// defaultPoolInput is the planning input of a manifest file under the
// default pool and the embedded us-east-1 catalog, as explain -f builds it.
func defaultPoolInput(t *testing.T, file string) plan.Input {
	t.Helper()
	m, err := snapshot.Read([]string{file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cat := plan.Catalog{Region: "us-east-1"}
	types, _, err := cat.InstanceTypes()
	if err != nil {
		t.Fatal(err)
	}
	return plan.Input{Manifests: m, InstanceTypes: types, Catalog: &cat, Default: &plan.DefaultPool{}}
}

// TestAdviceCutShortIsSaid: a wider pool whose plan ran past the advice
// budget and gave no advice is named as not computed, never dropped
// silently (a plan cut short can cost several times what the pool would);
// with time enough, none is.
func TestAdviceCutShortIsSaid(t *testing.T) {
	f := filepath.Join(t.TempDir(), "in.yaml")
	writeFile(t, f, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 40
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}
      containers: [{name: c, resources: {requests: {cpu: 300m, memory: 1Gi}}}]
`)
	in := defaultPoolInput(t, f)
	built, err := plan.Build(in)
	if err != nil {
		t.Fatal(err)
	}
	solved, err := solver.Solve(built.Problem)
	if err != nil {
		t.Fatal(err)
	}
	widenings := in.Default.Widenings(in.InstanceTypes)
	for _, tc := range []struct {
		budget  time.Duration
		wantCut bool
	}{{time.Nanosecond, true}, {time.Minute, false}} {
		advice, cut, err := advise(context.Background(), in, solved, tc.budget, nil)
		if err != nil {
			t.Fatal(err)
		}
		said := map[string]bool{}
		for _, a := range advice {
			said[a.Allow] = true
		}
		for _, c := range cut {
			what, _, _ := strings.Cut(c, " (")
			if said[what] {
				t.Errorf("budget %v: %s both advised and cut", tc.budget, c)
			}
			said[what] = true
		}
		if tc.wantCut && len(said) != len(widenings) {
			t.Errorf("budget %v: advice %+v, cut %q: want every one of the %d widenings advised or named as cut", tc.budget, advice, cut, len(widenings))
		}
		if !tc.wantCut && len(cut) > 0 {
			t.Errorf("budget %v: cut %q, want none", tc.budget, cut)
		}
	}
}
