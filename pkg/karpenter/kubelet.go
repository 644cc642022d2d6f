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
