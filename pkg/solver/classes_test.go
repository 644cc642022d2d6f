package solver

import (
	"fmt"
	"testing"
)

// TestLabelsNoSelectorReadsDoNotSplitClasses: pods whose topology terms are
// the same and whom every selector of the problem sees alike share a class,
// whatever other labels they carry (a StatefulSet's pod-name label), while
// a label a selector reads still splits them.
func TestLabelsNoSelectorReadsDoNotSplitClasses(t *testing.T) {
	spread := func(name string, labels map[string]string) Pod {
		p := Pod{Namespace: "default", Name: name, Labels: labels}
		p.Requests[CPU], p.Requests[Memory], p.Requests[Pods] = 500, 1<<30, 1
		p.Spread = []TopologySpread{{MaxSkew: 1, TopologyKey: LabelHostname, WhenUnsatisfiable: DoNotSchedule, Selector: Selector{MatchLabels: map[string]string{"app": "web"}}}}
		return p
	}
	tests := []struct {
		name  string
		label func(i int) map[string]string
		want  int
	}{
		{"unread pod-name labels", func(i int) map[string]string {
			return map[string]string{"app": "web", "statefulset.kubernetes.io/pod-name": fmt.Sprintf("web-%d", i)}
		}, 1},
		{"a label the selector reads", func(i int) map[string]string {
			return map[string]string{"app": []string{"web", "api"}[i%2]}
		}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pods []Pod
			for i := range 20 {
				pods = append(pods, spread(fmt.Sprintf("web-%d", i), tt.label(i)))
			}
			s := packingState(&Problem{Pods: pods, Pools: []Pool{{Name: "default"}}, InstanceTypes: mixedTypes()})
			if len(s.classes) != tt.want {
				t.Errorf("%d classes, want %d", len(s.classes), tt.want)
			}
		})
	}
}
