package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
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
	return b
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
		rate := func(i int) float64 {
			if r, ok := c.Rates[nodes[i].InstanceType]; ok {
				return r
			}
			if c.Discount > 0 {
				return nodes[i].Price * (1 - c.Discount)
			}
			return -1 // no rate: not covered
		}
		saving := func(i int) float64 { return 1 - rate(i)/nodes[i].Price }
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(saving(b), saving(a)) })
		for _, i := range idx {
			r := rate(i)
			if r < 0 || r >= nodes[i].Price {
				continue // the plan saves nothing here; AWS would not apply it either
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
