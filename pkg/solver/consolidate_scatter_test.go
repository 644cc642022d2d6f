package solver_test

import (
	"strings"
	"testing"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestConsolidateDeleteSurvivesKubeScheduler: a delete is chosen only when
// its pods find room as kube-scheduler places them (the emptiest node
// first), not just as the simulation packs them. Node x's pods (2 CPU and
// two of 0.5 CPU) fit the others' free room packed (2 onto c, the halves
// onto a), but kube-scheduler, taking the halves first, puts both on the
// emptiest node c and leaves 2 CPU nowhere: the provisioner would launch a
// node for it, which the next plan deletes again. With 1 CPU more free on
// c, kube-scheduler's placement holds them too and x is deleted.
func TestConsolidateDeleteSurvivesKubeScheduler(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cFree   int64 // millicores free on node c
		deleted bool
	}{
		{"kube-scheduler leaves a pod pending", 2000, false},
		{"kube-scheduler finds room", 3000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Problem{Pools: []Pool{unlimitedPool("default")}, InstanceTypes: testTypes(), Options: Options{Now: consNow}}
			alloc := func(typ string) int64 {
				for _, it := range p.InstanceTypes {
					if it.Name == typ {
						return it.Allocatable()[CPU]
					}
				}
				t.Fatalf("no type %s", typ)
				return 0
			}
			// a, b and c stay (do-not-disrupt): only x is a candidate.
			addNode(p, "a", "c6.xlarge", "default", "on-demand", controlled("fill-a", 1, res(alloc("c6.xlarge")-1000, 100*mi))).DoNotDisrupt = true
			addNode(p, "b", "c6.xlarge", "default", "on-demand", controlled("fill-b", 1, res(alloc("c6.xlarge")-1000, 100*mi))).DoNotDisrupt = true
			addNode(p, "c", "m6.2xlarge", "default", "on-demand", controlled("fill-c", 1, res(alloc("m6.2xlarge")-tc.cFree, 100*mi))).DoNotDisrupt = true
			addNode(p, "x", "m6.xlarge", "default", "on-demand",
				append(controlled("big", 1, res(2000, 100*mi)), controlled("half", 2, res(500, 100*mi))...))
			plan := consolidateChecked(t, p)
			var kind string
			for _, a := range plan.Actions {
				if len(a.Nodes) == 1 && a.Nodes[0] == "x" {
					kind = a.Kind
				}
			}
			if got := kind == ActionDelete; got != tc.deleted {
				t.Fatalf("x deleted = %v, want %v; actions %+v, blocked %+v", got, tc.deleted, plan.Actions, plan.Blocked)
			}
			if why := blockedReason(plan, "x"); !tc.deleted && kind == "" && !strings.Contains(why, "kube-scheduler would spread") {
				t.Errorf("x kept for %q, want kube-scheduler's placement named", why)
			}
		})
	}
}
