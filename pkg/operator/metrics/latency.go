package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// PodUnschedulableToRunning is the time from a pod turning Unschedulable
// to it Running.
var PodUnschedulableToRunning = prometheus.NewHistogram(prometheus.HistogramOpts{
	Namespace: namespace, Name: "pod_unschedulable_to_running_seconds",
	Help:    "Time from the scheduler marking a pod Unschedulable (its PodScheduled condition's transition) to the operator seeing it Running; every replica observes it.",
	Buckets: prometheus.ExponentialBuckets(0.25, 2, 14),
})

// PodLatency observes PodUnschedulableToRunning from pod informer events.
// It remembers when each pod it saw Unschedulable turned so, and observes
// the histogram once, when it first sees the pod Running.
type PodLatency struct {
	hist prometheus.Observer
	now  func() time.Time

	mu    sync.Mutex
	since map[types.UID]time.Time
}

// NewPodLatency returns a PodLatency observing hist; now tells the time
// (time.Now when nil).
func NewPodLatency(hist prometheus.Observer, now func() time.Time) *PodLatency {
	if now == nil {
		now = time.Now
	}
	return &PodLatency{hist: hist, now: now, since: map[types.UID]time.Time{}}
}

// Handler is the informer event handler that feeds it.
func (l *PodLatency) Handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { l.Observe(o) },
		UpdateFunc: func(_, o any) { l.Observe(o) },
		DeleteFunc: func(o any) {
			if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if pod, ok := o.(*corev1.Pod); ok {
				l.mu.Lock()
				delete(l.since, pod.UID)
				l.mu.Unlock()
			}
		},
	}
}

// Observe takes one state of a pod (a *corev1.Pod; anything else is
// ignored).
func (l *PodLatency) Observe(o any) {
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if pod.Status.Phase == corev1.PodRunning {
		if at, ok := l.since[pod.UID]; ok {
			delete(l.since, pod.UID)
			l.hist.Observe(max(0, l.now().Sub(at).Seconds()))
		}
		return
	}
	if pod.Spec.NodeName != "" || pod.Status.Phase != corev1.PodPending {
		return
	}
	if _, ok := l.since[pod.UID]; ok {
		return
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			l.since[pod.UID] = c.LastTransitionTime.Time
		}
	}
}
