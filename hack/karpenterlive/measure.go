package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	resourcehelper "k8s.io/component-helpers/resource"
)

// recorder watches Nodes and Pods on one plane and keeps, from the API
// server alone, what the table is computed from: when each node came and
// went and what it costs (priced from the shared catalog by its
// instance-type, zone and capacity-type labels), and when each pod was
// created, ran, was deleted and whether a disruption deleted it.
type recorder struct {
	cat *sharedCatalog
	now func() time.Time

	mu    sync.Mutex
	nodes map[string]*nodeRecord
	pods  map[types.UID]*podRecord
	live  int // nodes now
	peak  int
	// unpriced are nodes whose labels name no offering of the catalog.
	unpriced map[string]string
}

type nodeRecord struct {
	created, deleted time.Time // deleted zero while alive
	price            float64
	priced           bool
	everBound        bool
	gpu              bool // of the GPU pool's family
}

type podRecord struct {
	name                  string
	created, running, del time.Time // zero when it has not happened
	disrupted             bool      // deleted with a DisruptionTarget condition
	node                  string
	// life is how long the workload meant the pod to live (a trace
	// pod's annotation lifeAnnotation; zero when unknown) and gpus what
	// it requests: a disruption that deletes it earlier cuts work short.
	life time.Duration
	gpus int64
}

// lifeAnnotation carries, on a trace pod, the seconds the replay will
// delete it after its creation: nothing recreates a bare pod, so a
// disruption that deletes it earlier ends its work, which the cost-hours
// of that system then do not pay for.
const lifeAnnotation = "trace/life-seconds"

func newRecorder(cat *sharedCatalog) *recorder {
	return &recorder{cat: cat, now: time.Now, nodes: map[string]*nodeRecord{}, pods: map[types.UID]*podRecord{}, unpriced: map[string]string{}}
}

// run watches until ctx ends; it returns once the caches have synced.
func (r *recorder) run(ctx context.Context, cs kubernetes.Interface) error {
	f := informers.NewSharedInformerFactory(cs, 0)
	ni := f.Core().V1().Nodes().Informer()
	pi := f.Core().V1().Pods().Informer()
	if _, err := ni.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.node(o, false) },
		UpdateFunc: func(_, o any) { r.node(o, false) },
		DeleteFunc: func(o any) { r.node(o, true) },
	}); err != nil {
		return err
	}
	if _, err := pi.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.pod(o, false) },
		UpdateFunc: func(_, o any) { r.pod(o, false) },
		DeleteFunc: func(o any) { r.pod(o, true) },
	}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("watching %v: cache did not sync", typ)
		}
	}
	return nil
}

func (r *recorder) node(o any, deleted bool) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	n, ok := o.(*corev1.Node)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.nodes[n.Name]
	if rec == nil {
		rec = &nodeRecord{created: n.CreationTimestamp.Time}
		r.nodes[n.Name] = rec
		r.live++
		r.peak = max(r.peak, r.live)
	}
	if !rec.priced {
		it, zone, ct := n.Labels[corev1.LabelInstanceTypeStable], n.Labels[corev1.LabelTopologyZone], n.Labels["karpenter.sh/capacity-type"]
		if p, ok := r.cat.Price(it, zone, ct); ok {
			rec.price, rec.priced, rec.gpu = p, true, gpuFamily(it)
			delete(r.unpriced, n.Name)
		} else {
			r.unpriced[n.Name] = fmt.Sprintf("%s/%s/%s", it, zone, ct)
		}
	}
	if deleted && rec.deleted.IsZero() {
		rec.deleted = r.now()
		r.live--
	}
}

func (r *recorder) pod(o any, deleted bool) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.pods[p.UID]
	if rec == nil {
		rec = &podRecord{name: p.Namespace + "/" + p.Name, created: p.CreationTimestamp.Time, gpus: podGPUs(p)}
		if secs, err := strconv.ParseFloat(p.Annotations[lifeAnnotation], 64); err == nil {
			rec.life = time.Duration(secs * float64(time.Second))
		}
		r.pods[p.UID] = rec
	}
	if p.Spec.NodeName != "" {
		rec.node = p.Spec.NodeName
		if n := r.nodes[p.Spec.NodeName]; n != nil {
			n.everBound = true
		}
	}
	if rec.running.IsZero() && p.Status.Phase == corev1.PodRunning {
		rec.running = r.now()
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
				rec.running = c.LastTransitionTime.Time
			}
		}
	}
	if deleted && rec.del.IsZero() {
		rec.del = r.now()
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
				rec.disrupted = true
			}
		}
	}
}

