package solver_test

import (
	"math"
	"slices"
	"testing"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver/check"
)

// fixedArmTypes is testTypes' catalog again as arm64 types ("m7g.large"
// …), each priced at its factor times the amd64 one.
func fixedArmTypes(factors ...float64) []InstanceType {
	var out []InstanceType
	for j, t := range testTypes() {
		a := t
		a.Name = t.Name[:1] + "7g" + t.Name[2:]
		a.Labels = map[string]string{}
		for k, v := range t.Labels {
			a.Labels[k] = v
		}
		a.Labels[LabelInstanceType] = a.Name
		a.Labels["karpenter.k8s.aws/instance-family"] = a.Name[:3]
		a.Labels[LabelArch] = "arm64"
		a.Offerings = slices.Clone(t.Offerings)
		for i := range a.Offerings {
			a.Offerings[i].Price *= factors[j]
		}
		out = append(out, a)
	}
	return out
}

// twoTypeFFD is the cheapest packing of p's pods onto two types, a and b,
// that sends every pod of a shape (its requests) to the same type and packs
// each type's pods first fit decreasing (ffdCost): computed here, pod by
// pod, independently of the solver.
func twoTypeFFD(p *Problem, a, b *InstanceType) float64 {
	var shapes []Resources
	for _, pd := range p.Pods {
		if !slices.Contains(shapes, pd.Requests) {
			shapes = append(shapes, pd.Requests)
		}
	}
	best := math.Inf(1)
	for mask := 1; mask < 1<<len(shapes)-1; mask++ {
		qa, qb := *p, *p
		qa.Pods, qb.Pods = nil, nil
		for _, pd := range p.Pods {
			if mask>>slices.Index(shapes, pd.Requests)&1 == 1 {
				qa.Pods = append(qa.Pods, pd)
			} else {
				qb.Pods = append(qb.Pods, pd)
			}
		}
		best = min(best, ffdCost(&qa, a)+ffdCost(&qb, b))
	}
	return best
}

// TestFewTypeFFDBeatsOneType: on problems where a two-type packing is
// strictly cheaper than every one-type packing (and than the plans before
// few-type packings were in the portfolio), the plan is valid and costs at
// most that two-type packing.
func TestFewTypeFFDBeatsOneType(t *testing.T) {
	type shape struct {
		cpu, mem int64 // millicores, GiB
		n        int
	}
	cases := []struct {
		name   string
		types  []InstanceType
		shapes []shape
		a, b   string // the two types of the two-type packing
	}{
		{
			name:   "trace shapes: CPU-heavy pods on m7g, the rest on r6",
			types:  append(testTypes(), fixedArmTypes(1.0000, 0.9467, 1.0748, 1.0844, 0.8113, 0.7134, 0.7397, 0.9728, 0.9237, 0.8236, 0.8959, 1.0519, 1.0456, 1.0144, 1.0286)...),
			shapes: []shape{{2129, 4, 50}, {1000, 8, 32}, {2000, 12, 101}, {2965, 12, 118}},
			a:      "m7g.8xlarge", b: "r6.2xlarge",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ps []Pod
			for i, s := range tc.shapes {
				ps = append(ps, pods(string(rune('a'+i)), s.n, res(s.cpu, s.mem*gi))...)
			}
			p := &Problem{Pods: ps, Pools: []Pool{widenedPool([]string{"amd64", "arm64"}, []string{"on-demand"})}, InstanceTypes: tc.types}
			one, oneName := math.Inf(1), ""
			var a, b *InstanceType
			for i := range tc.types {
				it := &tc.types[i]
				if c := ffdCost(p, it); c < one {
					one, oneName = c, it.Name
				}
				switch it.Name {
				case tc.a:
					a = it
				case tc.b:
					b = it
				}
			}
			two := twoTypeFFD(p, a, b)
			if two >= one {
				t.Fatalf("the case is wrong: two-type FFD on %s and %s $%.4f/h, one-type on %s $%.4f/h", tc.a, tc.b, two, oneName, one)
			}
			plan, err := Solve(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := check.Plan(p, plan); err != nil {
				t.Fatalf("invalid plan: %v", err)
			}
			if len(plan.Unschedulable) > 0 {
				t.Fatalf("%d pods left", len(plan.Unschedulable))
			}
			if plan.TotalPrice > two+1e-6 {
				t.Errorf("plan $%.4f/h, two-type FFD on %s and %s $%.4f/h (one-type on %s $%.4f/h)", plan.TotalPrice, tc.a, tc.b, two, oneName, one)
			}
			t.Logf("plan $%.4f/h, two-type FFD $%.4f/h, one-type $%.4f/h", plan.TotalPrice, two, one)
		})
	}
}
