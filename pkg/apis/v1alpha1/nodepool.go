package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePool describes a kind of node the operator may launch for pending pods:
// the labels, taints and requirements of its nodes, the node class they are
// launched with, how much the pool may grow and how its nodes may be
// disrupted. It is Karpenter's karpenter.sh/v1 NodePool with the same field
// names.
//
// Every node of a pool carries the labels rightsize.dev/nodepool and
// karpenter.sh/nodepool set to the pool's name, so workloads that select
// Karpenter's label keep scheduling.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=np,categories=rightsize
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodes`
// +kubebuilder:printcolumn:name="CPU",type=string,JSONPath=`.status.resources.cpu`
// +kubebuilder:printcolumn:name="Memory",type=string,JSONPath=`.status.resources.memory`
// +kubebuilder:printcolumn:name="Cost/h",type=string,JSONPath=`.status.costPerHour`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="NodeClass",type=string,JSONPath=`.spec.template.spec.nodeClassRef.name`,priority=1
// +kubebuilder:printcolumn:name="Weight",type=integer,JSONPath=`.spec.weight`,priority=1
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the pool's desired shape.
	// +required
	Spec NodePoolSpec `json:"spec"`
	// Status is what the operator observed of the pool's nodes.
	// +optional
	Status NodePoolStatus `json:"status,omitempty"`
}

// NodePoolSpec is the desired shape of a pool.
//
// As Karpenter v1.15 (kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go):
// a pool cannot change between static and dynamic, and a static pool has no
// weight and no limit but limits.nodes.
//
// +kubebuilder:validation:XValidation:rule="has(self.replicas) == has(oldSelf.replicas)",message="a NodePool cannot change between static (spec.replicas set) and dynamic (spec.replicas unset)"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.limits) || size(self.limits) == 0 || (size(self.limits) == 1 && 'nodes' in self.limits)",message="only limits.nodes is allowed on a static NodePool (spec.replicas set)"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.weight)",message="weight is not allowed on a static NodePool (spec.replicas set)"
type NodePoolSpec struct {
	// Template describes the NodeClaims, and so the nodes, that the pool
	// creates.
	// +required
	Template NodeClaimTemplate `json:"template"`
	// Disruption says when the pool's nodes may be consolidated away and how
	// many at a time.
	// +kubebuilder:default={consolidateAfter: "0s"}
	// +optional
	Disruption Disruption `json:"disruption,omitempty"`
	// Limits caps the total resources (cpu, memory, nvidia.com/gpu, ...) of
	// the pool's nodes, counted by capacity, and with nodes the number of
	// the pool's nodes (Karpenter's limits.nodes); no node is launched that
	// would exceed them. Unset means no limit.
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:rule="self.all(r, !string(self[r]).startsWith('-'))",message="limits must not be negative"
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`
	// Weight orders pools: pools with a higher weight are tried first.
	// Unset means the lowest priority.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`
	// Replicas makes the pool static (Karpenter v1.15's static capacity):
	// the operator keeps exactly this many of the pool's nodes, each of
	// the cheapest offering the pool's requirements allow, replaces one that
	// is lost and removes the surplus when it is lowered, within
	// limits.nodes. Pending pods may schedule onto a static pool's nodes but
	// never make it grow, and its nodes are not consolidated (drift and
	// expiry still replace them); disruption.consolidationPolicy and
	// consolidateAfter are ignored. Unset means a dynamic pool.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int64 `json:"replicas,omitempty"`
}

// Static reports whether the pool keeps a fixed count of nodes
// (spec.replicas set).
func (np *NodePool) Static() bool { return np.Spec.Replicas != nil }

// NodeClaimTemplate is the template of a pool's NodeClaims.
type NodeClaimTemplate struct {
	// ObjectMeta holds the labels and annotations of the pool's nodes.
	// +optional
	ObjectMeta `json:"metadata,omitempty"`
	// Spec is the spec of the pool's NodeClaims.
	// +required
	Spec NodeClaimTemplateSpec `json:"spec"`
}

