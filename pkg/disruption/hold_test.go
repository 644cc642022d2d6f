package disruption

import (
	"strings"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestHoldKeepsActionsUnderWayOutOfTheNextPlan: a plan made while chosen
// actions wait for their validation or run does not choose their nodes
// again, does not move pods onto the room they count on, and leaves the
// budget and PDB allowance they use to them.
func TestHoldKeepsActionsUnderWayOutOfTheNextPlan(t *testing.T) {
	web := []solver.PDB{{Namespace: "ns", Name: "web", Selector: solver.Selector{MatchLabels: map[string]string{"app": "web"}}, DisruptionsAllowed: 1}}
	tests := []struct {
		name  string
		setup func() *fixture
		// without is how many actions the second plan chooses without
		// holding the first plan's; with, holding them.
		without, with int
		// refusal names a node and what its refusal says when held.
		node, refusal string
	}{{
		name: "its nodes are not chosen again",
		setup: func() *fixture {
			f := newFixture(v1alpha1.Budget{Nodes: "100%"})
			f.node("a", "small")
			f.node("b", "small")
			return f
		},
		without: 1, with: 0, node: "a", refusal: heldNode,
	}, {
		name: "the budget it uses is used",
		setup: func() *fixture {
			f := withMedium(newFixture(v1alpha1.Budget{Nodes: "3"}))
			for _, n := range []string{"x", "y", "z", "w"} {
				f.node(n, "large", 5000)
			}
			return f
		},
		// The first action merges three nodes; the fourth waits for the
		// budget.
		without: 1, with: 0, node: "z", refusal: "budget allows 0 more",
	}, {
		name: "the PDB allowance it uses is used",
		setup: func() *fixture {
			f := withMedium(newFixture(v1alpha1.Budget{Nodes: "100%"}))
			f.node("x", "large", 5000)
			f.node("y", "large", 5000)
			f.movePool("pool-y")
			f.p.PDBs = web
			return f
		},
		without: 1, with: 0, node: "", refusal: "PDB ns/web allows 0",
	}, {
		name: "the node its pods move onto takes no more",
		setup: func() *fixture {
			f := newFixture(v1alpha1.Budget{Nodes: "100%"})
			f.node("big", "large", 6000)
			f.node("s1", "small", 1000)
			f.node("s2", "small", 1000)
			return f
		},
		// Each small node's pod fits in big's room, and both fit: the
		// second action waits while the first one's pod moves there.
		without: 2, with: 0, node: "big", refusal: heldTarget,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.setup()
			_, first, _ := f.choose(t)
			if first == nil {
				t.Fatal("the first plan chose nothing")
			}
			second := func(hold bool) ([]*Candidate, map[string]Refusal, *View) {
				v := f.view(t)
				if hold {
					v.Hold([]*Candidate{first})
				}
				plan, err := solver.Consolidate(v.problem)
				if err != nil {
					t.Fatal(err)
				}
				chosen, refused := v.Choose(plan)
				return chosen, refused, v
			}
			// Without holding, the second plan chooses (its first action
			// included) as if nothing were under way.
			if chosen, _, _ := second(false); len(chosen) != tt.without {
				t.Fatalf("without holding %v: chose %d actions %+v, want %d", first.Action.Nodes, len(chosen), chosen, tt.without)
			}
			chosen, refused, v := second(true)
			if len(chosen) != tt.with {
				t.Errorf("holding %v: chose %+v, want %d actions; refused %+v", first.Action.Nodes, chosen, tt.with, refused)
			}
			node := tt.node
			if node == "" {
				// The node the first action left.
				for _, n := range f.p.Nodes {
					if !strings.Contains(strings.Join(first.Action.Nodes, ","), n.Name) {
						node = n.Name
					}
				}
			}
			if r := refused[node]; !strings.Contains(r.Reason, tt.refusal) {
				t.Errorf("holding %v: node %s refused with %q, want %q", first.Action.Nodes, node, r.Reason, tt.refusal)
			}
			for _, n := range first.Action.Nodes {
				if sn := &v.problem.Nodes[v.nodes[n].index]; !sn.Unschedulable || !sn.DoNotDisrupt {
					t.Errorf("held node %s: unschedulable %v, do-not-disrupt %v; want both", n, sn.Unschedulable, sn.DoNotDisrupt)
				}
			}
		})
	}
}
