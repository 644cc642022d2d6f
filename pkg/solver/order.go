package solver

import (
	"cmp"
	"slices"
)

// The plan must not depend on the order the pods come in: the operator's
// cache lists them in no set order, and a manifest's order is the
// author's whim. The packing breaks ties by the order classes are first
// met, and a pod whose required pod affinity selects pods planned in the
// same solve is placed best once those pods are: with the followers
// first, the same four pods (two leaders spread over zones, two followers
// that must share a leader's node) were planned at $0.255/h where the
// leaders first gave $0.17/h. So Solve plans the pods in one canonical
// order, those without required pod affinity first, then by namespace and
// name (unique in a cluster), and gives the plan back in the caller's
// indices.

// canonicalOrder returns the pods' indices in canonical order, or nil when
// they are in it already.
func canonicalOrder(pods []Pod) []int {
	follower := func(p *Pod) int {
		if len(p.PodAffinity) > 0 {
			return 1
		}
		return 0
	}
	compare := func(a, b *Pod) int {
		return cmp.Or(cmp.Compare(follower(a), follower(b)), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	}
	sorted := true
	for i := 1; i < len(pods) && sorted; i++ {
		sorted = compare(&pods[i-1], &pods[i]) <= 0
	}
	if sorted {
		return nil
	}
	order := make([]int, len(pods))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return compare(&pods[a], &pods[b]) })
	return order
}

// inCanonicalOrder returns p with its pods in canonical order and, when
// that moved any, the index in p.Pods of each of them.
func (p *Problem) inCanonicalOrder() (*Problem, []int) {
	order := canonicalOrder(p.Pods)
	if order == nil {
		return p, nil
	}
	q := *p
	q.Pods = make([]Pod, len(order))
	for i, j := range order {
		q.Pods[i] = p.Pods[j]
	}
	return &q, order
}

// toCallerIndices rewrites the plan's pod indices, given in the canonical
// order, as indices into the caller's pods (orig[i] is the caller's index
// of canonical pod i).
func (plan *Plan) toCallerIndices(orig []int) {
	for n := range plan.NewNodes {
		for k, i := range plan.NewNodes[n].Pods {
			plan.NewNodes[n].Pods[k] = orig[i]
		}
	}
	for k := range plan.Existing {
		plan.Existing[k].Pod = orig[plan.Existing[k].Pod]
	}
	for k, i := range plan.Late {
		plan.Late[k] = orig[i]
	}
	for k := range plan.Unschedulable {
		plan.Unschedulable[k].Pod = orig[plan.Unschedulable[k].Pod]
	}
}
