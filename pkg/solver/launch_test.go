package solver_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func TestLaunchOptionsHoldTheSamePods(t *testing.T) {
	// What a flexible launch may use, as Karpenter's scheduler gives a
	// NodeClaim every instance type compatible with its pods
	// (kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/
	// nodeclaim.go, NodeClaim.Add filtering InstanceTypeOptions).
	zoneSpread := func(p *Problem) {
		for i := range p.Pods {
			p.Pods[i].Labels = map[string]string{"app": "web"}
			p.Pods[i].Spread = []TopologySpread{{MaxSkew: 1, TopologyKey: LabelZone, WhenUnsatisfiable: DoNotSchedule,
				Selector: Selector{MatchLabels: map[string]string{"app": "web"}}}}
		}
	}
	tests := []struct {
		name       string
		pods       []Pod
		daemonSets []DaemonSet
		edit       func(*Problem)
		premium    float64
		// check fails the test for an option the node may not use; want
		// is a type that must be among the options, absent one that must not.
		check          func(o LaunchOption) string
		want, absent   string
		wantZones      int
		minOptionCount int
	}{
		{
			name: "every type and zone that holds the pods", pods: pods("web", 1, res(3000, 2*gi)), premium: -1,
			want: "r6.8xlarge", absent: "c6.large", wantZones: 2, minOptionCount: 20,
		},
		{
			name: "a premium bounds the price", pods: pods("web", 1, res(3000, 2*gi)), premium: 0.1,
			absent: "m6.xlarge", wantZones: 2,
		},
		{
			name: "a zonal spread keeps the planned zone", pods: pods("web", 2, res(1500, 2*gi)), edit: zoneSpread, premium: -1,
			want: "m6.2xlarge", wantZones: 1,
		},
		{
			name: "the pods' node selector holds", premium: -1,
			pods: func() []Pod {
				ps := pods("web", 1, res(1500, 2*gi))
				ps[0].NodeSelector = map[string]string{"karpenter.k8s.aws/instance-category": "m"}
				return ps
			}(),
			check: func(o LaunchOption) string {
				if !strings.HasPrefix(o.InstanceType, "m6.") {
					return "not of category m"
				}
				return ""
			},
			want: "m6.8xlarge", absent: "c6.2xlarge", wantZones: 2,
		},
		{
			name: "a pod another pod's zonal anti-affinity selects keeps its zone", premium: -1, wantZones: 1,
			pods: func() []Pod {
				ps := pods("web", 1, res(3000, 2*gi))
				ps[0].Labels = map[string]string{"app": "web"}
				return ps
			}(),
			edit: func(p *Problem) {
				guard := Pod{Namespace: "default", Name: "guard", Requests: res(100, gi), Labels: map[string]string{"app": "guard"},
					PodAntiAffinity: []PodAffinityTerm{{Selector: Selector{MatchLabels: map[string]string{"app": "web"}}, TopologyKey: LabelZone}}}
				p.Nodes = []Node{{Name: "n1", Pool: "default", Zone: "zone-b", Labels: map[string]string{LabelZone: "zone-b", "kubernetes.io/hostname": "n1"},
					Allocatable: res(1000, 2*gi), Requested: guard.Requests, Pods: []Pod{guard}}}
			},
			check: func(o LaunchOption) string {
				if o.Zone != "zone-a" {
					return "in the zone of the pod whose anti-affinity selects it"
				}
				return ""
			},
		},
		{
			name: "a preferred node affinity the plan met is kept", premium: -1, wantZones: 2,
			pods: func() []Pod {
				ps := pods("web", 1, res(3000, 2*gi))
				ps[0].Preferences = []Preference{{Kind: PreferNodeAffinity, Weight: 50,
					NodeTerm: Term{{Key: "karpenter.k8s.aws/instance-category", Operator: OpIn, Values: []string{"r"}}}}}
				return ps
			}(),
			check: func(o LaunchOption) string {
				if !strings.HasPrefix(o.InstanceType, "r6.") {
					return "not of the preferred category r"
				}
				return ""
			},
			want: "r6.xlarge", absent: "c6.xlarge",
		},
		{
			name: "DaemonSets that would run there are counted", pods: pods("web", 1, res(3000, 2*gi)), premium: -1,
			// 5 GiB per node leaves a c6.xlarge (8 GiB) too little for 2 GiB more.
			daemonSets: []DaemonSet{{Namespace: "kube-system", Name: "agent", Requests: res(100, 5*gi)}},
			want:       "m6.xlarge", absent: "c6.xlarge", wantZones: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Problem{Pods: tc.pods, DaemonSets: tc.daemonSets, Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()}
			if tc.edit != nil {
				tc.edit(p)
			}
			plan, err := Solve(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.NewNodes) == 0 {
				t.Fatalf("no node planned: %+v", plan.Unschedulable)
			}
			all := LaunchOptions(p, plan, tc.premium)
			if len(all) != len(plan.NewNodes) {
				t.Fatalf("%d option lists for %d nodes", len(all), len(plan.NewNodes))
			}
			for ni, opts := range all {
				n := plan.NewNodes[ni]
				if len(opts) == 0 || opts[0].InstanceType != n.InstanceType || opts[0].Zone != n.Zone || opts[0].CapacityType != n.CapacityType {
					t.Fatalf("node %d (%s %s %s): options do not start with the planned offering: %+v", ni, n.InstanceType, n.Zone, n.CapacityType, opts)
				}
				if len(opts) < tc.minOptionCount {
					t.Errorf("node %d: %d options, want at least %d", ni, len(opts), tc.minOptionCount)
				}
				zones := map[string]bool{}
				names := map[string]bool{}
				for i, o := range opts {
					zones[o.Zone], names[o.InstanceType] = true, true
					if i > 1 && o.Price < opts[i-1].Price {
						t.Errorf("node %d: option %d (%s $%v) cheaper than the one before it ($%v)", ni, i, o.InstanceType, o.Price, opts[i-1].Price)
					}
					if o.CapacityType != "on-demand" {
						t.Errorf("node %d: option %s %s breaks the pool's capacity-type requirement", ni, o.InstanceType, o.CapacityType)
					}
					var ds Resources
					for _, d := range tc.daemonSets {
						ds = ds.Add(d.Requests)
					}
					if it := typeNamed(p.InstanceTypes, o.InstanceType); !n.Requested.Add(ds).Fits(it.Allocatable()) {
						t.Errorf("node %d: option %s cannot hold the pods' %v with DaemonSets' %v", ni, o.InstanceType, n.Requested, ds)
					}
					if tc.premium >= 0 && o.Price > n.Price*(1+tc.premium)+1e-9 {
						t.Errorf("node %d: option %s at $%v is above the premium over $%v", ni, o.InstanceType, o.Price, n.Price)
					}
					if tc.check != nil {
						if why := tc.check(o); why != "" {
							t.Errorf("node %d: option %s %s: %s", ni, o.InstanceType, o.Zone, why)
						}
					}
				}
				if len(zones) != tc.wantZones {
					t.Errorf("node %d: options span %d zones, want %d", ni, len(zones), tc.wantZones)
				}
				if tc.want != "" && !names[tc.want] {
					t.Errorf("node %d: %s is not among the options %v", ni, tc.want, names)
				}
				if tc.absent != "" && names[tc.absent] {
					t.Errorf("node %d: %s is among the options", ni, tc.absent)
				}
			}
		})
	}
}

