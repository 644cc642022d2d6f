package plan

import (
	"slices"
	"strings"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// BufferRoom is where a CapacityBuffer's virtual pods are in the problem:
// Problem.Pods[First : First+Count].
type BufferRoom struct {
	Namespace, Name string
	First, Count    int
}

// IsBuffer reports whether a pod of the problem is a buffer's virtual pod:
// room kept, never created.
func IsBuffer(p *solver.Pod) bool { return strings.HasPrefix(p.Owner, snapshot.BufferOwnerPrefix) }

// addBuffers appends the buffers' virtual pods to the problem's pods, after
// the real ones, as pending pods: the plan keeps room for them as it would
// for pods waiting to be scheduled. The snapshot's pods are not modified.
func addBuffers(p *solver.Problem, buffers []snapshot.Buffer) []BufferRoom {
	if len(buffers) == 0 {
		return nil
	}
	n := 0
	for i := range buffers {
		n += int(buffers[i].Replicas)
	}
	pods := slices.Grow(slices.Clip(p.Pods), n)
	rooms := make([]BufferRoom, 0, len(buffers))
	for i := range buffers {
		b := &buffers[i]
		rooms = append(rooms, BufferRoom{Namespace: b.Namespace, Name: b.Name, First: len(pods), Count: int(b.Replicas)})
		pods = append(pods, b.Pods()...)
	}
	p.Pods = pods
	return rooms
}
