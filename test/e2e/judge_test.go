package e2e

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/bench"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver/check"
)

// judgeProblems is how many random problems TestJudge judges; judgeBatchPods
// about how many pods run on the plane at once.
const (
	judgeProblems  = 220
	judgeBatchPods = 700
)

// judgeSeeds are the random problems' seeds: 1..judgeProblems, or the
// comma-separated list in RIGHTSIZE_JUDGE_SEEDS (to rerun a disagreement).
func judgeSeeds(t testing.TB) []uint64 {
	if v := os.Getenv("RIGHTSIZE_JUDGE_SEEDS"); v != "" {
		var out []uint64
		for _, f := range strings.Split(v, ",") {
			s, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				t.Fatalf("RIGHTSIZE_JUDGE_SEEDS: %v", err)
			}
			out = append(out, s)
		}
		return out
	}
	out := make([]uint64, judgeProblems)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

// judgeRandomCases plans the random problems of the seeds; k numbers the
// cases from first.
func judgeRandomCases(t testing.TB, seeds []uint64, first int) []*judgeCase {
	t.Helper()
	var cases []*judgeCase
	for i, seed := range seeds {
		c, err := newJudgeCase(fmt.Sprintf("random seed=%d", seed), first+i, judgeProblem(seed))
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, c)
	}
	return cases
}

// TestJudge is the kube-scheduler judge (see judgerun_test.go): random
// constraint-rich problems and Karpenter's benchmark mix, planned offline
// by the solver (the solver.Problem built directly), then created on one
// control plane; kube-scheduler must bind every planned pod to its planned
// node and leave every pod the plan leaves pending unbound.
func TestJudge(t *testing.T) {
	env := sharedEnv(t).Env
	run := newJudgeRun(t, env)
	ctx := context.Background()

	t.Run("random", func(t *testing.T) {
		start := time.Now()
		cases := judgeRandomCases(t, judgeSeeds(t), 0)
		planned := time.Since(start)
		run.t = t
		p0, n0, pods0 := run.problems, run.nodes, run.pods
		ds, err := run.judge(ctx, cases, judgeBatchPods)
		if err != nil {
			t.Fatal(err)
		}
		reportDisagreements(t, ds, cases)
		t.Logf("judge: %d random problems, %d nodes, %d pods judged in %s (planning %s), %d disagreements",
			run.problems-p0, run.nodes-n0, run.pods-pods0, time.Since(start).Round(time.Millisecond), planned.Round(time.Millisecond), len(ds))
	})

	t.Run("karpenter", func(t *testing.T) {
		start := time.Now()
		var cases []*judgeCase
		// Karpenter's own benchmark input (bench.KarpenterMix, seed 42 is
		// Karpenter's), at sizes the plane binds in seconds.
		for i, seed := range []int64{42, 7} {
			c, err := newJudgeCase(fmt.Sprintf("karpenter mix 300 pods seed=%d", seed), 10000+i, bench.KarpenterMix(300, seed))
			if err != nil {
				t.Fatal(err)
			}
			cases = append(cases, c)
		}
		run.t = t
		p0, n0, pods0 := run.problems, run.nodes, run.pods
		ds, err := run.judge(ctx, cases, 600)
		if err != nil {
			t.Fatal(err)
		}
		reportDisagreements(t, ds, cases)
		t.Logf("judge: %d Karpenter-mix problems, %d nodes, %d pods judged in %s, %d disagreements",
			run.problems-p0, run.nodes-n0, run.pods-pods0, time.Since(start).Round(time.Millisecond), len(ds))
	})
}

