package solver

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// randomBoundProgram builds the fluid program's inputs: kinds with random
// allocatable and prices, classes with random requests and counts, each
// class usable on the kinds it fits.
func randomBoundProgram(rng *rand.Rand, nKinds, nClasses int, huge bool) ([]*kind, []int, []bitset, []lbClass, []int) {
	resources := []int{CPU, Memory}
	var all []*kind
	var kinds []int
	for i := range nKinds {
		cpu := int64(2000 << rng.IntN(7)) // 2–128 CPU
		k := &kind{price: float64(cpu) / 1000 * (0.03 + 0.04*rng.Float64())}
		k.alloc[CPU] = cpu - 100
		k.alloc[Memory] = cpu / 1000 * int64(2+2*rng.IntN(4)) * (1 << 30)
		all = append(all, k)
		kinds = append(kinds, i)
	}
	var classes []lbClass
	for range nClasses {
		c := lbClass{n: float64(1 + rng.IntN(50))}
		if huge {
			c.n = float64(100 + rng.IntN(5000))
			c.req[CPU] = int64(8000 * (1 + rng.IntN(16)))
			c.req[Memory] = int64(40+rng.IntN(900)) * (1 << 30)
		} else {
			c.req[CPU] = int64(100 + rng.IntN(16000))
			c.req[Memory] = int64(1+rng.IntN(64)) * (1 << 30) / 2
		}
		classes = append(classes, c)
	}
	usable := make([]bitset, len(kinds))
	for i := range kinds {
		usable[i] = newBitset(len(classes))
		for ci, c := range classes {
			if c.req.Fits(all[i].alloc) {
				usable[i].set(ci)
			}
		}
	}
	return all, kinds, usable, classes, resources
}

// TestFluidDualIsTheFluidOptimum checks the bound's own simplex against
// gonum's on the primal program it replaced: the same optimum when both
// finish, and never above the primal's.
func TestFluidDualIsTheFluidOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 33))
	compared := 0
	for i := range 300 {
		all, kinds, usable, classes, resources := randomBoundProgram(rng, 1+rng.IntN(8), 1+rng.IntN(12), i%3 == 0)
		// The primal needs every class placeable: the others are dropped.
		var keep []lbClass
		var keepUsable []bitset
		for ci, c := range classes {
			for k := range kinds {
				if usable[k].has(ci) {
					keep = append(keep, c)
					break
				}
			}
		}
		if len(keep) == 0 {
			continue
		}
		for k := range kinds {
			u := newBitset(len(keep))
			for ci, c := range keep {
				if c.req.Fits(all[k].alloc) {
					u.set(ci)
				}
			}
			keepUsable = append(keepUsable, u)
		}
		classes, usable = keep, keepUsable
		dual, exact, ok := fluidDual(all, kinds, usable, classes, resources, lbMaxPivots, time.Time{}, stopAt{})
		if !ok || !exact {
			t.Fatalf("program %d: fluidDual ok=%v exact=%v", i, ok, exact)
		}
		primal, _, pok := gonumFluidLP(all, kinds, usable, classes, resources)
		if !pok {
			continue
		}
		compared++
		if dual > primal*(1+1e-7)+1e-9 {
			t.Errorf("program %d: dual %v above the primal optimum %v", i, dual, primal)
		}
		if dual < primal*(1-1e-6)-1e-9 {
			t.Errorf("program %d: dual %v below the primal optimum %v", i, dual, primal)
		}
	}
	// The primal is not built for some (no more columns than rows).
	if compared < 90 {
		t.Errorf("only %d of 300 programs compared", compared)
	}
	t.Logf("%d of 300 programs compared with gonum's optimum", compared)
}

