package cloud

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Quantity is the value v of the solver's resource i (an index of
// solver.Resources) as Kubernetes writes it: CPU from millicores, memory
// and ephemeral storage as binary bytes, pods, GPUs and extended resources
// as decimal counts.
func Quantity(i int, v int64) resource.Quantity {
	switch i {
	case solver.CPU:
		return *resource.NewMilliQuantity(v, resource.DecimalSI)
	case solver.Memory, solver.EphemeralStorage:
		return *resource.NewQuantity(v, resource.BinarySI)
	}
	return *resource.NewQuantity(v, resource.DecimalSI)
}

// ResourceList is the resource list of r's fixed resources
// (solver.FixedResourceNames) above zero, e.g. a node's capacity.
func ResourceList(r solver.Resources) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i, name := range solver.FixedResourceNames {
		if r[i] > 0 {
			out[corev1.ResourceName(name)] = Quantity(i, r[i])
		}
	}
	return out
}
