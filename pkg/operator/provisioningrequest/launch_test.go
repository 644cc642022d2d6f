package provisioningrequest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/disruption"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// fakePlanner creates claims named claim-1, claim-2, ... and refuses the
// failAt-th (1-based; 0 never), as a create refused by the API server or
// a launch path that finds no offering.
type fakePlanner struct {
	failAt   int
	calls    int
	batches  []string
	sizes    []int
	pods     [][]string
	covered  []float64
	forgot   []string
	existing map[string]bool // claims that exist (created, not deleted)
}

func (f *fakePlanner) SnapshotWith(context.Context, []*corev1.Pod) (*disruption.Snapshot, []int, error) {
	return nil, nil, errors.New("not used")
}

func (f *fakePlanner) LaunchGang(_ context.Context, _ *disruption.Snapshot, _ *solver.NewNode, pods []string, batch string, size int, covered float64) (*v1alpha1.NodeClaim, error) {
	f.calls++
	if f.calls == f.failAt {
		return nil, errors.New("InsufficientInstanceCapacity")
	}
	f.batches, f.sizes, f.pods, f.covered = append(f.batches, batch), append(f.sizes, size), append(f.pods, pods), append(f.covered, covered)
	name := fmt.Sprintf("claim-%d", f.calls)
	f.existing[name] = true
	return &v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil
}

func (f *fakePlanner) Forget(claim string) { f.forgot = append(f.forgot, claim) }

func (f *fakePlanner) Commitments(context.Context) ([]plan.Commitment, error) { return nil, nil }

func TestLaunchAllLaunchesTheWholeGangOrNone(t *testing.T) {
	gone := apierrors.NewNotFound(schema.GroupResource{Group: v1alpha1.Group, Resource: "nodeclaims"}, "x")
	tests := []struct {
		name      string
		nodes     int
		failAt    int
		deleteErr map[string]error // by claim
		created   int              // claims returned
		left      []string         // claims that still exist after
		errHas    []string
	}{
		{"all created", 4, 0, nil, 4, []string{"claim-1", "claim-2", "claim-3", "claim-4"}, nil},
		{"the first refused: nothing to delete", 4, 1, nil, 0, nil, []string{"node 1 of 4", "the 0 created are deleted", "InsufficientInstanceCapacity"}},
		{"the last refused: the others deleted", 4, 4, nil, 0, nil, []string{"node 4 of 4", "the 3 created are deleted"}},
		{"one already gone is fine", 3, 3, map[string]error{"claim-1": gone}, 0, nil, []string{"node 3 of 3"}},
		{"a failed delete is said", 3, 3, map[string]error{"claim-2": errors.New("etcd timeout")}, 0, []string{"claim-2"},
			[]string{"node 3 of 3", "deleting NodeClaim claim-2: etcd timeout"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := &fakePlanner{failAt: tc.failAt, existing: map[string]bool{}}
			del := func(_ context.Context, c *v1alpha1.NodeClaim) error {
				if err := tc.deleteErr[c.Name]; err != nil {
					if apierrors.IsNotFound(err) {
						delete(pl.existing, c.Name)
					}
					return err
				}
				delete(pl.existing, c.Name)
				return nil
			}
			q := &solver.Problem{}
			var nodes []solver.NewNode
			var covered []float64
			for i := range tc.nodes {
				q.Pods = append(q.Pods, solver.Pod{Namespace: "ml", Name: fmt.Sprintf("job-0-%d", i)})
				nodes = append(nodes, solver.NewNode{Pool: "gpu", InstanceType: "g6.48xlarge", CapacityType: "on-demand", Pods: []int{i}})
				covered = append(covered, float64(i%2)) // every other node covered by a commitment
			}
			claims, err := launchAll(context.Background(), pl, del, &disruption.Snapshot{}, q, nodes, covered, "provreq-1")
			if len(claims) != tc.created {
				t.Errorf("%d claims returned; want %d", len(claims), tc.created)
			}
			var left []string
			for name := range pl.existing {
				left = append(left, name)
			}
			slices.Sort(left)
			if !slices.Equal(left, tc.left) {
				t.Errorf("claims left %v; want %v (orphans)", left, tc.left)
			}
			if (err != nil) != (len(tc.errHas) > 0) {
				t.Fatalf("err = %v; want one with %v", err, tc.errHas)
			}
			for _, s := range tc.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			// What was deleted (or gone) is forgotten; what is left is not.
			for _, f := range pl.forgot {
				if pl.existing[f] {
					t.Errorf("claim %s forgotten but still exists", f)
				}
			}
			if tc.failAt > 1 && len(pl.forgot) != tc.failAt-1-len(tc.left) {
				t.Errorf("forgot %v; want the %d deleted", pl.forgot, tc.failAt-1-len(tc.left))
			}
			for i := range pl.batches {
				if pl.batches[i] != "provreq-1" || pl.sizes[i] != tc.nodes || len(pl.pods[i]) != 1 || pl.pods[i][0] != fmt.Sprintf("ml/job-0-%d", i) {
					t.Errorf("launch %d: batch %s of %d, pods %v; want provreq-1 of %d, [ml/job-0-%d]", i, pl.batches[i], pl.sizes[i], pl.pods[i], tc.nodes, i)
				}
				if pl.covered[i] != covered[i] {
					t.Errorf("launch %d: covered %v; want the plan's %v (a covered node launches pinned)", i, pl.covered[i], covered[i])
				}
			}
		})
	}
}
