package plan

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Commitments (Reserved Instances and Savings Plans) are paid whether used
// or not: the bill of a plan is their fees plus what the nodes they do not
// cover cost on-demand. Bill works that out as AWS does each hour:
// zonal Reserved Instances first (whole instances of their type in their
// zone), then regional ones (size-flexible: normalised units of their
// family, smallest sizes first), then EC2 Instance Savings Plans, then
// Compute Savings Plans, each Savings Plan on the eligible on-demand usage
// with the highest discount first, at its rate, until its dollars an hour
// run out; the rest is on-demand. Spot nodes are never covered.

// Commitment is one commitment as the bill spends it.
type Commitment struct {
	// Name is the Commitment object's name.
	Name string
	Type v1alpha1.CommitmentType
	// Region is where the commitment applies; "" is the region planned.
	Region string

	// InstanceType, Family and Zone are a Reserved Instance's: a zonal
	// reservation (Zone set) covers Count instances of InstanceType in
	// Zone; a regional one covers Units normalised units of Family.
	InstanceType, Family, Zone string
	Count                      int
	Units                      float64

	// Hourly is a Savings Plan's commitment in dollars an hour; Discount
	// the fraction off on-demand for the types Rates (dollars an hour by
	// type) does not list. Family is an EC2 Instance Savings Plan's.
	Hourly   float64
	Discount float64
	Rates    map[string]float64

	// Fee is what the commitment costs an hour whatever is used: a
	// Savings Plan's Hourly, Count reserved instances at their price.
	Fee float64
}

// CommitmentsOf converts the Commitment objects read into what the bill
// spends. A commitment of another region than region ("" for any) is
// left out with a warning: it covers nothing planned here.
func CommitmentsOf(objs []v1alpha1.Commitment, region string) (out []Commitment, warnings []string, err error) {
	for i := range objs {
		o := &objs[i]
		if err := o.Validate(); err != nil {
			return nil, nil, fmt.Errorf("Commitment %s: %w", o.Name, err)
		}
		c := Commitment{Name: o.Name, Type: o.Spec.Type}
		if ri := o.Spec.ReservedInstances; ri != nil {
			c.InstanceType, c.Region, c.Zone, c.Count = ri.InstanceType, ri.Region, ri.AvailabilityZone, int(ri.InstanceCount)
			family, size, _ := strings.Cut(ri.InstanceType, ".")
			c.Family = family
			if c.Zone == "" {
				c.Units = float64(c.Count) * NormalizedUnits(size, 0)
				if c.Units == 0 {
					return nil, nil, fmt.Errorf("Commitment %s: spec.reservedInstances.instanceType: size %q has no normalised units; make it zonal (availabilityZone) to cover whole instances", o.Name, size)
				}
			}
			if ri.PricePerHour != "" {
				price, _ := strconv.ParseFloat(ri.PricePerHour, 64) // checked by Validate
				c.Fee = price * float64(c.Count)
			}
		} else {
			sp := o.Spec.SavingsPlan
			c.Hourly, _ = strconv.ParseFloat(sp.Commitment, 64)
			c.Fee = c.Hourly
			c.Family, c.Region = sp.InstanceFamily, sp.Region
			if sp.Discount != "" {
				c.Discount, _ = strconv.ParseFloat(sp.Discount, 64)
			}
			for _, r := range sp.Rates {
				if c.Rates == nil {
					c.Rates = map[string]float64{}
				}
				c.Rates[r.InstanceType], _ = strconv.ParseFloat(r.PricePerHour, 64)
			}
		}
		if c.Zone == "" && c.Region != "" && region != "" && c.Region != region {
			warnings = append(warnings, fmt.Sprintf("Commitment %s is in %s, not %s (the region planned): it covers nothing here", o.Name, c.Region, region))
			continue
		}
		out = append(out, c)
	}
	return out, warnings, nil
}

// NormalizedUnits is AWS's normalisation factor of an instance size, by
// which a regional Reserved Instance's size flexibility is counted: nano
// 0.25, micro 0.5, small 1, medium 2, large 4, xlarge 8, and 8 per
// xlarge above (2xlarge 16, 4xlarge 32, 24xlarge 192, ...). A metal size
// counts as the largest size of its family, 2 units a vCPU (vcpus); 0
// means unknown.
func NormalizedUnits(size string, vcpus int) float64 {
	switch size {
	case "nano":
		return 0.25
	case "micro":
		return 0.5
	case "small":
		return 1
	case "medium":
		return 2
	case "large":
		return 4
	case "xlarge":
		return 8
	}
	if n, ok := strings.CutSuffix(size, "xlarge"); ok {
		if k, err := strconv.Atoi(n); err == nil && k > 0 {
			return 8 * float64(k)
		}
	}
	if strings.HasPrefix(size, "metal") && vcpus > 0 {
		return 2 * float64(vcpus)
	}
	return 0
}

