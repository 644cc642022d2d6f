package solver

import (
	"strings"
	"testing"
)

// TestReplaceRefusal: an action launching nodes must save
// DefaultMinReplaceFraction of the price it removes when a pool of its
// nodes keeps the default minimum, and may not launch a node of a removed
// node's type and zone that costs as much; deletes are never refused.
func TestReplaceRefusal(t *testing.T) {
	withPods := func(name, typ, zone string, price float64, pods int) *consNode {
		n := &consNode{Node: Node{Name: name, InstanceType: typ, Zone: zone, Price: price}}
		for range pods {
			n.Pods = append(n.Pods, Pod{Owner: "Deployment/web"})
		}
		return n
	}
	newNode := func(typ, zone string, price float64) NewNode {
		return NewNode{InstanceType: typ, Zone: zone, Price: price}
	}
	tests := []struct {
		name     string
		pool     Consolidation
		set      []*consNode
		launched []NewNode
		saving   float64
		want     string // "" or a part of the refusal
	}{
		{"a merge saving 5% and moving 15 pods is refused",
			Consolidation{}, []*consNode{withPods("a", "m.xl", "z1", 1.07, 8), withPods("b", "m.xl", "z1", 1.07, 7)},
			[]NewNode{newNode("c.2xl", "z1", 2.033)}, 0.107, "5.0% of the $2.14/h it removes, below the 10%"},
		{"a merge saving 3% is refused",
			Consolidation{}, []*consNode{withPods("a", "m.xl", "z1", 1, 3), withPods("b", "m.xl", "z1", 1, 3)},
			[]NewNode{newNode("c.2xl", "z1", 1.94)}, 0.06, "below the 10%"},
		{"a merge saving half the price is taken",
			Consolidation{}, []*consNode{withPods("a", "m.xl", "z1", 1, 8), withPods("b", "m.xl", "z1", 1, 7)},
			[]NewNode{newNode("c.xl", "z1", 1)}, 1, ""},
		{"a merge saving exactly the fraction is taken",
			Consolidation{}, []*consNode{withPods("a", "m.xl", "z1", 1, 8), withPods("b", "m.xl", "z1", 1, 7)},
			[]NewNode{newNode("c.2xl", "z1", 1.8)}, 0.2, ""},
		{"a replacement saving 5% is refused",
			Consolidation{}, []*consNode{withPods("a", "m.2xl", "z1", 0.4, 4)},
			[]NewNode{newNode("c.2xl", "z1", 0.38)}, 0.02, "below the 10%"},
		{"a pool's own minimum replaces the fraction",
			Consolidation{MinSaving: 0.05}, []*consNode{withPods("a", "m.xl", "z1", 1.07, 8), withPods("b", "m.xl", "z1", 1.07, 7)},
			[]NewNode{newNode("c.2xl", "z1", 2.033)}, 0.107, ""},
		{"a pool's explicit zero minimum replaces the fraction",
			Consolidation{MinSavingSet: true}, []*consNode{withPods("a", "m.2xl", "z1", 0.4, 4)},
			[]NewNode{newNode("c.2xl", "z1", 0.38)}, 0.02, ""},
		{"a delete is never refused",
			Consolidation{}, []*consNode{withPods("a", "m.xl", "z1", 1, 8)}, nil, 0.001, ""},
		{"nodes without pods to evict are not held to the fraction",
			Consolidation{}, []*consNode{withPods("a", "m.2xl", "z1", 0.4, 0)},
			[]NewNode{newNode("c.2xl", "z1", 0.38)}, 0.02, ""},
		{"a merge launching a node as dear as a removed one of its type and zone is refused",
			Consolidation{}, []*consNode{withPods("big", "m.4xl", "z1", 0.8, 10), withPods("small-1", "m.xl", "z1", 0.2, 2), withPods("small-2", "m.xl", "z1", 0.2, 2)},
			[]NewNode{newNode("m.4xl", "z1", 0.8)}, 0.4, "keeping big and deleting the others moves fewer pods"},
		{"a merge launching several nodes, one as dear as a removed one, is taken",
			Consolidation{}, []*consNode{withPods("large", "m.4xl", "z1", 0.4, 1), withPods("small", "m.l", "z1", 0.1, 1)},
			[]NewNode{newNode("m.l", "z1", 0.1), newNode("m.l", "z1", 0.1)}, 0.3, ""},
		{"a merge launching a cheaper node of a removed one's type is taken",
			Consolidation{}, []*consNode{withPods("big", "m.4xl", "z1", 0.8, 10), withPods("small", "m.xl", "z1", 0.2, 2)},
			[]NewNode{newNode("m.4xl", "z1", 0.5)}, 0.5, ""},
		{"a merge launching a removed node's type in another zone is taken",
			Consolidation{}, []*consNode{withPods("big", "m.4xl", "z1", 0.8, 10), withPods("small-1", "m.xl", "z2", 0.2, 2), withPods("small-2", "m.xl", "z2", 0.2, 2)},
			[]NewNode{newNode("m.4xl", "z2", 0.8)}, 0.4, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &consolidator{p: &Problem{Pools: []Pool{{Name: "default", Consolidation: tt.pool}}}}
			got := c.replaceRefusal(tt.set, tt.launched, tt.saving)
			switch {
			case tt.want == "" && got != "":
				t.Errorf("refused: %q, want it taken", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("refusal %q, want one containing %q", got, tt.want)
			}
		})
	}
}

// TestMergesFirstPays: the merges-first plan replaces the deletes-first one
// only when it saves more and its extra saving brings
// DefaultMinSavingPerPod for every extra pod it evicts.
func TestMergesFirstPays(t *testing.T) {
	plan := func(saving float64, moves int) *ConsolidationPlan {
		a := Action{Kind: ActionMerge, Saving: saving, Moves: make([]Move, moves)}
		return &ConsolidationPlan{Actions: []Action{a}, Saving: saving}
	}
	tests := []struct {
		name            string
		deletes, merges *ConsolidationPlan
		want            bool
	}{
		{"suite (f), 62 AWS nodes: $0.18/h more for 967 more pods", plan(1.116, 251), plan(1.298, 1218), false},
		{"more saving for fewer evictions", plan(0.34, 2), plan(0.425, 1), true},
		{"more saving, a cent an extra pod", plan(0.34, 2), plan(0.425, 3), true},
		{"the extra saving just pays its extra pods", plan(1, 100), plan(1.1, 200), true},
		{"the extra saving just short of its extra pods", plan(1, 100), plan(1.099, 200), false},
		{"no more saving", plan(1, 10), plan(1, 5), false},
		{"the deletes find nothing", &ConsolidationPlan{}, plan(0.1, 15), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mergesFirstPays(tt.deletes, tt.merges); got != tt.want {
				t.Errorf("mergesFirstPays = %v, want %v", got, tt.want)
			}
		})
	}
}
