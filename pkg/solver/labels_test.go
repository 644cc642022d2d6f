package solver_test

import (
	"strings"
	"testing"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// withSelector returns the pods with the node selector set.
func withSelector(ps []Pod, sel map[string]string) []Pod {
	for i := range ps {
		ps[i].NodeSelector = sel
	}
	return ps
}

func TestSolvePoolLabelsAndRequirements(t *testing.T) {
	req := func(key, op string, values ...string) Requirement {
		return Requirement{Key: key, Operator: op, Values: values}
	}
	onDemand := req(LabelCapacityType, OpIn, "on-demand")
	tests := []struct {
		name  string
		pods  []Pod
		pools []Pool
		// wantNodes is the number of new nodes; wantPending the pods left.
		wantNodes, wantPending int
		want                   func(t *testing.T, plan *Plan)
	}{
		{
			name:      "a template zone label keeps nodes in that zone",
			pods:      pods("web", 3, res(500, gi)),
			pools:     []Pool{{Name: "b-only", Labels: map[string]string{LabelZone: "zone-b"}, Requirements: []Requirement{onDemand}}},
			wantNodes: 1,
			want: func(t *testing.T, plan *Plan) {
				for _, n := range plan.NewNodes {
					if n.Zone != "zone-b" {
						t.Errorf("node in %s, want zone-b", n.Zone)
					}
				}
			},
		},
		{
			name:      "a multi-valued requirement offers every value",
			pods:      withSelector(pods("b", 2, res(500, gi)), map[string]string{"team": "b"}),
			pools:     []Pool{{Name: "teams", Requirements: []Requirement{onDemand, req("team", OpIn, "a", "b")}}},
			wantNodes: 1,
			want: func(t *testing.T, plan *Plan) {
				if got := plan.NewNodes[0].Labels["team"]; got != "b" {
					t.Errorf("node label team = %q, want b", got)
				}
			},
		},
		{
			name: "pods selecting different values of one requirement do not share a node",
			pods: append(withSelector(pods("a", 1, res(500, gi)), map[string]string{"team": "a"}),
				withSelector(pods("b", 1, res(500, gi)), map[string]string{"team": "b"})...),
			pools:     []Pool{{Name: "teams", Requirements: []Requirement{onDemand, req("team", OpIn, "a", "b")}}},
			wantNodes: 2,
		},
		{
			name:      "an Exists requirement takes a pod selecting any value",
			pods:      withSelector(pods("x", 1, res(500, gi)), map[string]string{"team": "x"}),
			pools:     []Pool{{Name: "any-team", Requirements: []Requirement{onDemand, req("team", OpExists)}}},
			wantNodes: 1,
		},
		{
			name:      "an Exists requirement does not make the pool unusable",
			pods:      pods("plain", 1, res(500, gi)),
			pools:     []Pool{{Name: "any-team", Requirements: []Requirement{onDemand, req("team", OpExists)}}},
			wantNodes: 1,
			want: func(t *testing.T, plan *Plan) {
				if plan.NewNodes[0].Labels["team"] == "" {
					t.Errorf("node labels %v, want a generated team value", plan.NewNodes[0].Labels)
				}
			},
		},
		{
			name:        "a value outside a NotIn requirement is still refused",
			pods:        withSelector(pods("a", 1, res(500, gi)), map[string]string{"team": "a"}),
			pools:       []Pool{{Name: "not-a", Requirements: []Requirement{onDemand, req("team", OpNotIn, "a")}}},
			wantPending: 1,
		},
		{
			name:      "deprecated arch and zone selectors read the current keys",
			pods:      withSelector(pods("old", 2, res(500, gi)), map[string]string{"beta.kubernetes.io/arch": "amd64", "failure-domain.beta.kubernetes.io/zone": "zone-a"}),
			pools:     []Pool{onDemandPool("default")},
			wantNodes: 1,
			want: func(t *testing.T, plan *Plan) {
				if plan.NewNodes[0].Zone != "zone-a" {
					t.Errorf("node in %s, want zone-a", plan.NewNodes[0].Zone)
				}
			},
		},
		{
			name: "a deprecated instance-type affinity reads the current key",
			pods: func() []Pod {
				ps := pods("old", 1, res(500, gi))
				ps[0].Affinity = []Term{{req("beta.kubernetes.io/instance-type", OpIn, "m6.xlarge")}}
				return ps
			}(),
			pools:     []Pool{onDemandPool("default")},
			wantNodes: 1,
			want: func(t *testing.T, plan *Plan) {
				if plan.NewNodes[0].InstanceType != "m6.xlarge" {
					t.Errorf("node %s, want m6.xlarge", plan.NewNodes[0].InstanceType)
				}
			},
		},
		{
			// The tainted pool allows the cheaper c6 family; the clean one
			// only m6. Without the preference the c6 node would win on price.
			name: "a PreferNoSchedule taint sends pods to an untainted pool of the same weight",
			pods: pods("web", 2, res(500, gi)),
			pools: []Pool{
				{Name: "tainted", Requirements: []Requirement{onDemand}, Taints: []Taint{{Key: "spare", Effect: EffectPreferNoSchedule}}},
				{Name: "clean", Requirements: []Requirement{onDemand, req("karpenter.k8s.aws/instance-family", OpIn, "m6")}},
			},
			wantNodes: 1,
			want: func(t *testing.T, plan *Plan) {
				if n := plan.NewNodes[0]; n.Pool != "clean" {
					t.Errorf("node in pool %s (%s), want clean", n.Pool, n.InstanceType)
				}
			},
		},
		{
			name: "a PreferNoSchedule taint is not a hard constraint",
			pods: pods("big", 1, res(6000, 8*gi)),
			pools: []Pool{
				{Name: "tainted", Requirements: []Requirement{onDemand}, Taints: []Taint{{Key: "spare", Effect: EffectPreferNoSchedule}}},
				{Name: "clean", Requirements: []Requirement{onDemand, req(LabelInstanceType, OpIn, "m6.large")}},
			},
			wantNodes: 1,
			want: func(t *testing.T, plan *Plan) {
				if n := plan.NewNodes[0]; n.Pool != "tainted" {
					t.Errorf("node in pool %s, want tainted (the only one with room)", n.Pool)
				}
			},
		},
		{
			name: "a tolerated PreferNoSchedule taint does not count",
			pods: func() []Pod {
				ps := pods("web", 1, res(500, gi))
				ps[0].Tolerations = []Toleration{{Key: "spare", Operator: "Exists"}}
				return ps
			}(),
			pools: []Pool{
				{Name: "tainted", Requirements: []Requirement{onDemand}, Taints: []Taint{{Key: "spare", Effect: EffectPreferNoSchedule}}},
				{Name: "clean", Requirements: []Requirement{onDemand, req("karpenter.k8s.aws/instance-family", OpIn, "m6")}},
			},
			wantNodes: 1,
			want: func(t *testing.T, plan *Plan) {
				if n := plan.NewNodes[0]; n.Pool != "tainted" || !strings.HasPrefix(n.InstanceType, "c6.") {
					t.Errorf("node %s in pool %s, want the cheaper c6 in tainted", n.InstanceType, n.Pool)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Problem{Pods: tt.pods, Pools: tt.pools, InstanceTypes: testTypes()}
			plan := solveChecked(t, p)
			if len(plan.NewNodes) != tt.wantNodes || len(plan.Unschedulable) != tt.wantPending {
				t.Fatalf("%d nodes %v and %d pending %v, want %d and %d", len(plan.NewNodes), nodeTypes(plan), len(plan.Unschedulable), plan.Unschedulable, tt.wantNodes, tt.wantPending)
			}
			if tt.want != nil {
				tt.want(t, plan)
			}
		})
	}
}

func TestSolveHostPorts(t *testing.T) {
	port := func(p int32, proto, ip string) HostPort { return HostPort{Port: p, Protocol: proto, HostIP: ip} }
	// two workloads of one small pod each, binding a and b.
	pair := func(a, b []HostPort) []Pod {
		x, y := pods("x", 1, res(100, 128*mi)), pods("y", 1, res(100, 128*mi))
		x[0].HostPorts, y[0].HostPorts = a, b
		return append(x, y...)
	}
	tests := []struct {
		name        string
		pods        []Pod
		daemonSets  []DaemonSet
		nodes       []Node
		wantNodes   int
		wantPending int
	}{
		{
			name: "replicas binding one host port get a node each",
			pods: func() []Pod {
				ps := pods("ingress", 3, res(100, 128*mi))
				for i := range ps {
					ps[i].HostPorts = []HostPort{port(8080, "TCP", "")}
				}
				return ps
			}(),
			wantNodes: 3,
		},
		{name: "the same port of different workloads conflicts", pods: pair([]HostPort{port(80, "", "")}, []HostPort{port(80, "TCP", "")}), wantNodes: 2},
		{name: "different ports share a node", pods: pair([]HostPort{port(80, "", "")}, []HostPort{port(81, "", "")}), wantNodes: 1},
		{name: "different protocols share a node", pods: pair([]HostPort{port(53, "UDP", "")}, []HostPort{port(53, "TCP", "")}), wantNodes: 1},
		{name: "different host IPs share a node", pods: pair([]HostPort{port(80, "", "10.0.0.1")}, []HostPort{port(80, "", "10.0.0.2")}), wantNodes: 1},
		{name: "a wildcard address conflicts with any address", pods: pair([]HostPort{port(80, "", "0.0.0.0")}, []HostPort{port(80, "", "10.0.0.2")}), wantNodes: 2},
		{
			name: "a DaemonSet's host port keeps the pod off every node it runs on",
			pods: func() []Pod {
				ps := pods("ingress", 1, res(100, 128*mi))
				ps[0].HostPorts = []HostPort{port(9100, "", "")}
				return ps
			}(),
			daemonSets:  []DaemonSet{{Namespace: "kube-system", Name: "node-exporter", Requests: res(10, mi), HostPorts: []HostPort{port(9100, "", "")}}},
			wantPending: 1,
		},
		{
			name: "a DaemonSet on some nodes leaves the others",
			pods: func() []Pod {
				ps := pods("ingress", 1, res(100, 128*mi))
				ps[0].HostPorts = []HostPort{port(9100, "", "")}
				return ps
			}(),
			daemonSets: []DaemonSet{{Namespace: "kube-system", Name: "node-exporter", Requests: res(10, mi), NodeSelector: map[string]string{"karpenter.k8s.aws/instance-category": "c"}, HostPorts: []HostPort{port(9100, "", "")}}},
			wantNodes:  1,
		},
		{
			name: "an existing node whose pod binds the port is skipped",
			pods: func() []Pod {
				ps := pods("ingress", 1, res(100, 128*mi))
				ps[0].HostPorts = []HostPort{port(443, "", "")}
				return ps
			}(),
			nodes: []Node{{
				Name: "old", Labels: map[string]string{LabelZone: "zone-a", "kubernetes.io/hostname": "old"},
				Allocatable: res(4000, 16*gi).Scale(1), Requested: res(100, 128*mi),
				Pods: []Pod{{Namespace: "default", Name: "old-ingress", HostPorts: []HostPort{port(443, "", "")}}},
			}},
			wantNodes: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.nodes {
				tt.nodes[i].Allocatable[Pods] = 110
			}
			p := &Problem{Pods: tt.pods, DaemonSets: tt.daemonSets, Nodes: tt.nodes, Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()}
			plan := solveChecked(t, p)
			if len(plan.NewNodes) != tt.wantNodes || len(plan.Unschedulable) != tt.wantPending {
				t.Fatalf("%d nodes %v, %d on existing nodes and %d pending, want %d and %d pending", len(plan.NewNodes), nodeTypes(plan), len(plan.Existing), len(plan.Unschedulable), tt.wantNodes, tt.wantPending)
			}
		})
	}
}

func TestSolveAcceleratorsByResourceName(t *testing.T) {
	gpuType := func(name string, gpus Resources, extended map[string]int64, price float64) InstanceType {
		it := InstanceType{
			Name: name, Labels: map[string]string{LabelInstanceType: name},
			Capacity: res(8000, 32*gi).Add(gpus), Extended: extended,
			Offerings: []Offering{{Zone: "zone-a", CapacityType: "on-demand", Price: price}},
		}
		it.Capacity[Pods] = 110
		return it
	}
	var nvidia Resources
	nvidia[GPU] = 1
	types := []InstanceType{
		gpuType("amd.2xlarge", Resources{}, map[string]int64{"amd.com/gpu": 1}, 0.5),
		gpuType("nvidia.2xlarge", nvidia, nil, 1.0),
		gpuType("inf.2xlarge", Resources{}, map[string]int64{"aws.amazon.com/neuron": 1, "aws.amazon.com/neuroncore": 2}, 0.7),
	}
	tests := []struct {
		name     string
		extended []string
		requests Resources
		wantType string // "" = unschedulable
	}{
		{name: "nvidia.com/gpu only on the NVIDIA type", requests: res(1000, gi).Add(nvidia), wantType: "nvidia.2xlarge"},
		{name: "amd.com/gpu on the AMD type", extended: []string{"amd.com/gpu"}, requests: func() Resources { r := res(1000, gi); r[NumFixedResources] = 1; return r }(), wantType: "amd.2xlarge"},
		{name: "neuroncores on the Inferentia type", extended: []string{"aws.amazon.com/neuroncore"}, requests: func() Resources { r := res(1000, gi); r[NumFixedResources] = 2; return r }(), wantType: "inf.2xlarge"},
		{name: "more neuroncores than any type has", extended: []string{"aws.amazon.com/neuroncore"}, requests: func() Resources { r := res(1000, gi); r[NumFixedResources] = 4; return r }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Problem{ExtendedResources: tt.extended, Pods: pods("ml", 1, tt.requests), Pools: []Pool{onDemandPool("default")}, InstanceTypes: types}
			plan := solveChecked(t, p)
			got := ""
			if len(plan.NewNodes) == 1 {
				got = plan.NewNodes[0].InstanceType
			}
			if got != tt.wantType {
				t.Errorf("planned %v (pending %v), want %q", nodeTypes(plan), plan.Unschedulable, tt.wantType)
			}
			if tt.wantType == "" && (len(plan.Unschedulable) != 1 || !strings.Contains(plan.Unschedulable[0].Reason, "aws.amazon.com/neuroncore")) {
				t.Errorf("unschedulable %v, want a reason naming aws.amazon.com/neuroncore", plan.Unschedulable)
			}
			if p.InstanceTypes[0].Capacity[NumFixedResources] != 0 {
				t.Error("Solve modified the problem's instance types")
			}
		})
	}
}

