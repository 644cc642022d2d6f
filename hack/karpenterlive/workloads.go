package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// workload is a script replayed in time, the same for both systems: it
// creates, scales and deletes pods in namespace ns at fixed offsets from
// its start and returns when its script ends, so that both systems are
// measured over the same stretch of time.
type workload struct {
	name string
	// desc says what it is, for the report.
	desc string
	run  func(ctx context.Context, cs kubernetes.Interface, ns string, logf func(string, ...any)) error
	// alive (what is alive at an offset from the start; offsets asked in
	// increasing order) and end (the run's length) let the bench integrate
	// what the workload costs packed from scratch at every instant (see
	// packedBound).
	alive aliveFunc
	end   time.Duration
}

// shape is one Deployment of TestLiveEqualsPlan (test/e2e/live_test.go,
// liveShapes): the same 20 Deployments, 2,000 pods at scale 1.
type shape struct {
	name      string
	replicas  int32
	cpu, mem  string
	gpu       bool
	spreadOn  string
	onDemand  bool
	diurnalLo int32 // diurnal workload: replicas at the trough
}

var rampShapes = []shape{
	{name: "web-a", replicas: 150, cpu: "250m", mem: "512Mi", spreadOn: "front"},
	{name: "web-b", replicas: 150, cpu: "250m", mem: "256Mi", spreadOn: "front"},
	{name: "web-c", replicas: 100, cpu: "500m", mem: "1Gi", spreadOn: "front"},
	{name: "api-a", replicas: 120, cpu: "500m", mem: "1Gi"},
	{name: "api-b", replicas: 120, cpu: "1", mem: "2Gi", spreadOn: "api"},
	{name: "api-c", replicas: 100, cpu: "1", mem: "1Gi", spreadOn: "api"},
	{name: "cache-a", replicas: 80, cpu: "1", mem: "4Gi"},
	{name: "cache-b", replicas: 80, cpu: "500m", mem: "4Gi"},
	{name: "worker-a", replicas: 120, cpu: "2", mem: "2Gi"},
	{name: "worker-b", replicas: 100, cpu: "2", mem: "4Gi"},
	{name: "worker-c", replicas: 100, cpu: "1500m", mem: "3Gi"},
	{name: "db-a", replicas: 40, cpu: "2", mem: "16Gi", onDemand: true},
	{name: "db-b", replicas: 40, cpu: "1", mem: "8Gi", onDemand: true},
	{name: "queue", replicas: 120, cpu: "250m", mem: "1Gi", spreadOn: "back"},
	{name: "log", replicas: 120, cpu: "100m", mem: "128Mi", spreadOn: "back"},
	{name: "ml-prep", replicas: 80, cpu: "4", mem: "8Gi"},
	{name: "search", replicas: 80, cpu: "2", mem: "8Gi"},
	{name: "small", replicas: 244, cpu: "100m", mem: "256Mi"},
	{name: "gpu-infer", replicas: 40, cpu: "2", mem: "8Gi", gpu: true},
	{name: "gpu-train", replicas: 16, cpu: "4", mem: "16Gi", gpu: true},
}

// diurnalShapes are a day's services: each swings between its trough and
// its peak replicas (560 pods at the peak at scale 1).
var diurnalShapes = []shape{
	{name: "web", replicas: 150, diurnalLo: 10, cpu: "250m", mem: "512Mi", spreadOn: "front"},
	{name: "api", replicas: 80, diurnalLo: 5, cpu: "1", mem: "2Gi", spreadOn: "front"},
	{name: "worker", replicas: 60, diurnalLo: 2, cpu: "2", mem: "4Gi"},
	{name: "cache", replicas: 40, diurnalLo: 6, cpu: "500m", mem: "4Gi"},
	{name: "batch", replicas: 30, diurnalLo: 0, cpu: "4", mem: "8Gi"},
	{name: "small", replicas: 200, diurnalLo: 20, cpu: "100m", mem: "256Mi"},
}

// scaled is n×scale, rounded, at least 1 when n > 0.
func scaled(n int32, scale float64) int32 {
	if n == 0 {
		return 0
	}
	return max(1, int32(float64(n)*scale+0.5))
}

// gpuResource is the extended resource GPU pods request.
const gpuResource corev1.ResourceName = "nvidia.com/gpu"

