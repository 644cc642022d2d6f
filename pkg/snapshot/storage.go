package snapshot

import (
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/karpenter"
)

// NodeStorage is the ephemeral storage a pool's node class gives its
// nodes, as Karpenter's AWS provider counts it (ephemeralStorage in
// pkg/providers/instancetype/types.go of aws/karpenter-provider-aws): the
// instance store when instanceStorePolicy is RAID0 and the type has one,
// else the root volume of blockDeviceMappings, else the AMI's default.
type NodeStorage struct {
	// InstanceStore is instanceStorePolicy RAID0: a type with NVMe instance
	// store gives all of it to ephemeral storage.
	InstanceStore bool
	// RootVolume is the size in bytes of the blockDeviceMappings entry
	// marked rootVolume; 0 when there is none.
	RootVolume int64
}

// classStorage is the NodeStorage of a node class with instanceStorePolicy
// policy (nil when unset) and root volume size root (nil when unset).
func classStorage(policy *string, root *resource.Quantity) NodeStorage {
	var s NodeStorage
	s.InstanceStore = policy != nil && *policy == "RAID0"
	if root != nil {
		s.RootVolume = root.Value()
	}
	return s
}

// rootVolumeSize is the volumeSize of the mapping marked rootVolume.
func rootVolumeSize(mappings []karpenter.BlockDeviceMapping) *resource.Quantity {
	for _, bdm := range mappings {
		if bdm.RootVolume && bdm.EBS != nil {
			return bdm.EBS.VolumeSize
		}
	}
	return nil
}

// setClassStorage records the storage a node class gives its nodes, when
// it differs from the default.
func (m *Manifests) setClassStorage(key classKey, s NodeStorage) {
	if s == (NodeStorage{}) {
		return
	}
	if m.kubelets.storage == nil {
		m.kubelets.storage = map[classKey]NodeStorage{}
	}
	m.kubelets.storage[key] = s
}

// matchClass returns the value of classes for the class ref names. A
// reference without a group matches a class of any group (manifests may
// mix Karpenter's and ours).
func matchClass[V any](ref classKey, classes map[classKey]V) (V, bool) {
	for key, v := range classes {
		if key.kind == ref.kind && key.name == ref.name && (ref.group == "" || key.group == "" || key.group == ref.group) {
			return v, true
		}
	}
	var zero V
	return zero, false
}
