package baseline_test

import (
	"fmt"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/bench"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver/baseline"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver/check"
)

// planners are the baselines under test.
var planners = []struct {
	name string
	plan func(*solver.Problem) *solver.Plan
}{
	{"greedy", baseline.KarpenterGreedy},
	{"ffd", baseline.SingleTypeFFD},
}

func TestBaselinesProduceValidPlans(t *testing.T) {
	problems := map[string]func() (*solver.Problem, error){
		"a-plain": func() (*solver.Problem, error) { return bench.Karpenter(500, 1, false), nil },
		"a":       func() (*solver.Problem, error) { return bench.Karpenter(500, 1, true), nil },
		"b":       func() (*solver.Problem, error) { return bench.Catalog(300, 1) },
		"c":       func() (*solver.Problem, error) { return bench.Bimodal(300, 1) },
		"d":       func() (*solver.Problem, error) { return bench.GPU(300, 1) },
		"tiny":    func() (*solver.Problem, error) { return bench.Tiny(3), nil },
		// Tier selectors that span workloads: a zonal spread counts pods
		// that do not carry it.
		"h":        func() (*solver.Problem, error) { return bench.Heterogeneous(3000, 1) },
		"existing": func() (*solver.Problem, error) { return withExisting(bench.Karpenter(200, 2, false)), nil },
		// The FFD ignores zones, so zonal constraints with running pods are
		// beyond it; the greedy counts running pods.
		"existing-topology": func() (*solver.Problem, error) { return withExisting(bench.Karpenter(200, 2, true)), nil },
		"limits": func() (*solver.Problem, error) {
			p := bench.Karpenter(300, 3, false)
			p.Pools[0].Limits[solver.CPU], p.Pools[0].HasLimit[solver.CPU] = 40000, true
			return p, nil
		},
	}
	for name, make := range problems {
		p, err := make()
		if err != nil {
			t.Fatal(err)
		}
		for _, pl := range planners {
			if name == "existing-topology" && pl.name == "ffd" {
				continue
			}
			t.Run(name+"/"+pl.name, func(t *testing.T) {
				plan := pl.plan(p)
				if err := check.Plan(p, plan); err != nil {
					t.Fatalf("invalid plan: %v", err)
				}
				if name != "limits" && len(plan.Unschedulable) > 0 {
					t.Errorf("%d pods unschedulable, e.g. %s: %s", len(plan.Unschedulable), p.Pods[plan.Unschedulable[0].Pod].Key(), plan.Unschedulable[0].Reason)
				}
			})
		}
	}
}

// withExisting adds two running nodes, one with room, with running pods of
// the problem's topology classes.
func withExisting(p *solver.Problem) *solver.Problem {
	alloc := solver.Resources{solver.CPU: 8000, solver.Memory: 32 << 30, solver.Pods: 110}
	running := func(app string) solver.Pod {
		return solver.Pod{Namespace: "default", Name: "running-" + app, Labels: map[string]string{"app": app},
			Requests: solver.Resources{solver.CPU: 1000, solver.Memory: 1 << 30, solver.Pods: 1}}
	}
	p.Nodes = []solver.Node{
		{Name: "old-1", Zone: "test-zone-1", Labels: map[string]string{solver.LabelZone: "test-zone-1"}, Allocatable: alloc,
			Requested: solver.Resources{solver.CPU: 2000, solver.Memory: 2 << 30, solver.Pods: 2},
			Pods:      []solver.Pod{running("zone-spread-a"), running("zone-affinity-b")}},
		{Name: "old-2", Zone: "test-zone-2", Labels: map[string]string{solver.LabelZone: "test-zone-2"}, Allocatable: alloc, Requested: alloc},
	}
	return p
}

func TestOptimumIsNoWorseThanAnyPlan(t *testing.T) {
	for seed := uint64(0); seed < 40; seed++ {
		p := bench.Tiny(seed)
		opt, ok := baseline.Optimum(p, 2_000_000)
		if !ok {
			t.Logf("seed %d: search gave up at %v", seed, opt)
			continue
		}
		plans := map[string]*solver.Plan{"greedy": baseline.KarpenterGreedy(p), "ffd": baseline.SingleTypeFFD(p)}
		if sp, err := solver.Solve(p); err == nil {
			plans["solver"] = sp
		}
		for name, plan := range plans {
			if err := check.Plan(p, plan); err != nil {
				t.Errorf("seed %d: %s plan invalid: %v", seed, name, err)
			}
			if len(plan.Unschedulable) == 0 && plan.TotalPrice < opt-1e-9 {
				t.Errorf("seed %d: %s plan costs %v, below the optimum %v", seed, name, plan.TotalPrice, opt)
			}
		}
	}
}

// knownCase is three 1.2-vCPU pods and two types: one 4-vCPU node (0.2)
// beats three 2-vCPU ones (3 × 0.08).
func knownCase() *solver.Problem {
	p := &solver.Problem{Pools: []solver.Pool{{Name: "default"}}}
	for _, c := range []struct {
		cpu   int64
		price float64
	}{{2, 0.08}, {4, 0.2}} {
		p.InstanceTypes = append(p.InstanceTypes, solver.InstanceType{Name: fmt.Sprintf("x.%d", c.cpu),
			Capacity:  solver.Resources{solver.CPU: c.cpu * 1000, solver.Memory: c.cpu << 30, solver.Pods: 10},
			Offerings: []solver.Offering{{Zone: "z", CapacityType: "on-demand", Price: c.price}}})
	}
	for i := 0; i < 3; i++ {
		p.Pods = append(p.Pods, solver.Pod{Namespace: "d", Name: fmt.Sprint(i), Requests: solver.Resources{solver.CPU: 1200, solver.Memory: 1 << 30, solver.Pods: 1}})
	}
	return p
}

func TestOptimumOnAKnownCase(t *testing.T) {
	if opt, ok := baseline.Optimum(knownCase(), 1000); !ok || opt != 0.2 {
		t.Errorf("Optimum = %v, %v; want 0.2, true", opt, ok)
	}
}

func TestExactOnlyAnswersWhatItModels(t *testing.T) {
	tests := []struct {
		name   string
		change func(*solver.Problem)
		steps  int
		want   float64
		wantOK bool
	}{
		{"new nodes only", func(*solver.Problem) {}, 1000, 0.2, true},
		{"a pod no offering takes", func(p *solver.Problem) { p.Pods[0].Requests[solver.CPU] = 64000 }, 1000, 0, false},
		{"topology spread", func(p *solver.Problem) {
			p.Pods[0].Spread = []solver.TopologySpread{{TopologyKey: solver.LabelZone, MaxSkew: 1}}
		}, 1000, 0, false},
		{"an existing node", func(p *solver.Problem) { p.Nodes = []solver.Node{{Name: "n"}} }, 1000, 0, false},
		{"pools of different weights", func(p *solver.Problem) {
			p.Pools = append(p.Pools, solver.Pool{Name: "heavy", Weight: 10})
		}, 1000, 0, false},
		{"a pool limit", func(p *solver.Problem) { p.Pools[0].HasLimit[solver.CPU] = true }, 1000, 0, false},
		{"the search gives up", func(*solver.Problem) {}, 2, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := knownCase()
			tc.change(p)
			got, ok := baseline.Exact(p, tc.steps)
			if ok != tc.wantOK || (ok && got != tc.want) {
				t.Errorf("Exact = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
