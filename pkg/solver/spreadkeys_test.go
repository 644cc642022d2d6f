package solver_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// countBy counts the placed pods of the plan's new nodes per value of key
// (the zone, the capacity type, or a label the node carries).
func countBy(plan *Plan, key string) map[string]int {
	out := map[string]int{}
	for _, n := range plan.NewNodes {
		v := n.Labels[key]
		switch key {
		case LabelZone:
			v = n.Zone
		case LabelCapacityType:
			v = n.CapacityType
		}
		out[v] += len(n.Pods)
	}
	return out
}

// TestSpreadOverPoolKeys (issue #13): a NodePool requirement on a key the
// pool decides (not a zone, capacity type or instance-type label) with
// several values gives one value per node, so a spread over that key has
// every value as a domain; with nodeTaintsPolicy Honor, each workload's
// domains are those of the pools it tolerates. Each case is a conformance
// scenario of test/conformance/testdata/karpenter-topology.yaml, written
// from kubernetes-sigs/karpenter
// pkg/controllers/provisioning/scheduling/topology_test.go.
func TestSpreadOverPoolKeys(t *testing.T) {
	small := res(250, gi/2)
	shared := Selector{MatchLabels: map[string]string{"test": "test"}}
	spread := func(key, taintsPolicy string) func(*Pod) {
		return func(p *Pod) {
			p.Labels["test"] = "test"
			p.Spread = []TopologySpread{{MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: DoNotSchedule, NodeTaintsPolicy: taintsPolicy, Selector: shared}}
		}
	}
	in := func(key string, values ...string) Requirement {
		return Requirement{Key: key, Operator: OpIn, Values: values}
	}
	tainted := func(name, value string, domains ...string) Pool {
		return Pool{Name: name, Taints: []Taint{{Key: "taint-key", Value: value, Effect: EffectNoSchedule}},
			Requirements: []Requirement{in("fake-label", domains...)}}
	}
	tolerating := func(value string, f func(*Pod)) func(*Pod) {
		return func(p *Pod) {
			f(p)
			p.Tolerations = []Toleration{{Key: "taint-key", Value: value, Effect: EffectNoSchedule}}
		}
	}
	tests := []struct {
		name  string
		pools []Pool
		pods  []Pod
		key   string
		want  map[string]int // placed pods per value of key
		// wantBy are further counts, per key.
		wantBy map[string]map[string]int
	}{
		{
			// Karpenter: Combined Hostname and Zonal Topology It("should
			// balance pods across NodePool requirements").
			name: "a pool requirement with four values gives four domains",
			pools: []Pool{
				{Name: "spot", Requirements: []Requirement{in(LabelCapacityType, "spot"), in("capacity.spread.4-1", "2", "3", "4", "5")}},
				{Name: "on-demand", Requirements: []Requirement{in(LabelCapacityType, "on-demand"), in("capacity.spread.4-1", "1")}},
			},
			pods:   labelled("web", 20, small, spread("capacity.spread.4-1", "")),
			key:    "capacity.spread.4-1",
			want:   map[string]int{"1": 4, "2": 4, "3": 4, "4": 4, "5": 4},
			wantBy: map[string]map[string]int{LabelCapacityType: {"spot": 16, "on-demand": 4}},
		},
		{
			// Karpenter: NodeTaintsPolicy It("should balance pods across a
			// label when mutually exclusive NodePools (by taints) share
			// domains (NodeTaintsPolicy=honor)"). Each workload counts only
			// the nodes of the pool it tolerates: one spreads over foo and
			// bar, two over foo and baz.
			name:  "taints honoured: each workload spreads over its own pool's values",
			pools: []Pool{tainted("np-0", "nodepool-0", "foo", "bar"), tainted("np-1", "nodepool-1", "foo", "baz")},
			pods: append(labelled("one", 2, small, tolerating("nodepool-0", spread("fake-label", "Honor"))),
				labelled("two", 4, small, tolerating("nodepool-1", spread("fake-label", "Honor")))...),
			key:  "fake-label",
			want: map[string]int{"foo": 3, "bar": 1, "baz": 2},
		},
		{
			// The same, larger: one's pods on foo are on np-0 nodes, which
			// two's spread does not count.
			name:  "taints honoured: another pool's pods in a shared domain do not count",
			pools: []Pool{tainted("np-0", "nodepool-0", "foo", "bar"), tainted("np-1", "nodepool-1", "foo", "baz")},
			pods: append(labelled("one", 4, small, tolerating("nodepool-0", spread("fake-label", "Honor"))),
				labelled("two", 6, small, tolerating("nodepool-1", spread("fake-label", "Honor")))...),
			key:  "fake-label",
			want: map[string]int{"foo": 5, "bar": 2, "baz": 3},
		},
		{
			// Pods another workload's spread selects but which only np-1
			// takes count nowhere in one's spread (taints honoured): one
			// still spreads 1/1 over foo and bar, whatever other's pods on
			// foo.
			name:  "taints honoured: pods on nodes the spread does not count leave it even",
			pools: []Pool{tainted("np-0", "nodepool-0", "foo", "bar"), tainted("np-1", "nodepool-1", "foo", "baz")},
			pods: append(labelled("other", 3, small, tolerating("nodepool-1", func(p *Pod) { p.Labels["test"] = "test"; p.NodeSelector = map[string]string{"fake-label": "foo"} })),
				labelled("one", 2, small, tolerating("nodepool-0", spread("fake-label", "Honor")))...),
			key:  "fake-label",
			want: map[string]int{"foo": 4, "bar": 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Problem{Pods: tc.pods, Pools: tc.pools, InstanceTypes: threeZoneTypes()}
			plan := solveChecked(t, p)
			if len(plan.Unschedulable) > 0 {
				t.Fatalf("%d pods pending (%s), want none", len(plan.Unschedulable), plan.Unschedulable[0].Reason)
			}
			if got := countBy(plan, tc.key); !maps.Equal(got, tc.want) {
				t.Errorf("pods per %s %v, want %v", tc.key, got, tc.want)
			}
			for _, k := range slices.Sorted(maps.Keys(tc.wantBy)) {
				if got := countBy(plan, k); !maps.Equal(got, tc.wantBy[k]) {
					t.Errorf("pods per %s %v, want %v", k, got, tc.wantBy[k])
				}
			}
		})
	}
}