// BillNode is a node as the bill sees it.
type BillNode struct {
	InstanceType string
	Zone         string
	CapacityType string
	// Price is what the node costs an hour with no commitment.
	Price float64
	// VCPUs sizes a metal type in normalised units.
	VCPUs int
}

// Bill is what a plan costs an hour with its commitments.
type Bill struct {
	// Total is Sunk plus OnDemand: the objective a commitment-aware plan
	// minimises.
	Total float64 `json:"totalPerHour"`
	// Sunk is the commitments' fees, paid whether used or not.
	Sunk float64 `json:"commitmentFeesPerHour"`
	// OnDemand is what the nodes cost beyond what commitments cover: spot
	// nodes, and on-demand usage no commitment had room for.
	OnDemand float64 `json:"uncoveredPerHour"`
	// List is the nodes' prices with no commitment.
	List float64 `json:"listPerHour"`
	// Commitments are each commitment's use, in the order given.
	Commitments []CommitmentUse `json:"commitments"`
}

// CommitmentUse is how much of one commitment a plan uses.
type CommitmentUse struct {
	Name string                  `json:"name"`
	Type v1alpha1.CommitmentType `json:"type"`
	// Capacity and Used are in Unit: "units" (a regional reservation's
	// normalised units), "instances" (a zonal one's) or "$/h" (a Savings
	// Plan's commitment, at its rates).
	Capacity float64 `json:"capacity"`
	Used     float64 `json:"used"`
	Unit     string  `json:"unit"`
	// Utilization is Used / Capacity.
	Utilization float64 `json:"utilization"`
	// Covered is the on-demand price of the usage the commitment covered.
	Covered float64 `json:"coveredPerHour"`
	// Spilled is the on-demand price of the usage the commitment could
	// have covered but had no room for, left to later commitments or
	// paid on-demand.
	Spilled float64 `json:"spilledPerHour"`
}

// billOrder is the order AWS applies commitments in.
func billOrder(c *Commitment) int {
	switch {
	case c.Type == v1alpha1.CommitmentReservedInstances && c.Zone != "":
		return 0
	case c.Type == v1alpha1.CommitmentReservedInstances:
		return 1
	case c.Type == v1alpha1.CommitmentEC2InstanceSavingsPlan:
		return 2
	}
	return 3
}

// BillOf prices nodes with the commitments, as AWS bills an hour of them.
// It is pure: the same nodes and commitments give the same bill.
func BillOf(nodes []BillNode, commitments []Commitment) Bill {
	b, _ := billShares(nodes, commitments)
	return b
}

// EffectivePrices are what each node costs an hour beyond the commitments'
// sunk fees, as BillOf spends them: its list price times the share of it
// no commitment covers. They sum to the bill's OnDemand.
func EffectivePrices(nodes []BillNode, commitments []Commitment) []float64 {
	_, rem := billShares(nodes, commitments)
	out := make([]float64, len(nodes))
	for i := range nodes {
		out[i] = nodes[i].Price * rem[i]
	}
	return out
}

// billShares is BillOf, with the share of each node no commitment covers.
func billShares(nodes []BillNode, commitments []Commitment) (Bill, []float64) {
	rem := make([]float64, len(nodes)) // the share of each node no commitment covers yet
	var b Bill
	for i, n := range nodes {
		rem[i] = 1
		b.List += n.Price
	}
	order := make([]int, len(commitments))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, c int) int {
		return cmp.Compare(billOrder(&commitments[a]), billOrder(&commitments[c]))
	})
	b.Commitments = make([]CommitmentUse, len(commitments))
	for _, ci := range order {
		c := &commitments[ci]
		b.Sunk += c.Fee
		b.Commitments[ci] = spend(c, nodes, rem)
	}
	for i, n := range nodes {
		b.OnDemand += n.Price * rem[i]
	}
	b.Total = b.Sunk + b.OnDemand
	return b, rem
}

// eligible reports whether the commitment may cover node n at all.
func eligible(c *Commitment, n *BillNode) bool {
	if n.CapacityType != cloud.CapacityTypeOnDemand || n.Price <= 0 {
		return false
	}
	family, _, _ := strings.Cut(n.InstanceType, ".")
	switch {
	case c.Type == v1alpha1.CommitmentReservedInstances && c.Zone != "":
		return n.InstanceType == c.InstanceType && n.Zone == c.Zone
	case c.Type == v1alpha1.CommitmentComputeSavingsPlan:
		return true
	}
	return family == c.Family
}

