package provisioning

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// addClaims reads the NodeClaims into the snapshot. Every claim's
// capacity counts in b.usage against its pool's limits. The node of each
// claim not being deleted takes the pods nominated to it while they fit
// (see holdWhileFits; those that do not lose their nomination and count
// in b.overflow), and, while not initialized (or initialized less than
// nominationTTL ago), is in b.claims under its solver name. See claimNode
// for which node that is.
func (p *Provisioner) addClaims(b *batch, cl *snapshot.Cluster, claims []*v1alpha1.NodeClaim, nodeByProviderID map[string]*corev1.Node,
	nominated map[string][]*corev1.Pod, now time.Time) {
	nodeIndex := indexNodes(cl.Nodes)
	for _, c := range claims {
		pool, pc := nodeclaim.Pool(c), plan.ClaimOf(c)
		capacity, alloc, typ := claimResources(c, &pc, cl.ExtendedResources, b.typesOf(pool))
		b.usage[pool] = b.usage[pool].Add(capacity)
		if c.DeletionTimestamp != nil {
			continue // its node is leaving
		}
		var node *corev1.Node
		if c.Status.ProviderID != "" {
			node = nodeByProviderID[c.Status.ProviderID]
		}
		sn := claimNode(cl, nodeIndex, c, &pc, node, alloc, typ)
		if sn == nil {
			continue
		}
		initialized := nodeclaim.IsTrue(c, v1alpha1.ConditionInitialized)
		if !initialized || now.Sub(nodeclaim.TransitionTime(c, v1alpha1.ConditionInitialized)) < nominationTTL {
			b.claims[sn.Name] = c
		}
		// The pods nominated to it are committed there while they fit; one
		// that no longer fits (the cloud launched a smaller type than
		// planned) loses its nomination and is planned in the next batch.
		for _, pod := range holdWhileFits(sn, nominated[c.Name], cl.ExtendedResources) {
			p.unnominate(pod.UID, c.Name)
			b.overflow++
		}
	}
}

// claimNode returns the solver node of a claim not being deleted. Once
// its Node (node, nil if none) registered, that is the snapshot's node of
// that name, opened to pods while not initialized (see openUninitialized);
// nil when the snapshot has no such node. Before, it is a node added to
// cl.Nodes (and nodeIndex) as every front end plans it (plan.InFlightNode)
// under a name no Node has, inFlightPrefix and the claim's; nil when
// nothing says how large it is. pc is the claim as plan.ClaimOf reads it,
// alloc its allocatable and typ its instance type (see claimResources).
func claimNode(cl *snapshot.Cluster, nodeIndex map[string]int, c *v1alpha1.NodeClaim, pc *plan.Claim, node *corev1.Node,
	alloc solver.Resources, typ *solver.InstanceType) *solver.Node {
	if node != nil {
		ni, ok := nodeIndex[node.Name]
		if !ok {
			return nil
		}
		sn := &cl.Nodes[ni]
		if !nodeclaim.IsTrue(c, v1alpha1.ConditionInitialized) {
			openUninitialized(sn, c.Spec.StartupTaints, alloc)
		}
		return sn
	}
	n, ok := plan.InFlightNode(pc, typ, cl.ExtendedResources, cl.DaemonSets)
	if !ok {
		return nil
	}
	n.Name = inFlightPrefix + c.Name
	cl.Nodes = append(cl.Nodes, n)
	nodeIndex[n.Name] = len(cl.Nodes) - 1
	return &cl.Nodes[len(cl.Nodes)-1]
}

// openUninitialized makes a registered node whose claim has not
// initialized an in-flight node: the taints that go away once it is
// initialized (not registered, not ready, unreachable, and the claim's
// startup taints) do not keep the pods planned for it off it, and, while
// the Node reports no allocatable CPU, its allocatable is the claim's
// (alloc).
func openUninitialized(sn *solver.Node, startup []corev1.Taint, alloc solver.Resources) {
	sn.Taints = slices.DeleteFunc(sn.Taints, func(t solver.Taint) bool {
		return t.Key == cloud.UnregisteredTaintKey || t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable ||
			slices.ContainsFunc(startup, func(s corev1.Taint) bool { return s.Key == t.Key && string(s.Effect) == t.Effect })
	})
	sn.InFlight = true
	if sn.Allocatable[solver.CPU] == 0 {
		sn.Allocatable = alloc
	}
}

// closeLeaving marks the snapshot's nodes that are leaving unschedulable:
// they take no new pods.
func closeLeaving(nodes []solver.Node, leaving map[string]bool) {
	nodeIndex := indexNodes(nodes)
	for name := range leaving {
		if ni, ok := nodeIndex[name]; ok {
			nodes[ni].Unschedulable = true
		}
	}
}

// indexNodes maps node names to their index in nodes (the last, should
// two share a name).
func indexNodes(nodes []solver.Node) map[string]int {
	index := make(map[string]int, len(nodes))
	for i := range nodes {
		index[nodes[i].Name] = i
	}
	return index
}

// leavingNodes names the nodes being deleted: those of NodeClaims being
// deleted (interruption, expiry, a user's kubectl delete), and Nodes being
// deleted themselves.
func leavingNodes(nodes []corev1.Node, claims []*v1alpha1.NodeClaim, byProviderID map[string]*corev1.Node) map[string]bool {
	leaving := map[string]bool{}
	for i := range nodes {
		if nodes[i].DeletionTimestamp != nil {
			leaving[nodes[i].Name] = true
		}
	}
	for _, c := range claims {
		if c.DeletionTimestamp == nil || c.Status.ProviderID == "" {
			continue
		}
		if n := byProviderID[c.Status.ProviderID]; n != nil {
			leaving[n.Name] = true
		}
	}
	return leaving
}

// holdWhileFits adds to the node's requests those of the pods nominated
// to it, in name order, while they fit its allocatable (unknown
// allocatable: all of them), and returns the pods that do not fit.
func holdWhileFits(n *solver.Node, pods []*corev1.Pod, extended []string) (overflow []*corev1.Pod) {
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for _, pod := range pods {
		after := n.Requested.Add(podRequests(pod, extended))
		if n.Allocatable[solver.CPU] > 0 && !after.Fits(n.Allocatable) {
			overflow = append(overflow, pod)
			continue
		}
		n.Requested = after
	}
	return overflow
}

// claimResources returns a NodeClaim's capacity and allocatable in solver
// units, from its status once launched, else from its instance type
// (types[pc.InstanceType]: the status's, else the planned one, as
// plan.ClaimOf reads it).
func claimResources(c *v1alpha1.NodeClaim, pc *plan.Claim, extended []string, types map[string]*solver.InstanceType) (capacity, alloc solver.Resources, typ *solver.InstanceType) {
	typ = types[pc.InstanceType]
	if typ != nil {
		capacity, alloc = typ.Capacity, typ.Allocatable()
	}
	if c.Status.Capacity != nil {
		capacity = plan.Resources(c.Status.Capacity, extended)
	}
	if c.Status.Allocatable != nil {
		alloc = plan.Resources(c.Status.Allocatable, extended)
	}
	return capacity, alloc, typ
}

// podRequests returns a pod's effective requests in solver units.
func podRequests(pod *corev1.Pod, extended []string) solver.Resources {
	r := plan.Resources(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}), extended)
	r[solver.Pods] = 1
	return r
}
