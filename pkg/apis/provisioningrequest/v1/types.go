package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemeGroupVersion is the upstream group and version these types speak.
var SchemeGroupVersion = schema.GroupVersion{Group: "autoscaling.x-k8s.io", Version: "v1"}

// AddToScheme registers ProvisioningRequest and ProvisioningRequestList.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &ProvisioningRequest{}, &ProvisioningRequestList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// Provisioning classes the operator answers; a request of another class
// is left to whoever serves it.
const (
	// ClassCheckCapacity asks whether the gang fits the cluster's nodes
	// now; nothing is launched.
	ClassCheckCapacity = "check-capacity.autoscaling.x-k8s.io"
	// ClassBestEffortAtomicScaleUp asks for the nodes of the whole gang,
	// or none.
	ClassBestEffortAtomicScaleUp = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
)

// Condition types, upstream's.
const (
	// ConditionAccepted: the autoscaler read the request and will answer it.
	ConditionAccepted = "Accepted"
	// ConditionProvisioned: the capacity for every pod exists (True), or
	// not yet (False, retried).
	ConditionProvisioned = "Provisioned"
	// ConditionFailed: the capacity cannot be had; final.
	ConditionFailed = "Failed"
	// ConditionBookingExpired: the capacity was provisioned and its
	// booking lapsed before the pods came; final.
	ConditionBookingExpired = "BookingExpired"
	// ConditionCapacityRevoked: the capacity provisioned is gone; final.
	ConditionCapacityRevoked = "CapacityRevoked"
)

// Annotations Kueue puts on the pods that consume a request's capacity.
const (
	// PodAnnotationConsume names the ProvisioningRequest a pod consumes.
	PodAnnotationConsume = "autoscaling.x-k8s.io/consume-provisioning-request"
	// PodAnnotationClass names that request's class.
	PodAnnotationClass = "autoscaling.x-k8s.io/provisioning-class-name"
)

// Parameters of check-capacity, upstream's.
const (
	// ParameterNoRetry "true" makes a check that finds no capacity final
	// (Failed) rather than retried (Provisioned=False).
	ParameterNoRetry = "noRetry"
)

// ProvisioningRequest asks for capacity for a gang of pods: whether it fits
// now, or nodes for all of it. Its spec is immutable: a changed request is a
// new object (Kueue creates one per attempt).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=provisioningrequests,scope=Namespaced,shortName=provreq;provreqs
// +kubebuilder:printcolumn:name="Class",type="string",JSONPath=".spec.provisioningClassName"
// +kubebuilder:printcolumn:name="Provisioned",type="string",JSONPath=".status.conditions[?(@.type==\"Provisioned\")].status"
// +kubebuilder:printcolumn:name="Failed",type="string",JSONPath=".status.conditions[?(@.type==\"Failed\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:storageversion
type ProvisioningRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ProvisioningRequestSpec `json:"spec"`
	// +optional
	Status ProvisioningRequestStatus `json:"status,omitempty"`
}

// ProvisioningRequestSpec is the gang and how to provision it.
type ProvisioningRequestSpec struct {
	// PodSets are the gang's groups of identical pods.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	PodSets []PodSet `json:"podSets"`
	// ProvisioningClassName says how to provision: check-capacity.autoscaling.x-k8s.io
	// (does the gang fit now?) or best-effort-atomic-scale-up.autoscaling.x-k8s.io
	// (launch nodes for all of it or none); other classes belong to other
	// autoscalers.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:MaxLength=253
	ProvisioningClassName string `json:"provisioningClassName"`
	// Parameters are the class's options (check-capacity reads noRetry).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Value is immutable"
	// +kubebuilder:validation:MaxProperties=100
	Parameters map[string]Parameter `json:"parameters,omitempty"`
}

// Parameter is one class parameter's value.
// +kubebuilder:validation:MaxLength=255
type Parameter string

// PodSet is Count pods of one PodTemplate.
type PodSet struct {
	// PodTemplateRef names a PodTemplate in the request's namespace: the
	// pods' scheduling constraints and requests.
	PodTemplateRef Reference `json:"podTemplateRef"`
	// Count is how many such pods.
	// +kubebuilder:validation:Minimum=1
	Count int32 `json:"count"`
}

// Reference names an object in the request's namespace.
type Reference struct {
	// Name of the object.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
}

// ProvisioningRequestStatus is the autoscaler's answer.
type ProvisioningRequestStatus struct {
	// Conditions: Accepted, Provisioned, Failed, BookingExpired,
	// CapacityRevoked.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ProvisioningClassDetails are the class's own outputs (the operator
	// writes the NodeClaims it launched).
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	ProvisioningClassDetails map[string]Detail `json:"provisioningClassDetails,omitempty"`
}

// Detail is one class detail's value.
// +kubebuilder:validation:MaxLength=32768
type Detail string

// ProvisioningRequestList is a list of ProvisioningRequests.
//
// +kubebuilder:object:root=true
type ProvisioningRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProvisioningRequest `json:"items"`
}
