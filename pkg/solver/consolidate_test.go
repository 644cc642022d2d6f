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
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver/bench"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver/check"
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

// provision launches the solver's nodes for the pods onto the problem, as
// a cluster provisioned by this solver would look.
func provision(p *Problem, ps []Pod, prefix string) {
	q := *p
	q.Pods = ps
	plan, err := Solve(&q)
	if err != nil {
		panic(err)
	}
	for _, e := range plan.Existing {
		for i := range p.Nodes {
			if p.Nodes[i].Name == e.Node {
				p.Nodes[i].Pods = append(p.Nodes[i].Pods, ps[e.Pod])
				p.Nodes[i].Requested = p.Nodes[i].Requested.Add(podReq(&ps[e.Pod]))
			}
		}
	}
	for _, nn := range plan.NewNodes {
		name := prefix + strconv.Itoa(len(p.Nodes))
		n := Node{Name: name, Pool: nn.Pool, InstanceType: nn.InstanceType, Zone: nn.Zone, CapacityType: nn.CapacityType, Price: nn.Price,
			Labels: labelsFor(p, name, nn.InstanceType, nn.Pool, nn.Zone, nn.CapacityType), Allocatable: nn.Allocatable,
			Created: consNow.Add(-time.Hour), LastPodChange: consNow.Add(-time.Hour)}
		for pi := range p.Pools {
			if p.Pools[pi].Name == nn.Pool {
				n.Taints = p.Pools[pi].Taints
				for ti := range p.InstanceTypes {
					if p.InstanceTypes[ti].Name == nn.InstanceType {
						p.Pools[pi].Used = p.Pools[pi].Used.Add(p.InstanceTypes[ti].Capacity)
					}
				}
			}
		}
		for _, pi := range nn.Pods {
			n.Pods = append(n.Pods, ps[pi])
			n.Requested = n.Requested.Add(podReq(&ps[pi]))
		}
		p.Nodes = append(p.Nodes, n)
	}
}

func podReq(p *Pod) Resources {
	r := p.Requests
	r[Pods] = max(r[Pods], 1)
	return r
}

// thin removes, from each node, each pod with a probability drawn per node
// from [0, most).
func thin(rng *rand.Rand, p *Problem, most float64) {
	for i := range p.Nodes {
		n := &p.Nodes[i]
		frac := rng.Float64() * most
		kept := n.Pods[:0]
		for _, pod := range n.Pods {
			if rng.Float64() < frac {
				n.Requested = n.Requested.Sub(podReq(&pod))
				continue
			}
			kept = append(kept, pod)
		}
		n.Pods = kept
	}
}

// consolidationCluster is suite (f) on the test catalog: n microservice
// pods provisioned by the solver as they arrived in ten batches, then 0–most
// of each node's pods removed. Nodes have at most 16 vCPU, as many users cap
// instance sizes: about 1,000 nodes for 20,000 pods.
func consolidationCluster(rng *rand.Rand, n int, most float64) *Problem {
	pool := Pool{Name: "default", Requirements: []Requirement{{Key: "karpenter.k8s.aws/instance-cpu", Operator: OpLt, Values: []string{"17"}}}}
	all := randomPods(rng, n)
	for i := range all {
		all[i].Controller = true
	}
	return provisioned(rng, &Problem{Pods: all, Pools: []Pool{pool}, InstanceTypes: testTypes()}, most)
}

// provisioned turns a provisioning problem into suite (f): its pods placed
// by the solver in ten batches onto nodes that then exist, 0–most of each
// node's pods removed, every pool's budget unlimited.
func provisioned(rng *rand.Rand, src *Problem, most float64) *Problem {
	p := &Problem{Pools: slices.Clone(src.Pools), InstanceTypes: src.InstanceTypes, DaemonSets: src.DaemonSets, Options: Options{Now: consNow}}
	for i := range p.Pools {
		p.Pools[i].Consolidation.NodesAllowed = -1
	}
	batch := (len(src.Pods) + 9) / 10
	for start := 0; start < len(src.Pods); start += batch {
		provision(p, src.Pods[start:min(start+batch, len(src.Pods))], "node-")
	}
	thin(rng, p, most)
	return p
}

