package solver

// Pod terms: selectors, namespaces, preferences and the domains a pod may
// use.

import (
	"slices"
	"sort"
)

// Matches reports whether labels satisfy the selector. An empty selector
// matches everything, as in Kubernetes.
func (sel *Selector) Matches(labels map[string]string) bool {
	for k, v := range sel.MatchLabels {
		if labels[k] != v {
			return false
		}
	}
	return allMatch(sel.MatchExpressions, MapLabels(labels))
}

// selects reports whether the term, written by owner, matches pod other.
func (t *PodAffinityTerm) selects(owner, other *Pod) bool {
	if len(t.Namespaces) == 0 {
		if other.Namespace != owner.Namespace {
			return false
		}
	} else if !slices.Contains(t.Namespaces, other.Namespace) {
		return false
	}
	return t.Selector.Matches(other.Labels)
}

// hasTopology reports whether the pod has topology constraints or
// preferences.
func hasTopology(p *Pod) bool {
	return len(p.Spread) > 0 || len(p.PodAffinity) > 0 || len(p.PodAntiAffinity) > 0 || len(p.Preferences) > 0
}

// LabelNamespaceName is the label every namespace carries with its name.
const LabelNamespaceName = "kubernetes.io/metadata.name"

// noNamespace is a namespace no pod is in, for a term that selects none.
const noNamespace = "\x00none"

// resolveNamespaces returns the problem with every pod (anti-)affinity
// namespace selector turned into the list of namespaces it selects among
// those of the problem's pods, so that matching needs no namespace labels;
// the problem itself when no term has one. Only the pods are copied.
func resolveNamespaces(p *Problem) *Problem {
	has := func(pods []Pod) bool {
		for i := range pods {
			for _, ts := range [][]PodAffinityTerm{pods[i].PodAffinity, pods[i].PodAntiAffinity} {
				for _, t := range ts {
					if t.NamespaceSelector != nil {
						return true
					}
				}
			}
			for _, pref := range pods[i].Preferences {
				if pref.PodTerm != nil && pref.PodTerm.NamespaceSelector != nil {
					return true
				}
			}
		}
		return false
	}
	found := has(p.Pods)
	for i := range p.Nodes {
		found = found || has(p.Nodes[i].Pods)
	}
	if !found {
		return p
	}
	var namespaces []string
	note := func(pods []Pod) {
		for i := range pods {
			if !slices.Contains(namespaces, pods[i].Namespace) {
				namespaces = append(namespaces, pods[i].Namespace)
			}
		}
	}
	note(p.Pods)
	for i := range p.Nodes {
		note(p.Nodes[i].Pods)
	}
	sort.Strings(namespaces)
	resolve := func(t PodAffinityTerm) PodAffinityTerm {
		if t.NamespaceSelector == nil {
			return t
		}
		out := slices.Clone(t.Namespaces)
		for _, ns := range namespaces {
			labels := map[string]string{LabelNamespaceName: ns}
			for k, v := range p.NamespaceLabels[ns] {
				labels[k] = v
			}
			if t.NamespaceSelector.Matches(labels) && !slices.Contains(out, ns) {
				out = append(out, ns)
			}
		}
		if len(out) == 0 {
			out = []string{noNamespace}
		}
		t.Namespaces, t.NamespaceSelector = out, nil
		return t
	}
	resolvePods := func(pods []Pod) []Pod {
		out := slices.Clone(pods)
		for i := range out {
			q := &out[i]
			q.PodAffinity, q.PodAntiAffinity = slices.Clone(q.PodAffinity), slices.Clone(q.PodAntiAffinity)
			for j := range q.PodAffinity {
				q.PodAffinity[j] = resolve(q.PodAffinity[j])
			}
			for j := range q.PodAntiAffinity {
				q.PodAntiAffinity[j] = resolve(q.PodAntiAffinity[j])
			}
			q.Preferences = slices.Clone(q.Preferences)
			for j := range q.Preferences {
				if pt := q.Preferences[j].PodTerm; pt != nil {
					r := resolve(*pt)
					q.Preferences[j].PodTerm = &r
				}
			}
		}
		return out
	}
	q := *p
	q.Pods = resolvePods(p.Pods)
	q.Nodes = slices.Clone(p.Nodes)
	for i := range q.Nodes {
		q.Nodes[i].Pods = resolvePods(q.Nodes[i].Pods)
	}
	return &q
}

// topologyKey identifies the topology fields of a pod, for grouping, with
// seen (which of the problem's selectors match it; "" when no pod has
// topology constraints).
func topologyKey(p *Pod, seen string) string {
	if seen == "" && !hasTopology(p) {
		return ""
	}
	// Its own terms read its labels (selfish rules) only through the
	// problem's selectors, which seen already records: labels no selector
	// reads (a StatefulSet's pod name, say) do not split groups.
	var w keyWriter
	w.str(p.Namespace)
	w.str(seen)
	w.topology(p)
	return w.String()
}

// problemSelector is one label selector some pod's topology reads, in the
// namespaces it reads it. matches reads only the pod's namespace and
// labels.
type problemSelector struct {
	sel     Selector
	matches func(*Pod) bool
}

// problemSelectors are every selector of the pending pods' spread and pod
// (anti-)affinity and of the running pods' anti-affinity.
type problemSelectors []problemSelector