// rate is what an hour of node n costs of Savings Plan c's dollars: its
// rate for n's type, else its discount off n's price; -1 when c has no
// rate for it or the rate saves nothing (AWS would not apply the plan).
// Eligibility (eligible) is the caller's.
func (c *Commitment) rate(n *BillNode) float64 {
	r, ok := c.Rates[n.InstanceType]
	switch {
	case !ok && c.Discount > 0:
		r = n.Price * (1 - c.Discount)
	case !ok:
		return -1
	}
	if r >= n.Price {
		return -1
	}
	return r
}

// spend applies one commitment to the nodes' uncovered shares rem.
func spend(c *Commitment, nodes []BillNode, rem []float64) CommitmentUse {
	u := CommitmentUse{Name: c.Name, Type: c.Type}
	var idx []int
	for i := range nodes {
		if rem[i] > 0 && eligible(c, &nodes[i]) {
			idx = append(idx, i)
		}
	}
	switch {
	case c.Type == v1alpha1.CommitmentReservedInstances && c.Zone != "":
		u.Capacity, u.Unit = float64(c.Count), "instances"
		for _, i := range idx {
			if rem[i] < 1 || u.Used >= u.Capacity {
				u.Spilled += nodes[i].Price * rem[i]
				continue
			}
			u.Used++
			u.Covered += nodes[i].Price
			rem[i] = 0
		}
	case c.Type == v1alpha1.CommitmentReservedInstances:
		u.Capacity, u.Unit = c.Units, "units"
		units := func(i int) float64 {
			_, size, _ := strings.Cut(nodes[i].InstanceType, ".")
			return NormalizedUnits(size, nodes[i].VCPUs)
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(units(a), units(b)) })
		for _, i := range idx {
			size := units(i)
			if size == 0 {
				continue
			}
			need := size * rem[i]
			take := min(need, u.Capacity-u.Used)
			u.Used += take
			f := take / size
			u.Covered += nodes[i].Price * f
			rem[i] -= f
			u.Spilled += nodes[i].Price * rem[i]
		}
	default:
		u.Capacity, u.Unit = c.Hourly, "$/h"
		rate := func(i int) float64 { return c.rate(&nodes[i]) }
		saving := func(i int) float64 { return 1 - rate(i)/nodes[i].Price }
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(saving(b), saving(a)) })
		for _, i := range idx {
			r := rate(i)
			if r < 0 {
				continue // no rate, or the plan saves nothing here: AWS would not apply it either
			}
			cost := r * rem[i]
			take := min(cost, u.Capacity-u.Used)
			u.Used += take
			f := 0.0
			if r > 0 {
				f = take / r
			} else {
				f = rem[i]
			}
			u.Covered += nodes[i].Price * f
			rem[i] -= f
			u.Spilled += nodes[i].Price * rem[i]
		}
	}
	if u.Capacity > 0 {
		u.Utilization = u.Used / u.Capacity
	}
	return u
}

// Spending is what Spend found: the plan to follow, its bill, and the
// commitment-blind plan's bill, both with the commitments applied.
type Spending struct {
	// Plan is the plan with the lower bill: Blind's plan, or one planned
	// with the commitments' room priced as spent; its nodes carry their
	// list prices.
	Plan *solver.Plan
	Bill Bill
	// Blind is the bill of the plan planned as if there were no
	// commitments.
	Blind Bill
	// Existing is the bill of the problem's existing nodes alone: what
	// every plan's bill starts from.
	Existing Bill
	// Aware reports whether Plan is not the blind plan.
	Aware bool
	// Covered is, for each of Plan's new nodes, the share of it the
	// commitments cover in Bill (0 for a node paid at list price).
	Covered []float64
	// Rounds is how many commitment-aware plans were made and billed.
	Rounds int
	// Bound is a bill no plan can beat (BillBound of the blind plan's
	// LowerBound); 0 when the solver gave no bound.
	Bound float64
}

// Saving is what planning with the commitments saves an hour against
// ignoring them and applying them to the bill afterwards.
func (s *Spending) Saving() float64 { return s.Blind.Total - s.Bill.Total }

// Added is what Plan's new nodes add to the hour's bill: Bill less the
// bill of the existing nodes alone (the fees are in both). It compares
// with a plan's list price made without commitments.
func (s *Spending) Added() float64 { return s.Bill.Total - s.Existing.Total }

// maxPlans bounds the plans Spend makes in all: each is a whole solve.
const maxPlans = 16

// spendRounds bounds the plans Spend makes for its Savings Plans' price.
const spendRounds = 8

