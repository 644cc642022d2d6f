package solver_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestPlanDoesNotDependOnPodOrder: the same pods in any order get a plan
// of the same price that leaves as many pods of each workload pending.
// The leaders-and-followers case is the one behind e2e
// TestOperatorLatePods: with the followers first it cost $0.255/h, with
// the leaders first $0.17/h.
func TestPlanDoesNotDependOnPodOrder(t *testing.T) {
	group := Selector{MatchLabels: map[string]string{"group": "g1"}}
	var leaders []Pod
	for i := range 2 {
		leaders = append(leaders, Pod{Namespace: "default", Name: fmt.Sprintf("leader-%d", i), Owner: "Deployment/leader", Requests: res(1000, 512*mi),
			Labels: map[string]string{"app": "leader", "group": "g1"},
			Spread: []TopologySpread{{MaxSkew: 1, TopologyKey: LabelZone, WhenUnsatisfiable: DoNotSchedule, Selector: group}}})
		leaders = append(leaders, Pod{Namespace: "default", Name: fmt.Sprintf("follower-%d", i), Owner: "Deployment/follower", Requests: res(250, 512*mi),
			Labels: map[string]string{"app": "follower", "group": "g1"}, NodeSelector: map[string]string{LabelZone: "zone-a"},
			PodAffinity: []PodAffinityTerm{{TopologyKey: LabelHostname, Selector: Selector{MatchLabels: map[string]string{"app": "leader"}}}}})
	}
	rng := rand.New(rand.NewPCG(13, 13))
	tests := []struct {
		name string
		pods []Pod
	}{
		{"leaders and followers", leaders},
		{"microservices", randomPods(rng, 300)},
		{"large and small pods", append(pods("large", 10, res(0, 1_800_000_000)), pods("small", 5, res(0, 400_000_000))...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want string
			var wantPrice float64
			for round := range 6 {
				ps := slices.Clone(tt.pods)
				switch round {
				case 0:
				case 1:
					slices.Reverse(ps)
				default:
					rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
				}
				plan, err := Solve(&Problem{Pods: ps, Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()})
				if err != nil {
					t.Fatal(err)
				}
				got := pendingByOwner(ps, plan)
				if round == 0 {
					want, wantPrice = got, plan.TotalPrice
					continue
				}
				if math.Abs(plan.TotalPrice-wantPrice) > 1e-9 || got != want {
					t.Fatalf("order %d: $%.4f/h, pending %s; want $%.4f/h, pending %s", round, plan.TotalPrice, got, wantPrice, want)
				}
			}
		})
	}
}

// pendingByOwner counts the pods the plan leaves pending, by owner.
func pendingByOwner(ps []Pod, plan *Plan) string {
	count := map[string]int{}
	for _, u := range plan.Unschedulable {
		count[ps[u.Pod].Owner]++
	}
	return fmt.Sprint(count)
}
