package bench

import (
	"fmt"
	"math/rand"
	"strings"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Labels of Karpenter's benchmark pods. The misspelling is Karpenter's.
const (
	karpenterLabel    = "my-label"
	karpenterAffinity = "my-affininity"
)

// KarpenterMix is Karpenter's own scheduling benchmark input, regenerated
// here: the pods of makeDiversePods and the 400 instance types of
// fake.InstanceTypes(400) under one unconstrained NodePool, as in
// kubernetes-sigs/karpenter
// pkg/controllers/provisioning/scheduling/scheduling_benchmark_test.go
// (makeDiversePods, makeGenericPods, makeTopologySpreadPods,
// makePodAffinityPods, makePodAntiAffinityPods, randomLabels,
// randomAffinityLabels, randomCPU, randomMemory) and
// pkg/cloudprovider/fake/instancetype.go (InstanceTypes, NewInstanceType,
// PriceFromResources).
//
// A fifth of the pods each: plain; zonal spread (maxSkew 1, DoNotSchedule);
// hostname spread (likewise); zonal pod affinity to their own label;
// hostname anti-affinity among all of that fifth (app=nginx); the remainder
// plain. Plain and spread pods carry my-label drawn from a–g, and a spread
// selector is my-label drawn independently of the pod's own, so every
// spread selector matches pods of every other workload with that value —
// the selectors span workloads. Requests are drawn from {100m, 250m, 500m,
// 1, 1.5} vCPU and {100Mi, 256Mi, 512Mi, 1Gi, 2Gi, 4Gi}.
//
// The draws use math/rand (v1) in the order Karpenter's helpers make them
// (labels, then the selector, then CPU, then memory, pod by pod), so seed 42
// and a fresh source give the pods of Karpenter's BenchmarkScheduling<n>
// when it runs alone.
func KarpenterMix(pods int, seed int64) *solver.Problem {
	//nolint:gosec // a benchmark's reproducible draws, not a secret
	rng := rand.New(rand.NewSource(seed))
	value := func() string { return []string{"a", "b", "c", "d", "e", "f", "g"}[rng.Intn(7)] }
	requests := func() solver.Resources {
		cpu := []int64{100, 250, 500, 1000, 1500}[rng.Intn(5)]
		mem := []int64{100, 256, 512, 1024, 2048, 4096}[rng.Intn(6)] * mi
		return resources(cpu, mem)
	}
	var out []solver.Pod
	add := func(kind string, labels map[string]string, f func(*solver.Pod)) {
		// Kinds name topology keys ("spread-topology.kubernetes.io/zone"):
		// the pods get valid object names, so that a control plane takes them.
		name := strings.NewReplacer("/", "-", ".", "-").Replace(kind)
		p := solver.Pod{Namespace: "default", Name: fmt.Sprintf("%s-%d", name, len(out)), Owner: "Deployment/" + kind, Labels: labels, Controller: true}
		if f != nil {
			f(&p)
		}
		p.Requests = requests()
		out = append(out, p)
	}
	generic := func(n int) {
		for range n {
			add("generic", map[string]string{karpenterLabel: value()}, nil)
		}
	}
	spread := func(n int, key string) {
		for range n {
			labels := map[string]string{karpenterLabel: value()}
			sel := solver.Selector{MatchLabels: map[string]string{karpenterLabel: value()}}
			add("spread-"+key, labels, func(p *solver.Pod) {
				p.Spread = []solver.TopologySpread{{MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: solver.DoNotSchedule, Selector: sel}}
			})
		}
	}
	each := pods / 5
	generic(each)
	spread(each, solver.LabelZone)
	spread(each, LabelHostname)
	for range each {
		labels := map[string]string{karpenterAffinity: value()}
		add("affinity", labels, func(p *solver.Pod) {
			p.PodAffinity = []solver.PodAffinityTerm{{TopologyKey: solver.LabelZone, Selector: solver.Selector{MatchLabels: labels}}}
		})
	}
	for range each {
		labels := map[string]string{"app": "nginx"}
		add("anti-affinity", labels, func(p *solver.Pod) {
			p.PodAntiAffinity = []solver.PodAffinityTerm{{TopologyKey: LabelHostname, Selector: solver.Selector{MatchLabels: labels}}}
		})
	}
	generic(pods - len(out))
	return &solver.Problem{Pods: out, Pools: []solver.Pool{{Name: "default"}}, InstanceTypes: solverTypes(KarpenterInstanceTypes(), "")}
}
