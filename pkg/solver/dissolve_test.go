package solver_test

import (
	"math"
	"testing"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// sizedType is an amd64 type of Karpenter's fake provider's shape: no
// overhead, offered on demand in two zones at one price.
func sizedType(name string, cpu, memGi, pods int64, price float64) InstanceType {
	t := InstanceType{
		Name:     name,
		Labels:   map[string]string{LabelInstanceType: name, "kubernetes.io/arch": "amd64"},
		Capacity: Resources{CPU: cpu * 1000, Memory: memGi * gi, Pods: pods},
	}
	for _, z := range []string{"zone-a", "zone-b"} {
		t.Offerings = append(t.Offerings, Offering{Zone: z, CapacityType: "on-demand", Price: price})
	}
	return t
}

// TestSmallPodsFillLargePodsNodes: small pods ride in the room large pods
// leave rather than on nodes of their own, although every single move
// between the two plans costs the same or more until the last. Written from
// kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/suite_test.go,
// Binpacking It("should pack small and large pods together") (conformance
// scenario binpack-small-and-large), with its fake types' prices: a 2Gi
// type at half the 4Gi one's price, less a hundredth of a cent.
func TestSmallPodsFillLargePodsNodes(t *testing.T) {
	types := []InstanceType{
		sizedType("default", 4, 4, 5, 0.8295),
		sizedType("small", 2, 2, 5, 0.4147),
		sizedType("single", 4, 4, 1, 0.8295),
	}
	tests := []struct {
		name         string
		large, small int
		want         float64
	}{
		// Two large and one small pod fill a 4Gi node; a 2Gi node holds one
		// large pod and no small one.
		{"Karpenter's 40 large and 20 small", 40, 20, 20 * 0.8295},
		{"one small pod per two large", 10, 5, 5 * 0.8295},
		// Without small pods the 2Gi nodes are the cheapest.
		{"large pods alone", 10, 0, 10 * 0.4147},
		// More small pods than the large pods' nodes have room for: the
		// rest go five to a 2Gi node.
		{"small pods left over", 4, 12, 2*0.8295 + 2*0.4147},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := append(pods("large", tt.large, res(0, 1_800_000_000)), pods("small", tt.small, res(0, 400_000_000))...)
			plan, err := Solve(&Problem{Pods: ps, Pools: []Pool{onDemandPool("default")}, InstanceTypes: types})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Unschedulable) != 0 {
				t.Fatalf("%d pods unschedulable: %+v", len(plan.Unschedulable), plan.Unschedulable[0])
			}
			if math.Abs(plan.TotalPrice-tt.want) > 1e-6 {
				t.Errorf("plan costs $%.4f/h, want $%.4f/h", plan.TotalPrice, tt.want)
			}
		})
	}
}
