package solver

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Diagnosis is the structured account of why, or whether, a new node of
// each NodePool could take one pod: the data the solver's unschedulable
// sentence and the TUI's detail view are both rendered from.
type Diagnosis struct {
	// Requests is what the pod needs on a node, one pod slot included.
	Requests Resources
	// NoPools is set when the problem defines no NodePool.
	NoPools bool
	// Unanswerable, when set, says that the pod's node selector or required
	// node affinity needs a label no candidate node can carry; the pools are
	// then not the cause and Pools is empty.
	Unanswerable string
	// Pools holds one entry per NodePool, in the order the solver tries them.
	Pools []PoolDiagnosis
	// Cheapest is the cheapest offering that would take the pod if a pool
	// allowed its type; nil when no instance type has room.
	Cheapest *CheapestFit
	// Selectors, when Cheapest is nil but some instance type would have
	// room were it not for the pod's node selector and required affinity,
	// names them: they, not the pod's size, rule out every type.
	Selectors string

	p *Problem
}

// PoolDiagnosis is the verdict of one NodePool on one pod.
type PoolDiagnosis struct {
	// Pool is the index in Problem.Pools.
	Pool int
	// Taint is the first pool taint the pod does not tolerate; when set,
	// nothing else about the pool is examined.
	Taint *Taint
	// KeyRequirement, when the pool allows no type, is the first pool
	// requirement that needs a label no node can carry, and KeyProblem says
	// why.
	KeyRequirement *Requirement
	KeyProblem     string
	// Types holds the verdict on every type of Problem.PoolTypes(Pool), by
	// index in that list.
	Types []TypeDiagnosis
	// Allowed, Matching and Fitting are the indices (into PoolTypes) of the
	// types some offering of which the pool's requirements allow, that then
	// also match the pod's node selector and affinity, and that then also
	// have room for the pod.
	Allowed, Matching, Fitting []int
	// Blocking names, when no allowed type matches, the pod's node selector
	// entry or affinity requirement none of them satisfies.
	Blocking string
	// Largest is the matching type closest to fitting (-1 when none match),
	// and Short the resources some matching type lacks.
	Largest int
	Short   []int
	// MinValues, when some types fit, is the pool's minValues key the
	// fitting offerings carry too few distinct values of: the pool cannot
	// launch a node for the pod.
	MinValues *MinValuesShort
}

// TypeDiagnosis is the verdict of one instance type of a pool on one pod.
type TypeDiagnosis struct {
	// PoolFailure is, when no offering is allowed, the first pool
	// requirement the first offering fails.
	PoolFailure *Requirement
	// SelectorFailure is, when offerings are allowed but none matches, the
	// pod's selector entry or affinity requirement the first allowed one
	// fails ("nodeSelector k=v", "node affinity (k In [v])").
	SelectorFailure string
	// Matching is set when an allowed offering matches the pod's selectors.
	Matching bool
	// Alloc is, when Matching, the allocatable left by the DaemonSets on the
	// matching offering that comes closest to fitting the pod.
	Alloc Resources
	// Offering is the index of the cheapest offering with room, -1 if none.
	Offering int
}

// CheapestFit names an offering of an instance type of the first pool.
type CheapestFit struct {
	Pool, Type, Offering int
}

// Verdict names the cause a pool gives, for tests and views: "taint",
// "no type", "selector", "too small", "min values" or "fits".
func (d *PoolDiagnosis) Verdict() string {
	switch {
	case d.Taint != nil:
		return "taint"
	case len(d.Allowed) == 0:
		return "no type"
	case len(d.Matching) == 0:
		return "selector"
	case len(d.Fitting) == 0:
		return "too small"
	case d.MinValues != nil:
		return "min values"
	}
	return "fits"
}

// Diagnose examines pod (an index in p.Pods) against every NodePool the way
// the solver does when it explains an unschedulable pod: pool order, taints,
// requirements, the pod's selectors, DaemonSet overhead and each pool's own
// instance types. It ignores existing nodes, topology and limits.
func Diagnose(p *Problem, pod int) Diagnosis {
	pd := &p.Pods[pod]
	req := pd.Requests
	req[Pods] = max(req[Pods], 1)
	return p.diagnosis(pd, req)
}

// Placeable reports whether some NodePool could launch a new node for pod
// (an index in p.Pods): whether Diagnose would give some pool the verdict
// "fits". It stops at the first offering that fits, and names nothing:
// the cheap test for callers that only ask whether a pool (a wider one,
// say) places the pod, without solving.
func Placeable(p *Problem, pod int) bool {
	pd := &p.Pods[pod]
	req := pd.Requests
	req[Pods] = max(req[Pods], 1)
	if len(p.Pools) == 0 || p.unanswerableKey(pd) != "" {
		return false
	}
	for _, pi := range p.poolOrder() {
		pool := &p.Pools[pi]
		if untolerated(pd.Tolerations, pool.Taints) != nil {
			continue
		}
		pl := poolLabelsFor(pool, pd)
		if p.fittingOffering(pd, req, pi, pl, pool.Requirements, true) != nil && p.minValuesShortOf(pi, pl, req, []*Pod{pd}) == nil {
			return true
		}
	}
	return false
}

