// Package v1 holds the wire format of the upstream ProvisioningRequest API
// (autoscaling.x-k8s.io/v1), as Cluster Autoscaler reads it and Kueue
// writes it (its ProvisioningRequestConfig admission check): a namespaced
// object asking an autoscaler whether a gang of pods, described by
// PodTemplates and counts, fits the cluster (check-capacity), or to launch
// the nodes for all of them or none (best-effort-atomic-scale-up).
//
// These are our own small types for the fields we read and write, written
// from the upstream definition in kubernetes/autoscaler,
// cluster-autoscaler/apis/provisioningrequest/autoscaling.x-k8s.io/v1/types.go,
// rather than that module, whose dependency tree is Cluster Autoscaler's.
// The CRD in config/crd is generated from these markers (`go generate` here,
// or `make generate`) for clusters and test planes that do not have it yet;
// a cluster with Cluster Autoscaler's or Kueue's CRD serves the same schema.
//
// +kubebuilder:object:generate=true
// +groupName=autoscaling.x-k8s.io
package v1

//go:generate go tool controller-gen object paths=. crd:crdVersions=v1 output:crd:artifacts:config=../../../../config/crd
