package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// maxNamed bounds the instance types named per line of a detail.
const maxNamed = 8

// Detail explains one pending group line by line: the pods, what the
// scheduler and the plan say, every constraint the pod carries, and, per
// NodePool, which instance types each constraint rules out and which fit.
// Existing nodes are checked the same way.
func (r *Report) Detail(g *PendingGroup) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	add("%s in namespace %s: %d pending pod(s)", g.Owner, g.Namespace, len(g.Pods))
	add("  %s", shortList(g.Pods, 6))
	add("")
	add("Scheduler: %s", g.Scheduler)
	switch g.Outcome {
	case "new":
		add("Plan:      new node %s — %s", g.Node, g.Reason)
		for _, ni := range g.NewNodes {
			n := &r.Plan.NewNodes[ni]
			add("           %s: %s %s %s $%.4f/h, %d pods", r.Proposed[ni].Name, n.InstanceType, n.Zone, n.CapacityType, n.Price, len(n.Pods))
		}
	case "existing", "launching":
		add("Plan:      fits on %s — %s", g.Node, g.Reason)
	default:
		add("Plan:      cannot be placed — %s", g.Reason)
	}
	if g.PodIndex < 0 {
		return out
	}
	p := r.Problem
	pod := &p.Pods[g.PodIndex]
	add("")
	add("Constraints of the pod:")
	add("  ✓ requests %s (one pod slot)", formatRequests(p, pod.Requests))
	if len(pod.NodeSelector) == 0 && len(pod.Affinity) == 0 {
		add("  ✓ no nodeSelector or required node affinity")
	}
	for _, k := range sortedKeys(pod.NodeSelector) {
		add("  • nodeSelector %s=%s", k, pod.NodeSelector[k])
	}
	for i, t := range pod.Affinity {
		add("  • node affinity term %d: %s", i+1, formatReqs(t))
	}
	if len(pod.Tolerations) > 0 {
		var ts []string
		for _, t := range pod.Tolerations {
			ts = append(ts, formatToleration(t))
		}
		add("  • tolerates %s", strings.Join(ts, "; "))
	}
	for _, s := range pod.Spread {
		add("  • topology spread on %s, maxSkew %d, %s", s.TopologyKey, s.MaxSkew, s.WhenUnsatisfiable)
	}
	for _, a := range pod.PodAffinity {
		add("  • pod affinity on %s", a.TopologyKey)
	}
	for _, a := range pod.PodAntiAffinity {
		add("  • pod anti-affinity on %s", a.TopologyKey)
	}
	for _, pr := range pod.Preferences {
		add("  • preference %s (weight %d), relaxed if it blocks placement", pr.Kind, pr.Weight)
	}
	for _, pi := range poolOrder(p) {
		out = append(out, "")
		out = append(out, r.poolDetail(pod, &p.Pools[pi])...)
	}
	if len(r.Existing) > 0 {
		out = append(out, "")
		out = append(out, r.existingDetail(pod)...)
	}
	return out
}

// poolDetail checks the pod against every instance type and offering of one pool.
func (r *Report) poolDetail(pod *solver.Pod, pool *solver.Pool) []string {
	p := r.Problem
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	add("NodePool %s (weight %d; requirements: %s):", pool.Name, pool.Weight, formatReqs(pool.Requirements))
	if t := untolerated(pod.Tolerations, pool.Taints); t != nil {
		add("  ✗ its taint %s=%s:%s is not tolerated: every type ruled out", t.Key, t.Value, t.Effect)
		return out
	}
	if len(pool.Taints) > 0 {
		add("  ✓ the pod tolerates the pool's taints")
	}
	pl := poolLabels(pool)
	byPool := map[string][]string{}     // failing pool requirement -> types
	bySelector := map[string][]string{} // failing pod selector -> types
	short := map[string][]string{}      // short resources -> types
	largest := map[string]string{}      // short resources -> what the largest has
	largestScore := map[string]float64{}
	type fit struct {
		name, zone, ct string
		price          float64
	}
	var fits []fit
	for ti := range p.InstanceTypes {
		it := &p.InstanceTypes[ti]
		var poolFail, selFail string
		matched := false
		best := fit{price: -1}
		var bestAlloc solver.Resources
		for _, o := range it.Offerings {
			labels := newOfferingLabels(o, pl, it.Labels)
			if f := firstFailing(pool.Requirements, labels); f != "" {
				if poolFail == "" {
					poolFail = f
				}
				continue
			}
			if f := selectorFailure(pod, labels); f != "" {
				if selFail == "" {
					selFail = f
				}
				continue
			}
			matched = true
			alloc := it.Allocatable().Sub(daemonOverhead(p, labels, pool.Taints))
			if !pod.Requests.Fits(alloc) {
				bestAlloc = alloc
				continue
			}
			if best.price < 0 || o.Price < best.price {
				best = fit{it.Name, o.Zone, o.CapacityType, o.Price}
			}
		}
		switch {
		case best.price >= 0:
			fits = append(fits, best)
		case matched:
			k := shortNames(p, pod.Requests, bestAlloc)
			short[k] = append(short[k], it.Name)
			if sc := fitScore(pod.Requests, bestAlloc); sc > largestScore[k] || largest[k] == "" {
				largestScore[k], largest[k] = sc, it.Name+": "+shortOf(p, pod.Requests, bestAlloc)
			}
		case selFail != "":
			bySelector[selFail] = append(bySelector[selFail], it.Name)
		default:
			byPool[poolFail] = append(byPool[poolFail], it.Name)
		}
	}
	for _, k := range sortedKeys(byPool) {
		add("  ✗ %d type(s) ruled out by the pool's requirement %s: %s", len(byPool[k]), k, shortList(byPool[k], maxNamed))
	}
	for _, k := range sortedKeys(bySelector) {
		add("  ✗ %d type(s) ruled out by the pod's %s: %s", len(bySelector[k]), k, shortList(bySelector[k], maxNamed))
	}
	for _, k := range sortedKeys(short) {
		add("  ✗ %d type(s) too small for its %s (closest, %s): %s", len(short[k]), k, largest[k], shortList(short[k], maxNamed))
	}
	if len(fits) == 0 {
		add("  ✗ no instance type of this pool fits the pod")
		return out
	}
	sort.Slice(fits, func(a, b int) bool { return fits[a].price < fits[b].price })
	add("  ✓ %d type(s) fit; cheapest:", len(fits))
	for i, f := range fits {
		if i == 5 {
			break
		}
		add("      %-16s %-12s %-9s $%.4f/h", f.name, f.zone, f.ct, f.price)
	}
	return out
}

