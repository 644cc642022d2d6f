package solver

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Well-known label keys the solver itself sets on candidate nodes. Cloud
// providers put the instance-type labels (type, family, size, arch, ...) into
// InstanceType.Labels.
const (
	LabelZone         = "topology.kubernetes.io/zone"
	LabelRegion       = "topology.kubernetes.io/region"
	LabelCapacityType = "karpenter.sh/capacity-type"
	LabelNodePool     = "karpenter.sh/nodepool"
	LabelInstanceType = "node.kubernetes.io/instance-type"
	LabelArch         = "kubernetes.io/arch"
	LabelOS           = "kubernetes.io/os"
)

// deprecatedLabels maps deprecated well-known label keys to the keys that
// replaced them, as Karpenter's NormalizedLabels does: a selector written
// against the old key is read as one against the new key, which is the one
// the solver's instance types carry.
var deprecatedLabels = map[string]string{
	"failure-domain.beta.kubernetes.io/zone":   LabelZone,
	"failure-domain.beta.kubernetes.io/region": LabelRegion,
	"beta.kubernetes.io/arch":                  LabelArch,
	"beta.kubernetes.io/os":                    LabelOS,
	"beta.kubernetes.io/instance-type":         LabelInstanceType,
}

// NormalizeLabelKey returns the current key for a deprecated well-known
// label key (beta.kubernetes.io/arch → kubernetes.io/arch, ...), and any
// other key unchanged.
func NormalizeLabelKey(key string) string {
	if k, ok := deprecatedLabels[key]; ok {
		return k
	}
	return key
}

// candidateLabels are the labels a new node of one instance type, offering
// and pool would carry.
type candidateLabels struct {
	zone, capacityType string
	pool, typ          map[string]string
}

// Label implements Labels: offering labels first, then the pool's, then the
// instance type's. Deprecated keys read their current equivalents.
func (l *candidateLabels) Label(key string) (string, bool) {
	key = NormalizeLabelKey(key)
	switch key {
	case LabelZone:
		return l.zone, l.zone != ""
	case LabelCapacityType:
		return l.capacityType, l.capacityType != ""
	}
	if v, ok := l.pool[key]; ok {
		return v, true
	}
	v, ok := l.typ[key]
	return v, ok
}

// offeringLabel reports whether the offering, not the pool or the type,
// decides the key's value.
func offeringLabel(key string) bool { return key == LabelZone || key == LabelCapacityType }

// wellKnownTypeLabel reports whether key is a label the instance type, not
// the pool, decides.
func wellKnownTypeLabel(key string) bool {
	return key == LabelInstanceType || key == LabelArch || key == LabelOS ||
		key == LabelRegion || strings.HasPrefix(key, "karpenter.k8s.aws/")
}

// poolLabels returns the labels a pool puts on its nodes when no pod asks
// for a particular value: see poolLabelsFor.
func poolLabels(pool *Pool) map[string]string { return poolLabelsFor(pool, nil) }

// poolLabelsFor returns the labels a node of the pool would carry to take
// pod (nil: no pod in particular): the pool's template labels, the pool
// name, and for every other key the pool's requirements constrain (keys no
// instance type or offering decides), a value they allow. As Karpenter
// does, a node gets the value the pod selects when the requirements allow
// it (team In [a, b] offers b to a pod selecting team=b; team Exists offers
// any value), else the first In value, else none when the requirements
// allow the label to be absent, else a generated one.
func poolLabelsFor(pool *Pool, pod *Pod) map[string]string {
	labels := make(map[string]string, len(pool.Labels)+2)
	for k, v := range pool.Labels {
		labels[NormalizeLabelKey(k)] = v
	}
	labels[LabelNodePool] = pool.Name
	var keys []string
	for _, r := range pool.Requirements {
		k := NormalizeLabelKey(r.Key)
		if _, fixed := labels[k]; fixed || offeringLabel(k) || wellKnownTypeLabel(k) || slices.Contains(keys, k) {
			continue
		}
		keys = append(keys, k)
	}
	for _, k := range keys {
		if v, ok := poolValue(pool.Requirements, k, pod); ok {
			labels[k] = v
		}
	}
	return labels
}

