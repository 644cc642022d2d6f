// Package nodeclaim holds what the NodeClaim controllers share: field
// indexes and the watches built on them, and the claim's price. The
// NodeClaim's vocabulary (labels, annotations, finalizer, deletion reasons,
// condition transitions) and its one builder are in pkg/apis/v1alpha1. The controllers live in its
// subpackages, one per concern.
package nodeclaim

import (
	"context"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// Field indexes registered by the operator.
const (
	// IndexClaimProviderID indexes NodeClaims by status.providerID.
	IndexClaimProviderID = "status.providerID"
	// IndexNodeProviderID indexes Nodes by spec.providerID.
	IndexNodeProviderID = "spec.providerID"
)

// SetupIndexes registers the field indexes the controllers use.
func SetupIndexes(ctx context.Context, idx client.FieldIndexer) error {
	if err := idx.IndexField(ctx, &v1alpha1.NodeClaim{}, IndexClaimProviderID, func(o client.Object) []string {
		if id := o.(*v1alpha1.NodeClaim).Status.ProviderID; id != "" {
			return []string{id}
		}
		return nil
	}); err != nil {
		return err
	}
	return idx.IndexField(ctx, &corev1.Node{}, IndexNodeProviderID, func(o client.Object) []string {
		if id := o.(*corev1.Node).Spec.ProviderID; id != "" {
			return []string{id}
		}
		return nil
	})
}

// IsTrue reports whether the claim's condition is True; it is
// claim.IsTrue, kept for the callers outside the nodeclaim controllers.
func IsTrue(claim *v1alpha1.NodeClaim, condition string) bool {
	return claim.IsTrue(condition)
}

// TransitionTime returns when the condition last changed, or zero; it is
// claim.TransitionTime, kept for the callers outside the nodeclaim
// controllers.
func TransitionTime(claim *v1alpha1.NodeClaim, condition string) time.Time {
	return claim.TransitionTime(condition)
}

// Price returns the claim's hourly price, 0 when unknown.
func Price(claim *v1alpha1.NodeClaim) float64 {
	p, err := strconv.ParseFloat(claim.Status.PricePerHour, 64)
	if err != nil {
		return 0
	}
	return p
}

// Pool returns the name of the NodePool the claim belongs to; it is
// claim.NodePool, kept for the callers outside the nodeclaim controllers.
func Pool(claim *v1alpha1.NodeClaim) string {
	return claim.NodePool()
}
