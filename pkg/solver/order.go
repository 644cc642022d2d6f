package solver

import (
	"cmp"
	"slices"
)

// The plan should not depend on the order the pods come in: the operator's
// cache lists them in no set order, and a manifest's order is the
// author's whim. A pod whose required pod affinity selects other pods
// planned in the same solve is placed best once those pods are: with the
// followers first, the same four pods (two leaders spread over zones, two
// followers that must share a leader's node) were planned at $0.255/h
// where the leaders first gave $0.17/h. So Solve plans such followers
// after every other pod, each part in the caller's order, and gives the
// plan back in the caller's indices.
//
// A fully canonical order (by namespace and name) was tried and not kept:
// it only moves the packing's ties, and moved the benchmark suites' costs
// both ways (suite a, 1,000 pods: cost ÷ lower bound 1.084 to 1.087;
// 20,000 pods: 1.147 to 1.143).

// followsOtherPods reports whether one of the pod's required pod affinity
// terms, on any key, selects pods other than its own kind (a self-affine
// workload's first pod may stand alone, as in kube-scheduler).
func followsOtherPods(p *Pod) bool {
	for i := range p.PodAffinity {
		if !p.PodAffinity[i].selects(p, p) {
			return true
		}
	}
	return false
}

// planningOrder returns the pods' indices with the followers last, or nil
// when they are last already.
func planningOrder(pods []Pod) []int {
	rank := func(p *Pod) int {
		if followsOtherPods(p) {
			return 1
		}
		return 0
	}
	if slices.IsSortedFunc(pods, func(a, b Pod) int { return cmp.Compare(rank(&a), rank(&b)) }) {
		return nil
	}
	order := make([]int, len(pods))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rank(&pods[a]), rank(&pods[b])) })
	return order
}

// inPlanningOrder returns p with its pods in planning order and, when that
// moved any, the index in p.Pods of each of them.
func (p *Problem) inPlanningOrder() (*Problem, []int) {
	order := planningOrder(p.Pods)
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

// toCallerIndices rewrites the plan's pod indices, given in planning
// order, as indices into the caller's pods (orig[i] is the caller's index
// of planned pod i).
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
