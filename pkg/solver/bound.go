package solver

import (
	"math"
	"time"
)

// The lower bound is the optimum of the fluid relaxation: pods may be split
// across nodes and nodes bought in fractions, but each pod only on kinds it
// fits and may run on. Every relaxation made to keep it small keeps it a
// valid bound (it can only lower it): the pod-count and ephemeral-storage
// dimensions are dropped, pool weights and limits are ignored, and when there
// are many pod shapes their requests are rounded down onto a geometric grid.
//
// The relaxation is solved as linear programs over the kinds that are not
// dominated per dollar, each through its dual by a simplex that starts
// feasible and stays feasible (packingLP), so that stopped at its pivot or
// time budget, at the deadline or on cancellation, it still holds a valid,
// weaker bound (the plan's BoundApproximate then says so). When the pairing
// program is too big, the bound falls back to the covering programs and the
// best single-resource bound: every pod's CPU (or memory, or GPU) bought at
// the cheapest rate per unit any kind it may use offers.

// lbClass is a class of pods for the bound.
type lbClass struct {
	group int
	req   Resources
	n     float64
}

// Limits that keep the dense simplex fast: the fluid program is built only
// up to lbMaxCells cells of its tableau, and stops after lbMaxPivots pivots
// or lbTimeBudget (or at Options.Deadline, or when the solve is cancelled),
// whichever comes first; the plan's bound is then approximate.
const (
	lbMaxClasses = 60
	lbMaxCells   = 2_000_000 // rows × columns
	lbMaxPivots  = 20_000
	lbTimeBudget = 500 * time.Millisecond
)

// fluidBound returns the lower bound for placing count[c] pods of every
// class on new nodes, whether the fluid program stopped before its optimum
// (the bound is then weaker: approximate), and, when the linear program was solved, per-resource
// prices (dollars per unit) that make the kinds it buys pay for themselves:
// the dual prices the greedy uses to value pods.
func (s *state) fluidBound(count []int) (float64, *Resources64, bool) {
	resources := s.boundResources(count)
	if len(resources) == 0 {
		return 0, nil, false
	}
	classes := s.boundClasses(count, resources, 1)
	kinds, usable := s.boundKinds(classes, resources)
	bound := singleResourceBound(s.kinds, kinds, usable, classes, resources)

	// Covering bounds: the pods' summed requests bought as fractional nodes
	// of the kinds they may use, first all pods together, then each group
	// of identical constraints alone.
	var prices *Resources64
	var total Resources
	groups := map[int]Resources{}
	for _, c := range classes {
		scaled := c.req
		for r := range scaled {
			scaled[r] = int64(float64(scaled[r]) * c.n)
		}
		total = total.Add(scaled)
		groups[c.group] = groups[c.group].Add(scaled)
	}
	limit := time.Now().Add(lbTimeBudget)
	if d := s.p.Options.Deadline; !d.IsZero() && d.Before(limit) {
		limit = d
	}
	stop := s.p.Options.stopAt()
	approx := false
	if v, w, exact, ok := coveringLP(s.kinds, kinds, total, resources, limit, stop); ok {
		bound = max(bound, v)
		prices = w
		approx = !exact
	}
	if len(groups) > 1 {
		for g, demand := range groups {
			var sub []int
			for i, ki := range kinds {
				if s.kinds[ki].compat.has(g) && !usable[i].empty() {
					sub = append(sub, ki)
				}
			}
			if v, _, exact, ok := coveringLP(s.kinds, sub, demand, resources, limit, stop); ok {
				bound = max(bound, v)
				approx = approx || !exact
			}
		}
	}
	// The pairing program (each class only on kinds it fits) is tighter when
	// pods are large, but it is bigger (and, on few huge shapes, degenerate:
	// gonum's simplex hung on it, issue 33); it is tried without the
	// pod-count dimension.
	var noPods []int
	for _, r := range resources {
		if r != Pods {
			noPods = append(noPods, r)
		}
	}
	pairClasses := classes
	if len(classes) > lbMaxClasses && distinctGroups(classes) > lbMaxClasses {
		// No grid merges classes of different groups: every grid is
		// tried and the coarsest is kept, so only it is computed.
		last := 0.0
		for grid := 1.02; grid < 4; grid = 1 + (grid-1)*2 {
			last = grid
		}
		pairClasses = s.boundClasses(count, resources, last)
	} else {
		for grid := 1.02; len(pairClasses) > lbMaxClasses && grid < 4; grid = 1 + (grid-1)*2 {
			pairClasses = s.boundClasses(count, resources, grid)
		}
	}
	// fluidDual gives up past lbMaxCells: a program that big is not built.
	// It stops at its budgets, holding a weaker bound (approx).
	if len(pairClasses) <= lbMaxClasses*4 {
		pairKinds, pairUsable := s.boundKinds(pairClasses, noPods)
		if v, exact, ok := fluidDual(s.kinds, pairKinds, pairUsable, pairClasses, noPods, lbMaxPivots, limit, stop); ok {
			bound = max(bound, v)
			approx = approx || !exact
		}
	}
	// Node-count bounds: a cap group of n pods with at most c per node
	// needs ceil(n/c) nodes, each at least the cheapest kind any of them fits.
	// Only carriers that count in their own cap are held to it on every
	// node; the pods they merely match may go where no carrier is.
	pods := make([]int, len(s.caps))
	cheapest := make([]float64, len(s.caps))
	for g := range cheapest {
		cheapest[g] = math.Inf(1)
	}
	for ci, c := range s.classes {
		if count[ci] == 0 {
			continue
		}
		for _, m := range c.caps {
			if !m.carrier || m.weight == 0 {
				continue
			}
			pods[m.group] += count[ci]
			for _, ki := range c.kinds {
				cheapest[m.group] = min(cheapest[m.group], s.kinds[ki].price)
			}
		}
	}
	for g, n := range pods {
		if n > 0 && !math.IsInf(cheapest[g], 1) {
			nodes := (n + s.caps[g].limit - 1) / s.caps[g].limit
			bound = max(bound, float64(nodes)*cheapest[g])
		}
	}
	return round6(bound), prices, approx
}