// TestJudgeProblems checks the judge's own inputs without a plane: the
// generator is deterministic, its problems are constraint-rich, every plan
// passes the solver's independent checker, judgeOrder finds a release
// order for every plan, and no pod the plan leaves pending could join a
// planned node with the checker still accepting the plan (the plane's
// verdict on such a pod, offline).
func TestJudgeProblems(t *testing.T) {
	a, b := judgeProblem(7), judgeProblem(7)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("judgeProblem(7) differs between two calls")
	}
	var pods, spread, affinity, anti, gpu, selectors, ports, placed, pending, invalid int
	for _, seed := range judgeSeeds(t) {
		c, err := newJudgeCase(fmt.Sprintf("random seed=%d", seed), int(seed), judgeProblem(seed))
		if err != nil {
			t.Fatal(err)
		}
		// A plan the independent checker rejects is the solver's bug, for
		// the plane to show; a plan it accepts must have a release order.
		if err := check.Plan(c.p, c.plan); err != nil {
			invalid++
		} else if len(c.stuck) > 0 {
			t.Errorf("%s: the checker accepts the plan but judgeOrder finds no release order: %v", c.name, c.stuck)
		}
		for i := range c.p.Pods {
			pod := &c.p.Pods[i]
			pods++
			if len(pod.Spread) > 0 {
				spread++
			}
			if len(pod.PodAffinity) > 0 {
				affinity++
			}
			if len(pod.PodAntiAffinity) > 0 {
				anti++
			}
			if pod.Requests[solver.GPU] > 0 {
				gpu++
			}
			if len(pod.NodeSelector) > 0 || len(pod.Affinity) > 0 {
				selectors++
			}
			if len(pod.HostPorts) > 0 {
				ports++
			}
		}
		placed += len(c.order)
		pending += len(c.plan.Unschedulable)
		// Each node's sentence names what it finally holds.
		for _, n := range c.plan.NewNodes {
			if m := holdsRe.FindStringSubmatch(n.Reason); m != nil {
				if want := strconv.Itoa(len(n.Pods)); m[2] != want && (m[2] != "" || want != "1") {
					t.Errorf("%s: node %s %s holds %d pods, but its reason says %q", c.name, n.Pool, n.InstanceType, len(n.Pods), n.Reason)
				}
			}
		}
		if pod, node := fitsPlannedNode(c.p, c.plan); pod >= 0 {
			t.Errorf("%s: pod %s is left pending, yet the checker accepts the plan with it on planned node %d: kube-scheduler would bind it there",
				c.name, c.p.Pods[pod].Key(), node)
		}
	}
	t.Logf("%d pods: %d with spread, %d affinity, %d anti-affinity, %d GPU, %d node selectors/affinity, %d host ports; %d placed, %d left pending; %d plans the checker rejects",
		pods, spread, affinity, anti, gpu, selectors, ports, placed, pending, invalid)
	for name, n := range map[string]int{"spread": spread, "affinity": affinity, "anti-affinity": anti, "GPU": gpu, "node selector": selectors, "host ports": ports, "pending": pending} {
		if n*20 < pods && name != "pending" || n == 0 {
			t.Errorf("only %d of %d pods with %s: the problems are not constraint-rich", n, pods, name)
		}
	}
}

// holdsRe finds the pods a planned node's reason says it holds.
var holdsRe = regexp.MustCompile(`holds (these (\d+) pods|this pod)`)

// fitsPlannedNode returns the first pending pod of the plan that the
// independent checker accepts on one of the planned nodes, with that node,
// or -1.
func fitsPlannedNode(p *solver.Problem, plan *solver.Plan) (int, int) {
	for ui, u := range plan.Unschedulable {
		for ni := range plan.NewNodes {
			try := *plan
			try.NewNodes = slices.Clone(plan.NewNodes)
			n := &try.NewNodes[ni]
			n.Pods = append(slices.Clone(n.Pods), u.Pod)
			n.Requested = n.Requested.Add(p.Pods[u.Pod].Requests)
			try.Unschedulable = slices.Delete(slices.Clone(plan.Unschedulable), ui, ui+1)
			if check.Plan(p, &try) == nil {
				return u.Pod, ni
			}
		}
	}
	return -1, -1
}

