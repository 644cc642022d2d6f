package snapshot

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// podTopology converts a pod spec's topology spread constraints, pod
// (anti-)affinity and preferences into the solver's model. where prefixes
// warnings about what cannot be carried over; path is the spec's field path.
func (m *Manifests) podTopology(where, path string, spec *corev1.PodSpec, p *solver.Pod) error {
	for i, c := range spec.TopologySpreadConstraints {
		cp := fmt.Sprintf("%s.topologySpreadConstraints[%d]", path, i)
		if c.MaxSkew < 1 {
			return fmt.Errorf("%s.maxSkew: must be at least 1, got %d", cp, c.MaxSkew)
		}
		if c.TopologyKey == "" {
			return fmt.Errorf("%s.topologyKey: required", cp)
		}
		sel, err := selector(cp+".labelSelector", c.LabelSelector)
		if err != nil {
			return err
		}
		spread := solver.TopologySpread{MaxSkew: c.MaxSkew, TopologyKey: c.TopologyKey, Selector: sel}
		if c.MinDomains != nil {
			spread.MinDomains = *c.MinDomains
		}
		if c.NodeAffinityPolicy != nil {
			spread.NodeAffinityPolicy = string(*c.NodeAffinityPolicy)
		}
		if c.NodeTaintsPolicy != nil {
			spread.NodeTaintsPolicy = string(*c.NodeTaintsPolicy)
		}
		switch c.WhenUnsatisfiable {
		case corev1.DoNotSchedule:
			spread.WhenUnsatisfiable = solver.DoNotSchedule
			p.Spread = append(p.Spread, spread)
		case corev1.ScheduleAnyway:
			spread.WhenUnsatisfiable = solver.ScheduleAnyway
			p.Preferences = append(p.Preferences, solver.Preference{Kind: solver.PreferScheduleAnywaySpread, Weight: 1, Spread: &spread})
		default:
			return fmt.Errorf("%s.whenUnsatisfiable: unsupported value %q (want DoNotSchedule or ScheduleAnyway)", cp, c.WhenUnsatisfiable)
		}
	}
	if len(p.Labels) > 0 {
		resolveMatchLabelKeys(spec, p)
	}
	a := spec.Affinity
	if a == nil {
		return nil
	}
	var err error
	if a.PodAffinity != nil {
		if p.PodAffinity, err = m.podTerms(where, path+".affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution", a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution); err != nil {
			return err
		}
		if err := m.preferredPodTerms(where, path+".affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution", solver.PreferPodAffinity, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution, p); err != nil {
			return err
		}
	}
	if a.PodAntiAffinity != nil {
		if p.PodAntiAffinity, err = m.podTerms(where, path+".affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution", a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution); err != nil {
			return err
		}
		if err := m.preferredPodTerms(where, path+".affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution", solver.PreferPodAntiAffinity, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, p); err != nil {
			return err
		}
	}
	if a.NodeAffinity != nil {
		for i, pref := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			pp := fmt.Sprintf("%s.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[%d]", path, i)
			if pref.Weight < 1 || pref.Weight > 100 {
				return fmt.Errorf("%s.weight: must be 1-100, got %d", pp, pref.Weight)
			}
			var term solver.Term
			for k, e := range pref.Preference.MatchExpressions {
				r, err := nodeRequirement(fmt.Sprintf("%s.preference.matchExpressions[%d]", pp, k), e.Key, string(e.Operator), e.Values)
				if err != nil {
					return err
				}
				term = append(term, r)
			}
			if len(term) > 0 {
				p.Preferences = append(p.Preferences, solver.Preference{Kind: solver.PreferNodeAffinity, Weight: pref.Weight, NodeTerm: term})
			}
		}
	}
	return nil
}

// resolveMatchLabelKeys adds to each converted spread constraint's selector
// the pod's own value of every key in its matchLabelKeys (a key the pod does
// not carry is skipped), as kube-scheduler does when it reads the
// constraint. podTopology calls it when the pod's labels are known; callers
// that set the labels afterwards call it then.
func resolveMatchLabelKeys(spec *corev1.PodSpec, p *solver.Pod) {
	hard, soft := 0, 0
	var prefs []*solver.TopologySpread
	for i := range p.Preferences {
		if p.Preferences[i].Kind == solver.PreferScheduleAnywaySpread && p.Preferences[i].Spread != nil {
			prefs = append(prefs, p.Preferences[i].Spread)
		}
	}
	for _, c := range spec.TopologySpreadConstraints {
		var sp *solver.TopologySpread
		switch c.WhenUnsatisfiable {
		case corev1.DoNotSchedule:
			if hard < len(p.Spread) {
				sp = &p.Spread[hard]
			}
			hard++
		case corev1.ScheduleAnyway:
			if soft < len(prefs) {
				sp = prefs[soft]
			}
			soft++
		}
		if sp == nil {
			continue
		}
		for _, key := range c.MatchLabelKeys {
			if v, ok := p.Labels[key]; ok {
				sp.Selector.MatchExpressions = append(sp.Selector.MatchExpressions, solver.Requirement{Key: key, Operator: solver.OpIn, Values: []string{v}})
			}
		}
	}
}