// coveringLP prices resources so that no kind is worth more than it costs,
// maximising what the demand is worth:
//
//	max Σ_r demand_r w_r   s.t.  Σ_r alloc_kr w_r ≤ price_k for every kind k, w ≥ 0
//
// This is the dual of buying fractional nodes to cover the demand, so any
// feasible w is a valid lower bound (weak duality) and the optimal w are the
// resource prices the greedy values pods with. Starting from w = 0 (all
// slack) needs no phase one, and the program has only as many rows as kinds.
// It is solved by packingLP within the bound's budgets; whatever w it ends
// at is scaled down until no kind is worth more than its price, so that
// the value is a bound even when it stopped early or rounded.
func coveringLP(all []*kind, kinds []int, demand Resources, resources []int, limit time.Time, stop stopAt) (bound float64, prices *Resources64, exact, ok bool) {
	var cols []int
	for _, r := range resources {
		if demand[r] > 0 {
			cols = append(cols, r)
		}
	}
	if len(cols) == 0 || len(kinds) == 0 {
		return 0, nil, false, false
	}
	// Variables u_r = w_r · demand_r.
	n := len(cols)
	a := make([]float64, len(kinds)*n)
	b := make([]float64, len(kinds))
	c := make([]float64, n)
	for j := range cols {
		c[j] = 1
	}
	for i, ki := range kinds {
		for j, r := range cols {
			a[i*n+j] = float64(all[ki].alloc[r]) / float64(demand[r])
		}
		b[i] = all[ki].price
	}
	lp := newPackingLP(a, b, c)
	status := lp.solve(lbMaxPivots, limit, stop)
	if status == lpUnbounded {
		return 0, nil, false, false
	}
	x := lp.x()
	var w Resources64
	for j, r := range cols {
		w[r] = x[j] / float64(demand[r])
	}
	// The certificate: no kind worth more than its price.
	worst := 1.0
	for _, ki := range kinds {
		worth := 0.0
		for _, r := range cols {
			worth += float64(all[ki].alloc[r]) * w[r]
		}
		if all[ki].price > 0 {
			worst = max(worst, worth/all[ki].price)
		} else if worth > 0 {
			return 0, nil, false, false
		}
	}
	value := 0.0
	for _, r := range cols {
		w[r] /= worst
		value += w[r] * float64(demand[r])
	}
	return value * (1 - 1e-9), &w, status == lpOptimal, true
}

