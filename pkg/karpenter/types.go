// Package karpenter holds the shapes of Karpenter's own objects, as
// rightsize reads them from manifests and clusters: the karpenter.sh/v1alpha5
// Provisioner, the karpenter.sh/v1beta1 and v1 NodePool (and the seed
// article's hybrid Provisioner that mixes the two), the karpenter.k8s.aws
// v1beta1 and v1 EC2NodeClass and the v1alpha1 AWSNodeTemplate.
//
// Each type is the union of the layouts it covers, so that one strict decode
// (unknown fields are errors) reads them all; callers look at the kind and
// apiVersion to know which fields mean what. Only Karpenter's field names
// live here; what they mean to rightsize is decided by pkg/snapshot (pools
// for the solver) and pkg/importer (rightsize.dev/v1alpha1 objects).
package karpenter

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// API versions and kinds read.
const (
	V1Alpha5    = "karpenter.sh/v1alpha5"
	V1Beta1     = "karpenter.sh/v1beta1"
	V1          = "karpenter.sh/v1"
	V1Alpha1    = "karpenter.sh/v1alpha1" // NodeOverlay
	AWSV1Alpha1 = "karpenter.k8s.aws/v1alpha1"
	AWSV1Beta1  = "karpenter.k8s.aws/v1beta1"
	AWSV1       = "karpenter.k8s.aws/v1"

	KindProvisioner     = "Provisioner"
	KindNodePool        = "NodePool"
	KindEC2NodeClass    = "EC2NodeClass"
	KindAWSNodeTemplate = "AWSNodeTemplate"
	KindNodeOverlay     = "NodeOverlay"
)

// Labels Karpenter puts on the nodes of a pool.
const (
	LabelNodePool        = v1alpha1.KarpenterLabelNodePool
	LabelProvisionerName = v1alpha1.KarpenterLabelProvisionerName
)

// Pool is a Provisioner or a NodePool.
type Pool struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            PoolSpec          `json:"spec"`
	Status          json.RawMessage   `json:"status,omitempty"`
}

// PoolSpec is the union of the Provisioner and NodePool specs.
type PoolSpec struct {
	Template   *PoolTemplate `json:"template,omitempty"`
	Disruption *Disruption   `json:"disruption,omitempty"`
	// Limits is a resource list (NodePool) or {resources: list} (Provisioner).
	Limits map[string]json.RawMessage `json:"limits,omitempty"`
	Weight *int32                     `json:"weight,omitempty"`
	// Replicas (v1.15, alpha) makes a static NodePool: Karpenter keeps
	// that many nodes and launches none for pending pods.
	Replicas *int64 `json:"replicas,omitempty"`

	// v1alpha5 Provisioner only.
	Labels                 map[string]string `json:"labels,omitempty"`
	Annotations            map[string]string `json:"annotations,omitempty"`
	Requirements           []Requirement     `json:"requirements,omitempty"`
	Taints                 []corev1.Taint    `json:"taints,omitempty"`
	StartupTaints          []corev1.Taint    `json:"startupTaints,omitempty"`
	ProviderRef            *NodeClassRef     `json:"providerRef,omitempty"`
	Provider               json.RawMessage   `json:"provider,omitempty"`
	KubeletConfiguration   json.RawMessage   `json:"kubeletConfiguration,omitempty"`
	Consolidation          *Consolidation    `json:"consolidation,omitempty"`
	TTLSecondsAfterEmpty   *int64            `json:"ttlSecondsAfterEmpty,omitempty"`
	TTLSecondsUntilExpired *int64            `json:"ttlSecondsUntilExpired,omitempty"`
}

// Consolidation is a v1alpha5 Provisioner's spec.consolidation.
type Consolidation struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// PoolTemplate is a NodePool's spec.template.
type PoolTemplate struct {
	Metadata TemplateMetadata `json:"metadata"`
	Spec     NodeClaimSpec    `json:"spec"`
}

// TemplateMetadata is the metadata of a NodePool's template.
type TemplateMetadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NodeClaimSpec is a NodePool template's spec (v1beta1 and v1).
type NodeClaimSpec struct {
	NodeClassRef           *NodeClassRef   `json:"nodeClassRef,omitempty"`
	Requirements           []Requirement   `json:"requirements,omitempty"`
	Taints                 []corev1.Taint  `json:"taints,omitempty"`
	StartupTaints          []corev1.Taint  `json:"startupTaints,omitempty"`
	ExpireAfter            string          `json:"expireAfter,omitempty"`            // v1
	TerminationGracePeriod string          `json:"terminationGracePeriod,omitempty"` // v1
	Kubelet                json.RawMessage `json:"kubelet,omitempty"`                // v1beta1
	Resources              json.RawMessage `json:"resources,omitempty"`              // v1beta1
}

