package solver_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver/check"
)

// FuzzSolve turns arbitrary bytes into a small problem (pods with random
// shapes, selectors, tolerations; pools with requirements, taints and limits;
// a DaemonSet) and requires the solver to return a plan the independent
// checker accepts.
func FuzzSolve(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint16(10))
	f.Add(uint64(7), uint64(0), uint16(300))
	f.Add(uint64(0), uint64(0), uint16(0))
	f.Fuzz(func(t *testing.T, s1, s2 uint64, n uint16) {
		rng := rand.New(rand.NewPCG(s1, s2))
		p := randomProblem(rng, int(n%500))
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
	})
}

func randomProblem(rng *rand.Rand, n int) *Problem {
	categories := []string{"c", "m", "r", "x"}
	p := &Problem{InstanceTypes: testTypes()}
	for i := 0; i < 1+rng.IntN(3); i++ {
		pool := Pool{Name: string(rune('a' + i)), Weight: int32(rng.IntN(3))}
		if rng.IntN(2) == 0 {
			pool.Requirements = append(pool.Requirements, Requirement{Key: "karpenter.k8s.aws/instance-category", Operator: OpIn, Values: []string{categories[rng.IntN(4)], categories[rng.IntN(4)]}})
		}
		if rng.IntN(3) == 0 {
			pool.Requirements = append(pool.Requirements, Requirement{Key: LabelCapacityType, Operator: OpNotIn, Values: []string{"spot"}})
		}
		if rng.IntN(4) == 0 {
			pool.Taints = []Taint{{Key: "dedicated", Value: "x", Effect: EffectNoSchedule}}
		}
		if rng.IntN(3) == 0 {
			pool.Limits[CPU], pool.HasLimit[CPU] = int64(rng.IntN(64000)), true
		}
		if rng.IntN(4) == 0 {
			pool.Labels = map[string]string{"team": string(rune('a' + rng.IntN(2)))}
		}
		if rng.IntN(3) == 0 {
			// Kubelet settings of the pool's node class: fewer pods and
			// more reserved memory on its own copy of the types.
			pool.InstanceTypes = kubeletTypes(testTypes(), int64(1+rng.IntN(8)), int64(rng.IntN(4))*gi)
		}
		p.Pools = append(p.Pools, pool)
	}
	if rng.IntN(2) == 0 {
		p.DaemonSets = []DaemonSet{{Name: "agent", Requests: res(int64(rng.IntN(500)), int64(rng.IntN(512))*mi)}}
	}
	for len(p.Pods) < n {
		req := res(int64(1+rng.IntN(20000)), int64(1+rng.IntN(80))*gi/4)
		batch := pods("w", 1+rng.IntN(20), req)
		// A batch is one workload: its pods share their constraints.
		var shape Pod
		if rng.IntN(5) == 0 {
			shape.NodeSelector = map[string]string{"karpenter.k8s.aws/instance-category": categories[rng.IntN(4)]}
		}
		if rng.IntN(5) == 0 {
			shape.Tolerations = []Toleration{{Key: "dedicated", Operator: "Exists"}}
		}
		if rng.IntN(6) == 0 {
			shape.Affinity = []Term{{{Key: "team", Operator: OpIn, Values: []string{"a"}}}, {{Key: LabelZone, Operator: OpIn, Values: []string{"zone-b"}}}}
		}
		for i := range batch {
			batch[i].Name += fmt.Sprintf("-%d", len(p.Pods))
			batch[i].NodeSelector, batch[i].Tolerations, batch[i].Affinity = shape.NodeSelector, shape.Tolerations, shape.Affinity
		}
		// Topology: the whole batch is one workload with one rule.
		// Every pod also carries a tier shared across workloads, and some
		// rules select a tier rather than their own workload, so that
		// selectors span workloads as in Karpenter's benchmark.
		app := fmt.Sprintf("w%d", len(p.Pods))
		tier := []string{"x", "y", "z"}[rng.IntN(3)]
		sel := Selector{MatchLabels: map[string]string{"app": app}}
		if rng.IntN(3) == 0 {
			sel = Selector{MatchLabels: map[string]string{"tier": []string{"x", "y", "z"}[rng.IntN(3)]}}
		}
		spreadKey := []string{LabelZone, LabelZone, LabelCapacityType}[rng.IntN(3)]
		rule, skew := rng.IntN(8), int32(1+rng.IntN(3))
		for i := range batch {
			batch[i].Labels = map[string]string{"app": app, "tier": tier}
			switch rule {
			case 0:
				batch[i].Spread = []TopologySpread{{MaxSkew: skew, TopologyKey: spreadKey, WhenUnsatisfiable: DoNotSchedule, Selector: sel}}
			case 1:
				batch[i].Spread = []TopologySpread{{MaxSkew: skew, TopologyKey: LabelHostname, WhenUnsatisfiable: DoNotSchedule, Selector: sel}}
			case 2:
				batch[i].PodAntiAffinity = []PodAffinityTerm{{TopologyKey: LabelHostname, Selector: sel}}
			case 3:
				batch[i].PodAffinity = []PodAffinityTerm{{TopologyKey: LabelZone, Selector: sel}}
			}
		}
		p.Pods = append(p.Pods, batch...)
	}
	return p
}