// withoutOfferings returns types without the offerings drop matches.
func withoutOfferings(types []InstanceType, drop func(Offering) bool) []InstanceType {
	for i := range types {
		types[i].Offerings = slices.DeleteFunc(types[i].Offerings, drop)
	}
	return types
}

// spreadOnCapacityTypeAndZone labels a pod test=test and spreads it with
// maxSkew 1 over the capacity type and the zone, both selecting test=test
// (Karpenter's Combined Zonal and Capacity Type Topology pods).
func spreadOnCapacityTypeAndZone(p *Pod) {
	shared := Selector{MatchLabels: map[string]string{"test": "test"}}
	p.Labels["test"] = "test"
	p.Spread = []TopologySpread{
		{MaxSkew: 1, TopologyKey: LabelCapacityType, WhenUnsatisfiable: DoNotSchedule, Selector: shared},
		{MaxSkew: 1, TopologyKey: LabelZone, WhenUnsatisfiable: DoNotSchedule, Selector: shared},
	}
}

// TestSpreadOverZoneAndCapacityType (issue #13): DoNotSchedule spreads on
// the zone and on the capacity type at once, where one zone has no spot
// (as Karpenter's fake cloud provider). Planned key by key, the zones come
// first and the capacity types cannot follow (zones 2/2/1 with on-demand 3
// and spot 2 leave the next pod needing the spot-less zone and spot);
// planned together, every pod is placed with both skews held, in an order
// kube-scheduler can bind. Written from kubernetes-sigs/karpenter
// pkg/controllers/provisioning/scheduling/topology_test.go, Combined Zonal
// and Capacity Type Topology It("should spread pods while respecting both
// constraints") (conformance scenarios combined-zonal-capacity-type-*).
func TestSpreadOverZoneAndCapacityType(t *testing.T) {
	small := res(250, gi/2)
	noSpotInC := func(o Offering) bool { return o.Zone == "zone-c" && o.CapacityType == "spot" }
	// Spot only in zone-a and zone-b, on-demand only in zone-c: each
	// zone-c pod is an on-demand pod, so the capacity types drift apart
	// as the zones fill; five pods is the most both skews allow.
	split := func(o Offering) bool { return (o.Zone == "zone-c") != (o.CapacityType == "on-demand") }
	tests := []struct {
		name          string
		n             int
		drop          func(Offering) bool
		pending       int
		zones, ctypes []int // sorted counts, largest first
	}{
		{name: "8 pods", n: 8, drop: noSpotInC, zones: []int{3, 3, 2}, ctypes: []int{4, 4}},
		{name: "19 pods", n: 19, drop: noSpotInC, zones: []int{7, 6, 6}, ctypes: []int{10, 9}},
		{name: "5 pods", n: 5, drop: noSpotInC, zones: []int{2, 2, 1}, ctypes: []int{3, 2}},
		{name: "zone-c only on-demand, the rest only spot", n: 8, drop: split, pending: 3, zones: []int{2, 2, 1}, ctypes: []int{3, 2}},
	}
	sorted := func(m map[string]int) []int {
		out := slices.Collect(maps.Values(m))
		slices.Sort(out)
		slices.Reverse(out)
		return out
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Problem{Pods: labelled("web", tc.n, small, spreadOnCapacityTypeAndZone), Pools: []Pool{{Name: "default"}},
				InstanceTypes: withoutOfferings(threeZoneTypes(), tc.drop)}
			plan := solveChecked(t, p)
			if len(plan.Unschedulable) != tc.pending {
				t.Fatalf("%d pods pending, want %d", len(plan.Unschedulable), tc.pending)
			}
			for _, u := range plan.Unschedulable {
				if !strings.Contains(u.Reason, "topology spreads on") {
					t.Errorf("reason %q, want one naming the spreads", u.Reason)
				}
			}
			if got := sorted(countBy(plan, LabelZone)); !slices.Equal(got, tc.zones) {
				t.Errorf("pods per zone %v, want %v", countBy(plan, LabelZone), tc.zones)
			}
			if got := sorted(countBy(plan, LabelCapacityType)); !slices.Equal(got, tc.ctypes) {
				t.Errorf("pods per capacity type %v, want %v", countBy(plan, LabelCapacityType), tc.ctypes)
			}
		})
	}
}

