package disruption

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// Drifted returns why a node no longer matches its NodePool (node class,
// requirements, labels or taints changed since it launched) or its node
// class (the claim's Drifted condition), or "": the drift this package
// replaces dynamic nodes for, which the static NodePool controller
// replaces static nodes for.
func Drifted(node *corev1.Node, claim *v1alpha1.NodeClaim, np *v1alpha1.NodePool) string {
	return drifted(node, claim, np)
}

// Expired returns why a NodeClaim has outlived its expireAfter, or "".
func Expired(claim *v1alpha1.NodeClaim, now time.Time) string {
	return expired(claim, now)
}