// poolValue picks the value of key k for a node of a pool with the
// requirements reqs that is to take pod; ok is false when the label is best
// left off.
func poolValue(reqs []Requirement, k string, pod *Pod) (string, bool) {
	allowed := func(v string, present bool) bool {
		l := MapLabels{}
		if present {
			l[k] = v
		}
		for i := range reqs {
			if NormalizeLabelKey(reqs[i].Key) == k && !reqs[i].Matches(l) {
				return false
			}
		}
		return true
	}
	if pod != nil {
		for _, v := range wantedValues(pod, k) {
			if allowed(v, true) {
				return v, true
			}
		}
	}
	for _, r := range reqs {
		if NormalizeLabelKey(r.Key) != k {
			continue
		}
		for _, v := range r.Values {
			if r.Operator == OpIn && allowed(v, true) {
				return v, true
			}
		}
	}
	if allowed("", false) && (pod == nil || !podNeedsKey(pod, k)) {
		return "", false
	}
	// Exists, Gt or Lt (or a pod that needs the key): make a value up.
	for _, r := range reqs {
		if NormalizeLabelKey(r.Key) != k || len(r.Values) != 1 {
			continue
		}
		if n, err := strconv.ParseInt(r.Values[0], 10, 64); err == nil {
			for _, c := range []int64{n + 1, n - 1} {
				if v := strconv.FormatInt(c, 10); allowed(v, true) {
					return v, true
				}
			}
		}
	}
	for i := 0; i < 100; i++ {
		v := "rightsize-generated"
		if i > 0 {
			v += "-" + strconv.Itoa(i)
		}
		if allowed(v, true) {
			return v, true
		}
	}
	return "", false
}

