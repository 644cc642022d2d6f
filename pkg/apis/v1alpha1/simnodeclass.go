package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SimNodeClass holds the settings of the simulated cloud: nodes "launched"
// with it are Node objects that kwok runs, priced from the embedded instance
// catalog or a file. It makes a playground of any cluster with kwok, and
// lets tests inject delays and capacity shortages.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName={simnc,simncs},categories=rightsize
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Delay",type=string,JSONPath=`.spec.registrationDelay`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SimNodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the simulated cloud's settings.
	// +optional
	Spec SimNodeClassSpec `json:"spec,omitempty"`
	// Status is the class's observed state.
	// +optional
	Status SimNodeClassStatus `json:"status,omitempty"`
}

// SimNodeClassSpec is the settings of the simulated cloud.
type SimNodeClassSpec struct {
	// RegistrationDelay is how long after a launch the simulated Node is
	// created, e.g. 30s; unset means at once.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(ms|s|m|h))+$`
	// +optional
	RegistrationDelay *metav1.Duration `json:"registrationDelay,omitempty"`
	// InstanceTypesFile is the path, in the operator's file system, of an
	// instance-type file (the format `kubectl rightsize explain
	// --instance-types` reads); unset means the embedded AWS catalog.
	// +optional
	InstanceTypesFile string `json:"instanceTypesFile,omitempty"`
	// InsufficientCapacity are offerings that launches fail for with an
	// insufficient-capacity error, as the cloud would when it runs out of a
	// type in a zone. For tests.
	// +kubebuilder:validation:MaxItems=100
	// +optional
	InsufficientCapacity []SimOffering `json:"insufficientCapacity,omitempty"`
	// Tags are recorded on the simulated instances, as an EC2NodeClass's
	// tags are on real ones.
	// +kubebuilder:validation:MaxProperties=50
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// Kubelet is the simulated nodes' kubelet configuration, as an
	// EC2NodeClass's: maxPods, podsPerCore, systemReserved, kubeReserved
	// and evictionHard set the Nodes' pod capacity and allocatable.
	// +optional
	Kubelet *KubeletConfiguration `json:"kubelet,omitempty"`
}

// SimOffering names offerings of the simulated cloud: an instance type in a
// zone, or in every zone when zone is unset.
type SimOffering struct {
	// InstanceType is the instance type, e.g. m5.large.
	// +kubebuilder:validation:MinLength=1
	InstanceType string `json:"instanceType"`
	// Zone is the zone, e.g. us-east-1a; unset means every zone.
	// +optional
	Zone string `json:"zone,omitempty"`
	// CapacityType is on-demand or spot; unset means both.
	// +kubebuilder:validation:Enum=on-demand;spot
	// +optional
	CapacityType string `json:"capacityType,omitempty"`
}

// SimNodeClassStatus is the observed state of a SimNodeClass.
type SimNodeClassStatus struct {
	// Conditions are the class's conditions; Ready is True when its instance
	// types loaded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SimNodeClassList is a list of SimNodeClasses.
//
// +kubebuilder:object:root=true
type SimNodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the SimNodeClasses.
	Items []SimNodeClass `json:"items"`
}
