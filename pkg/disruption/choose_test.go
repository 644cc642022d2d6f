package disruption

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

var now = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

const gi = int64(1) << 30

func res(cpu, mem int64) solver.Resources {
	var r solver.Resources
	r[solver.CPU], r[solver.Memory], r[solver.Pods] = cpu, mem, 1
	return r
}

// types are two instance types: small (2 CPU, $0.10/h) and large (8 CPU,
// $0.40/h).
func types() []solver.InstanceType {
	mk := func(name string, cpu int64, price float64) solver.InstanceType {
		var c solver.Resources
		c[solver.CPU], c[solver.Memory], c[solver.Pods] = cpu*1000, cpu*4*gi, 110
		return solver.InstanceType{Name: name, Labels: map[string]string{solver.LabelInstanceType: name}, Capacity: c,
			Offerings: []solver.Offering{{Zone: "zone-a", CapacityType: "on-demand", Price: price}}}
	}
	return []solver.InstanceType{mk("small", 2, 0.10), mk("large", 8, 0.40)}
}

// fixture is a cluster of one pool: nodes with their claims and pods.
type fixture struct {
	np     *v1alpha1.NodePool
	nodes  []corev1.Node
	claims []v1alpha1.NodeClaim
	p      *solver.Problem
	input  Input
	// pools are NodePools besides np (see movePool).
	pools []*v1alpha1.NodePool
}

// movePool puts the fixture's last node in a NodePool of its own, a copy
// of np named name.
func (f *fixture) movePool(name string) {
	np := f.np.DeepCopy()
	np.Name = name
	f.pools = append(f.pools, np)
	pool := f.p.Pools[0]
	pool.Name = name
	f.p.Pools = append(f.p.Pools, pool)
	i := len(f.p.Nodes) - 1
	f.p.Nodes[i].Pool = name
	f.p.Nodes[i].Labels[solver.LabelNodePool] = name
	f.claims[i].Labels = map[string]string{v1alpha1.LabelNodePool: name}
}

func newFixture(budgets ...v1alpha1.Budget) *fixture {
	np := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "pool"}, Spec: v1alpha1.NodePoolSpec{
		Template: v1alpha1.NodeClaimTemplate{Spec: v1alpha1.NodeClaimTemplateSpec{
			NodeClassRef: v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "SimNodeClass", Name: "sim"},
		}},
		Disruption: v1alpha1.Disruption{Budgets: budgets},
	}}
	pool := solver.Pool{Name: "pool", Labels: map[string]string{}, Consolidation: solver.Consolidation{Policy: solver.WhenEmptyOrUnderutilized, NodesAllowed: -1}}
	return &fixture{np: np, p: &solver.Problem{Pools: []solver.Pool{pool}, InstanceTypes: types()}}
}

// node adds a node of the type running pods (each of cpu millicores).
func (f *fixture) node(name, typ string, podCPU ...int64) *solver.Node {
	var it *solver.InstanceType
	for i := range f.p.InstanceTypes {
		if f.p.InstanceTypes[i].Name == typ {
			it = &f.p.InstanceTypes[i]
		}
	}
	sn := solver.Node{Name: name, Pool: "pool", InstanceType: typ, Zone: "zone-a", CapacityType: "on-demand", Price: it.Offerings[0].Price,
		Labels: map[string]string{solver.LabelInstanceType: typ, solver.LabelNodePool: "pool", solver.LabelZone: "zone-a",
			solver.LabelCapacityType: "on-demand", solver.LabelHostname: name},
		Allocatable: it.Capacity, Created: now.Add(-time.Hour), LastPodChange: now.Add(-time.Hour)}
	for i, cpu := range podCPU {
		pod := solver.Pod{Namespace: "ns", Name: name + "-pod-" + string(rune('a'+i)), Owner: "Deployment/web", Requests: res(cpu, gi),
			Controller: true, Labels: map[string]string{"app": "web"}}
		sn.Pods = append(sn.Pods, pod)
		sn.Requested = sn.Requested.Add(pod.Requests)
	}
	f.p.Nodes = append(f.p.Nodes, sn)
	id := "sim://" + name
	f.nodes = append(f.nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: sn.Labels}, Spec: corev1.NodeSpec{ProviderID: id},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}})
	f.claims = append(f.claims, v1alpha1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-claim", Labels: map[string]string{v1alpha1.LabelNodePool: "pool"},
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec:   v1alpha1.NodeClaimSpec{NodeClassRef: f.np.Spec.Template.Spec.NodeClassRef},
		Status: v1alpha1.NodeClaimStatus{ProviderID: id, PricePerHour: "0"},
	})
	return &f.p.Nodes[len(f.p.Nodes)-1]
}