// existingDetail checks the pod against the existing and in-flight nodes.
func (r *Report) existingDetail(pod *solver.Pod) []string {
	p := r.Problem
	reasons := map[string][]string{}
	var fits []string
	for i := range r.Existing {
		n := &r.Existing[i]
		why := ""
		switch {
		case n.Unschedulable:
			why = "cordoned"
		case untolerated(pod.Tolerations, n.Taints) != nil:
			t := untolerated(pod.Tolerations, n.Taints)
			why = fmt.Sprintf("taint %s=%s:%s not tolerated", t.Key, t.Value, t.Effect)
		default:
			if f := selectorFailure(pod, solver.MapLabels(n.Labels)); f != "" {
				why = "the pod's " + f + " does not match"
			} else if free := n.Allocatable.Sub(n.Requested); !pod.Requests.Fits(free) {
				why = "not enough free " + shortOf(p, pod.Requests, free)
			}
		}
		if why == "" {
			fits = append(fits, n.Name)
		} else {
			reasons[why] = append(reasons[why], n.Name)
		}
	}
	out := []string{fmt.Sprintf("Existing and launching nodes (%d):", len(r.Existing))}
	for _, k := range sortedKeys(reasons) {
		out = append(out, fmt.Sprintf("  ✗ %d node(s): %s: %s", len(reasons[k]), k, shortList(reasons[k], maxNamed)))
	}
	if len(fits) > 0 {
		out = append(out, fmt.Sprintf("  ✓ %d node(s) have room by requests: %s", len(fits), shortList(fits, maxNamed)))
	}
	return out
}

// shortOf names the resources req needs beyond alloc.
func shortOf(p *solver.Problem, req, alloc solver.Resources) string {
	var parts []string
	for i := range req {
		if req[i] > alloc[i] {
			name := p.ResourceName(i)
			if i == solver.Pods {
				parts = append(parts, "pod slots")
				continue
			}
			parts = append(parts, fmt.Sprintf("%s: needs %s, has %s", name, solver.FormatQuantity(i, req[i]), solver.FormatQuantity(i, max(alloc[i], 0))))
		}
	}
	if len(parts) == 0 {
		return "resources"
	}
	return strings.Join(parts, "; ")
}

// shortNames names the resources req needs beyond alloc, e.g. "cpu and memory".
func shortNames(p *solver.Problem, req, alloc solver.Resources) string {
	var names []string
	for i := range req {
		if req[i] > alloc[i] {
			if i == solver.Pods {
				names = append(names, "pod slot")
			} else {
				names = append(names, p.ResourceName(i))
			}
		}
	}
	return strings.Join(names, " and ")
}

// fitScore is the smallest ratio of allocatable to request: 1 or more fits.
func fitScore(req, alloc solver.Resources) float64 {
	score := -1.0
	for i := range req {
		if req[i] > 0 {
			r := float64(alloc[i]) / float64(req[i])
			if score < 0 || r < score {
				score = r
			}
		}
	}
	return score
}

// offeringLabels are the labels a new node of this offering, pool and type
// would carry (the solver's candidate labels), looked up in layers rather
// than copied into a map per offering.
type offeringLabels struct {
	zone, capacityType string
	pool, typ          map[string]string
}

