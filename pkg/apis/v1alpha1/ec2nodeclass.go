package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EC2NodeClass holds the AWS settings nodes are launched with: where
// (subnets, security groups), from which image, with which IAM role, user
// data, tags, disks and instance metadata options. It is Karpenter's
// karpenter.k8s.aws/v1 EC2NodeClass with the same field names; instance
// metadata defaults to IMDSv2 only (httpTokens: required) with a hop limit
// of 1.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName={ec2nc,ec2ncs},categories=rightsize
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.spec.role`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EC2NodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the launch settings.
	// +required
	Spec EC2NodeClassSpec `json:"spec"`
	// Status is what the selector terms resolved to.
	// +optional
	Status EC2NodeClassStatus `json:"status,omitempty"`
}

// EC2NodeClassSpec is the launch settings of an EC2NodeClass.
//
// +kubebuilder:validation:XValidation:rule="has(self.role) != has(self.instanceProfile)",message="exactly one of role and instanceProfile must be set"
// +kubebuilder:validation:XValidation:rule="has(self.amiFamily) || self.amiSelectorTerms.exists(t, has(t.alias))",message="amiFamily is required unless an amiSelectorTerms entry has an alias",fieldPath=".amiFamily"
type EC2NodeClassSpec struct {
	// SubnetSelectorTerms select the subnets instances may be launched in;
	// terms are ORed, the fields of a term ANDed.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +required
	SubnetSelectorTerms []SubnetSelectorTerm `json:"subnetSelectorTerms"`
	// SecurityGroupSelectorTerms select the security groups of the
	// instances; terms are ORed, the fields of a term ANDed.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +required
	SecurityGroupSelectorTerms []SecurityGroupSelectorTerm `json:"securityGroupSelectorTerms"`
	// AMISelectorTerms select the machine images; terms are ORed, the
	// fields of a term ANDed. An alias term (al2023@latest) stands alone.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +kubebuilder:validation:XValidation:rule="!self.exists(t, has(t.alias)) || self.size() == 1",message="an alias term must be the only amiSelectorTerms entry"
	// +required
	AMISelectorTerms []AMISelectorTerm `json:"amiSelectorTerms"`
	// CapacityReservationSelectorTerms select the capacity reservations
	// (on-demand capacity reservations and capacity blocks) nodes may be
	// launched into, as Karpenter's field of the same name; terms are
	// ORed, the fields of a term ANDed. Their instances are offered with
	// capacity type "reserved", to NodePools that allow it, before
	// on-demand and spot.
	// +kubebuilder:validation:MaxItems=30
	// +optional
	CapacityReservationSelectorTerms []CapacityReservationSelectorTerm `json:"capacityReservationSelectorTerms,omitempty"`
	// AMIFamily is the image family, which decides the user data format and
	// default disks. Optional when an amiSelectorTerms entry has an alias
	// (the family is the alias's); required otherwise.
	// +kubebuilder:validation:Enum=AL2;AL2023;Bottlerocket;Custom;Windows2019;Windows2022
	// +optional
	AMIFamily *string `json:"amiFamily,omitempty"`
	// Role is the IAM role the instances' instance profile is made from.
	// Exactly one of role and instanceProfile is set.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Role string `json:"role,omitempty"`
	// InstanceProfile is an existing IAM instance profile to launch with.
	// +kubebuilder:validation:MinLength=1
	// +optional
	InstanceProfile *string `json:"instanceProfile,omitempty"`
	// UserData is merged with the user data the AMI family needs to join
	// the cluster.
	// +optional
	UserData *string `json:"userData,omitempty"`
	// Tags are put on the instances, volumes and launch templates.
	// +kubebuilder:validation:MaxProperties=50
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != '')",message="tag keys must not be empty"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// BlockDeviceMappings are the instances' disks; unset means the AMI
	// family's default root volume.
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:XValidation:rule="self.filter(m, has(m.rootVolume) && m.rootVolume).size() <= 1",message="at most one blockDeviceMappings entry may be the root volume"
	// +optional
	BlockDeviceMappings []BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	// MetadataOptions are the instance metadata service settings. The
	// default allows IMDSv2 only, with a hop limit of 1, so pods cannot
	// reach the node's credentials.
	// +kubebuilder:default={httpEndpoint: enabled, httpProtocolIPv6: disabled, httpPutResponseHopLimit: 1, httpTokens: required}
	// +optional
	MetadataOptions *MetadataOptions `json:"metadataOptions,omitempty"`
	// AssociatePublicIPAddress overrides the subnet's public IP setting.
	// +optional
	AssociatePublicIPAddress *bool `json:"associatePublicIPAddress,omitempty"`
	// DetailedMonitoring turns on one-minute CloudWatch metrics.
	// +optional
	DetailedMonitoring *bool `json:"detailedMonitoring,omitempty"`
	// Kubelet is the nodes' kubelet configuration (max pods, reserved
	// resources, eviction thresholds, ...), passed in the user data; the
	// planner counts what it changes of a node's allocatable.
	// +optional
	Kubelet *KubeletConfiguration `json:"kubelet,omitempty"`
}

// SubnetSelectorTerm selects subnets by ID or by tags.
//
// +kubebuilder:validation:XValidation:rule="has(self.id) != has(self.tags)",message="set exactly one of id and tags"
type SubnetSelectorTerm struct {
	// Tags match subnets carrying all of them; "*" matches any value.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID is a subnet ID.
	// +kubebuilder:validation:Pattern=`^subnet-[0-9a-z]+$`
	// +optional
	ID string `json:"id,omitempty"`
}

// CapacityReservationSelectorTerm selects capacity reservations by ID, or
// by tags and owner.
// +kubebuilder:validation:XValidation:rule="has(self.id) != (has(self.tags) || has(self.ownerID))",message="a capacityReservationSelectorTerms entry has an id alone, or tags (and an ownerID)"
type CapacityReservationSelectorTerm struct {
	// ID is a capacity reservation ID.
	// +kubebuilder:validation:Pattern=`^cr-[0-9a-z]+$`
	// +optional
	ID string `json:"id,omitempty"`
	// Tags match reservations carrying all of them; "*" matches any value.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// OwnerID is the AWS account that owns the reservations (one shared
	// with this account).
	// +kubebuilder:validation:Pattern=`^[0-9]{12}$`
	// +optional
	OwnerID string `json:"ownerID,omitempty"`
}

// SecurityGroupSelectorTerm selects security groups by ID, name or tags.
//
// +kubebuilder:validation:XValidation:rule="has(self.id) || has(self.name) || has(self.tags)",message="set one of id, name and tags"
// +kubebuilder:validation:XValidation:rule="!has(self.id) || !(has(self.name) || has(self.tags))",message="id cannot be combined with name or tags"
type SecurityGroupSelectorTerm struct {
	// Tags match security groups carrying all of them; "*" matches any
	// value.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID is a security group ID.
	// +kubebuilder:validation:Pattern=`^sg-[0-9a-z]+$`
	// +optional
	ID string `json:"id,omitempty"`
	// Name is a security group name.
	// +optional
	Name string `json:"name,omitempty"`
}

// AMISelectorTerm selects machine images by alias, ID, name, owner, SSM
// parameter or tags.
//
// +kubebuilder:validation:XValidation:rule="has(self.alias) || has(self.id) || has(self.name) || has(self.tags) || has(self.ssmParameter)",message="set one of alias, id, name, tags and ssmParameter"
// +kubebuilder:validation:XValidation:rule="!has(self.alias) || !(has(self.id) || has(self.name) || has(self.tags) || has(self.owner) || has(self.ssmParameter))",message="alias cannot be combined with other fields"
// +kubebuilder:validation:XValidation:rule="!has(self.id) || !(has(self.alias) || has(self.name) || has(self.tags) || has(self.owner) || has(self.ssmParameter))",message="id cannot be combined with other fields"
type AMISelectorTerm struct {
	// Alias is an image family and version, e.g. al2023@latest or
	// bottlerocket@v1.20.0; the family is one of al2, al2023, bottlerocket,
	// windows2019 and windows2022.
	// +kubebuilder:validation:MaxLength=30
	// +kubebuilder:validation:Pattern=`^(al2|al2023|bottlerocket|windows2019|windows2022)@.+$`
	// +optional
	Alias string `json:"alias,omitempty"`
	// Tags match images carrying all of them.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID is an image ID.
	// +kubebuilder:validation:Pattern=`^ami-[0-9a-z]+$`
	// +optional
	ID string `json:"id,omitempty"`
	// Name is an image name; wildcards are allowed.
	// +optional
	Name string `json:"name,omitempty"`
	// Owner is an account ID or alias (self, amazon) owning the images.
	// +optional
	Owner string `json:"owner,omitempty"`
	// SSMParameter is an SSM parameter whose value is an image ID.
	// +optional
	SSMParameter string `json:"ssmParameter,omitempty"`
}

// BlockDeviceMapping is a disk of the instances.
type BlockDeviceMapping struct {
	// DeviceName is the device's name, e.g. /dev/xvda.
	// +optional
	DeviceName *string `json:"deviceName,omitempty"`
	// EBS describes the volume.
	// +optional
	EBS *BlockDevice `json:"ebs,omitempty"`
	// RootVolume marks the device as the root volume.
	// +optional
	RootVolume bool `json:"rootVolume,omitempty"`
}

// BlockDevice is an EBS volume.
type BlockDevice struct {
	// DeleteOnTermination deletes the volume with the instance.
	// +optional
	DeleteOnTermination *bool `json:"deleteOnTermination,omitempty"`
	// Encrypted encrypts the volume.
	// +optional
	Encrypted *bool `json:"encrypted,omitempty"`
	// IOPS is the provisioned I/O operations per second (io1, io2, gp3).
	// +optional
	IOPS *int64 `json:"iops,omitempty"`
	// KMSKeyID is the key that encrypts the volume.
	// +optional
	KMSKeyID *string `json:"kmsKeyID,omitempty"`
	// SnapshotID is the snapshot the volume is made from.
	// +optional
	SnapshotID *string `json:"snapshotID,omitempty"`
	// Throughput is the provisioned throughput in MiB/s (gp3).
	// +optional
	Throughput *int64 `json:"throughput,omitempty"`
	// VolumeSize is the volume's size, e.g. 20Gi (at most 64T).
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]|[1-4][0-9]|5[0-8])Ti|([1-9]|[1-5][0-9]|6[0-4])T)$`
	// +optional
	VolumeSize *resource.Quantity `json:"volumeSize,omitempty"`
	// VolumeType is the EBS volume type.
	// +kubebuilder:validation:Enum=standard;io1;io2;gp2;sc1;st1;gp3
	// +optional
	VolumeType *string `json:"volumeType,omitempty"`
}