func (f *fixture) view(t *testing.T) *View {
	t.Helper()
	in := f.input
	pools := map[string]*v1alpha1.NodePool{"pool": f.np}
	for _, np := range f.pools {
		pools[np.Name] = np
	}
	in.Snapshot = &Snapshot{Problem: f.p, Pools: pools}
	in.Nodes, in.Claims, in.Now = f.nodes, f.claims, now
	v, err := NewView(in)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (f *fixture) choose(t *testing.T) (*View, *Candidate, map[string]Refusal) {
	t.Helper()
	v := f.view(t)
	plan, err := solver.Consolidate(v.problem)
	if err != nil {
		t.Fatal(err)
	}
	chosen, refused := v.Choose(plan)
	if len(chosen) == 0 {
		return v, nil, refused
	}
	return v, chosen[0], refused
}

func TestChoose(t *testing.T) {
	tests := []struct {
		name string
		// setup builds the cluster.
		setup func(f *fixture)
		// wantKind and wantNodes are the action chosen ("" for none);
		// wantReason its budget reason.
		wantKind, wantReason string
		wantNodes            []string
		// refused maps nodes to a fragment of the reason they are left alone.
		refused map[string]string
	}{
		{
			name: "empty nodes are deleted together",
			setup: func(f *fixture) {
				f.np.Spec.Disruption.Budgets = []v1alpha1.Budget{{Nodes: "100%"}}
				f.node("a", "small")
				f.node("b", "small")
				f.node("c", "large", 3000)
			},
			wantKind:  solver.ActionDelete,
			wantNodes: []string{"a", "b"}, wantReason: ReasonEmpty,
		},
		{
			name: "a budget of one node deletes one empty node; the other waits for the budget",
			setup: func(f *fixture) {
				f.np.Spec.Disruption.Budgets = []v1alpha1.Budget{{Nodes: "1"}}
				f.node("a", "small")
				f.node("b", "small")
				f.node("c", "large", 1000)
			},
			wantKind: solver.ActionDelete, wantNodes: []string{"a"}, wantReason: ReasonEmpty,
			refused: map[string]string{"b": "budget"},
		},
		{
			name: "a node already being disrupted uses up a budget of one",
			setup: func(f *fixture) {
				f.np.Spec.Disruption.Budgets = []v1alpha1.Budget{{Nodes: "1"}}
				f.node("a", "small")
				f.node("b", "large", 1000)
				f.nodes[1].Spec.Taints = []corev1.Taint{Taint}
			},
			refused: map[string]string{"a": "budget allows 0", "b": "already under way"},
		},
		{
			name: "a NotReady node counts as disrupting",
			setup: func(f *fixture) {
				f.np.Spec.Disruption.Budgets = []v1alpha1.Budget{{Nodes: "1"}}
				f.node("a", "small")
				f.node("b", "large", 1000)
				f.nodes[1].Status.Conditions[0].Status = corev1.ConditionFalse
			},
			refused: map[string]string{"a": "budget allows 0", "b": "not Ready"},
		},
		{
			name: "a budget that is active now with nodes 0 blocks everything",
			setup: func(f *fixture) {
				f.np.Spec.Disruption.Budgets = []v1alpha1.Budget{{Nodes: "0", Schedule: ptr.To("0 11 * * *"), Duration: &metav1.Duration{Duration: 2 * time.Hour}}}
				f.node("a", "small")
				f.node("b", "large", 1000)
			},
			refused: map[string]string{"a": "allows 0"},
		},
		{
			name: "a budget of 0 whose window is closed does not apply",
			setup: func(f *fixture) {
				f.np.Spec.Disruption.Budgets = []v1alpha1.Budget{{Nodes: "0", Schedule: ptr.To("0 13 * * *"), Duration: &metav1.Duration{Duration: time.Hour}}}
				f.node("a", "small")
				f.node("b", "large", 1000)
			},
			wantKind: solver.ActionDelete, wantNodes: []string{"a"}, wantReason: ReasonEmpty,
		},
		{
			name: "a budget for Drifted only does not hold back empty nodes",
			setup: func(f *fixture) {
				f.np.Spec.Disruption.Budgets = []v1alpha1.Budget{{Nodes: "0", Reasons: []v1alpha1.DisruptionReason{v1alpha1.DisruptionReasonDrifted}}}
				f.node("a", "small")
				f.node("b", "large", 1000)
			},
			wantKind: solver.ActionDelete, wantNodes: []string{"a"}, wantReason: ReasonEmpty,
		},
		{
			name: "an underutilized large node is replaced by a small one",
			setup: func(f *fixture) {
				f.np.Spec.Disruption.Budgets = []v1alpha1.Budget{{Nodes: "100%"}}
				f.node("big", "large", 500, 500)
			},
			wantKind: solver.ActionReplace, wantNodes: []string{"big"}, wantReason: ReasonUnderutilized,
		},
		{
			name: "a node whose pods fit elsewhere is deleted",
			setup: func(f *fixture) {
				f.np.Spec.Disruption.Budgets = []v1alpha1.Budget{{Nodes: "100%"}}
				f.node("a", "large", 3000) // no small holds it: packed from scratch is one large, so deleting b is the whole saving
				f.node("b", "small", 500)
			},
			wantKind: solver.ActionDelete, wantNodes: []string{"b"}, wantReason: ReasonUnderutilized,
		},
		{
			name: "a merge saving more than the delete is chosen instead",
			setup: func(f *fixture) {
				f.np.Spec.Disruption.Budgets = []v1alpha1.Budget{{Nodes: "100%"}}
				f.node("a", "large", 2000) // two smalls hold both pods for $0.20/h against $0.50/h; deleting b saves $0.10/h
				f.node("b", "small", 500)
			},
			wantKind: solver.ActionMerge, wantNodes: []string{"a", "b"}, wantReason: ReasonUnderutilized,
		},
		{
			name: "a PDB allowing no disruption keeps the node",
			setup: func(f *fixture) {
				f.node("big", "large", 500, 500)
				f.p.PDBs = []solver.PDB{{Namespace: "ns", Name: "web", Selector: solver.Selector{MatchLabels: map[string]string{"app": "web"}}}}
			},
			refused: map[string]string{"big": "PDB ns/web allows 0 disruptions"},
		},
		{
			name: "a do-not-disrupt pod keeps the node",
			setup: func(f *fixture) {
				n := f.node("big", "large", 500, 500)
				n.Pods[0].DoNotDisrupt = true
			},
			refused: map[string]string{"big": "do-not-disrupt"},
		},
		{
			name: "a pod without a controller keeps the node",
			setup: func(f *fixture) {
				n := f.node("big", "large", 500, 500)
				n.Pods[1].Controller = false
			},
			refused: map[string]string{"big": "no controller"},
		},
		{
			name: "with uncontrolled pods allowed the node is replaced",
			setup: func(f *fixture) {
				n := f.node("big", "large", 500, 500)
				n.Pods[1].Controller = false
				f.input.AllowUncontrolled = true
			},
			wantKind: solver.ActionReplace, wantNodes: []string{"big"}, wantReason: ReasonUnderutilized,
		},
		{
			name: "a pod that left recently holds the node for consolidateAfter",
			setup: func(f *fixture) {
				f.p.Pools[0].Consolidation.After = time.Minute
				f.node("a", "small")
				f.node("b", "large", 1000)
				f.claims[0].Status.LastPodEventTime = ptr.To(metav1.NewTime(now.Add(-20 * time.Second)))
				f.p.Nodes[1].Pods[0].Requests = res(3000, gi)
				f.p.Nodes[1].Requested = res(3000, gi)
			},
			refused: map[string]string{"a": "pods changed 20s ago; consolidateAfter is 1m"},
		},
		{
			name: "WhenEmpty leaves an underutilized node alone",
			setup: func(f *fixture) {
				f.p.Pools[0].Consolidation.Policy = solver.WhenEmpty
				f.node("big", "large", 500, 500)
			},
			refused: map[string]string{"big": "WhenEmpty"},
		},
		{
			name: "a node with pods nominated to it is not empty",
			setup: func(f *fixture) {
				f.np.Spec.Disruption.Budgets = []v1alpha1.Budget{{Nodes: "100%"}}
				n := f.node("a", "small")
				n.Requested = n.Requested.Add(res(500, gi)) // one nominated pod
				f.node("b", "large", 3000)
			},
			refused: map[string]string{"a": "1 pod(s) the provisioner planned onto it have not arrived yet"},
		},
		{
			name: "a node no NodeClaim owns is never removed",
			setup: func(f *fixture) {
				f.node("a", "small")
				f.node("b", "large", 1000)
				f.claims = f.claims[1:]
				f.p.Nodes[1].Pods[0].Requests = res(3000, gi)
				f.p.Nodes[1].Requested = res(3000, gi)
			},
			refused: map[string]string{"a": "no rightsize NodeClaim"},
		},
		{
			name: "an expired node is replaced whatever the saving",
			setup: func(f *fixture) {
				f.node("a", "small", 1500)
				f.claims[0].Spec.ExpireAfter = "30m"
			},
			wantKind: solver.ActionReplace, wantNodes: []string{"a"}, wantReason: ReasonExpired,
		},
		{
			// Karpenter core's expiration controller
			// (pkg/controllers/nodeclaim/expiration/controller.go) deletes an
			// expired NodeClaim without consulting any budget.
			name: "an expired node is replaced though its budget allows no disruption",
			setup: func(f *fixture) {
				f.np.Spec.Disruption.Budgets = []v1alpha1.Budget{{Nodes: "0"}}
				f.node("a", "small", 1500)
				f.claims[0].Spec.ExpireAfter = "30m"
			},
			wantKind: solver.ActionReplace, wantNodes: []string{"a"}, wantReason: ReasonExpired,
		},
		{
			name: "an expired node is replaced though a PDB allows no eviction now (the drain waits on it)",
			setup: func(f *fixture) {
				f.node("a", "small", 1500)
				f.claims[0].Spec.ExpireAfter = "30m"
				f.p.PDBs = []solver.PDB{{Namespace: "ns", Name: "web", Selector: solver.Selector{MatchLabels: map[string]string{"app": "web"}}}}
			},
			wantKind: solver.ActionReplace, wantNodes: []string{"a"}, wantReason: ReasonExpired,
		},
		{
			name: "an expired node with a do-not-disrupt pod is replaced (the drain holds the pod until the grace period)",
			setup: func(f *fixture) {
				n := f.node("a", "small", 1500)
				n.Pods[0].DoNotDisrupt = true
				f.claims[0].Spec.ExpireAfter = "30m"
			},
			wantKind: solver.ActionReplace, wantNodes: []string{"a"}, wantReason: ReasonExpired,
		},
		{
			name: "a drifted node waits on a budget allowing none",
			setup: func(f *fixture) {
				f.np.Spec.Disruption.Budgets = []v1alpha1.Budget{{Nodes: "0"}}
				f.node("a", "small", 1500)
				f.np.Spec.Template.Spec.Requirements = []v1alpha1.NodeSelectorRequirement{{Key: solver.LabelInstanceType, Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"large"}}}
			},
			refused: map[string]string{"a": "disruption budget allows 0 more"},
		},
		{
			name: "a node that drifted from its pool's requirements is replaced",
			setup: func(f *fixture) {
				f.node("a", "small", 1500)
				f.np.Spec.Template.Spec.Requirements = []v1alpha1.NodeSelectorRequirement{{Key: solver.LabelInstanceType, Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"large"}}}
			},
			wantKind: solver.ActionReplace, wantNodes: []string{"a"}, wantReason: ReasonDrifted,
		},
		{
			name: "a drifted node with a do-not-disrupt pod stays",
			setup: func(f *fixture) {
				n := f.node("a", "small", 1500)
				n.Pods[0].DoNotDisrupt = true
				f.np.Spec.Template.Spec.NodeClassRef.Name = "other"
			},
			refused: map[string]string{"a": "do-not-disrupt"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture()
			tt.setup(f)
			_, c, refused := f.choose(t)
			switch {
			case tt.wantKind == "" && c != nil:
				t.Fatalf("chose %s %v (%s): %s; want nothing", c.Action.Kind, c.Action.Nodes, c.Reason, c.Action.Reason)
			case tt.wantKind != "" && c == nil:
				t.Fatalf("chose nothing; want %s %v; refused: %v", tt.wantKind, tt.wantNodes, refused)
			case c != nil:
				if c.Action.Kind != tt.wantKind || c.Reason != tt.wantReason || strings.Join(c.Action.Nodes, ",") != strings.Join(tt.wantNodes, ",") {
					t.Errorf("chose %s %v (%s), want %s %v (%s)", c.Action.Kind, c.Action.Nodes, c.Reason, tt.wantKind, tt.wantNodes, tt.wantReason)
				}
				if c.Action.Reason == "" {
					t.Errorf("the action has no reason")
				}
			}
			for node, frag := range tt.refused {
				if !strings.Contains(refused[node].Reason, frag) {
					t.Errorf("node %s refused with %q, want it to mention %q", node, refused[node].Reason, frag)
				}
			}
		})
	}
}