// TestJudgeOrder checks the release order on small plans: spread domains
// filled in turn, leaders before followers, and a plan no order can
// satisfy reported as stuck.
func TestJudgeOrder(t *testing.T) {
	web := map[string]string{"app": "web"}
	db := map[string]string{"app": "db"}
	zoneSpread := []solver.TopologySpread{{MaxSkew: 1, TopologyKey: solver.LabelZone, WhenUnsatisfiable: solver.DoNotSchedule,
		Selector: solver.Selector{MatchLabels: web}}}
	follow := []solver.PodAffinityTerm{{TopologyKey: labelHostname, Selector: solver.Selector{MatchLabels: db}}}
	apart := []solver.PodAffinityTerm{{TopologyKey: labelHostname, Selector: solver.Selector{MatchLabels: web}}}
	pod := func(name string, labels map[string]string) solver.Pod {
		return solver.Pod{Namespace: "default", Name: name, Labels: labels}
	}
	with := func(p solver.Pod, f func(*solver.Pod)) solver.Pod { f(&p); return p }
	tests := []struct {
		name  string
		pods  []solver.Pod
		nodes [][]int  // pods per planned node
		zones []string // zone per planned node
		want  []int    // the order, when it is the only good one
		stuck int
	}{
		{
			name: "a plan that breaks a zone spread is stuck",
			pods: []solver.Pod{
				with(pod("w0", web), func(p *solver.Pod) { p.Spread = zoneSpread }),
				with(pod("w1", web), func(p *solver.Pod) { p.Spread = zoneSpread }),
				with(pod("w2", web), func(p *solver.Pod) { p.Spread = zoneSpread }),
				with(pod("w3", web), func(p *solver.Pod) { p.Spread = zoneSpread }),
			},
			nodes: [][]int{{0, 1, 2}, {3}, {}},
			zones: []string{"zone-a", "zone-b", "zone-b"},
			// zone-a holds 3 and zone-b 1: skew 2, no order works.
			stuck: 1,
		},
		{
			// The round robin over nodes would put three in zone-b before
			// the second in zone-a; the order must interleave the zones.
			name: "zone spread over one node in one zone and three in another",
			pods: []solver.Pod{
				with(pod("w0", web), func(p *solver.Pod) { p.Spread = zoneSpread }),
				with(pod("w1", web), func(p *solver.Pod) { p.Spread = zoneSpread }),
				with(pod("w2", web), func(p *solver.Pod) { p.Spread = zoneSpread }),
				with(pod("w3", web), func(p *solver.Pod) { p.Spread = zoneSpread }),
				with(pod("w4", web), func(p *solver.Pod) { p.Spread = zoneSpread }),
				with(pod("w5", web), func(p *solver.Pod) { p.Spread = zoneSpread }),
			},
			nodes: [][]int{{0, 1, 2}, {3}, {4}, {5}},
			zones: []string{"zone-a", "zone-b", "zone-b", "zone-b"},
			want:  []int{0, 3, 4, 1, 5, 2},
		},
		{
			name: "the affinity leader goes first",
			pods: []solver.Pod{
				with(pod("web", web), func(p *solver.Pod) { p.PodAffinity = follow }),
				pod("db", db),
			},
			nodes: [][]int{{0, 1}},
			zones: []string{"zone-a"},
			want:  []int{1, 0},
		},
		{
			name: "anti-affinity on one node cannot be ordered",
			pods: []solver.Pod{
				with(pod("w0", web), func(p *solver.Pod) { p.PodAntiAffinity = apart }),
				with(pod("w1", web), func(p *solver.Pod) { p.PodAntiAffinity = apart }),
			},
			nodes: [][]int{{0, 1}},
			zones: []string{"zone-a"},
			stuck: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &solver.Problem{Pods: tc.pods}
			plan := &solver.Plan{}
			var labels []map[string]string
			for i, pods := range tc.nodes {
				plan.NewNodes = append(plan.NewNodes, solver.NewNode{Zone: tc.zones[i], Pods: pods})
				labels = append(labels, map[string]string{solver.LabelZone: tc.zones[i], labelHostname: fmt.Sprintf("n%d", i)})
			}
			order, stuck, err := judgeOrder(p, plan, labels)
			if err != nil {
				t.Fatal(err)
			}
			if len(order) != len(tc.pods) {
				t.Fatalf("order %v has %d pods, want %d", order, len(order), len(tc.pods))
			}
			if len(stuck) != tc.stuck {
				t.Errorf("stuck = %q, want %d", stuck, tc.stuck)
			}
			if tc.want != nil && fmt.Sprint(order) != fmt.Sprint(tc.want) {
				t.Errorf("order = %v, want %v", order, tc.want)
			}
			// Replaying the order, every pod but the stuck ones is allowed.
			s, err := newOrderSim(p, plan, labels)
			if err != nil {
				t.Fatal(err)
			}
			refused := 0
			for _, i := range order {
				if s.allowed(i, s.nodeOf[i]) != "" {
					refused++
				}
				s.place(i)
			}
			if refused != tc.stuck {
				t.Errorf("replaying %v: %d pods refused, want %d", order, refused, tc.stuck)
			}
		})
	}
}

// TestPlannedNodeLabels checks the labels a planned node is created with.
func TestPlannedNodeLabels(t *testing.T) {
	it := solver.InstanceType{Name: "m.large", Labels: map[string]string{labelArch: "arm64", labelFamily: "m"}}
	p := &solver.Problem{
		InstanceTypes: []solver.InstanceType{it},
		Pools: []solver.Pool{{Name: "team", Labels: map[string]string{labelTier: "general"}, Requirements: []solver.Requirement{
			{Key: labelTeam, Operator: solver.OpIn, Values: []string{"red"}},
			{Key: labelGroup, Operator: solver.OpIn, Values: []string{"g1", "g2"}},
			{Key: labelFamily, Operator: solver.OpIn, Values: []string{"c"}},
		}}},
	}
	got, err := plannedNodeLabels(p, &solver.NewNode{Pool: "team", InstanceType: "m.large", Zone: "zone-b", CapacityType: "spot"}, "j1-n0")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		solver.LabelInstanceType: "m.large", labelArch: "arm64", labelFamily: "m", labelTier: "general", labelTeam: "red",
		solver.LabelNodePool: "team", solver.LabelZone: "zone-b", solver.LabelCapacityType: "spot", labelHostname: "j1-n0",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("labels = %v, want %v", got, want)
	}
	if _, err := plannedNodeLabels(p, &solver.NewNode{Pool: "gone", InstanceType: "m.large"}, "x"); err == nil {
		t.Error("a node of an unknown pool got labels")
	}
}