// podSpec is a pause container with equal requests and limits.
func podSpec(cpu, mem resource.Quantity, gpus int64, onDemand bool) corev1.PodSpec {
	rl := corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem}
	spec := corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To(int64(0)),
		Containers:                    []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
	}
	if gpus > 0 {
		rl[gpuResource] = *resource.NewQuantity(gpus, resource.DecimalSI)
		spec.Tolerations = []corev1.Toleration{{Key: string(gpuResource), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl, Limits: rl}
	if onDemand {
		spec.NodeSelector = map[string]string{"karpenter.sh/capacity-type": "on-demand"}
	}
	return spec
}

// deployment is the Deployment of a shape with replicas.
func deployment(ns string, s shape, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": s.name}
	gpus := int64(0)
	if s.gpu {
		gpus = 1
	}
	spec := podSpec(resource.MustParse(s.cpu), resource.MustParse(s.mem), gpus, s.onDemand)
	if s.spreadOn != "" {
		labels["tier"] = s.spreadOn
		spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": s.spreadOn}},
		}}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: s.name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": s.name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}

// scaleTo sets a Deployment's replicas.
func scaleTo(ctx context.Context, cs kubernetes.Interface, ns, name string, replicas int32) error {
	patch := []byte(`{"spec":{"replicas":` + strconv.Itoa(int(replicas)) + `}}`)
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("scaling %s to %d: %w", name, replicas, err)
	}
	return nil
}

// sleepUntil waits until t or ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}

// rampWorkload is TestLiveEqualsPlan's ramp: its 20 Deployments (2,000
// pods at scale 1) created at once, the ReplicaSet controller creating
// the pods at its own pace; after up, each Deployment is scaled to a
// quarter (2,000 -> 500 pods); the run ends down later.
func rampWorkload(scale float64, up, down time.Duration) workload {
	total, after := int32(0), int32(0)
	for _, s := range rampShapes {
		total += scaled(s.replicas, scale)
		after += scaled(scaled(s.replicas, scale), 0.25)
	}
	replicas := func(s shape, at time.Duration) int32 {
		if at < up {
			return scaled(s.replicas, scale)
		}
		return scaled(scaled(s.replicas, scale), 0.25)
	}
	return workload{
		name:  "ramp",
		alive: deploymentsAlive(rampShapes, replicas),
		end:   up + down,
		desc:  fmt.Sprintf("TestLiveEqualsPlan's 20 Deployments, %d pods; after %s scaled to %d pods; %s more", total, up, after, down),
		run: func(ctx context.Context, cs kubernetes.Interface, ns string, logf func(string, ...any)) error {
			start := time.Now()
			for _, s := range rampShapes {
				if _, err := cs.AppsV1().Deployments(ns).Create(ctx, deployment(ns, s, replicas(s, 0)), metav1.CreateOptions{}); err != nil {
					return fmt.Errorf("creating Deployment %s: %w", s.name, err)
				}
			}
			if err := sleepUntil(ctx, start.Add(up)); err != nil {
				return err
			}
			logf("ramp: scaling %d pods down to %d", total, after)
			for _, s := range rampShapes {
				if err := scaleTo(ctx, cs, ns, s.name, replicas(s, up)); err != nil {
					return err
				}
			}
			return sleepUntil(ctx, start.Add(up+down))
		},
	}
}

