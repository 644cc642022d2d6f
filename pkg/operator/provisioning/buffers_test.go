package provisioning

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func TestVirtualPodsAreNeitherNominatedNorTold(t *testing.T) {
	running := testPod("web-0")
	b := &batch{
		problem: &solver.Problem{Pods: []solver.Pod{
			{Namespace: "default", Name: "web-0"},
			{Namespace: "default", Name: "headroom-buffer-0", Owner: "CapacityBuffer/headroom"},
			{Namespace: "default", Name: "headroom-buffer-1", Owner: "CapacityBuffer/headroom"},
		}},
		pods:    []*corev1.Pod{running},
		moving:  map[types.UID]bool{},
		virtual: map[types.UID]bool{},
	}
	b.addVirtualPods()
	if len(b.pods) != 3 {
		t.Fatalf("%d stand-ins, want 3", len(b.pods))
	}
	for i, want := range []bool{true, false, false} {
		if got := b.real(i); got != want {
			t.Errorf("pod %d (%s): real %v, want %v", i, b.pods[i].Name, got, want)
		}
	}
	if b.pods[1].UID == b.pods[2].UID || b.pods[1].Name != "headroom-buffer-0" {
		t.Errorf("stand-ins %+v %+v", b.pods[1].ObjectMeta, b.pods[2].ObjectMeta)
	}
	b.moving[running.UID] = true
	if b.real(0) {
		t.Error("a pod of a leaving node is real")
	}
}

func TestBufferStatusWritesReplicasAndRoomOnce(t *testing.T) {
	var patches []map[string]any
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		SubResourcePatch: func(_ context.Context, _ client.Client, sub string, obj client.Object, patch client.Patch, _ ...client.SubResourcePatchOption) error {
			if sub != "status" || obj.GetNamespace() != "team" {
				t.Errorf("patched %s of %s/%s", sub, obj.GetNamespace(), obj.GetName())
			}
			data, err := patch.Data(obj)
			if err != nil {
				return err
			}
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				return err
			}
			m["name"] = obj.GetName()
			patches = append(patches, m)
			return nil
		},
	}).Build()
	p := newTestProvisioner(t, c)
	rooms := []plan.BufferRoom{{Namespace: "team", Name: "full", First: 1, Count: 2}, {Namespace: "team", Name: "short", First: 3, Count: 3}, {Namespace: "team", Name: "missing"}}
	reasons := map[string]string{"team/missing": "PodTemplate team/x is not in the cluster; no room is kept"}
	placed := func(pi int) bool { return pi != 5 } // one chunk of "short" has no room
	for range 2 {
		p.writeBufferStatus(context.Background(), rooms, reasons, placed, map[string]string{"team/full": "burst"})
	}
	if len(patches) != 3 {
		t.Fatalf("%d patches, want 3 (one per buffer, none repeated): %v", len(patches), patches)
	}
	want := map[string]struct {
		replicas float64
		cond     string
	}{"full": {2, "True"}, "short": {3, "False"}, "missing": {0, "False"}}
	for _, m := range patches {
		status := m["status"].(map[string]any)
		w := want[m["name"].(string)]
		if status["replicas"].(float64) != w.replicas {
			t.Errorf("%s: replicas %v, want %v", m["name"], status["replicas"], w.replicas)
		}
		var prov string
		for _, c := range status["conditions"].([]any) {
			if c := c.(map[string]any); c["type"] == "Provisioning" {
				prov = c["status"].(string)
			}
		}
		if prov != w.cond {
			t.Errorf("%s: Provisioning %q, want %q", m["name"], prov, w.cond)
		}
		if m["name"] == "full" && !strings.Contains(string(mustJSON(t, status["podTemplateRef"])), "burst") {
			t.Errorf("full: podTemplateRef %v", status["podTemplateRef"])
		}
	}
}

func TestReadBuffersDecodesTheUnstructuredList(t *testing.T) {
	buffer := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
		"metadata": map[string]any{"name": "headroom", "namespace": "team"},
		"spec":     map[string]any{"podTemplateRef": map[string]any{"name": "burst"}, "replicas": int64(10)},
	}}
	c := fake.NewClientBuilder().WithObjects(&corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "burst", Namespace: "team"}}).
		WithInterceptorFuncs(interceptor.Funcs{
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if u, ok := list.(*unstructured.UnstructuredList); ok {
					u.Items = []unstructured.Unstructured{*buffer}
					return nil
				}
				return c.List(ctx, list, opts...)
			},
		}).Build()
	buffers, templates, err := newTestProvisioner(t, c).readBuffers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(buffers) != 1 || buffers[0].Spec.Replicas == nil || *buffers[0].Spec.Replicas != 10 || buffers[0].Spec.PodTemplateRef.Name != "burst" {
		t.Fatalf("buffers %+v", buffers)
	}
	if len(templates) != 1 || templates[0].Name != "burst" {
		t.Fatalf("templates %+v", templates)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
