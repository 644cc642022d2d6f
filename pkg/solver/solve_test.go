package solver_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver/check"
)

func solveChecked(t *testing.T, p *Problem) *Plan {
	t.Helper()
	plan, err := Solve(p)
	if err != nil {
		t.Fatalf("Solve: %v", err)
	}
	// Judged as kube-scheduler judges the final cluster: the solver plans
	// spread over the pools' domains (Karpenter's view), but placePending
	// adds what kube-scheduler would bind on the final nodes.
	if err := check.Plan(p, plan); err != nil {
		t.Fatalf("invalid plan: %v", err)
	}
	return plan
}

func nodeTypes(plan *Plan) []string {
	var out []string
	for _, n := range plan.NewNodes {
		out = append(out, n.InstanceType+"/"+n.CapacityType)
	}
	return out
}

func TestSolvePlacesPodsWithinConstraints(t *testing.T) {
	gpuTaint := Taint{Key: "nvidia.com/gpu", Value: "true", Effect: EffectNoSchedule}
	tests := []struct {
		name string
		pods []Pod
		pool Pool
		// want checks the plan beyond the checker's rules.
		want func(t *testing.T, plan *Plan)
	}{
		{
			name: "one small pod gets the cheapest type that holds it",
			pods: pods("web", 1, res(500, 1*gi)),
			pool: onDemandPool("default"),
			want: func(t *testing.T, plan *Plan) {
				if got := nodeTypes(plan); len(got) != 1 || got[0] != "c6.large/on-demand" {
					t.Errorf("nodes = %v, want [c6.large/on-demand]", got)
				}
			},
		},
		{
			name: "memory-heavy pods go to memory-optimised types",
			pods: pods("cache", 8, res(500, 12*gi)),
			pool: onDemandPool("default"),
			want: func(t *testing.T, plan *Plan) {
				for _, n := range plan.NewNodes {
					if !strings.HasPrefix(n.InstanceType, "r6.") {
						t.Errorf("node %s, want an r6 type", n.InstanceType)
					}
				}
			},
		},
		{
			name: "nodeSelector on instance category is honoured",
			pods: func() []Pod {
				ps := pods("batch", 3, res(1000, 1*gi))
				for i := range ps {
					ps[i].NodeSelector = map[string]string{"karpenter.k8s.aws/instance-category": "m"}
				}
				return ps
			}(),
			pool: onDemandPool("default"),
			want: func(t *testing.T, plan *Plan) {
				if len(plan.NewNodes) == 0 || !strings.HasPrefix(plan.NewNodes[0].InstanceType, "m6.") {
					t.Errorf("nodes = %v, want m6 types", nodeTypes(plan))
				}
			},
		},
		{
			name: "Gt on instance-cpu picks larger types",
			pods: func() []Pod {
				ps := pods("big", 1, res(500, 1*gi))
				ps[0].Affinity = []Term{{{Key: "karpenter.k8s.aws/instance-cpu", Operator: OpGt, Values: []string{"7"}}}}
				return ps
			}(),
			pool: onDemandPool("default"),
			want: func(t *testing.T, plan *Plan) {
				if got := nodeTypes(plan); len(got) != 1 || got[0] != "c6.2xlarge/on-demand" {
					t.Errorf("nodes = %v, want [c6.2xlarge/on-demand]", got)
				}
			},
		},
		{
			name: "spot allowed by the pod and pool is cheaper",
			pods: pods("web", 4, res(1000, 2*gi)),
			pool: Pool{Name: "default"},
			want: func(t *testing.T, plan *Plan) {
				for _, n := range plan.NewNodes {
					if n.CapacityType != "spot" {
						t.Errorf("node %s is %s, want spot", n.InstanceType, n.CapacityType)
					}
				}
			},
		},
		{
			name: "tainted pool takes only tolerating pods",
			pods: pods("web", 2, res(500, 1*gi)),
			pool: Pool{Name: "gpu", Taints: []Taint{gpuTaint}},
			want: func(t *testing.T, plan *Plan) {
				if len(plan.Unschedulable) != 2 || !strings.Contains(plan.Unschedulable[0].Reason, "does not tolerate") {
					t.Errorf("unschedulable = %+v, want both pods refused for the taint", plan.Unschedulable)
				}
			},
		},
		{
			name: "PreferNoSchedule taints do not block",
			pods: pods("web", 2, res(500, 1*gi)),
			pool: Pool{Name: "soft", Taints: []Taint{{Key: "k", Effect: EffectPreferNoSchedule}}},
			want: func(t *testing.T, plan *Plan) {
				if len(plan.Unschedulable) != 0 {
					t.Errorf("unschedulable = %+v, want none", plan.Unschedulable)
				}
			},
		},
		{
			name: "a pod bigger than every allowed type is explained",
			pods: pods("hog", 1, res(4000, 16*gi)),
			pool: Pool{Name: "default", Requirements: []Requirement{{Key: LabelInstanceType, Operator: OpIn, Values: []string{"m6.large", "m6.xlarge", "c6.xlarge"}}}},
			want: func(t *testing.T, plan *Plan) {
				if len(plan.Unschedulable) != 1 {
					t.Fatalf("unschedulable = %+v, want 1", plan.Unschedulable)
				}
				reason := plan.Unschedulable[0].Reason
				for _, want := range []string{"0 of 3 instance types allowed by NodePool default (c6.xlarge, m6.large, m6.xlarge) have room for 4 CPU and 16Gi memory", "the largest, m6.xlarge", "cheapest instance type that would fit", "m6.2xlarge (spot"} {
					if !strings.Contains(reason, want) {
						t.Errorf("reason %q lacks %q", reason, want)
					}
				}
			},
		},
		{
			name: "affinity no type satisfies names the requirement",
			pods: func() []Pod {
				ps := pods("arm", 1, res(500, 1*gi))
				ps[0].Affinity = []Term{{{Key: "kubernetes.io/arch", Operator: OpIn, Values: []string{"arm64"}}}}
				return ps
			}(),
			pool: onDemandPool("default"),
			want: func(t *testing.T, plan *Plan) {
				if len(plan.Unschedulable) != 1 || !strings.Contains(plan.Unschedulable[0].Reason, "kubernetes.io/arch In [arm64]") {
					t.Errorf("unschedulable = %+v, want the arch requirement named", plan.Unschedulable)
				}
			},
		},
		{
			name: "pool limits are never exceeded",
			pods: pods("web", 40, res(1000, 2*gi)),
			pool: func() Pool {
				p := onDemandPool("default")
				p.Limits[CPU], p.HasLimit[CPU] = 16000, true
				return p
			}(),
			want: func(t *testing.T, plan *Plan) {
				if len(plan.Unschedulable) == 0 || !strings.Contains(plan.Unschedulable[0].Reason, "limits") {
					t.Errorf("unschedulable = %d, want some pods refused for limits", len(plan.Unschedulable))
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Problem{Pods: tc.pods, Pools: []Pool{tc.pool}, InstanceTypes: testTypes()}
			tc.want(t, solveChecked(t, p))
		})
	}
}

func TestSolveUsesHigherWeightPoolFirst(t *testing.T) {
	low := onDemandPool("cheap")
	high := onDemandPool("preferred")
	high.Weight = 10
	high.Requirements = append(high.Requirements, Requirement{Key: "karpenter.k8s.aws/instance-category", Operator: OpIn, Values: []string{"r"}})
	p := &Problem{Pods: pods("web", 4, res(1000, 1*gi)), Pools: []Pool{low, high}, InstanceTypes: testTypes()}
	plan := solveChecked(t, p)
	for _, n := range plan.NewNodes {
		if n.Pool != "preferred" {
			t.Errorf("node in pool %s, want preferred (weight 10)", n.Pool)
		}
	}
}

func TestSolvePoolWithOwnTypesSeesItsAllocatable(t *testing.T) {
	small := pods("web", 40, res(100, gi/8))
	shared := &Problem{Pods: small, Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()}
	sharedPlan := solveChecked(t, shared)

	// The same pool whose node class sets maxPods 5.
	own := onDemandPool("default")
	own.InstanceTypes = kubeletTypes(testTypes(), 5, 0)
	p := &Problem{Pods: small, Pools: []Pool{own}, InstanceTypes: testTypes()}
	plan := solveChecked(t, p)
	if len(plan.NewNodes) != 8 {
		t.Errorf("%d nodes with maxPods 5 for 40 pods, want 8 (shared types: %d)", len(plan.NewNodes), len(sharedPlan.NewNodes))
	}
	for _, n := range plan.NewNodes {
		if len(n.Pods) > 5 || n.Allocatable[Pods] != 5 {
			t.Errorf("node %s holds %d pods with %d pod slots allocatable, want at most 5 of 5", n.InstanceType, len(n.Pods), n.Allocatable[Pods])
		}
	}
	if len(sharedPlan.NewNodes) >= len(plan.NewNodes) {
		t.Errorf("shared types need %d nodes, want fewer than the %d with maxPods 5", len(sharedPlan.NewNodes), len(plan.NewNodes))
	}

	// A second pool without settings, preferred by weight, keeps the
	// shared types; the first pool's list does not leak into it.
	other := onDemandPool("other")
	other.Weight = 10
	p = &Problem{Pods: small, Pools: []Pool{own, other}, InstanceTypes: testTypes()}
	plan = solveChecked(t, p)
	for _, n := range plan.NewNodes {
		if n.Pool != "other" || n.Allocatable[Pods] <= 5 {
			t.Errorf("node %s in pool %s with %d pod slots, want pool other with the shared types", n.InstanceType, n.Pool, n.Allocatable[Pods])
		}
	}
}

func TestSolveDaemonSetOverheadOnlyWhereItRuns(t *testing.T) {
	ds := DaemonSet{Name: "gpu-agent", Requests: res(1500, 1*gi), NodeSelector: map[string]string{"karpenter.k8s.aws/instance-category": "c"}}
	p := &Problem{Pods: pods("web", 1, res(1000, 1*gi)), DaemonSets: []DaemonSet{ds}, Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()}
	plan := solveChecked(t, p)
	// c6.large has 1.92 CPU allocatable: with the DaemonSet's 1.5 the pod no longer fits, so a c6.large is not chosen.
	if got := nodeTypes(plan); len(got) != 1 || got[0] == "c6.large/on-demand" {
		t.Errorf("nodes = %v, want anything but c6.large", got)
	}
}

func TestSolveFillsExistingNodesFirst(t *testing.T) {
	existing := Node{Name: "node-1", Labels: map[string]string{"kubernetes.io/arch": "amd64"}, Allocatable: res(4000, 8*gi).Scale(1)}
	existing.Allocatable[Pods] = 20
	p := &Problem{Pods: pods("web", 5, res(1000, 1*gi)), Nodes: []Node{existing}, Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()}
	plan := solveChecked(t, p)
	if len(plan.Existing) != 4 {
		t.Errorf("%d pods on the existing node, want 4", len(plan.Existing))
	}
	if len(plan.NewNodes) != 1 || len(plan.NewNodes[0].Pods) != 1 {
		t.Errorf("new nodes %v, want one node for the fifth pod", nodeTypes(plan))
	}
}

func TestSolveRandomProblemsAreValid(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 30; i++ {
		p := &Problem{Pods: randomPods(rng, 20+rng.IntN(400)), Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()}
		plan := solveChecked(t, p)
		if len(plan.Unschedulable) != 0 {
			t.Fatalf("problem %d: %d pods unschedulable: %s", i, len(plan.Unschedulable), plan.Unschedulable[0].Reason)
		}
		if plan.LowerBound <= 0 {
			t.Fatalf("problem %d: no lower bound", i)
		}
		if ratio := plan.TotalPrice / plan.LowerBound; ratio > 1.5 {
			t.Errorf("problem %d: cost %.4f is %.2f× the bound %.4f", i, plan.TotalPrice, ratio, plan.LowerBound)
		}
	}
}

func TestSolveIsDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ps := randomPods(rng, 300)
	a := solveChecked(t, &Problem{Pods: ps, Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()})
	b := solveChecked(t, &Problem{Pods: ps, Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()})
	if strings.Join(nodeTypes(a), ",") != strings.Join(nodeTypes(b), ",") || a.TotalPrice != b.TotalPrice {
		t.Errorf("two solves of the same problem differ: %v vs %v", a.TotalPrice, b.TotalPrice)
	}
}