func TestDecideReplacesAClaimDriftedFromItsNodeClass(t *testing.T) {
	f := newFixture(v1alpha1.Budget{Nodes: "100%"})
	f.node("a", "small", 1500)
	f.node("b", "large", 500)
	const why = "its image ami-old is no longer among the images EC2NodeClass default selects (ami-new)"
	f.claims[0].Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: "NodeClassDrifted", Message: why}}
	d, err := Decide(Input{Snapshot: &Snapshot{Problem: f.p, Pools: map[string]*v1alpha1.NodePool{"pool": f.np}},
		Nodes: f.nodes, Claims: f.claims, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if d.Action == nil || strings.Join(d.Action.Nodes, ",") != "a" || d.Reason != ReasonDrifted || d.Action.Reason != why {
		t.Fatalf("Decide = %+v (%s); want node a replaced for Drifted with the condition's message", d.Action, d.Reason)
	}
	// A budget of zero for Drifted holds it back, and says why.
	f = newFixture(v1alpha1.Budget{Nodes: "0", Reasons: []v1alpha1.DisruptionReason{v1alpha1.DisruptionReasonDrifted}})
	f.node("a", "small", 1500)
	f.node("b", "large", 500)
	f.claims[0].Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: "NodeClassDrifted", Message: why}}
	d, err = Decide(Input{Snapshot: &Snapshot{Problem: f.p, Pools: map[string]*v1alpha1.NodePool{"pool": f.np}},
		Nodes: f.nodes, Claims: f.claims, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != nil && slices.Contains(d.Action.Nodes, "a") || !strings.Contains(d.Refused["a"].Reason, why) || !strings.Contains(d.Refused["a"].Reason, "budget") {
		t.Errorf("with a zero Drifted budget: action %+v, refused %q; want a left alone, naming the drift and the budget", d.Action, d.Refused["a"].Reason)
	}
}

// TestLastPodEventTime checks that consolidateAfter counts from the later
// of the last pod arrival the snapshot saw and the pod event the node's
// NodeClaim recorded, in Decide, which the controller and explain share.
func TestLastPodEventTime(t *testing.T) {
	tests := []struct {
		name string
		// arrival is the last pod arrival on node a, event the time its
		// NodeClaim recorded (nil: none), both before now.
		arrival time.Duration
		event   *time.Duration
		// held is the refusal wanted for a; "" when a is deleted.
		held string
	}{
		{name: "no recorded event: the old arrival counts and the empty node goes", arrival: time.Hour},
		{name: "a pod left 20s ago: held though its last arrival is old", arrival: time.Hour, event: ptr.To(20 * time.Second),
			held: "pods changed 20s ago; consolidateAfter is 1m"},
		{name: "the last pod left 2m ago: consolidateAfter has passed", arrival: time.Hour, event: ptr.To(2 * time.Minute)},
		{name: "an arrival after the recorded event counts", arrival: 10 * time.Second, event: ptr.To(2 * time.Minute),
			held: "pods changed 10s ago"},
		{name: "a recorded event at exactly consolidateAfter no longer holds the node", arrival: time.Hour, event: ptr.To(time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(v1alpha1.Budget{Nodes: "100%"})
			f.p.Pools[0].Consolidation.After = time.Minute
			f.node("a", "small").LastPodChange = now.Add(-tt.arrival)
			f.node("b", "large", 1000)
			if tt.event != nil {
				f.claims[0].Status.LastPodEventTime = ptr.To(metav1.NewTime(now.Add(-*tt.event)))
			}
			d, err := Decide(Input{Snapshot: &Snapshot{Problem: f.p, Pools: map[string]*v1alpha1.NodePool{"pool": f.np}},
				Nodes: f.nodes, Claims: f.claims, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			deleted := d.Action != nil && d.Action.Kind == solver.ActionDelete && strings.Join(d.Action.Nodes, ",") == "a"
			switch {
			case tt.held == "" && !deleted:
				t.Errorf("a not deleted: action %+v, refused %q", d.Action, d.Refused["a"].Reason)
			case tt.held != "" && deleted:
				t.Errorf("a deleted; want it held: %s", tt.held)
			case tt.held != "" && !strings.Contains(d.Refused["a"].Reason, tt.held):
				t.Errorf("a refused with %q, want it to mention %q", d.Refused["a"].Reason, tt.held)
			}
		})
	}
}

func TestRevalidate(t *testing.T) {
	f := newFixture(v1alpha1.Budget{Nodes: "100%"})
	f.node("a", "small")
	f.node("b", "large", 1000)
	_, c, _ := f.choose(t)
	if c == nil || c.Reason != ReasonEmpty {
		t.Fatalf("chose %+v, want the empty node", c)
	}
	// Still empty: valid.
	valid, dropped, err := f.view(t).Revalidate([]*Candidate{c})
	if err != nil || len(valid) != 1 || len(dropped) != 0 {
		t.Fatalf("on the same cluster: valid %+v, dropped %+v, %v; want it valid", valid, dropped, err)
	}
	// A pod landed on it meanwhile: no longer valid, and it says why.
	f.p.Nodes[0].Pods = []solver.Pod{{Namespace: "ns", Name: "late", Owner: "Deployment/web", Requests: res(1500, gi), Controller: true}}
	f.p.Nodes[0].Requested = res(1500, gi)
	f.p.Nodes[0].LastPodChange = now
	f.p.Pools[0].Consolidation.After = time.Minute
	valid, dropped, err = f.view(t).Revalidate([]*Candidate{c})
	if err != nil || len(valid) != 0 || len(dropped) != 1 || !strings.Contains(dropped[0].Why, "consolidateAfter") {
		t.Errorf("revalidate = %+v, %+v, %v; want it dropped because pods changed", valid, dropped, err)
	}
}

// TestChooseRunsIndependentActionsTogether: the planner's actions that
// the budget allows together are all chosen, and validated together.
func TestChooseRunsIndependentActionsTogether(t *testing.T) {
	tests := []struct {
		name   string
		budget string
		// want is how many actions are chosen, and later how many nodes
		// wait for the budget.
		want, later int
	}{
		{name: "a budget of all nodes", budget: "100%", want: 3},
		{name: "a budget of no nodes", budget: "0", want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := withMedium(newFixture(v1alpha1.Budget{Nodes: tt.budget}))
			// Three large nodes in three pools (so that no merge takes
			// them together), each of whose pod fits neither on the others
			// nor on a small node: each is replaced by a medium.
			f.node("x", "large", 5000)
			f.node("y", "large", 5000)
			f.movePool("pool-y")
			f.node("z", "large", 5000)
			f.movePool("pool-z")
			v := f.view(t)
			plan, err := solver.Consolidate(v.problem)
			if err != nil {
				t.Fatal(err)
			}
			chosen, refused := v.Choose(plan)
			if len(chosen) != tt.want {
				t.Fatalf("chose %d actions %+v, want %d; refused %+v", len(chosen), chosen, tt.want, refused)
			}
			later := 0
			for _, r := range refused {
				if r.Later {
					later++
				}
			}
			if later != tt.later {
				t.Errorf("%d nodes wait, want %d: %+v", later, tt.later, refused)
			}
			valid, dropped, err := f.view(t).Revalidate(chosen)
			if err != nil || len(valid) != len(chosen) || len(dropped) != 0 {
				t.Errorf("revalidated %d of %d (dropped %+v, %v), want all on the same cluster", len(valid), len(chosen), dropped, err)
			}
		})
	}
}

// withMedium adds a medium type (6 CPU, $0.25/h) to the fixture's catalog.
func withMedium(f *fixture) *fixture {
	m := f.p.InstanceTypes[1]
	m.Name, m.Labels = "medium", map[string]string{solver.LabelInstanceType: "medium"}
	m.Capacity[solver.CPU], m.Capacity[solver.Memory] = 6000, 24*gi
	m.Offerings = []solver.Offering{{Zone: "zone-a", CapacityType: "on-demand", Price: 0.25}}
	f.p.InstanceTypes = append(f.p.InstanceTypes, m)
	return f
}

// TestChooseKeepsPDBsAcrossActions: two actions that each evict one pod of
// a PDB allowing one disruption are not chosen together.
func TestChooseKeepsPDBsAcrossActions(t *testing.T) {
	f := withMedium(newFixture(v1alpha1.Budget{Nodes: "100%"}))
	f.node("x", "large", 5000)
	f.node("y", "large", 5000)
	f.movePool("pool-y")
	f.p.PDBs = []solver.PDB{{Namespace: "ns", Name: "web", Selector: solver.Selector{MatchLabels: map[string]string{"app": "web"}}, DisruptionsAllowed: 1}}
	v := f.view(t)
	plan, err := solver.Consolidate(v.problem)
	if err != nil {
		t.Fatal(err)
	}
	chosen, refused := v.Choose(plan)
	if len(chosen) != 1 {
		t.Fatalf("chose %+v, want one action: the PDB allows one eviction", chosen)
	}
	other := "x"
	if slices.Contains(chosen[0].Action.Nodes, "x") {
		other = "y"
	}
	if r := refused[other]; !r.Later || !strings.Contains(r.Reason, "PDB ns/web allows 1") {
		t.Errorf("%s refused with %+v, want it later because of the PDB", other, r)
	}
}

func TestDrifted(t *testing.T) {
	base := func() (*corev1.Node, *v1alpha1.NodeClaim, *v1alpha1.NodePool) {
		ref := v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "SimNodeClass", Name: "sim"}
		np := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "pool"}, Spec: v1alpha1.NodePoolSpec{Template: v1alpha1.NodeClaimTemplate{
			ObjectMeta: v1alpha1.ObjectMeta{Labels: map[string]string{"team": "a"}},
			Spec: v1alpha1.NodeClaimTemplateSpec{NodeClassRef: ref, Requirements: []v1alpha1.NodeSelectorRequirement{
				{Key: solver.LabelCapacityType, Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"on-demand"}}}},
		}}}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{solver.LabelCapacityType: "on-demand", "team": "a"}}}
		claim := &v1alpha1.NodeClaim{Spec: v1alpha1.NodeClaimSpec{NodeClassRef: ref}}
		return node, claim, np
	}
	tests := []struct {
		name   string
		change func(*corev1.Node, *v1alpha1.NodeClaim, *v1alpha1.NodePool)
		want   string // fragment; "" means not drifted
	}{
		{"unchanged", func(*corev1.Node, *v1alpha1.NodeClaim, *v1alpha1.NodePool) {}, ""},
		{"node class changed", func(_ *corev1.Node, _ *v1alpha1.NodeClaim, np *v1alpha1.NodePool) {
			np.Spec.Template.Spec.NodeClassRef.Name = "new"
		}, "now uses SimNodeClass new"},
		{"requirement no longer met", func(_ *corev1.Node, _ *v1alpha1.NodeClaim, np *v1alpha1.NodePool) {
			np.Spec.Template.Spec.Requirements[0].Values = []string{"spot"}
		}, "no longer satisfies"},
		{"new requirement on a label the node lacks: compatible", func(_ *corev1.Node, _ *v1alpha1.NodeClaim, np *v1alpha1.NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				v1alpha1.NodeSelectorRequirement{Key: "arch", Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"arm64"}})
		}, ""},
		{"new requirement the node's label fails", func(n *corev1.Node, _ *v1alpha1.NodeClaim, np *v1alpha1.NodePool) {
			n.Labels["arch"] = "amd64"
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				v1alpha1.NodeSelectorRequirement{Key: "arch", Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"arm64"}})
		}, "arch=amd64"},
		{"label changed", func(_ *corev1.Node, _ *v1alpha1.NodeClaim, np *v1alpha1.NodePool) {
			np.Spec.Template.Labels["team"] = "b"
		}, "team=b"},
		{"taint added", func(_ *corev1.Node, _ *v1alpha1.NodeClaim, np *v1alpha1.NodePool) {
			np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		}, "taints its nodes gpu:NoSchedule"},
		{"claim Drifted from its node class", func(_ *corev1.Node, c *v1alpha1.NodeClaim, _ *v1alpha1.NodePool) {
			c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionDrifted, Status: metav1.ConditionTrue, Reason: "NodeClassDrifted",
				Message: "SimNodeClass sim's launch settings changed since the node was launched"}}
		}, "SimNodeClass sim's launch settings changed"},
		{"claim Drifted condition False", func(_ *corev1.Node, c *v1alpha1.NodeClaim, _ *v1alpha1.NodePool) {
			c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionDrifted, Status: metav1.ConditionFalse, Reason: "NotDrifted"}}
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node, claim, np := base()
			tt.change(node, claim, np)
			got := drifted(node, claim, np)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("drifted = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestExpired(t *testing.T) {
	claim := &v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour))}}
	for _, tt := range []struct {
		after v1alpha1.NillableDuration
		want  bool
	}{{"", false}, {v1alpha1.Never, false}, {"3h", false}, {"2h", true}, {"30m", true}} {
		claim.Spec.ExpireAfter = tt.after
		if got := expired(claim, now) != ""; got != tt.want {
			t.Errorf("expireAfter %q: expired = %v, want %v", tt.after, got, tt.want)
		}
	}
}

