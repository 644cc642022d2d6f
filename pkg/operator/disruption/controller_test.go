package disruption

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/disruption"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// oneNodeView is a look at a cluster of one empty node "a" of pool "pool",
// owned by a NodeClaim.
func oneNodeView(t *testing.T) *disruption.View {
	t.Helper()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	np := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "pool"}}
	var alloc solver.Resources
	alloc[solver.CPU], alloc[solver.Memory], alloc[solver.Pods] = 2000, 8<<30, 110
	p := &solver.Problem{
		Pools: []solver.Pool{{Name: "pool", Labels: map[string]string{}, Consolidation: solver.Consolidation{Policy: solver.WhenEmptyOrUnderutilized, NodesAllowed: -1}}},
		Nodes: []solver.Node{{Name: "a", Pool: "pool", Allocatable: alloc, Created: now.Add(-time.Hour),
			Labels: map[string]string{solver.LabelNodePool: "pool", solver.LabelHostname: "a"}}},
	}
	node := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.NodeSpec{ProviderID: "sim://a"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	claim := v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a-claim", Labels: map[string]string{v1alpha1.LabelNodePool: "pool"}},
		Status: v1alpha1.NodeClaimStatus{ProviderID: "sim://a"}}
	v, err := disruption.NewView(disruption.Input{Snapshot: &disruption.Snapshot{Problem: p, Pools: map[string]*v1alpha1.NodePool{"pool": np}},
		Nodes: []corev1.Node{node}, Claims: []v1alpha1.NodeClaim{claim}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestTellRefusalsOncePerReason(t *testing.T) {
	v := oneNodeView(t)
	rec := events.NewFakeRecorder(10)
	c := New(nil, nil, nil, rec, logr.Discard(), Options{})
	for _, why := range []string{
		"pods changed 5s ago; consolidateAfter is 1m",
		"pods changed 9s ago; consolidateAfter is 1m", // the same reason, older
		"PDB ns/web allows 0 disruptions",             // a new reason
		"PDB ns/web allows 0 disruptions",
	} {
		c.tellRefusals(v, map[string]disruption.Refusal{"a": {Reason: why}, "gone": {Reason: why}})
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	if len(got) != 2 || !strings.Contains(got[0], "consolidateAfter") || !strings.Contains(got[1], "PDB") {
		t.Errorf("events %q, want one per distinct reason, on node a only", got)
	}
}

// TestSettleIsBoundedByDebounceMax: after a change, a plan waits for the
// cluster to be quiet for Debounce, but never longer than DebounceMax:
// under changes every 20 ms (a trace replay's pods, kwok's node updates)
// the wait used to last as long as the changes.
func TestSettleIsBoundedByDebounceMax(t *testing.T) {
	const debounce, debounceMax = 200 * time.Millisecond, time.Second
	for _, tc := range []struct {
		name       string
		changesFor time.Duration // a change every 20 ms for this long
		min, max   time.Duration
	}{
		{"quiet after the change", 0, debounce, debounceMax},
		{"changes for 300 ms, then quiet", 300 * time.Millisecond, 2 * debounce, debounceMax},
		{"changes for 3 s", 3 * time.Second, debounceMax, 2500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(nil, nil, nil, events.NewFakeRecorder(1), logr.Discard(), Options{Debounce: debounce, DebounceMax: debounceMax})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				for end := time.Now().Add(tc.changesFor); time.Now().Before(end) && ctx.Err() == nil; time.Sleep(20 * time.Millisecond) {
					c.Trigger()
				}
			}()
			start := time.Now()
			if !c.settle(ctx) {
				t.Fatal("settle ended without its context ending")
			}
			if took := time.Since(start); took < tc.min || took > tc.max {
				t.Errorf("settled after %s, want %s to %s", took.Round(time.Millisecond), tc.min, tc.max)
			}
		})
	}
}
