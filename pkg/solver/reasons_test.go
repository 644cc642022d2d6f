package solver_test

import (
	"strings"
	"testing"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestUnschedulableReasonsNameTheRealCause: a pod no pool can take is told
// what actually rules the types out (issue 33: GPU pods were told how much
// CPU the largest CPU type has; the cheapest type "that would fit" was of an
// architecture the pool excludes; a GPU-model affinity was reported as a
// lack of room).
func TestUnschedulableReasonsNameTheRealCause(t *testing.T) {
	gpuPod := func(name string, affinity []Term) Pod {
		r := res(2000, 4*gi)
		r[GPU] = 1
		return Pod{Namespace: "default", Name: name, Requests: r, Affinity: affinity}
	}
	// gpuTypes adds two GPU types to the CPU-only test catalog: an arm64
	// one, cheaper, and an amd64 one, both with room for gpuPod.
	gpuTypes := func() []InstanceType {
		types := testTypes()
		for _, g := range []struct {
			name, arch, gpu string
			price           float64
		}{{"g5g.xlarge", "arm64", "t4g", 0.42}, {"g4dn.xlarge", "amd64", "t4", 0.526}} {
			types = append(types, InstanceType{
				Name:      g.name,
				Labels:    map[string]string{LabelInstanceType: g.name, "kubernetes.io/arch": g.arch, "karpenter.k8s.aws/instance-gpu-name": g.gpu},
				Capacity:  Resources{CPU: 4000, Memory: 16 * gi, Pods: 29, EphemeralStorage: 20 * gi, GPU: 1},
				Overhead:  Resources{CPU: 90, Memory: 1 * gi},
				Offerings: []Offering{{Zone: "zone-a", CapacityType: "on-demand", Price: g.price}},
			})
		}
		return types
	}
	amd64CPUPool := Pool{Name: "default", Requirements: []Requirement{
		{Key: LabelCapacityType, Operator: OpIn, Values: []string{"on-demand"}},
		{Key: "kubernetes.io/arch", Operator: OpIn, Values: []string{"amd64"}},
		{Key: "karpenter.k8s.aws/instance-family", Operator: OpIn, Values: []string{"c6", "m6", "r6"}},
	}}
	for _, tc := range []struct {
		name      string
		pod       Pod
		types     []InstanceType
		want, not []string
	}{
		{
			name:  "a GPU pod on a pool of CPU types is told no type has a GPU",
			pod:   gpuPod("gpu", nil),
			types: gpuTypes(),
			want:  []string{"none of the 15 instance types allowed by NodePool default has nvidia.com/gpu, which the pod requests (1 nvidia.com/gpu)"},
			not:   []string{"the largest"},
		},
		{
			name:  "the cheapest type that would fit keeps the pool's architecture",
			pod:   gpuPod("gpu", nil),
			types: gpuTypes(),
			want:  []string{"the cheapest instance type that would fit, if a NodePool allowed it, is g4dn.xlarge"},
			not:   []string{"g5g.xlarge"},
		},
		{
			name:  "a GPU-model affinity no fitting type satisfies is named",
			pod:   gpuPod("v100", []Term{{{Key: "karpenter.k8s.aws/instance-gpu-name", Operator: OpIn, Values: []string{"v100"}}}}),
			types: gpuTypes(),
			want:  []string{"no instance type in the catalog that matches the pod's node affinity (karpenter.k8s.aws/instance-gpu-name In [v100]) has room for 2 CPU, 4Gi memory and 1 nvidia.com/gpu"},
		},
		{
			name:  "a pod too large for every type is told so, with no affinity blamed",
			pod:   Pod{Namespace: "default", Name: "huge", Requests: res(900_000, 4*gi)},
			types: gpuTypes(),
			want:  []string{"no instance type in the catalog has room for 900 CPU and 4Gi memory"},
			not:   []string{"matches the pod's"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Problem{Pods: []Pod{tc.pod}, InstanceTypes: tc.types, Pools: []Pool{amd64CPUPool}}
			plan, err := Solve(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Unschedulable) != 1 {
				t.Fatalf("unschedulable = %+v, want the pod", plan.Unschedulable)
			}
			reason := plan.Unschedulable[0].Reason
			for _, w := range tc.want {
				if !strings.Contains(reason, w) {
					t.Errorf("reason %q\nlacks %q", reason, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(reason, n) {
					t.Errorf("reason %q\nhas %q", reason, n)
				}
			}
		})
	}
}
