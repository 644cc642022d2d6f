package conformance

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestJudge checks the judge itself: each hand-written plan breaks one rule
// (or none), and the judge must name exactly that.
func TestJudge(t *testing.T) {
	types, err := readTypes("testdata/types/karpenter-fake.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const spread = `{name: web, replicas: 2, labels: {app: web}, spec: {topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}]}}`
	const anti = `{name: web, replicas: 2, labels: {app: web}, spec: {affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: web}}}]}}}}`
	const follower = `{name: follower, spec: {affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: db}}}]}}}}`
	node := func(name, typ, zone string, pods ...string) string {
		b, _ := json.Marshal(map[string]any{
			"name": name, "instanceType": typ, "capacityType": "on-demand", "zone": zone, "nodePool": "default", "pricePerHour": 0.8295,
			"pods": pods, "allocatable": map[string]string{"cpu": "4", "memory": "4Gi", "pods": "5"},
			"labels": map[string]string{labelInstanceType: typ, labelZone: zone, labelCapacityType: "on-demand", labelNodePool: "default", labelArch: "amd64", labelOS: "linux"},
		})
		return string(b)
	}
	tests := []struct {
		name      string
		workloads []string
		pools     string
		nodes     []string
		pending   []string
		want      string // "" for a plan the judge accepts
	}{
		{"spread across zones is accepted", []string{spread}, "", []string{node("new-1", "default-instance-type", "test-zone-1", "default/web-0"), node("new-2", "default-instance-type", "test-zone-2", "default/web-1")}, nil, ""},
		{"two pods in one zone while others are empty break the spread", []string{spread}, "", []string{node("new-1", "default-instance-type", "test-zone-1", "default/web-0", "default/web-1")}, nil, "skew 2 > maxSkew 1"},
		{"a hostname spread shared by two workloads on one node is caught", []string{`{name: a, labels: {app: web}, spec: {topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}]}}`, `{name: b, labels: {app: web}, spec: {topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}]}}`}, "", []string{node("new-1", "default-instance-type", "test-zone-1", "default/a-0", "default/b-0")}, nil, "skew 2 > maxSkew 1"},
		{"minDomains above the zones there are makes the minimum zero", []string{`{name: web, replicas: 4, labels: {app: web}, spec: {topologySpreadConstraints: [{maxSkew: 1, minDomains: 3, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}]}}`}, `[{name: default, requirements: [{key: topology.kubernetes.io/zone, operator: In, values: [test-zone-1, test-zone-2]}]}]`, []string{node("new-1", "default-instance-type", "test-zone-1", "default/web-0", "default/web-1"), node("new-2", "default-instance-type", "test-zone-2", "default/web-2", "default/web-3")}, nil, "skew 2 > maxSkew 1"},
		{"matchLabelKeys keeps two revisions apart", []string{`{name: a, labels: {app: web, rev: a}, spec: {topologySpreadConstraints: [{maxSkew: 1, matchLabelKeys: [rev], topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}]}}`, `{name: b, labels: {app: web, rev: b}, spec: {topologySpreadConstraints: [{maxSkew: 1, matchLabelKeys: [rev], topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}]}}`}, "", []string{node("new-1", "default-instance-type", "test-zone-1", "default/a-0", "default/b-0")}, nil, ""},
		{"a self-affine group split over two zones is caught", []string{`{name: web, replicas: 4, labels: {app: web}, spec: {affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: topology.kubernetes.io/zone, labelSelector: {matchLabels: {app: web}}}]}}}}`}, "", []string{node("new-1", "default-instance-type", "test-zone-1", "default/web-0", "default/web-1"), node("new-2", "default-instance-type", "test-zone-2", "default/web-2", "default/web-3")}, nil, "split"},
		{"a node selector the node does not meet is caught", []string{`{name: web, spec: {nodeSelector: {kubernetes.io/arch: arm64}}}`}, "", []string{node("new-1", "default-instance-type", "test-zone-1", "default/web-0")}, nil, "node affinity/selector not satisfied"},
		{"anti-affine pods on one node are caught", []string{anti}, "", []string{node("new-1", "default-instance-type", "test-zone-1", "default/web-0", "default/web-1")}, nil, "anti-affinity"},
		{"affinity without its target is caught", []string{`{name: db, labels: {app: db}}`, follower}, "", []string{node("new-1", "default-instance-type", "test-zone-1", "default/db-0"), node("new-2", "default-instance-type", "test-zone-1", "default/follower-0")}, nil, "no matching pod"},
		{"too many pods for the node", []string{`{name: web, replicas: 6}`}, "", []string{node("new-1", "default-instance-type", "test-zone-1", "default/web-0", "default/web-1", "default/web-2", "default/web-3", "default/web-4", "default/web-5")}, nil, "6 pods > allocatable 5"},
		{"a pod left out of the plan", []string{`{name: web, replicas: 2}`}, "", []string{node("new-1", "default-instance-type", "test-zone-1", "default/web-0")}, nil, "neither placed nor pending"},
		{"an offering the type does not have", []string{`{name: web}`}, "", []string{node("new-1", "default-instance-type", "moon-1", "default/web-0")}, nil, "no on-demand offering"},
		{"an untolerated pool taint", []string{`{name: web}`}, `[{name: default, taints: [{key: dedicated, value: x, effect: NoSchedule}]}]`, []string{node("new-1", "default-instance-type", "test-zone-1", "default/web-0")}, nil, "pool taint dedicated"},
		{"a node outside the pool's zones", []string{`{name: web}`}, `[{name: default, requirements: [{key: topology.kubernetes.io/zone, operator: In, values: [test-zone-2]}]}]`, []string{node("new-1", "default-instance-type", "test-zone-1", "default/web-0")}, nil, "break pool default's requirements"},
		{"an unexpected pending pod", []string{`{name: web}`}, "", nil, []string{"default/web-0"}, "1 of 1 pods pending, want 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sc scenario
			pools := tt.pools
			if pools == "" {
				pools = "[{name: default}]"
			}
			src := "{name: x, source: x, pools: " + pools + ", workloads: [" + strings.Join(tt.workloads, ", ") + "]}"
			if err := yaml.UnmarshalStrict([]byte(src), &sc); err != nil {
				t.Fatal(err)
			}
			var p plan
			unsched := make([]string, len(tt.pending))
			for i, k := range tt.pending {
				unsched[i] = `{"pod": "` + k + `", "reason": "no"}`
			}
			raw := `{"nodes": [` + strings.Join(tt.nodes, ",") + `], "unschedulable": [` + strings.Join(unsched, ",") + `]}`
			if err := json.Unmarshal([]byte(raw), &p); err != nil {
				t.Fatal(err)
			}
			errs := (&judge{sc: &sc, pods: sc.pods(), types: types, plan: &p}).check()
			got := strings.Join(errs, "; ")
			switch {
			case tt.want == "" && len(errs) > 0:
				t.Errorf("judge rejected a correct plan: %s", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("judge said %q, want it to mention %q", got, tt.want)
			}
		})
	}
}