// NodeClassRef is v1's {group, kind, name} or v1beta1's {apiVersion, kind, name}.
type NodeClassRef struct {
	Group      string `json:"group,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name"`
}

// Requirement is a node selector requirement with minValues.
type Requirement struct {
	Key       string   `json:"key"`
	Operator  string   `json:"operator"`
	Values    []string `json:"values,omitempty"`
	MinValues *int     `json:"minValues,omitempty"`
}

// Disruption is a NodePool's spec.disruption (v1beta1 and v1).
type Disruption struct {
	ConsolidationPolicy string   `json:"consolidationPolicy,omitempty"`
	ConsolidateAfter    string   `json:"consolidateAfter,omitempty"`
	ExpireAfter         string   `json:"expireAfter,omitempty"` // v1beta1
	Budgets             []Budget `json:"budgets,omitempty"`
	// MinSaving is rightsize.dev's own field (Karpenter has none): the
	// least saving a consolidation must bring.
	MinSaving *MinSaving `json:"minSaving,omitempty"`
}

// MinSaving is rightsize.dev's spec.disruption.minSaving: dollars per hour
// as a decimal string, and a percentage of the replaced nodes' price.
type MinSaving struct {
	PerHour string `json:"perHour,omitempty"`
	Percent *int32 `json:"percent,omitempty"`
}

// Budget is a disruption budget.
type Budget struct {
	Nodes    string   `json:"nodes"`
	Schedule *string  `json:"schedule,omitempty"`
	Duration string   `json:"duration,omitempty"`
	Reasons  []string `json:"reasons,omitempty"`
}

// EC2NodeClass is an EC2NodeClass of karpenter.k8s.aws/v1 or v1beta1.
type EC2NodeClass struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            EC2NodeClassSpec  `json:"spec"`
	Status          json.RawMessage   `json:"status,omitempty"`
}

// EC2NodeClassSpec is the union of the v1beta1 and v1 EC2NodeClass specs.
type EC2NodeClassSpec struct {
	AMIFamily                        *string              `json:"amiFamily,omitempty"`
	AMISelectorTerms                 []SelectorTerm       `json:"amiSelectorTerms,omitempty"`
	SubnetSelectorTerms              []SelectorTerm       `json:"subnetSelectorTerms,omitempty"`
	SecurityGroupSelectorTerms       []SelectorTerm       `json:"securityGroupSelectorTerms,omitempty"`
	CapacityReservationSelectorTerms []SelectorTerm       `json:"capacityReservationSelectorTerms,omitempty"`
	AssociatePublicIPAddress         *bool                `json:"associatePublicIPAddress,omitempty"`
	Role                             string               `json:"role,omitempty"`
	InstanceProfile                  *string              `json:"instanceProfile,omitempty"`
	UserData                         *string              `json:"userData,omitempty"`
	Tags                             map[string]string    `json:"tags,omitempty"`
	Kubelet                          json.RawMessage      `json:"kubelet,omitempty"`
	BlockDeviceMappings              []BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	InstanceStorePolicy              *string              `json:"instanceStorePolicy,omitempty"`
	DetailedMonitoring               *bool                `json:"detailedMonitoring,omitempty"`
	MetadataOptions                  *MetadataOptions     `json:"metadataOptions,omitempty"`
	Context                          *string              `json:"context,omitempty"`
	// Added in karpenter-provider-aws v1.x up to v1.15.
	PlacementGroupSelector *PlacementGroupSelector `json:"placementGroupSelector,omitempty"`
	IPPrefixCount          *int32                  `json:"ipPrefixCount,omitempty"`
	NetworkInterfaces      []NetworkInterface      `json:"networkInterfaces,omitempty"`
	ConnectionTracking     *ConnectionTracking     `json:"connectionTracking,omitempty"`
	CPUOptions             *CPUOptions             `json:"cpuOptions,omitempty"`
}

// PlacementGroupSelector selects an EC2 placement group by name or ID.
type PlacementGroupSelector struct {
	Name *string `json:"name,omitempty"`
	ID   *string `json:"id,omitempty"`
}

// NetworkInterface is one of an EC2NodeClass's network interfaces.
type NetworkInterface struct {
	NetworkCardIndex int32  `json:"networkCardIndex"`
	DeviceIndex      int32  `json:"deviceIndex"`
	InterfaceType    string `json:"interfaceType"`
}

// ConnectionTracking are the ENIs' idle connection tracking timeouts.
type ConnectionTracking struct {
	TCPEstablishedTimeout *int32 `json:"tcpEstablishedTimeout,omitempty"`
	UDPStreamTimeout      *int32 `json:"udpStreamTimeout,omitempty"`
	UDPTimeout            *int32 `json:"udpTimeout,omitempty"`
}

// CPUOptions are an EC2NodeClass's processor options.
type CPUOptions struct {
	NestedVirtualization *string `json:"nestedVirtualization,omitempty"`
}

