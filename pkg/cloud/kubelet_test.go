package cloud

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func ptr[T any](v T) *T { return &v }

// TestKubeletAllocatable checks the node model with kubelet settings
// against numbers worked out by hand for an m5.large (2 vCPU, 8 GiB, 3
// ENIs of 10 IPv4 addresses). Without settings: ENI pods 3×9+2 = 29;
// capacity memory 8192 MiB − ceil(8192 × 7.5 %) = 7577 MiB; kube-reserved
// 70m CPU (6 % of the first core + 1 % of the second) and 11 × 29 + 255 =
// 574 MiB; eviction 100 MiB; storage 20 GiB − 1 GiB − 10 %.
func TestKubeletAllocatable(t *testing.T) {
	const mi, gi = int64(1 << 20), int64(1 << 30)
	capMem := 7577 * mi
	tests := []struct {
		name                       string
		kubelet                    *v1alpha1.KubeletConfiguration
		pods, cpu, memory, storage int64 // allocatable
	}{
		{"no settings: EKS defaults", nil, 29, 1930, capMem - 574*mi - 100*mi, 17 * gi},
		{"only clusterDNS changes nothing", &v1alpha1.KubeletConfiguration{ClusterDNS: []string{"10.0.0.10"}}, 29, 1930, capMem - 674*mi, 17 * gi},
		{"maxPods 110 above the ENI limit: more pods, more kube-reserved memory",
			&v1alpha1.KubeletConfiguration{MaxPods: ptr[int32](110)}, 110, 1930, capMem - (11*110+255)*mi - 100*mi, 17 * gi},
		{"maxPods 8", &v1alpha1.KubeletConfiguration{MaxPods: ptr[int32](8)}, 8, 1930, capMem - (88+255)*mi - 100*mi, 17 * gi},
		{"podsPerCore 4 caps the ENI limit at 8",
			&v1alpha1.KubeletConfiguration{PodsPerCore: ptr[int32](4)}, 8, 1930, capMem - 443*mi, 17 * gi},
		{"podsPerCore 10 caps maxPods 110 at 20",
			&v1alpha1.KubeletConfiguration{MaxPods: ptr[int32](110), PodsPerCore: ptr[int32](10)}, 20, 1930, capMem - (220+255+100)*mi, 17 * gi},
		{"kubeReserved replaces EKS's, systemReserved adds",
			&v1alpha1.KubeletConfiguration{
				KubeReserved:   map[string]v1alpha1.ReservedQuantity{"cpu": "200m", "memory": "1Gi"},
				SystemReserved: map[string]v1alpha1.ReservedQuantity{"cpu": "100m", "memory": "512Mi", "pid": "1000"},
			}, 29, 1700, capMem - (1024+512+100)*mi, 17 * gi},
		{"kubeReserved memory only keeps EKS's CPU",
			&v1alpha1.KubeletConfiguration{KubeReserved: map[string]v1alpha1.ReservedQuantity{"memory": "300Mi"}}, 29, 1930, capMem - 400*mi, 17 * gi},
		{"reserved ephemeral storage", &v1alpha1.KubeletConfiguration{
			KubeReserved:   map[string]v1alpha1.ReservedQuantity{"ephemeral-storage": "2Gi"},
			SystemReserved: map[string]v1alpha1.ReservedQuantity{"ephemeral-storage": "1Gi"},
		}, 29, 1930, capMem - 674*mi, 15 * gi},
		{"evictionHard memory.available absolute",
			&v1alpha1.KubeletConfiguration{EvictionHard: map[string]v1alpha1.EvictionThreshold{"memory.available": "500Mi"}}, 29, 1930, capMem - (574+500)*mi, 17 * gi},
		{"evictionHard memory.available 5% of capacity memory, rounded up",
			&v1alpha1.KubeletConfiguration{EvictionHard: map[string]v1alpha1.EvictionThreshold{"memory.available": "5%"}}, 29, 1930, 6945924710, 17 * gi},
		{"evictionSoft above the default hard threshold wins",
			&v1alpha1.KubeletConfiguration{
				EvictionSoft:            map[string]v1alpha1.EvictionThreshold{"memory.available": "1Gi"},
				EvictionSoftGracePeriod: map[string]metav1.Duration{"memory.available": {}},
			}, 29, 1930, capMem - (574+1024)*mi, 17 * gi},
		{"evictionSoft below evictionHard changes nothing",
			&v1alpha1.KubeletConfiguration{
				EvictionHard: map[string]v1alpha1.EvictionThreshold{"memory.available": "500Mi"},
				EvictionSoft: map[string]v1alpha1.EvictionThreshold{"memory.available": "200Mi"},
			}, 29, 1930, capMem - (574+500)*mi, 17 * gi},
		{"evictionHard nodefs.available 15%",
			&v1alpha1.KubeletConfiguration{EvictionHard: map[string]v1alpha1.EvictionThreshold{"nodefs.available": "15%"}}, 29, 1930, capMem - 674*mi, 16 * gi},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, err := NewKubelet(tc.kubelet)
			if err != nil {
				t.Fatal(err)
			}
			it := &InstanceType{Name: "m5.large", CPU: 2000, Memory: 8 * gi, MaxENIs: 3, IPv4PerENI: 10, Kubelet: k}
			st := NodeModel{}.SolverType(it, "")
			alloc := st.Allocatable()
			got := [4]int64{alloc[solver.Pods], alloc[solver.CPU], alloc[solver.Memory], alloc[solver.EphemeralStorage]}
			want := [4]int64{tc.pods, tc.cpu, tc.memory, tc.storage}
			if got != want {
				t.Errorf("allocatable pods, cpu, memory, storage = %v, want %v", got, want)
			}
			if st.Capacity[solver.Pods] != tc.pods {
				t.Errorf("capacity pods = %d, want %d", st.Capacity[solver.Pods], tc.pods)
			}
		})
	}
}

