package solver_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver/check"
)

// TestPackingReplaysTheWinner: re-solving a problem with Options.Packing
// set to its plan's Packing runs only the member that won, which finds the
// same price; on the problem widened to arm64 it finds a valid plan no
// cheaper than the whole portfolio's (it is one of the portfolio's plans).
func TestPackingReplaysTheWinner(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 3))
	dearer := 0 // widened problems where the one member lost to the portfolio
	for i := range 12 {
		p := &Problem{Pods: tracePods(rng, 20+rng.IntN(300), 1+rng.IntN(8)), Pools: []Pool{widenedPool([]string{"amd64"}, []string{"on-demand"})}, InstanceTypes: append(testTypes(), armTypes(rng)...)}
		if i%2 == 1 { // with topology: no first-fit member
			for j := range p.Pods {
				p.Pods[j].Labels = map[string]string{"app": strings.TrimPrefix(p.Pods[j].Owner, "Deployment/")}
				p.Pods[j].Spread = []TopologySpread{{TopologyKey: LabelZone, MaxSkew: 1, WhenUnsatisfiable: "DoNotSchedule", Selector: Selector{MatchLabels: p.Pods[j].Labels}}}
			}
		}
		full, err := Solve(p)
		if err != nil {
			t.Fatal(err)
		}
		if full.Packing() == (Packing{}) {
			t.Fatalf("problem %d: the plan names no portfolio member", i)
		}
		again := *p
		again.Options.Packing = full.Packing()
		replay, err := Solve(&again)
		if err != nil {
			t.Fatal(err)
		}
		if replay.TotalPrice != full.TotalPrice || len(replay.Unschedulable) != len(full.Unschedulable) {
			t.Errorf("problem %d: replaying the winner plans $%v/h (%d unplaced), the portfolio $%v/h (%d)", i, replay.TotalPrice, len(replay.Unschedulable), full.TotalPrice, len(full.Unschedulable))
		}
		wide := *p
		wide.Pools = []Pool{widenedPool([]string{"amd64", "arm64"}, []string{"on-demand"})}
		wide.Options.NoNarrowing = true
		all, err := Solve(&wide)
		if err != nil {
			t.Fatal(err)
		}
		wide.Options.Packing = full.Packing()
		one, err := Solve(&wide)
		if err != nil {
			t.Fatal(err)
		}
		if err := check.Plan(&wide, one); err != nil {
			t.Fatalf("problem %d: invalid plan: %v", i, err)
		}
		if one.TotalPrice < all.TotalPrice-1e-6 {
			t.Errorf("problem %d: one member $%v/h beat the whole portfolio's $%v/h", i, one.TotalPrice, all.TotalPrice)
		}
		if one.TotalPrice > all.TotalPrice+1e-6 {
			dearer++
		}
	}
	// Were the whole portfolio run, the prices would always be equal.
	if dearer == 0 {
		t.Errorf("one member never planned dearer than the portfolio: Options.Packing seems ignored")
	}
	t.Logf("one member dearer than the portfolio on %d of 12 widened problems", dearer)
}
