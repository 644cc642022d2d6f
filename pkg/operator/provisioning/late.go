package provisioning

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// A plan's late pods (solver.Plan.Late) fit where the plan puts them only
// once the other pods of the plan are bound: each was placed with its own
// constraints alone, and may stand where, bound earlier, it breaks the
// topology spread or anti-affinity of a pod placed before it.
//
// Nominating such a pod with the others would make that happen before it
// binds: kube-scheduler filters a pod on a node with the pods nominated
// there of equal or higher priority added (addGENominatedPods in
// k8s.io/kubernetes pkg/scheduler/framework/runtime/framework.go, which
// also runs the PreFilter extensions' AddPod, so a nominated pod counts in
// spread and affinity), so a late pod nominated to its node turns away the
// very pods it must follow. So a late pod is nominated only once the pods
// it depends on are bound (Provisioner.Waiting); the pods it depends on are
// the others the plan places whose priority is no higher than its own (a
// pod of higher priority never sees it: lower-priority nominations are
// left out of its filters, so a late pod of lower priority than every
// other is nominated at once) and that its terms relate it to: those
// whose spread or pod (anti-)affinity terms select it, which count it in
// their filters, and those its own terms select, which its own filters
// count. A pod of another workload that no term relates it to does not
// hold it: one pod of any workload the scheduler turned away would keep
// every late pod of the decision waiting for the lifecycle controller's
// LateWait (a minute).

// lateWait is what one late pod waits for before it is nominated: the
// pods it depends on, in the order the plan gives.
type lateWait struct {
	uid  types.UID
	pods []types.NamespacedName
}

// lateDependencies returns, for each late pod of the plan that depends on
// another, the pods it waits for: the pods the plan places (on new,
// in-flight or existing nodes) that are not late, and the late pods before
// it in Plan.Late, of a priority no higher than its own and related to it
// (see relates: only those can count it, or be counted by it, as they
// bind). skip leaves pods out (those of leaving nodes, which are bound
// already).
func lateDependencies(pods []*corev1.Pod, plan *solver.Plan, skip func(int) bool) map[int][]types.NamespacedName {
	if len(plan.Late) == 0 {
		return nil
	}
	scopes := make(map[int][]podScope, len(pods))
	scopesOf := func(i int) []podScope {
		sc, ok := scopes[i]
		if !ok {
			sc = scopesOfPod(pods[i])
			scopes[i] = sc
		}
		return sc
	}
	late := make(map[int]int, len(plan.Late)) // pod -> its place in Plan.Late
	for k, i := range plan.Late {
		late[i] = k
	}
	var placed []int
	for _, n := range plan.NewNodes {
		placed = append(placed, n.Pods...)
	}
	for _, pl := range plan.Existing {
		placed = append(placed, pl.Pod)
	}
	slices.Sort(placed)
	out := map[int][]types.NamespacedName{}
	for k, i := range plan.Late {
		prio := corev1helpers.PodPriority(pods[i])
		var deps []types.NamespacedName
		for _, j := range placed {
			if k2, isLate := late[j]; j == i || (isLate && k2 > k) || skip(j) || corev1helpers.PodPriority(pods[j]) > prio {
				continue
			}
			if !counts(scopesOf(i), pods[j]) && !counts(scopesOf(j), pods[i]) {
				continue
			}
			deps = append(deps, client.ObjectKeyFromObject(pods[j]))
		}
		if len(deps) > 0 {
			out[i] = deps
		}
	}
	return out
}

// podScope is one set of pods a pod's topology spread or pod
// (anti-)affinity term counts: those its selector matches in its
// namespaces (any namespace when any is set).
type podScope struct {
	selector   labels.Selector
	namespaces []string
	any        bool
}

// scopesOfPod returns the sets of pods the pod's topology spread
// constraints and pod affinity and anti-affinity terms, required and
// preferred, count. A selector that does not parse counts every pod, and
// a namespace selector every namespace: a dependency too many only makes
// a late pod wait longer.
func scopesOfPod(pod *corev1.Pod) []podScope {
	var out []podScope
	add := func(sel *metav1.LabelSelector, namespaces []string, nsSelector *metav1.LabelSelector) {
		if sel == nil {
			return // selects no pod
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			s = labels.Everything()
		}
		if len(namespaces) == 0 && nsSelector == nil {
			namespaces = []string{pod.Namespace}
		}
		out = append(out, podScope{selector: s, namespaces: namespaces, any: nsSelector != nil})
	}
	for _, c := range pod.Spec.TopologySpreadConstraints {
		add(c.LabelSelector, nil, nil)
	}
	if a := pod.Spec.Affinity; a != nil {
		var terms []corev1.PodAffinityTerm
		if a.PodAffinity != nil {
			terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
			for _, w := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
				terms = append(terms, w.PodAffinityTerm)
			}
		}
		if a.PodAntiAffinity != nil {
			terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
			for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
				terms = append(terms, w.PodAffinityTerm)
			}
		}
		for _, t := range terms {
			add(t.LabelSelector, t.Namespaces, t.NamespaceSelector)
		}
	}
	return out
}

// counts reports whether one of scopes takes in pod.
func counts(scopes []podScope, pod *corev1.Pod) bool {
	for _, sc := range scopes {
		if (sc.any || slices.Contains(sc.namespaces, pod.Namespace)) && sc.selector.Matches(labels.Set(pod.Labels)) {
			return true
		}
	}
	return false
}

// holdLate records the pods each late pod of a batch waits for (deps, by
// index into pods) and drops what the pods the batch planned as not late
// waited for before.
func (p *Provisioner) holdLate(pods []*corev1.Pod, planned []int, deps map[int][]types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, i := range planned {
		key := client.ObjectKeyFromObject(pods[i])
		if d, ok := deps[i]; ok {
			p.late[key] = &lateWait{uid: pods[i].UID, pods: d}
		} else {
			delete(p.late, key)
		}
	}
}

// Waiting reports whether a pod planned onto a node is a late pod that
// still waits for a pod it depends on: one pending, neither bound nor
// gone. The lifecycle controller nominates it to its node only once this
// turns false. Pods found bound are not looked up again.
func (p *Provisioner) Waiting(key types.NamespacedName) bool {
	p.mu.Lock()
	w := p.late[key]
	p.mu.Unlock()
	if w == nil {
		return false
	}
	rest := w.pods
	for len(rest) > 0 {
		var pod corev1.Pod
		err := p.client.Get(context.Background(), rest[0], &pod)
		if client.IgnoreNotFound(err) != nil || (err == nil && pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil) {
			break
		}
		rest = rest[1:]
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.late[key] != w {
		return p.late[key] != nil // a later batch planned it again
	}
	if len(rest) == 0 {
		delete(p.late, key)
		return false
	}
	w.pods = rest
	return true
}
