package explain

import "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"

// InstanceTypes loads the catalog (the embedded one for Region, or
// InstanceTypesFile) and converts it for the solver. It also returns a
// one-line description of where the data came from, e.g. "embedded AWS
// catalog, region us-east-1".
func (c *Catalog) InstanceTypes() ([]solver.InstanceType, string, error) {
	return c.instanceTypes()
}

// PriceList finds the catalog price of existing nodes.
type PriceList struct{ pl priceList }

// NewPriceList indexes the offerings of types by type name.
func NewPriceList(types []solver.InstanceType) PriceList {
	return PriceList{newPriceList(types)}
}

// Price returns the price of a node's instance type, zone and capacity type
// (on-demand when the node does not say), and whether the catalog knows the
// type. Any zone's price is taken when the node's zone is not offered.
func (p PriceList) Price(n *solver.Node) (float64, bool) {
	return p.pl.price(n)
}

// NewNodeName names the i-th (0-based) proposed node of a plan as explain's
// wide table and JSON do: new-1, new-2, ...
func NewNodeName(i int) string { return newNodeName(i) }

// CheckWorkload reports whether s names a workload explain can narrow its
// report to: POD, pod/NAME or TYPE/NAME (deployment/web).
func CheckWorkload(s string) error {
	_, err := parseWorkload(s)
	return err
}
