package solver

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// FormatQuantity renders a resource amount the way a user reads it: CPU in
// cores ("3.92"), memory and storage in binary units ("14.1Gi"), counts plain.
func FormatQuantity(resource int, v int64) string {
	switch resource {
	case CPU:
		return strconv.FormatFloat(float64(v)/1000, 'f', -1, 64)
	case Memory, EphemeralStorage:
		return formatBytes(v)
	}
	return strconv.FormatInt(v, 10)
}

func formatBytes(v int64) string {
	units := []string{"", "Ki", "Mi", "Gi", "Ti", "Pi"}
	f := float64(v)
	i := 0
	for math.Abs(f) >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if f == math.Trunc(f) {
		return strconv.FormatFloat(f, 'f', 0, 64) + units[i]
	}
	return strconv.FormatFloat(math.Floor(f*10)/10, 'f', 1, 64) + units[i]
}

// describe renders the non-zero resources of r other than the pod count,
// e.g. "4 CPU and 16Gi memory".
func (p *Problem) describe(r Resources) string {
	var parts []string
	for i := range r {
		if r[i] == 0 || i == Pods {
			continue
		}
		name := p.ResourceName(i)
		if i == CPU {
			name = "CPU"
		}
		parts = append(parts, FormatQuantity(i, r[i])+" "+name)
	}
	if len(parts) == 0 {
		return "no CPU or memory"
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// describeShort renders only the resources named in which.
func (p *Problem) describeOnly(r Resources, which []int) string {
	var sel Resources
	for _, i := range which {
		sel[i] = r[i]
	}
	return p.describe(sel)
}

// NotDiagnosed is the reason of a pod no candidate node can take when the
// solve's deadline passed before the solver examined why: the diagnosis
// is skipped, not the pod.
const NotDiagnosed = "not diagnosed: the time limit ran out before the solver examined why no NodePool can launch a node for it"

// explainInfeasible records, for every class no candidate node can take, a
// sentence saying which constraint ruled out which instance types. Classes
// alike in what the diagnosis reads (their pods' node constraints and
// requests) are diagnosed once; past the deadline, the classes not yet
// diagnosed get NotDiagnosed.
func (s *state) explainInfeasible() {
	s.reasons = map[int]string{}
	diagnosed := map[string]string{}
	stop := s.p.Options.stopAt()
	for ci, c := range s.classes {
		if s.rem[ci] == 0 || len(c.kinds) > 0 {
			continue
		}
		switch {
		case c.refused != "":
			s.reasons[ci] = c.refused
		case s.hasTopology && s.onlyExisting(c):
			s.reasons[ci] = "its required pod affinity on " + LabelHostname + " needs a node already running a matching pod, and none of those has room"
		default:
			key := nodeConstraintKey(s.groups[c.group].rep) + "\x01" + fmt.Sprint(c.req)
			reason, ok := diagnosed[key]
			switch {
			case ok:
			case expired(stop):
				reason = NotDiagnosed
			default:
				reason = s.diagnose(c)
				diagnosed[key] = reason
			}
			s.reasons[ci] = reason
		}
	}
}

// diagnose explains why no pool can launch a node for the class.
func (s *state) diagnose(c *class) string {
	d := s.p.diagnosis(s.groups[c.group].rep, c.req)
	return d.Reason()
}

// Reason renders the diagnosis as the sentence the plan gives an
// unschedulable pod: every pool's verdict in pool order, then the cheapest
// instance type that would fit.
func (d *Diagnosis) Reason() string {
	p := d.p
	if d.NoPools {
		return "no NodePool is defined"
	}
	if d.Unanswerable != "" {
		return d.Unanswerable
	}
	var sentences []string
	for i := range d.Pools {
		sentences = append(sentences, d.PoolReason(i))
	}
	msg := strings.Join(sentences, "; ")
	if d.Cheapest == nil && d.Selectors != "" {
		return msg + "; no instance type in the catalog that matches the pod's " + d.Selectors + " has room for " + p.describe(d.Requests)
	}
	if d.Cheapest == nil {
		return msg + "; no instance type in the catalog has room for " + p.describe(d.Requests)
	}
	it := &p.PoolTypes(d.Cheapest.Pool)[d.Cheapest.Type]
	o := it.Offerings[d.Cheapest.Offering]
	return msg + fmt.Sprintf("; the cheapest instance type that would fit, if a NodePool allowed it, is %s (%s, $%.4f/h)", it.Name, o.CapacityType, o.Price)
}

// PoolReason renders the verdict of d.Pools[i] as one sentence.
func (d *Diagnosis) PoolReason(i int) string {
	p := d.p
	pd := &d.Pools[i]
	pool := &p.Pools[pd.Pool]
	if t := pd.Taint; t != nil {
		return fmt.Sprintf("NodePool %s has taint %s=%s:%s that the pod does not tolerate", pool.Name, t.Key, t.Value, t.Effect)
	}
	if len(pd.Allowed) == 0 {
		if pd.KeyRequirement != nil {
			return fmt.Sprintf("NodePool %s requires %s: %s", pool.Name, formatRequirements([]Requirement{*pd.KeyRequirement}), pd.KeyProblem)
		}
		return fmt.Sprintf("NodePool %s allows no instance type offered here (its requirements: %s)", pool.Name, formatRequirements(pool.Requirements))
	}
	if len(pd.Matching) == 0 {
		return fmt.Sprintf("none of the %d instance types allowed by NodePool %s matches the pod's %s", len(pd.Allowed), pool.Name, pd.Blocking)
	}
	if pd.MinValues != nil && len(pd.Fitting) > 0 {
		return pd.MinValues.sentence(pool.Name)
	}
	// Every matching type is too small. A resource none of them has at all
	// (a GPU on a pool of CPU types) is the cause; how close the largest
	// came in CPU and memory is not.
	types := p.PoolTypes(pd.Pool)
	if absent := pd.absent(); len(absent) > 0 {
		names := make([]string, len(absent))
		for i, r := range absent {
			names[i] = p.ResourceName(r)
		}
		return fmt.Sprintf("none of the %d instance types allowed by NodePool %s has %s, which the pod requests (%s)",
			len(pd.Matching), pool.Name, strings.Join(names, " or "), p.describeOnly(d.Requests, absent))
	}
	what := p.describeOnly(d.Requests, pd.Short)
	if slices.Contains(pd.Short, Pods) {
		what = strings.TrimSuffix(what, "no CPU or memory") + "another pod slot"
	}
	noun, verb := "instance types", "have"
	if len(pd.Matching) == 1 {
		noun, verb = "instance type", "has"
	}
	names := ""
	if len(pd.Matching) <= 5 {
		list := make([]string, len(pd.Matching))
		for i, ti := range pd.Matching {
			list[i] = types[ti].Name
		}
		sort.Strings(list)
		names = " (" + strings.Join(list, ", ") + ")"
	}
	return fmt.Sprintf("0 of %d %s allowed by NodePool %s%s %s room for %s; the largest, %s, has %s allocatable",
		len(pd.Matching), noun, pool.Name, names, verb, what, types[pd.Largest].Name, p.describeOnly(pd.Types[pd.Largest].Alloc, pd.Short))
}

// absent returns the short resources that no matching type has any of.
func (pd *PoolDiagnosis) absent() []int {
	var out []int
	for _, r := range pd.Short {
		if r == Pods {
			continue
		}
		none := true
		for _, ti := range pd.Matching {
			if pd.Types[ti].Alloc[r] > 0 {
				none = false
				break
			}
		}
		if none {
			out = append(out, r)
		}
	}
	return out
}

// fitScore is the smallest ratio of allocatable to request over the
// requested resources: 1 or more means it fits.
func fitScore(req, alloc Resources) float64 {
	score := math.Inf(1)
	for r := range req {
		if req[r] > 0 {
			score = min(score, float64(alloc[r])/float64(req[r]))
		}
	}
	return score
}

// FormatRequirements renders requirements as "key Op [v1, v2], ...", or
// "none".
func FormatRequirements(reqs []Requirement) string { return formatRequirements(reqs) }

func formatRequirements(reqs []Requirement) string {
	if len(reqs) == 0 {
		return "none"
	}
	parts := make([]string, len(reqs))
	for i, r := range reqs {
		parts[i] = r.Key + " " + r.Operator
		if len(r.Values) > 0 {
			parts[i] += " [" + strings.Join(r.Values, ", ") + "]"
		}
	}
	return strings.Join(parts, ", ")
}

// limitReason explains why pods that some kind fits were still left over.
func (s *state) limitReason(ci int) string {
	c := s.classes[ci]
	var parts []string
	seen := map[int]bool{}
	for _, ki := range c.kinds {
		k := s.kinds[ki]
		if seen[k.pool] {
			continue
		}
		seen[k.pool] = true
		pool := &s.p.Pools[k.pool]
		var used []string
		for r := range pool.Limits {
			if pool.HasLimit[r] {
				used = append(used, fmt.Sprintf("%s %s of %s", s.p.ResourceName(r), FormatQuantity(r, s.used[k.pool][r]), FormatQuantity(r, pool.Limits[r])))
			}
		}
		parts = append(parts, fmt.Sprintf("NodePool %s is at its limits (%s)", pool.Name, strings.Join(used, ", ")))
	}
	if len(parts) == 0 {
		return "no node could be planned for it"
	}
	return strings.Join(parts, "; ")
}

// placementReason explains a planned node in one sentence: what it holds,
// how full that makes it, and that no cheaper allowed kind holds the same
// pods.
func (s *state) placementReason(n plannedNode) string {
	k := s.kinds[n.kind]
	pods := 0
	for _, t := range n.takes {
		pods += t.n
	}
	return s.p.holdsReason(s.offeringName(k), &s.p.Pools[k.pool], pods, s.takesReq(n.takes), k.alloc)
}

// offeringName names kind k's offering in a placementReason: its type,
// and the capacity reservation it draws on.
func (s *state) offeringName(k *kind) string {
	name := s.p.PoolTypes(k.pool)[k.typ].Name
	if k.reservation > 0 {
		name += " from capacity reservation " + s.reserved.names[k.reservation-1] + " (used before any other offering: it is paid for either way)"
	}
	return name
}

// holdsPhrase joins the offering's name to the rest of a placementReason.
const holdsPhrase = " is the cheapest allowed type that holds "

// holdsReason is placementReason's sentence for a node of the named
// offering in pool holding pods pods that request req of alloc.
func (p *Problem) holdsReason(name string, pool *Pool, pods int, req, alloc Resources) string {
	these := fmt.Sprintf("these %d pods", pods)
	if pods == 1 {
		these = "this pod"
	}
	msg := fmt.Sprintf("%s%s%s in NodePool %s (%s requested, %s allocatable: %.0f%% CPU, %.0f%% memory)",
		name, holdsPhrase, these, pool.Name, p.describeOnly(req, []int{CPU, Memory}), p.describeOnly(alloc, []int{CPU, Memory}),
		percent(req[CPU], alloc[CPU]), percent(req[Memory], alloc[Memory]))
	if len(p.Pools) > 1 {
		msg += fmt.Sprintf("; the pool has weight %d", pool.Weight)
	}
	return msg
}

// refreshReasons rewrites the placement sentence of each planned node the
// passes after emit (enforceSpread, placePending) took pods off or put
// pods on, from what the node finally holds: written at emit, it named
// pods and requests the node no longer has. A node placePending opened
// keeps its own sentence.
func (s *state) refreshReasons() {
	for i := range s.plan.NewNodes {
		n := &s.plan.NewNodes[i]
		if n.moved && n.offering != "" {
			n.Reason = s.p.holdsReason(n.offering, &s.p.Pools[n.pool], len(n.Pods), n.Requested, n.Allocatable)
		}
	}
}

func percent(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// needsLabel reports whether the requirement holds only on a node that
// carries its key.
func needsLabel(r Requirement) bool {
	return r.Operator == OpIn || r.Operator == OpExists || r.Operator == OpGt || r.Operator == OpLt
}

// unanswerableKey returns, when the pod's node selector, or a requirement
// in every term of its required node affinity, needs a label that no
// candidate node can carry, a sentence naming the key: the catalog does
// not know it, or no instance type, offering or pool sets it. Such a pod
// is not short of room, and saying so would send the user the wrong way.
func (p *Problem) unanswerableKey(pod *Pod) string {
	for _, k := range slices.Sorted(maps.Keys(pod.NodeSelector)) {
		if why := p.keyProblem(k, pod); why != "" {
			return fmt.Sprintf("its nodeSelector %s=%s cannot be met: %s", k, pod.NodeSelector[k], why)
		}
	}
	first := ""
	for _, t := range pod.Affinity {
		found := ""
		if len(t) == 0 {
			found = "its required node affinity has a term without requirements, which matches no node (as in Kubernetes)"
		}
		for _, r := range t {
			if needsLabel(r) {
				if why := p.keyProblem(r.Key, pod); why != "" {
					found = fmt.Sprintf("its node affinity (%s) cannot be met: %s", formatRequirements([]Requirement{r}), why)
					break
				}
			}
		}
		if found == "" {
			return ""
		}
		if first == "" {
			first = found
		}
	}
	return first
}

// keyProblem says why no candidate node can carry label key: the catalog
// does not know it (Problem.UnknownLabels), or nothing sets it. It returns
// "" when some instance type, offering or pool sets the key.
func (p *Problem) keyProblem(key string, pod *Pod) string {
	key = NormalizeLabelKey(key)
	if slices.Contains(p.UnknownLabels, key) {
		return fmt.Sprintf("the catalog does not know label %s (Karpenter sets it from the EC2 API; the embedded data has no source for it)", key)
	}
	if offeringLabel(key) || key == LabelNodePool {
		return ""
	}
	for i := range p.Nodes {
		if _, ok := p.Nodes[i].Labels[key]; ok {
			return "" // an existing node has it: the usual diagnosis applies
		}
	}
	if key == LabelHostname {
		return "a new node has no name before it launches, so only an existing node it names could take the pod (matchFields metadata.name is read as this label)"
	}
	for pi := range p.Pools {
		if _, ok := poolLabelsFor(&p.Pools[pi], pod)[key]; ok {
			return ""
		}
	}
	n := 0
	for _, types := range p.typeLists() {
		for i := range types {
			if _, ok := types[i].Labels[key]; ok {
				return ""
			}
		}
		n += len(types)
	}
	return fmt.Sprintf("no instance type carries label %s (none of %d in the catalog, and no NodePool sets it)", key, n)
}
