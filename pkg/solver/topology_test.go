package solver_test

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// labelled gives pods an app label and applies f to each.
func labelled(workload string, n int, req Resources, f func(*Pod)) []Pod {
	ps := pods(workload, n, req)
	for i := range ps {
		ps[i].Labels = map[string]string{"app": workload}
		if f != nil {
			f(&ps[i])
		}
	}
	return ps
}

func self(app string) Selector { return Selector{MatchLabels: map[string]string{"app": app}} }

// zonesOf counts pods per zone and the most pods of the workload on one node.
func zonesOf(plan *Plan) (map[string]int, int) {
	zones := map[string]int{}
	most := 0
	for _, n := range plan.NewNodes {
		zones[n.Zone] += len(n.Pods)
		most = max(most, len(n.Pods))
	}
	return zones, most
}

func TestTopologyConstraints(t *testing.T) {
	small := res(250, gi/2)
	tests := []struct {
		name string
		pods []Pod
		want func(t *testing.T, plan *Plan)
	}{
		{
			name: "zonal spread maxSkew 1 splits evenly",
			pods: labelled("web", 9, small, func(p *Pod) {
				p.Spread = []TopologySpread{{MaxSkew: 1, TopologyKey: LabelZone, WhenUnsatisfiable: DoNotSchedule, Selector: self("web")}}
			}),
			want: func(t *testing.T, plan *Plan) {
				zones, _ := zonesOf(plan)
				if len(zones) != 2 || abs(zones["zone-a"]-zones["zone-b"]) > 1 {
					t.Errorf("pods per zone %v, want an even split over zone-a and zone-b", zones)
				}
			},
		},
		{
			name: "hostname anti-affinity puts one pod per node",
			pods: labelled("db", 4, small, func(p *Pod) {
				p.PodAntiAffinity = []PodAffinityTerm{{TopologyKey: LabelHostname, Selector: self("db")}}
			}),
			want: func(t *testing.T, plan *Plan) {
				if _, most := zonesOf(plan); len(plan.NewNodes) != 4 || most != 1 {
					t.Errorf("%d nodes with at most %d pods, want 4 nodes of one pod", len(plan.NewNodes), most)
				}
				if plan.LowerBound < 4*0.085-1e-9 {
					t.Errorf("lower bound %v ignores the four nodes anti-affinity needs", plan.LowerBound)
				}
			},
		},
		{
			name: "hostname spread maxSkew 2 caps pods per node",
			pods: labelled("api", 10, small, func(p *Pod) {
				p.Spread = []TopologySpread{{MaxSkew: 2, TopologyKey: LabelHostname, WhenUnsatisfiable: DoNotSchedule, Selector: self("api")}}
			}),
			want: func(t *testing.T, plan *Plan) {
				if _, most := zonesOf(plan); most > 2 || len(plan.NewNodes) != 5 {
					t.Errorf("%d nodes, at most %d pods on one, want 5 nodes of 2", len(plan.NewNodes), most)
				}
			},
		},
		{
			name: "zonal self-affinity keeps the group in one zone",
			pods: labelled("cache", 30, res(1000, 2*gi), func(p *Pod) {
				p.PodAffinity = []PodAffinityTerm{{TopologyKey: LabelZone, Selector: self("cache")}}
			}),
			want: func(t *testing.T, plan *Plan) {
				if zones, _ := zonesOf(plan); len(zones) != 1 {
					t.Errorf("pods per zone %v, want one zone", zones)
				}
			},
		},
		{
			name: "zonal anti-affinity allows one pod per zone and explains the rest",
			pods: labelled("leader", 3, small, func(p *Pod) {
				p.PodAntiAffinity = []PodAffinityTerm{{TopologyKey: LabelZone, Selector: self("leader")}}
			}),
			want: func(t *testing.T, plan *Plan) {
				zones, _ := zonesOf(plan)
				if zones["zone-a"] != 1 || zones["zone-b"] != 1 || len(plan.Unschedulable) != 1 {
					t.Errorf("zones %v, %d unschedulable; want one per zone and one refused", zones, len(plan.Unschedulable))
				}
			},
		},
		{
			name: "anti-affinity between two workloads keeps them apart",
			pods: append(labelled("a", 3, small, func(p *Pod) {
				p.PodAntiAffinity = []PodAffinityTerm{{TopologyKey: LabelHostname, Selector: self("b")}}
			}), labelled("b", 3, small, nil)...),
			want: func(t *testing.T, plan *Plan) {
				for i, n := range plan.NewNodes {
					apps := map[string]bool{}
					for _, pi := range n.Pods {
						apps[fmt.Sprint(pi < 3)] = true
					}
					if len(apps) > 1 {
						t.Errorf("node %d mixes a and b pods", i)
					}
				}
			},
		},
		{
			name: "an impossible preferred node affinity is relaxed",
			pods: labelled("web", 2, small, func(p *Pod) {
				p.Preferences = []Preference{{Kind: PreferNodeAffinity, Weight: 50, NodeTerm: Term{{Key: "kubernetes.io/arch", Operator: OpIn, Values: []string{"arm64"}}}}}
			}),
			want: func(t *testing.T, plan *Plan) {
				if len(plan.Unschedulable) != 0 || len(plan.NewNodes) == 0 {
					t.Errorf("want the pods placed, got %d unschedulable", len(plan.Unschedulable))
				}
			},
		},
		{
			name: "a possible preferred node affinity is honoured",
			pods: labelled("web", 2, small, func(p *Pod) {
				p.Preferences = []Preference{{Kind: PreferNodeAffinity, Weight: 50, NodeTerm: Term{{Key: "karpenter.k8s.aws/instance-category", Operator: OpIn, Values: []string{"r"}}}}}
			}),
			want: func(t *testing.T, plan *Plan) {
				for _, n := range plan.NewNodes {
					if n.InstanceType[0] != 'r' {
						t.Errorf("node %s, want an r type as preferred", n.InstanceType)
					}
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Problem{Pods: tc.pods, Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()}
			tc.want(t, solveChecked(t, p))
		})
	}
}

func TestTopologyCountsRunningPods(t *testing.T) {
	running := labelled("web", 4, res(250, gi/2), nil)
	node := Node{Name: "old", Labels: map[string]string{LabelZone: "zone-a", LabelHostname: "old"}, Pods: running}
	node.Allocatable = res(1000, 2*gi) // full: the pending pods cannot join it
	node.Allocatable[Pods] = 4
	node.Requested = node.Allocatable
	pending := labelled("web", 4, res(250, gi/2), func(p *Pod) {
		p.Name += "-new"
		p.Spread = []TopologySpread{{MaxSkew: 1, TopologyKey: LabelZone, WhenUnsatisfiable: DoNotSchedule, Selector: self("web")}}
	})
	p := &Problem{Pods: pending, Nodes: []Node{node}, Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()}
	plan := solveChecked(t, p)
	if zones, _ := zonesOf(plan); zones["zone-b"] != 4 {
		t.Errorf("new pods per zone %v, want all 4 in zone-b to balance the 4 running in zone-a", zones)
	}
}

func abs(x int) int { return max(x, -x) }

// TestPodsNeedingTheirOwnNodeShareItWithOthers: the nodes that hostname
// anti-affinity forces take other pods in their free room instead of those
// pods getting nodes of their own.
func TestPodsNeedingTheirOwnNodeShareItWithOthers(t *testing.T) {
	solo := labelled("solo", 8, res(1000, gi), func(p *Pod) {
		p.PodAntiAffinity = []PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname", Selector: self("solo")}}
	})
	filler := labelled("filler", 8, res(500, gi/2), nil)
	p := &Problem{Pods: append(solo, filler...), Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()}
	plan := solveChecked(t, p)
	if len(plan.NewNodes) != len(solo) {
		t.Errorf("%d nodes %v, want %d: one per solo pod, each with a filler", len(plan.NewNodes), nodeTypes(plan), len(solo))
	}
}

// withLabels sets extra labels on pods.
func withLabels(ps []Pod, kv ...string) []Pod {
	for i := range ps {
		for j := 0; j+1 < len(kv); j += 2 {
			ps[i].Labels[kv[j]] = kv[j+1]
		}
	}
	return ps
}

// TestSelectorsSpanWorkloads: a spread selector matching pods of other
// workloads counts all of them, pending and running, whichever workload
// they belong to (stable and canary both app=web; Karpenter's benchmark,
// where spread pods select a label other pods carry). The checker judges
// the final placement, counting every matching pod.
func TestSelectorsSpanWorkloads(t *testing.T) {
	small := res(250, gi/2)
	zoneSpread := func(p *Pod) {
		p.Spread = []TopologySpread{{MaxSkew: 1, TopologyKey: LabelZone, WhenUnsatisfiable: DoNotSchedule, Selector: self("web")}}
	}
	hostSpread := func(p *Pod) {
		p.Spread = []TopologySpread{{MaxSkew: 1, TopologyKey: LabelHostname, WhenUnsatisfiable: DoNotSchedule, Selector: self("web")}}
	}
	rename := func(suffix string, f func(*Pod)) func(*Pod) {
		return func(p *Pod) {
			p.Name += suffix
			if f != nil {
				f(p)
			}
		}
	}
	tests := []struct {
		name  string
		pods  []Pod
		nodes []Node
		want  func(t *testing.T, plan *Plan)
	}{
		{
			name: "zonal spread of stable counts the unconstrained canary",
			pods: append(withLabels(labelled("web", 6, small, rename("-stable", zoneSpread)), "track", "stable"),
				withLabels(labelled("web", 9, small, rename("-canary", nil)), "track", "canary")...),
		},
		{
			name: "zonal spread whose selector is another workload's label",
			pods: append(labelled("spreader", 6, small, zoneSpread), labelled("web", 9, small, nil)...),
		},
		{
			name: "hostname spread of stable counts the canary on its nodes",
			pods: append(withLabels(labelled("web", 4, small, rename("-stable", hostSpread)), "track", "stable"),
				withLabels(labelled("web", 12, small, rename("-canary", nil)), "track", "canary")...),
		},
		{
			name: "hostname spread whose selector is another workload's label",
			pods: append(labelled("spreader", 4, small, hostSpread), labelled("web", 12, small, nil)...),
		},
		{
			name: "zonal spread counts running pods of another workload",
			pods: labelled("spreader", 4, small, zoneSpread),
			nodes: []Node{{Name: "old", Labels: map[string]string{LabelZone: "zone-a", LabelHostname: "old"},
				Allocatable: res(1000, 2*gi), Requested: res(1000, 2*gi), Pods: labelled("web", 4, small, nil)}},
			want: func(t *testing.T, plan *Plan) {
				if zones, _ := zonesOf(plan); zones["zone-b"] != 4 {
					t.Errorf("new pods per zone %v, want all 4 in zone-b beside the 4 web pods running in zone-a", zones)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Problem{Pods: tc.pods, Nodes: tc.nodes, Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()}
			plan := solveChecked(t, p)
			if len(plan.Unschedulable) > 0 {
				t.Errorf("%d pods unschedulable: %s", len(plan.Unschedulable), plan.Unschedulable[0].Reason)
			}
			if tc.want != nil {
				tc.want(t, plan)
			}
		})
	}
}

// fullNode is an existing node with no room left, so that its zone is a
// domain kube-scheduler counts while the pending pods need new nodes.
func fullNode(name, zone string, taints ...Taint) Node {
	n := Node{Name: name, Labels: map[string]string{LabelZone: zone, LabelHostname: name}, Taints: taints,
		Allocatable: res(1000, 2*gi)}
	n.Requested = n.Allocatable
	return n
}

// placedBy counts placed pods per value of key on their new nodes.
func placedBy(p *Problem, plan *Plan, key string) map[string]int {
	out := map[string]int{}
	for _, n := range plan.NewNodes {
		v := n.Zone
		switch key {
		case LabelCapacityType:
			v = n.CapacityType
		case LabelZone:
		default:
			for _, pool := range p.Pools {
				if pool.Name == n.Pool {
					v = pool.Labels[key]
				}
			}
		}
		out[v] += len(n.Pods)
	}
	return out
}

// TestTopologySpreadDomains: which domains a required spread counts and
// fills, as kube-scheduler's PodTopologySpread filter decides them.
func TestTopologySpreadDomains(t *testing.T) {
	small := res(250, gi/2)
	spread := func(key string, f func(*TopologySpread)) func(*Pod) {
		return func(p *Pod) {
			c := TopologySpread{MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: DoNotSchedule, Selector: self("web")}
			if f != nil {
				f(&c)
			}
			p.Spread = []TopologySpread{c}
		}
	}
	both := func(f ...func(*Pod)) func(*Pod) {
		return func(p *Pod) {
			for _, g := range f {
				g(p)
			}
		}
	}
	anyCapacity := Pool{Name: "default"}
	cheaperB := testTypes()
	for i := range cheaperB {
		for j := range cheaperB[i].Offerings {
			if cheaperB[i].Offerings[j].Zone == "zone-b" {
				cheaperB[i].Offerings[j].Price *= 0.9
			}
		}
	}
	tests := []struct {
		name        string
		pods        []Pod
		nodes       []Node
		pools       []Pool
		types       []InstanceType
		key         string
		want        map[string]int
		unscheduled int
		reason      string // in every unschedulable pod's reason
	}{
		{
			name: "minDomains met fills every domain evenly",
			pods: labelled("web", 10, small, spread(LabelZone, func(c *TopologySpread) { c.MinDomains = 2 })),
			key:  LabelZone, want: map[string]int{"zone-a": 5, "zone-b": 5},
		},
		{
			name: "minDomains above the domains there are allows maxSkew per domain and says so",
			pods: labelled("web", 6, small, spread(LabelZone, func(c *TopologySpread) { c.MinDomains = 3 })),
			key:  LabelZone, want: map[string]int{"zone-a": 1, "zone-b": 1}, unscheduled: 4, reason: "minDomains 3",
		},
		{
			name: "a preferred zone does not shrink the spread's domains",
			pods: labelled("web", 4, small, both(spread(LabelZone, nil), func(p *Pod) {
				p.Preferences = []Preference{{Kind: PreferNodeAffinity, Weight: 50, NodeTerm: Term{{Key: LabelZone, Operator: OpIn, Values: []string{"zone-a"}}}}}
			})),
			nodes: []Node{fullNode("a", "zone-a"), fullNode("b", "zone-b")},
			key:   LabelZone, want: map[string]int{"zone-a": 2, "zone-b": 2},
		},
		{
			name:  "nodeTaintsPolicy Ignore counts a tainted node's zone",
			pods:  labelled("web", 4, small, spread(LabelZone, nil)),
			nodes: []Node{fullNode("b", "zone-b", Taint{Key: "dedicated", Value: "x", Effect: EffectNoSchedule})},
			pools: []Pool{{Name: "a", Requirements: []Requirement{{Key: LabelZone, Operator: OpIn, Values: []string{"zone-a"}}}}},
			key:   LabelZone, want: map[string]int{"zone-a": 1}, unscheduled: 3, reason: "topology spread",
		},
		{
			name:  "nodeTaintsPolicy Honor leaves an untolerated node's zone out",
			pods:  labelled("web", 4, small, spread(LabelZone, func(c *TopologySpread) { c.NodeTaintsPolicy = "Honor" })),
			nodes: []Node{fullNode("b", "zone-b", Taint{Key: "dedicated", Value: "x", Effect: EffectNoSchedule})},
			pools: []Pool{{Name: "a", Requirements: []Requirement{{Key: LabelZone, Operator: OpIn, Values: []string{"zone-a"}}}}},
			key:   LabelZone, want: map[string]int{"zone-a": 4},
		},
		{
			name:  "spread over capacity types splits spot and on-demand",
			pods:  labelled("web", 6, small, spread(LabelCapacityType, nil)),
			pools: []Pool{anyCapacity},
			key:   LabelCapacityType, want: map[string]int{"spot": 3, "on-demand": 3},
		},
		{
			name: "spread over a pool's own label splits the pools",
			pods: labelled("web", 6, small, spread("example.com/pool-group", nil)),
			pools: []Pool{{Name: "x", Labels: map[string]string{"example.com/pool-group": "x"}},
				{Name: "y", Labels: map[string]string{"example.com/pool-group": "y"}}},
			key: "example.com/pool-group", want: map[string]int{"x": 3, "y": 3},
		},
		{
			name: "a DoNotSchedule spread on a key no node can have leaves the pods pending",
			pods: labelled("web", 3, small, spread("example.com/rack", nil)),
			key:  LabelZone, want: map[string]int{}, unscheduled: 3, reason: "example.com/rack",
		},
		{
			name:  "the spread's first zone is the cheapest",
			pods:  labelled("web", 1, small, spread(LabelZone, nil)),
			types: cheaperB,
			key:   LabelZone, want: map[string]int{"zone-b": 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pools, types := tc.pools, tc.types
			if pools == nil {
				pools = []Pool{onDemandPool("default")}
			}
			if types == nil {
				types = testTypes()
			}
			p := &Problem{Pods: tc.pods, Nodes: tc.nodes, Pools: pools, InstanceTypes: types}
			plan := solveChecked(t, p)
			if got := placedBy(p, plan, tc.key); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("pods per %s %v, want %v", tc.key, got, tc.want)
			}
			if len(plan.Unschedulable) != tc.unscheduled {
				t.Errorf("%d unschedulable, want %d: %v", len(plan.Unschedulable), tc.unscheduled, plan.Unschedulable)
			}
			for _, u := range plan.Unschedulable {
				if !strings.Contains(u.Reason, tc.reason) {
					t.Errorf("reason %q does not mention %q", u.Reason, tc.reason)
				}
			}
		})
	}
}

// TestZonalPodAffinityAcrossWorkloads: zonal anti-affinity against other
// pods holds both ways (the pods it selects keep away from its pods too,
// and running pods' anti-affinity keeps new pods out of their zone), and
// zonal affinity to pods pending in the same plan puts the followers in the
// zone their leaders are planned in. The checker judges both.
func TestZonalPodAffinityAcrossWorkloads(t *testing.T) {
	small := res(250, gi/2)
	antiTo := func(app string) func(*Pod) {
		return func(p *Pod) {
			p.PodAntiAffinity = []PodAffinityTerm{{TopologyKey: LabelZone, Selector: self(app)}}
		}
	}
	roomy := Node{Name: "roomy", Labels: map[string]string{LabelZone: "zone-a", LabelHostname: "roomy"}, Allocatable: res(8000, 32*gi)}
	roomy.Allocatable[Pods] = 110
	roomyGuard := roomy
	roomyGuard.Pods = labelled("guard", 1, small, antiTo("web"))
	roomyGuard.Requested = small
	apps := func(plan *Plan, p *Problem) map[string]map[string]bool {
		out := map[string]map[string]bool{}
		note := func(pod int, zone string) {
			app := p.Pods[pod].Labels["app"]
			if out[app] == nil {
				out[app] = map[string]bool{}
			}
			out[app][zone] = true
		}
		for _, n := range plan.NewNodes {
			for _, pod := range n.Pods {
				note(pod, n.Zone)
			}
		}
		for _, e := range plan.Existing {
			note(e.Pod, "zone-a") // the only existing node here
		}
		return out
	}
	tests := []struct {
		name  string
		pods  []Pod
		nodes []Node
		want  func(t *testing.T, zones map[string]map[string]bool)
	}{
		{
			name: "pods anti-affine to another workload's zone keep apart from it",
			pods: append(labelled("a", 3, small, antiTo("b")), labelled("b", 3, small, nil)...),
			want: func(t *testing.T, zones map[string]map[string]bool) {
				for z := range zones["a"] {
					if zones["b"][z] {
						t.Errorf("a and b share zone %s: %v", z, zones)
					}
				}
			},
		},
		{
			name: "pods another workload is anti-affine to keep out of its zone",
			pods: append(labelled("b", 3, small, nil), labelled("a", 3, small, antiTo("b"))...),
			want: func(t *testing.T, zones map[string]map[string]bool) {
				for z := range zones["a"] {
					if zones["b"][z] {
						t.Errorf("a and b share zone %s: %v", z, zones)
					}
				}
			},
		},
		{
			name:  "a running pod's anti-affinity keeps new pods out of its zone",
			pods:  labelled("web", 3, small, nil),
			nodes: []Node{roomyGuard},
			want: func(t *testing.T, zones map[string]map[string]bool) {
				if zones["web"]["zone-a"] {
					t.Errorf("web pods in zone-a beside the running pod that forbids them: %v", zones)
				}
			},
		},
		{
			name: "pods follow a leader pending in the same plan into its zone",
			pods: append(labelled("web", 3, small, func(p *Pod) {
				p.PodAffinity = []PodAffinityTerm{{TopologyKey: LabelZone, Selector: self("db")}}
			}), labelled("db", 2, small, nil)...),
			want: func(t *testing.T, zones map[string]map[string]bool) {
				if len(zones["db"]) != 1 || len(zones["web"]) != 1 || fmt.Sprint(zones["db"]) != fmt.Sprint(zones["web"]) {
					t.Errorf("zones %v, want web in db's one zone", zones)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Problem{Pods: tc.pods, Nodes: tc.nodes, Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()}
			plan := solveChecked(t, p)
			if len(plan.Unschedulable) > 0 {
				t.Errorf("%d pods unschedulable: %s", len(plan.Unschedulable), plan.Unschedulable[0].Reason)
			}
			tc.want(t, apps(plan, p))
		})
	}
}

// TestHostnameSelfAffinity: required pod affinity on the hostname to the
// pod's own group puts the group on one node, as far as one node holds it
// (the rest pending with a sentence), and on the node its running pods are
// on once some run.
func TestHostnameSelfAffinity(t *testing.T) {
	together := func(p *Pod) {
		p.PodAffinity = []PodAffinityTerm{{TopologyKey: LabelHostname, Selector: self("cache")}}
	}
	running := Node{Name: "old", Labels: map[string]string{LabelZone: "zone-a", LabelHostname: "old"}, Allocatable: res(8000, 32*gi),
		Pods: labelled("cache", 1, res(250, gi/2), together)}
	running.Allocatable[Pods] = 110
	running.Requested = res(250, gi/2)
	tests := []struct {
		name        string
		pods        []Pod
		nodes       []Node
		newNodes    int
		existing    int
		unscheduled int
	}{
		{name: "a group that fits one node shares it", pods: labelled("cache", 6, res(1000, 2*gi), together), newNodes: 1},
		{name: "beyond the largest node the rest are pending", pods: labelled("cache", 40, res(2000, 2*gi), together), newNodes: 1, unscheduled: 25},
		{name: "once some run the rest join their node", pods: labelled("cache", 4, res(250, gi/2), func(p *Pod) { together(p); p.Name += "-new" }),
			nodes: []Node{running}, existing: 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Problem{Pods: tc.pods, Nodes: tc.nodes, Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()}
			plan := solveChecked(t, p)
			if len(plan.NewNodes) != tc.newNodes || len(plan.Existing) != tc.existing || len(plan.Unschedulable) != tc.unscheduled {
				t.Errorf("%d new nodes, %d on existing, %d unschedulable; want %d, %d, %d", len(plan.NewNodes), len(plan.Existing), len(plan.Unschedulable), tc.newNodes, tc.existing, tc.unscheduled)
			}
			for _, u := range plan.Unschedulable {
				if !strings.Contains(u.Reason, "on one node") {
					t.Errorf("reason %q, want one saying the group goes on one node", u.Reason)
				}
			}
		})
	}
}

// TestNamespaceSelectors: pod (anti-)affinity terms select pods in the
// namespaces their namespace selector matches (an empty one matches all),
// not only in the pod's own.
func TestNamespaceSelectors(t *testing.T) {
	small := res(250, gi/2)
	inNamespace := func(ns string, ps []Pod) []Pod {
		for i := range ps {
			ps[i].Namespace = ns
		}
		return ps
	}
	tests := []struct {
		name     string
		selector Selector
		apart    map[string]bool // namespaces whose db pods must not share a node with web
	}{
		{"a labelled namespace selector", Selector{MatchLabels: map[string]string{"team": "data"}}, map[string]bool{"data": true}},
		{"the empty namespace selector matches every namespace", Selector{}, map[string]bool{"data": true, "other": true}},
		{"the namespace's name label", Selector{MatchLabels: map[string]string{LabelNamespaceName: "other"}}, map[string]bool{"other": true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sel := tc.selector
			web := inNamespace("shop", labelled("web", 4, small, func(p *Pod) {
				p.PodAntiAffinity = []PodAffinityTerm{{TopologyKey: LabelHostname, Selector: self("db"), NamespaceSelector: &sel}}
			}))
			pods := append(web, inNamespace("data", labelled("db", 4, small, nil))...)
			pods = append(pods, inNamespace("other", labelled("db", 4, small, func(p *Pod) { p.Name += "-other" }))...)
			p := &Problem{Pods: pods, Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes(),
				NamespaceLabels: map[string]map[string]string{"data": {"team": "data"}}}
			plan := solveChecked(t, p)
			for i, n := range plan.NewNodes {
				hasWeb, with := false, map[string]bool{}
				for _, pod := range n.Pods {
					if p.Pods[pod].Labels["app"] == "web" {
						hasWeb = true
					} else {
						with[p.Pods[pod].Namespace] = true
					}
				}
				for ns := range with {
					if hasWeb && tc.apart[ns] {
						t.Errorf("node %d has web beside db of namespace %s", i, ns)
					}
				}
			}
		})
	}
}

// TestZonalSelfAffinityAndAntiAffinity: pods whose required zonal affinity
// and anti-affinity both select their own group can run one at a time
// (kube-scheduler's InterPodAffinity filter: the second would need a
// matching pod in its zone and may have none). The judge (test/e2e,
// seeds 102 and 194) found the solver putting several in one zone.
func TestZonalSelfAffinityAndAntiAffinity(t *testing.T) {
	both := func(p *Pod) {
		p.PodAffinity = []PodAffinityTerm{{TopologyKey: LabelZone, Selector: self("w0")}}
		p.PodAntiAffinity = []PodAffinityTerm{{TopologyKey: LabelZone, Selector: self("w0")}}
	}
	running := Node{Name: "n", Labels: map[string]string{LabelZone: "zone-a", LabelHostname: "n"}, Allocatable: res(8000, 32*gi)}
	running.Allocatable[Pods] = 110
	running.Pods = labelled("w0", 1, res(250, gi/2), both)
	running.Requested = res(250, gi/2)
	// Affinity to another workload's zone with anti-affinity against its
	// own pods: one per zone, only in zones the other workload runs in.
	joinsAndAvoids := func(p *Pod) {
		p.PodAffinity = []PodAffinityTerm{{TopologyKey: LabelZone, Selector: self("w1")}}
		p.PodAntiAffinity = []PodAffinityTerm{{TopologyKey: LabelZone, Selector: self("w0")}}
	}
	w1 := func(zone string) Node {
		n := Node{Name: "w1-" + zone, Labels: map[string]string{LabelZone: zone, LabelHostname: "w1-" + zone}, Allocatable: res(8000, 32*gi)}
		n.Allocatable[Pods] = 110
		n.Pods = labelled("w1", 1, res(250, gi/2), nil)
		n.Requested = res(250, gi/2)
		return n
	}
	tests := []struct {
		name       string
		nodes      []Node
		mutate     func(*Pod)
		wantPlaced int
		why        string
	}{
		{"one of three runs", nil, both, 1, "at most one of them can run"},
		{"none once one runs", []Node{running}, both, 0, "at most one of them can run"},
		{"one per zone the other workload runs in", []Node{w1("zone-a"), w1("zone-b")}, joinsAndAvoids, 2, "one such pod per zone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods := labelled("w0", 3, res(250, gi/2), tc.mutate)
			for i := range pods {
				pods[i].Name = fmt.Sprintf("pending-%d", i)
			}
			p := &Problem{Pods: pods, Nodes: tc.nodes, Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()}
			plan := solveChecked(t, p)
			placed := len(plan.Existing)
			for _, n := range plan.NewNodes {
				placed += len(n.Pods)
			}
			if placed != tc.wantPlaced || len(plan.Unschedulable) != 3-tc.wantPlaced {
				t.Fatalf("placed %d, unschedulable %v; want %d placed", placed, plan.Unschedulable, tc.wantPlaced)
			}
			for _, u := range plan.Unschedulable {
				if !strings.Contains(u.Reason, tc.why) {
					t.Errorf("reason %q does not say why", u.Reason)
				}
			}
		})
	}
}

