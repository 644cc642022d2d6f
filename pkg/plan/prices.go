package plan

import (
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Prices finds the catalog price of existing nodes.
type Prices map[string][]solver.Offering

// NewPrices indexes the offerings of types by type name.
func NewPrices(types []solver.InstanceType) Prices {
	pl := make(Prices, len(types))
	for i := range types {
		pl[types[i].Name] = types[i].Offerings
	}
	return pl
}

// Catalog returns the catalog price of a node's instance type, zone and
// capacity type (on-demand when the node does not say), and whether the
// catalog knows the type. Any zone's price is taken when the node's zone
// is not offered, as the catalog's zone names are stand-ins.
func (pl Prices) Catalog(n *solver.Node) (float64, bool) {
	offerings, ok := pl[n.InstanceType]
	if !ok {
		return 0, false
	}
	ct := n.CapacityType
	if ct == "" {
		ct = cloud.CapacityTypeOnDemand
	}
	found, price := false, 0.0
	for _, o := range offerings {
		if o.CapacityType != ct {
			continue
		}
		if o.Zone == n.Zone {
			return o.Price, true
		}
		if !found {
			found, price = true, o.Price
		}
	}
	return price, found
}

// Node returns what a node costs per hour, and whether that is known: the
// price its NodeClaim recorded (status.pricePerHour, what is paid) when
// set, else the catalog's.
func (pl Prices) Node(n *solver.Node) (float64, bool) {
	if n.Price > 0 {
		return n.Price, true
	}
	return pl.Catalog(n)
}
