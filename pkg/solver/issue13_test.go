package solver_test

import (
	"strings"
	"testing"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// threeZoneTypes is testTypes with zone-c offered too, at zone-a's prices.
func threeZoneTypes() []InstanceType {
	types := testTypes()
	for i := range types {
		var extra []Offering
		for _, o := range types[i].Offerings {
			if o.Zone == "zone-a" {
				o.Zone = "zone-c"
				extra = append(extra, o)
			}
		}
		types[i].Offerings = append(types[i].Offerings, extra...)
	}
	return types
}

// inZones is a node affinity term allowing only the given zones.
func inZones(zones ...string) []Term {
	return []Term{{{Key: LabelZone, Operator: OpIn, Values: zones}}}
}

// TestSpreadCountsEachPodsOwnDomains (issue #13): a required zonal spread
// shared by workloads with different node affinity is judged, for each
// pod, over the domains that pod's own node affinity admits
// (nodeAffinityPolicy Honor), as kube-scheduler's PodTopologySpread filter
// does; and a domain whose pool cannot launch a node still counts in the
// skew but receives no pods. Each case is a conformance scenario of
// test/conformance/testdata/karpenter-topology.yaml, written from
// kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/topology_test.go.
func TestSpreadCountsEachPodsOwnDomains(t *testing.T) {
	small := res(250, gi/2)
	shared := Selector{MatchLabels: map[string]string{"test": "test"}}
	zoneSpread := TopologySpread{MaxSkew: 1, TopologyKey: LabelZone, WhenUnsatisfiable: DoNotSchedule, Selector: shared}
	workload := func(name string, n int, f func(*Pod)) []Pod {
		return labelled(name, n, small, func(p *Pod) {
			p.Labels["test"] = "test"
			p.Spread = []TopologySpread{zoneSpread}
			if f != nil {
				f(p)
			}
		})
	}
	disabled := Pool{Name: "disabled", Requirements: []Requirement{{Key: LabelZone, Operator: OpIn, Values: []string{"zone-c"}}}}
	disabled.HasLimit[CPU] = true // a zero CPU limit: no node can launch
	tests := []struct {
		name    string
		pods    []Pod
		pools   []Pool
		pending int
		zones   map[string]int
	}{
		{
			// Karpenter: Combined Zonal Topology and Node Affinity
			// It("should limit spread options by nodeSelector").
			name: "node selectors limit each workload to its own zone",
			pods: append(workload("z1", 5, func(p *Pod) { p.NodeSelector = map[string]string{LabelZone: "zone-a"} }),
				workload("z2", 10, func(p *Pod) { p.NodeSelector = map[string]string{LabelZone: "zone-b"} })...),
			zones: map[string]int{"zone-a": 5, "zone-b": 10},
		},
		{
			// Karpenter: Combined Zonal Topology and Node Affinity
			// It("should limit spread options by required node
			// affinity"), its three rounds at once.
			name: "required node affinity limits, then an open workload fills",
			pods: append(append(workload("a", 6, func(p *Pod) { p.Affinity = inZones("zone-a", "zone-b") }),
				workload("b", 1, func(p *Pod) { p.Affinity = inZones("zone-b", "zone-c") })...),
				workload("c", 5, nil)...),
			zones: map[string]int{"zone-a": 4, "zone-b": 4, "zone-c": 4},
		},
		{
			// Karpenter: Combined Hostname and Zonal Topology
			// It("should spread pods while respecting both constraints"),
			// the first so named: zone-c's pool has a zero CPU limit.
			// Karpenter's simulation counts zone-c as an empty domain and
			// leaves 8 pods pending; the property kept is that zone-c gets
			// no node. Once the two nodes exist, kube-scheduler (which
			// counts only nodes' domains) binds the other pods on them as
			// their room allows, and the plan says so (placePending).
			name: "a zone no pool can grow gets no node; kube-scheduler fills the others",
			pods: workload("web", 10, func(p *Pod) {
				p.Spread = append(p.Spread, TopologySpread{MaxSkew: 1, TopologyKey: LabelHostname, WhenUnsatisfiable: ScheduleAnyway, Selector: shared})
			}),
			pools:   []Pool{{Name: "default", Requirements: []Requirement{{Key: LabelZone, Operator: OpIn, Values: []string{"zone-a", "zone-b"}}}}, disabled},
			pending: 0,
			zones:   map[string]int{"zone-a": 5, "zone-b": 5},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pools := tc.pools
			if pools == nil {
				pools = []Pool{onDemandPool("default")}
			}
			p := &Problem{Pods: tc.pods, Pools: pools, InstanceTypes: threeZoneTypes()}
			plan := solveChecked(t, p)
			if len(plan.Unschedulable) != tc.pending {
				reason := ""
				if len(plan.Unschedulable) > 0 {
					reason = plan.Unschedulable[0].Reason
				}
				t.Errorf("%d pods pending, want %d (%s)", len(plan.Unschedulable), tc.pending, reason)
			}
			zones, _ := zonesOf(plan)
			for z, want := range tc.zones {
				if zones[z] != want {
					t.Errorf("pods per zone %v, want %v", zones, tc.zones)
					break
				}
			}
			if len(zones) != len(tc.zones) {
				t.Errorf("pods per zone %v, want %v", zones, tc.zones)
			}
		})
	}
}

// TestHostnameSelfAffinityAcrossWorkloads (issue #13): workloads whose
// required hostname affinity selects each other's pods share the one node
// the first of them opens; a workload no node can take with the others
// stays pending rather than opening a node of its own. Written from
// kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/topology_test.go,
// It("should respect self pod affinity for first empty topology domain
// only (hostname/constrained zones)").
func TestHostnameSelfAffinityAcrossWorkloads(t *testing.T) {
	small := res(250, gi/2)
	together := func(f func(*Pod)) func(*Pod) {
		return func(p *Pod) {
			p.Labels["security"] = "s2"
			p.PodAffinity = []PodAffinityTerm{{TopologyKey: LabelHostname, Selector: Selector{MatchLabels: map[string]string{"security": "s2"}}}}
			if f != nil {
				f(p)
			}
		}
	}
	tests := []struct {
		name    string
		pods    []Pod
		pending int
	}{
		{
			name: "zone-bound workloads that cannot share a node: the larger gets it",
			pods: append(labelled("z1", 1, small, together(func(p *Pod) { p.NodeSelector = map[string]string{LabelZone: "zone-a"} })),
				labelled("rest", 10, small, together(func(p *Pod) { p.Affinity = inZones("zone-b") }))...),
			pending: 1,
		},
		{
			name:    "workloads that can share a node all go on it",
			pods:    append(labelled("one", 3, small, together(nil)), labelled("two", 4, small, together(nil))...),
			pending: 0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Problem{Pods: tc.pods, Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()}
			plan := solveChecked(t, p)
			if len(plan.NewNodes) != 1 || len(plan.Unschedulable) != tc.pending {
				t.Errorf("%d new nodes, %d pods pending; want 1 node and %d pending", len(plan.NewNodes), len(plan.Unschedulable), tc.pending)
			}
			for _, u := range plan.Unschedulable {
				if !strings.Contains(u.Reason, "on one node") {
					t.Errorf("reason %q, want one saying the pods share one node", u.Reason)
				}
			}
		})
	}
}
