package solver_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

var consNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// controlled makes pods that a Deployment would recreate.
func controlled(workload string, n int, req Resources) []Pod {
	out := pods(workload, n, req)
	for i := range out {
		out[i].Controller = true
	}
	return out
}

// labelsFor returns the labels a node of the type, pool and offering carries.
func labelsFor(p *Problem, name, typ, pool, zone, capacityType string) map[string]string {
	labels := map[string]string{}
	for i := range p.InstanceTypes {
		if p.InstanceTypes[i].Name == typ {
			for k, v := range p.InstanceTypes[i].Labels {
				labels[k] = v
			}
		}
	}
	for i := range p.Pools {
		if p.Pools[i].Name == pool {
			for k, v := range p.Pools[i].Labels {
				labels[k] = v
			}
		}
	}
	labels[LabelNodePool], labels[LabelZone], labels[LabelCapacityType], labels[LabelHostname] = pool, zone, capacityType, name
	return labels
}

// addNode adds an existing node of an instance type to the problem, running
// the pods, priced from the catalog and counted in its pool's usage.
func addNode(p *Problem, name, typ, pool, capacityType string, ps []Pod) *Node {
	n := Node{Name: name, Pool: pool, InstanceType: typ, Zone: "zone-a", CapacityType: capacityType, Pods: ps,
		Created: consNow.Add(-time.Hour), LastPodChange: consNow.Add(-time.Hour)}
	n.Labels = labelsFor(p, name, typ, pool, n.Zone, capacityType)
	for i := range p.InstanceTypes {
		it := &p.InstanceTypes[i]
		if it.Name != typ {
			continue
		}
		n.Allocatable = it.Allocatable()
		for _, o := range it.Offerings {
			if o.Zone == n.Zone && o.CapacityType == capacityType {
				n.Price = o.Price
			}
		}
		for pi := range p.Pools {
			if p.Pools[pi].Name == pool {
				p.Pools[pi].Used = p.Pools[pi].Used.Add(it.Capacity)
				n.Taints = p.Pools[pi].Taints
			}
		}
	}
	for i := range ps {
		req := ps[i].Requests
		req[Pods] = max(req[Pods], 1)
		n.Requested = n.Requested.Add(req)
	}
	p.Nodes = append(p.Nodes, n)
	return &p.Nodes[len(p.Nodes)-1]
}

func unlimitedPool(name string) Pool {
	p := onDemandPool(name)
	p.Consolidation.NodesAllowed = -1
	return p
}

func consolidateChecked(t *testing.T, p *Problem) *ConsolidationPlan {
	t.Helper()
	plan, err := Consolidate(p)
	if err != nil {
		t.Fatalf("Consolidate: %v", err)
	}
	if err := checkConsolidation(p, plan); err != nil {
		data, _ := json.MarshalIndent(plan, "", "  ")
		t.Fatalf("invalid consolidation plan: %v\n%s", err, data)
	}
	return plan
}

func blockedReason(plan *ConsolidationPlan, node string) string {
	for _, b := range plan.Blocked {
		if b.Node == node {
			return b.Reason
		}
	}
	return ""
}

