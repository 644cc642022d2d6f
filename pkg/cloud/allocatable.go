package cloud

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Well-known node labels for AWS instance types, as Karpenter's AWS provider
// spells them, so that workloads written for Karpenter select our nodes.
const (
	LabelArch              = "kubernetes.io/arch"
	LabelOS                = "kubernetes.io/os"
	LabelRegion            = "topology.kubernetes.io/region"
	LabelInstanceFamily    = "karpenter.k8s.aws/instance-family"
	LabelInstanceSize      = "karpenter.k8s.aws/instance-size"
	LabelInstanceCategory  = "karpenter.k8s.aws/instance-category"
	LabelInstanceGen       = "karpenter.k8s.aws/instance-generation"
	LabelInstanceCPU       = "karpenter.k8s.aws/instance-cpu"
	LabelInstanceMemory    = "karpenter.k8s.aws/instance-memory" // MiB
	LabelInstanceGPUName   = "karpenter.k8s.aws/instance-gpu-name"
	LabelInstanceGPUCount  = "karpenter.k8s.aws/instance-gpu-count"
	LabelInstanceGPUMaker  = "karpenter.k8s.aws/instance-gpu-manufacturer"
	LabelInstanceGPUMemory = "karpenter.k8s.aws/instance-gpu-memory" // MiB per GPU
	LabelAcceleratorName   = "karpenter.k8s.aws/instance-accelerator-name"
	LabelAcceleratorMaker  = "karpenter.k8s.aws/instance-accelerator-manufacturer"
	LabelAcceleratorCount  = "karpenter.k8s.aws/instance-accelerator-count"
	LabelCPUManufacturer   = "karpenter.k8s.aws/instance-cpu-manufacturer"
	LabelNetworkBandwidth  = "karpenter.k8s.aws/instance-network-bandwidth" // Mbps
	LabelEBSBandwidth      = "karpenter.k8s.aws/instance-ebs-bandwidth"     // Mbps
	LabelLocalNVMe         = "karpenter.k8s.aws/instance-local-nvme"        // GB
	LabelCapabilityFlex    = "karpenter.k8s.aws/instance-capability-flex"
	mebibyte               = 1 << 20
	gibibyte               = 1 << 30
	defaultMaxPods         = 110
	defaultEphemeralVolume = 20 * gibibyte
	// defaultEvictionMemory and defaultEvictionNodefsPercent are the
	// kubelet's default hard eviction thresholds for memory.available and
	// nodefs.available.
	defaultEvictionMemory        = 100 * mebibyte
	defaultEvictionNodefsPercent = 10
	// defaultKubeReservedStorage is EKS's kube-reserved ephemeral storage.
	defaultKubeReservedStorage = gibibyte
)

// NodeModel computes what a node of an instance type can give to pods, the
// way EKS nodes do: allocatable = capacity − kube-reserved − eviction
// threshold, where capacity memory is the advertised memory less the
// hypervisor's share.
type NodeModel struct {
	// VMMemoryOverheadPercent is the share of advertised memory the
	// hypervisor and firmware keep (0.075 when zero).
	VMMemoryOverheadPercent float64
	// MaxPods caps the ENI-limited pod count (110 when zero).
	MaxPods int64
	// EphemeralStorage is the root volume size in bytes (20Gi when zero).
	EphemeralStorage int64
}

func (m NodeModel) vmOverhead() float64 {
	if m.VMMemoryOverheadPercent == 0 {
		return 0.075
	}
	return m.VMMemoryOverheadPercent
}

// Pods returns the maximum pods of a node of the type: the kubelet's
// maxPods when the type's node class sets it, else the type's own figure
// when given, else the VPC CNI's ENI limit ENIs × (IPv4 per ENI − 1) + 2,
// capped at MaxPods; then at most podsPerCore × vCPUs when the node class
// sets podsPerCore.
func (m NodeModel) Pods(it *InstanceType) int64 {
	pods := m.defaultPods(it)
	if k := it.Kubelet; k != nil {
		if k.MaxPods.Set {
			pods = k.MaxPods.Value
		}
		if k.PodsPerCore > 0 {
			pods = min(pods, k.PodsPerCore*(it.CPU/1000))
		}
	}
	return pods
}