func TestRequirementMatchesLikeKubernetes(t *testing.T) {
	labels := MapLabels{"a": "1", "b": "x"}
	tests := []struct {
		req  Requirement
		want bool
	}{
		{Requirement{"a", OpIn, []string{"1", "2"}}, true},
		{Requirement{"a", OpIn, []string{"2"}}, false},
		{Requirement{"z", OpIn, []string{"1"}}, false},
		{Requirement{"a", OpNotIn, []string{"2"}}, true},
		{Requirement{"z", OpNotIn, []string{"2"}}, true},
		{Requirement{"a", OpExists, nil}, true},
		{Requirement{"z", OpDoesNotExist, nil}, true},
		{Requirement{"a", OpDoesNotExist, nil}, false},
		{Requirement{"a", OpGt, []string{"0"}}, true},
		{Requirement{"a", OpLt, []string{"1"}}, false},
		{Requirement{"b", OpGt, []string{"0"}}, false},
		{Requirement{"a", "Bogus", nil}, false},
	}
	for _, tc := range tests {
		pod := Pod{Affinity: []Term{{tc.req}}}
		want := check.Allowed(&pod, labels, nil) == nil
		if got := tc.req.Matches(labels); got != tc.want || got != want {
			t.Errorf("%v: got %v, want %v (Kubernetes says %v)", tc.req, got, tc.want, want)
		}
	}
}

