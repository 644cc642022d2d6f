// Package v1alpha1 holds the rightsize.dev/v1alpha1 API: the custom resources
// the operator reads and writes (NodePool, NodeClaim, EC2NodeClass,
// SimNodeClass) and the Commitments the planner spends.
//
// Field names follow Karpenter v1 (karpenter.sh/v1 and karpenter.k8s.aws/v1)
// so that a Karpenter user reads them without a manual; where this API adds a
// field (NodePool spec.disruption.minSaving, NodeClaim status.instanceType,
// ...) its doc comment says so. `kubectl rightsize import` converts Karpenter
// manifests into these types.
//
// The CRD manifests in config/crd and zz_generated.deepcopy.go are generated
// from the markers in this package by controller-gen (`go generate` here, or
// `make generate`); the API server enforces the validation markers, including
// the CEL rules (x-kubernetes-validations), so bad objects are refused with a
// message that names the field.
//
// +kubebuilder:object:generate=true
// +groupName=rightsize.dev
package v1alpha1

//go:generate go tool controller-gen object paths=. crd:crdVersions=v1 output:crd:artifacts:config=../../../config/crd