func typeNamed(types []InstanceType, name string) *InstanceType {
	for i := range types {
		if types[i].Name == name {
			return &types[i]
		}
	}
	return nil
}

func TestLaunchOptionsOfAlikeNodesEqualEachNodeAlone(t *testing.T) {
	// LaunchOptions remembers the answers of nodes alike (same pool and
	// labels, planned offering, requests and pods' constraints): every
	// node's options must be those it gets planned alone, with no node
	// to share with.
	selecting := func(p *Problem) {
		for i := range p.Pods {
			if i%5 == 0 {
				p.Pods[i].NodeSelector = map[string]string{"karpenter.k8s.aws/instance-category": "m"}
			}
		}
	}
	tests := []struct {
		name string
		pods []Pod
		edit func(*Problem)
		// plan, when set, is the plan instead of Solve's: nodes alike
		// but for their requests.
		plan func(*Problem) *Plan
	}{
		{"many full nodes and a partial one", pods("web", 61, res(3000, 6*gi)), nil, nil},
		{"two shapes", append(pods("web", 40, res(3000, 6*gi)), pods("api", 23, res(1500, 12*gi))...), nil, nil},
		{"some pods select a category", append(pods("web", 40, res(3000, 6*gi)), pods("api", 23, res(1500, 12*gi))...), selecting, nil},
		{"microservices", randomPods(rand.New(rand.NewPCG(33, 1)), 400), nil, nil},
		{"microservices, some selecting a category", randomPods(rand.New(rand.NewPCG(33, 2)), 400), selecting, nil},
		{"one offering, different requests", append(pods("small", 2, res(1000, 2*gi)), pods("big", 2, res(6000, 40*gi))...), nil, func(p *Problem) *Plan {
			node := func(pod int) NewNode {
				return NewNode{Pool: "default", InstanceType: "r6.2xlarge", Zone: "zone-a", CapacityType: "on-demand", Price: 8 * 0.063,
					Pods: []int{pod}, Requested: p.Pods[pod].Requests}
			}
			return &Plan{NewNodes: []NewNode{node(0), node(2), node(1), node(3)}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Problem{Pods: tc.pods, Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()}
			if tc.edit != nil {
				tc.edit(p)
			}
			plan, err := Solve(p)
			if err != nil {
				t.Fatal(err)
			}
			if tc.plan != nil {
				plan = tc.plan(p)
			}
			if len(plan.NewNodes) < 3 {
				t.Fatalf("%d nodes planned, want several to share answers", len(plan.NewNodes))
			}
			all := LaunchOptions(p, plan, -1)
			names := LaunchInstanceTypes(p, plan, -1)
			for i, n := range plan.NewNodes {
				alone := &Plan{NewNodes: []NewNode{n}}
				want := LaunchOptions(p, alone, -1)[0]
				if !slices.Equal(all[i], want) {
					t.Errorf("node %d (%s, %v): %d options among the plan's nodes, %d alone:\n%v\n%v", i, n.InstanceType, n.Requested, len(all[i]), len(want), all[i], want)
				}
				if wantNames := LaunchInstanceTypes(p, alone, -1)[0]; !slices.Equal(names[i], wantNames) {
					t.Errorf("node %d: types %v among the plan's nodes, %v alone", i, names[i], wantNames)
				}
			}
		})
	}
}