// Spend plans p with its commitments as a budget, and bills every plan
// it makes exactly (BillOf); the cheapest bill wins, the blind plan
// (solved already, and passed in) included, so that the result is never
// dearer than ignoring the commitments. Commitment fees are sunk: every
// bill counts them whatever the plan. solve returns a nil plan and no
// error to end the search (a deadline): Spend returns what it has.
//
// The solver knows nothing of commitments; it knows capacity reservations
// (offerings with a Count, planned first as paid for either way) and
// prices. Reserved Instances are what a capacity reservation is, counted
// in instances: a zonal one is a reservation of its type in its zone; a
// regional one, size-flexible, is tried as a reservation of each size of
// its family its units buy whole, and as the largest sizes first
// (20 units: one 2xlarge and one large). A Savings Plan left with room
// makes the on-demand offerings it covers cheaper by a factor m (times the
// share of a node it could cover), found by bisection as a budget's
// price is: room left makes them cheaper in the next plan, usage spilled
// over makes them dearer.
func Spend(p *solver.Problem, blind *solver.Plan, cs []Commitment, solve func(*solver.Problem) (*solver.Plan, error)) (*Spending, error) {
	list := listPrices(p)
	s := &Spending{Plan: blind}
	s.Bill, s.Covered = billNew(p, billNodes(p, blind, list), cs)
	s.Blind = s.Bill
	s.Existing = BillOf(billNodes(p, &solver.Plan{}, list), cs)
	if blind.LowerBound > 0 {
		// The existing nodes stay whatever is planned: their price is
		// part of every plan's list price.
		s.Bound = BillBound(p, blind.LowerBound+listOfExisting(p), cs)
	}
	if len(cs) == 0 {
		return s, nil
	}
	stopped := false
	try := func(q *solver.Problem) (Bill, bool, error) {
		if stopped || s.Rounds >= maxPlans {
			return Bill{}, false, nil
		}
		plan, err := solve(q)
		if err != nil || plan == nil {
			stopped = plan == nil
			return Bill{}, false, err
		}
		s.Rounds++
		nodes := billNodes(p, plan, list)
		b, covered := billNew(p, nodes, cs)
		if len(plan.Unschedulable) > len(s.Plan.Unschedulable) || b.Total >= s.Bill.Total-1e-9 {
			return b, false, nil
		}
		for i := range plan.NewNodes {
			plan.NewNodes[i].Price = nodes[len(p.Nodes)+i].Price
		}
		plan.TotalPrice = b.List - listOfExisting(p)
		plan.LowerBound, plan.BoundApproximate = blind.LowerBound, blind.BoundApproximate
		s.Plan, s.Bill, s.Aware, s.Covered = plan, b, true, covered
		return b, true, nil
	}
	base, chosen := p, []reservation(nil)
	// The existing nodes use their commitments first, whatever is planned.
	existing := s.Existing
	for _, choice := range reservationChoices(p, cs, existing) {
		q := reserve(p, cs, choice)
		if _, better, err := try(q); err != nil {
			return nil, err
		} else if better {
			base, chosen = q, choice
		}
	}
	for _, choice := range savingsPlanChoices(p, blind, s.Blind, cs) {
		q := reserve(p, cs, append(slices.Clone(chosen), choice...))
		if _, better, err := try(q); err != nil {
			return nil, err
		} else if better {
			base = q
		}
	}
	m, lo, hi := make([]float64, len(cs)), make([]float64, len(cs)), make([]float64, len(cs))
	for i := range cs {
		m[i], hi[i] = 1, 1
	}
	last := s.Bill
	for rounds := 0; rounds < spendRounds; rounds++ {
		changed := false
		for i, u := range last.Commitments {
			if cs[i].Type == v1alpha1.CommitmentReservedInstances {
				continue
			}
			next := m[i]
			switch {
			case u.Utilization < 0.98:
				hi[i] = m[i]
				next = (lo[i] + hi[i]) / 2
			case u.Spilled > 0.02*u.Covered:
				lo[i] = m[i]
				next = (lo[i] + hi[i]) / 2
			}
			if math.Abs(next-m[i]) > 1e-3 {
				m[i], changed = next, true
			}
		}
		if !changed {
			break
		}
		b, _, err := try(repriced(base, cs, m))
		if err != nil {
			return nil, err
		}
		if stopped || s.Rounds >= maxPlans {
			break
		}
		last = b
	}
	return s, nil
}

// SpendBy is Spend with the solver's own plans, as every planner that
// does not count its solves itself spends them (the operator's batches
// and ProvisioningRequests, the TUI): no plan is started once ctx ends or
// deadline (zero for none) is past, and the search ends with the plans
// made by then.
func SpendBy(ctx context.Context, p *solver.Problem, blind *solver.Plan, cs []Commitment, deadline time.Time) (*Spending, error) {
	return Spend(p, blind, cs, func(q *solver.Problem) (*solver.Plan, error) {
		if ctx.Err() != nil || !deadline.IsZero() && time.Now().After(deadline) {
			return nil, nil // the deadline or shutdown: the plans made so far
		}
		return solver.Solve(q)
	})
}