// TestDecide checks that Decide, what explain shows, gives the actions and
// the refusals a controller round chooses.
func TestDecide(t *testing.T) {
	build := func() *fixture {
		f := newFixture(v1alpha1.Budget{Nodes: "100%"})
		f.node("a", "small")
		f.node("b", "large", 500)
		f.node("c", "large", 500)
		f.nodes[2].Annotations = map[string]string{"rightsize.dev/do-not-disrupt": "true"}
		f.p.Nodes[2].DoNotDisrupt = true
		return f
	}
	_, chosen, refused := build().choose(t)
	f := build()
	d, err := Decide(Input{Snapshot: &Snapshot{Problem: f.p, Pools: map[string]*v1alpha1.NodePool{"pool": f.np}},
		Nodes: f.nodes, Claims: f.claims, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if chosen == nil || d.Action == nil || strings.Join(d.Action.Nodes, ",") != strings.Join(chosen.Action.Nodes, ",") || d.Reason != chosen.Reason {
		t.Fatalf("Decide chose %+v (%s), a round chooses %+v", d.Action, d.Reason, chosen)
	}
	if strings.Join(d.Action.Nodes, ",") != "a" || d.Reason != ReasonEmpty {
		t.Errorf("action %v (%s), want the empty node a deleted (Empty)", d.Action.Nodes, d.Reason)
	}
	if len(d.Refused) != len(refused) || d.Refused["c"] != refused["c"] || !strings.Contains(d.Refused["c"].Reason, "do-not-disrupt") {
		t.Errorf("refused %v, a round refuses %v", d.Refused, refused)
	}
	if len(d.Chosen) != 2 || d.Chosen[1].Reason != ReasonUnderutilized || strings.Join(d.Chosen[1].Action.Nodes, ",") != "b" {
		t.Errorf("chosen %+v, want b deleted too, together with a (its pod fits on c)", d.Chosen)
	}
	if _, ok := d.Refused["b"]; ok || d.Refused["c"].Later {
		t.Errorf("refused %+v, want b chosen and c kept (do-not-disrupt)", d.Refused)
	}
}

// TestAnInvalidBudgetBlocks checks that a pool whose budgets cannot be
// read has none of its nodes disrupted, rather than the default 10%.
func TestAnInvalidBudgetBlocks(t *testing.T) {
	f := newFixture(v1alpha1.Budget{Nodes: "lots"})
	f.node("a", "small")
	f.node("b", "large", 500)
	_, c, refused := f.choose(t)
	if c != nil {
		t.Fatalf("chose %+v, want nothing", c)
	}
	if !strings.Contains(refused["a"].Reason, "budget allows 0") {
		t.Errorf("a refused with %q, want the budget named", refused["a"].Reason)
	}
}

// TestChooseCountsEveryChosenNodeInTheBudget: an empty node's deletion and
// a replacement in one pool run together only when its budget covers both.
func TestChooseCountsEveryChosenNodeInTheBudget(t *testing.T) {
	for _, tt := range []struct {
		budget string
		want   int
	}{{"1", 1}, {"2", 2}} {
		f := withMedium(newFixture(v1alpha1.Budget{Nodes: tt.budget}))
		f.node("a", "small")
		f.node("x", "large", 5000)
		v := f.view(t)
		plan, err := solver.Consolidate(v.problem)
		if err != nil {
			t.Fatal(err)
		}
		chosen, refused := v.Choose(plan)
		if len(chosen) != tt.want || chosen[0].Reason != ReasonEmpty {
			t.Errorf("budget %s: chose %+v, want %d actions, the empty node first; refused %+v", tt.budget, chosen, tt.want, refused)
		}
		if tt.want == 1 && !strings.Contains(refused["x"].Reason, "budget") {
			t.Errorf("budget %s: x refused with %q, want the budget named", tt.budget, refused["x"].Reason)
		}
	}
}

// TestChoosePDBAllowingOneLetsTheEvictionAPIPace: as in Karpenter
// (pkg/utils/pdb CanEvictPods), a node whose two pods a PDB allowing one
// disruption selects is consolidated (the eviction API evicts them one
// after the other); a PDB allowing none keeps it.
func TestChoosePDBAllowingOneLetsTheEvictionAPIPace(t *testing.T) {
	for _, tt := range []struct {
		allowed int32
		chosen  bool
	}{{allowed: 1, chosen: true}, {allowed: 0, chosen: false}} {
		f := newFixture(v1alpha1.Budget{Nodes: "100%"})
		f.node("big", "large", 4000)
		f.node("s", "small", 500, 500)
		f.p.PDBs = []solver.PDB{{Namespace: "ns", Name: "web", Selector: solver.Selector{MatchLabels: map[string]string{"app": "web"}}, DisruptionsAllowed: tt.allowed}}
		_, c, refused := f.choose(t)
		if got := c != nil && slices.Contains(c.Action.Nodes, "s"); got != tt.chosen {
			t.Errorf("PDB allowing %d: node s chosen %v, want %v (chose %+v, refused %+v)", tt.allowed, got, tt.chosen, c, refused)
		}
		if !tt.chosen && !strings.Contains(refused["s"].Reason, "PDB ns/web allows 0 disruptions") {
			t.Errorf("PDB allowing 0: node s refused with %q, want the PDB named", refused["s"].Reason)
		}
	}
}

// TestNextDeadline: the next plan comes when a node's consolidateAfter
// elapses, or soon while a node awaits pods planned onto it (a refusal
// that passes without a change the controller watches), else at the
// interval.
func TestNextDeadline(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    func(f *fixture)
		interval time.Duration
		want     time.Duration
	}{
		{"nothing to wait for", func(f *fixture) { f.node("a", "large", 3000) }, 5 * time.Minute, 5 * time.Minute},
		{"consolidateAfter elapses in 40 s", func(f *fixture) {
			f.p.Pools[0].Consolidation.After = time.Minute
			f.node("a", "large", 3000).LastPodChange = now.Add(-20 * time.Second)
		}, 5 * time.Minute, 40*time.Second + 500*time.Millisecond},
		{"a node awaits a planned pod", func(f *fixture) {
			n := f.node("a", "small")
			n.Requested = n.Requested.Add(res(500, gi))
		}, 5 * time.Minute, awaitingRecheck},
		{"a node awaits a planned pod, a shorter interval", func(f *fixture) {
			n := f.node("a", "small")
			n.Requested = n.Requested.Add(res(500, gi))
		}, 3 * time.Second, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			tc.setup(f)
			if got := f.view(t).NextDeadline(tc.interval); got != tc.want {
				t.Errorf("NextDeadline(%s) = %s, want %s", tc.interval, got, tc.want)
			}
		})
	}
}