// Resources64 is a resource vector of prices.
type Resources64 [MaxResources]float64

// boundResources lists the resources the placed pods request, without the
// pod count and ephemeral storage.
func (s *state) boundResources(placed []int) []int {
	var used Resources
	for ci, c := range s.classes {
		if placed[ci] > 0 {
			used = used.Add(c.req)
		}
	}
	var out []int
	for r := range used {
		if used[r] > 0 && r != EphemeralStorage {
			out = append(out, r)
		}
	}
	return out
}

// distinctGroups counts the groups of the classes.
func distinctGroups(classes []lbClass) int {
	seen := map[int]bool{}
	for _, c := range classes {
		seen[c.group] = true
	}
	return len(seen)
}

// boundClasses merges the placed classes by group and request rounded down
// onto a grid with the given factor (1: exact).
func (s *state) boundClasses(placed []int, resources []int, grid float64) []lbClass {
	index := map[lbClass]int{}
	var out []lbClass
	// Requests repeat across classes: each value is rounded once.
	rounded := map[int64]int64{}
	for ci, c := range s.classes {
		if placed[ci] == 0 {
			continue
		}
		key := lbClass{group: c.group}
		for _, r := range resources {
			v := c.req[r]
			if grid > 1 && v > 1 {
				d, ok := rounded[v]
				if !ok {
					d = roundDown(v, grid)
					rounded[v] = d
				}
				v = d
			}
			key.req[r] = v
		}
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, key)
		}
		out[i].n += float64(placed[ci])
	}
	return out
}

// roundDown moves v down to the nearest power of grid (v itself when grid is 1).
func roundDown(v int64, grid float64) int64 {
	if grid <= 1 || v <= 1 {
		return v
	}
	return int64(math.Pow(grid, math.Floor(math.Log(float64(v))/math.Log(grid))))
}

// boundKinds returns the kinds worth keeping for the bound and, for each,
// which bound classes may use it. A kind is dropped when another offers at
// least as much of every resource per dollar to every class it serves.
func (s *state) boundKinds(classes []lbClass, resources []int) ([]int, []bitset) {
	// Classes whose groups ask the same of a node and whose requests are
	// the same may use the same kinds: each kind judges them once.
	index := map[fitKey]int{}
	var reps []lbClass
	keyOf := make([]int, len(classes))
	for ci, c := range classes {
		key := fitKey{s.sigOf[c.group], c.req}
		i, ok := index[key]
		if !ok {
			i = len(reps)
			index[key] = i
			reps = append(reps, c)
		}
		keyOf[ci] = i
	}
	// Kinds compete over the representatives: every one stands for at
	// least one class, so the subset relations are those over classes,
	// with far fewer bits.
	var kinds []int
	var usable []bitset
	for ki, k := range s.kinds {
		u := newBitset(len(reps))
		some := false
		for i, c := range reps {
			if k.compat.has(c.group) && c.req.Fits(k.alloc) {
				u.set(i)
				some = true
			}
		}
		if some {
			kinds = append(kinds, ki)
			usable = append(usable, u)
		}
	}
	kinds, usable = s.pruneKinds(kinds, usable, resources, false)
	for i, ok := range usable {
		u := newBitset(len(classes))
		for ci := range classes {
			if ok.has(keyOf[ci]) {
				u.set(ci)
			}
		}
		usable[i] = u
	}
	return kinds, usable
}

// pruneKinds drops every kind that another beats per dollar: it serves every
// class the first serves (usable) and offers at least as much of every
// resource per dollar. With samePool, only kinds of the same pool compete.
func (s *state) pruneKinds(kinds []int, usable []bitset, resources []int, samePool bool) ([]int, []bitset) {
	perDollar := func(k *kind, r int) float64 {
		if k.price <= 0 {
			return math.Inf(1)
		}
		return float64(k.alloc[r]) / k.price
	}
	// Each kind's resources per dollar, side by side: a pair is compared
	// on them first, the cheaper test, then on what it serves.
	nr := len(resources)
	rates := make([]float64, len(kinds)*nr)
	for i, ki := range kinds {
		for x, r := range resources {
			rates[i*nr+x] = perDollar(s.kinds[ki], r)
		}
	}
	var outKinds []int
	var outUsable []bitset
	for i, ki := range kinds {
		dominated := false
		ri := rates[i*nr : (i+1)*nr]
		for j, kj := range kinds {
			if i == j || (samePool && s.kinds[ki].pool != s.kinds[kj].pool) {
				continue
			}
			better, strictly := true, false
			for x, b := range rates[j*nr : (j+1)*nr] {
				a := ri[x]
				if b < a {
					better = false
					break
				}
				if b > a {
					strictly = true
				}
			}
			if !better || !usable[i].subsetOf(usable[j]) {
				continue
			}
			// Ties: keep the lower index only.
			if better && (strictly || j < i || !usable[j].subsetOf(usable[i])) {
				dominated = true
				break
			}
		}
		if !dominated {
			outKinds = append(outKinds, ki)
			outUsable = append(outUsable, usable[i])
		}
	}
	return outKinds, outUsable
}

