package solver_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver/check"
)

// Issue 33: production traces of few, huge pod shapes.

// armTypes is testTypes' catalog again as Graviton-like arm64 types
// ("c7g.large" …), priced at a random 70–110 % of the amd64 ones.
func armTypes(rng *rand.Rand) []InstanceType {
	factors := make([]float64, len(testTypes()))
	for j := range factors {
		factors[j] = 0.7 + 0.4*rng.Float64()
	}
	return fixedArmTypes(factors...)
}

// tracePods draws pods as the traces have them: a few shapes, 1–48 CPU
// and 1–16 GiB per CPU, hundreds of pods each (n pods in all).
func tracePods(rng *rand.Rand, n, shapes int) []Pod {
	var out []Pod
	for s := 0; len(out) < n; s++ {
		cpu := int64(1+rng.IntN(min(s%shapes+2, 24))) * 1000
		mem := cpu / 1000 * int64(1+rng.IntN(8)) * gi
		if rng.IntN(3) == 0 {
			cpu += int64(rng.IntN(1000)) // not a whole core
		}
		k := min(1+rng.IntN(2*n/shapes+1), n-len(out))
		out = append(out, pods(fmt.Sprintf("s%d", s), k, res(cpu, mem))...)
	}
	return out
}

// pool returns a pool allowing the architectures and capacity types.
func widenedPool(arch, capacity []string) Pool {
	return Pool{Name: "default", Requirements: []Requirement{
		{Key: LabelArch, Operator: OpIn, Values: arch},
		{Key: LabelCapacityType, Operator: OpIn, Values: capacity},
	}}
}

// TestWideningNeverDearer: on random trace-like problems, a pool that
// allows more architectures or capacity types than another never plans
// dearer than it, and both plans pass the checker.
func TestWideningNeverDearer(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 1))
	for i := range 20 {
		types := append(testTypes(), armTypes(rng)...)
		ps := tracePods(rng, 50+rng.IntN(300), 1+rng.IntN(6))
		widen := []struct{ narrow, wide Pool }{
			{widenedPool([]string{"amd64"}, []string{"on-demand"}), widenedPool([]string{"amd64", "arm64"}, []string{"on-demand"})},
			{widenedPool([]string{"arm64"}, []string{"on-demand"}), widenedPool([]string{"amd64", "arm64"}, []string{"on-demand"})},
			{widenedPool([]string{"amd64"}, []string{"on-demand"}), widenedPool([]string{"amd64"}, []string{"on-demand", "spot"})},
			{widenedPool([]string{"amd64"}, []string{"on-demand"}), widenedPool([]string{"amd64", "arm64"}, []string{"on-demand", "spot"})},
			{widenedPool([]string{"arm64"}, []string{"spot"}), widenedPool([]string{"amd64", "arm64"}, []string{"on-demand", "spot"})},
		}
		for j, w := range widen {
			price := make([]float64, 2)
			for x, pool := range []Pool{w.narrow, w.wide} {
				p := &Problem{Pods: ps, Pools: []Pool{pool}, InstanceTypes: types}
				plan, err := Solve(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := check.Plan(p, plan); err != nil {
					t.Fatalf("problem %d/%d: invalid plan: %v", i, j, err)
				}
				if len(plan.Unschedulable) > 0 {
					t.Fatalf("problem %d/%d: %d pods left", i, j, len(plan.Unschedulable))
				}
				price[x] = plan.TotalPrice
			}
			if price[1] > price[0]+1e-6 {
				t.Errorf("problem %d, widening %d: wider pool $%.4f/h, narrower $%.4f/h", i, j, price[1], price[0])
			}
		}
	}
}

// TestNeverDearerThanOneTypeFFD: on random trace-like problems the plan
// costs at most the cheapest one-type first-fit-decreasing packing, computed
// here pod by pod, independently of the solver's.
func TestNeverDearerThanOneTypeFFD(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 2))
	for i := range 40 {
		types := append(testTypes(), armTypes(rng)...)
		p := &Problem{Pods: tracePods(rng, 20+rng.IntN(400), 1+rng.IntN(8)), Pools: []Pool{widenedPool([]string{"amd64", "arm64"}, []string{"on-demand"})}, InstanceTypes: types}
		if rng.IntN(2) == 0 {
			p.DaemonSets = []DaemonSet{{Name: "agent", Requests: res(int64(rng.IntN(500)), int64(rng.IntN(512))*mi)}}
		}
		plan, err := Solve(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := check.Plan(p, plan); err != nil {
			t.Fatalf("problem %d: invalid plan: %v", i, err)
		}
		best, name := math.Inf(1), ""
		for _, it := range types {
			if c := ffdCost(p, &it); c < best {
				best, name = c, it.Name
			}
		}
		if plan.TotalPrice > best+1e-6 {
			t.Errorf("problem %d: plan $%.4f/h, one-type FFD on %s $%.4f/h", i, plan.TotalPrice, name, best)
		}
		if plan.LowerBound > plan.TotalPrice+1e-6 {
			t.Errorf("problem %d: bound %v above the plan's %v", i, plan.LowerBound, plan.TotalPrice)
		}
	}
}

