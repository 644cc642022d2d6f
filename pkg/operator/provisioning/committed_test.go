package provisioning

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func TestNominatedPodsAnnotationRoundTrips(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  []types.NamespacedName
	}{
		{name: "empty", value: ""},
		{name: "two pods", value: "a/web-0,b/db-1", want: []types.NamespacedName{{Namespace: "a", Name: "web-0"}, {Namespace: "b", Name: "db-1"}}},
		{name: "malformed entries are skipped", value: "web-0,/x,a/,a/ok", want: []types.NamespacedName{{Namespace: "a", Name: "ok"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decodeNominated(tt.value)
			if !slices.Equal(got, tt.want) {
				t.Errorf("decode(%q) = %v, want %v", tt.value, got, tt.want)
			}
			if again := decodeNominated(encodeNominated(got)); !slices.Equal(sortedKeysOf(again), sortedKeysOf(got)) {
				t.Errorf("encode then decode = %v, want %v", again, got)
			}
		})
	}
	if got := encodeNominated([]types.NamespacedName{{Namespace: "b", Name: "x"}, {Namespace: "a", Name: "y"}}); got != "a/y,b/x" {
		t.Errorf("encode = %q, want sorted a/y,b/x", got)
	}
}

func sortedKeysOf(keys []types.NamespacedName) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.String()
	}
	slices.Sort(out)
	return out
}

func claimRecording(name string, created time.Time, pods string) *v1alpha1.NodeClaim {
	c := testClaim(name)
	c.CreationTimestamp = metav1.NewTime(created)
	c.Annotations = map[string]string{v1alpha1.AnnotationNominatedPods: pods}
	return c
}

// A restarted operator holds the room its predecessor promised: the pods a
// claim records go back to it, unless this replica planned them itself.
func TestRestoreReadsBackTheClaimsNominations(t *testing.T) {
	now := time.Now()
	older := claimRecording("older", now.Add(-time.Minute), "default/web-0,default/web-1")
	newer := claimRecording("newer", now, "default/web-1")
	deleting := claimRecording("deleting", now, "default/web-2")
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	tests := []struct {
		name string
		// plannedHere are pods this replica planned (onto "mine").
		plannedHere []string
		want        map[string]string // pod → claim nominated after restore
		restored    int
	}{
		{
			name:     "a fresh replica: every recorded pending pod, the newer claim winning, none for a deleting claim",
			want:     map[string]string{"web-0": "older", "web-1": "newer"},
			restored: 2,
		},
		{
			name:        "a pod this replica planned keeps its decision",
			plannedHere: []string{"web-0"},
			want:        map[string]string{"web-0": "mine", "web-1": "newer"},
			restored:    1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestProvisioner(t, nil)
			var pending []*corev1.Pod
			for _, name := range []string{"web-0", "web-1", "web-2", "web-3"} {
				pending = append(pending, testPod(name))
			}
			for _, name := range tt.plannedHere {
				p.remember(testClaim("mine"), []*corev1.Pod{testPod(name)}, now)
			}
			n := p.restore(pending, committedClaims([]*v1alpha1.NodeClaim{older, newer, deleting}), now)
			if n != tt.restored {
				t.Errorf("restored %d, want %d", n, tt.restored)
			}
			got := map[string]string{}
			for _, nom := range p.nominations {
				got[nom.pod.Name] = nom.claim
			}
			if len(got) != len(tt.want) {
				t.Errorf("nominations %v, want %v", got, tt.want)
			}
			for pod, claim := range tt.want {
				if got[pod] != claim {
					t.Errorf("%s nominated to %q, want %q", pod, got[pod], claim)
				}
			}
		})
	}
}

func TestCommitRecordsTheNominationsOfTouchedClaims(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	a := claimRecording("a", time.Now(), "default/web-0")
	b := claimRecording("b", time.Now(), "default/web-1")
	untouched := claimRecording("c", time.Now(), "default/stale")
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(a, b, untouched).Build()
	p := newTestProvisioner(t, c)
	now := time.Now()
	// web-1 moved from b to a; web-2 is new on a.
	p.remember(testClaim("a"), []*corev1.Pod{testPod("web-0"), testPod("web-1"), testPod("web-2")}, now)
	claims := map[string]*v1alpha1.NodeClaim{"a": a, "b": b, "c": untouched}
	if err := p.commit(context.Background(), claims, map[string]bool{"a": true, "b": true}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "default/web-0,default/web-1,default/web-2", "b": "", "c": "default/stale"}
	for name, value := range want {
		var got v1alpha1.NodeClaim
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &got); err != nil {
			t.Fatal(err)
		}
		if v := got.Annotations[v1alpha1.AnnotationNominatedPods]; v != value {
			t.Errorf("claim %s records %q, want %q", name, v, value)
		}
	}
	// NominatedPods adds what a claim records and memory sends nowhere else.
	p2 := newTestProvisioner(t, c)
	p2.remember(testClaim("other"), []*corev1.Pod{testPod("web-1")}, now)
	got := sortedKeysOf(p2.NominatedPods("a"))
	if !slices.Equal(got, []string{"default/web-0", "default/web-2"}) {
		t.Errorf("NominatedPods(a) after a restart = %v, want web-0 and web-2 (web-1 is nominated elsewhere)", got)
	}
}

func TestNominatedPodsAreHeldWhileTheirNodeTakesThem(t *testing.T) {
	pod := func(name, cpu string) *corev1.Pod {
		p := testPod(name)
		p.Spec.Containers = []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}
		return p
	}
	var alloc solver.Resources
	alloc[solver.CPU], alloc[solver.Pods] = 2000, 10
	tests := []struct {
		name      string
		alloc     solver.Resources
		requested int64 // CPU already requested on the node, millicores
		pods      []*corev1.Pod
		overflow  []string
		wantCPU   int64
	}{
		{name: "all fit", alloc: alloc, pods: []*corev1.Pod{pod("b", "1"), pod("a", "500m")}, wantCPU: 1500},
		{name: "a smaller node than planned: the pods past its room, in name order, overflow", alloc: alloc, requested: 500,
			pods: []*corev1.Pod{pod("c", "1"), pod("a", "1"), pod("b", "500m")}, overflow: []string{"c"}, wantCPU: 2000},
		{name: "unknown allocatable holds them all", pods: []*corev1.Pod{pod("a", "4")}, wantCPU: 4000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &solver.Node{Allocatable: tt.alloc}
			n.Requested[solver.CPU] = tt.requested
			var got []string
			for _, p := range holdWhileFits(n, tt.pods, nil) {
				got = append(got, p.Name)
			}
			if !slices.Equal(got, tt.overflow) {
				t.Errorf("overflow %v, want %v", got, tt.overflow)
			}
			if n.Requested[solver.CPU] != tt.wantCPU {
				t.Errorf("node requests %dm CPU, want %dm", n.Requested[solver.CPU], tt.wantCPU)
			}
		})
	}
}
