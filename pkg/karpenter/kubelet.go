package karpenter

import (
	"fmt"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/strictjson"
)

// kubelet is the union of the kubelet settings Karpenter has had: v1's
// EC2NodeClass spec.kubelet, v1beta1's NodePool spec.template.spec.kubelet
// and v1alpha5's Provisioner spec.kubeletConfiguration, which share their
// field names; v1alpha5 also had containerRuntime.
type kubelet struct {
	v1alpha1.KubeletConfiguration
	ContainerRuntime *string `json:"containerRuntime,omitempty"`
}

// DecodeKubelet reads Karpenter kubelet settings at path (for errors and
// notes) into rightsize.dev's KubeletConfiguration, which has the same
// fields. Unknown fields are errors. Notes name what does not carry over
// (v1alpha5's containerRuntime). A nil or null raw gives nil.
func DecodeKubelet(path string, raw []byte) (k *v1alpha1.KubeletConfiguration, notes []string, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	var u kubelet
	if err := strictjson.Decode(raw, &u); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if u.ContainerRuntime != nil {
		notes = append(notes, fmt.Sprintf("%s.containerRuntime dropped: current EKS images run containerd only", path))
	}
	return &u.KubeletConfiguration, notes, nil
}

// DecodeKubelet reads the pool's own kubelet settings, wherever its API
// version keeps them: v1alpha5's spec.kubeletConfiguration or v1beta1's
// spec.template.spec.kubelet (setting both is an error). path is where they
// were found, for messages. A pool without settings gives nil.
func (s *PoolSpec) DecodeKubelet() (k *v1alpha1.KubeletConfiguration, path string, notes []string, err error) {
	path, raw := "spec.kubeletConfiguration", []byte(s.KubeletConfiguration)
	if t := s.Template; t != nil && t.Spec.Kubelet != nil {
		if raw != nil {
			return nil, "", nil, fmt.Errorf("spec.template.spec.kubelet and spec.kubeletConfiguration are both set; keep one")
		}
		path, raw = "spec.template.spec.kubelet", t.Spec.Kubelet
	}
	k, notes, err = DecodeKubelet(path, raw)
	return k, path, notes, err
}
