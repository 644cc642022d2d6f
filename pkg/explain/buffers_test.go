package explain

import (
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func TestBufferCost(t *testing.T) {
	r := func(cpu, mem int64) solver.Resources {
		return solver.Resources{solver.CPU: cpu, solver.Memory: mem, solver.Pods: 1}
	}
	// Pods 0-1 are real, 2-4 a buffer's.
	p := &solver.Problem{
		Pods:  []solver.Pod{{Requests: r(1000, 1)}, {Requests: r(1000, 1)}, {Requests: r(1000, 1)}, {Requests: r(2000, 1)}, {Requests: r(1000, 1)}},
		Nodes: []solver.Node{{Name: "old", Price: 0.8, Allocatable: r(8000, 8)}},
	}
	room := []plan.BufferRoom{{Namespace: "ns", Name: "b", First: 2, Count: 3}}
	tests := []struct {
		name   string
		solved solver.Plan
		want   ResultBuffer
	}{
		{"a new node shared by weight", solver.Plan{NewNodes: []solver.NewNode{{Price: 1, Pods: []int{0, 2, 3}, Allocatable: r(4000, 8)}}, Unschedulable: []solver.Unschedulable{{Pod: 4}}},
			ResultBuffer{Namespace: "ns", Name: "b", Replicas: 3, Placed: 2, PricePerHour: 0.75, Nodes: []string{"new-1"}}},
		{"an existing node's room costs its share", solver.Plan{Existing: []solver.Placement{{Pod: 2, Node: "old"}, {Pod: 3, Node: "old"}, {Pod: 4, Node: "old"}}},
			ResultBuffer{Namespace: "ns", Name: "b", Replicas: 3, Placed: 3, PricePerHour: 0.4, Nodes: []string{"old"}}},
		{"room on two nodes", solver.Plan{NewNodes: []solver.NewNode{{Price: 0.5, Pods: []int{4}, Allocatable: r(2000, 8)}}, Existing: []solver.Placement{{Pod: 2, Node: "old"}}, Unschedulable: []solver.Unschedulable{{Pod: 3}}},
			ResultBuffer{Namespace: "ns", Name: "b", Replicas: 3, Placed: 2, PricePerHour: 0.6, Nodes: []string{"old", "new-1"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := newBuffers(p, &tc.solved, room)
			if len(got) != 1 {
				t.Fatalf("%d buffers", len(got))
			}
			g := got[0]
			if g.Replicas != tc.want.Replicas || g.Placed != tc.want.Placed || math.Abs(g.PricePerHour-tc.want.PricePerHour) > 1e-9 || !slices.Equal(g.Nodes, tc.want.Nodes) {
				t.Errorf("got %+v, want %+v", g, tc.want)
			}
		})
	}
}

const bufferManifest = `
apiVersion: v1
kind: PodTemplate
metadata: {name: burst}
template:
  spec:
    containers:
    - name: c
      image: pause
      resources: {requests: {cpu: "1", memory: 2Gi}}
---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: headroom}
spec: {podTemplateRef: {name: burst}, replicas: 10}
`

func TestExplainShowsBufferRoom(t *testing.T) {
	path := filepath.Join(t.TempDir(), "buffer.yaml")
	writeFile(t, path, bufferManifest)
	out, _, err := run(t, Options{Input: snapshot.Input{Filenames: []string{path}}, Output: "json"})
	if err != nil {
		t.Fatal(err)
	}
	var got Result
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(got.Buffers) != 1 {
		t.Fatalf("buffers %+v", got.Buffers)
	}
	b := got.Buffers[0]
	if b.Name != "headroom" || b.Replicas != 10 || b.Placed != 10 || len(b.Nodes) == 0 {
		t.Errorf("buffer %+v", b)
	}
	// Only the buffer asks for nodes: its room is the whole plan.
	if math.Abs(b.PricePerHour-got.TotalPricePerHour) > 1e-3 || b.PricePerHour <= 0 {
		t.Errorf("buffer costs %v/h, the plan %v/h", b.PricePerHour, got.TotalPricePerHour)
	}
	held := 0
	for _, n := range got.Nodes {
		for _, p := range n.Pods {
			if strings.HasPrefix(p, "default/headroom-buffer-") {
				held++
				if !slices.Contains(b.Nodes, n.Name) {
					t.Errorf("node %s holds %s but the buffer names %v", n.Name, p, b.Nodes)
				}
			}
		}
	}
	if held != 10 {
		t.Errorf("%d buffer pods on nodes, want 10", held)
	}

	table, _, err := run(t, Options{Input: snapshot.Input{Filenames: []string{path}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Capacity buffers (room kept for pods never created):", "default/headroom", "BUFFER\tREPLICAS"[:6]} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}