func newOfferingLabels(o solver.Offering, pool, typ map[string]string) *offeringLabels {
	return &offeringLabels{zone: o.Zone, capacityType: o.CapacityType, pool: pool, typ: typ}
}

// Label implements solver.Labels: offering first, then pool, then type.
func (l *offeringLabels) Label(key string) (string, bool) {
	switch key {
	case solver.LabelZone:
		return l.zone, l.zone != ""
	case solver.LabelCapacityType:
		return l.capacityType, l.capacityType != ""
	}
	if v, ok := l.pool[key]; ok {
		return v, true
	}
	v, ok := l.typ[key]
	return v, ok
}

// firstFailing returns the first requirement labels do not satisfy, or "".
func firstFailing(reqs []solver.Requirement, labels solver.Labels) string {
	for i := range reqs {
		if !reqs[i].Matches(labels) {
			return formatReqs(reqs[i : i+1])
		}
	}
	return ""
}

// selectorFailure names the pod's node selector entry or affinity that
// labels fail, or "".
func selectorFailure(pod *solver.Pod, labels solver.Labels) string {
	for _, k := range sortedKeys(pod.NodeSelector) {
		if v, ok := labels.Label(k); !ok || v != pod.NodeSelector[k] {
			return "nodeSelector " + k + "=" + pod.NodeSelector[k]
		}
	}
	if len(pod.Affinity) == 0 {
		return ""
	}
	for _, t := range pod.Affinity {
		if t.Matches(labels) {
			return ""
		}
	}
	if len(pod.Affinity) == 1 {
		if f := firstFailing(pod.Affinity[0], labels); f != "" {
			return "node affinity " + f
		}
	}
	return "node affinity"
}

// untolerated returns the first NoSchedule or NoExecute taint no toleration
// tolerates, or nil, as the solver decides.
func untolerated(tolerations []solver.Toleration, taints []solver.Taint) *solver.Taint {
	for i := range taints {
		t := &taints[i]
		if t.Effect == solver.EffectPreferNoSchedule {
			continue
		}
		ok := false
		for j := range tolerations {
			if tolerations[j].Tolerates(t) {
				ok = true
				break
			}
		}
		if !ok {
			return t
		}
	}
	return nil
}

// daemonOverhead sums the DaemonSet requests a node with these labels and
// taints would run.
func daemonOverhead(p *solver.Problem, labels solver.Labels, taints []solver.Taint) solver.Resources {
	var sum solver.Resources
	for i := range p.DaemonSets {
		ds := &p.DaemonSets[i]
		pod := solver.Pod{NodeSelector: ds.NodeSelector, Affinity: ds.Affinity}
		if selectorFailure(&pod, labels) == "" && untolerated(ds.Tolerations, taints) == nil {
			sum = sum.Add(ds.Requests)
		}
	}
	return sum
}

// poolLabels are the labels a pool puts on its nodes (its labels, its
// name, and single-valued In requirements), as the solver derives them.
func poolLabels(pool *solver.Pool) map[string]string {
	labels := make(map[string]string, len(pool.Labels)+2)
	for k, v := range pool.Labels {
		labels[k] = v
	}
	labels[solver.LabelNodePool] = pool.Name
	for _, r := range pool.Requirements {
		if r.Operator == solver.OpIn && len(r.Values) > 0 && r.Key != solver.LabelZone && r.Key != solver.LabelCapacityType {
			if _, ok := labels[r.Key]; !ok && !typeLabel(r.Key) {
				labels[r.Key] = r.Values[0]
			}
		}
	}
	return labels
}

func typeLabel(key string) bool {
	return key == solver.LabelInstanceType || key == "kubernetes.io/arch" || key == "kubernetes.io/os" ||
		key == "topology.kubernetes.io/region" || strings.HasPrefix(key, "karpenter.k8s.aws/")
}

// poolOrder is highest weight first, then by name, as the solver tries them.
func poolOrder(p *solver.Problem) []int {
	order := make([]int, len(p.Pools))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		pa, pb := &p.Pools[order[a]], &p.Pools[order[b]]
		if pa.Weight != pb.Weight {
			return pa.Weight > pb.Weight
		}
		return pa.Name < pb.Name
	})
	return order
}

func formatReqs(reqs []solver.Requirement) string {
	if len(reqs) == 0 {
		return "none"
	}
	parts := make([]string, len(reqs))
	for i, r := range reqs {
		parts[i] = r.Key + " " + r.Operator
		if len(r.Values) > 0 {
			parts[i] += " [" + shortList(r.Values, 6) + "]"
		}
	}
	return strings.Join(parts, ", ")
}

func formatToleration(t solver.Toleration) string {
	s := t.Key
	if t.Key == "" {
		s = "*"
	}
	if t.Operator != "Exists" {
		s += "=" + t.Value
	}
	if t.Effect != "" {
		s += ":" + t.Effect
	}
	return s
}

// shortList joins up to n items and counts the rest.
func shortList(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s, +%d more", strings.Join(items[:n], ", "), len(items)-n)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
