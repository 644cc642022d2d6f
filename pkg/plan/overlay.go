package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// applyOverlays applies Karpenter NodeOverlays to the problem's instance
// types, the way Karpenter's nodeoverlay controller does before it
// schedules: overlays are tried by weight, highest first (equal weights:
// the name later in the alphabet first); each offering takes the price
// change of the first overlay with one whose requirements its labels (the
// type's, its zone and capacity type, and the pool's labels) satisfy, and
// each type takes every extended resource from the first overlay that
// sets it. Every pool gets its own copy of its types, as an overlay may
// select by pool labels (karpenter.sh/nodepool); the problem's own types,
// which price existing nodes, are overlaid with no pool labels. It returns
// one sentence per overlay that changed something, e.g. "prices adjusted
// by NodeOverlay savings-plan for 12 instance types", and the names of the
// instance types some offering of which an overlay re-priced.
func applyOverlays(p *solver.Problem, overlays []snapshot.Overlay) (notes []string, repriced map[string]bool) {
	if len(overlays) == 0 {
		return nil, nil
	}
	order := slices.Clone(overlays)
	slices.SortStableFunc(order, func(a, b snapshot.Overlay) int {
		if a.Weight != b.Weight {
			return int(b.Weight) - int(a.Weight)
		}
		return strings.Compare(b.Name, a.Name)
	})
	priced := make([]map[string]bool, len(order))   // type names re-priced, per overlay
	capacity := make([]map[string]bool, len(order)) // type names given capacity
	for i := range order {
		priced[i], capacity[i] = map[string]bool{}, map[string]bool{}
	}
	shared := p.InstanceTypes
	p.InstanceTypes = overlaid(shared, nil, order, priced, capacity, p.ExtendedResources)
	for i := range p.Pools {
		pool := &p.Pools[i]
		types := pool.InstanceTypes
		if types == nil {
			types = shared
		}
		labels := maps.Clone(pool.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[solver.LabelNodePool] = pool.Name
		pool.InstanceTypes = overlaid(types, labels, order, priced, capacity, p.ExtendedResources)
	}
	repriced = map[string]bool{}
	for i, o := range order {
		var what []string
		maps.Copy(repriced, priced[i])
		if n := len(priced[i]); n > 0 {
			what = append(what, fmt.Sprintf("prices adjusted by NodeOverlay %s (%s) for %d instance types", o.Name, o.Price, n))
		}
		if n := len(capacity[i]); n > 0 {
			what = append(what, fmt.Sprintf("capacity added by NodeOverlay %s for %d instance types", o.Name, n))
		}
		if len(what) == 0 {
			what = append(what, fmt.Sprintf("NodeOverlay %s selects no offering planned; nothing changed", o.Name))
		}
		notes = append(notes, strings.Join(what, "; "))
	}
	return notes, repriced
}

// overlaid returns a copy of types with the overlays (in order) applied,
// recording in priced and capacity which overlay changed which type.
// Capacity is added only for extended resources some pod requests (the
// problem's ExtendedResources): the solver plans no other.
func overlaid(types []solver.InstanceType, poolLabels map[string]string, order []snapshot.Overlay, priced, capacity []map[string]bool, extended []string) []solver.InstanceType {
	out := slices.Clone(types)
	labels := map[string]string{}
	for ti := range out {
		t := &out[ti]
		var offerings []solver.Offering
		given := map[string]bool{}
		for oi := range t.Offerings {
			of := t.Offerings[oi]
			clear(labels)
			maps.Copy(labels, t.Labels)
			maps.Copy(labels, poolLabels)
			labels[solver.LabelZone], labels[solver.LabelCapacityType] = of.Zone, of.CapacityType
			pricedOffering := false
			for i := range order {
				o := &order[i]
				if !selects(o, labels) {
					continue
				}
				if o.Price != "" && !pricedOffering {
					if offerings == nil {
						offerings = slices.Clone(t.Offerings)
					}
					offerings[oi].Price = snapshot.AdjustedPrice(of.Price, o.Price)
					priced[i][t.Name], pricedOffering = true, true
				}
				for name, v := range o.Capacity {
					if given[name] || !slices.Contains(extended, name) {
						continue
					}
					given[name] = true
					t.Extended = maps.Clone(t.Extended)
					if t.Extended == nil {
						t.Extended = map[string]int64{}
					}
					t.Extended[name] = v
					capacity[i][t.Name] = true
				}
			}
		}
		if offerings != nil {
			t.Offerings = offerings
		}
	}
	return out
}

// selects reports whether every requirement of the overlay holds on labels.
func selects(o *snapshot.Overlay, labels map[string]string) bool {
	for i := range o.Requirements {
		if !o.Requirements[i].Matches(solver.MapLabels(labels)) {
			return false
		}
	}
	return true
}
