package check_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver/check"
)

const gi = int64(1) << 30

// world is a small cluster: one instance type offered in three zones, one
// pool, and optionally existing nodes with running pods.
func world(pods []solver.Pod, nodes ...solver.Node) *solver.Problem {
	it := solver.InstanceType{
		Name:     "m.xlarge",
		Labels:   map[string]string{solver.LabelInstanceType: "m.xlarge"},
		Capacity: solver.Resources{solver.CPU: 4000, solver.Memory: 16 * gi, solver.Pods: 110},
	}
	for _, z := range []string{"zone-a", "zone-b", "zone-c"} {
		it.Offerings = append(it.Offerings, solver.Offering{Zone: z, CapacityType: "on-demand", Price: 0.2})
	}
	return &solver.Problem{Pods: pods, Pools: []solver.Pool{{Name: "default"}}, InstanceTypes: []solver.InstanceType{it}, Nodes: nodes}
}

// pod is a small pod of app in namespace default, modified by opts.
func pod(name, app string, opts ...func(*solver.Pod)) solver.Pod {
	p := solver.Pod{Namespace: "default", Name: name, Labels: map[string]string{"app": app},
		Requests: solver.Resources{solver.CPU: 500, solver.Memory: gi, solver.Pods: 1}}
	for _, o := range opts {
		o(&p)
	}
	return p
}

func selfSelector(app string) solver.Selector {
	return solver.Selector{MatchLabels: map[string]string{"app": app}}
}

func spread(key, app string, maxSkew, minDomains int32, policy string) func(*solver.Pod) {
	return func(p *solver.Pod) {
		p.Spread = append(p.Spread, solver.TopologySpread{MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: solver.DoNotSchedule,
			Selector: selfSelector(app), MinDomains: minDomains, NodeAffinityPolicy: policy})
	}
}

func antiAffinity(key, app string) func(*solver.Pod) {
	return func(p *solver.Pod) {
		p.PodAntiAffinity = append(p.PodAntiAffinity, solver.PodAffinityTerm{TopologyKey: key, Selector: selfSelector(app)})
	}
}

func affinity(key, app string) func(*solver.Pod) {
	return func(p *solver.Pod) {
		p.PodAffinity = append(p.PodAffinity, solver.PodAffinityTerm{TopologyKey: key, Selector: selfSelector(app)})
	}
}

func inZone(zone string) func(*solver.Pod) {
	return func(p *solver.Pod) { p.NodeSelector = map[string]string{solver.LabelZone: zone} }
}

func namespace(ns string) func(*solver.Pod) { return func(p *solver.Pod) { p.Namespace = ns } }

// existing is a running node in zone with free room and the given pods.
func existing(name, zone string, running ...solver.Pod) solver.Node {
	return solver.Node{Name: name, Zone: zone, Labels: map[string]string{solver.LabelZone: zone, check.LabelHostname: name},
		Allocatable: solver.Resources{solver.CPU: 4000, solver.Memory: 16 * gi, solver.Pods: 110}, Pods: running}
}

// plan builds a plan from "zone:pod,pod" new nodes and "node=pod" placements.
func plan(nodes []string, placements ...string) *solver.Plan {
	out := &solver.Plan{}
	for _, n := range nodes {
		zone, list, _ := strings.Cut(n, ":")
		nn := solver.NewNode{Pool: "default", InstanceType: "m.xlarge", Zone: zone, CapacityType: "on-demand", Price: 0.2}
		for _, f := range strings.Split(list, ",") {
			if f == "" {
				continue
			}
			var i int
			fmt.Sscan(f, &i)
			nn.Pods = append(nn.Pods, i)
		}
		out.NewNodes = append(out.NewNodes, nn)
		out.TotalPrice += nn.Price
	}
	for _, pl := range placements {
		node, idx, _ := strings.Cut(pl, "=")
		var i int
		fmt.Sscan(idx, &i)
		out.Existing = append(out.Existing, solver.Placement{Pod: i, Node: node})
	}
	return out
}

// late marks the plan's late pods, in order.
func late(p *solver.Plan, pods ...int) *solver.Plan {
	p.Late = pods
	return p
}

