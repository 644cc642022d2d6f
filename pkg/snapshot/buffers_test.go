package snapshot

import (
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cbv1beta1 "github.com/rightsize-dev/kubectl-rightsize/pkg/apis/capacitybuffer/v1beta1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func TestBufferReplicas(t *testing.T) {
	chunk := res(1000, 2*gi)
	limits := func(kv ...string) *cbv1beta1.ResourceList {
		l := cbv1beta1.ResourceList{}
		for i := 0; i+1 < len(kv); i += 2 {
			l[cbv1beta1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return &l
	}
	tests := []struct {
		name     string
		spec     cbv1beta1.CapacityBufferSpec
		scalable int32
		want     int32
		reason   string
	}{
		{"replicas", cbv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](10)}, -1, 10, ""},
		{"zero replicas", cbv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](0)}, -1, 0, ""},
		{"percentage rounds up", cbv1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](25)}, 10, 3, ""},
		{"percentage of one replica is one", cbv1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](1)}, 1, 1, ""},
		{"percentage without a scalable is nothing", cbv1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](50)}, -1, 0, "neither"},
		{"the larger of replicas and percentage", cbv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](2), Percentage: ptr.To[int32](50)}, 10, 5, ""},
		{"replicas larger than percentage", cbv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](7), Percentage: ptr.To[int32](50)}, 10, 7, ""},
		{"limits cap replicas by CPU", cbv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](10), Limits: limits("cpu", "3500m")}, -1, 3, ""},
		{"limits cap replicas by memory", cbv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](10), Limits: limits("cpu", "100", "memory", "9Gi")}, -1, 4, ""},
		{"limits above replicas do not raise them", cbv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](2), Limits: limits("cpu", "100")}, -1, 2, ""},
		{"limits alone fill them", cbv1beta1.CapacityBufferSpec{Limits: limits("cpu", "8", "memory", "64Gi")}, -1, 8, ""},
		{"limits of a resource not requested alone", cbv1beta1.CapacityBufferSpec{Limits: limits("nvidia.com/gpu", "4")}, -1, 0, "names no resource"},
		{"nothing asked", cbv1beta1.CapacityBufferSpec{}, -1, 0, "neither"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := BufferReplicas(&tc.spec, tc.scalable, chunk, nil)
			if got != tc.want {
				t.Errorf("replicas %d, want %d", got, tc.want)
			}
			if (tc.reason == "") != (reason == "") || !strings.Contains(reason, tc.reason) {
				t.Errorf("reason %q, want %q", reason, tc.reason)
			}
		})
	}
}

const bufferTemplate = `
apiVersion: v1
kind: PodTemplate
metadata: {name: burst, namespace: team}
template:
  metadata: {labels: {app: burst}}
  spec:
    nodeSelector: {kubernetes.io/arch: amd64}
    containers:
    - name: c
      image: pause
      resources: {requests: {cpu: "1", memory: 2Gi}}
`

func TestDecodeCapacityBuffers(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		buffers map[string]int32 // name: replicas
		pods    int              // real pods
		req     solver.Resources // the first buffer's chunk
		warning string
		err     string
	}{
		{name: "a buffer of a PodTemplate", in: bufferTemplate + `---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: headroom, namespace: team}
spec: {podTemplateRef: {name: burst}, replicas: 10}
`, buffers: map[string]int32{"headroom": 10}, req: res(1000, 2*gi)},
		{name: "the template may come after the buffer, v1alpha1 too", in: `
apiVersion: autoscaling.x-k8s.io/v1alpha1
kind: CapacityBuffer
metadata: {name: headroom, namespace: team}
spec: {podTemplateRef: {name: burst}, replicas: 3}
---` + bufferTemplate, buffers: map[string]int32{"headroom": 3}, req: res(1000, 2*gi)},
		{name: "a percentage of a Deployment, capped by limits", in: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 10
  selector: {matchLabels: {app: x}}
  template:` + container + `---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: web-buffer}
spec: {scalableRef: {apiGroup: apps, kind: Deployment, name: web}, percentage: 50, limits: {cpu: "2"}}
`, buffers: map[string]int32{"web-buffer": 4}, pods: 10, req: res(500, gi)},
		{name: "a missing template keeps no room and warns", in: `
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: headroom, namespace: team}
spec: {podTemplateRef: {name: nope}, replicas: 10}
`, buffers: map[string]int32{"headroom": 0}, warning: "PodTemplate team/nope is not in the input"},
		{name: "a template in another namespace is not the buffer's", in: bufferTemplate + `---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: headroom, namespace: other}
spec: {podTemplateRef: {name: burst}, replicas: 10}
`, buffers: map[string]int32{"headroom": 0}, warning: "PodTemplate other/burst is not in the input"},
		{name: "another strategy is not planned", in: bufferTemplate + `---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: headroom, namespace: team}