// MetadataOptions are the instance metadata service settings of the
// instances.
type MetadataOptions struct {
	// HTTPEndpoint turns the metadata service on or off.
	// +kubebuilder:default=enabled
	// +kubebuilder:validation:Enum=enabled;disabled
	// +optional
	HTTPEndpoint *string `json:"httpEndpoint,omitempty"`
	// HTTPProtocolIPv6 turns the service's IPv6 endpoint on or off.
	// +kubebuilder:default=disabled
	// +kubebuilder:validation:Enum=enabled;disabled
	// +optional
	HTTPProtocolIPv6 *string `json:"httpProtocolIPv6,omitempty"`
	// HTTPPutResponseHopLimit is the hop limit of metadata responses; 1
	// keeps them from reaching containers in their own network namespace.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	HTTPPutResponseHopLimit *int64 `json:"httpPutResponseHopLimit,omitempty"`
	// HTTPTokens is required for IMDSv2 only (session tokens), optional to
	// also allow IMDSv1.
	// +kubebuilder:default=required
	// +kubebuilder:validation:Enum=required;optional
	// +optional
	HTTPTokens *string `json:"httpTokens,omitempty"`
}

// EC2NodeClassStatus is what an EC2NodeClass's selector terms resolved to.
type EC2NodeClassStatus struct {
	// Subnets are the subnets selected.
	// +optional
	Subnets []Subnet `json:"subnets,omitempty"`
	// SecurityGroups are the security groups selected.
	// +optional
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`
	// AMIs are the images selected, with the instance requirements each
	// suits (architecture, GPU, ...).
	// +optional
	AMIs []AMI `json:"amis,omitempty"`
	// InstanceProfile is the instance profile used, made from spec.role or
	// spec.instanceProfile.
	// +optional
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// Conditions are the class's conditions; Ready is True when every
	// selector resolved.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Subnet is a subnet an EC2NodeClass selected.
type Subnet struct {
	// ID is the subnet's ID.
	ID string `json:"id"`
	// Zone is the subnet's availability zone, e.g. us-east-1a.
	Zone string `json:"zone"`
	// ZoneID is the zone's ID, e.g. use1-az1.
	// +optional
	ZoneID string `json:"zoneID,omitempty"`
}

// SecurityGroup is a security group an EC2NodeClass selected.
type SecurityGroup struct {
	// ID is the group's ID.
	ID string `json:"id"`
	// Name is the group's name.
	// +optional
	Name string `json:"name,omitempty"`
}

// AMI is an image an EC2NodeClass selected.
type AMI struct {
	// ID is the image's ID.
	ID string `json:"id"`
	// Name is the image's name.
	// +optional
	Name string `json:"name,omitempty"`
	// Requirements are the instances the image suits.
	// +optional
	Requirements []NodeSelectorRequirement `json:"requirements,omitempty"`
}

// EC2NodeClassList is a list of EC2NodeClasses.
//
// +kubebuilder:object:root=true
type EC2NodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the EC2NodeClasses.
	Items []EC2NodeClass `json:"items"`
}