func (m NodeModel) defaultPods(it *InstanceType) int64 {
	if it.Pods > 0 {
		return it.Pods
	}
	limit := m.MaxPods
	if limit <= 0 {
		limit = defaultMaxPods
	}
	if it.MaxENIs <= 0 || it.IPv4PerENI <= 1 {
		return limit
	}
	return min(int64(it.MaxENIs)*int64(it.IPv4PerENI-1)+2, limit)
}

// KubeReservedCPU is EKS's CPU reservation in millicores: 6% of the first
// core, 1% of the second, 0.5% of the third and fourth, 0.25% of the rest.
func KubeReservedCPU(cpu int64) int64 {
	tiers := []struct {
		upTo     int64
		fraction float64
	}{{1000, 0.06}, {2000, 0.01}, {4000, 0.005}, {math.MaxInt64, 0.0025}}
	var reserved float64
	prev := int64(0)
	for _, t := range tiers {
		if cpu <= prev {
			break
		}
		reserved += float64(min(cpu, t.upTo)-prev) * t.fraction
		prev = t.upTo
	}
	return int64(math.Round(reserved))
}

// SolverType turns a catalog instance type into the solver's view of it in a
// region: labels, capacity, overhead and offerings. The type's kubelet
// settings (InstanceType.Kubelet) apply: kubeReserved replaces EKS's
// reservation resource by resource, systemReserved adds to it, and the
// memory.available and nodefs.available eviction thresholds replace the
// kubelet's defaults. A type with an explicit Overhead keeps it; only the
// pod settings apply to it.
func (m NodeModel) SolverType(it *InstanceType, region string) solver.InstanceType {
	pods := m.Pods(it)
	storage := m.EphemeralStorage
	if storage <= 0 {
		storage = defaultEphemeralVolume
	}
	var capacity, overhead solver.Resources
	capacity[solver.CPU] = it.CPU
	capacity[solver.Memory] = it.Memory
	capacity[solver.EphemeralStorage] = storage
	capacity[solver.Pods] = pods
	extended := acceleratorCapacity(it)
	capacity[solver.GPU] = extended[ResourceNVIDIAGPU]
	delete(extended, ResourceNVIDIAGPU)
	if it.Overhead != nil {
		overhead[solver.CPU] = it.Overhead.CPU
		overhead[solver.Memory] = it.Overhead.Memory
	} else {
		vm := int64(math.Ceil(float64(it.Memory/mebibyte)*m.vmOverhead())) * mebibyte
		capacity[solver.Memory] -= vm
		var k Kubelet
		if it.Kubelet != nil {
			k = *it.Kubelet
		}
		kube, system := k.KubeReserved, k.SystemReserved
		overhead[solver.CPU] = kube.CPU.or(KubeReservedCPU(it.CPU)) + system.CPU.Value
		overhead[solver.Memory] = kube.Memory.or((11*pods+255)*mebibyte) + system.Memory.Value +
			k.EvictionMemory.of(capacity[solver.Memory], defaultEvictionMemory)
		overhead[solver.EphemeralStorage] = kube.EphemeralStorage.or(defaultKubeReservedStorage) + system.EphemeralStorage.Value +
			k.EvictionNodefs.of(storage, storage*defaultEvictionNodefsPercent/100)
	}
	offerings := make([]solver.Offering, len(it.Offerings))
	for i, o := range it.Offerings {
		offerings[i] = solver.Offering{Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price, Count: o.Count, Reservation: o.ReservationID}
	}
	return solver.InstanceType{Name: it.Name, Labels: Labels(it, region), Capacity: capacity, Extended: extended, Overhead: overhead, Offerings: offerings}
}

// Accelerator resources, as the device plugins and Karpenter's AWS
// provider name them.
const (
	ResourceNVIDIAGPU     = "nvidia.com/gpu"
	ResourceAMDGPU        = "amd.com/gpu"
	ResourceHabanaGaudi   = "habana.ai/gaudi"
	ResourceAWSNeuron     = "aws.amazon.com/neuron"
	ResourceAWSNeuronCore = "aws.amazon.com/neuroncore"
)