// checkConsolidation replays a consolidation plan, in its order, on the
// problem's nodes and verifies from scratch: every removed node was a
// candidate (not in flight, no do-not-disrupt on it or its pods, no bare pod,
// its pool's policy and consolidateAfter allow it); no node an action moves
// pods onto is removed by any action; pool budgets hold over the whole plan
// and PDBs within each action; every evicted pod is moved exactly once, to
// a node that exists and takes it (check.Plan judges affinity, taints,
// capacity, offerings and pool limits); savings add up and meet the
// minimum; every node not removed is explained; and no pod is lost.
func checkConsolidation(p *Problem, plan *ConsolidationPlan) error {
	nodes := map[string]*Node{}
	var order []string
	before := map[string]int{}
	for i := range p.Nodes {
		n := p.Nodes[i]
		n.Pods = append([]Pod(nil), n.Pods...)
		nodes[n.Name] = &n
		order = append(order, n.Name)
		for _, pod := range n.Pods {
			before[pod.Key()]++
		}
	}
	pools := map[string]*Pool{}
	used := map[string]Resources{}
	for i := range p.Pools {
		pools[p.Pools[i].Name] = &p.Pools[i]
		used[p.Pools[i].Name] = p.Pools[i].Used
	}
	isDaemon := func(pod *Pod) bool { return strings.HasPrefix(pod.Owner, "DaemonSet/") }
	destinations := map[string]bool{}
	for _, a := range plan.Actions {
		for _, m := range a.Moves {
			destinations[m.To] = true
		}
	}
	removedPerPool := map[string]int{}
	removed := map[string]bool{}
	total := 0.0
	for ai, a := range plan.Actions {
		if len(a.Nodes) == 0 {
			return fmt.Errorf("action %d removes no node", ai)
		}
		if a.Reason == "" {
			return fmt.Errorf("action %d has no reason", ai)
		}
		wantKind := ActionMerge
		switch {
		case len(a.Replacements) == 0:
			wantKind = ActionDelete
		case len(a.Nodes) == 1:
			wantKind = ActionReplace
		}
		if a.Kind != wantKind {
			return fmt.Errorf("action %d is a %s, want %s", ai, a.Kind, wantKind)
		}
		inAction := map[string]bool{}
		price := 0.0
		evicted := map[string]int{}
		pdbCount := make([]int, len(p.PDBs))
		evicts := false
		for _, name := range a.Nodes {
			n := nodes[name]
			if n == nil || removed[name] || inAction[name] {
				return fmt.Errorf("action %d removes unknown or already removed node %s", ai, name)
			}
			if destinations[name] {
				return fmt.Errorf("action %d removes %s, which an action moves pods onto", ai, name)
			}
			inAction[name] = true
			pool := pools[n.Pool]
			if pool == nil || n.InFlight || n.DoNotDisrupt {
				return fmt.Errorf("action %d removes %s: no pool, in flight or do-not-disrupt", ai, name)
			}
			last := n.LastPodChange
			if last.IsZero() {
				last = n.Created
			}
			if pool.Consolidation.After > 0 && !last.IsZero() && p.Options.Now.Sub(last) < pool.Consolidation.After {
				return fmt.Errorf("action %d removes %s before consolidateAfter", ai, name)
			}
			removedPerPool[n.Pool]++
			if b := pool.Consolidation.NodesAllowed; b >= 0 && removedPerPool[n.Pool] > b {
				return fmt.Errorf("action %d exceeds pool %s's budget of %d", ai, n.Pool, b)
			}
			for _, pod := range n.Pods {
				if isDaemon(&pod) {
					continue
				}
				if pod.DoNotDisrupt || !pod.Controller {
					return fmt.Errorf("action %d evicts %s: do-not-disrupt or no controller", ai, pod.Key())
				}
				if pool.Consolidation.Policy == WhenEmpty {
					return fmt.Errorf("action %d evicts %s from WhenEmpty pool %s", ai, pod.Key(), pool.Name)
				}
				evicted[pod.Key()]++
				evicts = true
				for i := range p.PDBs {
					if p.PDBs[i].Namespace == pod.Namespace && p.PDBs[i].Selector.Matches(pod.Labels) {
						pdbCount[i]++
					}
				}
			}
			price += n.Price
		}
		for i, c := range pdbCount {
			// Karpenter's rule: a PDB allowing one disruption lets the
			// eviction API pace all its pods.
			if c > 0 && p.PDBs[i].DisruptionsAllowed <= 0 {
				return fmt.Errorf("action %d evicts %d pods of PDB %s, which allows %d", ai, c, p.PDBs[i].Name, p.PDBs[i].DisruptionsAllowed)
			}
		}
		// Moves: exactly the evicted pods, each to an allowed place; judged
		// by the solver's plan checker as a plan for these pods.
		sub := &Problem{ExtendedResources: p.ExtendedResources, DaemonSets: p.DaemonSets, InstanceTypes: p.InstanceTypes}
		for _, pl := range p.Pools {
			pl.Used = used[pl.Name]
			sub.Pools = append(sub.Pools, pl)
		}
		for _, name := range order {
			if !removed[name] && !inAction[name] {
				sub.Nodes = append(sub.Nodes, *nodes[name])
			}
		}
		sp := &Plan{}
		for _, r := range a.Replacements {
			if len(r.Pods) != 0 {
				return fmt.Errorf("action %d: replacement lists pods", ai)
			}
			sp.NewNodes = append(sp.NewNodes, r)
			sp.TotalPrice += r.Price
		}
		podOf := map[string]Pod{}
		for _, name := range a.Nodes {
			for _, pod := range nodes[name].Pods {
				podOf[pod.Key()] = pod
			}
		}
		for _, m := range a.Moves {
			if evicted[m.Pod] != 1 {
				return fmt.Errorf("action %d moves %s, not evicted exactly once by it", ai, m.Pod)
			}
			evicted[m.Pod]++
			idx := len(sub.Pods)
			sub.Pods = append(sub.Pods, podOf[m.Pod])
			if i, ok := strings.CutPrefix(m.To, "new-"); ok {
				j, err := strconv.Atoi(i)
				if err != nil || j < 0 || j >= len(sp.NewNodes) {
					return fmt.Errorf("action %d moves %s to unknown %s", ai, m.Pod, m.To)
				}
				sp.NewNodes[j].Pods = append(sp.NewNodes[j].Pods, idx)
				continue
			}
			if nodes[m.To] == nil || removed[m.To] || inAction[m.To] {
				return fmt.Errorf("action %d moves %s to %s, which is gone", ai, m.Pod, m.To)
			}
			sp.Existing = append(sp.Existing, Placement{Pod: idx, Node: m.To})
		}
		for k, c := range evicted {
			if c != 2 {
				return fmt.Errorf("action %d evicts %s without moving it", ai, k)
			}
		}
		for i := range sp.NewNodes {
			// A replacement may hold only pending pods the removed nodes
			// had room for.
			if len(sp.NewNodes[i].Pods) == 0 && len(p.Pods) == 0 {
				return fmt.Errorf("action %d launches replacement %d for no pod", ai, i)
			}
		}
		if err := check.Plan(sub, sp); err != nil {
			return fmt.Errorf("action %d (%s of %v): %w", ai, a.Kind, a.Nodes, err)
		}
		// Money.
		if math.Abs(price-sp.TotalPrice-a.Saving) > 1e-6 {
			return fmt.Errorf("action %d claims %v saved, prices say %v", ai, a.Saving, price-sp.TotalPrice)
		}
		floor := 1e-9
		if evicts {
			for _, name := range a.Nodes {
				c := pools[nodes[name].Pool].Consolidation
				if !c.MinSavingSet && c.MinSaving == 0 && c.MinSavingFraction == 0 {
					floor = max(floor, DefaultMinSaving+DefaultMinSavingPerPod*float64(len(a.Moves)))
					if len(a.Replacements) > 0 {
						floor = max(floor, DefaultMinReplaceFraction*price)
					}
				}
				floor = max(floor, c.MinSaving, c.MinSavingFraction*price)
			}
		}
		if a.Saving < floor-1e-9 {
			return fmt.Errorf("action %d saves %v, below its minimum %v", ai, a.Saving, floor)
		}
		total += a.Saving
		// Apply.
		for _, pe := range sp.Existing {
			n := nodes[pe.Node]
			n.Pods = append(n.Pods, sub.Pods[pe.Pod])
			n.Requested = n.Requested.Add(podReq(&sub.Pods[pe.Pod]))
		}
		for j, nn := range sp.NewNodes {
			name := fmt.Sprintf("action-%d-new-%d", ai, j)
			n := &Node{Name: name, Pool: nn.Pool, Price: nn.Price, InFlight: true, Unschedulable: true,
				Labels: labelsFor(p, name, nn.InstanceType, nn.Pool, nn.Zone, nn.CapacityType), Allocatable: nn.Allocatable, Requested: nn.Requested}
			for _, pi := range nn.Pods {
				n.Pods = append(n.Pods, sub.Pods[pi])
			}
			nodes[name] = n
			order = append(order, name)
			for ti := range p.InstanceTypes {
				if p.InstanceTypes[ti].Name == nn.InstanceType {
					used[nn.Pool] = used[nn.Pool].Add(p.InstanceTypes[ti].Capacity)
				}
			}
		}
		for _, name := range a.Nodes {
			removed[name] = true
		}
	}
	if math.Abs(total-plan.Saving) > 1e-4 {
		return fmt.Errorf("plan saving %v, actions sum to %v", plan.Saving, total)
	}
	explained := map[string]bool{}
	for _, b := range plan.Blocked {
		if b.Reason == "" || explained[b.Node] || removed[b.Node] || nodes[b.Node] == nil {
			return fmt.Errorf("blocked entry %+v: removed, repeated, unknown or unexplained", b)
		}
		explained[b.Node] = true
	}
	for i := range p.Nodes {
		if name := p.Nodes[i].Name; !removed[name] && !explained[name] {
			return fmt.Errorf("node %s neither removed nor explained", name)
		}
	}
	after := map[string]int{}
	for name, n := range nodes {
		if removed[name] {
			continue
		}
		for _, pod := range n.Pods {
			after[pod.Key()]++
		}
	}
	for k, c := range before {
		if after[k] != c {
			return fmt.Errorf("pod %s: %d before, %d after the plan", k, c, after[k])
		}
	}
	if len(after) != len(before) {
		return fmt.Errorf("%d pods after the plan, %d before", len(after), len(before))
	}
	return nil
}

