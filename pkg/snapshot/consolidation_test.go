package snapshot

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDoNotDisruptAnnotations(t *testing.T) {
	for _, tt := range []struct {
		annotations map[string]string
		want        bool
	}{
		{nil, false},
		{map[string]string{AnnotationDoNotDisrupt: "true"}, true},
		{map[string]string{AnnotationRightsizeDoNotDisrupt: "true"}, true},
		{map[string]string{AnnotationRightsizeDoNotDisrupt: "false"}, false},
	} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: tt.annotations}}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Annotations: tt.annotations},
			Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		cl := FromObjects(&Objects{Nodes: []*corev1.Node{node}, Pods: []*corev1.Pod{pod}})
		if got := cl.Nodes[0].DoNotDisrupt; got != tt.want {
			t.Errorf("%v: node DoNotDisrupt = %v, want %v", tt.annotations, got, tt.want)
		}
		if got := cl.Nodes[0].Pods[0].DoNotDisrupt; got != tt.want {
			t.Errorf("%v: pod DoNotDisrupt = %v, want %v", tt.annotations, got, tt.want)
		}
	}
}

func TestPoolMinSaving(t *testing.T) {
	pool := map[string]any{
		"apiVersion": "rightsize.dev/v1alpha1", "kind": "NodePool", "metadata": map[string]any{"name": "p"},
		"spec": map[string]any{
			"template":   map[string]any{"spec": map[string]any{"nodeClassRef": map[string]any{"group": "rightsize.dev", "kind": "SimNodeClass", "name": "sim"}}},
			"disruption": map[string]any{"minSaving": map[string]any{"perHour": "0.05", "percent": 10}},
		},
	}
	raw, err := json.Marshal(pool)
	if err != nil {
		t.Fatal(err)
	}
	cl := FromObjects(&Objects{NodePools: []json.RawMessage{raw}})
	if len(cl.Pools) != 1 {
		t.Fatalf("pools %v, warnings %v", cl.Pools, cl.Warnings)
	}
	c := cl.Pools[0].Consolidation
	if c.MinSaving != 0.05 || c.MinSavingFraction != 0.1 || !c.MinSavingSet {
		t.Errorf("MinSaving %v, MinSavingFraction %v, set %v; want 0.05, 0.1 and set", c.MinSaving, c.MinSavingFraction, c.MinSavingSet)
	}
	// An explicit zero is a minimum of zero, not the default; no minSaving
	// (or an empty one) is the default.
	for _, tc := range []struct {
		minSaving any
		set       bool
	}{{map[string]any{"perHour": "0"}, true}, {map[string]any{"percent": 0}, true}, {map[string]any{}, false}, {nil, false}} {
		pool["spec"].(map[string]any)["disruption"] = map[string]any{"minSaving": tc.minSaving}
		raw, err := json.Marshal(pool)
		if err != nil {
			t.Fatal(err)
		}
		cl := FromObjects(&Objects{NodePools: []json.RawMessage{raw}})
		if len(cl.Pools) != 1 {
			t.Fatalf("%v: pools %v, warnings %v", tc.minSaving, cl.Pools, cl.Warnings)
		}
		if c := cl.Pools[0].Consolidation; c.MinSavingSet != tc.set || c.MinSaving != 0 || c.MinSavingFraction != 0 {
			t.Errorf("minSaving %v: %+v; want MinSavingSet %v and zero minimums", tc.minSaving, c, tc.set)
		}
	}
}
