package solver_test

// Suite (f), a provisioned and thinned cluster, its benchmark and
// checkConsolidation, the consolidation plans' checker.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/bench"
	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver/check"
)

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