// selectors collects the problem's selectors, once each.
func (p *Problem) selectors() problemSelectors {
	var out problemSelectors
	seen := map[string]bool{}
	add := func(key []byte, sel Selector, match func(*Pod) bool) {
		if !seen[string(key)] {
			seen[string(key)] = true
			out = append(out, problemSelector{sel, match})
		}
	}
	term := func(owner *Pod, t PodAffinityTerm) {
		var w keyWriter
		w.tag('t')
		w.str(owner.Namespace)
		w.strs(t.Namespaces, true)
		w.selector(&t.Selector)
		add(w.b, t.Selector, func(o *Pod) bool { return t.selects(owner, o) })
	}
	spread := func(owner *Pod, c *TopologySpread) {
		ns, sel := owner.Namespace, c.Selector
		var w keyWriter
		w.tag('s')
		w.str(ns)
		w.selector(&sel)
		add(w.b, sel, func(o *Pod) bool { return o.Namespace == ns && sel.Matches(o.Labels) })
	}
	for i := range p.Pods {
		pod := &p.Pods[i]
		for j := range pod.Spread {
			spread(pod, &pod.Spread[j])
		}
		for _, t := range pod.PodAffinity {
			term(pod, t)
		}
		for _, t := range pod.PodAntiAffinity {
			term(pod, t)
		}
		for _, pref := range pod.Preferences {
			if pref.PodTerm != nil {
				term(pod, *pref.PodTerm)
			}
			if pref.Spread != nil {
				spread(pod, pref.Spread)
			}
		}
	}
	for i := range p.Nodes {
		for j := range p.Nodes[i].Pods {
			pod := &p.Nodes[i].Pods[j]
			for _, t := range pod.PodAntiAffinity {
				term(pod, t)
			}
		}
	}
	return out
}

// seen says which selectors match the pod, one byte each.
func (ps problemSelectors) seen(p *Pod) string {
	b := make([]byte, len(ps)+1)
	b[0] = '|'
	for i := range ps {
		b[i+1] = '0'
		if ps[i].matches(p) {
			b[i+1] = '1'
		}
	}
	return string(b)
}

// applyPreferences returns the pod with its node-affinity preferences added
// as requirements, highest weight first, skipping any that would leave no
// candidate node.
func (s *state) applyPreferences(pod *Pod) *Pod {
	prefs := slices.Clone(pod.Preferences)
	sort.SliceStable(prefs, func(a, b int) bool { return prefs[a].Weight > prefs[b].Weight })
	// A preference must not take domains from a required spread: kube-
	// scheduler holds the spread over every domain and only scores by the
	// preference within it.
	var keys []string
	for _, c := range pod.Spread {
		if c.TopologyKey != LabelHostname && c.WhenUnsatisfiable != ScheduleAnyway && !slices.Contains(keys, c.TopologyKey) {
			keys = append(keys, c.TopologyKey)
		}
	}
	usable := func(p *Pod, key string) []string {
		return s.domainsOf(p, key, domainFilter{taints: true, affinity: true})
	}
	out := pod
	for _, pref := range prefs {
		if pref.Kind != PreferNodeAffinity || len(pref.NodeTerm) == 0 {
			continue
		}
		cand := clonePod(out)
		cand.Affinity = withRequirements(cand.Affinity, pref.NodeTerm...)
		if len(s.eligibleZones(cand)) == 0 {
			continue
		}
		shrinks := false
		for _, k := range keys {
			shrinks = shrinks || len(usable(cand, k)) < len(usable(out, k))
		}
		if !shrinks {
			out = cand
		}
	}
	return out
}

func clonePod(p *Pod) *Pod {
	c := *p
	c.Affinity = slices.Clone(p.Affinity)
	return &c
}

// withRequirements adds requirements to every term (or makes one term).
func withRequirements(terms []Term, reqs ...Requirement) []Term {
	if len(terms) == 0 {
		return []Term{slices.Clone(reqs)}
	}
	out := make([]Term, len(terms))
	for i, t := range terms {
		out[i] = append(slices.Clone(t), reqs...)
	}
	return out
}

// eligibleZones lists the zones where the pod could run, cheapest first
// (see domainsOf).
func (s *state) eligibleZones(pod *Pod) []string {
	return s.domainsOf(pod, LabelZone, domainFilter{taints: true, affinity: true})
}

// domainFilter says which node properties decide whether a node's domain
// counts: its taints (the pod must tolerate them), its labels (the pod's
// node affinity must accept them) and, with launchable, whether its pool's
// limits leave room for one such new node at all (a pool with a zero
// limit still counts as a domain of a spread, but no pod can be sent
// there).
//
// With fits, only offerings whose nodes have room for the pod count.
type domainFilter struct{ taints, affinity, launchable, fits bool }

// spreadFilter is the filter of a spread constraint's domains, from its
// nodeTaintsPolicy (Ignore by default) and nodeAffinityPolicy (Honor by
// default), as kube-scheduler reads them.
func spreadFilter(c *TopologySpread) domainFilter {
	return domainFilter{taints: c.NodeTaintsPolicy == "Honor", affinity: c.NodeAffinityPolicy != "Ignore"}
}

// findDomains lists the values of key on the nodes the pod could get: new
// nodes of offerings some pool allows (every value a pool may give a key
// it decides, see poolKeyValues) and existing nodes, filtered as f says.
// The cheapest domains come first: ordered by what the pod would cost
// on its best offering there (price times the largest share of the node it
// takes), then by name.
func (s *state) findDomains(pod *Pod, key string, f domainFilter) []string {
	cells := s.findCells(pod, []string{key}, f)
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = c.values[0]
	}
	return out
}

// poolHolds reports whether pool pi's limits, less what its nodes use,
// leave room for one node of the given capacity.
func (s *state) poolHolds(pi int, capacity Resources) bool {
	pool := &s.p.Pools[pi]
	for r := range capacity {
		if pool.HasLimit[r] && capacity[r] > 0 && pool.Limits[r]-pool.Used[r] < capacity[r] {
			return false
		}
	}
	return true
}