func TestExplainNamesUnanswerableLabelKeys(t *testing.T) {
	const hypervisor = "karpenter.k8s.aws/instance-hypervisor"
	one := func(mutate func(*Pod)) []Pod {
		ps := pods("web", 1, res(500, gi))
		mutate(&ps[0])
		return ps
	}
	tests := []struct {
		name string
		pods []Pod
		pool Pool
		want []string // substrings of the reason
		not  []string
	}{
		{
			name: "a selector on a label the catalog does not know",
			pods: one(func(p *Pod) { p.NodeSelector = map[string]string{hypervisor: "nitro"} }),
			pool: onDemandPool("default"),
			want: []string{"the catalog does not know label " + hypervisor},
			not:  []string{"room"},
		},
		{
			name: "an affinity on a label no type carries",
			pods: one(func(p *Pod) {
				p.Affinity = []Term{{{Key: "karpenter.k8s.aws/instance-local-nvme", Operator: OpGt, Values: []string{"100"}}}}
			}),
			pool: onDemandPool("default"),
			want: []string{"no instance type carries label karpenter.k8s.aws/instance-local-nvme"},
			not:  []string{"room"},
		},
		{
			name: "a pool requirement on a label the catalog does not know",
			pods: pods("web", 1, res(500, gi)),
			pool: Pool{Name: "nitro", Requirements: []Requirement{{Key: hypervisor, Operator: OpIn, Values: []string{"nitro"}}}},
			want: []string{"NodePool nitro requires " + hypervisor + " In [nitro]: the catalog does not know label " + hypervisor},
		},
		{
			name: "a deprecated key is named by its current key",
			pods: one(func(p *Pod) { p.NodeSelector = map[string]string{"beta.kubernetes.io/arch": "s390x"} }),
			pool: onDemandPool("default"),
			want: []string{"kubernetes.io/arch=s390x"},
			not:  []string{"carries label", "does not know"},
		},
		{
			name: "a capacity type the pool does not offer is not a lack of room",
			pods: one(func(p *Pod) { p.NodeSelector = map[string]string{LabelCapacityType: "spot"} }),
			pool: onDemandPool("default"),
			want: []string{"matches the pod's nodeSelector " + LabelCapacityType + "=spot", "the cheapest instance type that would fit, if a NodePool allowed it, is ", "(spot, $"},
			not:  []string{"has room for"},
		},
		{
			name: "a pod too big still gets a capacity reason",
			pods: pods("huge", 1, res(100000, gi)),
			pool: onDemandPool("default"),
			want: []string{"room for 100 CPU"},
			not:  []string{"label"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Problem{Pods: tt.pods, Pools: []Pool{tt.pool}, InstanceTypes: testTypes(), UnknownLabels: []string{hypervisor}}
			plan := solveChecked(t, p)
			if len(plan.Unschedulable) != 1 {
				t.Fatalf("unschedulable = %v, want the one pod", plan.Unschedulable)
			}
			reason := plan.Unschedulable[0].Reason
			for _, w := range tt.want {
				if !strings.Contains(reason, w) {
					t.Errorf("reason %q\nwant it to contain %q", reason, w)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(reason, w) {
					t.Errorf("reason %q\nmust not contain %q", reason, w)
				}
			}
		})
	}
}
