package disruption

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// TaintKey is the NoSchedule taint put on nodes a disruption action is
// about to drain (v1alpha1.TaintKeyDisrupted).
const TaintKey = v1alpha1.TaintKeyDisrupted

// Taint is the taint put on the candidates of an action.
var Taint = corev1.Taint{Key: TaintKey, Effect: corev1.TaintEffectNoSchedule}

// Snapshot is the solver's view of the cluster the operator plans with
// (its provisioner's, built by plan.Build): the pods, nodes, in-flight
// NodeClaims, pools and offerings, so that provisioning and disruption
// decide on the same input.
type Snapshot struct {
	// Problem has the pending pods not yet nominated to a NodeClaim, every
	// node with the pods bound to it, the nodes of NodeClaims that have not
	// initialized (InFlight), the pools that can launch and the offerings
	// not marked unavailable.
	Problem *solver.Problem
	// Pools are the NodePools in the problem, by name.
	Pools map[string]*v1alpha1.NodePool
	// Repriced names the instance types a NodeOverlay re-priced: a node
	// of one is priced as the problem prices it (the overlay's price, what
	// its replacements are priced at), not by the cloud's price its
	// NodeClaim recorded.
	Repriced map[string]bool
}

// nodeInfo is what the controller knows of one node of the problem.
type nodeInfo struct {
	node  *corev1.Node
	claim *v1alpha1.NodeClaim
	pool  *v1alpha1.NodePool
	// index is the node's index in the problem.
	index int
	// disrupting says why the node counts against its pool's budget
	// already (being disrupted, deleted or NotReady); "" when it does not.
	disrupting string
	// awaiting is set while pods the provisioner planned onto the node
	// have not arrived: a refusal that passes without any change the
	// controller watches, so the node is looked at again soon
	// (NextDeadline).
	awaiting bool
}

// awaitingRecheck is how soon a node whose planned pods have not arrived
// yet is planned for again: the period of Karpenter's disruption loop. The
// provisioner forgets a nomination without any change the disruption
// controller watches (the pod went to another node, the nomination
// lapsed), and the refusal it told must not stay the node's last word.
const awaitingRecheck = 10 * time.Second

// View is one look at the cluster: the solver's problem prepared for
// consolidation, and what the guards need besides. Build it with NewView.
type View struct {
	snap    *Snapshot
	problem *solver.Problem
	nodes   map[string]*nodeInfo
	// budgetCount counts the pools' nodes against their budgets.
	budgetCount
	// blocked is why a node may not be disrupted at all, found by the
	// controller rather than the planner; it overrides the planner's reason.
	blocked map[string]string
	// held counts the actions chosen earlier that are not done yet;
	// heldForced is set when one of them replaces a drifted or expired
	// node (see Hold).
	held       int
	heldForced bool
}

// Input is one look at the cluster: the provisioner's snapshot (or one
// built the same way, with plan.Build) and the objects the guards read.
type Input struct {
	// Snapshot's Problem is prepared for consolidation in place: callers
	// pass a problem they do not reuse. Its Options.Deadline bounds the plan.
	Snapshot *Snapshot
	Nodes    []corev1.Node
	Claims   []v1alpha1.NodeClaim
	// AllowUncontrolled lets actions evict pods no controller recreates.
	AllowUncontrolled bool
	Now               time.Time
	// Reprice, when set, prices the nodes again once they carry their
	// NodeClaims' prices, before anything is planned: the operator and
	// explain pass the Commitments' effective prices (plan.CoveredPrices),
	// so that a saving is what the bill saves.
	Reprice func(*solver.Problem)
}