// podTerms converts required pod (anti-)affinity terms.
func (m *Manifests) podTerms(where, path string, terms []corev1.PodAffinityTerm) ([]solver.PodAffinityTerm, error) {
	var out []solver.PodAffinityTerm
	for i, t := range terms {
		tp := fmt.Sprintf("%s[%d]", path, i)
		term, err := m.podTerm(where, tp, &t)
		if err != nil {
			return nil, err
		}
		out = append(out, term)
	}
	return out, nil
}

func (m *Manifests) preferredPodTerms(where, path, kind string, terms []corev1.WeightedPodAffinityTerm, p *solver.Pod) error {
	for i, w := range terms {
		tp := fmt.Sprintf("%s[%d]", path, i)
		if w.Weight < 1 || w.Weight > 100 {
			return fmt.Errorf("%s.weight: must be 1-100, got %d", tp, w.Weight)
		}
		term, err := m.podTerm(where, tp+".podAffinityTerm", &w.PodAffinityTerm)
		if err != nil {
			return err
		}
		p.Preferences = append(p.Preferences, solver.Preference{Kind: kind, Weight: w.Weight, PodTerm: &term})
	}
	return nil
}

func (m *Manifests) podTerm(where, path string, t *corev1.PodAffinityTerm) (solver.PodAffinityTerm, error) {
	if t.TopologyKey == "" {
		return solver.PodAffinityTerm{}, fmt.Errorf("%s.topologyKey: required", path)
	}
	sel, err := selector(path+".labelSelector", t.LabelSelector)
	if err != nil {
		return solver.PodAffinityTerm{}, err
	}
	term := solver.PodAffinityTerm{Selector: sel, TopologyKey: t.TopologyKey, Namespaces: append([]string(nil), t.Namespaces...)}
	if t.NamespaceSelector != nil {
		nsSel, err := selector(path+".namespaceSelector", t.NamespaceSelector)
		if err != nil {
			return solver.PodAffinityTerm{}, err
		}
		term.NamespaceSelector = &nsSel
		for _, k := range selectorKeys(nsSel) {
			if k != solver.LabelNamespaceName {
				m.warnf(where, "%s.namespaceSelector: namespace labels other than %s are not read yet; key %q matches no namespace", path, solver.LabelNamespaceName, k)
				break
			}
		}
	}
	if t.TopologyKey != solver.LabelZone && t.TopologyKey != solver.LabelHostname {
		m.warnf(where, "%s: topology key %q is not modelled (only %s and %s); ignored", path, t.TopologyKey, solver.LabelZone, solver.LabelHostname)
	}
	return term, nil
}

// selectorKeys are the label keys a selector reads.
func selectorKeys(sel solver.Selector) []string {
	var keys []string
	for k := range sel.MatchLabels {
		keys = append(keys, k)
	}
	for _, r := range sel.MatchExpressions {
		keys = append(keys, r.Key)
	}
	return keys
}

// selector converts a label selector; nil selects nothing, as in Kubernetes,
// which the solver's empty selector cannot say, so it becomes a requirement
// no label satisfies.
func selector(path string, ls *metav1.LabelSelector) (solver.Selector, error) {
	if ls == nil {
		return solver.Selector{MatchExpressions: []solver.Requirement{{Key: "rightsize.dev/matches-nothing", Operator: solver.OpExists}}}, nil
	}
	sel := solver.Selector{MatchLabels: maps.Clone(ls.MatchLabels)}
	for i, e := range ls.MatchExpressions {
		ep := fmt.Sprintf("%s.matchExpressions[%d]", path, i)
		switch e.Operator {
		case metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn:
			if len(e.Values) == 0 {
				return sel, fmt.Errorf("%s.values: required for operator %s", ep, e.Operator)
			}
		case metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist:
			if len(e.Values) > 0 {
				return sel, fmt.Errorf("%s.values: must be empty for operator %s", ep, e.Operator)
			}
		default:
			return sel, fmt.Errorf("%s.operator: unsupported value %q (want In, NotIn, Exists or DoesNotExist)", ep, e.Operator)
		}
		sel.MatchExpressions = append(sel.MatchExpressions, solver.Requirement{Key: e.Key, Operator: string(e.Operator), Values: append([]string(nil), e.Values...)})
	}
	return sel, nil
}