// TestFluidDualStopsAndStaysABound stops the simplex after a few pivots,
// at a past deadline and when cancelled: it says so, and what it returns
// is still at most the optimum.
func TestFluidDualStopsAndStaysABound(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	done := make(chan struct{})
	close(done)
	for i := range 50 {
		all, kinds, usable, classes, resources := randomBoundProgram(rng, 20, 40, true)
		opt, exact, ok := fluidDual(all, kinds, usable, classes, resources, lbMaxPivots, time.Time{}, stopAt{})
		if !ok || !exact {
			t.Fatalf("program %d: not solved", i)
		}
		for _, tc := range []struct {
			name   string
			pivots int
			limit  time.Time
			stop   stopAt
		}{
			{"3 pivots", 3, time.Time{}, stopAt{}},
			{"past limit", lbMaxPivots, time.Now().Add(-time.Second), stopAt{}},
			{"past deadline", lbMaxPivots, time.Time{}, stopAt{deadline: time.Now().Add(-time.Second)}},
			{"cancelled", lbMaxPivots, time.Time{}, stopAt{done: done}},
		} {
			v, exact, ok := fluidDual(all, kinds, usable, classes, resources, tc.pivots, tc.limit, tc.stop)
			if !ok {
				t.Fatalf("program %d, %s: no bound", i, tc.name)
			}
			if exact {
				t.Errorf("program %d, %s: claims the optimum", i, tc.name)
			}
			if v > opt*(1+1e-9) || v < 0 {
				t.Errorf("program %d, %s: %v outside [0, optimum %v]", i, tc.name, v, opt)
			}
		}
	}
}

// gonumFluidLP is the primal fluid program as the bound solved it before
// (gonum's simplex): the reference of the tests above.
func gonumFluidLP(all []*kind, kinds []int, usable []bitset, classes []lbClass, resources []int) (bound float64, nodes []float64, ok bool) {
	// gonum's matrix code panics on numerical trouble it cannot recover
	// from; the bound then falls back rather than taking the solve down.
	defer func() {
		if recover() != nil {
			bound, nodes, ok = 0, nil, false
		}
	}()
	type rowKey struct{ kind, res int }
	rows := map[rowKey]int{}
	nRows := len(classes)
	for i, ki := range kinds {
		for _, r := range resources {
			if all[ki].alloc[r] == 0 {
				continue
			}
			for ci, c := range classes {
				if usable[i].has(ci) && c.req[r] > 0 {
					rows[rowKey{i, r}] = nRows
					nRows++
					break
				}
			}
		}
	}
	type pair struct{ kind, class int }
	var pairs []pair
	for i := range kinds {
		for ci := range classes {
			if usable[i].has(ci) {
				pairs = append(pairs, pair{i, ci})
			}
		}
	}
	nCols := len(kinds) + len(pairs) + (nRows - len(classes))
	if nRows*nCols > lbMaxCells || nRows >= nCols {
		return 0, nil, false
	}
	A := mat.NewDense(nRows, nCols, nil)
	c := make([]float64, nCols)
	b := make([]float64, nRows)
	for i, ki := range kinds {
		c[i] = all[ki].price
	}
	for ci := range classes {
		b[ci] = 1
	}
	for pi, p := range pairs {
		col := len(kinds) + pi
		A.Set(p.class, col, 1)
		cl := classes[p.class]
		for _, r := range resources {
			if row, ok := rows[rowKey{p.kind, r}]; ok && cl.req[r] > 0 {
				A.Set(row, col, cl.n*float64(cl.req[r])/float64(all[kinds[p.kind]].alloc[r]))
			}
		}
	}
	slack := len(kinds) + len(pairs)
	for key, row := range rows {
		A.Set(row, key.kind, -1)
		A.Set(row, slack+row-len(classes), 1)
	}
	opt, x, err := lp.Simplex(c, A, b, 1e-10, nil)
	if err != nil || math.IsNaN(opt) || opt < 0 {
		return 0, nil, false
	}
	// The simplex works in floating point; shave a hair so that rounding
	// never lifts the bound above the true optimum.
	return opt * (1 - 1e-9), x[:len(kinds)], true
}