// TestZonalSelfAffinityAcrossWorkloads (issue #13): workloads whose
// required zonal affinity selects each other's pods share the zone the
// first of them starts; kube-scheduler lets a pod start a zone of its own
// only while no pod the term selects runs, so a workload whose node
// affinity rules that zone out stays pending, saying where the pods it
// must join are. Written from kubernetes-sigs/karpenter
// pkg/controllers/provisioning/scheduling/topology_test.go, It("should
// allow two nodes to be created when two pods with matching affinities
// have incompatible selectors") (conformance scenario
// affinity-self-zone-incompatible-selectors; Karpenter places both).
func TestZonalSelfAffinityAcrossWorkloads(t *testing.T) {
	small := res(250, gi/2)
	together := func(zones ...string) func(*Pod) {
		return func(p *Pod) {
			p.Labels["security"] = "s1"
			p.PodAffinity = []PodAffinityTerm{{TopologyKey: LabelZone, Selector: Selector{MatchLabels: map[string]string{"security": "s1"}}}}
			p.Affinity = inZones(zones...)
		}
	}
	tests := []struct {
		name    string
		pods    []Pod
		zones   map[string]int
		pending int
		reason  string
	}{
		{
			name:    "disjoint zones: the second workload waits",
			pods:    append(labelled("z1", 2, small, together("zone-a")), labelled("z2", 2, small, together("zone-b"))...),
			zones:   map[string]int{"zone-a": 2},
			pending: 2,
			reason:  "only in zone-a",
		},
		{
			name:  "the first workload starts the zone the second may use too",
			pods:  append(labelled("z1", 2, small, together("zone-a", "zone-b")), labelled("z2", 2, small, together("zone-b"))...),
			zones: map[string]int{"zone-b": 4},
		},
		{
			name:  "the second workload may use the first's zone: it joins",
			pods:  append(labelled("z1", 2, small, together("zone-a")), labelled("z2", 2, small, together("zone-a", "zone-b"))...),
			zones: map[string]int{"zone-a": 4},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Problem{Pods: tc.pods, Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()}
			plan := solveChecked(t, p)
			if zones, _ := zonesOf(plan); fmt.Sprint(zones) != fmt.Sprint(tc.zones) {
				t.Errorf("pods per zone %v, want %v", zones, tc.zones)
			}
			if len(plan.Unschedulable) != tc.pending {
				t.Fatalf("%d pods pending, want %d", len(plan.Unschedulable), tc.pending)
			}
			for _, u := range plan.Unschedulable {
				if !strings.Contains(u.Reason, tc.reason) {
					t.Errorf("reason %q, want one saying %q", u.Reason, tc.reason)
				}
			}
		})
	}
}
