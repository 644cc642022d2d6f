package provisioning

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// inFlightPrefix names, in the solver's problem, the nodes of NodeClaims
// whose Node has not registered yet.
const inFlightPrefix = "nodeclaim/"

// nominationTTL is how long pods stay nominated to a NodeClaim after its node
// initialized, while the node has room for them (see holdWhileFits); a pod
// the scheduler still has not bound by then is planned again. A loaded
// scheduler takes minutes to bind a large batch, turning zone-spread pods
// away while their zone runs ahead; planning them again after 30 s (this
// bound before) launched nodes for pods whose planned room was still free.
const nominationTTL = 2 * time.Minute

// batch is one provisioning decision's input.
type batch struct {
	problem *solver.Problem
	// pods maps solver pod indices to the pods.
	pods []*corev1.Pod
	// pending counts every pod marked Unschedulable, nominated or not.
	pending int
	pools   map[string]*v1alpha1.NodePool
	// claims maps solver node names to the NodeClaims whose nodes are not
	// initialized (in-flight), the nodes nominations go to.
	claims map[string]*v1alpha1.NodeClaim
	// usage is the capacity of each pool's NodeClaims, in solver units.
	usage map[string]solver.Resources
	// types are the instance types offered, by name.
	types map[string]*solver.InstanceType
	// poolTypes are, for the pools whose node class has kubelet settings,
	// their own instance types (sized by those settings), by pool and name.
	poolTypes map[string]map[string]*solver.InstanceType
	// skippedPools explains pools left out of the plan.
	skippedPools map[string]string
	// lapse is when the first nomination that kept pods out of this
	// batch lapses (zero if none did), so that they are planned again then.
	lapse time.Time
	// moving are the pods still running on nodes being deleted, planned
	// as if pending so that their new capacity launches before they are
	// evicted rather than after (Karpenter does the same). Their
	// controllers recreate them under new names: they are not nominated.
	moving map[types.UID]bool
	// overflow counts the nominated pods their claim's node can no longer
	// take: they are planned again in the next batch.
	overflow int
	// repriced names the instance types a NodeOverlay re-priced (see
	// plan.Result.Repriced).
	repriced map[string]bool
}