// result is one system's row for one workload.
type result struct {
	System   string  `json:"system"`
	Workload string  `json:"workload"`
	Duration float64 `json:"durationSeconds"`
	// CostHours is the integral over the run of the sum of the live
	// nodes' prices, in dollars.
	CostHours float64 `json:"costHours"`
	// GPUCostHours is the part of CostHours spent on GPU nodes.
	GPUCostHours float64 `json:"gpuCostHours"`
	PeakNodes    int     `json:"peakNodes"`
	NodesCreated int     `json:"nodesCreated"`
	NodesDeleted int     `json:"nodesDeleted"`
	// WastedNodes never had a pod bound to them.
	WastedNodes int `json:"wastedNodes"`
	Unpriced    int `json:"unpricedNodes"`
	// Pods: created over the run; ran (reached Running); pending at the
	// end (neither ran nor were deleted); deleted before they ran.
	Pods           int `json:"pods"`
	PodsRan        int `json:"podsRan"`
	PodsPendingEnd int `json:"podsPendingAtEnd"`
	PodsRunningEnd int `json:"podsRunningAtEnd"`
	PodsNeverRan   int `json:"podsDeletedBeforeRunning"`
	Evicted        int `json:"podsEvicted"`
	// PodHoursCut and GPUHoursCut are the work evictions ended early:
	// for each evicted pod the workload meant to live longer (trace
	// pods), the time between its eviction and its planned end, and that
	// times its GPUs.
	PodHoursCut   float64 `json:"podHoursCutShort"`
	GPUHoursCut   float64 `json:"gpuHoursCutShort"`
	PendingP50    float64 `json:"pendingP50Seconds"`
	PendingP95    float64 `json:"pendingP95Seconds"`
	PendingP99    float64 `json:"pendingP99Seconds"`
	PendingMax    float64 `json:"pendingMaxSeconds"`
	ControllerCPU float64 `json:"controllerCPUSeconds"`
	// SchedulerCPU and APIServerCPU are what the plane's kube-scheduler
	// and kube-apiserver spent over the workload: the work each system's
	// cluster shape and API use cost the control plane.
	SchedulerCPU    float64 `json:"schedulerCPUSeconds"`
	APIServerCPU    float64 `json:"apiServerCPUSeconds"`
	ControllerRSSMB float64 `json:"controllerPeakRSSMiB"`
}

// result computes the row over [start, end].
func (r *recorder) result(system, workload string, start, end time.Time) result {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := result{System: system, Workload: workload, Duration: end.Sub(start).Seconds(), PeakNodes: r.peak, Unpriced: len(r.unpriced)}
	for _, n := range r.nodes {
		res.NodesCreated++
		to := end
		if !n.deleted.IsZero() {
			res.NodesDeleted++
			to = minTime(to, n.deleted)
		}
		from := maxTime(start, n.created)
		if to.After(from) {
			res.CostHours += n.price * to.Sub(from).Hours()
			if n.gpu {
				res.GPUCostHours += n.price * to.Sub(from).Hours()
			}
		}
		if !n.everBound {
			res.WastedNodes++
		}
	}
	var waits []float64
	for _, p := range r.pods {
		res.Pods++
		switch {
		case !p.running.IsZero():
			res.PodsRan++
			waits = append(waits, max(0, p.running.Sub(p.created).Seconds()))
			if p.del.IsZero() {
				res.PodsRunningEnd++
			}
		case p.del.IsZero():
			res.PodsPendingEnd++
		default:
			res.PodsNeverRan++
		}
		if p.disrupted {
			res.Evicted++
			if cut := p.created.Add(p.life).Sub(p.del); p.life > 0 && cut > 0 {
				res.PodHoursCut += cut.Hours()
				res.GPUHoursCut += float64(p.gpus) * cut.Hours()
			}
		}
	}
	slices.Sort(waits)
	res.PendingP50, res.PendingP95, res.PendingP99 = quantile(waits, 0.50), quantile(waits, 0.95), quantile(waits, 0.99)
	if len(waits) > 0 {
		res.PendingMax = waits[len(waits)-1]
	}
	return res
}

// quantile is the nearest-rank q-quantile of sorted xs (0 for none).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(q*float64(len(xs))+0.999999) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// podGPUs is what a pod requests of nvidia.com/gpu, as the scheduler
// counts it (init containers and pod-level resources included).
func podGPUs(p *corev1.Pod) int64 {
	q := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})[gpuResource]
	return q.Value()
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
