package solver

import "strconv"

// Labels is how the solver reads a node's labels: a lookup rather than a map,
// so that candidate nodes can layer offering, pool and instance-type labels
// without building a map per combination.
type Labels interface {
	Label(key string) (string, bool)
}

// MapLabels adapts a plain map to Labels.
type MapLabels map[string]string

// Label implements Labels.
func (m MapLabels) Label(key string) (string, bool) {
	v, ok := m[key]
	return v, ok
}

// Matches reports whether labels satisfy the requirement, with the
// semantics of Kubernetes node selector requirements.
func (r *Requirement) Matches(labels Labels) bool {
	v, ok := labels.Label(r.Key)
	switch r.Operator {
	case OpIn:
		return ok && contains(r.Values, v)
	case OpNotIn:
		return !ok || !contains(r.Values, v)
	case OpExists:
		return ok
	case OpDoesNotExist:
		return !ok
	case OpGt, OpLt:
		if !ok || len(r.Values) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(v, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == OpGt {
			return have > want
		}
		return have < want
	}
	return false
}

// Matches reports whether labels satisfy every requirement of the term. As in
// Kubernetes, an empty term matches nothing.
func (t Term) Matches(labels Labels) bool {
	if len(t) == 0 {
		return false
	}
	for i := range t {
		if !t[i].Matches(labels) {
			return false
		}
	}
	return true
}

// matchesAffinity reports whether labels satisfy the node selector and one of
// the terms (no terms: any node).
func matchesAffinity(selector map[string]string, terms []Term, labels Labels) bool {
	for k, want := range selector {
		if v, ok := labels.Label(k); !ok || v != want {
			return false
		}
	}
	if len(terms) == 0 {
		return true
	}
	for _, t := range terms {
		if t.Matches(labels) {
			return true
		}
	}
	return false
}

func contains(values []string, v string) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}

// Tolerates reports whether the toleration tolerates the taint, with the
// semantics of Kubernetes (an empty key with Exists tolerates everything; an
// empty effect matches every effect).
func (t *Toleration) Tolerates(taint *Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case "Exists":
		return true
	case "", "Equal":
		return t.Key != "" && t.Value == taint.Value
	}
	return false
}

// untolerated returns the first NoSchedule or NoExecute taint that no
// toleration tolerates, or nil. PreferNoSchedule taints never block.
func untolerated(tolerations []Toleration, taints []Taint) *Taint {
	for i := range taints {
		taint := &taints[i]
		if taint.Effect == EffectPreferNoSchedule {
			continue
		}
		ok := false
		for j := range tolerations {
			if tolerations[j].Tolerates(taint) {
				ok = true
				break
			}
		}
		if !ok {
			return taint
		}
	}
	return nil
}
