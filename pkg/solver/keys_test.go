package solver

import (
	"encoding/json"
	"testing"
)

// TestKeysAgreeWithJSON: the hand-built grouping keys tell two pods (or
// spread scopes) apart exactly when encoding/json, which built them
// before, does: nil and empty lists apart where JSON writes null, together
// inside omitempty fields; map order irrelevant.
func TestKeysAgreeWithJSON(t *testing.T) {
	sel := Selector{MatchLabels: map[string]string{"app": "a", "tier": "b"}}
	selSwapped := Selector{MatchLabels: map[string]string{"tier": "b", "app": "a"}}
	spread := TopologySpread{MaxSkew: 1, TopologyKey: LabelZone, WhenUnsatisfiable: DoNotSchedule, Selector: sel}
	term := PodAffinityTerm{Selector: sel, TopologyKey: LabelHostname}
	pods := map[string]Pod{
		"plain":             {Namespace: "default"},
		"other namespace":   {Namespace: "other"},
		"spread":            {Namespace: "default", Spread: []TopologySpread{spread}},
		"spread swapped":    {Namespace: "default", Spread: []TopologySpread{{MaxSkew: 1, TopologyKey: LabelZone, WhenUnsatisfiable: DoNotSchedule, Selector: selSwapped}}},
		"spread skew 2":     {Namespace: "default", Spread: []TopologySpread{{MaxSkew: 2, TopologyKey: LabelZone, WhenUnsatisfiable: DoNotSchedule, Selector: sel}}},
		"spread empty":      {Namespace: "default", Spread: []TopologySpread{}},
		"spread min dom":    {Namespace: "default", Spread: []TopologySpread{{MaxSkew: 1, TopologyKey: LabelZone, WhenUnsatisfiable: DoNotSchedule, Selector: sel, MinDomains: 2}}},
		"anti":              {Namespace: "default", PodAntiAffinity: []PodAffinityTerm{term}},
		"affinity":          {Namespace: "default", PodAffinity: []PodAffinityTerm{term}},
		"anti empty ns":     {Namespace: "default", PodAntiAffinity: []PodAffinityTerm{{Selector: sel, TopologyKey: LabelHostname, Namespaces: []string{}}}},
		"anti ns":           {Namespace: "default", PodAntiAffinity: []PodAffinityTerm{{Selector: sel, TopologyKey: LabelHostname, Namespaces: []string{"x"}}}},
		"anti nil nssel":    {Namespace: "default", PodAntiAffinity: []PodAffinityTerm{{Selector: sel, TopologyKey: LabelHostname, NamespaceSelector: nil}}},
		"anti empty nssel":  {Namespace: "default", PodAntiAffinity: []PodAffinityTerm{{Selector: sel, TopologyKey: LabelHostname, NamespaceSelector: &Selector{}}}},
		"anti empty values": {Namespace: "default", PodAntiAffinity: []PodAffinityTerm{{Selector: Selector{MatchExpressions: []Requirement{{Key: "a", Operator: "Exists", Values: []string{}}}}, TopologyKey: LabelHostname}}},
		"anti nil values":   {Namespace: "default", PodAntiAffinity: []PodAffinityTerm{{Selector: Selector{MatchExpressions: []Requirement{{Key: "a", Operator: "Exists"}}}, TopologyKey: LabelHostname}}},
		"pref spread":       {Namespace: "default", Preferences: []Preference{{Kind: PreferScheduleAnywaySpread, Weight: 1, Spread: &spread}}},
		"pref term":         {Namespace: "default", Preferences: []Preference{{Kind: PreferPodAffinity, Weight: 1, PodTerm: &term}}},
		"pref node":         {Namespace: "default", Preferences: []Preference{{Kind: PreferNodeAffinity, Weight: 1, NodeTerm: Term{{Key: "a", Operator: "In", Values: []string{"x"}}}}}},
		"pref node empty":   {Namespace: "default", Preferences: []Preference{{Kind: PreferNodeAffinity, Weight: 1, NodeTerm: Term{}}}},
		"pref node nil":     {Namespace: "default", Preferences: []Preference{{Kind: PreferNodeAffinity, Weight: 1}}},
		"string boundary":   {Namespace: "def", Spread: []TopologySpread{{MaxSkew: 1, TopologyKey: "ault" + LabelZone, WhenUnsatisfiable: DoNotSchedule, Selector: sel}}},
		"node selector":     {Namespace: "default", NodeSelector: map[string]string{}, Spread: []TopologySpread{spread}},
		"tolerations":       {Namespace: "default", Tolerations: []Toleration{{Key: "k", Operator: "Exists"}}, Spread: []TopologySpread{spread}},
		"affinity empty":    {Namespace: "default", Affinity: []Term{}, Spread: []TopologySpread{spread}},
		"affinity nil term": {Namespace: "default", Affinity: []Term{nil}, Spread: []TopologySpread{spread}},
		"affinity no term":  {Namespace: "default", Affinity: []Term{{}}, Spread: []TopologySpread{spread}},
	}
	oldTopology := func(p *Pod, seen string) string {
		data, _ := json.Marshal([]any{p.Namespace, seen, p.Spread, p.PodAffinity, p.PodAntiAffinity, p.Preferences})
		return string(data)
	}
	oldScope := func(p *Pod, c *TopologySpread) string {
		data, _ := json.Marshal([]any{p.Namespace, c, p.NodeSelector, p.Affinity, p.Tolerations})
		return string(data)
	}
	for na, a := range pods {
		for nb, b := range pods {
			for _, seen := range []string{"|01", "|10"} {
				if got, want := topologyKey(&a, seen) == topologyKey(&b, "|01"), oldTopology(&a, seen) == oldTopology(&b, "|01"); got != want {
					t.Errorf("topologyKey(%q, %s) == topologyKey(%q): %v, JSON says %v", na, seen, nb, got, want)
				}
			}
			if got, want := spreadScope(&a, &spread) == spreadScope(&b, &spread), oldScope(&a, &spread) == oldScope(&b, &spread); got != want {
				t.Errorf("spreadScope(%q) == spreadScope(%q): %v, JSON says %v", na, nb, got, want)
			}
			for i := range a.Spread {
				for j := range b.Spread {
					x, _ := json.Marshal(a.Spread[i].Selector)
					y, _ := json.Marshal(b.Spread[j].Selector)
					if got, want := selectorEqual(&a.Spread[i].Selector, &b.Spread[j].Selector), string(x) == string(y); got != want {
						t.Errorf("selectorEqual(%q, %q): %v, JSON says %v", na, nb, got, want)
					}
				}
			}
		}
	}
}