spec: {podTemplateRef: {name: burst}, replicas: 10, provisioningStrategy: example.com/standby}
`, buffers: map[string]int32{"headroom": 0}, warning: `provisioningStrategy "example.com/standby" is not planned`},
		{name: "both refs refused", in: `
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: b}
spec: {podTemplateRef: {name: t}, scalableRef: {kind: Deployment, name: web}, replicas: 1}
`, err: "exactly one of podTemplateRef and scalableRef"},
		{name: "a template without replicas or limits refused", in: `
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: b}
spec: {podTemplateRef: {name: t}}
`, err: "needs replicas or limits"},
		{name: "negative replicas refused", in: `
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: b}
spec: {podTemplateRef: {name: t}, replicas: -1}
`, err: "must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &Manifests{}
			err := Decode("in.yaml", []byte(tc.in), m)
			if err == nil {
				_, err = m.finish([]string{"in.yaml"})
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Pods) != tc.pods {
				t.Errorf("%d real pods, want %d", len(m.Pods), tc.pods)
			}
			got := map[string]int32{}
			for _, b := range m.Buffers {
				got[b.Name] = b.Replicas
			}
			if len(got) != len(tc.buffers) {
				t.Fatalf("buffers %v, want %v", got, tc.buffers)
			}
			for n, r := range tc.buffers {
				if got[n] != r {
					t.Errorf("buffer %s: %d replicas, want %d", n, got[n], r)
				}
			}
			if tc.req != (solver.Resources{}) && m.Buffers[0].Pod.Requests != tc.req {
				t.Errorf("chunk requests %v, want %v", m.Buffers[0].Pod.Requests, tc.req)
			}
			if tc.warning != "" && !hasWarning(m, tc.warning) {
				t.Errorf("warnings %q lack %q", m.Warnings, tc.warning)
			}
			pods := m.Buffers[0].Pods()
			if len(pods) != int(m.Buffers[0].Replicas) {
				t.Fatalf("%d virtual pods, want %d", len(pods), m.Buffers[0].Replicas)
			}
			for i, p := range pods {
				if p.Owner != BufferOwnerPrefix+m.Buffers[0].Name || p.Namespace != m.Buffers[0].Namespace || p.Name != m.Buffers[0].Name+"-buffer-"+strconv.Itoa(i) {
					t.Errorf("virtual pod %d: %s/%s owner %s", i, p.Namespace, p.Name, p.Owner)
				}
			}
		})
	}
}

func TestLiveBuffers(t *testing.T) {
	tmpl := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "burst"}, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}}}}}}}
	buf := func(name string, spec cbv1beta1.CapacityBufferSpec) *cbv1beta1.CapacityBuffer {
		return &cbv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}, Spec: spec}
	}
	cl := FromObjects(&Objects{
		CapacityBuffers: []*cbv1beta1.CapacityBuffer{
			buf("headroom", cbv1beta1.CapacityBufferSpec{PodTemplateRef: &cbv1beta1.LocalObjectRef{Name: "burst"}, Replicas: ptr.To[int32](10)}),
			buf("scaled", cbv1beta1.CapacityBufferSpec{ScalableRef: &cbv1beta1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "web"}, Percentage: ptr.To[int32](20)}),
			buf("lost", cbv1beta1.CapacityBufferSpec{PodTemplateRef: &cbv1beta1.LocalObjectRef{Name: "gone"}, Replicas: ptr.To[int32](1)}),
		},
		PodTemplates: []*corev1.PodTemplate{tmpl},
	})
	want := map[string]struct {
		replicas int32
		reason   string
	}{"headroom": {10, ""}, "scaled": {0, "offline only"}, "lost": {0, "PodTemplate team/gone"}}
	if len(cl.Buffers) != len(want) {
		t.Fatalf("buffers %+v", cl.Buffers)
	}
	for _, b := range cl.Buffers {
		w := want[b.Name]
		if b.Replicas != w.replicas || (w.reason == "") != (b.Reason == "") || !strings.Contains(b.Reason, w.reason) {
			t.Errorf("%s: %d replicas, reason %q; want %d, %q", b.Name, b.Replicas, b.Reason, w.replicas, w.reason)
		}
		if b.Name == "headroom" && (b.Pod.Requests != res(1000, 2*gi) || b.PodTemplate != "burst") {
			t.Errorf("headroom: chunk %v from %q", b.Pod.Requests, b.PodTemplate)
		}
	}
	if !hasWarning(&cl.Manifests, "capacitybuffers/team/lost") {
		t.Errorf("no warning for the lost template: %q", cl.Warnings)
	}
}
