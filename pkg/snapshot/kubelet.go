package snapshot

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/karpenter"
)

// Node class resources whose kubelet settings ReadCluster reads: Karpenter's
// karpenter.k8s.aws/v1 EC2NodeClasses and rightsize.dev's own classes.
var (
	KarpenterEC2NodeClasses = schema.GroupVersionResource{Group: "karpenter.k8s.aws", Version: "v1", Resource: "ec2nodeclasses"}
	RightsizeEC2NodeClasses = v1alpha1.SchemeGroupVersion.WithResource("ec2nodeclasses")
	RightsizeSimNodeClasses = v1alpha1.SchemeGroupVersion.WithResource("simnodeclasses")
)

// classResources are the node class resources ReadCluster lists (and
// watchers watch: NodeClassResources), of kinds classKinds.
var (
	classResources = [3]schema.GroupVersionResource{KarpenterEC2NodeClasses, RightsizeEC2NodeClasses, RightsizeSimNodeClasses}
	classKinds     = [3]string{"EC2NodeClass", "EC2NodeClass", "SimNodeClass"}
)

// NodeClassResources returns the node class resources whose kubelet
// settings a plan uses, for watchers that fill Objects.NodeClasses.
func NodeClassResources() []schema.GroupVersionResource { return classResources[:] }

// kubeletSources records, while pools and node classes are read, where
// each pool's kubelet settings may come from; resolveKubelets turns them
// into Manifests.Kubelets.
type kubeletSources struct {
	// pool holds pool-level settings (v1beta1, v1alpha5) by pool name.
	pool map[string]*v1alpha1.KubeletConfiguration
	// ref is each pool's node class: "group/kind/name", group may be "".
	ref map[string]classKey
	// class holds node classes' spec.kubelet by classKey (group set).
	class map[classKey]*v1alpha1.KubeletConfiguration
	// storage holds node classes' ephemeral storage by classKey, for the
	// classes that change it.
	storage map[classKey]NodeStorage
}

// classKey names a node class.
type classKey struct{ group, kind, name string }

// setPoolKubelet records a pool's own kubelet settings and its node class
// reference.
func (m *Manifests) setPoolKubelet(where, pool string, s *poolSpec) error {
	if t := s.Template; t != nil {
		if ref := t.Spec.NodeClassRef; ref != nil {
			kind := ref.Kind
			if kind == "" {
				kind = "EC2NodeClass"
			}
			group := ref.Group
			if group == "" && ref.APIVersion != "" {
				group = schema.FromAPIVersionAndKind(ref.APIVersion, kind).Group
			}
			if m.kubelets.ref == nil {
				m.kubelets.ref = map[string]classKey{}
			}
			m.kubelets.ref[pool] = classKey{group, kind, ref.Name}
		}
	}
	k, _, notes, err := s.DecodeKubelet()
	if err != nil {
		return err
	}
	for _, n := range notes {
		m.warnf(where, "%s", n)
	}
	if k != nil {
		if m.kubelets.pool == nil {
			m.kubelets.pool = map[string]*v1alpha1.KubeletConfiguration{}
		}
		m.kubelets.pool[pool] = k
	}
	return nil
}

// setClassKubelet records a node class's spec.kubelet.
func (m *Manifests) setClassKubelet(where string, key classKey, raw json.RawMessage) error {
	k, notes, err := karpenter.DecodeKubelet("spec.kubelet", raw)
	if err != nil {
		return err
	}
	for _, n := range notes {
		m.warnf(where, "%s", n)
	}
	if k == nil {
		return nil
	}
	if m.kubelets.class == nil {
		m.kubelets.class = map[classKey]*v1alpha1.KubeletConfiguration{}
	}
	m.kubelets.class[key] = k
	return nil
}

// resolveKubelets sets Manifests.Kubelets: each pool's own settings, else
// its node class's; and Manifests.Storage: its node class's ephemeral
// storage. A reference without a group matches a class of any group
// (manifests may mix Karpenter's and ours).
func (m *Manifests) resolveKubelets() {
	m.Kubelets, m.Storage = nil, nil
	for _, p := range m.Pools {
		k := m.kubelets.pool[p.Name]
		ref, hasRef := m.kubelets.ref[p.Name]
		var classK *v1alpha1.KubeletConfiguration
		if hasRef {
			classK, _ = matchClass(ref, m.kubelets.class)
			if s, ok := matchClass(ref, m.kubelets.storage); ok {
				if m.Storage == nil {
					m.Storage = map[string]NodeStorage{}
				}
				m.Storage[p.Name] = s
			}
		}
		switch {
		case k != nil && classK != nil:
			m.warnf("NodePool "+p.Name, "both the pool and its %s %q set kubelet settings; the pool's are planned, as Karpenter v1beta1 did", ref.kind, ref.name)
		case k == nil:
			k = classK
		}
		if k == nil {
			continue
		}
		if m.Kubelets == nil {
			m.Kubelets = map[string]*v1alpha1.KubeletConfiguration{}
		}
		m.Kubelets[p.Name] = k
	}
}

// nodeClassDoc is what ReadCluster reads of a node class.
type nodeClassDoc struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Kubelet             json.RawMessage                `json:"kubelet,omitempty"`
		InstanceStorePolicy *string                        `json:"instanceStorePolicy,omitempty"`
		BlockDeviceMappings []karpenter.BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	} `json:"spec"`
}

// addLiveClasses records the kubelet settings and ephemeral storage of
// node classes listed from a cluster; a class that cannot be read is left
// out with a warning.
func (m *Manifests) addLiveClasses(gvr schema.GroupVersionResource, kind string, raws []json.RawMessage) {
	for _, raw := range raws {
		var d nodeClassDoc
		if err := json.Unmarshal(raw, &d); err != nil {
			m.warnf(kind, "left out: %v", err)
			continue
		}
		where, key := fmt.Sprintf("%s %s", kind, d.Metadata.Name), classKey{gvr.Group, kind, d.Metadata.Name}
		m.setClassStorage(key, classStorage(d.Spec.InstanceStorePolicy, rootVolumeSize(d.Spec.BlockDeviceMappings)))
		if err := m.setClassKubelet(where, key, d.Spec.Kubelet); err != nil {
			m.warnf(where, "kubelet settings ignored: %v", err)
		}
	}
}