func TestConsolidateActions(t *testing.T) {
	tests := []struct {
		name  string
		build func(p *Problem)
		want  func(t *testing.T, plan *ConsolidationPlan)
	}{
		{
			name: "an empty node is deleted",
			build: func(p *Problem) {
				addNode(p, "busy", "c6.2xlarge", "default", "on-demand", controlled("web", 7, res(1000, gi)))
				addNode(p, "idle", "m6.xlarge", "default", "on-demand", nil)
			},
			want: func(t *testing.T, plan *ConsolidationPlan) {
				if len(plan.Actions) != 1 || plan.Actions[0].Kind != ActionDelete || plan.Actions[0].Nodes[0] != "idle" || len(plan.Actions[0].Moves) != 0 {
					t.Fatalf("actions = %+v, want one Delete of idle", plan.Actions)
				}
				if math.Abs(plan.Saving-0.192) > 1e-9 {
					t.Errorf("saving = %v, want m6.xlarge's 0.192", plan.Saving)
				}
			},
		},
		{
			name: "a node whose pods fit elsewhere is deleted",
			build: func(p *Problem) {
				addNode(p, "busy", "c6.2xlarge", "default", "on-demand", controlled("web", 7, res(1000, gi)))
				addNode(p, "light", "c6.xlarge", "default", "on-demand", controlled("api", 1, res(500, gi)))
			},
			want: func(t *testing.T, plan *ConsolidationPlan) {
				if len(plan.Actions) != 1 || plan.Actions[0].Kind != ActionDelete || plan.Actions[0].Nodes[0] != "light" {
					t.Fatalf("actions = %+v, want one Delete of light", plan.Actions)
				}
				if m := plan.Actions[0].Moves; len(m) != 1 || m[0] != (Move{Pod: "default/api-0", To: "busy"}) {
					t.Errorf("moves = %v, want api-0 to busy", m)
				}
				if r := blockedReason(plan, "busy"); !strings.Contains(r, "takes pods from light") {
					t.Errorf("busy's reason %q, want that it takes light's pods", r)
				}
			},
		},
		{
			name: "an oversized node is replaced by a cheaper type",
			build: func(p *Problem) {
				addNode(p, "big", "m6.4xlarge", "default", "on-demand", controlled("web", 2, res(1000, 2*gi)))
			},
			want: func(t *testing.T, plan *ConsolidationPlan) {
				if len(plan.Actions) != 1 || plan.Actions[0].Kind != ActionReplace {
					t.Fatalf("actions = %+v, want one Replace", plan.Actions)
				}
				a := plan.Actions[0]
				if len(a.Replacements) != 1 || a.Replacements[0].Price >= 0.768 || a.Saving <= 0 {
					t.Errorf("replacements %+v saving %v, want one cheaper node", a.Replacements, a.Saving)
				}
				for _, m := range a.Moves {
					if m.To != "new-0" {
						t.Errorf("move %v, want to new-0", m)
					}
				}
			},
		},
		{
			name: "two half-empty nodes are merged",
			build: func(p *Problem) {
				addNode(p, "half-1", "m6.2xlarge", "default", "on-demand", controlled("a", 3, res(1500, gi)))
				addNode(p, "half-2", "m6.2xlarge", "default", "on-demand", controlled("b", 3, res(1500, gi)))
			},
			want: func(t *testing.T, plan *ConsolidationPlan) {
				if len(plan.Actions) != 1 || plan.Actions[0].Kind != ActionMerge || len(plan.Actions[0].Nodes) != 2 {
					t.Fatalf("actions = %+v, want one Merge of both nodes", plan.Actions)
				}
				if a := plan.Actions[0]; a.Saving < 0.768-0.68 || len(a.Moves) != 6 {
					t.Errorf("merge saves %v with %d moves, want at least m6.2xlarge×2 − c6.4xlarge and 6 moves", a.Saving, len(a.Moves))
				}
				if plan.TargetPrice > plan.CurrentPrice-plan.Saving+1e-9 {
					t.Errorf("target %v above the consolidated price %v", plan.TargetPrice, plan.CurrentPrice-plan.Saving)
				}
			},
		},
		{
			name: "room a pending pod needs is kept",
			build: func(p *Problem) {
				addNode(p, "busy", "c6.2xlarge", "default", "on-demand", controlled("web", 7, res(1000, gi)))
				addNode(p, "idle", "m6.xlarge", "default", "on-demand", nil)
				p.Pods = controlled("pending", 1, res(3000, 12*gi))
			},
			want: func(t *testing.T, plan *ConsolidationPlan) {
				if len(plan.Actions) != 0 {
					t.Fatalf("actions = %+v, want none", plan.Actions)
				}
				want := "the 1 pending pod that would land on it needs 3 vCPU free and the other nodes have 0.89 vCPU"
				if r := blockedReason(plan, "idle"); !strings.Contains(r, want) {
					t.Errorf("idle's reason %q, want %q", r, want)
				}
			},
		},
		{
			name: "budgets hold across actions",
			build: func(p *Problem) {
				p.Pools[0].Consolidation.NodesAllowed = 2
				for i := 0; i < 4; i++ {
					addNode(p, fmt.Sprintf("idle-%d", i), "m6.xlarge", "default", "on-demand", nil)
				}
			},
			want: func(t *testing.T, plan *ConsolidationPlan) {
				if len(plan.Actions) != 2 {
					t.Fatalf("%d actions, want 2 (the budget)", len(plan.Actions))
				}
				blocked := 0
				for _, b := range plan.Blocked {
					if strings.Contains(b.Reason, "budget allows 0 more nodes") {
						blocked++
					}
				}
				if blocked != 2 {
					t.Errorf("blocked = %+v, want two nodes held by the budget", plan.Blocked)
				}
			},
		},
		{
			name: "merges first when deletes leave much of the saving",
			build: func(p *Problem) {
				// Deleting two nodes onto the third saves 2/3 of the gap
				// to one c6.large; merging all three onto it saves it all.
				addNode(p, "a", "c6.xlarge", "default", "on-demand", controlled("x", 1, res(500, gi)))
				addNode(p, "b", "c6.xlarge", "default", "on-demand", controlled("y", 1, res(500, gi)))
				addNode(p, "c", "c6.xlarge", "default", "on-demand", controlled("z", 1, res(500, gi)))
			},
			want: func(t *testing.T, plan *ConsolidationPlan) {
				if len(plan.Actions) != 1 || plan.Actions[0].Kind != ActionMerge || len(plan.Actions[0].Nodes) != 3 ||
					math.Abs(plan.Saving-(plan.CurrentPrice-plan.TargetPrice)) > 1e-9 {
					t.Errorf("actions %+v, want one merge of all three nodes saving %v", plan.Actions, plan.CurrentPrice-plan.TargetPrice)
				}
			},
		},
		{
			name: "a node receiving pods is not removed by a later action",
			build: func(p *Problem) {
				// One type only: no merge onto a smaller node beats the
				// deletes, so the merge-first search does not take over.
				p.Pools[0].Requirements = append(p.Pools[0].Requirements, Requirement{Key: LabelInstanceType, Operator: OpIn, Values: []string{"c6.xlarge"}})
				addNode(p, "a", "c6.xlarge", "default", "on-demand", controlled("x", 1, res(500, gi)))
				addNode(p, "b", "c6.xlarge", "default", "on-demand", controlled("y", 1, res(500, gi)))
				addNode(p, "c", "c6.xlarge", "default", "on-demand", controlled("z", 1, res(500, gi)))
			},
			want: func(t *testing.T, plan *ConsolidationPlan) {
				removed := 0
				for _, a := range plan.Actions {
					removed += len(a.Nodes)
				}
				if removed != 2 || len(plan.Blocked) != 1 {
					t.Errorf("actions %+v blocked %+v, want two nodes emptied onto the third", plan.Actions, plan.Blocked)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Problem{Pools: []Pool{unlimitedPool("default")}, InstanceTypes: testTypes(), Options: Options{Now: consNow}}
			tc.build(p)
			tc.want(t, consolidateChecked(t, p))
		})
	}
}

// TestConsolidateExplicitZeroMinimum: a pool that sets its minimum saving
// to zero has none, while a pool that sets none has the default.
func TestConsolidateExplicitZeroMinimum(t *testing.T) {
	for _, set := range []bool{false, true} {
		p := &Problem{Pools: []Pool{unlimitedPool("default")}, InstanceTypes: testTypes(), Options: Options{Now: consNow}}
		p.Pools[0].Consolidation.MinSavingSet = set
		addNode(p, "busy", "c6.2xlarge", "default", "on-demand", controlled("web", 7, res(1000, gi)))
		addNode(p, "light", "c6.xlarge", "default", "on-demand", controlled("api", 1, res(500, gi)))
		p.Nodes[1].Price = 0.005 // below the default $0.011 for one pod
		plan := consolidateChecked(t, p)
		removed := slices.ContainsFunc(plan.Actions, func(a Action) bool { return slices.Contains(a.Nodes, "light") })
		if removed != set {
			t.Errorf("MinSavingSet %v (MinSaving 0): actions %+v; want light removed only with an explicit zero", set, plan.Actions)
		}
	}
}

// TestConsolidateBlockers starts from a cluster where the light node would
// be deleted (its pod fits on busy) and adds one blocker at a time.
func TestConsolidateBlockers(t *testing.T) {
	tests := []struct {
		name  string
		block func(p *Problem, light *Node)
		want  string
	}{
		{"pod with do-not-disrupt", func(p *Problem, n *Node) { n.Pods[0].DoNotDisrupt = true }, "pod default/api-0 has do-not-disrupt"},
		{"node with do-not-disrupt", func(p *Problem, n *Node) { n.DoNotDisrupt = true }, "the node has do-not-disrupt"},
		{"bare pod", func(p *Problem, n *Node) { n.Pods[0].Controller = false }, "pod default/api-0 has no controller and would be lost"},
		{"PDB allowing no disruption", func(p *Problem, n *Node) {
			n.Pods[0].Labels = map[string]string{"app": "api"}
			p.PDBs = []PDB{{Namespace: "default", Name: "api", Selector: Selector{MatchLabels: map[string]string{"app": "api"}}}}
		}, "PDB default/api allows 0 disruptions"},
		{"budget of zero", func(p *Problem, n *Node) { p.Pools[0].Consolidation.NodesAllowed = 0 }, "budget allows 0 more nodes now"},
		{"consolidateAfter not elapsed", func(p *Problem, n *Node) {
			p.Pools[0].Consolidation.After = 5 * time.Minute
			n.LastPodChange = consNow.Add(-2 * time.Minute)
		}, "pods changed 2m ago; consolidateAfter is 5m"},
		{"WhenEmpty pool and a pod", func(p *Problem, n *Node) { p.Pools[0].Consolidation.Policy = WhenEmpty }, "consolidates only empty nodes (WhenEmpty) and it runs 1 pod"},
		{"saving below the minimum", func(p *Problem, n *Node) { p.Pools[0].Consolidation.MinSaving = 1 }, "below the $1/h minimum"},
		{"saving below the minimum fraction", func(p *Problem, n *Node) { p.Pools[0].Consolidation.MinSavingFraction = 1.5 }, "below the $0.255/h minimum"},
		{"node still launching", func(p *Problem, n *Node) { n.InFlight = true }, "it is still launching"},
		{"pods need more room than the cluster has", func(p *Problem, n *Node) {
			n.Pods = append(n.Pods, controlled("fat", 1, res(2000, gi))...)
			n.Requested = n.Requested.Add(res(2000, gi))
		}, "its 2 pods need 2.5 vCPU free and the other nodes have 0.89 vCPU"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Problem{Pools: []Pool{unlimitedPool("default")}, InstanceTypes: testTypes(), Options: Options{Now: consNow}}
			addNode(p, "busy", "c6.2xlarge", "default", "on-demand", controlled("web", 7, res(1000, gi)))
			addNode(p, "light", "c6.xlarge", "default", "on-demand", controlled("api", 1, res(500, gi)))
			tc.block(p, &p.Nodes[1])
			plan := consolidateChecked(t, p)
			for _, a := range plan.Actions {
				for _, n := range a.Nodes {
					if n == "light" {
						t.Fatalf("light removed by %+v despite the blocker", a)
					}
				}
			}
			if r := blockedReason(plan, "light"); !strings.Contains(r, tc.want) {
				t.Errorf("reason %q, want it to contain %q", r, tc.want)
			}
		})
	}
}

