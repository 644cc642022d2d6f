package provisioning

import (
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestWindowDecidesEarlyWhileArrivalsKeepItOpen drives a window as the
// batching loop does (arrivals every 500 ms for the arrivals' length; the
// timer set to wakeAt and to decide's wait; an early decision goes on
// with the same window), with a 1 s idle gap and no workload growing, and
// lists when it decides, from its opening, and whether early.
func TestWindowDecidesEarlyWhileArrivalsKeepItOpen(t *testing.T) {
	type ret struct {
		at    time.Duration
		early bool
	}
	tests := []struct {
		name        string
		hold, max   time.Duration
		arrivalsFor time.Duration
		want        []ret
	}{
		{name: "a short burst closes once, not early", hold: 10 * time.Second, max: 2 * time.Minute, arrivalsFor: 3 * time.Second,
			want: []ret{{3500 * time.Millisecond, false}}},
		{name: "a 25 s stream decides early every hold, then closes", hold: 10 * time.Second, max: 2 * time.Minute, arrivalsFor: 25 * time.Second,
			want: []ret{{10 * time.Second, true}, {20 * time.Second, true}, {25500 * time.Millisecond, false}}},
		{name: "max still closes the window", hold: 10 * time.Second, max: 25 * time.Second, arrivalsFor: time.Minute,
			want: []ret{{10 * time.Second, true}, {20 * time.Second, true}, {25 * time.Second, false}}},
		{name: "a hold of max or more never decides early", hold: 30 * time.Second, max: 30 * time.Second, arrivalsFor: time.Minute,
			want: []ret{{30 * time.Second, false}}},
		{name: "a hold within the idle gap never decides early", hold: 500 * time.Millisecond, max: 30 * time.Second, arrivalsFor: time.Minute,
			want: []ret{{30 * time.Second, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Unix(0, 0)
			w := newWindow(t0, time.Second, tt.hold, tt.max)
			timer := w.wakeAt()
			var got []ret
			for now := t0; now.Sub(t0) <= 2*time.Minute; now = now.Add(100 * time.Millisecond) {
				if d := now.Sub(t0); d > 0 && d < tt.arrivalsFor && d%(500*time.Millisecond) == 0 {
					w.arrive(now, true)
					timer = w.wakeAt()
				}
				if now.Before(timer) {
					continue
				}
				wait, d := w.decide(now, func() string { return "" })
				if d == closeWindow {
					got = append(got, ret{now.Sub(t0), false})
					break
				}
				if d == decideEarly {
					w.closed, w.early = now, true
					got = append(got, ret{now.Sub(t0), true})
					timer = w.wakeAt()
					continue
				}
				timer = now.Add(wait)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("decisions at %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFillIsTheMostUsedResourceShare(t *testing.T) {
	node := func(alloc, req map[int]int64) *solver.NewNode {
		n := &solver.NewNode{}
		for r, v := range alloc {
			n.Allocatable[r] = v
		}
		for r, v := range req {
			n.Requested[r] = v
		}
		return n
	}
	tests := []struct {
		name string
		n    *solver.NewNode
		want float64
	}{
		{"CPU bound", node(map[int]int64{solver.CPU: 4000, solver.Memory: 16 << 30, solver.Pods: 110}, map[int]int64{solver.CPU: 3600, solver.Memory: 4 << 30, solver.Pods: 9}), 0.9},
		{"memory bound", node(map[int]int64{solver.CPU: 4000, solver.Memory: 16 << 30, solver.Pods: 110}, map[int]int64{solver.CPU: 1000, solver.Memory: 12 << 30, solver.Pods: 3}), 0.75},
		{"pod slots bound", node(map[int]int64{solver.CPU: 64000, solver.Memory: 256 << 30, solver.Pods: 110}, map[int]int64{solver.CPU: 11000, solver.Memory: 11 << 30, solver.Pods: 110}), 1},
		{"GPUs bound", node(map[int]int64{solver.CPU: 4000, solver.Memory: 16 << 30, solver.Pods: 110, solver.GPU: 4}, map[int]int64{solver.CPU: 400, solver.Memory: 1 << 30, solver.Pods: 1, solver.GPU: 4}), 1},
		{"an empty node", node(map[int]int64{solver.CPU: 4000}, nil), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fill(tt.n); got < tt.want-1e-9 || got > tt.want+1e-9 {
				t.Errorf("fill = %g, want %g", got, tt.want)
			}
		})
	}
}

// TestAdmitKeepsOnlyFilledNodesInAnEarlyDecision: of a plan's new nodes, an
// early decision launches those filled to earlyFill and defers the pods of
// the others; a full decision launches all.
func TestAdmitKeepsOnlyFilledNodesInAnEarlyDecision(t *testing.T) {
	node := func(cpu int64, pods ...int) solver.NewNode {
		n := solver.NewNode{Pool: "web", InstanceType: "c1.s1", Zone: "z1", CapacityType: "spot", Pods: pods}
		n.Allocatable[solver.CPU], n.Allocatable[solver.Pods] = 1000, 110
		n.Requested[solver.CPU], n.Requested[solver.Pods] = cpu, int64(len(pods))
		return n
	}
	plan := &solver.Plan{NewNodes: []solver.NewNode{node(900, 0, 1, 2), node(300, 3), node(800, 4, 5)}}
	tests := []struct {
		name         string
		filledOnly   bool
		wantLaunched []int // indices into plan.NewNodes
		wantDeferred int
	}{
		{name: "a full decision launches every node", wantLaunched: []int{0, 1, 2}},
		{name: "an early decision launches the filled nodes", filledOnly: true, wantLaunched: []int{0, 2}, wantDeferred: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
			b := &batch{problem: &solver.Problem{}, pools: map[string]*v1alpha1.NodePool{"web": np},
				usage: map[string]solver.Resources{"web": {}}, repriced: map[string]bool{}}
			p := New(nil, nil, nil, logr.Discard(), nil, Options{})
			launches, deferred := p.admit(b, plan, make([][]solver.LaunchOption, len(plan.NewNodes)), tt.filledOnly)
			var got []int
			for _, l := range launches {
				got = append(got, slices.IndexFunc(plan.NewNodes, func(n solver.NewNode) bool { return n.Pods[0] == l.node.Pods[0] }))
			}
			if !slices.Equal(got, tt.wantLaunched) || deferred != tt.wantDeferred {
				t.Errorf("launched %v, deferred %d pods; want %v, %d", got, deferred, tt.wantLaunched, tt.wantDeferred)
			}
		})
	}
}