// diurnalWorkload scales a set of Deployments between their trough and
// peak cycles times, as a day's traffic: replicas = lo + (hi-lo)·sin²(π
// t/period), set every step; the run ends a step after the last trough.
func diurnalWorkload(scale float64, period time.Duration, cycles int, step time.Duration) workload {
	peak := int32(0)
	for _, s := range diurnalShapes {
		peak += scaled(s.replicas, scale)
	}
	length := time.Duration(cycles) * period
	at := func(s shape, t time.Duration) int32 {
		lo, hi := scaled(s.diurnalLo, scale), scaled(s.replicas, scale)
		x := math.Sin(math.Pi * float64(t) / float64(period))
		return lo + int32(math.Round(float64(hi-lo)*x*x))
	}
	return workload{
		name: "diurnal",
		// The replicas are set every step, from 0 to length.
		alive: deploymentsAlive(diurnalShapes, func(s shape, t time.Duration) int32 { return at(s, min(t/step*step, length)) }),
		end:   length + step,
		desc:  fmt.Sprintf("%d Deployments swinging to %d pods and back %d times, %s a cycle, rescaled every %s", len(diurnalShapes), peak, cycles, period, step),
		run: func(ctx context.Context, cs kubernetes.Interface, ns string, logf func(string, ...any)) error {
			start := time.Now()
			for _, s := range diurnalShapes {
				if _, err := cs.AppsV1().Deployments(ns).Create(ctx, deployment(ns, s, at(s, 0)), metav1.CreateOptions{}); err != nil {
					return fmt.Errorf("creating Deployment %s: %w", s.name, err)
				}
			}
			for t := step; t <= length; t += step {
				if err := sleepUntil(ctx, start.Add(t)); err != nil {
					return err
				}
				n := int32(0)
				for _, s := range diurnalShapes {
					r := at(s, t)
					n += r
					if err := scaleTo(ctx, cs, ns, s.name, r); err != nil {
						return err
					}
				}
				logf("diurnal: %s: %d pods", t.Round(time.Second), n)
			}
			return sleepUntil(ctx, start.Add(length+step))
		},
	}
}

// traceWorkload replays the compressed trace: bare pods created and
// deleted (grace period 0) at their scaled times; GPU pods request whole
// GPUs (num_gpu) and tolerate the GPU pool's taint, CPU-only pods go to
// the general pool. The run ends tail after the last event.
func traceWorkload(pods []tracePod, evs []traceEvent, tail time.Duration, desc string) workload {
	life := make([]time.Duration, len(pods)) // each pod's deletion after its creation, replay time
	for _, ev := range evs {
		if ev.Create {
			life[ev.Pod] -= ev.At
		} else {
			life[ev.Pod] += ev.At
		}
	}
	return workload{
		name: "trace",
		desc: desc,
		run: func(ctx context.Context, cs kubernetes.Interface, ns string, logf func(string, ...any)) error {
			start := time.Now()
			created, deleted, lastLog := 0, 0, start
			for _, ev := range evs {
				if err := sleepUntil(ctx, start.Add(ev.At)); err != nil {
					return err
				}
				pod := tracePodObject(ns, ev.Pod, pods[ev.Pod], life[ev.Pod])
				name := pod.Name
				if ev.Create {
					if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
						return fmt.Errorf("creating trace pod %s (%s): %w", name, pods[ev.Pod].Name, err)
					}
					created++
				} else {
					err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
					if err != nil && !apierrors.IsNotFound(err) {
						return fmt.Errorf("deleting trace pod %s: %w", name, err)
					}
					deleted++
				}
				if time.Since(lastLog) > time.Minute {
					lastLog = time.Now()
					logf("trace: %s: %d pods created, %d deleted (%s behind)", time.Since(start).Round(time.Second), created, deleted,
						max(0, time.Since(start)-ev.At).Round(time.Second))
				}
			}
			return sleepUntil(ctx, start.Add(traceEnd(evs, tail)))
		},
		alive: traceAlive(pods, evs),
		end:   traceEnd(evs, tail),
	}
}

// traceEnd is the replay's length: tail after its last event.
func traceEnd(evs []traceEvent, tail time.Duration) time.Duration {
	if len(evs) == 0 {
		return tail
	}
	return evs[len(evs)-1].At + tail
}

// tracePodObject is the replay's pod i of ns, which the replay deletes
// life after creating it: GPU pods request whole GPUs and tolerate the GPU
// pool's taint.
func tracePodObject(ns string, i int, p tracePod, life time.Duration) *corev1.Pod {
	annotations := map[string]string{"trace/name": p.Name}
	if life > 0 {
		annotations[lifeAnnotation] = strconv.FormatFloat(life.Seconds(), 'f', 3, 64)
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("trace-%05d", i),
			Labels: map[string]string{"app": "trace"}, Annotations: annotations},
		Spec: podSpec(*resource.NewMilliQuantity(p.CPUMilli, resource.DecimalSI),
			*resource.NewQuantity(p.MemMiB<<20, resource.BinarySI), p.GPUs, false),
	}
}