func repeat(n int, f func(i int) solver.Pod) []solver.Pod {
	out := make([]solver.Pod, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

func TestPlan(t *testing.T) {
	zonal := func(n int) []solver.Pod {
		return repeat(n, func(i int) solver.Pod {
			return pod(fmt.Sprintf("web-%d", i), "web", spread(solver.LabelZone, "web", 1, 0, ""))
		})
	}
	hostSpread := repeat(2, func(i int) solver.Pod {
		return pod(fmt.Sprintf("web-%d", i), "web", spread(check.LabelHostname, "web", 1, 0, ""))
	})
	anti := repeat(2, func(i int) solver.Pod {
		return pod(fmt.Sprintf("db-%d", i), "db", antiAffinity(check.LabelHostname, "db"))
	})
	selfAffine := repeat(3, func(i int) solver.Pod {
		return pod(fmt.Sprintf("cache-%d", i), "cache", affinity(solver.LabelZone, "cache"))
	})
	pinned := repeat(2, func(i int) solver.Pod {
		return pod(fmt.Sprintf("web-%d", i), "web", inZone("zone-a"), spread(solver.LabelZone, "web", 1, 0, ""))
	})
	pinnedIgnore := repeat(2, func(i int) solver.Pod {
		return pod(fmt.Sprintf("web-%d", i), "web", inZone("zone-a"), spread(solver.LabelZone, "web", 1, 0, "Ignore"))
	})
	minDomains := repeat(3, func(i int) solver.Pod {
		return pod(fmt.Sprintf("web-%d", i), "web", spread(solver.LabelZone, "web", 1, 5, ""))
	})
	runningWeb := []solver.Pod{pod("old-web-0", "web"), pod("old-web-1", "web")}
	guard := pod("guard", "guard", antiAffinity(solver.LabelZone, "web"))

	tests := []struct {
		name    string
		problem *solver.Problem
		plan    *solver.Plan
		wantErr string // empty: the plan is valid
	}{
		{"resources: pods fit", world([]solver.Pod{pod("a", "x"), pod("b", "x")}), plan([]string{"zone-a:0,1"}), ""},
		{"resources: node overcommitted", world(repeat(9, func(i int) solver.Pod { return pod(fmt.Sprint(i), "x") })),
			plan([]string{"zone-a:0,1,2,3,4,5,6,7,8"}), "overcommitted"},
		{"placement: pod missing", world([]solver.Pod{pod("a", "x"), pod("b", "x")}), plan([]string{"zone-a:0"}), "appears 0 times"},
		{"placement: cordoned existing node", world([]solver.Pod{pod("a", "x")}, func() solver.Node {
			n := existing("old", "zone-a")
			n.Unschedulable = true
			return n
		}()), plan(nil, "old=0"), "cordoned"},

		{"zonal spread: 2/2 is within maxSkew 1", world(zonal(4)), plan([]string{"zone-a:0,1", "zone-b:2,3"}), ""},
		{"zonal spread: 3/1 exceeds maxSkew 1", world(zonal(4)), plan([]string{"zone-a:0,1,2", "zone-b:3"}), "skew 2 > maxSkew 1"},
		{"zonal spread: running pods count", world(zonal(2), existing("old", "zone-a", runningWeb...)),
			plan([]string{"zone-b:0,1"}), ""},
		{"zonal spread: running pods make 3/1", world(zonal(2), existing("old", "zone-a", runningWeb...)),
			plan([]string{"zone-b:1"}, "old=0"), "skew 2"},
		{"zonal spread: running pods of another namespace do not count",
			world(repeat(2, func(i int) solver.Pod {
				return pod(fmt.Sprintf("web-%d", i), "web", namespace("shop"), spread(solver.LabelZone, "web", 1, 0, ""))
			}), existing("old", "zone-a", runningWeb...)),
			plan([]string{"zone-a:0", "zone-b:1"}), ""},
		{"zonal spread: an empty existing zone is a domain", world(zonal(2), existing("old", "zone-c")),
			plan([]string{"zone-a:0,1"}), "skew 2"},
		{"minDomains: one pod per zone with fewer domains than minDomains", world(minDomains),
			plan([]string{"zone-a:0", "zone-b:1", "zone-c:2"}), ""},
		{"minDomains: global minimum is 0 below minDomains", world(minDomains),
			plan([]string{"zone-a:0,1", "zone-b:2"}), "0 in the emptiest"},
		{"nodeAffinityPolicy Honor: only zone-a is eligible", world(pinned, existing("old", "zone-b")),
			plan([]string{"zone-a:0,1"}), ""},
		{"nodeAffinityPolicy Ignore: empty zone-b counts", world(pinnedIgnore, existing("old", "zone-b")),
			plan([]string{"zone-a:0,1"}), "skew 2"},

		{"hostname spread: one pod per node", world(hostSpread), plan([]string{"zone-a:0", "zone-a:1"}), ""},
		{"hostname spread: an empty new node is a domain", world(hostSpread), plan([]string{"zone-a:0,1", "zone-a:"}), "skew 2"},
		{"hostname spread: an existing node is a domain", world(hostSpread, existing("old", "zone-a")),
			plan([]string{"zone-a:0,1"}), "skew 2"},

		{"anti-affinity: separate nodes", world(anti), plan([]string{"zone-a:0", "zone-a:1"}), ""},
		{"anti-affinity: same node", world(anti), plan([]string{"zone-a:0,1"}), "anti-affinity"},
		{"anti-affinity: other namespaces do not conflict",
			world([]solver.Pod{anti[0], pod("db-x", "db", namespace("other"), antiAffinity(check.LabelHostname, "db"))}),
			plan([]string{"zone-a:0,1"}), ""},
		{"anti-affinity: against a running pod", world(anti[:1], existing("old", "zone-a", pod("old-db", "db"))),
			plan(nil, "old=0"), "anti-affinity"},
		{"anti-affinity: a running pod's term rejects a planned pod", world([]solver.Pod{pod("web", "web")}, existing("old", "zone-a", guard)),
			plan([]string{"zone-a:0"}), "running pod default/guard"},
		{"anti-affinity: a running pod's term allows another zone", world([]solver.Pod{pod("web", "web")}, existing("old", "zone-a", guard)),
			plan([]string{"zone-b:0"}), ""},

		{"affinity: self-affine group in one zone", world(selfAffine), plan([]string{"zone-a:0,1", "zone-a:2"}), ""},
		{"affinity: self-affine group split", world(selfAffine), plan([]string{"zone-a:0,1", "zone-b:2"}), "required affinity"},
		{"affinity: self-affine group in two zones of two", world(repeat(4, func(i int) solver.Pod {
			return pod(fmt.Sprintf("cache-%d", i), "cache", affinity(solver.LabelZone, "cache"))
		})), plan([]string{"zone-a:0,1", "zone-b:2,3"}), "start 2 domain(s)"},
		{"affinity: two workloads selecting each other split over two nodes",
			world([]solver.Pod{pod("one-0", "cache", affinity(check.LabelHostname, "cache")), pod("one-1", "cache", affinity(check.LabelHostname, "cache")),
				pod("two-0", "cache", affinity(check.LabelHostname, "cache"), inZone("zone-b")), pod("two-1", "cache", affinity(check.LabelHostname, "cache"), inZone("zone-b"))}),
			plan([]string{"zone-a:0,1", "zone-b:2,3"}), "start 2 domain(s)"},
		{"affinity: a pod free to go anywhere starts a domain for the group",
			world([]solver.Pod{pod("free", "cache"), selfAffine[0], selfAffine[1], selfAffine[2]}),
			plan([]string{"zone-a:0,1", "zone-b:2,3"}), ""},
		{"affinity: with matching pods running none starts a domain of its own",
			world(selfAffine[:2], existing("old", "zone-b", pod("old-cache", "cache"))),
			plan([]string{"zone-a:0,1"}), "start 1 domain(s)"},
		{"affinity: a lone self-affine pod goes anywhere", world(selfAffine[:1]), plan([]string{"zone-c:0"}), ""},
		{"affinity: joins the running pods' zone", world([]solver.Pod{pod("c", "cache", affinity(solver.LabelZone, "cache"))}, existing("old", "zone-b", pod("old-cache", "cache"))),
			plan([]string{"zone-b:0"}), ""},
		{"affinity: away from the running pods' zone", world([]solver.Pod{pod("c", "cache", affinity(solver.LabelZone, "cache"))}, existing("old", "zone-b", pod("old-cache", "cache"))),
			plan([]string{"zone-a:0"}), "required affinity"},
		{"affinity: to pods that exist nowhere", world([]solver.Pod{pod("w", "web", affinity(solver.LabelZone, "db"))}),
			plan([]string{"zone-a:0"}), "required affinity"},
		// A late pod (Plan.Late) binds after the others: kube-scheduler
		// judged the carrier's spread when the carrier bound.
		{"late: a pod bound earlier breaks the carrier's spread", world([]solver.Pod{zonal(1)[0], pod("free", "web")}),
			plan([]string{"zone-a:0,1", "zone-b:"}), "skew 2 > maxSkew 1"},
		{"late: a late pod may break the spread of a pod bound before it", world([]solver.Pod{zonal(1)[0], pod("free", "web")}),
			late(plan([]string{"zone-a:0,1", "zone-b:"}), 1), ""},
		{"late: a late pod's own spread counts the pods bound before it", world(zonal(2)),
			late(plan([]string{"zone-a:0,1", "zone-b:"}), 1), "skew 2 > maxSkew 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := check.Plan(tt.problem, tt.plan)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("valid plan rejected: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("invalid plan accepted, want an error containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestPlanWithPoolDomains: spread judged as Karpenter counts domains,
// those the pools could launch into included. The last cases are issue
// #13's: a zone-c pool with a zero CPU limit still makes zone-c an empty
// domain (Karpenter's topology_test.go, Combined Hostname and Zonal
// Topology It("should spread pods while respecting both constraints")).
func TestPlanWithPoolDomains(t *testing.T) {
	zonal := func(n int, opts ...func(*solver.Pod)) []solver.Pod {
		return repeat(n, func(i int) solver.Pod {
			return pod(fmt.Sprintf("web-%d", i), "web", append(opts, spread(solver.LabelZone, "web", 1, 0, ""))...)
		})
	}
	twoZones := func(p *solver.Problem) *solver.Problem {
		p.Pools[0].Requirements = []solver.Requirement{{Key: solver.LabelZone, Operator: solver.OpIn, Values: []string{"zone-a", "zone-b"}}}
		return p
	}
	disabledC := func(p *solver.Problem) *solver.Problem {
		twoZones(p)
		off := solver.Pool{Name: "off", Requirements: []solver.Requirement{{Key: solver.LabelZone, Operator: solver.OpIn, Values: []string{"zone-c"}}}}
		off.HasLimit[solver.CPU] = true
		p.Pools = append(p.Pools, off)
		return p
	}
	tests := []struct {
		name    string
		problem *solver.Problem
		plan    *solver.Plan
		wantErr string
	}{
		{"a zone the pool could launch into is an empty domain", world(zonal(4)), plan([]string{"zone-a:0,1", "zone-b:2,3"}), "skew 2 > maxSkew 1"},
		{"one pod per zone over the pool's three zones", world(zonal(3)), plan([]string{"zone-a:0", "zone-b:1", "zone-c:2"}), ""},
		{"a zone the pool excludes is no domain", twoZones(world(zonal(4))), plan([]string{"zone-a:0,1", "zone-b:2,3"}), ""},
		{"node affinity (Honor) keeps the other zones out", world(zonal(2, inZone("zone-a"))), plan([]string{"zone-a:0,1"}), ""},
		{"a zero-limit pool's zone counts: 4/3/0", disabledC(world(zonal(7))), plan([]string{"zone-a:0,1,2,3", "zone-b:4,5,6"}), "0 in the emptiest of 3"},
		{"a zero-limit pool's zone counts: 1/1/0", disabledC(world(zonal(2))), plan([]string{"zone-a:0", "zone-b:1"}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			placed := map[int]bool{}
			for _, n := range tt.plan.NewNodes {
				for _, pi := range n.Pods {
					placed[pi] = true
				}
			}
			for i := range tt.problem.Pods {
				if !placed[i] {
					tt.plan.Unschedulable = append(tt.plan.Unschedulable, solver.Unschedulable{Pod: i, Reason: "test"})
				}
			}
			err := check.PlanWithPoolDomains(tt.problem, tt.plan)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("valid plan rejected: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("invalid plan accepted, want an error containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q, want one containing %q", err, tt.wantErr)
			}
			if tt.wantErr != "" { // what only pool domains reveal
				if err := check.Plan(tt.problem, tt.plan); err != nil {
					t.Errorf("Plan (final nodes only) rejects it too: %v", err)
				}
			}
		})
	}
}

func TestCost(t *testing.T) {
	p := world([]solver.Pod{pod("a", "x"), pod("b", "x")})
	if got := check.Cost(p, plan([]string{"zone-a:0", "zone-b:1"})); got != 0.4 {
		t.Errorf("Cost = %v, want 0.4", got)
	}
}
