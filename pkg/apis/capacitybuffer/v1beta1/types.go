package v1beta1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemeGroupVersion is the upstream group and version these types speak.
var SchemeGroupVersion = schema.GroupVersion{Group: "autoscaling.x-k8s.io", Version: "v1beta1"}

// AddToScheme registers CapacityBuffer and CapacityBufferList.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &CapacityBuffer{}, &CapacityBufferList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// ActiveCapacity is the default provisioning strategy: the autoscaler keeps
// room for the buffer's pods on nodes, as if they were pending. It is the
// only strategy planned; a buffer with another is left alone.
const ActiveCapacity = "buffer.x-k8s.io/active-capacity"

// Condition types and reasons written to a buffer's status.
const (
	// ConditionReadyForProvisioning is upstream's: the buffer was read and
	// its pods are planned.
	ConditionReadyForProvisioning = "ReadyForProvisioning"
	// ConditionProvisioning is upstream's: room for every pod of the
	// buffer exists or is launching.
	ConditionProvisioning = "Provisioning"
)

// CapacityBuffer asks for room for Replicas copies of a pod (its PodTemplate,
// or the pod of a scalable workload) that is never created.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=capacitybuffers,scope=Namespaced,shortName=cb
// +kubebuilder:printcolumn:name="Strategy",type="string",JSONPath=".spec.provisioningStrategy"
// +kubebuilder:printcolumn:name="PodTemplate",type="string",JSONPath=".status.podTemplateRef.name"
// +kubebuilder:printcolumn:name="Replicas",type="integer",JSONPath=".status.replicas"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:storageversion
type CapacityBuffer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec CapacityBufferSpec `json:"spec"`
	// +optional
	Status CapacityBufferStatus `json:"status,omitempty"`
}

// LocalObjectRef names an object in the buffer's namespace.
type LocalObjectRef struct {
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// ScalableRef names a workload with a scale subresource.
type ScalableRef struct {
	// APIGroup of the workload; "" for the core group.
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`
	// Kind of the workload, e.g. Deployment.
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// Name of the workload.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// ResourceName names a resource, as corev1.ResourceName.
type ResourceName string

// ResourceList is resource quantities by name, as corev1.ResourceList.
type ResourceList map[ResourceName]resource.Quantity

// CapacityBufferSpec is what room to keep.
//
// +kubebuilder:validation:XValidation:rule="!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)",message="a buffer with podTemplateRef needs replicas or limits"
// +kubebuilder:validation:XValidation:rule="!(has(self.podTemplateRef) && has(self.scalableRef))",message="set podTemplateRef or scalableRef, not both"
type CapacityBufferSpec struct {
	// ProvisioningStrategy says how the room is kept;
	// buffer.x-k8s.io/active-capacity (the default) keeps it on nodes.
	// +kubebuilder:default="buffer.x-k8s.io/active-capacity"
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`
	// PodTemplateRef names a PodTemplate in the buffer's namespace: the
	// shape of one chunk of room.
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`
	// ScalableRef names a workload whose pod is the shape of one chunk and
	// whose replicas Percentage is taken of.
	// +optional
	ScalableRef *ScalableRef `json:"scalableRef,omitempty"`
	// Replicas is how many chunks to keep room for. With Percentage too,
	// the larger of the two.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Percentage is the chunks as a percentage of ScalableRef's replicas,
	// rounded up.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Percentage *int32 `json:"percentage,omitempty"`
	// Limits caps the chunks by their summed requests; alone, as many
	// chunks as fit in them.
	// +optional
	Limits *ResourceList `json:"limits,omitempty"`
}

// CapacityBufferStatus is what the autoscaler did.
type CapacityBufferStatus struct {
	// PodTemplateRef is the PodTemplate the chunks were made from.
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`
	// Replicas is the number of chunks planned.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// PodTemplateGeneration is the generation of the PodTemplate read.
	// +optional
	PodTemplateGeneration *int64 `json:"podTemplateGeneration,omitempty"`
	// Conditions report the buffer's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ProvisioningStrategy is the strategy in use.
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`
}

// CapacityBufferList is a list of CapacityBuffers.
//
// +kubebuilder:object:root=true
type CapacityBufferList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CapacityBuffer `json:"items"`
}
