package karpenter

import (
	"fmt"
	"math"
	"strconv"
)

// Operators Karpenter v1.15 added to node selector requirements; Kubernetes
// itself has only Gt and Lt.
const (
	OpGte = "Gte"
	OpLte = "Lte"
)

// WithoutInclusiveOperators returns r with Karpenter's Gte and Lte rewritten
// as the Gt and Lt that Kubernetes and the planner know: label values
// compared by these operators are integers, so "Gte n" is "Gt n-1" and
// "Lte n" is "Lt n+1". changed reports a rewrite, so callers can say so.
// Other operators are returned as they are, for the caller to validate.
func (r Requirement) WithoutInclusiveOperators() (out Requirement, changed bool, err error) {
	if r.Operator != OpGte && r.Operator != OpLte {
		return r, false, nil
	}
	if len(r.Values) != 1 {
		return r, false, fmt.Errorf("operator %s needs exactly one value, got %d", r.Operator, len(r.Values))
	}
	n, err := strconv.ParseInt(r.Values[0], 10, 64)
	if err != nil {
		return r, false, fmt.Errorf("operator %s needs an integer, got %q", r.Operator, r.Values[0])
	}
	out = r
	switch {
	case r.Operator == OpGte && n == math.MinInt64, r.Operator == OpLte && n == math.MaxInt64:
		return r, false, fmt.Errorf("operator %s: %d is out of range", r.Operator, n)
	case r.Operator == OpGte:
		out.Operator, out.Values = "Gt", []string{strconv.FormatInt(n-1, 10)}
	default:
		out.Operator, out.Values = "Lt", []string{strconv.FormatInt(n+1, 10)}
	}
	return out, true, nil
}

// ConsolidationPolicyBalanced is Karpenter v1.14's consolidation policy that
// takes a move only when its saving outweighs the disruption it causes.
const ConsolidationPolicyBalanced = "Balanced"

// CheckStatic refuses what Karpenter's validation refuses on a static
// NodePool (spec.replicas set): a negative count, a weight, or limits
// other than limits.nodes.
func CheckStatic(s *PoolSpec) error {
	if s.Replicas == nil {
		return nil
	}
	if *s.Replicas < 0 {
		return fmt.Errorf("spec.replicas: must not be negative (%d)", *s.Replicas)
	}
	if s.Weight != nil {
		return fmt.Errorf("spec.weight: not allowed on a static NodePool (spec.replicas is set); Karpenter rejects it")
	}
	for name := range s.Limits {
		if name != "nodes" {
			return fmt.Errorf("spec.limits.%s: only limits.nodes is allowed on a static NodePool (spec.replicas is set); Karpenter rejects it", name)
		}
	}
	return nil
}
