package v1alpha1

import (
	"maps"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaimOptions is what a NodeClaim of a pool is pinned to and asks for: the
// offering planned (or, for an adopted instance, launched) and the
// resources its pods request.
//
// +kubebuilder:object:generate=false
type NodeClaimOptions struct {
	// InstanceType, Zone and CapacityType pin the claim to one offering;
	// each one empty is left to the pool's requirements.
	InstanceType, Zone, CapacityType string
	// InstanceTypes, Zones and CapacityTypes, when set, are every value a
	// flexible launch may use (the cloud chooses among them, as EC2 does
	// among a fleet's overrides), the planned one first; each replaces the
	// single pin above. Readers of a claim that has not launched yet take
	// the first value as the planned one.
	InstanceTypes, Zones, CapacityTypes []string
	// Requests are the resources the node must offer.
	Requests corev1.ResourceList
	// Labels are added to the pool's node labels where those do not set the
	// key (the instance's own labels, for an adopted instance);
	// kubernetes.io/hostname is never taken.
	Labels map[string]string
	// Annotations are added over the template's annotations
	// (AnnotationReason, AnnotationPlannedPods, AnnotationBatch, ...).
	Annotations map[string]string
}

// NewNodeClaim returns the NodeClaim of a node of the pool, as every
// creator of NodeClaims builds it (the operator's provisioner and its
// disruption replacements, garbage collection adopting an instance,
// kubectl rightsize tui launching one): the pool's node labels, LabelNodeClass
// and the template's annotations; the template's requirements narrowed to
// the launch's instance type, zone and capacity type; the launch's
// requests; the template's node class, taints, startup taints, expiry and
// termination grace period; owned by the pool when it exists (has a UID).
// The name is left to the caller.
func (np *NodePool) NewNodeClaim(l NodeClaimOptions) *NodeClaim {
	t := &np.Spec.Template
	labels := np.NodeLabels()
	if t.Spec.NodeClassRef.Name != "" {
		labels[LabelNodeClass] = t.Spec.NodeClassRef.Name
	}
	for k, v := range l.Labels {
		if _, ok := labels[k]; !ok && !strings.HasPrefix(k, corev1.LabelHostname) {
			labels[k] = v
		}
	}
	annotations := make(map[string]string, len(t.Annotations)+len(l.Annotations))
	maps.Copy(annotations, t.Annotations)
	maps.Copy(annotations, l.Annotations)
	reqs := slices.Clone(t.Spec.Requirements)
	for _, pin := range []struct {
		key    string
		value  string
		values []string
	}{
		{corev1.LabelInstanceTypeStable, l.InstanceType, l.InstanceTypes},
		{corev1.LabelTopologyZone, l.Zone, l.Zones},
		{LabelCapacityType, l.CapacityType, l.CapacityTypes},
	} {
		values := slices.Clone(pin.values)
		if len(values) == 0 && pin.value != "" {
			values = []string{pin.value}
		}
		if len(values) > 0 {
			reqs = append(reqs, NodeSelectorRequirement{Key: pin.key, Operator: NodeSelectorOpIn, Values: values})
		}
	}
	claim := &NodeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: "NodeClaim"},
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
		Spec: NodeClaimSpec{
			Requirements:           reqs,
			Resources:              ResourceRequirements{Requests: l.Requests},
			NodeClassRef:           t.Spec.NodeClassRef,
			Taints:                 t.Spec.Taints,
			StartupTaints:          t.Spec.StartupTaints,
			ExpireAfter:            t.Spec.ExpireAfter,
			TerminationGracePeriod: t.Spec.TerminationGracePeriod,
		},
	}
	if np.UID != "" {
		yes := true
		claim.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: SchemeGroupVersion.String(), Kind: "NodePool", Name: np.Name, UID: np.UID, BlockOwnerDeletion: &yes,
		}}
	}
	return claim
}

// ApplyToNode puts the claim's labels and taints on its registered node,
// and, when owned, an owner reference to the claim, so that deleting the
// claim's object collects the Node. It changes node in place.
func (nc *NodeClaim) ApplyToNode(node *corev1.Node, owned bool) {
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	maps.Copy(node.Labels, nc.Labels)
	for _, t := range nc.Spec.Taints {
		if !slices.ContainsFunc(node.Spec.Taints, func(n corev1.Taint) bool { return n.MatchTaint(&t) }) {
			node.Spec.Taints = append(node.Spec.Taints, t)
		}
	}
	if owned && nc.UID != "" && !slices.ContainsFunc(node.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == nc.UID }) {
		node.OwnerReferences = append(node.OwnerReferences, metav1.OwnerReference{
			APIVersion: SchemeGroupVersion.String(), Kind: "NodeClaim", Name: nc.Name, UID: nc.UID,
		})
	}
}

// ListedAt is where the claim's last In requirement on key lists v, the
// order a prioritized launch takes its values in; math.MaxInt when it does
// not list it.
func (nc *NodeClaim) ListedAt(key, v string) int {
	for _, r := range slices.Backward(nc.Spec.Requirements) {
		if r.Key == key && r.Operator == NodeSelectorOpIn {
			if i := slices.Index(r.Values, v); i >= 0 {
				return i
			}
			break
		}
	}
	return math.MaxInt
}

// Usable reports whether the claim's registered node could take pods but
// for the unregistered taint: Ready, and no not-ready, unreachable or
// startup taint left.
func (nc *NodeClaim) Usable(node *corev1.Node) bool {
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
			slices.ContainsFunc(nc.Spec.StartupTaints, func(s corev1.Taint) bool { return s.MatchTaint(&t) }) {
			return false
		}
	}
	return true
}