// CoveredList sums new nodes' list prices, and the part of them the
// commitments cover (covered is each node's share, Spending.Covered; nil
// or short for none): what a screen says a launch costs at list and what
// of it the commitments pay.
func CoveredList(nodes []solver.NewNode, covered []float64) (list, paid float64) {
	for i := range nodes {
		list += nodes[i].Price
		if i < len(covered) {
			paid += nodes[i].Price * covered[i]
		}
	}
	return list, paid
}

// billNew bills nodes (billNodes: p's existing nodes, then a plan's new
// ones) and returns the share of each new node the commitments cover.
func billNew(p *solver.Problem, nodes []BillNode, cs []Commitment) (Bill, []float64) {
	b, rem := billShares(nodes, cs)
	covered := make([]float64, len(nodes)-len(p.Nodes))
	for i := range covered {
		covered[i] = 1 - rem[len(p.Nodes)+i]
	}
	return b, covered
}

// coveredPriceShare is the share of its list price a node or offering the
// commitments cover whole is planned at: not zero, which the solver reads
// as a price it does not know, and low enough that covered capacity is
// always filled first.
const coveredPriceShare = 1.0 / 1000

// CoveredPrices prices each of p's existing nodes at its effective price
// with the commitments (EffectivePrices, the nodes billed together), and a
// node they cover whole at coveredPriceShare of its list price, as reserve
// prices reserved capacity: paid for either way, yet not free (the
// solver takes a node without a price for one of unknown price). A
// consolidation planned on p then counts as saving only what the bill
// saves: a node moved off covered capacity saves the part of its price no
// commitment covers, never the commitment's value, so replacing a covered
// node by an uncovered one of a lower list price saves nothing.
//
// The room the existing nodes leave in the commitments is offered to the
// replacements as capacity reservations (roomLeft), so that a node may be
// replaced by one the commitments pay for: a spot node by on-demand
// capacity a Savings Plan has dollars left for, a node of another family
// by one of the plan's. The saving counted stays a lower bound of the
// bill's: the room a removed node frees, and the room beyond what the
// reservations offer, are not counted. Without commitments p is left as it
// is.
func CoveredPrices(p *solver.Problem, cs []Commitment) {
	if len(cs) == 0 {
		return
	}
	nodes := billNodes(p, &solver.Plan{}, nil)
	existing, rem := billShares(nodes, cs)
	for i := range p.Nodes {
		n := &p.Nodes[i]
		if n.Price > 0 {
			n.Price = max(n.Price*rem[i], n.Price*coveredPriceShare)
		}
	}
	*p = *reserve(p, cs, roomLeft(p, cs, existing))
}

// roomLeft is the room the commitments have left once the existing nodes
// are billed (existing, their bill), as capacity reservations: each
// Reserved Instance's as Spend plans it first (reservationChoices' greedy
// choice: the largest sizes its units buy), and each Savings Plan's as
// one node of any on-demand type it covers whose rate the dollars left
// pay whole, one count shared by them all. One node, not as many as the
// dollars buy: a reservation's count is of nodes, and nodes of different
// types cost the plan different dollars. The solver fills the cheapest
// reserved type that takes a pod first, so the node is about the size the
// pods need. A consolidation's actions draw on the one count, so no two
// replacements are counted on the same dollars; the next round offers
// what is left.
func roomLeft(p *solver.Problem, cs []Commitment, existing Bill) []reservation {
	var out []reservation
	if choices := reservationChoices(p, cs, existing); len(choices) > 0 {
		out = append(out, choices[0]...)
	}
	for ci := range cs {
		c := &cs[ci]
		room := existing.Commitments[ci].Capacity - existing.Commitments[ci].Used
		if c.Type == v1alpha1.CommitmentReservedInstances || room <= 0 {
			continue
		}
		paid := map[string]bool{}
		for _, types := range typeLists(p) {
			for ti := range types {
				t := &types[ti]
				for _, o := range t.Offerings {
					n := BillNode{InstanceType: t.Name, Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price}
					if r := c.rate(&n); o.Count == 0 && eligible(c, &n) && r >= 0 && r <= room {
						paid[t.Name] = true
					}
				}
			}
		}
		for _, typ := range slices.Sorted(maps.Keys(paid)) {
			out = append(out, reservation{commitment: ci, instanceType: typ, count: 1, name: "Commitment " + c.Name + " (room left)"})
		}
	}
	return out
}

// CoveredPricer is CoveredPrices with cs, for a planner that prices the
// nodes when it is ready to (disruption.Input.Reprice); nil without
// commitments.
func CoveredPricer(cs []Commitment) func(*solver.Problem) {
	if len(cs) == 0 {
		return nil
	}
	return func(p *solver.Problem) { CoveredPrices(p, cs) }
}

// listOfExisting is the summed price of the problem's existing nodes.
func listOfExisting(p *solver.Problem) float64 {
	sum := 0.0
	for i := range p.Nodes {
		sum += p.Nodes[i].Price
	}
	return sum
}

