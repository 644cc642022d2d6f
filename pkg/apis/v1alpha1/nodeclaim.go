package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaim is one node the operator decided to launch: what it asked the
// cloud for and, in status, what it got. Its lifecycle shows in the
// conditions Launched (the instance exists), Registered (its Node joined),
// Initialized (the Node is Ready and its startup taints are gone) and Ready.
// Deleting a NodeClaim drains its node and terminates the instance. It is
// Karpenter's karpenter.sh/v1 NodeClaim with the same field names.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=nc,categories=rightsize
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.status.instanceType`
// +kubebuilder:printcolumn:name="Zone",type=string,JSONPath=`.status.zone`
// +kubebuilder:printcolumn:name="Capacity",type=string,JSONPath=`.status.capacityType`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.nodeName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Cost/h",type=string,JSONPath=`.status.pricePerHour`,priority=1
// +kubebuilder:printcolumn:name="ID",type=string,JSONPath=`.status.providerID`,priority=1
// +kubebuilder:printcolumn:name="NodePool",type=string,JSONPath=`.metadata.labels.rightsize\.dev/nodepool`,priority=1
type NodeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the node was asked for; it cannot change.
	// +required
	Spec NodeClaimSpec `json:"spec"`
	// Status is what was launched and how far it got.
	// +optional
	Status NodeClaimStatus `json:"status,omitempty"`
}

// NodeClaimSpec is what a node is asked for.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
type NodeClaimSpec struct {
	// Requirements restrict the instance launched: its type, zone, capacity
	// type and any other instance label.
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Requirements []NodeSelectorRequirement `json:"requirements,omitempty"`
	// Resources are the resources the node must offer: the summed requests
	// of the pods it was planned for, plus daemon overhead.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`
	// NodeClassRef names the node class the node is launched with.
	// +required
	NodeClassRef NodeClassReference `json:"nodeClassRef"`
	// Taints are put on the node.
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="taint effect must be NoSchedule, PreferNoSchedule or NoExecute"
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are put on the node at launch and expected to be removed
	// by a daemon once the node is ready; the node is Initialized when they
	// are gone.
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="taint effect must be NoSchedule, PreferNoSchedule or NoExecute"
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// ExpireAfter is how long the node may live before it is replaced, or
	// Never.
	// +kubebuilder:default="720h"
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitempty"`
	// TerminationGracePeriod bounds how long draining the node may take.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
}

// ResourceRequirements are the resources a NodeClaim asks for.
type ResourceRequirements struct {
	// Requests are the least resources the node must offer to pods.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// NodeClaimStatus is what was launched for a NodeClaim.
type NodeClaimStatus struct {
	// ProviderID is the cloud's ID of the instance, as the Node's
	// spec.providerID spells it (aws:///us-east-1a/i-0123..., sim://...).
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// NodeName is the name of the Node that registered for the instance.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ImageID is the machine image the instance was launched from.
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// Capacity is the instance's total resources.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Allocatable is what pods may request on the node: capacity less
	// system reservations and eviction thresholds.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// InstanceType is the instance type launched, e.g. m5.large. This field
	// is rightsize's own (Karpenter keeps it in a label only).
	// +optional
	InstanceType string `json:"instanceType,omitempty"`
	// Zone is the zone the instance runs in. This field is rightsize's own.
	// +optional
	Zone string `json:"zone,omitempty"`
	// CapacityType is on-demand or spot. This field is rightsize's own.
	// +optional
	CapacityType string `json:"capacityType,omitempty"`
	// PricePerHour is the instance's price in US dollars per hour when it
	// was launched, e.g. "0.096". This field is rightsize's own.
	// +optional
	PricePerHour string `json:"pricePerHour,omitempty"`
	// LastPodEventTime is when a pod was last bound to the node, or a pod
	// bound to it last finished, began terminating or was deleted: the
	// NodePool's consolidateAfter counts from it (and from the node's pods'
	// arrivals), so that the count survives operator restarts and leader
	// changes. It moves at most once every 10 seconds, so on a busy node it
	// may be up to that later than the last pod event, never earlier.
	// +optional
	LastPodEventTime *metav1.Time `json:"lastPodEventTime,omitempty"`
	// Conditions are Launched, Registered, Initialized and Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodeClaimList is a list of NodeClaims.
//
// +kubebuilder:object:root=true
type NodeClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the NodeClaims.
	Items []NodeClaim `json:"items"`
}
