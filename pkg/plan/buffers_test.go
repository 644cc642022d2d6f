package plan

import (
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func TestBuildAddsBufferRoom(t *testing.T) {
	chunk := solver.Pod{Requests: solver.Resources{solver.CPU: 1000, solver.Memory: 2 << 30, solver.Pods: 1}}
	tests := []struct {
		name    string
		pods    int
		buffers []snapshot.Buffer
		rooms   []BufferRoom
	}{
		{"no buffers", 2, nil, nil},
		{"one buffer after the real pods", 2, []snapshot.Buffer{{Namespace: "a", Name: "b", Replicas: 3, Pod: chunk}},
			[]BufferRoom{{Namespace: "a", Name: "b", First: 2, Count: 3}}},
		{"a buffer with no room asked keeps its entry", 1, []snapshot.Buffer{{Namespace: "a", Name: "none"}, {Namespace: "a", Name: "b", Replicas: 2, Pod: chunk}},
			[]BufferRoom{{Namespace: "a", Name: "none", First: 1}, {Namespace: "a", Name: "b", First: 1, Count: 2}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods := make([]solver.Pod, tc.pods, tc.pods+10) // spare capacity the build must not write into
			for i := range pods {
				pods[i] = solver.Pod{Namespace: "a", Name: "real", Owner: "Pod/real"}
			}
			m := &snapshot.Manifests{Pods: pods, Buffers: tc.buffers}
			r, err := Build(Input{Manifests: m, Default: &DefaultPool{}})
			if err != nil {
				t.Fatal(err)
			}
			want := tc.pods
			for _, b := range tc.buffers {
				want += int(b.Replicas)
			}
			if len(r.Problem.Pods) != want {
				t.Fatalf("%d pods, want %d", len(r.Problem.Pods), want)
			}
			if len(r.Buffers) != len(tc.rooms) {
				t.Fatalf("rooms %+v, want %+v", r.Buffers, tc.rooms)
			}
			for i := range tc.rooms {
				if r.Buffers[i] != tc.rooms[i] {
					t.Errorf("room %d: %+v, want %+v", i, r.Buffers[i], tc.rooms[i])
				}
			}
			for i := range r.Problem.Pods {
				if got := IsBuffer(&r.Problem.Pods[i]); got != (i >= tc.pods) {
					t.Errorf("pod %d (%s): IsBuffer %v", i, r.Problem.Pods[i].Owner, got)
				}
			}
			if spare := pods[:cap(pods)]; spare[tc.pods].Owner != "" {
				t.Errorf("the build wrote buffer pods into the snapshot's slice: %+v", spare[tc.pods])
			}
			if len(m.Pods) != tc.pods {
				t.Errorf("the snapshot has %d pods now, want %d", len(m.Pods), tc.pods)
			}
		})
	}
}