// BenchmarkConsolidate plans suite (f): a cluster of about 1,000 nodes
// provisioned in batches, then thinned by 0–80 % per node to about 20,000
// pods. It reports the planning time, the share of the achievable saving
// captured (against the cluster packed from scratch, and against the fluid
// lower bound of that packing) and the pods evicted per dollar per hour
// saved.
func BenchmarkConsolidate(b *testing.B) {
	type suite struct {
		name string
		p    *Problem
	}
	var suites []suite
	for _, size := range []int{2000, 33000} {
		suites = append(suites, suite{"test-catalog", consolidationCluster(rand.New(rand.NewPCG(11, uint64(size))), size, 0.8)})
	}
	for _, size := range []int{2000, 33000} {
		src, err := bench.Catalog(size, 7)
		if err != nil {
			b.Fatal(err)
		}
		suites = append(suites, suite{"aws-catalog", provisioned(rand.New(rand.NewPCG(12, uint64(size))), src, 0.8)})
	}
	for _, s := range suites {
		p := s.p
		npods := 0
		for i := range p.Nodes {
			npods += len(p.Nodes[i].Pods)
		}
		b.Run(fmt.Sprintf("suite=f-%s/nodes=%d/pods=%d", s.name, len(p.Nodes), npods), func(b *testing.B) {
			var plan *ConsolidationPlan
			var err error
			for i := 0; i < b.N; i++ {
				if plan, err = Consolidate(p); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if err := checkConsolidation(p, plan); err != nil {
				b.Fatal(err)
			}
			target, _ := Solve(targetOf(p))
			moves := 0
			kinds := map[string]int{}
			for _, a := range plan.Actions {
				moves += len(a.Moves)
				kinds[a.Kind]++
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms")
			b.ReportMetric(plan.Saving/(plan.CurrentPrice-plan.TargetPrice), "captured")
			b.ReportMetric(plan.Saving/(plan.CurrentPrice-target.LowerBound), "captured/bound")
			b.ReportMetric(float64(moves)/plan.Saving, "evicted/$")
			b.ReportMetric(float64(len(plan.Actions)), "actions")
			b.Logf("current %.2f $/h, target %.2f, bound %.2f, saving %.2f; actions %v", plan.CurrentPrice, plan.TargetPrice, target.LowerBound, plan.Saving, kinds)
		})
	}
}

// targetOf is the problem packed from scratch, as Consolidate prices it.
func targetOf(p *Problem) *Problem {
	t := &Problem{Pools: append([]Pool(nil), p.Pools...), InstanceTypes: p.InstanceTypes, DaemonSets: p.DaemonSets}
	for i := range t.Pools {
		t.Pools[i].Used = Resources{}
	}
	for i := range p.Nodes {
		t.Pods = append(t.Pods, p.Nodes[i].Pods...)
	}
	t.Pods = append(t.Pods, p.Pods...)
	return t
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