// singleResourceBound prices each resource alone: every class's demand of it
// bought at the cheapest rate among the kinds it may use. The best resource
// gives a valid bound.
func singleResourceBound(all []*kind, kinds []int, usable []bitset, classes []lbClass, resources []int) float64 {
	best := 0.0
	for _, r := range resources {
		total := 0.0
		for ci, c := range classes {
			if c.req[r] == 0 {
				continue
			}
			rate := math.Inf(1)
			for i, ki := range kinds {
				if usable[i].has(ci) && all[ki].alloc[r] > 0 {
					rate = min(rate, all[ki].price/float64(all[ki].alloc[r]))
				}
			}
			if !math.IsInf(rate, 1) {
				total += c.n * float64(c.req[r]) * rate
			}
		}
		best = max(best, total)
	}
	return best
}

// fluidDual bounds the fluid relaxation from below through its dual. The
// relaxation, in standard form,
//
//	min Σ_k price_k x_k
//	Σ_k y_ck = 1                              for every class c
//	Σ_c a_ckr y_ck ≤ x_k                      for every kind k, resource r
//	x, y ≥ 0,   a_ckr = n_c req_cr / alloc_kr
//
// (y_ck the share of class c on kind k) has the dual
//
//	max Σ_c u_c
//	u_c ≤ Σ_r a_ckr v_kr                      for every class c and kind k it may use
//	Σ_r v_kr ≤ price_k                        for every kind k
//	v ≥ 0
//
// which splits every kind's price into prices of its resources, and charges
// each class what its pods cost on its cheapest kind at those prices. Any
// feasible (u, v) is a lower bound (weak duality), so the dual is solved by
// a primal simplex (packingLP) that starts feasible at u = v = 0 and stays
// feasible: when its budget runs out or the solve is stopped it still holds
// a bound, only a weaker one (exact is then false). Whatever point the
// simplex ends at, the bound is recomputed from its v alone, clipped and
// scaled onto the kinds' prices and with every u_c the cheapest kind's
// charge, so that rounding in the pivots can never lift it above the optimum.
func fluidDual(all []*kind, kinds []int, usable []bitset, classes []lbClass, resources []int, pivots int, limit time.Time, stop stopAt) (bound float64, exact, ok bool) {
	// Variables: u_c, then v_kr for every kind and resource some class it
	// serves requests (scaled by price_k: v'_kr = v_kr / price_k ∈ [0, 1]).
	type kr struct{ kind, res int }
	var vars []kr
	varOf := make([][]int, len(kinds)) // per kind, per resource index: variable or -1
	for i, ki := range kinds {
		varOf[i] = make([]int, len(resources))
		for x, r := range resources {
			varOf[i][x] = -1
			if all[ki].alloc[r] == 0 || all[ki].price <= 0 {
				continue
			}
			for ci, c := range classes {
				if usable[i].has(ci) && c.req[r] > 0 {
					varOf[i][x] = len(classes) + len(vars)
					vars = append(vars, kr{i, x})
					break
				}
			}
		}
	}
	type pair struct{ kind, class int }
	var pairs []pair
	for i, ki := range kinds {
		if all[ki].price <= 0 {
			continue // a free kind: its classes cost nothing
		}
		for ci := range classes {
			if usable[i].has(ci) {
				pairs = append(pairs, pair{i, ci})
			}
		}
	}
	n := len(classes) + len(vars)
	m := len(pairs) + len(kinds)
	if len(vars) == 0 || m*n > lbMaxCells {
		return 0, false, false
	}
	charge := func(ci, i, x int) float64 { return fluidCharge(&classes[ci], all[kinds[i]], resources[x]) }
	a := make([]float64, m*n)
	b := make([]float64, m)
	c := make([]float64, n)
	for _, p := range pairs {
		c[p.class] = 1 // a class on no priced kind adds nothing
	}
	scale := 0.0
	for _, ki := range kinds {
		scale = max(scale, all[ki].price)
	}
	for row, p := range pairs {
		a[row*n+p.class] = 1
		for x := range resources {
			if v := varOf[p.kind][x]; v >= 0 {
				a[row*n+v] = -charge(p.class, p.kind, x)
			}
		}
		// A tiny distinct slack on every pair keeps the start, where all
		// of them bind at zero, from degenerating; the bound is
		// recomputed without it below.
		b[row] = scale * 1e-9 * (1 + float64(row%97)/97)
	}
	for i := range kinds {
		row := len(pairs) + i
		for x := range resources {
			if v := varOf[i][x]; v >= 0 {
				a[row*n+v] = 1
			}
		}
		b[row] = 1
	}
	lp := newPackingLP(a, b, c)
	status := lp.solve(pivots, limit, stop)
	if status == lpUnbounded {
		return 0, false, false
	}
	total := dualCertificate(lp.x(), varOf, all, kinds, usable, classes, resources)
	return total * (1 - 1e-9), status == lpOptimal, true
}

