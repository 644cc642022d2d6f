package provisioning

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// MaxInstanceTypes is how many instance types a NodeClaim allows at most,
// the cheapest (solver.MaxLaunchInstanceTypes, Karpenter's number).
const MaxInstanceTypes = solver.MaxLaunchInstanceTypes

// Min-values policies, Karpenter's --min-values-policy.
const (
	// MinValuesStrict refuses a launch whose allowed types span fewer
	// values of a key than its requirement's minValues.
	MinValuesStrict = "Strict"
	// MinValuesBestEffort launches with the values there are.
	MinValuesBestEffort = "BestEffort"
)

// AnnotationMinValuesRelaxed marks a NodeClaim launched under
// MinValuesBestEffort with fewer values than a minValues asked for, as
// Karpenter's karpenter.sh/nodeclaim-min-values-relaxed does.
const AnnotationMinValuesRelaxed = v1alpha1.Group + "/min-values-relaxed"

// flexibility is what a planned node's NodeClaim allows: its instance
// types, zones and capacity types, the planned one first.
type flexibility struct {
	types, zones, capacityTypes []string
	// relaxed says which minValues the types fall short of, when the
	// policy let the launch go ahead anyway.
	relaxed string
	// prioritized says that a NodeOverlay re-priced one of the types: the
	// cloud must take them in the order given, not by its own prices
	// (cloud.AnnotationPriceOverlayApplied).
	prioritized bool
}

// flexible returns what the NodeClaim of planned node n of pool np allows,
// from its launch options (solver.LaunchOptions, planned first): the
// options whose type keeps the pool within its limits, their instance
// types truncated to MaxInstanceTypes by price (as Karpenter truncates,
// pkg/cloudprovider/types.go InstanceTypes.Truncate), and the zones and
// capacity types the kept options use. Where the kept types span fewer
// values of a pool requirement's key than its minValues, it returns why:
// a refusal under MinValuesStrict, a note (flexibility.relaxed) under
// MinValuesBestEffort.
func (p *Provisioner) flexible(b *batch, np *v1alpha1.NodePool, n *solver.NewNode, opts []solver.LaunchOption) (flexibility, string) {
	types := b.typesOf(np.Name)
	var f flexibility
	var kept []solver.LaunchOption
	for _, o := range opts {
		if !slices.Contains(f.types, o.InstanceType) {
			if len(f.types) == MaxInstanceTypes {
				continue
			}
			if o.InstanceType != n.InstanceType && p.typeOverLimit(b, np, o.InstanceType) != "" {
				continue
			}
			f.types = append(f.types, o.InstanceType)
		}
		kept = append(kept, o)
		if !slices.Contains(f.zones, o.Zone) {
			f.zones = append(f.zones, o.Zone)
		}
		if !slices.Contains(f.capacityTypes, o.CapacityType) {
			f.capacityTypes = append(f.capacityTypes, o.CapacityType)
		}
	}
	if len(f.types) == 0 { // no options: the plan's own offering
		f.types, f.zones, f.capacityTypes = []string{n.InstanceType}, []string{n.Zone}, []string{n.CapacityType}
		kept = []solver.LaunchOption{{InstanceType: n.InstanceType, Zone: n.Zone, CapacityType: n.CapacityType}}
	}
	f.prioritized = len(f.types) > 1 && slices.ContainsFunc(f.types, func(t string) bool { return b.repriced[t] })
	var short []string
	for _, r := range np.Spec.Template.Spec.Requirements {
		if r.MinValues == nil {
			continue
		}
		values := map[string]bool{}
		if !typeKey(r.Key, kept, types) {
			// A key no instance type labels (the pool's own): the node
			// may take any value the requirement allows, as Karpenter
			// counts it.
			for _, v := range r.Values {
				values[v] = true
			}
		}
		for _, o := range kept {
			switch r.Key {
			case solver.LabelZone:
				values[o.Zone] = true
			case solver.LabelCapacityType:
				values[o.CapacityType] = true
			case solver.LabelInstanceType:
				values[o.InstanceType] = true
			default:
				if t := types[o.InstanceType]; t != nil {
					if v, ok := t.Labels[r.Key]; ok {
						values[v] = true
					}
				}
			}
		}
		if len(values) < *r.MinValues {
			short = append(short, fmt.Sprintf("%s has %d value(s) of the %d minValues asks for", r.Key, len(values), *r.MinValues))
		}
	}
	if len(short) == 0 {
		return f, ""
	}
	why := fmt.Sprintf("the %d instance type(s) of NodePool %s that can hold these pods fall short of its minValues: %s", len(f.types), np.Name, strings.Join(short, "; "))
	if p.opts.MinValuesPolicy == MinValuesBestEffort {
		f.relaxed = why
		return f, ""
	}
	return f, why + " (--min-values-policy=Strict; BestEffort would launch with them)"
}

// typeOverLimit is overLimit for a node of the named type of the pool.
func (p *Provisioner) typeOverLimit(b *batch, np *v1alpha1.NodePool, typ string) string {
	return p.overLimit(b, np, &solver.NewNode{InstanceType: typ})
}

// typeKey reports whether the offerings or instance types of opts decide
// the key's value.
func typeKey(key string, opts []solver.LaunchOption, types map[string]*solver.InstanceType) bool {
	if key == solver.LabelZone || key == solver.LabelCapacityType || key == solver.LabelInstanceType {
		return true
	}
	return slices.ContainsFunc(opts, func(o solver.LaunchOption) bool {
		t := types[o.InstanceType]
		if t == nil {
			return false
		}
		_, ok := t.Labels[key]
		return ok
	})
}