func TestConsolidateStopsAtTheDeadline(t *testing.T) {
	p := consolidationCluster(rand.New(rand.NewPCG(5, 7)), 1500, 0.8)
	p.Options.Deadline = consNow // long past
	plan := consolidateChecked(t, p)
	for _, a := range plan.Actions {
		if len(a.Moves) > 0 {
			t.Fatalf("action %+v found after the deadline", a)
		}
	}
	if len(plan.Blocked) == 0 || !strings.Contains(plan.Blocked[0].Reason, "deadline") {
		t.Errorf("blocked = %+v, want the deadline named", plan.Blocked)
	}
}

func TestConsolidateIsDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	p := consolidationCluster(rng, 1500, 0.8)
	a, err := Consolidate(p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Consolidate(p)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("two plans of the same cluster differ")
	}
	if err := checkConsolidation(p, a); err != nil {
		t.Fatal(err)
	}
}

// TestConsolidateCapturesSaving runs a small suite (f) cluster and requires
// most of the achievable saving.
func TestConsolidateCapturesSaving(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		p := consolidationCluster(rand.New(rand.NewPCG(seed, 9)), 2000, 0.8)
		plan := consolidateChecked(t, p)
		achievable := plan.CurrentPrice - plan.TargetPrice
		share := plan.Saving / achievable
		t.Logf("seed %d: %d nodes, current %.2f target %.2f saving %.2f (%.0f%%), %d actions", seed, len(p.Nodes), plan.CurrentPrice, plan.TargetPrice, plan.Saving, 100*share, len(plan.Actions))
		if share < 0.9 {
			t.Errorf("seed %d: captured %.0f%% of the achievable saving, want ≥ 90%%", seed, 100*share)
		}
	}
}