// fluidCharge is a_ckr · price_k: dollars class c pays for resource r
// when kind k's whole price is on r.
func fluidCharge(c *lbClass, k *kind, r int) float64 {
	return c.n * float64(c.req[r]) / float64(k.alloc[r]) * k.price
}

// dualCertificate is the bound fluidDual certifies from the LP's answer x
// (variables numbered by varOf, as fluidDual numbers them): v clipped onto
// every kind's price, then every class charged at its cheapest kind.
func dualCertificate(x []float64, varOf [][]int, all []*kind, kinds []int, usable []bitset, classes []lbClass, resources []int) float64 {
	for i := range kinds {
		sum := 0.0
		for x2 := range resources {
			if v := varOf[i][x2]; v >= 0 {
				sum += x[v]
			}
		}
		if sum > 1 {
			for x2 := range resources {
				if v := varOf[i][x2]; v >= 0 {
					x[v] /= sum
				}
			}
		}
	}
	total := 0.0
	for ci := range classes {
		u := math.Inf(1)
		for i, ki := range kinds {
			if !usable[i].has(ci) {
				continue
			}
			if all[ki].price <= 0 {
				u = 0
				break
			}
			pay := 0.0
			for x2 := range resources {
				if v := varOf[i][x2]; v >= 0 {
					pay += x[v] * fluidCharge(&classes[ci], all[ki], resources[x2])
				}
			}
			u = min(u, pay)
		}
		if !math.IsInf(u, 1) {
			total += u
		}
	}
	return total
}

// efficientKinds returns the kinds worth opening for the pods still to
// place: those no kind of the same pool beats per dollar on every requested
// resource while serving every class they serve.
func (s *state) efficientKinds() []int {
	var demand Resources
	for ci, c := range s.classes {
		if s.rem[ci] > 0 {
			demand = demand.Add(c.req)
		}
	}
	var resources []int
	for r := range demand {
		if demand[r] > 0 {
			resources = append(resources, r)
		}
	}
	// Classes with the same fit are served by the same kinds: usable
	// sets are over fits, with the same subset relations as over classes.
	rep := make([]*class, s.fits) // by fit: a class with pods left
	for ci, c := range s.classes {
		if s.rem[ci] > 0 && rep[c.fit] == nil {
			rep[c.fit] = c
		}
	}
	var kinds []int
	var usable []bitset
	for ki, k := range s.kinds {
		u := newBitset(len(rep))
		for f, c := range rep {
			if c != nil && k.compat.has(c.group) && c.req.Fits(k.alloc) {
				u.set(f)
			}
		}
		if !u.empty() {
			kinds = append(kinds, ki)
			usable = append(usable, u)
		}
	}
	kinds, _ = s.pruneKinds(kinds, usable, resources, true)
	return kinds
}
