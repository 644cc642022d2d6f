package provisioningrequest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	prv1 "github.com/rightsize-dev/kubectl-rightsize/pkg/apis/provisioningrequest/v1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// ReasonLaunching is the reason of Provisioned=False while a
// best-effort-atomic request's NodeClaims are created and their instances
// not all launched yet.
const ReasonLaunching = "Launching"

// launching returns the NodeClaims of a best-effort-atomic request whose
// instances are being launched (Provisioned=False, Launching), nil for
// any other request.
func launching(pr *prv1.ProvisioningRequest) []string {
	c := meta.FindStatusCondition(pr.Status.Conditions, prv1.ConditionProvisioned)
	if c == nil || c.Status != "False" || c.Reason != ReasonLaunching {
		return nil
	}
	listed := string(pr.Status.ProvisioningClassDetails[DetailNodeClaims])
	if listed == "" {
		return nil
	}
	return strings.Split(listed, ",")
}

// claimState is what became of one of a gang's NodeClaims.
type claimState int

const (
	claimPending  claimState = iota // created, its instance not launched yet
	claimLaunched                   // Launched=True
	claimLost                       // gone or being deleted: the lifecycle gave it up (insufficient capacity, launch timeout)
)

// stateOf reads a NodeClaim from the API server (not a cache, which may not
// show one just created) and says what became of it.
func stateOf(ctx context.Context, r client.Reader, name string) (claimState, error) {
	var claim v1alpha1.NodeClaim
	if err := r.Get(ctx, types.NamespacedName{Name: name}, &claim); err != nil {
		if apierrors.IsNotFound(err) {
			return claimLost, nil
		}
		return claimPending, fmt.Errorf("reading NodeClaim %s: %w", name, err)
	}
	switch {
	case claim.DeletionTimestamp != nil:
		return claimLost, nil
	case meta.IsStatusConditionTrue(claim.Status.Conditions, v1alpha1.ConditionLaunched):
		return claimLaunched, nil
	}
	return claimPending, nil
}

// follow checks a launching gang's NodeClaims (see checkGang) and writes
// the answer when there is one.
func (c *Controller) follow(ctx context.Context, pr *prv1.ProvisioningRequest, names []string) error {
	answer, err := checkGang(ctx, c.reader, c.planner, c.del, names)
	if err != nil || answer == nil {
		return err
	}
	c.log.Info("ProvisioningRequest answered once its NodeClaims launched or one was lost", "provisioningrequest", pr.Namespace+"/"+pr.Name,
		"nodeClaims", len(names), "condition", answer.Type, "status", answer.Status, "message", answer.Message)
	return c.writeStatus(ctx, pr, *answer, nil)
}

// checkGang says what became of a launching gang's NodeClaims: every one
// launched makes the request Provisioned; one lost (its instance could not
// be had) deletes the others, so that no node of an incomplete gang is
// left, and fails the request; otherwise there is no answer yet (nil).
func checkGang(ctx context.Context, r client.Reader, pl Planner, del deleter, names []string) (*metav1.Condition, error) {
	var lost []string
	launched := 0
	for _, name := range names {
		st, err := stateOf(ctx, r, name)
		if err != nil {
			return nil, err
		}
		switch st {
		case claimLost:
			lost = append(lost, name)
		case claimLaunched:
			launched++
		}
	}
	switch {
	case len(lost) > 0:
		var rest []*v1alpha1.NodeClaim
		for _, name := range names {
			if !slices.Contains(lost, name) {
				rest = append(rest, &v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}})
			}
		}
		if err := rollback(ctx, pl, del, rest); err != nil {
			return nil, fmt.Errorf("rolling back the gang: %w", err) // retried at the next poll
		}
		c := cond(prv1.ConditionFailed, true, ReasonLaunchFailed,
			fmt.Sprintf("NodeClaim %s could not be launched (insufficient capacity or a launch timeout), so the gang's %d other NodeClaims are deleted and none of its nodes is kept",
				strings.Join(lost, ", "), len(rest)))
		return &c, nil
	case launched == len(names):
		c := cond(prv1.ConditionProvisioned, true, ReasonCapacityProvisioned, fmt.Sprintf("all %d nodes of the gang are launched", len(names)))
		return &c, nil
	}
	return nil, nil
}
