// Package cloud describes what a cloud can launch: instance types, the
// offerings (zone × capacity type × price) they come in, and the allocatable
// model that turns an instance's capacity into what pods may request. Cloud
// details stop here; the solver sees only plain numbers and labels.
package cloud

// Capacity types, as Karpenter spells them in the karpenter.sh/capacity-type label.
const (
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeSpot     = "spot"
	// CapacityTypeReserved is Karpenter's (v1.3+) capacity type of an
	// instance launched into a capacity reservation (an EC2 on-demand
	// capacity reservation or capacity block): a NodePool uses
	// reservations only where its karpenter.sh/capacity-type requirement
	// allows "reserved"; such offerings are planned first, at a near-zero
	// price, never more instances than the reservation has left; and a
	// node whose reservation ends is relabelled on-demand by Karpenter's
	// provider.
	CapacityTypeReserved = "reserved"
)

// InstanceType is one machine shape a cloud can launch.
type InstanceType struct {
	// Name is the cloud's name for the type, e.g. "m5.large".
	Name string `json:"name"`
	// CPU is the number of vCPUs in millicores.
	CPU int64 `json:"cpu"`
	// Memory is the machine's memory in bytes, as the cloud advertises it.
	Memory int64 `json:"memory"`
	// GPU is the number of GPUs; GPUName and GPUManufacturer describe them.
	GPU             int64  `json:"gpu,omitempty"`
	GPUName         string `json:"gpuName,omitempty"`
	GPUManufacturer string `json:"gpuManufacturer,omitempty"`
	// GPUMemory is the memory of one GPU in MiB.
	GPUMemory int64 `json:"gpuMemory,omitempty"`
	// Accelerators are the type's AWS Neuron devices (Inferentia,
	// Trainium); AcceleratorName is the lower-case device name,
	// AcceleratorManufacturer "aws", and NeuronCores their cores in all.
	Accelerators            int64  `json:"accelerators,omitempty"`
	AcceleratorName         string `json:"acceleratorName,omitempty"`
	AcceleratorManufacturer string `json:"acceleratorManufacturer,omitempty"`
	NeuronCores             int64  `json:"neuronCores,omitempty"`
	// CPUManufacturer is aws, intel or amd ("" when unknown).
	CPUManufacturer string `json:"cpuManufacturer,omitempty"`
	// NetworkBandwidth and EBSBandwidth are in Mbps, LocalNVMe the local
	// NVMe instance storage in GB; 0 when the type has none or the data
	// does not say.
	NetworkBandwidth int64 `json:"networkBandwidth,omitempty"`
	EBSBandwidth     int64 `json:"ebsBandwidth,omitempty"`
	LocalNVMe        int64 `json:"localNVMe,omitempty"`
	// Architecture is "amd64" or "arm64".
	Architecture string `json:"architecture,omitempty"`
	// MaxENIs and IPv4PerENI bound the number of pods with VPC CNI networking.
	MaxENIs    int `json:"maxENIs,omitempty"`
	IPv4PerENI int `json:"ipv4PerENI,omitempty"`
	// Pods, when non-zero, is the maximum number of pods, overriding the ENI limit.
	Pods int64 `json:"pods,omitempty"`
	// Overhead, when set, replaces the EKS kube-reserved/eviction/VM model.
	Overhead *Overhead `json:"overhead,omitempty"`
	// Offerings are the zone, capacity type and price combinations on sale.
	Offerings []Offering `json:"offerings,omitempty"`
	// Kubelet, when set, is the kubelet configuration of the node class the
	// type is offered through: it changes pods and allocatable (see
	// NodeModel). Providers set it per node class; catalogs never do.
	Kubelet *Kubelet `json:"-"`
}

// Overhead is the part of a node's capacity that pods may not request.
type Overhead struct {
	CPU    int64 `json:"cpu"`    // millicores
	Memory int64 `json:"memory"` // bytes
}

// Offering is one way to buy an instance type: in a zone, as on-demand or spot,
// at a price in US dollars per hour, or, with capacity type
// CapacityTypeReserved, in a capacity reservation.
type Offering struct {
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
	// Count is, for a reserved offering, how many instances its
	// reservation has left to launch (solver.Offering.Count); zero for
	// the others.
	Count int `json:"count,omitempty"`
	// ReservationID names a reserved offering's capacity reservation
	// (solver.Offering.Reservation).
	ReservationID string `json:"reservationID,omitempty"`
}
