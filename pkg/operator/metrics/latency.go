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

// PodLatency observes PodUnschedulableToRunning and Karpenter's
// karpenter_pods_startup_duration_seconds from pod informer events. It
// remembers when each pod it saw Unschedulable turned so, and observes hist
// once, when it first sees the pod Running; and it remembers the pods it saw
// Pending, and observes startup once for each, with the time from its
// creation to its Ready condition, when it first sees it Ready.
type PodLatency struct {
	hist, startup prometheus.Observer
	now           func() time.Time

	mu      sync.Mutex
	since   map[types.UID]time.Time
	pending map[types.UID]bool
}

// NewPodLatency returns a PodLatency observing hist and startup; now tells
// the time (time.Now when nil).
func NewPodLatency(hist, startup prometheus.Observer, now func() time.Time) *PodLatency {
	if now == nil {
		now = time.Now
	}
	return &PodLatency{hist: hist, startup: startup, now: now, since: map[types.UID]time.Time{}, pending: map[types.UID]bool{}}
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
				delete(l.pending, pod.UID)
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
	switch ready, ok := podReady(pod); {
	case pod.Status.Phase == corev1.PodPending:
		l.pending[pod.UID] = true
	case ok && l.pending[pod.UID]:
		delete(l.pending, pod.UID)
		l.startup.Observe(max(0, ready.LastTransitionTime.Sub(pod.CreationTimestamp.Time).Seconds()))
	case pod.Status.Phase != corev1.PodRunning:
		delete(l.pending, pod.UID) // finished without being Ready
	}
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