// ffdCost packs every pod, largest share first, onto the first node of type
// it with room (on-demand, the cheapest offering), and returns the price;
// +Inf when a pod fits no node of it.
func ffdCost(p *Problem, it *InstanceType) float64 {
	alloc := it.Capacity.Sub(it.Overhead)
	for _, ds := range p.DaemonSets {
		alloc = alloc.Sub(ds.Requests)
	}
	price := math.Inf(1)
	for _, o := range it.Offerings {
		if o.CapacityType == "on-demand" {
			price = min(price, o.Price)
		}
	}
	share := func(r Resources) float64 { // as the solver orders classes
		r[Pods] = 1
		m := 0.0
		for x := range r {
			if r[x] > 0 {
				m = max(m, float64(r[x])/float64(alloc[x]))
			}
		}
		return m
	}
	order := make([]int, len(p.Pods))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(share(p.Pods[b].Requests), share(p.Pods[a].Requests)) })
	var free []Resources
	for _, pi := range order {
		req := p.Pods[pi].Requests
		req[Pods] = 1
		placed := false
		for n := range free {
			if req.Fits(free[n]) {
				free[n] = free[n].Sub(req)
				placed = true
				break
			}
		}
		if !placed {
			if !req.Fits(alloc) {
				return math.Inf(1)
			}
			free = append(free, alloc.Sub(req))
		}
	}
	return float64(len(free)) * price
}

// TestSolveCancelled: Solve and Consolidate stop within a second of
// Options.Done closing, with an error wrapping context.Canceled.
func TestSolveCancelled(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 3))
	big := &Problem{Pods: tracePods(rng, 20000, 30), Pools: []Pool{onDemandPool("default")}, InstanceTypes: append(testTypes(), armTypes(rng)...)}
	for _, after := range []time.Duration{0, 20 * time.Millisecond, 200 * time.Millisecond} {
		ctx, cancel := context.WithCancel(context.Background())
		p := *big
		p.Options.Done = ctx.Done()
		time.AfterFunc(after, cancel)
		start := time.Now()
		plan, err := Solve(&p)
		took := time.Since(start)
		if !errors.Is(err, context.Canceled) || plan != nil {
			// Only a solve faster than the cancellation may finish.
			if err != nil || took < after {
				t.Errorf("cancelled after %v: plan %v, err %v", after, plan != nil, err)
			}
		}
		if took > after+time.Second {
			t.Errorf("cancelled after %v: returned after %v", after, took)
		}
		cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := consolidationProblem(rng)
	p.Options.Done = ctx.Done()
	if _, err := Consolidate(p); !errors.Is(err, context.Canceled) {
		t.Errorf("Consolidate cancelled: err %v", err)
	}
}

// consolidationProblem is a cluster of half-empty nodes.
func consolidationProblem(rng *rand.Rand) *Problem {
	types := testTypes()
	p := &Problem{Pools: []Pool{onDemandPool("default")}, InstanceTypes: types, Options: Options{Now: time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)}}
	for i := range 30 {
		it := types[rng.IntN(len(types))]
		n := Node{Name: fmt.Sprintf("n%d", i), Pool: "default", InstanceType: it.Name, Zone: "zone-a", CapacityType: "on-demand",
			Labels:      map[string]string{LabelInstanceType: it.Name, LabelZone: "zone-a", LabelCapacityType: "on-demand", LabelNodePool: "default"},
			Allocatable: it.Capacity.Sub(it.Overhead)}
		for j := range 2 {
			n.Pods = append(n.Pods, Pod{Namespace: "default", Name: fmt.Sprintf("p%d-%d", i, j), Owner: "ReplicaSet/x", Requests: res(100, 100*mi)})
		}
		p.Nodes = append(p.Nodes, n)
	}
	return p
}