// unschedulable reports whether the scheduler has tried the pod and found no
// node for it.
func unschedulable(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodPending {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// snapshot reads the informer cache into the solver's problem: pods marked
// Unschedulable (less those nominated to in-flight NodeClaims), existing
// nodes with what is bound to them, and every NodeClaim's node, launched or
// not, so that no pod gets a second node. With batching set (a provisioning
// batch), the pods of leaving nodes are planned as pending (see
// batch.moving); the other planners see them where they run.
func (p *Provisioner) snapshot(ctx context.Context, batching bool) (*batch, error) {
	var (
		pods   corev1.PodList
		nodes  corev1.NodeList
		dss    appsv1.DaemonSetList
		pdbs   policyv1.PodDisruptionBudgetList
		npList v1alpha1.NodePoolList
		ncList v1alpha1.NodeClaimList
		pvcs   corev1.PersistentVolumeClaimList
		pvs    corev1.PersistentVolumeList
		scs    storagev1.StorageClassList
		csis   storagev1.CSINodeList
	)
	for _, l := range []client.ObjectList{&pods, &nodes, &dss, &pdbs, &npList, &ncList, &pvcs, &pvs, &scs, &csis} {
		if err := p.client.List(ctx, l); err != nil {
			return nil, fmt.Errorf("reading the cache: %w", err)
		}
	}
	// The cache lists in no set order; the solver's answer depends on the
	// order of its pods, so the same pods give the same plan only sorted:
	// oldest first (as a manifest lists them for explain -f), then by name.
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	now := p.opts.Clock.Now()
	claims := p.mergeRecent(ncList.Items, now)

	byName := map[string]*v1alpha1.NodeClaim{}
	for _, c := range claims {
		byName[c.Name] = c
	}
	b := &batch{pools: map[string]*v1alpha1.NodePool{}, claims: map[string]*v1alpha1.NodeClaim{}, usage: map[string]solver.Resources{},
		types: map[string]*solver.InstanceType{}, poolTypes: map[string]map[string]*solver.InstanceType{}, skippedPools: map[string]string{},
		moving: map[types.UID]bool{}}
	nodeByProviderID := map[string]*corev1.Node{}
	for i := range nodes.Items {
		if id := nodes.Items[i].Spec.ProviderID; id != "" {
			nodeByProviderID[id] = &nodes.Items[i]
		}
	}
	leaving := leavingNodes(nodes.Items, claims, nodeByProviderID)

	// Pods' volumes decide where they may run (their PVs' zones) and how
	// many a node takes (attach limits).
	objs := snapshot.Objects{Volumes: &snapshot.Volumes{Claims: pointersTo(pvcs.Items), Volumes: pointersTo(pvs.Items),
		StorageClasses: pointersTo(scs.Items), CSINodes: pointersTo(csis.Items)}}
	// Pods a claim records as nominated to it and this replica does not
	// remember (it restarted, or took over the lease) keep that claim.
	var unplaced []*corev1.Pod
	for i := range pods.Items {
		if unschedulable(&pods.Items[i]) {
			unplaced = append(unplaced, &pods.Items[i])
		}
	}
	if n := p.restore(unplaced, committedClaims(claims), now); n > 0 {
		p.log.Info("nominations read back from the NodeClaims in flight", "pods", n)
	}
	nominated := map[string][]*corev1.Pod{} // claim name -> pods
	stillPending := map[types.UID]bool{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		switch {
		case pod.Spec.NodeName != "":
			switch {
			case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
			case batching && leaving[pod.Spec.NodeName] && reschedulable(pod):
				b.moving[pod.UID] = true
				objs.Pods = append(objs.Pods, asPending(pod))
			default:
				objs.Pods = append(objs.Pods, pod)
			}
		case unschedulable(pod):
			b.pending++
			stillPending[pod.UID] = true
			if name, ok := p.nominated(pod.UID, pod.Status.NominatedNodeName, byName, now); ok {
				nominated[name] = append(nominated[name], pod)
				continue
			}
			objs.Pods = append(objs.Pods, pod)
		}
	}
	p.forget(stillPending)
	for name := range nominated {
		at := now.Add(nominationTTL) // not initialized yet: look again by then
		if c := byName[name]; nodeclaim.IsTrue(c, v1alpha1.ConditionInitialized) {
			at = nodeclaim.TransitionTime(c, v1alpha1.ConditionInitialized).Add(nominationTTL)
			// Held past that by the scheduler's nomination: look again
			// later, not at once.
			at = maxTime(at, now.Add(nominationTTL))
		}
		if b.lapse.IsZero() || at.Before(b.lapse) {
			b.lapse = at
		}
	}

	// Pools whose node class resolves, and the instance types they offer.
	cloudTypes := map[string]cloud.InstanceType{}
	poolTypes := map[string][]string{}
	// Pools whose node class has kubelet settings, or offers a type
	// otherwise than the pools before (other zones, a capacity
	// reservation), get their own types.
	kubeletTypes := map[string][]cloud.InstanceType{}
	for i := range npList.Items {
		np := &npList.Items[i]
		if np.DeletionTimestamp != nil {
			continue
		}
		ts, err := p.cloud.InstanceTypes(ctx, np)
		if err != nil {
			b.skippedPools[np.Name] = err.Error()
			continue
		}
		raw, err := json.Marshal(np)
		if err != nil {
			b.skippedPools[np.Name] = err.Error()
			continue
		}
		b.pools[np.Name] = np
		objs.NodePools = append(objs.NodePools, raw)
		if slices.ContainsFunc(ts, func(t cloud.InstanceType) bool {
			u, ok := cloudTypes[t.Name]
			return t.Kubelet != nil || ok && !slices.Equal(u.Offerings, t.Offerings)
		}) {
			kubeletTypes[np.Name] = ts
			continue
		}
		for _, t := range ts {
			if _, ok := cloudTypes[t.Name]; !ok {
				cloudTypes[t.Name] = t
			}
			poolTypes[np.Name] = append(poolTypes[np.Name], t.Name)
		}
	}
	for i := range nodes.Items {
		objs.Nodes = append(objs.Nodes, &nodes.Items[i])
	}
	for i := range dss.Items {
		objs.DaemonSets = append(objs.DaemonSets, &dss.Items[i])
	}
	for i := range pdbs.Items {
		objs.PDBs = append(objs.PDBs, &pdbs.Items[i])
	}
	overlays, err := p.nodeOverlays(ctx)
	if err != nil {
		return nil, err
	}
	objs.NodeOverlays = overlays
	cl := snapshot.FromObjects(&objs)
	// Our pools' nodes carry rightsize.dev/nodepool too.
	for pi := range cl.Pools {
		if np := b.pools[cl.Pools[pi].Name]; np != nil {
			for k, v := range np.NodeLabels() {
				cl.Pools[pi].Labels[k] = v
			}
		}
	}
	for _, w := range cl.Warnings {
		p.log.V(1).Info("snapshot", "warning", w)
	}

	instanceTypes := make([]solver.InstanceType, 0, len(cloudTypes))
	for _, name := range sortedKeys(cloudTypes) {
		t := cloudTypes[name]
		st := p.opts.Model.SolverType(&t, p.opts.Region)
		st.Offerings = slices.DeleteFunc(st.Offerings, func(o solver.Offering) bool {
			return p.unavailable.Has(st.Name, o.Zone, o.CapacityType)
		})
		if len(st.Offerings) > 0 {
			instanceTypes = append(instanceTypes, st)
		}
	}
	for i := range instanceTypes {
		b.types[instanceTypes[i].Name] = &instanceTypes[i]
	}
	// A pool whose node class offers fewer types than the union may use
	// only its own; one with kubelet settings or offerings of its own has
	// its own list.
	for pi := range cl.Pools {
		pool := &cl.Pools[pi]
		if ts, ok := kubeletTypes[pool.Name]; ok {
			pool.InstanceTypes = p.solverTypes(ts)
			byName := make(map[string]*solver.InstanceType, len(pool.InstanceTypes))
			for i := range pool.InstanceTypes {
				byName[pool.InstanceTypes[i].Name] = &pool.InstanceTypes[i]
			}
			b.poolTypes[pool.Name] = byName
			continue
		}
		if names := poolTypes[pool.Name]; len(names) < len(cloudTypes) {
			pool.Requirements = append(pool.Requirements, solver.Requirement{Key: solver.LabelInstanceType, Operator: solver.OpIn, Values: names})
		}
	}

	// The pods to plan, by solver index.
	podByKey := map[string]*corev1.Pod{}
	for _, pod := range objs.Pods {
		podByKey[pod.Namespace+"/"+pod.Name] = pod
	}
	b.pods = make([]*corev1.Pod, len(cl.Pods))
	for i := range cl.Pods {
		b.pods[i] = podByKey[cl.Pods[i].Key()]
	}

	// NodeClaims: their capacity counts against pool limits; the nodes of
	// those not initialized take pods as in-flight nodes.
	nodeIndex := map[string]int{}
	for i := range cl.Nodes {
		nodeIndex[cl.Nodes[i].Name] = i
	}
	for name := range leaving {
		if ni, ok := nodeIndex[name]; ok {
			cl.Nodes[ni].Unschedulable = true // takes no new pods
		}
	}
	for _, c := range claims {
		pool := nodeclaim.Pool(c)
		capacity, alloc, typ := p.claimResources(c, cl.ExtendedResources, b.typesOf(pool))
		b.usage[pool] = b.usage[pool].Add(capacity)
		var node *corev1.Node
		if c.Status.ProviderID != "" {
			node = nodeByProviderID[c.Status.ProviderID]
		}
		if c.DeletionTimestamp != nil {
			continue // its node is leaving
		}
		initialized := nodeclaim.IsTrue(c, v1alpha1.ConditionInitialized)
		var sn *solver.Node
		if node != nil {
			ni, ok := nodeIndex[node.Name]
			if !ok {
				continue
			}
			sn = &cl.Nodes[ni]
			if !initialized {
				// Taints that go away once the node is initialized do not
				// keep the pods planned for it off it.
				startup := c.Spec.StartupTaints
				sn.Taints = slices.DeleteFunc(sn.Taints, func(t solver.Taint) bool {
					return t.Key == cloud.UnregisteredTaintKey || t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable ||
						slices.ContainsFunc(startup, func(s corev1.Taint) bool { return s.Key == t.Key && string(s.Effect) == t.Effect })
				})
				sn.InFlight = true
				if sn.Allocatable[solver.CPU] == 0 {
					sn.Allocatable = alloc
				}
			}
		} else {
			// Its node, as every front end plans it (plan.InFlightNode),
			// under a name no Node has.
			pc := plan.ClaimOf(c)
			n, ok := plan.InFlightNode(&pc, typ, cl.ExtendedResources, cl.DaemonSets)
			if !ok {
				continue // nothing says how large its node is
			}
			n.Name = inFlightPrefix + c.Name
			cl.Nodes = append(cl.Nodes, n)
			nodeIndex[n.Name] = len(cl.Nodes) - 1
			sn = &cl.Nodes[len(cl.Nodes)-1]
		}
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
	for pi := range cl.Pools {
		cl.Pools[pi].Used = b.usage[cl.Pools[pi].Name]
	}

	// The problem every front end builds: nodes priced by what their
	// NodeClaims pay, else the catalog; no default pool.
	built, err := plan.Build(plan.Input{Cluster: cl, InstanceTypes: instanceTypes, MinValuesBestEffort: p.opts.MinValuesPolicy == MinValuesBestEffort})
	if err != nil {
		return nil, fmt.Errorf("building the problem: %w", err)
	}
	b.problem, b.repriced = built.Problem, built.Repriced
	return b, nil
}

// nodeOverlays reads Karpenter's NodeOverlays (karpenter.sh/v1alpha1), the
// price and capacity overrides every front end applies (plan.Build); none
// when their CRD is not installed. Read from the API server, not a cache:
// the CRD may come and go, and an informer on a missing kind never syncs.
// An operator whose ClusterRole predates the nodeoverlays rule (an upgrade
// that kept the old RBAC) plans without them and says so, as live explain
// does, rather than failing every batch.
func (p *Provisioner) nodeOverlays(ctx context.Context) ([]json.RawMessage, error) {
	gvk := snapshot.KarpenterNodeOverlays.GroupVersion().WithKind("NodeOverlayList")
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(gvk)
	if err := p.client.List(ctx, &list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		if apierrors.IsForbidden(err) {
			if !p.overlaysForbidden.Swap(true) {
				p.log.Info("NodeOverlay prices and capacity are not applied: the operator may not list nodeoverlays.karpenter.sh (re-apply its ClusterRole)", "error", err.Error())
			}
			return nil, nil
		}
		return nil, fmt.Errorf("reading NodeOverlays: %w", err)
	}
	out := make([]json.RawMessage, 0, len(list.Items))
	for i := range list.Items {
		raw, err := json.Marshal(list.Items[i].Object)
		if err != nil {
			return nil, fmt.Errorf("NodeOverlay %s: %w", list.Items[i].GetName(), err)
		}
		out = append(out, raw)
	}
	return out, nil
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

// reschedulable reports whether a pod on a leaving node will be recreated
// elsewhere by its controller once evicted: not a DaemonSet's or a static
// pod (they go with the node), not one without a controller (lost), not
// already terminating.
func reschedulable(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return false
	}
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.Kind != "DaemonSet" && ref.Kind != "Node"
}

// asPending returns a copy of a bound pod as the solver reads a pending one.
func asPending(pod *corev1.Pod) *corev1.Pod {
	moved := pod.DeepCopy()
	moved.Spec.NodeName = ""
	moved.Status = corev1.PodStatus{Phase: corev1.PodPending}
	return moved
}

// claimResources returns a NodeClaim's capacity and allocatable in solver
// units, from its status once launched, else from its instance type.
func (p *Provisioner) claimResources(c *v1alpha1.NodeClaim, extended []string, types map[string]*solver.InstanceType) (capacity, alloc solver.Resources, typ *solver.InstanceType) {
	name := c.Status.InstanceType
	if name == "" {
		name = requirementValue(c, solver.LabelInstanceType)
	}
	typ = types[name]
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

// typesOf returns the instance types of a pool by name: its own when its
// node class has kubelet settings, else the shared ones.
func (b *batch) typesOf(pool string) map[string]*solver.InstanceType {
	if t, ok := b.poolTypes[pool]; ok {
		return t
	}
	return b.types
}

// solverTypes converts a pool's own instance types for the solver, without
// the offerings marked unavailable.
func (p *Provisioner) solverTypes(ts []cloud.InstanceType) []solver.InstanceType {
	out := make([]solver.InstanceType, 0, len(ts))
	for i := range ts {
		st := p.opts.Model.SolverType(&ts[i], p.opts.Region)
		st.Offerings = slices.DeleteFunc(st.Offerings, func(o solver.Offering) bool {
			return p.unavailable.Has(st.Name, o.Zone, o.CapacityType)
		})
		if len(st.Offerings) > 0 {
			out = append(out, st)
		}
	}
	return out
}

// requirementValue returns the first value of the last In requirement on
// key (the launch's, planned value first; see plan.ClaimOf), or "".
func requirementValue(c *v1alpha1.NodeClaim, key string) string {
	for _, r := range slices.Backward(c.Spec.Requirements) {
		if r.Key == key && r.Operator == v1alpha1.NodeSelectorOpIn && len(r.Values) > 0 {
			return r.Values[0]
		}
	}
	return ""
}

// podRequests returns a pod's effective requests in solver units.
func podRequests(pod *corev1.Pod, extended []string) solver.Resources {
	r := plan.Resources(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}), extended)
	r[solver.Pods] = 1
	return r
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// describeTypes names up to n instance types, for logs.
func describeTypes(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// pointersTo returns pointers to the elements of s.
func pointersTo[T any](s []T) []*T {
	out := make([]*T, len(s))
	for i := range s {
		out[i] = &s[i]
	}
	return out
}
