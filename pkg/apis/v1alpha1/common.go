package v1alpha1

import (
	"fmt"
	"maps"
	"time"
)

// Labels on the nodes the operator launches.
const (
	// LabelNodePool names the NodePool a node was launched for. The operator
	// sets it on every NodeClaim and node; a NodePool's template may not.
	LabelNodePool = Group + "/nodepool"
	// LabelNodeClass names the node class (EC2NodeClass, SimNodeClass) a node
	// was launched with.
	LabelNodeClass = Group + "/nodeclass"
	// KarpenterLabelNodePool is Karpenter's name for LabelNodePool. The
	// operator sets it too, to the same value, so that workloads written for
	// Karpenter (nodeSelector karpenter.sh/nodepool: NAME) keep scheduling on
	// the pool of the same name; a NodePool's template may not set it.
	KarpenterLabelNodePool = "karpenter.sh/nodepool"
	// KarpenterLabelProvisionerName is the label Karpenter's v1alpha5
	// Provisioners put on their nodes. It is an ordinary template label here:
	// `kubectl rightsize import` adds it to the template of a NodePool
	// converted from a Provisioner, so that workloads selecting it keep
	// scheduling.
	KarpenterLabelProvisionerName = "karpenter.sh/provisioner-name"
	// LabelCapacityType is the capacity type (on-demand or spot) of a node,
	// under the key Karpenter uses, so requirements carry over unchanged.
	LabelCapacityType = "karpenter.sh/capacity-type"
)

// Capacity types, the values of LabelCapacityType.
const (
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeSpot     = "spot"
)

// Condition types.
const (
	// ConditionReady is True when the object is usable: a NodePool whose node
	// class is ready, a node class whose cloud resources resolved, a
	// NodeClaim whose node is Initialized.
	ConditionReady = "Ready"
	// ConditionLaunched is True once the cloud instance of a NodeClaim exists.
	ConditionLaunched = "Launched"
	// ConditionRegistered is True once a Node with the NodeClaim's providerID
	// joined the cluster.
	ConditionRegistered = "Registered"
	// ConditionInitialized is True once the Node is Ready and its startup
	// taints are gone.
	ConditionInitialized = "Initialized"
	// ConditionDrifted is True, with the reason as its message, on a
	// launched NodeClaim whose instance no longer matches its node class:
	// the class's launch settings changed since the launch (static drift,
	// found by AnnotationNodeClassHash) or what its selectors resolve to
	// no longer includes the instance's image, subnet or security groups
	// (dynamic drift). The disruption controller replaces such nodes
	// within the budgets for reason Drifted. The condition is absent when
	// the claim has not drifted.
	ConditionDrifted = "Drifted"
)

// Annotations the cloud providers put on the NodeClaims they launch.
const (
	// AnnotationNodeClassHash is a hash of the node class's static launch
	// settings (those not resolved from selector terms) when the NodeClaim
	// was launched. A claim whose hash differs from its class's current
	// one has drifted; a claim without it (launched before hashes existed)
	// never drifts by hash.
	AnnotationNodeClassHash = Group + "/nodeclass-hash"
	// AnnotationNodeClassHashVersion is the version of the hashing that
	// made AnnotationNodeClassHash. Hashes of another version are not
	// compared, so that a change to what is hashed does not drift every
	// node at once.
	AnnotationNodeClassHashVersion = Group + "/nodeclass-hash-version"
)

// AnnotationDeletionReason records on a NodeClaim why the operator (or
// one of its cloud controllers, such as AWS interruption handling) deleted
// it, a DeletionReason: it decides how the node drains (see
// DeletionReason.Graceful) and labels the metrics and events of its
// termination.
const AnnotationDeletionReason = Group + "/deletion-reason"

// TerminationFinalizer keeps a NodeClaim until its node is drained and its
// instance terminated.
const TerminationFinalizer = Group + "/termination"

// Annotations the provisioner (and kubectl rightsize tui, which builds its
// claims the same way) puts on the NodeClaims it creates.
const (
	// AnnotationReason is the solver's one-sentence reason for the node.
	AnnotationReason = Group + "/reason"
	// AnnotationPlannedPods is the number of pods the node was planned for.
	AnnotationPlannedPods = Group + "/planned-pods"
	// AnnotationNominatedPods lists the pods (namespace/name, comma
	// separated, sorted) the provisioner nominated to the claim's node and
	// still holds there: the claim's committed capacity, which an operator
	// restarted while the claim is in flight reads back instead of
	// planning those pods again.
	AnnotationNominatedPods = Group + "/nominated-pods"
	// AnnotationBatch names the provisioning decision that created the
	// claim, and AnnotationBatchSize counts the claims it created: the
	// lifecycle controller opens the nodes of one decision together, so that
	// the scheduler places the pods as the plan packed them.
	AnnotationBatch     = Group + "/batch"
	AnnotationBatchSize = Group + "/batch-size"
	// AnnotationLaunchedBy records who created a claim from kubectl
	// rightsize tui.
	AnnotationLaunchedBy = Group + "/launched-by"
	// AnnotationLaunchedDirectly marks an instance launched without the
	// operator, by kubectl rightsize tui --cloud, that no NodeClaim object
	// records; its value names the cloud. The cloud providers record it on
	// the instance (a tag, a node annotation) so that the operator's garbage
	// collector adopts such an instance instead of terminating it.
	AnnotationLaunchedDirectly = Group + "/launched-directly"
	// AnnotationPriceOverlayApplied marks a NodeClaim whose instance
	// types are listed by prices a Karpenter NodeOverlay changed: the
	// cloud launches the first listed offering that has capacity rather
	// than its own cheapest (cloud.AnnotationPriceOverlayApplied).
	AnnotationPriceOverlayApplied = Group + "/price-overlay-applied"
)

