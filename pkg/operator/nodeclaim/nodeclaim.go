// Package nodeclaim holds what the NodeClaim controllers share: the
// finalizer, field indexes, condition helpers and the conversion of a
// NodeClaim's status to solver units. The controllers live in its
// subpackages, one per concern.
package nodeclaim

import (
	"context"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// Finalizer keeps a NodeClaim until its node is drained and its instance
// terminated.
const Finalizer = v1alpha1.Group + "/termination"

// Annotations the provisioner puts on NodeClaims.
const (
	// AnnotationReason is the solver's one-sentence reason for the node.
	AnnotationReason = v1alpha1.Group + "/reason"
	// AnnotationPods is the number of pods the node was planned for.
	AnnotationPods = v1alpha1.Group + "/planned-pods"
	// AnnotationBatch names the provisioning decision that created the
	// claim, and AnnotationBatchSize counts the claims it created: the
	// lifecycle controller opens the nodes of one decision together, so that
	// the scheduler places the pods as the plan packed them.
	AnnotationBatch     = v1alpha1.Group + "/batch"
	AnnotationBatchSize = v1alpha1.Group + "/batch-size"
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

// IsTrue reports whether the claim's condition is True.
func IsTrue(claim *v1alpha1.NodeClaim, condition string) bool {
	return meta.IsStatusConditionTrue(claim.Status.Conditions, condition)
}

// TransitionTime returns when the condition last changed, or zero.
func TransitionTime(claim *v1alpha1.NodeClaim, condition string) time.Time {
	if c := meta.FindStatusCondition(claim.Status.Conditions, condition); c != nil {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// SetCondition sets a condition; it reports whether anything changed
// (v1alpha1.NodeClaim.SetCondition).
func SetCondition(claim *v1alpha1.NodeClaim, condition string, status metav1.ConditionStatus, reason, message string) bool {
	return claim.SetCondition(condition, status, reason, message)
}

// Price returns the claim's hourly price, 0 when unknown.
func Price(claim *v1alpha1.NodeClaim) float64 {
	p, err := strconv.ParseFloat(claim.Status.PricePerHour, 64)
	if err != nil {
		return 0
	}
	return p
}

// Pool returns the name of the NodePool the claim belongs to.
func Pool(claim *v1alpha1.NodeClaim) string {
	return claim.Labels[v1alpha1.LabelNodePool]
}

// ApplyToNode puts the claim's labels and taints on its registered node
// and, when owned, an owner reference to the claim
// (v1alpha1.NodeClaim.ApplyToNode).
func ApplyToNode(claim *v1alpha1.NodeClaim, node *corev1.Node, owned bool) {
	claim.ApplyToNode(node, owned)
}

// Usable reports whether a registered claim's node could take pods but for
// the unregistered taint (v1alpha1.NodeClaim.UsableOn).
func Usable(claim *v1alpha1.NodeClaim, node *corev1.Node) bool { return claim.UsableOn(node) }

// ForPool returns a NodeClaim of the pool: owned by it, with its node
// class, taints, startup taints, expiry and termination grace period, and
// the labels, annotations and requirements given. The provisioner builds
// its claims with it, and garbage collection the claims of adopted
// instances.
func ForPool(pool *v1alpha1.NodePool, name string, labels, annotations map[string]string, reqs []v1alpha1.NodeSelectorRequirement) *v1alpha1.NodeClaim {
	t := &pool.Spec.Template
	return &v1alpha1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "NodePool", Name: pool.Name, UID: pool.UID,
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: v1alpha1.NodeClaimSpec{
			Requirements:           reqs,
			NodeClassRef:           t.Spec.NodeClassRef,
			Taints:                 t.Spec.Taints,
			StartupTaints:          t.Spec.StartupTaints,
			ExpireAfter:            t.Spec.ExpireAfter,
			TerminationGracePeriod: t.Spec.TerminationGracePeriod,
		},
	}
}
