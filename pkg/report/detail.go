package report

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// maxNamed bounds the instance types named per line of a detail.
const maxNamed = 8

// Detail explains one pending group line by line: the pods, what the
// scheduler and the plan say, every constraint the pod carries, and, per
// NodePool, which instance types each constraint rules out and which fit.
// Existing nodes are checked the same way. Below the plan it says what the
// input lacked and was planned for (Notices), as explain does.
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
	if notices := r.Notices(); len(notices) > 0 {
		add("")
		out = append(out, notices...)
	}
	if g.PodIndex < 0 {
		return out
	}
	p := r.Problem
	pod := &p.Pods[g.PodIndex]
	add("")
	out = append(out, constraintLines(p, pod)...)
	d := solver.Diagnose(p, g.PodIndex)
	switch {
	case d.NoPools:
		add("")
		add("✗ no NodePool is defined")
	case d.Unanswerable != "":
		add("")
		add("✗ %s", d.Unanswerable)
	}
	fits := false
	for i := range d.Pools {
		out = append(out, "")
		out = append(out, r.poolDetail(&d, i)...)
		fits = fits || len(d.Pools[i].Fitting) > 0
	}
	if !fits && len(d.Pools) > 0 {
		add("")
		if c := d.Cheapest; c != nil {
			it := &p.PoolTypes(c.Pool)[c.Type]
			o := it.Offerings[c.Offering]
			add("Cheapest type that would fit if a NodePool allowed it: %s %s %s $%.4f/h", it.Name, o.Zone, o.CapacityType, o.Price)
		} else {
			add("No instance type in the catalog has room for the pod")
		}
	}
	if len(r.Existing) > 0 {
		out = append(out, "")
		out = append(out, r.existingDetail(pod)...)
	}
	return out
}

// constraintLines lists every constraint a pod carries: its requests,
// node selection, tolerations, spreads, pod (anti-)affinities and
// preferences.
func constraintLines(p *solver.Problem, pod *solver.Pod) []string {
	out := []string{"Constraints of the pod:"}
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	add("  ✓ requests %s (one pod slot)", formatRequests(p, pod.Requests))
	if len(pod.NodeSelector) == 0 && len(pod.Affinity) == 0 {
		add("  ✓ no nodeSelector or required node affinity")
	}
	for _, k := range slices.Sorted(maps.Keys(pod.NodeSelector)) {
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
	return out
}

// poolDetail renders the solver's diagnosis of one pool (d.Pools[i]):
// which instance types each pool requirement, pod selector or shortage rules
// out, the cheapest that fit, and the solver's own verdict.
func (r *Report) poolDetail(d *solver.Diagnosis, i int) []string {
	p := r.Problem
	pd := &d.Pools[i]
	pool := &p.Pools[pd.Pool]
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	add("NodePool %s (weight %d; requirements: %s):", pool.Name, pool.Weight, formatReqs(pool.Requirements))
	if t := pd.Taint; t != nil {
		add("  ✗ its taint %s=%s:%s is not tolerated: every type ruled out", t.Key, t.Value, t.Effect)
		return out
	}
	if len(pool.Taints) > 0 {
		add("  ✓ the pod tolerates the pool's taints")
	}
	types := p.PoolTypes(pd.Pool)
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
	for ti := range pd.Types {
		it, td := &types[ti], &pd.Types[ti]
		switch {
		case td.Offering >= 0:
			o := it.Offerings[td.Offering]
			fits = append(fits, fit{it.Name, o.Zone, o.CapacityType, o.Price})
		case td.Matching:
			k := shortNames(p, d.Requests, td.Alloc)
			short[k] = append(short[k], it.Name)
			if sc := fitScore(d.Requests, td.Alloc); sc > largestScore[k] || largest[k] == "" {
				largestScore[k], largest[k] = sc, it.Name+": "+shortOf(p, d.Requests, td.Alloc)
			}
		case td.SelectorFailure != "":
			bySelector[td.SelectorFailure] = append(bySelector[td.SelectorFailure], it.Name)
		case td.PoolFailure != nil:
			k := formatReqs([]solver.Requirement{*td.PoolFailure})
			byPool[k] = append(byPool[k], it.Name)
		default:
			byPool["(no offering)"] = append(byPool["(no offering)"], it.Name)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(byPool)) {
		add("  ✗ %d type(s) ruled out by the pool's requirement %s: %s", len(byPool[k]), k, shortList(byPool[k], maxNamed))
	}
	for _, k := range slices.Sorted(maps.Keys(bySelector)) {
		add("  ✗ %d type(s) ruled out by the pod's %s: %s", len(bySelector[k]), k, shortList(bySelector[k], maxNamed))
	}
	for _, k := range slices.Sorted(maps.Keys(short)) {
		add("  ✗ %d type(s) too small for its %s (closest, %s): %s", len(short[k]), k, largest[k], shortList(short[k], maxNamed))
	}
	if len(fits) == 0 {
		add("  ✗ no instance type of this pool fits the pod: %s", d.PoolReason(i))
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
	if pd.MinValues != nil {
		add("  ✗ %s", d.PoolReason(i))
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
		case solver.Untolerated(pod.Tolerations, n.Taints) != nil:
			t := solver.Untolerated(pod.Tolerations, n.Taints)
			why = fmt.Sprintf("taint %s=%s:%s not tolerated", t.Key, t.Value, t.Effect)
		default:
			if f := solver.SelectorFailure(pod, solver.MapLabels(n.Labels)); f != "" {
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
	for _, k := range slices.Sorted(maps.Keys(reasons)) {
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