// ObjectMeta is the part of a node's metadata a template sets.
type ObjectMeta struct {
	// Labels are added to every node of the pool. The operator adds
	// rightsize.dev/nodepool and karpenter.sh/nodepool itself; they may not
	// be set here.
	// +kubebuilder:validation:MaxProperties=100
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['rightsize.dev/nodepool', 'karpenter.sh/nodepool', 'kubernetes.io/hostname']))",message="labels rightsize.dev/nodepool, karpenter.sh/nodepool and kubernetes.io/hostname are set by the operator"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are added to every node of the pool.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NodeClaimTemplateSpec is what a pool's NodeClaims ask for.
type NodeClaimTemplateSpec struct {
	// Requirements restrict the nodes the pool may launch: instance types,
	// zones, capacity types, architectures, any instance label. Each is ANDed.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.all(r, !(r.key in ['rightsize.dev/nodepool', 'karpenter.sh/nodepool', 'kubernetes.io/hostname']))",message="requirements on rightsize.dev/nodepool, karpenter.sh/nodepool and kubernetes.io/hostname are not allowed"
	// +optional
	Requirements []NodeSelectorRequirement `json:"requirements,omitempty"`
	// NodeClassRef names the node class the nodes are launched with.
	// +required
	NodeClassRef NodeClassReference `json:"nodeClassRef"`
	// Taints are put on every node of the pool; only pods that tolerate them
	// are planned onto the pool.
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="taint effect must be NoSchedule, PreferNoSchedule or NoExecute"
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are put on every node at launch and expected to be
	// removed by a daemon (e.g. a CNI agent) once the node is ready; pods need
	// not tolerate them.
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="taint effect must be NoSchedule, PreferNoSchedule or NoExecute"
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// ExpireAfter is how long a node may live before it is replaced, or
	// Never.
	// +kubebuilder:default="720h"
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitempty"`
	// TerminationGracePeriod bounds how long draining a node may take before
	// its pods are deleted regardless of PodDisruptionBudgets. Unset means no
	// bound.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
}

// Disruption controls consolidation: replacing or removing nodes to save
// money.
type Disruption struct {
	// ConsolidationPolicy says which nodes may be consolidated:
	// WhenEmpty only nodes without workload pods, WhenEmptyOrUnderutilized
	// also nodes whose pods fit elsewhere or on a cheaper node, Balanced
	// those too but only when the saving is worth the disruption
	// (Karpenter v1.14's scoring).
	// +kubebuilder:default=WhenEmptyOrUnderutilized
	// +kubebuilder:validation:Enum=WhenEmpty;WhenEmptyOrUnderutilized;Balanced
	// +optional
	ConsolidationPolicy ConsolidationPolicy `json:"consolidationPolicy,omitempty"`
	// ConsolidateAfter is how long a node must have gone without a pod
	// arriving or leaving before it may be consolidated, or Never.
	// +kubebuilder:default="0s"
	// +optional
	ConsolidateAfter NillableDuration `json:"consolidateAfter,omitempty"`
	// Budgets cap how many of the pool's nodes may be disrupted at once; the
	// most restrictive active budget applies. Unset means 10% of the nodes.
	// +kubebuilder:default={{nodes: "10%"}}
	// +kubebuilder:validation:MaxItems=50
	// +optional
	Budgets []Budget `json:"budgets,omitempty"`
	// MinSaving is how much a consolidation must save for it to be worth
	// disrupting pods. This field is rightsize's own; Karpenter has none.
	// Unset means $0.01/h plus $0.001/h per evicted pod, and a replacement
	// or merge that evicts pods must also save 10% of the price of the
	// nodes it removes, so that a replacement worth pennies never evicts
	// pods; perHour "0" means any saving counts, as in Karpenter. Deleting
	// an empty node is never held back by it.
	// +optional
	MinSaving *MinSaving `json:"minSaving,omitempty"`
}