// acceleratorCapacity returns the accelerator resources a node of the type
// offers, the way Karpenter's AWS provider computes them (computeCapacity
// in pkg/providers/instancetype/types.go): GPUs count as nvidia.com/gpu,
// amd.com/gpu or habana.ai/gaudi by their manufacturer (an unnamed
// manufacturer is read as NVIDIA, as older instance-type files mean it),
// Neuron devices as aws.amazon.com/neuron and their cores as
// aws.amazon.com/neuroncore. Nil when the type has none.
func acceleratorCapacity(it *InstanceType) map[string]int64 {
	out := map[string]int64{}
	if it.GPU > 0 {
		switch it.GPUManufacturer {
		case "", "nvidia":
			out[ResourceNVIDIAGPU] = it.GPU
		case "amd":
			out[ResourceAMDGPU] = it.GPU
		case "habana":
			out[ResourceHabanaGaudi] = it.GPU
		}
	}
	if it.Accelerators > 0 && it.AcceleratorManufacturer == "aws" {
		out[ResourceAWSNeuron] = it.Accelerators
		if it.NeuronCores > 0 {
			out[ResourceAWSNeuronCore] = it.NeuronCores
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// UnansweredLabels are the karpenter.k8s.aws labels Karpenter's AWS
// provider sets that the embedded catalog's sources do not give, so that
// no instance type here carries them: a selector on one of them cannot be
// judged, and explain says so instead of blaming capacity.
func UnansweredLabels() []string {
	return []string{
		"karpenter.k8s.aws/instance-hypervisor",
		"karpenter.k8s.aws/instance-encryption-in-transit-supported",
		"karpenter.k8s.aws/instance-nitro-enclaves-supported",
		"karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",
		"karpenter.k8s.aws/instance-tenancy",
		"topology.k8s.aws/zone-id",
	}
}

var familyPattern = regexp.MustCompile(`^([a-z]+)(\d+)`)

// Labels returns the well-known labels of a node of the type.
func Labels(it *InstanceType, region string) map[string]string {
	arch := it.Architecture
	if arch == "" {
		arch = "amd64"
	}
	labels := map[string]string{
		corev1.LabelInstanceTypeStable: it.Name,
		LabelArch:                      arch,
		LabelOS:                        "linux",
		LabelInstanceCPU:               strconv.FormatInt(it.CPU/1000, 10),
		LabelInstanceMemory:            strconv.FormatInt(it.Memory/mebibyte, 10),
	}
	if region != "" {
		labels[LabelRegion] = region
	}
	family, size, ok := strings.Cut(it.Name, ".")
	if ok {
		labels[LabelInstanceFamily] = family
		labels[LabelInstanceSize] = size
		if m := familyPattern.FindStringSubmatch(family); m != nil {
			labels[LabelInstanceCategory] = m[1]
			labels[LabelInstanceGen] = m[2]
		}
	}
	if ok {
		labels[LabelCapabilityFlex] = strconv.FormatBool(strings.Contains(family, "-flex"))
	}
	if it.GPU > 0 {
		labels[LabelInstanceGPUCount] = strconv.FormatInt(it.GPU, 10)
		if it.GPUName != "" {
			labels[LabelInstanceGPUName] = it.GPUName
		}
		if it.GPUManufacturer != "" {
			labels[LabelInstanceGPUMaker] = it.GPUManufacturer
		}
		if it.GPUMemory > 0 {
			labels[LabelInstanceGPUMemory] = strconv.FormatInt(it.GPUMemory, 10)
		}
	}
	if it.Accelerators > 0 {
		labels[LabelAcceleratorCount] = strconv.FormatInt(it.Accelerators, 10)
		if it.AcceleratorName != "" {
			labels[LabelAcceleratorName] = it.AcceleratorName
		}
		if it.AcceleratorManufacturer != "" {
			labels[LabelAcceleratorMaker] = it.AcceleratorManufacturer
		}
	}
	for key, v := range map[string]int64{LabelNetworkBandwidth: it.NetworkBandwidth, LabelEBSBandwidth: it.EBSBandwidth, LabelLocalNVMe: it.LocalNVMe} {
		if v > 0 {
			labels[key] = strconv.FormatInt(v, 10)
		}
	}
	if it.CPUManufacturer != "" {
		labels[LabelCPUManufacturer] = it.CPUManufacturer
	}
	return labels
}
