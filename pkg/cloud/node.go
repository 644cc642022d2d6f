package cloud

import (
	corev1 "k8s.io/api/core/v1"
)

// UnregisteredTaintKey is the taint every provider puts on a node at launch
// (a kubelet registers with it). It keeps pods off the node until the
// operator has matched the node to its NodeClaim, copied the claim's labels
// and taints onto it and removed this taint. Karpenter's is
// karpenter.sh/unregistered.
const UnregisteredTaintKey = "rightsize.dev/unregistered"

// UnregisteredTaint is the taint with UnregisteredTaintKey.
var UnregisteredTaint = corev1.Taint{Key: UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}