// TestKubeletFileTypes checks that a file type's own pods give way to
// maxPods and that its explicit overhead is kept.
func TestKubeletFileTypes(t *testing.T) {
	k, err := NewKubelet(&v1alpha1.KubeletConfiguration{MaxPods: ptr[int32](12), KubeReserved: map[string]v1alpha1.ReservedQuantity{"cpu": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	it := &InstanceType{Name: "std-8", CPU: 8000, Memory: 32 << 30, Pods: 110, Overhead: &Overhead{CPU: 200, Memory: 1 << 30}, Kubelet: k}
	st := NodeModel{}.SolverType(it, "")
	alloc := st.Allocatable()
	if alloc[solver.Pods] != 12 || alloc[solver.CPU] != 7800 || alloc[solver.Memory] != 31<<30 {
		t.Errorf("allocatable pods %d cpu %d memory %d, want 12, 7800, 31Gi", alloc[solver.Pods], alloc[solver.CPU], alloc[solver.Memory])
	}
}

func TestNewKubeletErrors(t *testing.T) {
	tests := []struct {
		kubelet v1alpha1.KubeletConfiguration
		want    string
	}{
		{v1alpha1.KubeletConfiguration{MaxPods: ptr[int32](-1)}, "kubelet.maxPods: must not be negative"},
		{v1alpha1.KubeletConfiguration{KubeReserved: map[string]v1alpha1.ReservedQuantity{"memory": "lots"}}, "kubelet.kubeReserved.memory: invalid quantity"},
		{v1alpha1.KubeletConfiguration{SystemReserved: map[string]v1alpha1.ReservedQuantity{"nvidia.com/gpu": "1"}}, "kubelet.systemReserved: unsupported resource"},
		{v1alpha1.KubeletConfiguration{EvictionHard: map[string]v1alpha1.EvictionThreshold{"memory.available": "150%"}}, "kubelet.evictionHard.memory.available: want a percentage"},
		{v1alpha1.KubeletConfiguration{EvictionHard: map[string]v1alpha1.EvictionThreshold{"memory.free": "1Gi"}}, `kubelet.evictionHard: unknown signal "memory.free"`},
	}
	for _, tc := range tests {
		_, err := NewKubelet(&tc.kubelet)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewKubelet(%+v) = %v, want an error containing %q", tc.kubelet, err, tc.want)
		}
	}
}

// TestSolverTypeKeepsAReservedOfferingsCount: a capacity reservation's
// offering reaches the solver with its count and reservation, which the
// solver plans first and never beyond (solver.Offering.Count).
func TestSolverTypeKeepsAReservedOfferingsCount(t *testing.T) {
	it := &InstanceType{Name: "m5.xlarge", CPU: 4000, Memory: 16 << 30, Offerings: []Offering{
		{Zone: "us-east-1a", CapacityType: CapacityTypeOnDemand, Price: 0.192},
		{Zone: "us-east-1a", CapacityType: CapacityTypeReserved, Price: 0.00001, Count: 2, ReservationID: "cr-aaa"},
	}}
	st := NodeModel{}.SolverType(it, "")
	if len(st.Offerings) != 2 {
		t.Fatalf("offerings %+v", st.Offerings)
	}
	if o := st.Offerings[0]; o.Count != 0 || o.Reservation != "" {
		t.Errorf("on-demand offering %+v has a reservation", o)
	}
	if o := st.Offerings[1]; o.CapacityType != CapacityTypeReserved || o.Count != 2 || o.Reservation != "cr-aaa" {
		t.Errorf("reserved offering %+v, want count 2 of cr-aaa", o)
	}
}
