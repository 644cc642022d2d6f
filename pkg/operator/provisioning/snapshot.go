package provisioning

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
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
	// virtual are the UIDs of the stand-ins of CapacityBuffers' pods
	// (see addVirtualPods), planned for room and never created; buffers
	// says where they are in the problem, bufferReasons why a buffer keeps
	// no room and bufferTemplates the PodTemplate of each, by
	// namespace/name.
	virtual         map[types.UID]bool
	buffers         []plan.BufferRoom
	bufferReasons   map[string]string
	bufferTemplates map[string]string
}

// snapshot reads the informer cache into the solver's problem: pods marked
// Unschedulable (less those nominated to in-flight NodeClaims), existing
// nodes with what is bound to them, and every NodeClaim's node, launched or
// not, so that no pod gets a second node. With batching set (a provisioning
// batch), the pods of leaving nodes are planned as pending (see
// batch.moving); the other planners see them where they run.
func (p *Provisioner) snapshot(ctx context.Context, batching bool) (*batch, error) {
	return p.snapshotWith(ctx, batching, nil)
}

// snapshotWith is snapshot with extra pods, which need not exist, planned
// as pending after the others (see SnapshotWith).
func (p *Provisioner) snapshotWith(ctx context.Context, batching bool, extra []*corev1.Pod) (*batch, error) {
	cache, err := p.readCache(ctx)
	if err != nil {
		return nil, err
	}
	now := p.opts.Clock.Now()
	claims := p.mergeRecent(cache.claims.Items, now)
	byName := make(map[string]*v1alpha1.NodeClaim, len(claims))
	for _, c := range claims {
		byName[c.Name] = c
	}
	nodeByProviderID := nodesByProviderID(cache.nodes.Items)
	leaving := leavingNodes(cache.nodes.Items, claims, nodeByProviderID)
	b := &batch{pools: map[string]*v1alpha1.NodePool{}, claims: map[string]*v1alpha1.NodeClaim{}, usage: map[string]solver.Resources{},
		types: map[string]*solver.InstanceType{}, poolTypes: map[string]map[string]*solver.InstanceType{}, skippedPools: map[string]string{},
		moving: map[types.UID]bool{}, virtual: map[types.UID]bool{}}
	objs := cache.objects()

	// Pods: bound ones where they run, pending ones to plan unless
	// nominated to a claim in flight.
	toPlan, nominated := p.placePods(b, cache.pods.Items, claims, byName, leaving, batching, now)
	objs.Pods = append(toPlan, extra...)
	b.lapse = nominationLapse(nominated, byName, now)

	// Pools whose node class resolves, and the instance types they offer.
	offers, raws := p.readPools(ctx, b, cache.pools.Items)
	objs.NodePools = raws
	part := partitionTypes(offers)
	if objs.NodeOverlays, err = p.nodeOverlays(ctx); err != nil {
		return nil, err
	}
	if objs.CapacityBuffers, objs.PodTemplates, err = p.readBuffers(ctx); err != nil {
		return nil, err
	}
	cl := snapshot.FromObjects(&objs)
	labelPools(cl.Pools, b.pools)
	for _, w := range cl.Warnings {
		p.log.V(1).Info("snapshot", "warning", w)
	}
	instanceTypes := p.solverTypes(part.sharedTypes())
	for i := range instanceTypes {
		b.types[instanceTypes[i].Name] = &instanceTypes[i]
	}
	p.restrictPools(b, cl.Pools, &part)
	b.pods = podsByIndex(cl.Pods, objs.Pods)

	// Nodes: leaving ones take no new pods; NodeClaims count against pool
	// limits, and the nodes of those not initialized take pods in flight.
	closeLeaving(cl.Nodes, leaving)
	p.addClaims(b, cl, claims, nodeByProviderID, nominated, now)
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
	b.buffers = built.Buffers
	b.addVirtualPods()
	b.bufferReasons, b.bufferTemplates = map[string]string{}, map[string]string{}
	for _, buf := range cl.Buffers {
		b.bufferReasons[buf.Namespace+"/"+buf.Name] = buf.Reason
		b.bufferTemplates[buf.Namespace+"/"+buf.Name] = buf.PodTemplate
	}
	return b, nil
}

// cacheLists are the objects a snapshot reads from the cache.
type cacheLists struct {
	pods   corev1.PodList
	nodes  corev1.NodeList
	dss    appsv1.DaemonSetList
	pdbs   policyv1.PodDisruptionBudgetList
	pools  v1alpha1.NodePoolList
	claims v1alpha1.NodeClaimList
	pvcs   corev1.PersistentVolumeClaimList
	pvs    corev1.PersistentVolumeList
	scs    storagev1.StorageClassList
	csis   storagev1.CSINodeList
}

// readCache lists the objects a snapshot reads, the pods in the order
// the solver plans them (see sortPods).
func (p *Provisioner) readCache(ctx context.Context) (*cacheLists, error) {
	c := &cacheLists{}
	for _, l := range []client.ObjectList{&c.pods, &c.nodes, &c.dss, &c.pdbs, &c.pools, &c.claims, &c.pvcs, &c.pvs, &c.scs, &c.csis} {
		if err := p.client.List(ctx, l); err != nil {
			return nil, fmt.Errorf("reading the cache: %w", err)
		}
	}
	sortPods(c.pods.Items)
	return c, nil
}

// objects returns the snapshot's input for the nodes, DaemonSets, PDBs
// and volumes; pods, pools and overlays are added by the steps that
// choose them. Pods' volumes decide where they may run (their PVs' zones)
// and how many a node takes (attach limits).
func (c *cacheLists) objects() snapshot.Objects {
	return snapshot.Objects{
		Nodes: pointersTo(c.nodes.Items), DaemonSets: pointersTo(c.dss.Items), PDBs: pointersTo(c.pdbs.Items),
		Volumes: &snapshot.Volumes{Claims: pointersTo(c.pvcs.Items), Volumes: pointersTo(c.pvs.Items),
			StorageClasses: pointersTo(c.scs.Items), CSINodes: pointersTo(c.csis.Items)},
	}
}

// nodesByProviderID maps provider IDs to the nodes that have one.
func nodesByProviderID(nodes []corev1.Node) map[string]*corev1.Node {
	out := map[string]*corev1.Node{}
	for i := range nodes {
		if id := nodes[i].Spec.ProviderID; id != "" {
			out[id] = &nodes[i]
		}
	}
	return out
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