// NewView prepares the snapshot's problem for consolidation: node prices
// from their NodeClaims (then in.Reprice's), consolidateAfter counted from the NodeClaims'
// lastPodEventTime too (pod departures, which the snapshot cannot see),
// nodes already disrupting or not ours blocked, and every pool's
// NodesAllowed from its budgets.
func NewView(in Input) (*View, error) {
	if in.Snapshot == nil || in.Snapshot.Problem == nil {
		return nil, fmt.Errorf("disruption: no snapshot to plan on")
	}
	v := &View{snap: in.Snapshot, problem: in.Snapshot.Problem, nodes: map[string]*nodeInfo{},
		budgetCount: newBudgetCount(poolBudgets(in.Snapshot.Pools), in.Now), blocked: map[string]string{}}
	byProviderID := map[string]*v1alpha1.NodeClaim{}
	for i := range in.Claims {
		if id := in.Claims[i].Status.ProviderID; id != "" {
			byProviderID[id] = &in.Claims[i]
		}
	}
	nodes := map[string]*corev1.Node{}
	for i := range in.Nodes {
		nodes[in.Nodes[i].Name] = &in.Nodes[i]
	}
	p := v.problem
	p.Options.Now = in.Now
	for i := range p.Nodes {
		sn := &p.Nodes[i]
		if sn.InFlight {
			// Pods are never evicted towards a node that may not come:
			// its launch can still fail.
			sn.Unschedulable = true
		}
		node := nodes[sn.Name]
		if node == nil {
			// An in-flight NodeClaim without a Node yet, or a Node the
			// cache lost between the two reads: not a candidate.
			sn.DoNotDisrupt = true
			continue
		}
		info := &nodeInfo{node: node, index: i}
		v.nodes[sn.Name] = info
		if node.Spec.ProviderID != "" {
			info.claim = byProviderID[node.Spec.ProviderID]
		}
		if info.claim != nil {
			info.pool = in.Snapshot.Pools[claimPool(info.claim)]
			if price := claimPrice(info.claim); price > 0 && !in.Snapshot.Repriced[sn.InstanceType] {
				sn.Price = price
			}
			if sn.Pool == "" {
				sn.Pool = claimPool(info.claim)
			}
		}
		if info.claim != nil {
			sn.LastPodChange = lastPodChange(sn.LastPodChange, info.claim)
		}
		if in.AllowUncontrolled {
			for j := range sn.Pods {
				sn.Pods[j].Controller = true
			}
		}
		info.disrupting = disruptingReason(node, info.claim)
		if sn.Pool != "" && !sn.InFlight {
			v.total[sn.Pool]++
			if info.disrupting != "" {
				v.disrupting[sn.Pool]++
			}
		}
		switch {
		case info.disrupting != "":
			v.blocked[sn.Name] = info.disrupting
		case sn.Requested[solver.Pods] > int64(len(sn.Pods)):
			// The provisioner counts pods it nominated to the node in its
			// requests before they are bound: the node only looks empty.
			v.blocked[sn.Name] = fmt.Sprintf("%d pod(s) the provisioner planned onto it have not arrived yet",
				sn.Requested[solver.Pods]-int64(len(sn.Pods)))
			info.awaiting = true
		case info.claim == nil:
			v.blocked[sn.Name] = "no rightsize NodeClaim owns it, so the operator never removes it"
		case info.pool == nil:
			v.blocked[sn.Name] = fmt.Sprintf("its NodePool %s is gone or cannot launch nodes now", claimPool(info.claim))
		case info.pool.Static():
			// Karpenter consolidates no static node, and replaces a
			// drifted or expired one by its static drift, not here.
			v.blocked[sn.Name] = fmt.Sprintf("its NodePool %s is static (spec.replicas): the static controller keeps its count and replaces its drifted and expired nodes", info.pool.Name)
		}
		if v.blocked[sn.Name] != "" {
			// The planner leaves do-not-disrupt nodes alone; the reason
			// given is ours.
			sn.DoNotDisrupt = true
		}
	}
	if in.Reprice != nil {
		in.Reprice(p)
	}
	v.setNodesAllowed(v.problem.Pools)
	return v, nil
}

// Problem is the problem prepared for consolidation, the one to plan on.
func (v *View) Problem() *solver.Problem { return v.problem }

// Snapshot is what the view was built from.
func (v *View) Snapshot() *Snapshot { return v.snap }

// Node returns a node of the problem that a Node object stands for, and
// the NodeClaim that owns it (nil when none does); ok is false for an
// in-flight NodeClaim's node and for names the problem does not have.
func (v *View) Node(name string) (node *corev1.Node, claim *v1alpha1.NodeClaim, ok bool) {
	info := v.nodes[name]
	if info == nil {
		return nil, nil, false
	}
	return info.node, info.claim, true
}

// Pool names the NodePool of a node of the problem, "" when none.
func (v *View) Pool(node string) string {
	if info := v.nodes[node]; info != nil {
		return v.problem.Nodes[info.index].Pool
	}
	return ""
}

// NextDeadline is how long until a node's consolidateAfter elapses (plus
// half a second, so that it has), or awaitingRecheck while a node awaits
// the pods planned onto it, at most interval: the node is planned for then
// rather than at the next interval.
func (v *View) NextDeadline(interval time.Duration) time.Duration {
	next := interval
	after := map[string]time.Duration{}
	for _, p := range v.problem.Pools {
		after[p.Name] = p.Consolidation.After
	}
	for name, info := range v.nodes {
		sn := &v.problem.Nodes[info.index]
		if info.awaiting {
			next = min(next, awaitingRecheck)
			continue
		}
		a := after[sn.Pool]
		if a <= 0 || v.blocked[name] != "" {
			continue
		}
		last := sn.LastPodChange
		if last.IsZero() {
			last = sn.Created
		}
		if d := last.Add(a).Sub(v.now); d > 0 {
			next = min(next, d+500*time.Millisecond)
		}
	}
	return next
}

// claimPool names the NodePool a NodeClaim belongs to.
func claimPool(claim *v1alpha1.NodeClaim) string { return claim.Labels[v1alpha1.LabelNodePool] }

// claimPrice is the hourly price a NodeClaim recorded, 0 when unknown.
func claimPrice(claim *v1alpha1.NodeClaim) float64 {
	p, err := strconv.ParseFloat(claim.Status.PricePerHour, 64)
	if err != nil {
		return 0
	}
	return p
}