// FuzzConsolidate builds random clusters (provisioned by the solver, then
// thinned, with random blockers, PDBs and budgets) and requires every plan
// to pass the replay checker.
func FuzzConsolidate(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint16(60))
	f.Add(uint64(3), uint64(4), uint16(300))
	f.Add(uint64(0), uint64(0), uint16(0))
	f.Fuzz(func(t *testing.T, s1, s2 uint64, n uint16) {
		rng := rand.New(rand.NewPCG(s1, s2))
		p := randomProblem(rng, int(n%400))
		var apps []string // randomProblem labels each workload's pods app=w<i>
		for i := range p.Pods {
			p.Pods[i].Controller = true
			if app := p.Pods[i].Labels["app"]; app != "" && !slices.Contains(apps, app) {
				apps = append(apps, app)
			}
		}
		provision(p, p.Pods, "n")
		p.Pods = nil
		p.Options.Now = consNow
		thin(rng, p, 0.8)
		for i := range p.Pools {
			p.Pools[i].Consolidation = Consolidation{NodesAllowed: rng.IntN(6) - 1, MinSaving: []float64{0, 0.05}[rng.IntN(2)]}
			if rng.IntN(4) == 0 {
				p.Pools[i].Consolidation.Policy = WhenEmpty
			}
			if rng.IntN(4) == 0 {
				p.Pools[i].Consolidation.After = time.Duration(rng.IntN(120)) * time.Minute
			}
		}
		for i := 0; i < rng.IntN(3) && len(apps) > 0; i++ {
			p.PDBs = append(p.PDBs, PDB{Namespace: "default", Name: "pdb" + strconv.Itoa(i),
				Selector: Selector{MatchLabels: map[string]string{"app": apps[rng.IntN(len(apps))]}}, DisruptionsAllowed: int32(rng.IntN(4))})
		}
		for i := range p.Nodes {
			n := &p.Nodes[i]
			switch rng.IntN(12) {
			case 0:
				n.DoNotDisrupt = true
			case 1:
				n.InFlight = true
			case 2:
				if len(n.Pods) > 0 {
					n.Pods[0].Controller = false
				}
			case 3:
				if len(n.Pods) > 0 {
					n.Pods[0].DoNotDisrupt = true
				}
			case 4:
				n.LastPodChange = consNow.Add(-time.Duration(rng.IntN(120)) * time.Minute)
			}
		}
		if rng.IntN(3) == 0 {
			p.Pods = controlled("pending", rng.IntN(10), res(int64(100+rng.IntN(2000)), gi))
		}
		plan, err := Consolidate(p)
		if err != nil {
			t.Fatalf("Consolidate: %v", err)
		}
		if err := checkConsolidation(p, plan); err != nil {
			data, _ := json.MarshalIndent(plan, "", "  ")
			t.Fatalf("invalid plan: %v\n%s", err, data)
		}
	})
}

