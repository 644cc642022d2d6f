package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubeletConfiguration is the part of the kubelet's configuration a node
// class sets on its nodes, Karpenter v1's EC2NodeClass spec.kubelet with
// the same field names. maxPods, podsPerCore, systemReserved, kubeReserved
// and evictionHard change what a node can give to pods, so the planner
// counts them; the rest only reaches the node.
//
// +kubebuilder:validation:XValidation:rule="has(self.imageGCHighThresholdPercent) && has(self.imageGCLowThresholdPercent) ? self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent : true",message="imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"
// +kubebuilder:validation:XValidation:rule="has(self.evictionSoft) ? self.evictionSoft.all(k, has(self.evictionSoftGracePeriod) && k in self.evictionSoftGracePeriod) : true",message="every evictionSoft signal needs an evictionSoftGracePeriod"
// +kubebuilder:validation:XValidation:rule="has(self.evictionSoftGracePeriod) ? self.evictionSoftGracePeriod.all(k, has(self.evictionSoft) && k in self.evictionSoft) : true",message="every evictionSoftGracePeriod signal needs an evictionSoft threshold"
type KubeletConfiguration struct {
	// ClusterDNS are the IP addresses of the cluster DNS servers the
	// node's pods use, in place of the image's default.
	// +kubebuilder:validation:MaxItems=10
	// +optional
	ClusterDNS []string `json:"clusterDNS,omitempty"`
	// MaxPods is the most pods the node runs; unset means the image's
	// default (on EKS images, the VPC CNI's ENI limit, capped at 110).
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxPods *int32 `json:"maxPods,omitempty"`
	// PodsPerCore caps pods at this many per vCPU; the smaller of it and
	// maxPods wins. Zero means no cap.
	// +kubebuilder:validation:Minimum=0
	// +optional
	PodsPerCore *int32 `json:"podsPerCore,omitempty"`
	// SystemReserved is kept for the operating system's daemons: cpu,
	// memory, ephemeral-storage and pid.
	// +kubebuilder:validation:MaxProperties=4
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['cpu', 'memory', 'ephemeral-storage', 'pid'])",message="systemReserved keys must be cpu, memory, ephemeral-storage or pid"
	// +optional
	SystemReserved map[string]ReservedQuantity `json:"systemReserved,omitempty"`
	// KubeReserved is kept for the kubelet and the container runtime:
	// cpu, memory, ephemeral-storage and pid. Unset means EKS's default
	// (see the README's node model).
	// +kubebuilder:validation:MaxProperties=4
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['cpu', 'memory', 'ephemeral-storage', 'pid'])",message="kubeReserved keys must be cpu, memory, ephemeral-storage or pid"
	// +optional
	KubeReserved map[string]ReservedQuantity `json:"kubeReserved,omitempty"`
	// EvictionHard are the thresholds at which the kubelet evicts pods at
	// once, by signal (memory.available, nodefs.available,
	// nodefs.inodesFree, imagefs.available, imagefs.inodesFree,
	// pid.available): a quantity or a percentage, e.g. 500Mi or 5%.
	// +kubebuilder:validation:MaxProperties=6
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available'])",message="evictionHard keys must be kubelet eviction signals: memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree or pid.available"
	// +optional
	EvictionHard map[string]EvictionThreshold `json:"evictionHard,omitempty"`
	// EvictionSoft are thresholds at which the kubelet evicts pods once
	// they have held for the signal's evictionSoftGracePeriod.
	// +kubebuilder:validation:MaxProperties=6
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available'])",message="evictionSoft keys must be kubelet eviction signals: memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree or pid.available"
	// +optional
	EvictionSoft map[string]EvictionThreshold `json:"evictionSoft,omitempty"`
	// EvictionSoftGracePeriod is how long each evictionSoft threshold must
	// hold before pods are evicted, e.g. 1m30s.
	// +kubebuilder:validation:MaxProperties=6
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available'])",message="evictionSoftGracePeriod keys must be kubelet eviction signals: memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree or pid.available"
	// +optional
	EvictionSoftGracePeriod map[string]metav1.Duration `json:"evictionSoftGracePeriod,omitempty"`
	// EvictionMaxPodGracePeriod is the most seconds of termination grace a
	// pod evicted for a soft threshold gets.
	// +kubebuilder:validation:Minimum=0
	// +optional
	EvictionMaxPodGracePeriod *int32 `json:"evictionMaxPodGracePeriod,omitempty"`
	// ImageGCHighThresholdPercent is the disk usage at which image garbage
	// collection always runs.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`
	// ImageGCLowThresholdPercent is the disk usage image garbage
	// collection frees down to, and below which it never runs.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ImageGCLowThresholdPercent *int32 `json:"imageGCLowThresholdPercent,omitempty"`
	// CPUCFSQuota enforces containers' CPU limits with CFS quota.
	// +optional
	CPUCFSQuota *bool `json:"cpuCFSQuota,omitempty"`
}

// ReservedQuantity is a non-negative resource quantity, e.g. 100m, 1Gi or
// 1000 (pids).
//
// +kubebuilder:validation:Pattern=`^[0-9]+([.][0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$`
// +kubebuilder:validation:MaxLength=32
type ReservedQuantity string

// EvictionThreshold is an eviction signal's threshold: a non-negative
// quantity such as 500Mi, or a percentage of capacity from 0% to 100%.
//
// +kubebuilder:validation:Pattern=`^(([0-9]{1,2}([.][0-9]+)?|100([.]0+)?)%|[0-9]+([.][0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?)$`
// +kubebuilder:validation:MaxLength=32
type EvictionThreshold string