// ConsolidationPolicy is the value of Disruption.ConsolidationPolicy.
type ConsolidationPolicy string

// Consolidation policies.
const (
	ConsolidationPolicyWhenEmpty                ConsolidationPolicy = "WhenEmpty"
	ConsolidationPolicyWhenEmptyOrUnderutilized ConsolidationPolicy = "WhenEmptyOrUnderutilized"
	// ConsolidationPolicyBalanced consolidates as WhenEmptyOrUnderutilized
	// but takes an action only when its share of the pool's saving is at
	// least half its share of the pool's disruption, as Karpenter v1.14.
	ConsolidationPolicyBalanced ConsolidationPolicy = "Balanced"
)

// Budget caps the number of a pool's nodes disrupted at once, always or
// during a recurring window.
//
// +kubebuilder:validation:XValidation:rule="!has(self.schedule) || has(self.duration)",message="a budget with a schedule needs a duration",fieldPath=".duration"
// +kubebuilder:validation:XValidation:rule="!has(self.duration) || has(self.schedule)",message="a budget with a duration needs a schedule",fieldPath=".schedule"
type Budget struct {
	// Nodes is the most nodes that may be disrupted at once while the budget
	// is active: a count ("5") or a percentage of the pool's nodes ("10%",
	// rounded up). "0" blocks disruption.
	// +kubebuilder:default="10%"
	// +kubebuilder:validation:Pattern=`^((100|[0-9]{1,2})%|[0-9]+)$`
	Nodes string `json:"nodes"`
	// Schedule is when the budget becomes active, as a cron expression in
	// UTC ("0 9 * * mon-fri") or a macro (@daily, @hourly, ...). Unset means
	// always active. A schedule needs a duration.
	// +kubebuilder:validation:Pattern=`^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$`
	// +optional
	Schedule *string `json:"schedule,omitempty"`
	// Duration is how long the budget stays active after each schedule
	// time, in hours and minutes ("1h", "1h30m"). A duration needs a
	// schedule.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$`
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
	// Reasons limits the budget to these disruption reasons; unset means all.
	// +optional
	Reasons []DisruptionReason `json:"reasons,omitempty"`
}

// DisruptionReason is why a node would be disrupted.
// +kubebuilder:validation:Enum=Underutilized;Empty;Drifted
type DisruptionReason string

// Disruption reasons.
const (
	DisruptionReasonUnderutilized DisruptionReason = "Underutilized"
	DisruptionReasonEmpty         DisruptionReason = "Empty"
	DisruptionReasonDrifted       DisruptionReason = "Drifted"
)

// MinSaving is the least saving a consolidation must bring; when both
// fields are set, both must be met.
type MinSaving struct {
	// PerHour is the least saving in US dollars per hour, as a decimal
	// string, e.g. "0.01".
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +optional
	PerHour string `json:"perHour,omitempty"`
	// Percent is the least saving as a percentage of the hourly price of the
	// nodes being replaced, e.g. 5.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Percent *int32 `json:"percent,omitempty"`
}

// NodePoolStatus is what the operator observed of a pool.
type NodePoolStatus struct {
	// Resources is the total capacity of the pool's nodes, the amounts
	// checked against spec.limits.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Nodes is the number of the pool's NodeClaims that are not being
	// deleted.
	// +optional
	Nodes int64 `json:"nodes,omitempty"`
	// CostPerHour is the summed price of the pool's nodes in US dollars per
	// hour, e.g. "1.234". This field is rightsize's own.
	// +optional
	CostPerHour string `json:"costPerHour,omitempty"`
	// Conditions are the pool's conditions; Ready is True when the pool can
	// launch nodes.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodePoolList is a list of NodePools.
//
// +kubebuilder:object:root=true
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the NodePools.
	Items []NodePool `json:"items"`
}
