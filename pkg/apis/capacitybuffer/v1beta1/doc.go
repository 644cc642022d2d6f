// Package v1beta1 holds the wire format of the upstream CapacityBuffer API
// (autoscaling.x-k8s.io/v1beta1), as Cluster Autoscaler and Karpenter read
// it: a namespaced object asking an autoscaler to keep room for N copies of a
// pod that is never created.
//
// These are our own small types for the fields we read and write, written
// from the upstream definition in kubernetes/autoscaler,
// cluster-autoscaler/apis/capacitybuffer/autoscaling.x-k8s.io/v1beta1/types.go,
// rather than that module, whose dependency tree is Cluster Autoscaler's.
// The CRD in config/crd is generated from these markers (`go generate` here,
// or `make generate`) for clusters and test planes that do not have it yet;
// a cluster with Cluster Autoscaler's CRD serves the same schema.
//
// +kubebuilder:object:generate=true
// +groupName=autoscaling.x-k8s.io
package v1beta1

//go:generate go tool controller-gen object paths=. crd:crdVersions=v1 output:crd:artifacts:config=../../../../config/crd
