package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testBigBurst is issue 16's operator must-show: a burst of 5,000 bare
// pods (TestLiveEqualsPlan's 20 shapes, 2.5 pods for each of its
// replicas: spread over zones on shared labels, on-demand only, on the
// tainted GPU pool) created at once, provisioned with one solve per batch
// well under 1 s. `make test` runs a fifth of it (1,000 pods);
// RIGHTSIZE_BURST_SCALE=1 runs the 5,000. It logs every batch's solve time
// and `burst: slowest solve S`.
func (e *opEnv) testBigBurst(t *testing.T) {
	scale := scaleFromEnv(t, "RIGHTSIZE_BURST_SCALE", 0.2)
	ns := e.namespace(t, "bigburst")
	general, gpu := e.rampPools(t, "bigburst")
	op := e.startOperator(t, "operator", nil, "--leader-election-id", "e2e-bigburst", "--disruption=false",
		"--leader-elect-lease-duration", "150s", "--leader-elect-renew-deadline", "120s", "--leader-elect-retry-period", "10s")
	// The operator stops first, so that the pods being deleted are not
	// provisioned for again; the claims go without a drain.
	t.Cleanup(func() {
		op.stop()
		e.forceCleanup(t, ns, general.Name, gpu.Name)
	})
	op.waitLog(t, "provisioner started", 30*time.Second)

	var pods []*corev1.Pod
	for _, s := range liveShapes {
		d := liveDeployment(ns, s, 2.5*scale)
		for i := range int(*d.Spec.Replicas) {
			p := &corev1.Pod{Spec: *d.Spec.Template.Spec.DeepCopy()}
			p.Namespace, p.Name, p.Labels = ns, fmt.Sprintf("%s-%d", s.name, i), d.Spec.Template.Labels
			pods = append(pods, p)
		}
	}
	start := time.Now()
	e.createPods(t, pods)
	created := time.Since(start)
	limit := max(5*time.Minute, time.Duration(scale*float64(15*time.Minute)))
	bound := 0
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, limit, true, func(ctx context.Context) (bool, error) {
		var l corev1.PodList
		if err := e.c.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		bound = 0
		for _, p := range l.Items {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return bound == len(pods), nil
	})
	if err != nil {
		t.Fatalf("%d of %d pods bound to a node after %s", bound, len(pods), limit)
	}

	batches := op.records("batch planned")
	var solves []time.Duration
	for _, b := range batches {
		d, err := time.ParseDuration(fmt.Sprint(b["solve"]))
		if err != nil {
			t.Fatalf("batch record without a solve time: %v", b)
		}
		solves = append(solves, d)
		t.Logf("  batch: pods %v, pending %v, nodeClaims %v, onInFlightNodes %v, window %v, solve %v, decision %v",
			b["pods"], b["pending"], b["nodeClaims"], b["onInFlightNodes"], b["window"], b["solve"], b["decision"])
	}
	if len(solves) == 0 {
		t.Fatal("no batch planned")
	}
	slowest := slices.Max(solves)
	t.Logf("burst: %d pods created in %s, all bound after %s, in %d batches on %d NodeClaims", len(pods), created.Round(time.Millisecond),
		time.Since(start).Round(time.Second), len(batches), len(e.claims(t, "")))
	t.Logf("burst: slowest solve %s", slowest)
	if slowest >= time.Second {
		t.Errorf("a batch took %s to solve: want every batch under 1 s", slowest)
	}
}