// Annotations users put on pods and nodes.
const (
	// KarpenterAnnotationDoNotDisrupt "true" on a pod or node keeps
	// consolidation away from the node, as in Karpenter.
	KarpenterAnnotationDoNotDisrupt = "karpenter.sh/do-not-disrupt"
	// AnnotationDoNotDisrupt is rightsize.dev's name for
	// KarpenterAnnotationDoNotDisrupt; either one is honoured.
	AnnotationDoNotDisrupt = Group + "/do-not-disrupt"
)

// TaintKeyUnregistered is the taint every cloud provider puts on a node at
// launch (a kubelet registers with it). It keeps pods off the node until
// the operator has matched the node to its NodeClaim, copied the claim's
// labels and taints onto it and removed this taint. Karpenter's is
// karpenter.sh/unregistered.
const TaintKeyUnregistered = Group + "/unregistered"

// TaintKeyDisrupted is the NoSchedule taint the disruption controller puts
// on the nodes an action is about to drain: it keeps new pods off them
// while the action runs, and goes again when the action is rolled back.
// Karpenter's is karpenter.sh/disrupted.
const TaintKeyDisrupted = Group + "/disrupted"

// NodeSelectorRequirement is a label requirement on the nodes of a pool or
// claim, as in a pod's node affinity, with Karpenter's minValues.
//
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['In', 'NotIn']) || (has(self.values) && size(self.values) > 0)",message="operators In and NotIn need at least one value",fieldPath=".values"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || size(self.values) == 0",message="operators Exists and DoesNotExist take no values",fieldPath=".values"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Gt', 'Lt']) || (has(self.values) && size(self.values) == 1 && self.values[0].matches('^[0-9]+$'))",message="operators Gt and Lt take a single non-negative integer value",fieldPath=".values"
// +kubebuilder:validation:XValidation:rule="!(has(self.minValues) && self.operator == 'In') || (has(self.values) && size(self.values) >= self.minValues)",message="minValues must not exceed the number of values",fieldPath=".minValues"
type NodeSelectorRequirement struct {
	// Key is the label key, e.g. node.kubernetes.io/instance-type or
	// karpenter.sh/capacity-type.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^(([a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)(\.[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	Key string `json:"key"`
	// Operator is how the key's value is matched: In, NotIn, Exists,
	// DoesNotExist, Gt or Lt.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt
	Operator NodeSelectorOperator `json:"operator"`
	// Values are the label values for In and NotIn, or the single integer
	// for Gt and Lt; empty for Exists and DoesNotExist.
	// +kubebuilder:validation:MaxItems=500
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	Values []string `json:"values,omitempty"`
	// MinValues is the least number of distinct values of the key that the
	// instance types considered must span (Karpenter's flexibility floor,
	// e.g. at least 5 instance families for spot).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	// +optional
	MinValues *int `json:"minValues,omitempty"`
}

// NodeSelectorOperator is the operator of a NodeSelectorRequirement.
type NodeSelectorOperator string

// Operators of a NodeSelectorRequirement.
const (
	NodeSelectorOpIn           NodeSelectorOperator = "In"
	NodeSelectorOpNotIn        NodeSelectorOperator = "NotIn"
	NodeSelectorOpExists       NodeSelectorOperator = "Exists"
	NodeSelectorOpDoesNotExist NodeSelectorOperator = "DoesNotExist"
	NodeSelectorOpGt           NodeSelectorOperator = "Gt"
	NodeSelectorOpLt           NodeSelectorOperator = "Lt"
)

// NodeClassReference names the node class (EC2NodeClass or SimNodeClass)
// whose cloud settings nodes are launched with.
type NodeClassReference struct {
	// Group is the API group of the node class; only rightsize.dev is read.
	// +kubebuilder:default=rightsize.dev
	// +kubebuilder:validation:Enum=rightsize.dev
	// +optional
	Group string `json:"group,omitempty"`
	// Kind is the kind of the node class: EC2NodeClass or SimNodeClass.
	// +kubebuilder:validation:Enum=EC2NodeClass;SimNodeClass
	Kind string `json:"kind"`
	// Name is the name of the node class.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// NillableDuration is a duration such as 30s, 5m, 1h30m or 720h, or Never.
// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
type NillableDuration string

// Never is the NillableDuration that never elapses.
const Never NillableDuration = "Never"

// Duration returns d as a time.Duration; ok is false for Never and for the
// empty duration.
func (d NillableDuration) Duration() (_ time.Duration, ok bool, _ error) {
	if d == "" || d == Never {
		return 0, false, nil
	}
	v, err := time.ParseDuration(string(d))
	if err != nil {
		return 0, false, fmt.Errorf("invalid duration %q: %w", string(d), err)
	}
	return v, true, nil
}

// NodeLabels returns the labels every node of the pool carries: the
// template's labels plus LabelNodePool and KarpenterLabelNodePool set to the
// pool's name.
func (np *NodePool) NodeLabels() map[string]string {
	labels := make(map[string]string, len(np.Spec.Template.Labels)+2)
	maps.Copy(labels, np.Spec.Template.Labels)
	labels[LabelNodePool] = np.Name
	labels[KarpenterLabelNodePool] = np.Name
	return labels
}

// OperatorLeaseName is the default name of the leader-election Lease the
// operator's replicas compete for; the TUI reads it to tell whether an
// operator runs.
const OperatorLeaseName = "rightsize-operator"