// running turns the plan's new nodes into running nodes with their pods,
// as the cluster has them once the plan is carried out.
func running(p *Problem, plan *Plan) []Node {
	var out []Node
	for i, n := range plan.NewNodes {
		labels := map[string]string{LabelZone: n.Zone, LabelCapacityType: n.CapacityType, LabelNodePool: n.Pool,
			LabelInstanceType: n.InstanceType, LabelHostname: fmt.Sprintf("node-%d", i)}
		maps.Copy(labels, n.Labels)
		node := Node{Name: labels[LabelHostname], Pool: n.Pool, InstanceType: n.InstanceType, Zone: n.Zone, CapacityType: n.CapacityType,
			Price: n.Price, Labels: labels, Allocatable: n.Allocatable, Requested: n.Requested}
		for _, pod := range n.Pods {
			node.Pods = append(node.Pods, p.Pods[pod])
		}
		out = append(out, node)
	}
	return out
}

// TestSpreadOverZoneAndCapacityTypeLeavesRoomToGrow (issue #13): of the
// placements of five pods that hold both skews, zones 2/2/1 with
// on-demand 3 and spot 2 where the one-pod zone has no spot takes no
// sixth pod (it would need that zone and spot); the plan leaves a state
// the workload can grow from, so Karpenter's next round of 3 pods
// (topology_test.go, Combined Zonal and Capacity Type Topology, rounds 5
// and 8) is placed in full once the first five run.
func TestSpreadOverZoneAndCapacityTypeLeavesRoomToGrow(t *testing.T) {
	small := res(250, gi/2)
	// As Karpenter's fake cloud provider: no spot in zone-c, and spot at
	// the on-demand price.
	types := withoutOfferings(threeZoneTypes(), func(o Offering) bool { return o.Zone == "zone-c" && o.CapacityType == "spot" })
	for i := range types {
		for j := range types[i].Offerings {
			if o := &types[i].Offerings[j]; o.CapacityType == "spot" {
				o.Price /= 0.6
			}
		}
	}
	first := &Problem{Pods: labelled("web", 5, small, spreadOnCapacityTypeAndZone), Pools: []Pool{{Name: "default"}}, InstanceTypes: types}
	plan := solveChecked(t, first)
	if len(plan.Unschedulable) > 0 {
		t.Fatalf("%d of the first 5 pods pending", len(plan.Unschedulable))
	}
	next := labelled("more", 3, small, spreadOnCapacityTypeAndZone)
	second := &Problem{Pods: next, Nodes: running(first, plan), Pools: first.Pools, InstanceTypes: types}
	again := solveChecked(t, second)
	if len(again.Unschedulable) > 0 {
		t.Errorf("%d of the next 3 pods pending (%s); the first plan put zones %v and capacity types %v",
			len(again.Unschedulable), again.Unschedulable[0].Reason, countBy(plan, LabelZone), countBy(plan, LabelCapacityType))
	}
}