// reservation is a Reserved Instance commitment planned as a capacity
// reservation: Count instances of InstanceType.
type reservation struct {
	commitment   int
	instanceType string
	count        int
	// name, when set, is the reservation's name, shared by every
	// reservation of that name (one count across types); else each type
	// is a reservation of its own.
	name string
}

// maxChoices bounds the ways of planning the regional reservations tried.
const maxChoices = 6

// reservationChoices are the ways Spend plans the Reserved Instances as
// capacity reservations: first every regional one as the largest sizes
// of its family its units buy (greedily), then each regional one as one
// size, the others greedily. A zonal one is always its type and count.
// Only what the existing nodes leave of each (existing is their bill) is
// planned.
func reservationChoices(p *solver.Problem, cs []Commitment, existing Bill) [][]reservation {
	sizes := map[string][]string{} // family -> type names, largest first, with on-demand offerings
	units := map[string]float64{}
	for _, types := range typeLists(p) {
		for _, t := range types {
			family, size, _ := strings.Cut(t.Name, ".")
			if _, ok := units[t.Name]; ok || !slices.ContainsFunc(t.Offerings, func(o solver.Offering) bool { return o.CapacityType == cloud.CapacityTypeOnDemand }) {
				continue
			}
			u := NormalizedUnits(size, int(t.Capacity[solver.CPU]/1000))
			if u == 0 {
				continue
			}
			units[t.Name] = u
			sizes[family] = append(sizes[family], t.Name)
		}
	}
	for f := range sizes {
		slices.SortFunc(sizes[f], func(a, b string) int { return cmp.Or(cmp.Compare(units[b], units[a]), strings.Compare(a, b)) })
	}
	greedy := func(ci int) []reservation {
		c := &cs[ci]
		if c.Zone != "" {
			if n := c.Count - int(existing.Commitments[ci].Used); n > 0 {
				return []reservation{{commitment: ci, instanceType: c.InstanceType, count: n}}
			}
			return nil
		}
		var out []reservation
		left := c.Units - existing.Commitments[ci].Used
		for _, t := range sizes[c.Family] {
			if n := int(left / units[t]); n > 0 {
				out = append(out, reservation{commitment: ci, instanceType: t, count: n})
				left -= float64(n) * units[t]
			}
		}
		return out
	}
	var ris []int
	for i := range cs {
		if cs[i].Type == v1alpha1.CommitmentReservedInstances {
			ris = append(ris, i)
		}
	}
	if len(ris) == 0 {
		return nil
	}
	all := func(ci int, own []reservation) []reservation {
		var out []reservation
		for _, i := range ris {
			if i == ci {
				out = append(out, own...)
			} else {
				out = append(out, greedy(i)...)
			}
		}
		return out
	}
	choices := [][]reservation{all(-1, nil)}
	for _, ci := range ris {
		c := &cs[ci]
		if c.Zone != "" {
			continue
		}
		for _, t := range sizes[c.Family] {
			n := int((c.Units - existing.Commitments[ci].Used) / units[t])
			if n == 0 || len(choices) >= maxChoices {
				continue
			}
			one := []reservation{{commitment: ci, instanceType: t, count: n}}
			if g := greedy(ci); len(g) == 1 && g[0] == one[0] {
				continue // the greedy choice already
			}
			choices = append(choices, all(ci, one))
		}
	}
	return choices
}