// SelectorTerm is the union of the AMI, subnet, security group and capacity
// reservation selector terms.
type SelectorTerm struct {
	Tags                  map[string]string `json:"tags,omitempty"`
	ID                    string            `json:"id,omitempty"`
	Name                  string            `json:"name,omitempty"`
	Alias                 string            `json:"alias,omitempty"`
	Owner                 string            `json:"owner,omitempty"`
	OwnerID               string            `json:"ownerID,omitempty"`
	SSMParameter          string            `json:"ssmParameter,omitempty"`
	InstanceMatchCriteria string            `json:"instanceMatchCriteria,omitempty"`
}

// BlockDeviceMapping is a disk of an EC2NodeClass or AWSNodeTemplate.
type BlockDeviceMapping struct {
	DeviceName string       `json:"deviceName,omitempty"`
	RootVolume bool         `json:"rootVolume,omitempty"`
	EBS        *BlockDevice `json:"ebs,omitempty"`
}

// BlockDevice is an EBS volume.
type BlockDevice struct {
	DeleteOnTermination      *bool              `json:"deleteOnTermination,omitempty"`
	Encrypted                *bool              `json:"encrypted,omitempty"`
	IOPS                     *int64             `json:"iops,omitempty"`
	KMSKeyID                 *string            `json:"kmsKeyID,omitempty"`
	SnapshotID               *string            `json:"snapshotID,omitempty"`
	Throughput               *int64             `json:"throughput,omitempty"`
	VolumeInitializationRate *int32             `json:"volumeInitializationRate,omitempty"`
	VolumeSize               *resource.Quantity `json:"volumeSize,omitempty"`
	VolumeType               *string            `json:"volumeType,omitempty"`
}

// MetadataOptions are the instance metadata service settings.
type MetadataOptions struct {
	HTTPEndpoint            *string `json:"httpEndpoint,omitempty"`
	HTTPProtocolIPv6        *string `json:"httpProtocolIPv6,omitempty"`
	HTTPPutResponseHopLimit *int64  `json:"httpPutResponseHopLimit,omitempty"`
	HTTPTokens              *string `json:"httpTokens,omitempty"`
}

// AWSNodeTemplate is a karpenter.k8s.aws/v1alpha1 AWSNodeTemplate, the
// v1alpha5 Provisioner's node class.
type AWSNodeTemplate struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            AWSProvider       `json:"spec"`
	Status          json.RawMessage   `json:"status,omitempty"`
}

// AWSProvider is an AWSNodeTemplate's spec, also found inline as a v1alpha5
// Provisioner's spec.provider. Selectors are maps of tags, where the keys
// aws-ids (or aws::ids), aws::name and aws::owners select by ID, name and
// owner instead.
type AWSProvider struct {
	// APIVersion and Kind appear in an inline spec.provider.
	APIVersion            string               `json:"apiVersion,omitempty"`
	Kind                  string               `json:"kind,omitempty"`
	SubnetSelector        map[string]string    `json:"subnetSelector,omitempty"`
	SecurityGroupSelector map[string]string    `json:"securityGroupSelector,omitempty"`
	AMISelector           map[string]string    `json:"amiSelector,omitempty"`
	AMIFamily             *string              `json:"amiFamily,omitempty"`
	InstanceProfile       *string              `json:"instanceProfile,omitempty"`
	UserData              *string              `json:"userData,omitempty"`
	Tags                  map[string]string    `json:"tags,omitempty"`
	BlockDeviceMappings   []BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	MetadataOptions       *MetadataOptions     `json:"metadataOptions,omitempty"`
	DetailedMonitoring    *bool                `json:"detailedMonitoring,omitempty"`
	Context               *string              `json:"context,omitempty"`
	LaunchTemplate        *string              `json:"launchTemplate,omitempty"`
}

// NodeOverlay is a karpenter.sh/v1alpha1 NodeOverlay: a price or extended
// resource capacity given to the instance types and offerings its
// requirements select.
type NodeOverlay struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            NodeOverlaySpec   `json:"spec"`
	Status          json.RawMessage   `json:"status,omitempty"`
}

// NodeOverlaySpec is a NodeOverlay's spec.
type NodeOverlaySpec struct {
	Requirements []OverlayRequirement `json:"requirements,omitempty"`
	// PriceAdjustment is "+0.5", "-0.5", "+10%" or "-15%".
	PriceAdjustment *string `json:"priceAdjustment,omitempty"`
	// Price replaces the offering's price, dollars per hour.
	Price    *string             `json:"price,omitempty"`
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	Weight   *int32              `json:"weight,omitempty"`
}

// OverlayRequirement is a NodeOverlay's requirement: a node selector
// requirement without minValues.
type OverlayRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}
