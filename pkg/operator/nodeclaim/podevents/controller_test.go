package podevents

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func TestNext(t *testing.T) {
	sec := func(s float64) time.Time { return now.Add(time.Duration(s * float64(time.Second))) }
	tests := []struct {
		name                string
		stored, latest, now time.Time
		write               time.Time
		wait                time.Duration
	}{
		{name: "nothing stored: written at once", latest: sec(0), now: sec(0), write: sec(0)},
		{name: "an event not after the stored time is dropped", stored: sec(5), latest: sec(5), now: sec(30)},
		{name: "an event older than the stored time is dropped", stored: sec(5), latest: sec(1), now: sec(30)},
		{name: "an event 3 s after the stored time waits for the window to end", stored: sec(0), latest: sec(3), now: sec(3), wait: 7 * time.Second},
		{name: "when the window has ended the waiting event is written as its end", stored: sec(0), latest: sec(3), now: sec(10), write: sec(10)},
		{name: "written late, the window's end is still what is written", stored: sec(0), latest: sec(3), now: sec(14), write: sec(10)},
		{name: "an event a window after the stored time is written at once, as it is", stored: sec(0), latest: sec(12), now: sec(12), write: sec(12)},
		{name: "an event exactly a window after the stored time is written as it is", stored: sec(0), latest: sec(10), now: sec(10), write: sec(10)},
		{name: "a stored time ahead of this clock waits at most one window", stored: sec(60), latest: sec(61), now: sec(0), wait: Window},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			write, wait := Next(tt.stored, tt.latest, tt.now)
			if !write.Equal(tt.write) || wait != tt.wait {
				t.Errorf("Next = (%s, %s), want (%s, %s)", write.Sub(now), wait, tt.write.Sub(now), tt.wait)
			}
		})
	}
}

// TestNextBusyNode replays a busy node (a pod event every 500 ms for a
// minute, the controller reconciling at once and when asked to) through
// Next and checks that writes come a window apart, that no stored time is
// earlier than an event it stands for, and that the last event is
// recorded within a window.
func TestNextBusyNode(t *testing.T) {
	var stored, pending, retry time.Time
	type write struct{ at, value time.Time }
	var writes []write
	step := func(at time.Time) {
		if pending.IsZero() {
			return
		}
		w, wait := Next(stored, pending, at)
		switch {
		case !w.IsZero():
			if w.Before(pending) {
				t.Fatalf("at %s: stored %s, earlier than the event %s", at.Sub(now), w.Sub(now), pending.Sub(now))
			}
			stored, pending = w, time.Time{}
			writes = append(writes, write{at, w})
		case wait > 0:
			retry = at.Add(wait)
		default:
			pending = time.Time{}
		}
	}
	last := now.Add(time.Minute)
	for at := now; !at.After(last); at = at.Add(500 * time.Millisecond) {
		if !retry.IsZero() && !retry.After(at) {
			retry = time.Time{}
			step(at)
		}
		if at.After(pending) {
			pending = at
		}
		step(at)
	}
	for !pending.IsZero() && !retry.IsZero() {
		at := retry
		retry = time.Time{}
		step(at)
	}
	if len(writes) != 7 {
		t.Errorf("%d writes in a minute of events every 500 ms, want 7 (one per %s): %v", len(writes), Window, writes)
	}
	for i := 1; i < len(writes); i++ {
		if d := writes[i].at.Sub(writes[i-1].at); d < Window {
			t.Errorf("writes %d and %d are %s apart, less than %s", i-1, i, d, Window)
		}
	}
	if stored.Before(last) || stored.Sub(last) > Window {
		t.Errorf("stored %s, want the last event %s or at most a window after", stored.Sub(now), last.Sub(now))
	}
	if d := writes[len(writes)-1].at.Sub(last); d > Window {
		t.Errorf("the last event was written %s after it happened, more than %s", d, Window)
	}
}

func bound(mod func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec:       corev1.PodSpec{NodeName: "node-a"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if mod != nil {
		mod(p)
	}
	return p
}

func pending(p *corev1.Pod) { p.Spec.NodeName = "" }
func succeeded(p *corev1.Pod) {
	p.Status.Phase = corev1.PodSucceeded
}
func terminating(p *corev1.Pod) {
	p.DeletionTimestamp = ptr.To(metav1.NewTime(now.Add(30 * time.Second)))
	p.DeletionGracePeriodSeconds = ptr.To(int64(30))
}
func daemonPod(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", Controller: ptr.To(true)}}
}

func TestChanged(t *testing.T) {
	tests := []struct {
		name     string
		old, pod *corev1.Pod
		want     bool
	}{
		{name: "bound to a node", old: bound(pending), pod: bound(nil), want: true},
		{name: "still pending", old: bound(pending), pod: bound(pending)},
		{name: "a status change of a running pod", old: bound(nil), pod: bound(func(p *corev1.Pod) { p.Status.PodIP = "10.0.0.1" })},
		{name: "finished", old: bound(nil), pod: bound(succeeded), want: true},
		{name: "already finished", old: bound(succeeded), pod: bound(func(p *corev1.Pod) { succeeded(p); p.Status.Message = "done" })},
		{name: "began terminating", old: bound(nil), pod: bound(terminating), want: true},
		{name: "already terminating", old: bound(terminating), pod: bound(func(p *corev1.Pod) { terminating(p); succeeded(p) }), want: true},
		{name: "a DaemonSet's pod bound", old: bound(func(p *corev1.Pod) { pending(p); daemonPod(p) }), pod: bound(daemonPod)},
		{name: "a DaemonSet's pod terminating", old: bound(daemonPod), pod: bound(func(p *corev1.Pod) { daemonPod(p); terminating(p) })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Changed(tt.old, tt.pod); got != tt.want {
				t.Errorf("Changed = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDeleted(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{name: "a running pod deleted at once", pod: bound(nil), want: true},
		{name: "a pending pod", pod: bound(pending)},
		{name: "a finished pod: it left when it finished", pod: bound(succeeded)},
		{name: "a terminating pod: it left when it began terminating", pod: bound(terminating)},
		{name: "a DaemonSet's pod", pod: bound(daemonPod)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Deleted(tt.pod); got != tt.want {
				t.Errorf("Deleted = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCreated(t *testing.T) {
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(d)) }
	tests := []struct {
		name string
		pod  *corev1.Pod
		want time.Time
	}{
		{name: "not bound", pod: bound(pending)},
		{name: "a DaemonSet's pod", pod: bound(daemonPod)},
		{name: "running: when it was scheduled", pod: bound(func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(-10 * time.Minute)},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at(-9 * time.Minute)},
			}
		}), want: now.Add(-10 * time.Minute)},
		{name: "bound at creation, no condition yet: when it was created", pod: bound(nil), want: now.Add(-time.Hour)},
		{name: "terminating: when its deletion was asked for", pod: bound(terminating), want: now},
		{name: "finished: when its last container finished", pod: bound(func(p *corev1.Pod) {
			succeeded(p)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{
				{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: at(-5 * time.Minute)}}},
				{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: at(-3 * time.Minute)}}},
			}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(-20 * time.Minute)}}
		}), want: now.Add(-3 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Created(tt.pod); !got.Equal(tt.want) {
				t.Errorf("Created = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCeilSecond(t *testing.T) {
	for _, tt := range []struct{ in, want time.Time }{
		{now, now},
		{now.Add(time.Millisecond), now.Add(time.Second)},
		{now.Add(999 * time.Millisecond), now.Add(time.Second)},
	} {
		if got := ceilSecond(tt.in); !got.Equal(tt.want) {
			t.Errorf("ceilSecond(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
