package solver

import (
	"math"
	"time"
)

// packingLP is a linear program in the form
//
//	max c·x  s.t.  A x ≤ b,  x ≥ 0,  with b ≥ 0,
//
// so that x = 0 is feasible and no phase one is needed. It is solved by a
// dense primal simplex on the compact tableau that keeps a feasible point
// at every step: stopped at any pivot, its x is feasible (up to rounding,
// which the callers repair), so a maximisation whose every feasible point
// is a valid lower bound stays one when stopped early.
//
// The entering column is the one of largest reduced cost (Dantzig's rule)
// while the objective rises; after lpStallPivots pivots without a rise it
// switches to Bland's rule, which cannot cycle. Degenerate programs can
// still take exponentially many pivots under Bland's rule: every solve has
// a pivot budget and a time budget, and checks its cancellation.
type packingLP struct {
	m, n int
	t    []float64 // m×n tableau, row-major: x_B = rhs − t·x_N
	rhs  []float64
	cost []float64 // reduced costs of the nonbasic columns
	z    float64
	// basic and nonbasic label the rows and columns: structural variables
	// are 0..n−1, slacks n..n+m−1.
	basic, nonbasic []int
}

// Budgets of one LP solve.
const (
	// lpStallPivots is how many pivots without a rise of the objective
	// Dantzig's rule may make before Bland's takes over.
	lpStallPivots = 50
	// lpCheckEvery is how often (in pivots) the time and the cancellation
	// are checked.
	lpCheckEvery = 16
)

// lpStatus is how an LP solve ended.
type lpStatus int

const (
	lpOptimal   lpStatus = iota
	lpStopped            // the pivot or time budget ran out, or the solve was cancelled
	lpUnbounded          // the objective has no maximum (a malformed program)
)

// newPackingLP returns the program max c·x, A x ≤ b, x ≥ 0 (a is m×n,
// row-major; b ≥ 0).
func newPackingLP(a []float64, b, c []float64) *packingLP {
	m, n := len(b), len(c)
	lp := &packingLP{m: m, n: n, t: a, rhs: b, cost: c, basic: make([]int, m), nonbasic: make([]int, n)}
	for j := range lp.nonbasic {
		lp.nonbasic[j] = j
	}
	for i := range lp.basic {
		lp.basic[i] = n + i
	}
	return lp
}

// solve pivots until the program is optimal, maxPivots pivots were made,
// the time limit (zero: none) passed or stop expired.
func (lp *packingLP) solve(maxPivots int, limit time.Time, stop stopAt) lpStatus {
	const eps = 1e-9
	bland := false
	stall, best := 0, lp.z
	for pivots := 0; ; pivots++ {
		if pivots >= maxPivots {
			return lpStopped
		}
		if pivots%lpCheckEvery == lpCheckEvery-1 && (expired(stop) || (!limit.IsZero() && time.Now().After(limit))) {
			return lpStopped
		}
		// Entering column.
		enter := -1
		if bland {
			for j, cj := range lp.cost {
				if cj > eps && (enter < 0 || lp.nonbasic[j] < lp.nonbasic[enter]) {
					enter = j
				}
			}
		} else {
			top := eps
			for j, cj := range lp.cost {
				if cj > top {
					enter, top = j, cj
				}
			}
		}
		if enter < 0 {
			return lpOptimal
		}
		// Leaving row: the smallest ratio, ties to the smallest label.
		leave := -1
		ratio := math.Inf(1)
		for i := 0; i < lp.m; i++ {
			a := lp.t[i*lp.n+enter]
			if a <= eps {
				continue
			}
			r := lp.rhs[i] / a
			if r < ratio-1e-12 || (r <= ratio+1e-12 && leave >= 0 && lp.basic[i] < lp.basic[leave]) {
				leave, ratio = i, r
			}
		}
		if leave < 0 {
			return lpUnbounded
		}
		lp.pivot(leave, enter)
		if lp.z > best+eps*max(1, math.Abs(best)) {
			best, stall = lp.z, 0
		} else if stall++; stall >= lpStallPivots {
			bland = true
		}
	}
}

// pivot makes the column enter the basis in place of the row's variable.
func (lp *packingLP) pivot(r, j int) {
	n := lp.n
	row := lp.t[r*n : (r+1)*n]
	p := row[j]
	for k := range row {
		row[k] /= p
	}
	row[j] = 1 / p
	lp.rhs[r] /= p
	for i := 0; i < lp.m; i++ {
		if i == r {
			continue
		}
		ri := lp.t[i*n : (i+1)*n]
		f := ri[j]
		if f == 0 {
			continue
		}
		for k, v := range row {
			if v != 0 {
				ri[k] -= f * v
			}
		}
		ri[j] = -f / p
		lp.rhs[i] -= f * lp.rhs[r]
		if lp.rhs[i] < 0 && lp.rhs[i] > -1e-9 {
			lp.rhs[i] = 0
		}
	}
	f := lp.cost[j]
	for k, v := range row {
		if v != 0 {
			lp.cost[k] -= f * v
		}
	}
	lp.cost[j] = -f / p
	lp.z += f * lp.rhs[r]
	lp.basic[r], lp.nonbasic[j] = lp.nonbasic[j], lp.basic[r]
}

// x returns the values of the structural variables.
func (lp *packingLP) x() []float64 {
	x := make([]float64, lp.n)
	for i, v := range lp.basic {
		if v < lp.n {
			x[v] = max(0, lp.rhs[i])
		}
	}
	return x
}
