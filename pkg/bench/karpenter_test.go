package bench_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/bench"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver/check"
)

// karpenterCost is what Karpenter's own scheduler paid for the 5,000 pods of
// its benchmark (seed 42), measured on this machine with its scheduler
// imported in hack/: every pod placed at $1,760/h.
const karpenterCost = 1760.0

// TestKarpenterMixPlacesEveryPod: on Karpenter's benchmark mix, whose spread
// selectors match pods of other workloads, the solver places all 5,000
// pods, the independent checker finds no violation, and the plan costs no
// more than Karpenter's.
func TestKarpenterMixPlacesEveryPod(t *testing.T) {
	if testing.Short() {
		t.Skip("5,000 pods")
	}
	p := bench.KarpenterMix(5000, 42)
	start := time.Now()
	plan, err := solver.Solve(p)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	if err := check.PlanWithPoolDomains(p, plan); err != nil {
		t.Fatalf("invalid plan: %v", err)
	}
	if n := len(plan.Unschedulable); n > 0 {
		t.Errorf("%d of %d pods unschedulable, first: %s", n, len(p.Pods), plan.Unschedulable[0].Reason)
	}
	if plan.TotalPrice > karpenterCost {
		t.Errorf("plan costs $%.2f/h, Karpenter $%.0f/h", plan.TotalPrice, karpenterCost)
	}
	t.Logf("%d pods on %d nodes at $%.2f/h (lower bound $%.2f/h) in %v", len(p.Pods), len(plan.NewNodes), plan.TotalPrice, plan.LowerBound, elapsed)
}

func TestKarpenterMixIsKarpenters(t *testing.T) {
	p := bench.KarpenterMix(5000, 42)
	kinds := map[string]int{}
	for _, pod := range p.Pods {
		kinds[pod.Owner]++
	}
	want := map[string]int{"Deployment/generic": 1000, "Deployment/spread-topology.kubernetes.io/zone": 1000,
		"Deployment/spread-kubernetes.io/hostname": 1000, "Deployment/affinity": 1000, "Deployment/anti-affinity": 1000}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%s: %d pods, want %d", k, kinds[k], n)
		}
	}
	if len(p.InstanceTypes) != 400 {
		t.Errorf("%d instance types, want 400", len(p.InstanceTypes))
	}
	// Spread selectors are drawn apart from the pod's own label, so most
	// spread pods select pods other than their own kind.
	cross := 0
	for _, pod := range p.Pods {
		for _, s := range pod.Spread {
			if !s.Selector.Matches(pod.Labels) {
				cross++
			}
		}
	}
	if cross < 1500 {
		t.Errorf("%d spread pods select another label than their own, want most of 2,000", cross)
	}
}

// BenchmarkKarpenterMix solves Karpenter's benchmark mix of 1,000, 5,000
// and 20,000 pods and reports cost, nodes and pods left unschedulable, and
// the CPU time per solve (all cores, garbage collection included) beside
// the wall time: on a shared machine CPU time is the steadier measure.
func BenchmarkKarpenterMix(b *testing.B) {
	for _, n := range []int{1000, 5000, 20000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			p := bench.KarpenterMix(n, 42)
			var plan *solver.Plan
			cpu, solves := cpuTime(), 0
			for b.Loop() {
				var err error
				if plan, err = solver.Solve(p); err != nil {
					b.Fatal(err)
				}
				solves++
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(time.Millisecond)/float64(solves), "cpu-ms/op")
			if err := check.PlanWithPoolDomains(p, plan); err != nil {
				b.Fatalf("invalid plan: %v", err)
			}
			b.ReportMetric(plan.TotalPrice, "$/h")
			b.ReportMetric(float64(len(plan.NewNodes)), "nodes")
			b.ReportMetric(float64(len(plan.Unschedulable)), "unschedulable")
		})
	}
}

// TestHeterogeneousIsHeterogeneous: suite h at 50,000 pods has at least
// 500 distinct shapes and label sets, its zonal spread selectors match
// pods of other workloads, and every pod is there.
func TestHeterogeneousIsHeterogeneous(t *testing.T) {
	p, err := bench.Heterogeneous(50000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Pods) != 50000 {
		t.Fatalf("%d pods, want 50,000", len(p.Pods))
	}
	shapes := map[solver.Resources]bool{}
	labelSets := map[string]bool{}
	owners := map[string]map[string]bool{} // spread selector → workloads it matches
	for _, pod := range p.Pods {
		shapes[pod.Requests] = true
		labelSets[pod.Labels["app"]+"/"+pod.Labels["tier"]+"/"+pod.Labels["team"]] = true
	}
	for _, pod := range p.Pods {
		for _, s := range pod.Spread {
			key := s.Selector.MatchLabels["tier"]
			if owners[key] == nil {
				owners[key] = map[string]bool{}
				for _, o := range p.Pods {
					if s.Selector.Matches(o.Labels) {
						owners[key][o.Owner] = true
					}
				}
			}
		}
	}
	if len(shapes) < 500 || len(labelSets) < 500 {
		t.Errorf("%d shapes and %d label sets, want at least 500 each", len(shapes), len(labelSets))
	}
	if len(owners) == 0 {
		t.Fatal("no pod spreads")
	}
	for tier, ws := range owners {
		if len(ws) < 2 {
			t.Errorf("spread selector tier=%s matches %d workload, want several", tier, len(ws))
		}
	}
}