// savingsPlanChoices are ways to fill the room the blind plan leaves in
// its Savings Plans as capacity reservations: for each type of the blind
// plan's families, the largest sizes first as the room buys them at the
// plan's rates; then, for each type of the blind plan, as many on-demand
// nodes of it as the room buys.
func savingsPlanChoices(p *solver.Problem, blind *solver.Plan, bill Bill, cs []Commitment) [][]reservation {
	onDemand := map[string]float64{} // type -> an on-demand list price
	byFamily := map[string][]string{}
	for _, types := range typeLists(p) {
		for _, t := range types {
			for _, o := range t.Offerings {
				if _, ok := onDemand[t.Name]; !ok && o.CapacityType == cloud.CapacityTypeOnDemand && o.Price > 0 && o.Count == 0 {
					onDemand[t.Name] = o.Price
					family, _, _ := strings.Cut(t.Name, ".")
					byFamily[family] = append(byFamily[family], t.Name)
				}
			}
		}
	}
	var choices [][]reservation
	for ci := range cs {
		c := &cs[ci]
		u := bill.Commitments[ci]
		if c.Type == v1alpha1.CommitmentReservedInstances || u.Utilization >= 0.98 {
			continue
		}
		room := u.Capacity - u.Used
		rate := func(typ string) float64 {
			n := BillNode{InstanceType: typ, CapacityType: cloud.CapacityTypeOnDemand, Price: onDemand[typ]}
			if n.Price == 0 || !eligible(c, &n) {
				return 0
			}
			return max(c.rate(&n), 0)
		}
		seen := map[string]bool{}
		add := func(typ string) {
			if r := rate(typ); r > 0 && !seen[typ] && int(room/r) > 0 && len(choices) < maxChoices {
				seen[typ] = true
				choices = append(choices, []reservation{{commitment: ci, instanceType: typ, count: int(room / r)}})
			}
		}
		// greedy fills the room with the family's largest sizes first.
		greedy := func(family string) []reservation {
			var out []reservation
			left := room
			for {
				largest, most := "", 0.0
				for _, typ := range byFamily[family] {
					if r := rate(typ); r > 0 && r <= left && r > most {
						largest, most = typ, r
					}
				}
				if largest == "" {
					return out
				}
				n := int(left / most)
				out = append(out, reservation{commitment: ci, instanceType: largest, count: n})
				left -= float64(n) * most
			}
		}
		families := map[string]bool{}
		for _, n := range blind.NewNodes {
			family, _, _ := strings.Cut(n.InstanceType, ".")
			if !families[family] && len(choices) < maxChoices {
				families[family] = true
				if g := greedy(family); len(g) > 0 {
					choices = append(choices, g)
					if len(g) == 1 {
						seen[g[0].instanceType] = true // add would try it again
					}
				}
			}
			add(n.InstanceType)
		}
	}
	return choices
}

// typeLists are the problem's instance types and every pool's own.
func typeLists(p *solver.Problem) [][]solver.InstanceType {
	out := [][]solver.InstanceType{p.InstanceTypes}
	for i := range p.Pools {
		if p.Pools[i].InstanceTypes != nil {
			out = append(out, p.Pools[i].InstanceTypes)
		}
	}
	return out
}

// reserve is p with the reservations added as capacity reservations: each
// on-demand offering of a reservation's type (in its zone, for a zonal
// one) gets a twin with the reservation's Count, priced at a thousandth
// of its list price (paid for either way, as Karpenter prices reserved
// offerings), every twin of one reservation sharing its count.
func reserve(p *solver.Problem, cs []Commitment, rs []reservation) *solver.Problem {
	q := *p
	add := func(types []solver.InstanceType) []solver.InstanceType {
		if types == nil {
			return nil
		}
		out := slices.Clone(types)
		for ti := range out {
			t := &out[ti]
			var twins []solver.Offering
			for _, r := range rs {
				if r.instanceType != t.Name {
					continue
				}
				c := &cs[r.commitment]
				for _, o := range t.Offerings {
					if o.CapacityType != cloud.CapacityTypeOnDemand || o.Count > 0 || c.Zone != "" && o.Zone != c.Zone {
						continue
					}
					name := r.name
					if name == "" {
						name = "Commitment " + c.Name + " (" + t.Name + ")"
					}
					o.Count, o.Reservation, o.Price = r.count, name, o.Price*coveredPriceShare
					twins = append(twins, o)
				}
			}
			if twins != nil {
				t.Offerings = append(slices.Clone(t.Offerings), twins...)
			}
		}
		return out
	}
	q.InstanceTypes = add(p.InstanceTypes)
	q.Pools = slices.Clone(p.Pools)
	for i := range q.Pools {
		q.Pools[i].InstanceTypes = add(p.Pools[i].InstanceTypes)
	}
	return &q
}

// offeringKey names an offering of a pool's type.
type offeringKey struct {
	pool                    int
	typ, zone, capacityType string
}

// listPrices indexes the prices of every pool's offerings, and the vCPUs
// of every type (to size metal ones in normalised units).
func listPrices(p *solver.Problem) map[offeringKey]float64 {
	out := map[offeringKey]float64{}
	for pi := range p.Pools {
		for _, t := range p.PoolTypes(pi) {
			for _, o := range t.Offerings {
				out[offeringKey{pi, t.Name, o.Zone, o.CapacityType}] = o.Price
			}
			out[offeringKey{pi, t.Name, "", "vcpus"}] = float64(t.Capacity[solver.CPU] / 1000)
		}
	}
	return out
}

// billNodes are the problem's existing nodes and the plan's new ones, at
// their list prices.
func billNodes(p *solver.Problem, plan *solver.Plan, list map[offeringKey]float64) []BillNode {
	out := make([]BillNode, 0, len(p.Nodes)+len(plan.NewNodes))
	for i := range p.Nodes {
		n := &p.Nodes[i]
		out = append(out, BillNode{InstanceType: n.InstanceType, Zone: n.Zone, CapacityType: n.CapacityType, Price: n.Price})
	}
	for i := range plan.NewNodes {
		n := &plan.NewNodes[i]
		pi := slices.IndexFunc(p.Pools, func(pool solver.Pool) bool { return pool.Name == n.Pool })
		price, ok := list[offeringKey{pi, n.InstanceType, n.Zone, n.CapacityType}]
		if !ok {
			price = n.Price
		}
		vcpus := int(list[offeringKey{pi, n.InstanceType, "", "vcpus"}])
		out = append(out, BillNode{InstanceType: n.InstanceType, Zone: n.Zone, CapacityType: n.CapacityType, Price: price, VCPUs: vcpus})
	}
	return out
}