// poolKeyValues lists the values a node of the pool may carry for key k
// when the pool decides k (a requirement constrains it, no template label
// fixes it, no offering or instance type decides it) and its requirements
// name the values (In): team In [a, b] gives a and b, one per node, so a
// spread over team has both domains. It returns nil otherwise (one value
// at most, the one poolLabelsFor picks).
func poolKeyValues(pool *Pool, k string) []string {
	if _, fixed := pool.Labels[k]; fixed || offeringLabel(k) || wellKnownTypeLabel(k) || k == LabelNodePool {
		return nil
	}
	var out []string
	for _, r := range pool.Requirements {
		if NormalizeLabelKey(r.Key) != k || r.Operator != OpIn {
			continue
		}
		for _, v := range r.Values {
			if slices.Contains(out, v) {
				continue
			}
			l := MapLabels{k: v}
			if !slices.ContainsFunc(pool.Requirements, func(q Requirement) bool { return NormalizeLabelKey(q.Key) == k && !q.Matches(l) }) {
				out = append(out, v)
			}
		}
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// wantedValues lists the values of key k the pod's node selector, required
// node affinity and node affinity preferences ask for, in that order.
func wantedValues(pod *Pod, k string) []string {
	var out []string
	for key, v := range pod.NodeSelector {
		if NormalizeLabelKey(key) == k {
			out = append(out, v)
		}
	}
	add := func(t Term) {
		for _, r := range t {
			if NormalizeLabelKey(r.Key) == k && r.Operator == OpIn {
				out = append(out, r.Values...)
			}
		}
	}
	for _, t := range pod.Affinity {
		add(t)
	}
	for _, p := range pod.Preferences {
		if p.Kind == PreferNodeAffinity {
			add(p.NodeTerm)
		}
	}
	return out
}

// podNeedsKey reports whether the pod's node selector or every term of its
// required node affinity needs the label k present.
func podNeedsKey(pod *Pod, k string) bool {
	for key := range pod.NodeSelector {
		if NormalizeLabelKey(key) == k {
			return true
		}
	}
	if len(pod.Affinity) == 0 {
		return false
	}
	for _, t := range pod.Affinity {
		needs := false
		for _, r := range t {
			if NormalizeLabelKey(r.Key) == k && (r.Operator == OpIn || r.Operator == OpExists || r.Operator == OpGt || r.Operator == OpLt) {
				needs = true
			}
		}
		if !needs {
			return false
		}
	}
	return true
}

// poolVariants returns the distinct label sets the pool's nodes would carry
// for the given pods (see poolLabelsFor): one when no pod asks for a value
// of a key the pool leaves open, more when pods ask for different ones.
// Each becomes its own candidate node, so that pods wanting team=a and
// team=b never share a node.
func poolVariants(pool *Pool, groups []group) []map[string]string {
	first := poolLabels(pool)
	out := []map[string]string{first}
	if !poolHasOpenKeys(pool) {
		return out
	}
	for g := range groups {
		l := poolLabelsFor(pool, groups[g].rep)
		if !slices.ContainsFunc(out, func(o map[string]string) bool { return maps.Equal(o, l) }) {
			out = append(out, l)
		}
	}
	return out
}

// poolHasOpenKeys reports whether some requirement of the pool is on a key
// the pool decides.
func poolHasOpenKeys(pool *Pool) bool {
	for _, r := range pool.Requirements {
		k := NormalizeLabelKey(r.Key)
		if _, fixed := pool.Labels[k]; !fixed && !offeringLabel(k) && !wellKnownTypeLabel(k) && k != LabelNodePool {
			return true
		}
	}
	return false
}

// poolRequirements are the pool's requirements plus, for every template
// label on a key the offering or the instance type decides (a zone, a
// capacity type, an architecture), the requirement that the node carry
// that value: Karpenter reads NodePool template labels as requirements, so
// a pool labelled topology.kubernetes.io/zone=z1 launches only in z1.
func poolRequirements(pool *Pool) []Requirement {
	var extra []Requirement
	for _, k := range slices.Sorted(maps.Keys(pool.Labels)) {
		nk := NormalizeLabelKey(k)
		if offeringLabel(nk) || wellKnownTypeLabel(nk) {
			extra = append(extra, Requirement{Key: nk, Operator: OpIn, Values: []string{pool.Labels[k]}})
		}
	}
	if len(extra) == 0 {
		return pool.Requirements
	}
	return append(slices.Clone(pool.Requirements), extra...)
}

// preferNoScheduleCost counts the pool's PreferNoSchedule taints the pod
// does not tolerate: kube-scheduler's TaintToleration score prefers nodes
// with fewer, so among pools of equal weight the solver prefers the pool
// with the fewest, without ruling the others out.
func preferNoScheduleCost(tolerations []Toleration, taints []Taint) int {
	n := 0
	for i := range taints {
		if taints[i].Effect != EffectPreferNoSchedule {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(t Toleration) bool {
			return (t.Effect == "" || t.Effect == EffectPreferNoSchedule) && t.Tolerates(&taints[i])
		}) {
			n++
		}
	}
	return n
}

// normalized returns the problem as the solver reads it, sharing what it
// does not change: deprecated label keys in pods', DaemonSets' and pools'
// selectors replaced by their current keys, pools' template labels on
// offering and instance-type keys added to their requirements (see
// poolRequirements), and instance types' named extended capacity put at
// the problem's indices (see InstanceType.Extended). p itself is never
// modified.
func (p *Problem) normalized() *Problem {
	out := *p
	if i := slices.IndexFunc(p.Pods, func(pod Pod) bool { return !normalPod(&pod) }); i >= 0 {
		out.Pods = slices.Clone(p.Pods)
		for j := i; j < len(out.Pods); j++ {
			normalizePod(&out.Pods[j])
		}
	}
	if slices.ContainsFunc(p.DaemonSets, func(ds DaemonSet) bool { return !normalSelector(ds.NodeSelector, ds.Affinity) }) {
		out.DaemonSets = slices.Clone(p.DaemonSets)
		for j := range out.DaemonSets {
			ds := &out.DaemonSets[j]
			ds.NodeSelector, ds.Affinity = normalizeSelector(ds.NodeSelector, ds.Affinity)
		}
	}
	pools := p.Pools
	for i := range p.Pools {
		reqs := poolRequirements(&p.Pools[i])
		if normalTerm(reqs) && len(reqs) == len(p.Pools[i].Requirements) {
			continue
		}
		if &pools[0] == &p.Pools[0] {
			pools = slices.Clone(p.Pools)
		}
		pools[i].Requirements = normalizeTerm(reqs)
	}
	out.Pools = pools
	if len(p.ExtendedResources) > 0 {
		out.InstanceTypes = withExtended(p.InstanceTypes, p.ExtendedResources)
		for i := range out.Pools {
			if t := out.Pools[i].InstanceTypes; t != nil {
				if &out.Pools[0] == &p.Pools[0] {
					out.Pools = slices.Clone(p.Pools)
				}
				out.Pools[i].InstanceTypes = withExtended(t, p.ExtendedResources)
			}
		}
	}
	return &out
}

// withExtended returns types with their Extended capacity at the indices
// of names, copying only when some type has such capacity.
func withExtended(types []InstanceType, names []string) []InstanceType {
	var out []InstanceType
	for i := range types {
		for j, name := range names {
			v, ok := types[i].Extended[name]
			if !ok || types[i].Capacity[NumFixedResources+j] != 0 {
				continue
			}
			if out == nil {
				out = slices.Clone(types)
			}
			out[i].Capacity[NumFixedResources+j] = v
		}
	}
	if out == nil {
		return types
	}
	return out
}

func normalPod(p *Pod) bool {
	if !normalSelector(p.NodeSelector, p.Affinity) {
		return false
	}
	for _, pref := range p.Preferences {
		if !normalTerm(pref.NodeTerm) {
			return false
		}
	}
	return true
}

func normalizePod(p *Pod) {
	if normalPod(p) {
		return
	}
	p.NodeSelector, p.Affinity = normalizeSelector(p.NodeSelector, p.Affinity)
	if slices.ContainsFunc(p.Preferences, func(pref Preference) bool { return !normalTerm(pref.NodeTerm) }) {
		p.Preferences = slices.Clone(p.Preferences)
		for i := range p.Preferences {
			p.Preferences[i].NodeTerm = normalizeTerm(p.Preferences[i].NodeTerm)
		}
	}
}

func normalSelector(sel map[string]string, terms []Term) bool {
	for k := range sel {
		if NormalizeLabelKey(k) != k {
			return false
		}
	}
	return !slices.ContainsFunc(terms, func(t Term) bool { return !normalTerm(t) })
}

func normalizeSelector(sel map[string]string, terms []Term) (map[string]string, []Term) {
	if normalSelector(sel, terms) {
		return sel, terms
	}
	var outSel map[string]string
	if sel != nil {
		outSel = make(map[string]string, len(sel))
		for k, v := range sel {
			outSel[NormalizeLabelKey(k)] = v
		}
	}
	outTerms := make([]Term, len(terms))
	for i, t := range terms {
		outTerms[i] = normalizeTerm(t)
	}
	if terms == nil {
		outTerms = nil
	}
	return outSel, outTerms
}

func normalTerm(t []Requirement) bool {
	return !slices.ContainsFunc(t, func(r Requirement) bool { return NormalizeLabelKey(r.Key) != r.Key })
}

func normalizeTerm(t []Requirement) []Requirement {
	if normalTerm(t) {
		return t
	}
	out := slices.Clone(t)
	for i := range out {
		out[i].Key = NormalizeLabelKey(out[i].Key)
	}
	return out
}

// preferUntainted takes a group off a candidate kind of a pool with
// PreferNoSchedule taints it does not tolerate when a pool of the same
// weight with fewer such taints and no limits has a kind that takes the
// group and every pod the first kind could hold: the pod prefers the
// untainted pool, as kube-scheduler's TaintToleration score makes it,
// but a pod only the tainted pool can take still goes there. Kinds left
// with no group are dropped.
func (s *state) preferUntainted() {
	p := s.p
	tainted := false
	for i := range p.Pools {
		tainted = tainted || slices.ContainsFunc(p.Pools[i].Taints, func(t Taint) bool { return t.Effect == EffectPreferNoSchedule })
	}
	if !tainted || len(p.Pools) < 2 {
		return
	}
	unlimited := func(pool *Pool) bool { return !slices.Contains(pool.HasLimit[:], true) }
	keep := s.kinds[:0]
	for _, k := range s.kinds {
		pk := &p.Pools[k.pool]
		for g := range s.groups {
			if !k.compat.has(g) {
				continue
			}
			tol := s.groups[g].rep.Tolerations
			cost := preferNoScheduleCost(tol, pk.Taints)
			if cost == 0 {
				continue
			}
			for _, o := range s.kinds {
				po := &p.Pools[o.pool]
				if o.pool != k.pool && po.Weight == pk.Weight && unlimited(po) && o.compat.has(g) &&
					k.alloc.Fits(o.alloc) && preferNoScheduleCost(tol, po.Taints) < cost {
					k.compat[g/64] &^= 1 << (uint(g) % 64)
					break
				}
			}
		}
		if !k.compat.empty() {
			keep = append(keep, k)
		}
	}
	s.kinds = keep
}

// openLabels returns the labels of pl (a pool variant, see poolVariants)
// that the pool's template does not fix, nil when there are none.
func openLabels(pool *Pool, pl map[string]string) map[string]string {
	var out map[string]string
	for k, v := range pl {
		if _, fixed := pool.Labels[k]; fixed || k == LabelNodePool {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}
