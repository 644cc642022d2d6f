package cloud

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// UnregisteredTaintKey is the taint every provider puts on a node at launch
// (a kubelet registers with it), v1alpha1.TaintKeyUnregistered.
const UnregisteredTaintKey = v1alpha1.TaintKeyUnregistered

// UnregisteredTaint is the taint with UnregisteredTaintKey.
var UnregisteredTaint = corev1.Taint{Key: UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}
