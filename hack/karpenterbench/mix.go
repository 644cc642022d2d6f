package main

import (
	"fmt"
	"math/rand"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"sigs.k8s.io/karpenter/pkg/test"
)

// diversePods returns Karpenter's scheduling benchmark input: the pods of
// makeDiversePods(count) in kubernetes-sigs/karpenter v1.14.1
// pkg/controllers/provisioning/scheduling/scheduling_benchmark_test.go,
// built with Karpenter's own pod builder (pkg/test.Pod). That file's
// helpers are in a _test package and cannot be imported, so the mix is
// written again here from reading it: a fifth each of plain pods, zonal
// spread (maxSkew 1, DoNotSchedule), hostname spread (likewise), zonal
// self-affinity on my-affininity, and hostname anti-affinity among all of
// that fifth (app=nginx); the remainder plain. Plain and spread pods carry
// my-label drawn from a–g; a spread's selector is drawn independently of
// the pod's own label, so it matches pods of every class with that value.
//
// The draws use math/rand (v1) from seed in the order Karpenter's helpers
// make them (the pod's labels, the selector's, CPU, memory), so seed 42
// gives the pods of Karpenter's BenchmarkScheduling<count> run on its own
// (Karpenter's source is package-global and shared between benchmarks of
// one process). Every pod is Pending, as a pod waiting for a node is; the
// phase is what our snapshot reads as pending, Karpenter's Solve ignores it.
func diversePods(count int, seed int64) []*corev1.Pod {
	//nolint:gosec // a benchmark's reproducible draws, not a secret
	r := rand.New(rand.NewSource(seed))
	value := func() string { return []string{"a", "b", "c", "d", "e", "f", "g"}[r.Intn(7)] }
	requests := func() corev1.ResourceRequirements {
		cpu := resource.MustParse(fmt.Sprintf("%dm", []int{100, 250, 500, 1000, 1500}[r.Intn(5)]))
		mem := resource.MustParse(fmt.Sprintf("%dMi", []int{100, 256, 512, 1024, 2048, 4096}[r.Intn(6)]))
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem}}
	}
	var pods []*corev1.Pod
	add := func(kind string, labels map[string]string, o test.PodOptions) {
		// UIDs as Karpenter's benchmark sets them: its scheduler caches by
		// UID. Names are the kind and index, not Karpenter's random ones,
		// so that a plan whose ties are broken by name is reproducible.
		name := fmt.Sprintf("%s-%d", kind, len(pods))
		o.ObjectMeta = metav1.ObjectMeta{Name: name, Labels: labels, UID: uuid.NewUUID()}
		o.Phase = corev1.PodPending
		o.ResourceRequirements = requests()
		pods = append(pods, test.Pod(o))
	}
	generic := func(n int) {
		for range n {
			add("generic", map[string]string{"my-label": value()}, test.PodOptions{})
		}
	}
	spread := func(n int, kind, key string) {
		for range n {
			labels := map[string]string{"my-label": value()}
			add(kind, labels, test.PodOptions{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"my-label": value()}},
			}}})
		}
	}
	each := count / 5
	generic(each)
	spread(each, "spread-zone", corev1.LabelTopologyZone)
	spread(each, "spread-hostname", corev1.LabelHostname)
	for range each {
		labels := map[string]string{"my-affininity": value()}
		add("affinity", labels, test.PodOptions{PodRequirements: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, TopologyKey: corev1.LabelTopologyZone,
		}}})
	}
	nginx := map[string]string{"app": "nginx"}
	for range each {
		add("anti-affinity", nginx, test.PodOptions{PodAntiRequirements: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: nginx}, TopologyKey: corev1.LabelHostname,
		}}})
	}
	generic(count - len(pods))
	return pods
}
