package bench_test

import (
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver/bench"
)

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