// fittingOffering returns the cheapest offering (the first one found,
// with first) among the types of pool pi whose labels, pl being the
// pool's labels for the pod, match reqs and the pod's selectors, and have
// room for req once the DaemonSets there are counted; nil when none does.
func (p *Problem) fittingOffering(pod *Pod, req Resources, pi int, pl map[string]string, reqs []Requirement, first bool) *CheapestFit {
	pool := &p.Pools[pi]
	types := p.PoolTypes(pi)
	var best *CheapestFit
	for ti := range types {
		it := &types[ti]
		for oi, o := range it.Offerings {
			labels := &candidateLabels{zone: o.Zone, capacityType: o.CapacityType, pool: pl, typ: it.Labels}
			if !allMatch(reqs, labels) || !matchesAffinity(pod.NodeSelector, pod.Affinity, labels) ||
				!req.Fits(it.Allocatable().Sub(p.daemonOverhead(labels, pool.Taints))) {
				continue
			}
			if best == nil || o.Price < types[best.Type].Offerings[best.Offering].Price {
				best = &CheapestFit{Pool: pi, Type: ti, Offering: oi}
				if first {
					return best
				}
			}
		}
	}
	return best
}

func (p *Problem) diagnosis(pod *Pod, req Resources) Diagnosis {
	d := Diagnosis{Requests: req, p: p}
	if len(p.Pools) == 0 {
		d.NoPools = true
		return d
	}
	if d.Unanswerable = p.unanswerableKey(pod); d.Unanswerable != "" {
		return d
	}
	for _, pi := range p.poolOrder() {
		d.Pools = append(d.Pools, p.diagnosePool(pod, req, pi))
	}
	d.Cheapest = p.cheapestAnywhere(pod, req)
	if d.Cheapest == nil && (len(pod.NodeSelector) > 0 || len(pod.Affinity) > 0) {
		free := *pod
		free.NodeSelector, free.Affinity = nil, nil
		if p.cheapestAnywhere(&free, req) != nil {
			d.Selectors = describeSelectors(pod)
		}
	}
	return d
}

func (p *Problem) diagnosePool(pod *Pod, req Resources, pi int) PoolDiagnosis {
	pool := &p.Pools[pi]
	d := PoolDiagnosis{Pool: pi, Largest: -1}
	if d.Taint = untolerated(pod.Tolerations, pool.Taints); d.Taint != nil {
		return d
	}
	pl := poolLabelsFor(pool, pod)
	types := p.PoolTypes(pi)
	d.Types = make([]TypeDiagnosis, len(types))
	for ti := range types {
		it := &types[ti]
		td := &d.Types[ti]
		td.Offering = -1
		allowed, haveAlloc := false, false
		for oi, o := range it.Offerings {
			labels := &candidateLabels{zone: o.Zone, capacityType: o.CapacityType, pool: pl, typ: it.Labels}
			if f := firstFailing(pool.Requirements, labels); f != nil {
				if !allowed && td.PoolFailure == nil {
					td.PoolFailure = f
				}
				continue
			}
			allowed = true
			td.PoolFailure = nil
			if !matchesAffinity(pod.NodeSelector, pod.Affinity, labels) {
				if td.SelectorFailure == "" {
					td.SelectorFailure = selectorFailure(pod, labels)
				}
				continue
			}
			td.Matching = true
			alloc := it.Allocatable().Sub(p.daemonOverhead(labels, pool.Taints))
			if !haveAlloc || fitScore(req, alloc) > fitScore(req, td.Alloc) {
				td.Alloc, haveAlloc = alloc, true
			}
			if req.Fits(alloc) && (td.Offering < 0 || o.Price < it.Offerings[td.Offering].Price) {
				td.Offering = oi
			}
		}
		if td.Matching {
			td.SelectorFailure = ""
		}
		if allowed {
			d.Allowed = append(d.Allowed, ti)
		}
		if td.Matching {
			d.Matching = append(d.Matching, ti)
		}
		if td.Offering >= 0 {
			d.Fitting = append(d.Fitting, ti)
		}
	}
	if len(d.Allowed) == 0 {
		for i, r := range pool.Requirements {
			if needsLabel(r) {
				if why := p.keyProblem(r.Key, pod); why != "" {
					d.KeyRequirement, d.KeyProblem = &pool.Requirements[i], why
					break
				}
			}
		}
		return d
	}
	if len(d.Matching) == 0 {
		d.Blocking = blockingSelector(pod, pool, pl, types, d.Allowed)
		return d
	}
	short := make([]bool, MaxResources)
	bestScore := -1.0
	for _, ti := range d.Matching {
		alloc := d.Types[ti].Alloc
		for r := range req {
			if req[r] > alloc[r] {
				short[r] = true
			}
		}
		if sc := fitScore(req, alloc); sc > bestScore {
			d.Largest, bestScore = ti, sc
		}
	}
	for r := range short {
		if short[r] {
			d.Short = append(d.Short, r)
		}
	}
	if len(d.Fitting) > 0 {
		d.MinValues = p.minValuesShortOf(pi, pl, req, []*Pod{pod})
	}
	return d
}

