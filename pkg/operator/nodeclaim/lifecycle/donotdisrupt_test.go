package lifecycle

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/kubectl/pkg/drain"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// drainPod is a running pod on node "a" with a grace period of its own
// and the annotations given.
func drainPod(name string, grace int64, annotations map[string]string) *corev1.Pod {
	started := metav1.NewTime(epoch.Add(-time.Hour))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: name, UID: types.UID(name), Annotations: annotations},
		Spec:       corev1.PodSpec{NodeName: "a", TerminationGracePeriodSeconds: ptr.To(grace)},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started},
	}
}

var dnd = map[string]string{v1alpha1.KarpenterAnnotationDoNotDisrupt: "true"}

// TestDoNotDisruptHoldsTheDrainUntilTheGracePeriod: do-not-disrupt pods
// are not evicted and hold the drain; each is deleted once its own grace
// period would carry it past the node's deadline (deletion +
// terminationGracePeriod), with what is left of it. Written from
// kubernetes-sigs/karpenter pkg/controllers/node/termination/suite_test.go,
// It("should preemptively delete pods to satisfy their
// terminationGracePeriodSeconds") and It("should only delete pods when
// their terminationGracePeriodSeconds is less than the the node's
// remaining terminationGracePeriod") (300 s node grace, a 60 s pod: kept
// at +90 s, deleted at +265 s), and from its terminator's eviction queue,
// which leaves active do-not-disrupt pods enqueued rather than evicting
// them (terminator/eviction.go).
func TestDoNotDisruptHoldsTheDrainUntilTheGracePeriod(t *testing.T) {
	fiveMin := metav1.Duration{Duration: 300 * time.Second}
	for _, tc := range []struct {
		name        string
		grace       *metav1.Duration
		deletedAgo  time.Duration
		pods        []*corev1.Pod
		wantHeld    []string
		wantDeleted map[string]int64 // pod -> grace period of its deletion
		wantSkipped []string         // pods the drain leaves alone
	}{
		{
			name: "no grace period: do-not-disrupt pods hold the drain indefinitely, the others are evicted",
			pods: []*corev1.Pod{drainPod("keep", 60, dnd), drainPod("web", 30, nil)}, deletedAgo: 48 * time.Hour,
			wantHeld: []string{"d/keep"}, wantSkipped: []string{"keep"},
		},
		{
			name: "90 s into a 300 s grace period: a 60 s pod is kept",
			pods: []*corev1.Pod{drainPod("keep", 60, dnd)}, grace: &fiveMin, deletedAgo: 90 * time.Second,
			wantHeld: []string{"d/keep"}, wantSkipped: []string{"keep"},
		},
		{
			name: "265 s into it: the 60 s pod is deleted with the 35 s left",
			pods: []*corev1.Pod{drainPod("keep", 60, dnd)}, grace: &fiveMin, deletedAgo: 265 * time.Second,
			wantHeld: []string{"d/keep"}, wantDeleted: map[string]int64{"keep": 35}, wantSkipped: []string{"keep"},
		},
		{
			name: "a pod whose grace exceeds the node's is deleted at once, with the node's",
			pods: []*corev1.Pod{drainPod("long", 600, dnd)}, grace: &fiveMin, deletedAgo: 0,
			wantHeld: []string{"d/long"}, wantDeleted: map[string]int64{"long": 300}, wantSkipped: []string{"long"},
		},
		{
			name:     "rightsize.dev's annotation holds as Karpenter's does",
			pods:     []*corev1.Pod{drainPod("ours", 30, map[string]string{v1alpha1.AnnotationDoNotDisrupt: "true"})},
			wantHeld: []string{"d/ours"}, wantSkipped: []string{"ours"},
		},
		{
			name: "a lapsed duration and a finished pod hold nothing",
			pods: []*corev1.Pod{
				drainPod("lapsed", 30, map[string]string{v1alpha1.KarpenterAnnotationDoNotDisrupt: "30m"}),
				func() *corev1.Pod { p := drainPod("done", 30, dnd); p.Status.Phase = corev1.PodSucceeded; return p }(),
			},
		},
		{
			name: "DaemonSet and static pods, which the drain leaves alone, hold nothing",
			pods: []*corev1.Pod{
				func() *corev1.Pod {
					p := drainPod("agent", 30, dnd)
					p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds", Controller: ptr.To(true)}}
					return p
				}(),
				drainPod("static", 30, map[string]string{v1alpha1.KarpenterAnnotationDoNotDisrupt: "true", corev1.MirrorPodAnnotationKey: "x"}),
			},
		},
		{
			name:        "a duration still running holds",
			pods:        []*corev1.Pod{drainPod("young", 30, map[string]string{v1alpha1.KarpenterAnnotationDoNotDisrupt: "2h"})},
			wantHeld:    []string{"d/young"},
			wantSkipped: []string{"young"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			for _, p := range tc.pods {
				objs = append(objs, p)
			}
			kube := kubefake.NewClientset(objs...)
			var deleted = map[string]int64{}
			kube.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				d := a.(k8stesting.DeleteActionImpl)
				deleted[d.Name] = ptr.Deref(d.DeleteOptions.GracePeriodSeconds, -1)
				return false, nil, nil
			})
			clk := clocktesting.NewFakeClock(epoch)
			ctrl := New(nil, kube, nil, events.NewFakeRecorder(10), nil, Options{Clock: clk})
			claim := newClaim(epoch, time.Hour)
			claim.Spec.TerminationGracePeriod = tc.grace
			claim.DeletionTimestamp = ptr.To(metav1.NewTime(epoch.Add(-tc.deletedAgo)))
			h := ctrl.drainer(context.Background(), claim)
			held, err := ctrl.holdDoNotDisrupt(context.Background(), claim, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, h)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(held, tc.wantHeld) {
				t.Errorf("held %v, want %v", held, tc.wantHeld)
			}
			if len(deleted) != len(tc.wantDeleted) {
				t.Errorf("deleted %v, want %v", deleted, tc.wantDeleted)
			}
			for name, g := range tc.wantDeleted {
				if got, ok := deleted[name]; !ok || got != g {
					t.Errorf("pod %s deleted %v with grace %d, want grace %d", name, ok, got, g)
				}
			}
			var skipped []string
			for _, p := range tc.pods {
				for _, f := range h.AdditionalFilters {
					if st := f(*p); !st.Delete && st.Reason == drain.PodDeleteStatusTypeSkip {
						skipped = append(skipped, p.Name)
					}
				}
			}
			if !slices.Equal(skipped, tc.wantSkipped) {
				t.Errorf("the drain skips %v, want %v", skipped, tc.wantSkipped)
			}
		})
	}
}
