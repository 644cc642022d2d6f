package solver_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

const (
	gi = int64(1) << 30
	mi = int64(1) << 20
)

// res builds a resource vector from CPU millicores and memory bytes.
func res(cpu, mem int64) Resources {
	var r Resources
	r[CPU], r[Memory], r[Pods] = cpu, mem, 1
	return r
}

// family is a synthetic instance family: memory per vCPU and price per vCPU.
type family struct {
	name        string
	gibPerCPU   int64
	pricePerCPU float64
}

var testFamilies = []family{{"c", 2, 0.0425}, {"m", 4, 0.048}, {"r", 8, 0.063}}

// testTypes is a small AWS-like catalog: three families, sizes 2–32 vCPU,
// two zones, on-demand and spot at 40% off, EKS-like overhead.
func testTypes() []InstanceType {
	var out []InstanceType
	sizes := []struct {
		name string
		cpu  int64
	}{{"large", 2}, {"xlarge", 4}, {"2xlarge", 8}, {"4xlarge", 16}, {"8xlarge", 32}}
	for _, f := range testFamilies {
		for _, sz := range sizes {
			name := f.name + "6." + sz.name
			price := float64(sz.cpu) * f.pricePerCPU
			pods := min(sz.cpu*15, 110)
			t := InstanceType{
				Name: name,
				Labels: map[string]string{
					LabelInstanceType:                     name,
					"karpenter.k8s.aws/instance-family":   f.name + "6",
					"karpenter.k8s.aws/instance-category": f.name,
					"karpenter.k8s.aws/instance-cpu":      strconv.FormatInt(sz.cpu, 10),
					"kubernetes.io/arch":                  "amd64",
				},
				Capacity: Resources{CPU: sz.cpu * 1000, Memory: sz.cpu * f.gibPerCPU * gi, Pods: pods, EphemeralStorage: 20 * gi},
				Overhead: Resources{CPU: 70 + sz.cpu*5, Memory: (11*pods+355)*mi + sz.cpu*f.gibPerCPU*gi*75/1000, EphemeralStorage: 3 * gi},
			}
			for _, z := range []string{"zone-a", "zone-b"} {
				t.Offerings = append(t.Offerings, Offering{Zone: z, CapacityType: "on-demand", Price: price})
				t.Offerings = append(t.Offerings, Offering{Zone: z, CapacityType: "spot", Price: price * 0.6})
			}
			out = append(out, t)
		}
	}
	return out
}

// onDemandPool allows every type, on-demand only.
func onDemandPool(name string) Pool {
	return Pool{Name: name, Requirements: []Requirement{{Key: LabelCapacityType, Operator: OpIn, Values: []string{"on-demand"}}}}
}

// kubeletTypes returns types as a pool with kubelet settings sees them: at
// most maxPods pods, and reserved more memory kept back.
func kubeletTypes(types []InstanceType, maxPods, reserved int64) []InstanceType {
	for i := range types {
		types[i].Capacity[Pods] = min(types[i].Capacity[Pods], maxPods)
		types[i].Overhead[Memory] += reserved
	}
	return types
}

// pods makes n pods of one shape owned by a workload.
func pods(workload string, n int, req Resources) []Pod {
	out := make([]Pod, n)
	for i := range out {
		out[i] = Pod{Namespace: "default", Name: fmt.Sprintf("%s-%d", workload, i), Owner: "Deployment/" + workload, Requests: req}
	}
	return out
}

// randomPods draws microservice-like pods: a few dozen workloads with
// log-normal-ish shapes and skewed replica counts, n pods in all.
func randomPods(rng *rand.Rand, n int) []Pod {
	var out []Pod
	for w := 0; len(out) < n; w++ {
		cpu := int64(50 + rng.ExpFloat64()*600)
		ratio := []int64{1, 2, 4, 8}[rng.IntN(4)]
		mem := cpu * ratio * mi * 1024 / 1000
		replicas := 1 + int(rng.ExpFloat64()*float64(n)/30)
		replicas = min(replicas, n-len(out))
		out = append(out, pods(fmt.Sprintf("svc%d", w), replicas, res(cpu, mem))...)
	}
	return out
}