// firstFailing returns the first of reqs labels do not satisfy, or nil.
func firstFailing(reqs []Requirement, labels Labels) *Requirement {
	for i := range reqs {
		if !reqs[i].Matches(labels) {
			return &reqs[i]
		}
	}
	return nil
}

// selectorFailure names the pod's node selector entry, or the requirement of
// its only affinity term, that labels fail; "node affinity" when it has
// several terms and none matches.
func selectorFailure(pod *Pod, labels Labels) string {
	for _, k := range slices.Sorted(maps.Keys(pod.NodeSelector)) {
		if v, ok := labels.Label(k); !ok || v != pod.NodeSelector[k] {
			return fmt.Sprintf("nodeSelector %s=%s", k, pod.NodeSelector[k])
		}
	}
	if len(pod.Affinity) == 1 {
		if f := firstFailing(pod.Affinity[0], labels); f != nil {
			return "node affinity (" + formatRequirements([]Requirement{*f}) + ")"
		}
	}
	return "node affinity"
}

// blockingSelector names the pod's first node selector entry or affinity
// requirement that none of the allowed types satisfies.
func blockingSelector(pod *Pod, pool *Pool, pl map[string]string, types []InstanceType, allowed []int) string {
	satisfiable := func(test func(Labels) bool) bool {
		for _, ti := range allowed {
			it := &types[ti]
			for _, o := range it.Offerings {
				labels := &candidateLabels{zone: o.Zone, capacityType: o.CapacityType, pool: pl, typ: it.Labels}
				if allMatch(pool.Requirements, labels) && test(labels) {
					return true
				}
			}
		}
		return false
	}
	keys := make([]string, 0, len(pod.NodeSelector))
	for k := range pod.NodeSelector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		want := pod.NodeSelector[k]
		if !satisfiable(func(l Labels) bool { v, ok := l.Label(k); return ok && v == want }) {
			return fmt.Sprintf("nodeSelector %s=%s", k, want)
		}
	}
	if len(pod.Affinity) == 1 {
		for _, r := range pod.Affinity[0] {
			if !satisfiable(func(l Labels) bool { return r.Matches(l) }) {
				return "node affinity (" + formatRequirements([]Requirement{r}) + ")"
			}
		}
	}
	return "node affinity"
}

// cheapestAnywhere finds the cheapest offering of any instance type that
// would take the pod if a pool allowed it: the first pool's requirements on
// instance types are ignored, its zones, capacity types, labels and taints
// and the pod's own constraints kept. When the pool's zones or capacity
// types rule the pod out, it looks past them too.
func (p *Problem) cheapestAnywhere(pod *Pod, req Resources) *CheapestFit {
	first := p.poolOrder()[0]
	pool := &p.Pools[first]
	pl := poolLabelsFor(pool, pod)
	var offeringReqs []Requirement
	for _, r := range pool.Requirements {
		if r.Key == LabelZone || r.Key == LabelCapacityType {
			offeringReqs = append(offeringReqs, r)
		}
	}
	cheapest := func(reqs []Requirement) *CheapestFit {
		return p.fittingOffering(pod, req, first, pl, reqs, false)
	}
	// The pool's architecture and OS first, so that the type named is one
	// a wider choice of families would give (--all-instance-types), then
	// any type in the pool's zones and capacity types, then any at all.
	platform := offeringReqs
	for _, r := range pool.Requirements {
		if r.Key == LabelArch || r.Key == LabelOS {
			platform = append(slices.Clip(platform), r)
		}
	}
	best := cheapest(platform)
	if best == nil && len(platform) > len(offeringReqs) {
		best = cheapest(offeringReqs)
	}
	if best == nil && len(offeringReqs) > 0 {
		best = cheapest(nil)
	}
	return best
}

// describeSelectors renders the pod's node selector and required node
// affinity: "nodeSelector k=v, node affinity (k In [v])".
func describeSelectors(pod *Pod) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(pod.NodeSelector)) {
		parts = append(parts, fmt.Sprintf("nodeSelector %s=%s", k, pod.NodeSelector[k]))
	}
	terms := make([]string, len(pod.Affinity))
	for i, t := range pod.Affinity {
		terms[i] = formatRequirements(t)
	}
	if len(terms) > 0 {
		parts = append(parts, "node affinity ("+strings.Join(terms, ") or (")+")")
	}
	return strings.Join(parts, ", ")
}

// Untolerated returns the first NoSchedule or NoExecute taint of taints that
// none of tolerations tolerates, or nil: the check the solver applies to
// pools and nodes.
func Untolerated(tolerations []Toleration, taints []Taint) *Taint {
	return untolerated(tolerations, taints)
}

// SelectorFailure returns "" when labels satisfy the pod's node selector and
// required node affinity, else names what they fail, as TypeDiagnosis does.
func SelectorFailure(pod *Pod, labels Labels) string {
	if matchesAffinity(pod.NodeSelector, pod.Affinity, labels) {
		return ""
	}
	return selectorFailure(pod, labels)
}