// TestConsolidateSmallSavingsDoNotChurn: through the whole search, a merge
// or replacement that saves a small share of the price it removes is not
// planned, one that saves much is, and a pool's own minimum replaces the
// default share (issue 30: merges saving 3–5 % made us evict more pods
// than Karpenter).
func TestConsolidateSmallSavingsDoNotChurn(t *testing.T) {
	flat := func(name string, cpu int64, price float64) InstanceType {
		return InstanceType{Name: name, Labels: map[string]string{LabelInstanceType: name, "kubernetes.io/arch": "amd64"},
			Capacity:  Resources{CPU: cpu * 1000, Memory: cpu * 4 * gi, Pods: 110, EphemeralStorage: 20 * gi},
			Offerings: []Offering{{Zone: "zone-a", CapacityType: "on-demand", Price: price}}}
	}
	tests := []struct {
		name string
		// big is the price of the only type that holds both nodes' pods;
		// each node is a $1/h "small" more than half full.
		big      float64
		pool     Consolidation
		wantKind string // "" for no action
	}{
		{"a merge saving 5% and moving 15 pods is refused", 1.90, Consolidation{}, ""},
		{"a merge saving half the price is taken", 1.00, Consolidation{}, ActionMerge},
		{"a merge saving 12% is taken", 1.76, Consolidation{}, ActionMerge},
		{"a pool's own minimum replaces the share", 1.90, Consolidation{MinSaving: 0.05, MinSavingSet: true}, ActionMerge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := unlimitedPool("default")
			pool.Consolidation.MinSaving, pool.Consolidation.MinSavingSet = tt.pool.MinSaving, tt.pool.MinSavingSet
			p := &Problem{Pools: []Pool{pool}, InstanceTypes: []InstanceType{flat("small", 4, 1), flat("big", 8, tt.big)}, Options: Options{Now: consNow}}
			addNode(p, "a", "small", "default", "on-demand", controlled("x", 8, res(450, gi/2)))
			addNode(p, "b", "small", "default", "on-demand", controlled("y", 7, res(450, gi/2)))
			plan := consolidateChecked(t, p)
			if tt.wantKind == "" {
				if len(plan.Actions) != 0 {
					t.Fatalf("actions %+v, want none", plan.Actions)
				}
				// A replacement of one node must save 10% of its $1/h.
				if r := blockedReason(plan, "a"); !strings.Contains(r, "no replacement saves the $0.1/h minimum") {
					t.Errorf("a's reason %q, want the share a replacement must save", r)
				}
				return
			}
			if len(plan.Actions) != 1 || plan.Actions[0].Kind != tt.wantKind || len(plan.Actions[0].Moves) != 15 {
				t.Fatalf("actions %+v, want one %s moving 15 pods", plan.Actions, tt.wantKind)
			}
		})
	}
}
