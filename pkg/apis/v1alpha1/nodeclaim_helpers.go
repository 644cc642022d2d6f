package v1alpha1

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SetCondition sets one of the claim's conditions, observed at its
// generation; it reports whether anything changed. The operator's
// controllers and the TUI's direct launcher share it.
func (c *NodeClaim) SetCondition(condition string, status metav1.ConditionStatus, reason, message string) bool {
	return meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{
		Type: condition, Status: status, Reason: reason, Message: message, ObservedGeneration: c.Generation,
	})
}

// ApplyToNode puts the claim's labels and taints on its registered node,
// and, when owned, an owner reference to the claim, so that deleting the
// claim's object collects the Node. It changes node in place.
func (c *NodeClaim) ApplyToNode(node *corev1.Node, owned bool) {
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	for k, v := range c.Labels {
		node.Labels[k] = v
	}
	for _, t := range c.Spec.Taints {
		if !slices.ContainsFunc(node.Spec.Taints, func(n corev1.Taint) bool { return n.MatchTaint(&t) }) {
			node.Spec.Taints = append(node.Spec.Taints, t)
		}
	}
	if owned && c.UID != "" && !slices.ContainsFunc(node.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == c.UID }) {
		node.OwnerReferences = append(node.OwnerReferences, metav1.OwnerReference{
			APIVersion: SchemeGroupVersion.String(), Kind: "NodeClaim", Name: c.Name, UID: c.UID,
		})
	}
}

// UsableOn reports whether the claim's registered node could take pods
// but for the unregistered taint: Ready, and no not-ready, unreachable or
// startup taint left.
func (c *NodeClaim) UsableOn(node *corev1.Node) bool {
	ready := false
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			ready = cond.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		return false
	}
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable ||
			slices.ContainsFunc(c.Spec.StartupTaints, func(s corev1.Taint) bool { return s.MatchTaint(&t) }) {
			return false
		}
	}
	return true
}