// FuzzBound: few pod shapes with huge requests (the programs on which the
// fluid bound's simplex degenerated and hung) must plan within a time
// limit, with a bound no higher than the plan.
func FuzzBound(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint8(3), uint16(9000))
	f.Add(uint64(33), uint64(7), uint8(35), uint16(3000))
	f.Add(uint64(5), uint64(5), uint8(1), uint16(1))
	f.Fuzz(func(t *testing.T, s1, s2 uint64, shapes uint8, n uint16) {
		rng := rand.New(rand.NewPCG(s1, s2))
		types := append(testTypes(), armTypes(rng)...)
		// Larger types so that the huge pods fit: 48–192 CPU.
		for _, mult := range []int64{6, 12, 24} {
			for _, t := range testTypes() {
				if t.Capacity[CPU] != 8000 {
					continue
				}
				b := t
				b.Name = fmt.Sprintf("%s-x%d", t.Name, mult)
				b.Labels = map[string]string{LabelInstanceType: b.Name, LabelArch: "amd64"}
				b.Capacity = Resources{CPU: t.Capacity[CPU] * mult, Memory: t.Capacity[Memory] * mult * 2, Pods: 110}
				b.Offerings = slices.Clone(t.Offerings)
				for i := range b.Offerings {
					b.Offerings[i].Price *= float64(mult) * (0.9 + 0.3*rng.Float64())
				}
				types = append(types, b)
			}
		}
		var ps []Pod
		k := 1 + int(shapes%40)
		total := 1 + int(n%10000)
		for s := 0; len(ps) < total; s++ {
			cpu := int64(8+rng.IntN(185)) * 1000
			mem := int64(40+rng.IntN(921)) * gi
			if rng.IntN(2) == 0 {
				cpu, mem = cpu/8, mem/8
			}
			c := min(1+rng.IntN(2*total/k+1), total-len(ps))
			ps = append(ps, pods(fmt.Sprintf("s%d", s%k), c, res(cpu, mem))...)
		}
		p := &Problem{Pods: ps, Pools: []Pool{onDemandPool("default")}, InstanceTypes: types}
		start := time.Now()
		plan, err := Solve(p)
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("%d pods of %d shapes took %v", total, k, took)
		}
		if plan.LowerBound > plan.TotalPrice+1e-6 {
			t.Errorf("bound %v above the plan's %v", plan.LowerBound, plan.TotalPrice)
		}
	})
}

// TestWideningFamiliesNeverDearer: widening a pool by instance categories
// (--all-instance-types beside the default pool's c, m and r), alone or
// with architectures and capacity types, on small random problems, is
// never dearer.
func TestWideningFamiliesNeverDearer(t *testing.T) {
	categories := func(pool Pool, values ...string) Pool {
		pool.Requirements = append(slices.Clone(pool.Requirements), Requirement{Key: "karpenter.k8s.aws/instance-category", Operator: OpIn, Values: values})
		return pool
	}
	amd := widenedPool([]string{"amd64"}, []string{"on-demand"})
	all := widenedPool([]string{"amd64", "arm64"}, []string{"on-demand", "spot"})
	widen := []struct {
		name         string
		narrow, wide Pool
	}{
		{"c to all categories", categories(amd, "c"), amd},
		{"m to all categories", categories(amd, "m"), amd},
		{"c and r to all categories", categories(amd, "c", "r"), amd},
		{"c on amd64 to everything", categories(amd, "c"), all},
	}
	rng := rand.New(rand.NewPCG(33, 7))
	for i := range 20 {
		types := append(testTypes(), armTypes(rng)...)
		ps := tracePods(rng, 5+rng.IntN(60), 1+rng.IntN(4))
		for _, w := range widen {
			var price [2]float64
			var left [2]int
			for x, pool := range []Pool{w.narrow, w.wide} {
				p := &Problem{Pods: ps, Pools: []Pool{pool}, InstanceTypes: types}
				plan, err := Solve(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := check.Plan(p, plan); err != nil {
					t.Fatalf("problem %d, %s: invalid plan: %v", i, w.name, err)
				}
				price[x], left[x] = plan.TotalPrice, len(plan.Unschedulable)
			}
			if left[1] > left[0] || (left[1] == left[0] && price[1] > price[0]+1e-6) {
				t.Errorf("problem %d, %s: wider pool $%.4f/h with %d pods left, narrower $%.4f/h with %d", i, w.name, price[1], left[1], price[0], left[0])
			}
		}
	}
}
