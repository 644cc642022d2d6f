package main

import (
	"context"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	fakecr "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/fake"
	"sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/events"
	"sigs.k8s.io/karpenter/pkg/operator/injection"
	"sigs.k8s.io/karpenter/pkg/operator/logging"
	"sigs.k8s.io/karpenter/pkg/operator/options"
	"sigs.k8s.io/karpenter/pkg/test"
)

func init() {
	// Karpenter's benchmark silences its scheduler's logging the same way.
	log.SetLogger(logging.NopLogger)
}

// karpenterInput is what both schedulers are given: Karpenter's NodePool of
// its benchmark (no requirements, limits no plan reaches) and its 400 fake
// instance types.
type karpenterInput struct {
	pool  *v1.NodePool
	types []*cloudprovider.InstanceType
}

// newKarpenterInput builds the NodePool and instance types as
// setupScheduler in Karpenter's scheduling_benchmark_test.go does, with
// Karpenter's builders (pkg/test.NodePool, pkg/cloudprovider/fake).
func newKarpenterInput() karpenterInput {
	pool := test.NodePool(v1.NodePool{Spec: v1.NodePoolSpec{Limits: v1.Limits{
		corev1.ResourceCPU:    resource.MustParse("10000000"),
		corev1.ResourceMemory: resource.MustParse("10000000Gi"),
	}}})
	return karpenterInput{pool: pool, types: fake.InstanceTypes(400)}
}

// side is one scheduler's answer to the mix.
type side struct {
	// Setup is the time before solving (Karpenter: NewTopology and
	// NewScheduler; ours: converting the objects and building the problem).
	Setup time.Duration
	// Solve is the wall time of Karpenter's Scheduler.Solve, or of our
	// solver.Solve: what Karpenter's own benchmark times. SolveCPU is the
	// CPU time the process used meanwhile (both use more than one core).
	Solve, SolveCPU time.Duration
	// Nodes and Cost are the new nodes planned and their price, $/h.
	Nodes int
	Cost  float64
	// Unplaced counts the pods given that no node was planned for.
	Unplaced int
	// PeakHeap is the most the live heap grew above its level before the
	// run, in bytes (sampled; see heapPeak).
	PeakHeap uint64
}

// runKarpenter schedules pods with Karpenter's scheduler as its benchmark
// does (benchmarkScheduler and setupScheduler: a fake client, a fresh
// cluster state, five concurrent reconciles) and prices the plan: each
// NodeClaim costs the cheapest offering, among its remaining instance type
// options, that its requirements allow — the one Karpenter's fake cloud
// provider launches (fake.CloudProvider.Create sorts the types that fit by
// their cheapest compatible offering and takes the first). Karpenter is given copies: its Solve sorts the slice it is given
// in place, and our solver, run after it, must see the pods in their
// generated order.
func runKarpenter(in karpenterInput, pods []*corev1.Pod) (side, error) {
	var out side
	var err error
	copies := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		copies[i] = p.DeepCopy()
	}
	pods = copies
	out.PeakHeap = heapPeak(func() { err = karpenterSolve(in, pods, &out) })
	return out, err
}

func karpenterSolve(in karpenterInput, pods []*corev1.Pod, out *side) error {
	ctx := options.ToContext(injection.WithControllerName(context.Background(), "provisioner"), test.Options())
	opts := []scheduling.Options{scheduling.NumConcurrentReconciles(5)}
	start := time.Now()
	cp := fake.NewCloudProvider()
	cp.InstanceTypes = in.types
	kube := fakecr.NewFakeClient()
	clk := &clock.RealClock{}
	cluster := state.NewCluster(clk, kube, cp)
	pools := []*v1.NodePool{in.pool}
	types := map[string][]*cloudprovider.InstanceType{in.pool.Name: in.types}
	topology, err := scheduling.NewTopology(ctx, kube, cluster, nil, pools, types, pods, opts...)
	if err != nil {
		return fmt.Errorf("karpenter: creating topology: %w", err)
	}
	s := scheduling.NewScheduler(ctx, kube, pools, cluster, nil, topology, types, nil,
		events.NewRecorder(&record.FakeRecorder{}), clk, nil, nil, opts...)
	out.Setup = time.Since(start)
	start, cpu := time.Now(), cpuTime()
	results, err := s.Solve(ctx, pods)
	out.Solve, out.SolveCPU = time.Since(start), cpuTime()-cpu
	if err != nil {
		return fmt.Errorf("karpenter: solve: %w", err)
	}
	out.Nodes, out.Unplaced = len(results.NewNodeClaims), len(results.PodErrors)
	for i, nc := range results.NewNodeClaims {
		price := math.Inf(1)
		for _, it := range nc.InstanceTypeOptions {
			if o := it.Offerings.Available().Compatible(nc.Requirements).Cheapest(); o != nil {
				price = min(price, o.Price)
			}
		}
		if math.IsInf(price, 1) {
			return fmt.Errorf("karpenter: NodeClaim %d (%d pods) has no offering its requirements allow", i, len(nc.Pods))
		}
		out.Cost += price
	}
	return nil
}
