package snapshot

import (
	"reflect"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TestDecodeSpreadPolicies: matchLabelKeys is resolved into the selector
// from the pod's own labels (a key the pod lacks is skipped), nodeTaintsPolicy
// is carried over, and a spread on a key other than zone and hostname is
// kept without a warning.
func TestDecodeSpreadPolicies(t *testing.T) {
	in := `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web, track: canary}
    spec:
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [track, absent], nodeTaintsPolicy: Honor}
      - {maxSkew: 1, topologyKey: karpenter.sh/capacity-type, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [track]}
      containers: [{name: c}]
`
	m := &Manifests{}
	if err := Decode("in.yaml", []byte(in), m); err != nil {
		t.Fatal(err)
	}
	if len(m.Warnings) != 0 {
		t.Errorf("warnings %v, want none", m.Warnings)
	}
	canary := solver.Selector{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []solver.Requirement{{Key: "track", Operator: solver.OpIn, Values: []string{"canary"}}}}
	for _, p := range m.Pods {
		want := []solver.TopologySpread{{MaxSkew: 1, TopologyKey: solver.LabelZone, WhenUnsatisfiable: solver.DoNotSchedule, Selector: canary, NodeTaintsPolicy: "Honor"}}
		if !reflect.DeepEqual(p.Spread, want) {
			t.Errorf("%s: spread %+v, want %+v", p.Name, p.Spread, want)
		}
		if len(p.Preferences) != 1 || p.Preferences[0].Spread == nil || !reflect.DeepEqual(p.Preferences[0].Spread.Selector, canary) ||
			p.Preferences[0].Spread.TopologyKey != solver.LabelCapacityType {
			t.Errorf("%s: preferences %+v, want the capacity-type spread with selector %+v", p.Name, p.Preferences, canary)
		}
	}
}

// TestDecodeNamespaceSelector: a pod affinity term's namespaceSelector is
// carried over (an empty one selects every namespace), with a warning only
// for namespace labels the snapshot does not read.
func TestDecodeNamespaceSelector(t *testing.T) {
	tests := []struct {
		name, selector string
		want           solver.Selector
		warnings       int
	}{
		{"empty", "{}", solver.Selector{}, 0},
		{"by name", "{matchLabels: {kubernetes.io/metadata.name: data}}", solver.Selector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "data"}}, 0},
		{"by another label", "{matchLabels: {team: data}}", solver.Selector{MatchLabels: map[string]string{"team": "data"}}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, labels: {app: web}}
spec:
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: db}}, namespaceSelector: ` + tc.selector + `}
  containers: [{name: c}]
`
			m := &Manifests{}
			if err := Decode("in.yaml", []byte(in), m); err != nil {
				t.Fatal(err)
			}
			terms := m.Pods[0].PodAntiAffinity
			if len(terms) != 1 || terms[0].NamespaceSelector == nil || !reflect.DeepEqual(*terms[0].NamespaceSelector, tc.want) {
				t.Errorf("terms %+v, want namespace selector %+v", terms, tc.want)
			}
			if len(m.Warnings) != tc.warnings {
				t.Errorf("warnings %v, want %d", m.Warnings, tc.warnings)
			}
		})
	}
}
