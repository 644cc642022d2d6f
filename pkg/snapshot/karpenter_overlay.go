package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/karpenter"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Overlay is a Karpenter NodeOverlay as the planner applies it: the
// offerings whose instance type, zone and capacity type labels satisfy
// Requirements get the price change, and their types the extra capacity.
type Overlay struct {
	Name   string
	Weight int32
	// Requirements select offerings (Gte and Lte already rewritten).
	Requirements []solver.Requirement
	// Price is the change, in Karpenter's form: a price ("0.05"), an
	// amount ("+0.5", "-0.5") or a percentage ("+10%", "-15%"); "" for
	// none.
	Price string
	// Capacity is extended resources added to the selected types.
	Capacity map[string]int64
}

// KarpenterNodeOverlays is the resource of Karpenter's NodeOverlays, read
// live when its CRD exists.
var KarpenterNodeOverlays = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1alpha1", Resource: "nodeoverlays"}

// addLiveOverlay converts a NodeOverlay read from the cluster. The API
// server has validated it, so fields newer than this reader are ignored;
// one that still cannot be read is left out with a warning.
func (c *Cluster) addLiveOverlay(raw json.RawMessage) {
	var o karpenter.NodeOverlay
	if err := json.Unmarshal(raw, &o); err != nil {
		c.warnf("NodeOverlay", "left out: %v", err)
		return
	}
	ov, err := overlay(&o)
	if err != nil {
		c.warnf("NodeOverlay "+o.Metadata.Name, "left out: %v", err)
		return
	}
	c.Overlays = append(c.Overlays, ov)
}

// priceChange is Karpenter's pattern for spec.priceAdjustment; spec.price
// is a plain non-negative decimal.
var (
	priceAdjustment = regexp.MustCompile(`^(([+-]\d*\.?\d+)|(\+\d*\.?\d+%)|(-\d{1,2}(\.\d+)?%)|(-100%))$`)
	priceValue      = regexp.MustCompile(`^\d+(\.\d+)?$`)
)

// AdjustedPrice applies a NodeOverlay price change (Overlay.Price) to
// price as Karpenter does: a plain value replaces it, a signed amount is
// added, a signed percentage scales it; the result is never negative.
func AdjustedPrice(price float64, change string) float64 {
	if change == "" {
		return price
	}
	if !strings.HasPrefix(change, "+") && !strings.HasPrefix(change, "-") {
		v, _ := strconv.ParseFloat(change, 64) // validated when read
		return v
	}
	if pct, ok := strings.CutSuffix(change, "%"); ok {
		v, _ := strconv.ParseFloat(pct, 64)
		price *= 1 + v/100
	} else {
		v, _ := strconv.ParseFloat(change, 64)
		price += v
	}
	return max(price, 0)
}

// decodeOverlay reads a karpenter.sh/v1alpha1 NodeOverlay.
func (m *Manifests) decodeOverlay(where, apiVersion string, j []byte, generic any) error {
	if apiVersion != karpenter.V1Alpha1 {
		m.warnf(where, "NodeOverlay skipped: apiVersion %s is not %s", apiVersion, karpenter.V1Alpha1)
		return nil
	}
	var o karpenter.NodeOverlay
	if err := m.decodeFields(j, &o, generic); err != nil {
		return err
	}
	ov, err := overlay(&o)
	if err != nil {
		return err
	}
	m.Overlays = append(m.Overlays, ov)
	return nil
}

// overlay validates a NodeOverlay as Karpenter's CRD does and converts it.
func overlay(o *karpenter.NodeOverlay) (Overlay, error) {
	s := &o.Spec
	out := Overlay{Name: o.Metadata.Name}
	if out.Name == "" {
		return out, errors.New("metadata.name is required")
	}
	if s.Weight != nil {
		if w := *s.Weight; w < 1 || w > 10000 {
			return out, fmt.Errorf("spec.weight: must be between 1 and 10000 (%d)", w)
		}
		out.Weight = *s.Weight
	}
	switch {
	case s.Price != nil && s.PriceAdjustment != nil:
		return out, errors.New("spec.price and spec.priceAdjustment are both set; Karpenter rejects that, keep one")
	case s.Price != nil:
		if !priceValue.MatchString(*s.Price) {
			return out, fmt.Errorf("spec.price: want dollars per hour such as 0.05, got %q", *s.Price)
		}
		out.Price = *s.Price
	case s.PriceAdjustment != nil:
		if !priceAdjustment.MatchString(*s.PriceAdjustment) {
			return out, fmt.Errorf("spec.priceAdjustment: want an amount such as -0.5 or a percentage such as +10%% or -15%%, got %q", *s.PriceAdjustment)
		}
		out.Price = *s.PriceAdjustment
	}
	for i, r := range s.Requirements {
		p := fmt.Sprintf("spec.requirements[%d]", i)
		req, err := poolRequirement(p, karpenter.Requirement{Key: r.Key, Operator: r.Operator, Values: r.Values})
		if err != nil {
			return out, err
		}
		out.Requirements = append(out.Requirements, req)
	}
	for _, name := range sortedNames(s.Capacity) {
		p := "spec.capacity." + name
		switch corev1.ResourceName(name) {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods:
			return out, fmt.Errorf("%s: a NodeOverlay adds extended resources only; Karpenter rejects %s", p, name)
		}
		if !extended(name) {
			return out, fmt.Errorf("%s: not an extended resource (domain/name)", p)
		}
		q := s.Capacity[corev1.ResourceName(name)]
		v, err := value(&q, false)
		if err != nil {
			return out, fmt.Errorf("%s: %w", p, err)
		}
		if out.Capacity == nil {
			out.Capacity = map[string]int64{}
		}
		out.Capacity[name] = v
	}
	return out, nil
}
