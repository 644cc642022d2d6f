package cloud

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestResourceListWritesKubernetesUnits: the values come back as the
// solver's units (millicores, bytes, counts) and print as a kubelet
// would report them; zero resources are left out.
func TestResourceListWritesKubernetesUnits(t *testing.T) {
	var r solver.Resources
	r[solver.CPU], r[solver.Memory], r[solver.EphemeralStorage], r[solver.Pods] = 3920, 15<<30, 20<<30, 58
	l := ResourceList(r)
	for _, tc := range []struct {
		name     corev1.ResourceName
		want     string
		millis   bool
		wantUnit int64
	}{
		{corev1.ResourceCPU, "3920m", true, 3920},
		{corev1.ResourceMemory, "15Gi", false, 15 << 30},
		{corev1.ResourceEphemeralStorage, "20Gi", false, 20 << 30},
		{corev1.ResourcePods, "58", false, 58},
	} {
		q, ok := l[tc.name]
		if !ok {
			t.Errorf("%s missing from %v", tc.name, l)
			continue
		}
		got := q.Value()
		if tc.millis {
			got = q.MilliValue()
		}
		if q.String() != tc.want || got != tc.wantUnit {
			t.Errorf("%s = %s (%d), want %s (%d)", tc.name, q.String(), got, tc.want, tc.wantUnit)
		}
	}
	if _, ok := l["nvidia.com/gpu"]; ok || len(l) != 4 {
		t.Errorf("want the four resources above zero only: %v", l)
	}
	if q := Quantity(solver.GPU, 2); q.String() != "2" {
		t.Errorf("2 GPUs = %s", q.String())
	}
}
