package provisioningrequest

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/disruption"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Planner is the part of the provisioner (provisioning.Provisioner) the
// controller plans and launches through, so that a request is planned on
// the same snapshot as a provisioning batch and its nodes are counted as
// a batch's are.
type Planner interface {
	// SnapshotWith reads the cluster with pods that do not exist planned
	// as pending, and returns each one's index in the problem (-1 when it
	// cannot be modelled).
	SnapshotWith(ctx context.Context, pods []*corev1.Pod) (*disruption.Snapshot, []int, error)
	// LaunchGang creates the NodeClaim of one planned node of a gang;
	// covered is the share of it the Commitments cover in the gang's plan
	// (a covered node is launched on its planned offering alone).
	LaunchGang(ctx context.Context, s *disruption.Snapshot, n *solver.NewNode, pods []string, batch string, size int, covered float64) (*v1alpha1.NodeClaim, error)
	// Commitments are the Commitments a gang's plan spends, as a
	// provisioning batch spends them; a failed read is an error.
	Commitments(ctx context.Context) ([]plan.Commitment, error)
	// Forget stops counting a NodeClaim LaunchGang created and the
	// controller deleted again.
	Forget(claim string)
}

// deleter deletes a NodeClaim (the API client's Delete).
type deleter func(ctx context.Context, claim *v1alpha1.NodeClaim) error

// launchAll creates the NodeClaims of the gang's new nodes (planned on
// gangProblem q of snapshot s; covered is the share of each the
// Commitments cover, nil for none), one after the other, all
// annotated with the same batch. When one cannot be created, those created
// are deleted again, so that none is left behind, and the error says which
// failed; an error deleting one is joined to it.
func launchAll(ctx context.Context, pl Planner, del deleter, s *disruption.Snapshot, q *solver.Problem, nodes []solver.NewNode, covered []float64, batch string) ([]*v1alpha1.NodeClaim, error) {
	var created []*v1alpha1.NodeClaim
	for i := range nodes {
		n := &nodes[i]
		keys := make([]string, len(n.Pods))
		for k, pi := range n.Pods {
			keys[k] = q.Pods[pi].Key()
		}
		share := 0.0
		if i < len(covered) {
			share = covered[i]
		}
		claim, err := pl.LaunchGang(ctx, s, n, keys, batch, len(nodes), share)
		if err == nil {
			created = append(created, claim)
			continue
		}
		err = fmt.Errorf("node %d of %d (%s %s in NodePool %s) could not be created, so the %d created are deleted: %w",
			i+1, len(nodes), n.InstanceType, n.CapacityType, n.Pool, len(created), err)
		return nil, errors.Join(err, rollback(ctx, pl, del, created))
	}
	return created, nil
}

// rollback deletes the NodeClaims created for a gang that cannot have all
// its nodes; one already gone is fine.
func rollback(ctx context.Context, pl Planner, del deleter, claims []*v1alpha1.NodeClaim) error {
	var errs []error
	for _, c := range claims {
		if err := del(ctx, c); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting NodeClaim %s: %w", c.Name, err))
			continue
		}
		pl.Forget(c.Name)
	}
	return errors.Join(errs...)
}
