package provisioning

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// ownedPod is a pod of owner (a ReplicaSet, StatefulSet or Job),
// Unschedulable when pending is set, else running on a node.
func ownedPod(owner client.Object, kind string, i int, pending bool) *corev1.Pod {
	gv := appsv1.SchemeGroupVersion
	if kind == "Job" {
		gv = batchv1.SchemeGroupVersion
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: owner.GetNamespace(), Name: fmt.Sprintf("%s-%d", owner.GetName(), i), UID: types.UID(fmt.Sprintf("%s-%d", owner.GetUID(), i)),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: gv.String(), Kind: kind, Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true)}},
	}}
	if pending {
		pod.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}
	} else {
		pod.Spec.NodeName = "node-a"
		pod.Status.Phase = corev1.PodRunning
	}
	return pod
}

// TestWindowStaysOpenWhileTheWorkloadsOfItsPodsGrow drives the batching
// loop (await) on a fake clock, with a 1 s idle gap and a 10 s max: a
// window whose idle gap passed stays open while a ReplicaSet, Parallel
// StatefulSet or Job of its pending pods has fewer pods than it wants, and
// closes at once when the workload is complete or cannot grow.
func TestWindowStaysOpenWhileTheWorkloadsOfItsPodsGrow(t *testing.T) {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}
	}
	rs := func(name string, want int32, conds ...appsv1.ReplicaSetCondition) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: meta(name), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(want)}, Status: appsv1.ReplicaSetStatus{Conditions: conds}}
	}
	sts := func(name string, want int32, policy appsv1.PodManagementPolicyType) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: meta(name), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(want), PodManagementPolicy: policy}}
	}
	job := func(name string, parallelism, completions, succeeded int32) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: meta(name), Spec: batchv1.JobSpec{Parallelism: ptr.To(parallelism), Completions: ptr.To(completions)},
			Status: batchv1.JobStatus{Succeeded: succeeded}}
	}
	failing := appsv1.ReplicaSetCondition{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue}
	tests := []struct {
		name  string
		owner client.Object
		kind  string
		// have pods exist at the start, the first of them pending; the
		// owner's other pods are created at completeAt (never if zero).
		have       int
		completeAt time.Duration
		hold       time.Duration // --batch-hold; 20 s (past max) when zero
		want       time.Duration // when the window closes, from its opening
	}{
		{name: "a lone pod whose ReplicaSet is complete waits the idle gap only", owner: rs("lone", 1), kind: "ReplicaSet", have: 1, want: time.Second},
		{name: "a ReplicaSet still creating its pods holds the window until it has them", owner: rs("web", 3), kind: "ReplicaSet", have: 1, completeAt: 3 * time.Second, want: 3 * time.Second},
		{name: "a ReplicaSet that never completes holds the window until max", owner: rs("web", 3), kind: "ReplicaSet", have: 1, want: 10 * time.Second},
		{name: "a ReplicaSet that never completes holds the window until the hold ends", owner: rs("web", 3), kind: "ReplicaSet", have: 1, hold: 4 * time.Second, want: 4 * time.Second},
		{name: "a ReplicaSet completing after the hold ended does not hold it that long", owner: rs("web", 3), kind: "ReplicaSet", have: 1, hold: 2500 * time.Millisecond, completeAt: 6 * time.Second, want: 2500 * time.Millisecond},
		{name: "a hold shorter than the idle gap holds nothing", owner: rs("web", 3), kind: "ReplicaSet", have: 1, hold: 500 * time.Millisecond, completeAt: 3 * time.Second, want: time.Second},
		{name: "a ReplicaSet whose pod creations fail does not hold it", owner: rs("quota", 3, failing), kind: "ReplicaSet", have: 1, want: time.Second},
		{name: "an OrderedReady StatefulSet waits for this pod before its next: no hold", owner: sts("db", 3, appsv1.OrderedReadyPodManagement), kind: "StatefulSet", have: 1, want: time.Second},
		{name: "a Parallel StatefulSet still creating its pods holds the window", owner: sts("kafka", 3, appsv1.ParallelPodManagement), kind: "StatefulSet", have: 1, completeAt: 4 * time.Second, want: 4 * time.Second},
		{name: "a Job short of its parallelism holds the window", owner: job("train", 4, 10, 0), kind: "Job", have: 2, completeAt: 2 * time.Second, want: 2 * time.Second},
		{name: "a Job with as many pods as completions left does not hold it", owner: job("tail", 4, 10, 8), kind: "Job", have: 2, want: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Unix(1_000_000, 0)
			clk := clocktesting.NewFakeClock(start)
			objs := []client.Object{tt.owner}
			for i := range tt.have {
				objs = append(objs, ownedPod(tt.owner, tt.kind, i, i == 0))
			}
			c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).Build()
			hold := tt.hold
			if hold == 0 {
				hold = 20 * time.Second
			}
			p := New(c, nil, nil, logr.Discard(), nil, Options{Clock: clk, BatchIdle: time.Second, BatchHold: hold, BatchMax: 10 * time.Second})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			closed := make(chan *window, 1)
			go func() {
				w, _ := p.await(ctx, nil, nil)
				closed <- w
			}()
			// settle waits until the loop either closed its window or is
			// waiting on its timer again.
			settle := func() *window {
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
					select {
					case w := <-closed:
						return w
					default:
					}
					if clk.HasWaiters() {
						return nil
					}
				}
				t.Fatal("the batching loop neither closed its window nor waited again")
				return nil
			}
			p.Trigger()
			settle()
			var w *window
			for step := time.Duration(0); w == nil && step <= 20*time.Second; {
				if tt.completeAt > 0 && step == tt.completeAt-100*time.Millisecond {
					want, _ := p.wanted(ctx, tt.owner.GetUID(), ownerKey{kind: tt.kind, key: client.ObjectKeyFromObject(tt.owner)})
					for i := tt.have; i < int(want); i++ {
						if err := c.Create(ctx, ownedPod(tt.owner, tt.kind, i, true)); err != nil {
							t.Fatal(err)
						}
					}
				}
				clk.Step(100 * time.Millisecond)
				step += 100 * time.Millisecond
				w = settle()
			}
			if w == nil {
				t.Fatal("the window never closed")
			}
			if got := w.closed.Sub(start); got != tt.want {
				t.Errorf("the window closed after %s (held by %q), want %s", got, w.heldBy, tt.want)
			}
		})
	}
}
