package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of every kind in this package.
const Group = "rightsize.dev"

// SchemeGroupVersion is the group and version of this package's kinds.
var SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1alpha1"}

// GroupVersion is SchemeGroupVersion, under the name controller-runtime uses.
var GroupVersion = SchemeGroupVersion

var (
	// SchemeBuilder registers this package's kinds with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this package's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource returns the group-qualified resource for an unqualified one
// ("nodepools" -> nodepools.rightsize.dev).
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&NodePool{}, &NodePoolList{},
		&NodeClaim{}, &NodeClaimList{},
		&EC2NodeClass{}, &EC2NodeClassList{},
		&SimNodeClass{}, &SimNodeClassList{},
		&Commitment{}, &CommitmentList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
