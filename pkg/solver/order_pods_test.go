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
// of the same price, the same pods pending and each pod's node of the
// same type in the same zone (up to pods alike). The leaders-and-followers
// case is the one behind e2e TestOperatorLatePods: with the followers
// first it cost $0.255/h, with the leaders first $0.17/h.
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
				got := planByPod(ps, plan)
				if round == 0 {
					want, wantPrice = got, plan.TotalPrice
					continue
				}
				if math.Abs(plan.TotalPrice-wantPrice) > 1e-9 || got != want {
					t.Fatalf("order %d: $%.4f/h, placements\n%s\nwant $%.4f/h\n%s", round, plan.TotalPrice, got, wantPrice, want)
				}
			}
		})
	}
}

// planByPod describes where the plan puts each pod, by name: the type and
// zone of its node, or pending.
func planByPod(ps []Pod, plan *Plan) string {
	where := make([]string, len(ps))
	for i := range where {
		where[i] = "pending"
	}
	for _, n := range plan.NewNodes {
		for _, i := range n.Pods {
			where[i] = n.InstanceType + "/" + n.Zone
		}
	}
	lines := make([]string, len(ps))
	for i := range ps {
		lines[i] = ps[i].Key() + " " + where[i]
	}
	slices.Sort(lines)
	return fmt.Sprint(lines)
}