// repriced is p with the on-demand offerings each commitment covers
// priced at their list price times m of that commitment (the product,
// where several cover one), floored at 1 % of the list price so that no
// offering is free.
func repriced(p *solver.Problem, cs []Commitment, m []float64) *solver.Problem {
	q := *p
	reprice := func(types []solver.InstanceType) []solver.InstanceType {
		if types == nil {
			return nil
		}
		out := slices.Clone(types)
		for ti := range out {
			t := &out[ti]
			t.Offerings = slices.Clone(t.Offerings)
			vcpus := int(t.Capacity[solver.CPU] / 1000)
			for oi := range t.Offerings {
				o := &t.Offerings[oi]
				n := BillNode{InstanceType: t.Name, Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price, VCPUs: vcpus}
				f := 1.0
				for ci := range cs {
					if m[ci] < 1 && eligible(&cs[ci], &n) {
						f *= 1 - (1-m[ci])*coverable(&cs[ci], &n)
					}
				}
				o.Price *= max(f, 0.01)
			}
		}
		return out
	}
	q.InstanceTypes = reprice(p.InstanceTypes)
	q.Pools = slices.Clone(p.Pools)
	for i := range q.Pools {
		q.Pools[i].InstanceTypes = reprice(p.Pools[i].InstanceTypes)
	}
	return &q
}

// coverable is the share of node n the commitment could cover on its
// own: the share of a larger node than a whole reservation's units, or
// than a Savings Plan's hourly commitment buys at its rate, beyond which
// the node is paid on-demand however the plan is made.
func coverable(c *Commitment, n *BillNode) float64 {
	switch {
	case c.Type == v1alpha1.CommitmentReservedInstances && c.Zone == "":
		_, size, _ := strings.Cut(n.InstanceType, ".")
		if units := NormalizedUnits(size, n.VCPUs); units > 0 {
			return min(1, c.Units/units)
		}
		return 0
	case c.Type == v1alpha1.CommitmentReservedInstances:
		return 1
	}
	switch rate := c.rate(n); {
	case rate < 0:
		return 0
	case rate == 0:
		return 1
	default:
		return min(1, c.Hourly/rate)
	}
}

// BillBound is a bill no plan of p's pods can beat with the commitments:
// their fees, plus listBound (a list price no plan can beat, the solver's
// LowerBound), less the most list price each commitment could cover. A
// reservation covers at most its units (or instances) at the dearest list
// price a unit of its family has among p's on-demand offerings; a Savings
// Plan at most its dollars an hour at the dearest list price a dollar of
// its rates buys. No bill is below the fees.
func BillBound(p *solver.Problem, listBound float64, cs []Commitment) float64 {
	bound := listBound
	sunk := 0.0
	for ci := range cs {
		c := &cs[ci]
		sunk += c.Fee
		best := 0.0 // list price covered per unit of the commitment
		for _, types := range typeLists(p) {
			for _, t := range types {
				vcpus := int(t.Capacity[solver.CPU] / 1000)
				for _, o := range t.Offerings {
					n := BillNode{InstanceType: t.Name, Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price, VCPUs: vcpus}
					if !eligible(c, &n) {
						continue
					}
					_, size, _ := strings.Cut(t.Name, ".")
					switch {
					case c.Type == v1alpha1.CommitmentReservedInstances && c.Zone != "":
						best = max(best, o.Price)
					case c.Type == v1alpha1.CommitmentReservedInstances:
						if u := NormalizedUnits(size, vcpus); u > 0 {
							best = max(best, o.Price/u)
						}
					default:
						rate := -1.0
						if r, ok := c.Rates[t.Name]; ok {
							rate = r
						} else if c.Discount > 0 {
							rate = o.Price * (1 - c.Discount)
						}
						if rate > 0 && rate < o.Price {
							best = max(best, o.Price/rate)
						} else if rate == 0 {
							best = math.Inf(1) // a free rate: the plan could cover anything
						}
					}
				}
			}
		}
		switch {
		case c.Type == v1alpha1.CommitmentReservedInstances && c.Zone != "":
			bound -= best * float64(c.Count)
		case c.Type == v1alpha1.CommitmentReservedInstances:
			bound -= best * c.Units
		default:
			bound -= best * c.Hourly
		}
	}
	return sunk + max(bound, 0)
}