// lastPodChange is when a pod last arrived on or left a node: the later of
// the last arrival the snapshot saw and the pod event its NodeClaim
// recorded.
func lastPodChange(arrival time.Time, claim *v1alpha1.NodeClaim) time.Time {
	if t := claim.Status.LastPodEventTime; t != nil && t.After(arrival) {
		return t.Time
	}
	return arrival
}

// disruptingReason says why a node already counts as disrupted: our taint
// is on it, it or its NodeClaim is being deleted, it is cordoned (as
// Karpenter and explain count it) or it is not Ready.
func disruptingReason(node *corev1.Node, claim *v1alpha1.NodeClaim) string {
	switch {
	case node.DeletionTimestamp != nil:
		return "it is being deleted"
	case claim != nil && claim.DeletionTimestamp != nil:
		return fmt.Sprintf("its NodeClaim %s is being deleted", claim.Name)
	case slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == TaintKey }):
		return "a disruption action is already under way on it"
	case node.Spec.Unschedulable:
		return "it is cordoned"
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return "it is not Ready"
		}
	}
	return ""
}

// poolBudgets reads the pools' disruption budgets. A pool whose budgets
// cannot be read gets a budget of zero: an invalid budget blocks rather
// than allows.
func poolBudgets(pools map[string]*v1alpha1.NodePool) map[string][]Budget {
	out := make(map[string][]Budget, len(pools))
	for name, np := range pools {
		budgets, err := PoolBudgets(np)
		if err != nil {
			budgets = []Budget{{Nodes: "0"}}
		}
		out[name] = budgets
	}
	return out
}

// budgetRefusal says why disrupting the nodes for the reason would exceed
// a pool's budget, or "".
func (v *View) budgetRefusal(nodes []string, reason string) string {
	count := map[string]int{}
	for _, n := range nodes {
		info := v.nodes[n]
		if info == nil {
			return fmt.Sprintf("node %s is gone", n)
		}
		count[v.problem.Nodes[info.index].Pool]++
	}
	for _, pool := range slices.Sorted(maps.Keys(count)) {
		if a := v.allowed(pool, reason); count[pool] > a {
			return fmt.Sprintf("NodePool %s's disruption budget allows %d more node(s) for reason %s now (%d of %d already disrupting)",
				pool, a, reason, v.disrupting[pool], v.total[pool])
		}
	}
	return ""
}

// expired returns why a node's NodeClaim has outlived its expireAfter, or "".
func expired(claim *v1alpha1.NodeClaim, now time.Time) string {
	d, ok, err := claim.Spec.ExpireAfter.Duration()
	if err != nil || !ok {
		return ""
	}
	if age := now.Sub(claim.CreationTimestamp.Time); age >= d {
		return fmt.Sprintf("it is %s old and its expireAfter is %s", age.Round(time.Second), d)
	}
	return ""
}

// drifted returns why a node no longer matches its NodePool (node class,
// requirements, labels or taints changed since it launched) or its node
// class (the claim's Drifted condition, which the drift controller keeps
// from the cloud provider), or "".
func drifted(node *corev1.Node, claim *v1alpha1.NodeClaim, np *v1alpha1.NodePool) string {
	t := &np.Spec.Template
	if ref := t.Spec.NodeClassRef; ref.Name != claim.Spec.NodeClassRef.Name || ref.Kind != claim.Spec.NodeClassRef.Kind {
		return fmt.Sprintf("NodePool %s now uses %s %s and the node was launched with %s %s", np.Name, ref.Kind, ref.Name,
			claim.Spec.NodeClassRef.Kind, claim.Spec.NodeClassRef.Name)
	}
	labels := solver.MapLabels(node.Labels)
	for _, r := range t.Spec.Requirements {
		// As Karpenter's requirement drift: a label the node does not
		// carry is compatible (not every requirement key becomes a label),
		// one it carries must satisfy the requirement.
		have, ok := node.Labels[r.Key]
		if !ok {
			continue
		}
		sr := solver.Requirement{Key: r.Key, Operator: string(r.Operator), Values: r.Values}
		if !sr.Matches(labels) {
			return fmt.Sprintf("its label %s=%s no longer satisfies NodePool %s's requirement %s %s %s", r.Key, have, np.Name,
				r.Key, r.Operator, strings.Join(r.Values, ","))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(t.Labels)) {
		if node.Labels[k] != t.Labels[k] {
			return fmt.Sprintf("NodePool %s now labels its nodes %s=%s", np.Name, k, t.Labels[k])
		}
	}
	for _, want := range t.Spec.Taints {
		if !slices.ContainsFunc(node.Spec.Taints, func(have corev1.Taint) bool {
			return have.Key == want.Key && have.Value == want.Value && have.Effect == want.Effect
		}) {
			return fmt.Sprintf("NodePool %s now taints its nodes %s", np.Name, want.ToString())
		}
	}
	if c := meta.FindStatusCondition(claim.Status.Conditions, v1alpha1.ConditionDrifted); c != nil && c.Status == metav1.ConditionTrue {
		if c.Message == "" {
			return fmt.Sprintf("its NodeClaim %s is Drifted from its node class", claim.Name)
		}
		return c.Message
	}
	return ""
}
