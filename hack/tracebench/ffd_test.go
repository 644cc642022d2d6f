package main

import (
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func TestFirstFitDecreasing(t *testing.T) {
	pod := func(cpu, mem int64) solver.Pod {
		var r solver.Resources
		r[solver.CPU], r[solver.Memory], r[solver.Pods] = cpu, mem, 1
		return solver.Pod{Requests: r}
	}
	var node solver.Resources
	node[solver.CPU], node[solver.Memory], node[solver.Pods] = 4000, 16<<30, 110
	for _, tc := range []struct {
		name  string
		pods  []solver.Pod
		nodes int
		ok    bool
	}{
		{"largest first fills the gaps", []solver.Pod{pod(1000, 1<<30), pod(3000, 1<<30), pod(1000, 1<<30), pod(3000, 1<<30)}, 2, true},
		{"memory decides when it is scarcer", []solver.Pod{pod(100, 9<<30), pod(100, 9<<30), pod(100, 7<<30)}, 2, true},
		{"a pod no node holds", []solver.Pod{pod(5000, 1<<30)}, 0, false},
		{"no pods, no nodes", nil, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &solver.Problem{Pods: tc.pods}
			idx := make([]int, len(tc.pods))
			for i := range idx {
				idx[i] = i
			}
			nodes, ok := firstFitDecreasing(p, idx, node)
			if nodes != tc.nodes || ok != tc.ok {
				t.Errorf("got %d nodes, ok %v; want %d, %v", nodes, ok, tc.nodes, tc.ok)
			}
		})
	}
}

// TestFFDPicksTheCheapestTypePerGroup: one pool, two types; the packing
// takes the type whose nodes cost least in all, and leaves out a pod no
// type holds.
func TestFFDPicksTheCheapestTypePerGroup(t *testing.T) {
	typ := func(name string, cpu int64, price float64) solver.InstanceType {
		var c solver.Resources
		c[solver.CPU], c[solver.Memory], c[solver.Pods] = cpu, cpu<<32, 110
		return solver.InstanceType{Name: name, Labels: map[string]string{solver.LabelInstanceType: name}, Capacity: c,
			Offerings: []solver.Offering{{Zone: "a", CapacityType: "on-demand", Price: price}}}
	}
	var r, huge solver.Resources
	r[solver.CPU], r[solver.Memory], r[solver.Pods] = 2000, 1<<30, 1
	huge[solver.CPU], huge[solver.Pods] = 100_000, 1
	p := &solver.Problem{
		InstanceTypes: []solver.InstanceType{typ("small", 4000, 0.10), typ("big", 16000, 0.50)},
		Pools:         []solver.Pool{{Name: "default"}},
	}
	for range 8 {
		p.Pods = append(p.Pods, solver.Pod{Requests: r})
	}
	p.Pods = append(p.Pods, solver.Pod{Requests: huge})
	k := ffd(p)
	// 8 pods of 2 CPU: 4 small nodes ($0.40) or 1 big ($0.50).
	if k.Price != 0.40 || k.Nodes != 4 || k.Placed != 8 {
		t.Errorf("packing %v placed %d, want 4 small nodes at $0.40/h placing 8", k, k.Placed)
	}
}