func TestTolerationsLikeKubernetes(t *testing.T) {
	taint := Taint{Key: "k", Value: "v", Effect: EffectNoSchedule}
	tests := []struct {
		tol  Toleration
		want bool
	}{
		{Toleration{Key: "k", Operator: "Equal", Value: "v"}, true},
		{Toleration{Key: "k", Value: "v", Effect: EffectNoSchedule}, true},
		{Toleration{Key: "k", Value: "w"}, false},
		{Toleration{Key: "k", Operator: "Exists"}, true},
		{Toleration{Operator: "Exists"}, true},
		{Toleration{Key: "k", Operator: "Exists", Effect: EffectNoExecute}, false},
		{Toleration{Key: "other", Operator: "Exists"}, false},
	}
	for _, tc := range tests {
		pod := Pod{Tolerations: []Toleration{tc.tol}}
		k8s := check.Allowed(&pod, nil, []Taint{taint}) == nil
		if got := tc.tol.Tolerates(&taint); got != tc.want || got != k8s {
			t.Errorf("%+v: got %v, want %v (Kubernetes says %v)", tc.tol, got, tc.want, k8s)
		}
	}
}

func TestSolveDeadlineReturnsAPlan(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	p := &Problem{Pods: randomPods(rng, 2000), Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()}
	full := solveChecked(t, p)
	p.Options.Deadline = time.Now() // already passed: one strategy per CPU, no improvement
	quick := solveChecked(t, p)
	if len(quick.Unschedulable) != 0 || quick.TotalPrice < full.TotalPrice-1e-9 {
		t.Errorf("deadline plan costs %v with %d pending; the full solve %v", quick.TotalPrice, len(quick.Unschedulable), full.TotalPrice)
	}
}
