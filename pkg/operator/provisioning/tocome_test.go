package provisioning

import (
	"context"
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestWindowWaitsWhilePodsAreStillToCome(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	tests := []struct {
		name string
		// checks are the pods still to come at each end of an idle gap.
		checks []int
		want   time.Duration // when the window closes, from its opening
		times  int           // extensions
	}{
		{name: "nothing to come: the idle gap", checks: []int{0}, want: time.Second},
		{name: "a ramp on its way: one idle gap more per check while the count falls", checks: []int{300, 120, 10, 0}, want: 4 * time.Second, times: 3},
		{name: "a pause of the ramp shorter than the stall bound", checks: []int{50, 50, 50, 50, 40, 0}, want: 6 * time.Second, times: 5},
		{name: "a count that only wavers (a busy cluster) holds the window for 10 idle gaps", checks: []int{5, 30, 8, 12, 6, 9, 7, 30, 5, 6, 7, 8, 9},
			want: 11 * time.Second, times: 10},
		{name: "a count that stops falling holds the window for 10 idle gaps", checks: []int{5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5},
			want: 11 * time.Second, times: 10},
		{name: "a ramp longer than max is cut at max", checks: []int{900, 800, 700, 600, 500, 400, 300, 200, 100, 90, 80, 70, 60, 50, 40, 30, 20, 10, 5, 4, 3, 2, 1},
			want: 15 * time.Second, times: 14},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWindow(t0, time.Second, 15*time.Second)
			for _, n := range tt.checks {
				now := w.closesAt()
				if !w.extend(now, n) {
					break
				}
			}
			if got := w.closesAt().Sub(t0); got != tt.want || w.extensions != tt.times {
				t.Errorf("closes after %s, extended %d times; want %s, %d times", got, w.extensions, tt.want, tt.times)
			}
		})
	}
	// An extension is not an arrival: it does not grow the idle gap.
	w := newWindow(t0, time.Second, time.Minute)
	w.extend(at(time.Second), 10)
	if w.idleGap() != time.Second {
		t.Errorf("idle gap %s after an extension, want 1s", w.idleGap())
	}
}

func TestPodsStillToComeAreTheReplicaSetsWantedAndTheUntried(t *testing.T) {
	rs := func(uid string, replicas int32, deleting bool) appsv1.ReplicaSet {
		r := appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid)}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas)}}
		if deleting {
			r.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		}
		return r
	}
	pod := func(owner string, phase corev1.PodPhase, node string, tried bool) corev1.Pod {
		p := corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
		if owner != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: owner, UID: types.UID(owner), Controller: ptr.To(true)}}
		}
		if tried {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
		}
		return p
	}
	tests := []struct {
		name             string
		rss              []appsv1.ReplicaSet
		pods             []corev1.Pod
		wanted, notTried int
	}{
		{name: "a ReplicaSet short of pods", rss: []appsv1.ReplicaSet{rs("web", 5, false)},
			pods: []corev1.Pod{pod("web", corev1.PodRunning, "n", false), pod("web", corev1.PodPending, "", true)}, wanted: 3},
		{name: "more pods than wanted (scaling down) count none, not fewer",
			rss:  []appsv1.ReplicaSet{rs("web", 1, false), rs("api", 2, false)},
			pods: []corev1.Pod{pod("web", corev1.PodRunning, "n", false), pod("web", corev1.PodRunning, "n", false)}, wanted: 2},
		{name: "finished pods are not the ReplicaSet's; a deleted ReplicaSet wants none",
			rss:  []appsv1.ReplicaSet{rs("web", 1, false), rs("old", 3, true)},
			pods: []corev1.Pod{pod("web", corev1.PodFailed, "n", false)}, wanted: 1},
		{name: "pods the scheduler has not tried yet", pods: []corev1.Pod{pod("", corev1.PodPending, "", false), pod("", corev1.PodPending, "", true),
			pod("", corev1.PodPending, "n", false)}, notTried: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stillWanted(tt.rss, tt.pods); got != tt.wanted {
				t.Errorf("stillWanted = %d, want %d", got, tt.wanted)
			}
			if got := untried(tt.pods); got != tt.notTried {
				t.Errorf("untried = %d, want %d", got, tt.notTried)
			}
		})
	}
}

func TestToComeReadsTheCache(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	_ = appsv1.AddToScheme(scheme)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "web"}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(4))}}
	pod := testPod("web-1")
	pod.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: "web", Controller: ptr.To(true)}}
	pod.Status.Phase = corev1.PodPending // not tried yet
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(rs, pod).Build()
	got, err := newTestProvisioner(t, c).toCome(context.Background())
	if err != nil || got != 4 {
		t.Errorf("toCome = %d, %v; want 4 (3 not created, 1 not tried)", got, err)
	}

	// A role without ReplicaSets: the pods not tried yet still count, and
	// ReplicaSets are asked for once only.
	asked := 0
	denied := fake.NewClientBuilder().WithScheme(scheme).WithObjects(rs, pod).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*appsv1.ReplicaSetList); ok {
				asked++
				return errors.New("forbidden")
			}
			return c.List(ctx, list, opts...)
		},
	}).Build()
	p := newTestProvisioner(t, denied)
	for i, wantErr := range []bool{true, false} {
		got, err := p.toCome(context.Background())
		if got != 1 || (err != nil) != wantErr {
			t.Errorf("call %d without ReplicaSets: toCome = %d, %v; want 1, error %v", i+1, got, err, wantErr)
		}
	}
	if asked != 1 {
		t.Errorf("ReplicaSets asked for %d times, want 1", asked)
	}
}
