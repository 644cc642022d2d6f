package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	resourcehelper "k8s.io/component-helpers/resource"

	cbv1beta1 "github.com/rightsize-dev/kubectl-rightsize/pkg/apis/capacitybuffer/v1beta1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Well-known node labels read from live nodes, besides the solver's own
// (instance type, zone, capacity type, NodePool).
const (
	LabelInstanceTypeBeta = "beta.kubernetes.io/instance-type"
	LabelZoneBeta         = "failure-domain.beta.kubernetes.io/zone"
	LabelRegion           = "topology.kubernetes.io/region"
	LabelEKSCapacityType  = "eks.amazonaws.com/capacityType" // ON_DEMAND or SPOT
	LabelEKSNodeGroup     = "eks.amazonaws.com/nodegroup"
	LabelPodTemplateHash  = "pod-template-hash"
	// AnnotationDoNotDisrupt on a pod or node keeps consolidation away;
	// AnnotationRightsizeDoNotDisrupt is rightsize.dev's name for it.
	AnnotationDoNotDisrupt          = v1alpha1.KarpenterAnnotationDoNotDisrupt
	AnnotationRightsizeDoNotDisrupt = v1alpha1.AnnotationDoNotDisrupt
)

// KarpenterNodePools is the resource of Karpenter's v1 NodePools, read
// (never written) when its CRD is installed.
var KarpenterNodePools = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}

// DefaultPageSize is the number of objects fetched per list request.
const DefaultPageSize = 500

// Cluster is what ReadCluster found in a live cluster. The embedded
// Manifests hold what the solver needs: Pods are the pending pods to plan,
// DaemonSets the per-node overhead of new nodes, Pools the NodePools of
// Karpenter and of rightsize.dev (none when neither is installed; see
// PoolOwners), plus the extended resource names and warnings.
type Cluster struct {
	Manifests
	// Pending lists every pending pod read, planned or not, in the order
	// they were listed (namespace, then name).
	Pending []PendingPod
	// Nodes are the existing nodes: their free capacity is used first.
	Nodes []solver.Node
	// Scheduled lists the pods bound to a node and not finished.
	Scheduled []ScheduledPod
	// PDBs are the PodDisruptionBudgets, for consolidation.
	PDBs []solver.PDB
	// PodNamespace is "" when pods were listed in every namespace, else the
	// only namespace whose pods were read (see ClusterOptions.Namespace).
	PodNamespace string
	// KarpenterInstalled reports whether the karpenter.sh/v1 NodePool CRD exists.
	KarpenterInstalled bool
	// UnreadNodePools are the NodePool resources served that the user may
	// not list ("nodepools.rightsize.dev"): their pools are not in Pools,
	// and a warning says so with the RBAC to ask for.
	UnreadNodePools []string
	// PoolOwners says whose each pool of Manifests.Pools is: OwnerKarpenter
	// or OwnerRightsize.
	PoolOwners map[string]string
	// Rightsize holds what the rightsize operator's guards read.
	Rightsize Rightsize

	csiLimits map[string]int64 // EBS attach limit of each node with a CSINode saying it
}

// PendingPod is a pod no node has been found for yet.
type PendingPod struct {
	Namespace string
	Name      string
	// Owner is the top-level controller as Kind/name ("Deployment/web"),
	// or "Pod/<name>" for a bare pod.
	Owner string
	// SchedulerReason and SchedulerMessage are the pod's PodScheduled
	// condition when it is False (Unschedulable, SchedulingGated...);
	// empty when the scheduler has not looked at the pod yet.
	SchedulerReason  string
	SchedulerMessage string
	// Index is the pod's index in Cluster.Pods, or -1 when it is not
	// planned; NotPlanned then says why in one sentence.
	Index      int
	NotPlanned string
}

// Key returns "namespace/name".
func (p *PendingPod) Key() string { return p.Namespace + "/" + p.Name }

// ScheduledPod is a pod bound to a node.
type ScheduledPod struct {
	Namespace, Name, Owner, Node string
}

// ClusterOptions tune ReadCluster.
type ClusterOptions struct {
	// Namespace, when set, is where pods are read if the user may not list
	// them in every namespace (node usage then counts only that
	// namespace's pods, with a warning). Empty means every namespace is
	// required.
	Namespace string
	// PageSize is the number of objects per list request (DefaultPageSize
	// when zero).
	PageSize int64
	// Host and Timeout are only used in error messages.
	Host    string
	Timeout time.Duration
}

// ClusterClients are the clients ReadCluster uses.
type ClusterClients struct {
	Kube kubernetes.Interface
	// Dynamic reads Karpenter's and rightsize.dev's NodePools and
	// rightsize.dev's NodeClaims; nil skips them.
	Dynamic dynamic.Interface
}

// NewClusterClients builds the clients from a REST config: protobuf for
// built-in types (faster to decode for thousands of pods), JSON for CRDs.
func NewClusterClients(cfg *rest.Config) (ClusterClients, error) {
	proto := rest.CopyConfig(cfg)
	proto.ContentType = runtime.ContentTypeProtobuf
	proto.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	if proto.QPS == 0 {
		proto.QPS, proto.Burst = 50, 100
	}
	kube, err := kubernetes.NewForConfig(proto)
	if err != nil {
		return ClusterClients{}, fmt.Errorf("building the Kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return ClusterClients{}, fmt.Errorf("building the dynamic client: %w", err)
	}
	return ClusterClients{Kube: kube, Dynamic: dyn}, nil
}

// ReadCluster reads pods, nodes, DaemonSets, PodDisruptionBudgets and, when
// their CRDs exist, Karpenter NodePools and rightsize.dev NodePools,
// NodeClaims and Commitments, and converts them for the solver exactly as FromObjects
// converts a watcher's objects (one assembly for both). Lists are
// paginated. Errors are *APIError: one line naming what could not be read
// and what to do. A missing Karpenter or rightsize.dev CRD is not
// an error; pods, NodePools or DaemonSets the solver cannot model are left
// out with a warning. NodePools, NodeClaims and PodDisruptionBudgets the
// user may not list are warned about (the warning names the verb, the
// resource and the RBAC to ask for) and planned without, as kubectl users
// expect of a read-only report: the pools that could be read are planned,
// and UnreadNodePools says which were not.
func ReadCluster(ctx context.Context, c ClusterClients, opts ClusterOptions) (*Cluster, error) {
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	r := reader{ClusterClients: c, opts: opts}
	var (
		wg                            sync.WaitGroup
		pods                          []corev1.Pod
		podNS                         string
		nodes                         []corev1.Node
		daemonSets                    []appsv1.DaemonSet
		pdbs                          []policyv1.PodDisruptionBudget
		pools                         []json.RawMessage
		karpenter, rightsize          bool
		rsPools, rsClaims             []json.RawMessage
		podErr, nodeErr, dsErr, kpErr error
		pdbErr, rsErr, claimErr       error
		classes                       [3][]json.RawMessage
		classErr                      [3]error
		volumes                       *Volumes
		volErr, csiErr                error
		overlays                      []json.RawMessage
		overlayErr, bufferErr         error
		commitments                   []json.RawMessage
		commitErr                     error
		buffers                       []*cbv1beta1.CapacityBuffer
		templates                     []*corev1.PodTemplate
	)
	wg.Go(func() { pods, podNS, podErr = r.pods(ctx) })
	wg.Go(func() { nodes, nodeErr = r.nodes(ctx) })
	wg.Go(func() { daemonSets, dsErr = r.daemonSets(ctx) })
	wg.Go(func() { pdbs, pdbErr = r.pdbs(ctx) })
	wg.Go(func() { pools, karpenter, kpErr = r.custom(ctx, KarpenterNodePools) })
	wg.Go(func() {
		if rsPools, rightsize, rsErr = r.custom(ctx, RightsizeNodePools); rightsize {
			rsClaims, _, claimErr = r.custom(ctx, RightsizeNodeClaims)
		}
	})
	for i, gvr := range classResources {
		wg.Go(func() { classes[i], _, classErr[i] = r.custom(ctx, gvr) })
	}
	wg.Go(func() { volumes, volErr, csiErr = r.readVolumes(ctx, metav1.NamespaceAll) })
	wg.Go(func() { overlays, _, overlayErr = r.custom(ctx, KarpenterNodeOverlays) })
	wg.Go(func() { buffers, templates, bufferErr = r.liveBuffers(ctx) })
	wg.Go(func() { commitments, _, commitErr = r.custom(ctx, RightsizeCommitments) })
	wg.Wait()
	unread, poolWarnings := unreadPools(len(pools)+len(rsPools), &kpErr, &rsErr)
	if forbidden(claimErr) {
		poolWarnings = append(poolWarnings, claimErr.Error()+"; NodeClaims still launching are not counted, so the plan may propose nodes already on their way")
		claimErr = nil
	}
	// A fixed order, so that the same cluster always gives the same error.
	for _, err := range []error{podErr, nodeErr, dsErr, kpErr, rsErr, claimErr} {
		if err != nil {
			return nil, err
		}
	}
	// What could not be read is said first, then the objects go through
	// the assembly a watcher's objects go through (FromObjects).
	o := &Objects{PodNamespace: podNS, KarpenterInstalled: karpenter, RightsizeInstalled: rightsize, NodePools: pools,
		Pods: pointers(pods), Nodes: pointers(nodes), DaemonSets: pointers(daemonSets), PDBs: pointers(pdbs), Volumes: volumes,
		NodeOverlays: overlays, UnreadNodePools: unread, CapacityBuffers: buffers, PodTemplates: templates, Commitments: commitments}
	warnings := poolWarnings
	if bufferErr != nil {
		warnings = append(warnings, bufferErr.Error()+"; CapacityBuffers are not planned")
	}
	if pdbErr != nil {
		warnings = append(warnings, pdbErr.Error()+"; PodDisruptionBudgets are not needed to plan new nodes")
	}
	if volErr != nil {
		warnings = append(warnings, volErr.Error()+"; pods with volumes are planned as if they had none (their volumes' zones and attach limits are not known)")
	}
	if commitErr != nil {
		warnings = append(warnings, commitErr.Error()+"; Commitments (Reserved Instances, Savings Plans) are not planned")
	}
	if overlayErr != nil {
		warnings = append(warnings, overlayErr.Error()+"; NodeOverlay prices and capacity are not applied")
	}
	if csiErr != nil {
		warnings = append(warnings, csiErr.Error()+"; existing nodes' volume attach limits are not known")
	}
	for _, raw := range rsPools {
		np := &v1alpha1.NodePool{}
		if err := json.Unmarshal(raw, np); err != nil {
			warnings = append(warnings, oneLine(fmt.Sprintf("rightsize.dev NodePool: left out: %v", err)))
			continue
		}
		o.RightsizeNodePools = append(o.RightsizeNodePools, np)
	}
	for _, raw := range rsClaims {
		nc := &v1alpha1.NodeClaim{}
		if err := json.Unmarshal(raw, nc); err != nil {
			warnings = append(warnings, oneLine(fmt.Sprintf("rightsize.dev NodeClaim: left out: %v", err)))
			continue
		}
		o.NodeClaims = append(o.NodeClaims, nc)
	}
	for i, gvr := range classResources {
		if classErr[i] != nil {
			warnings = append(warnings, classErr[i].Error()+"; kubelet settings of those node classes are not planned")
			continue
		}
		if o.NodeClasses == nil {
			o.NodeClasses = map[schema.GroupVersionResource][]json.RawMessage{}
		}
		o.NodeClasses[gvr] = classes[i]
	}
	return assemble(o, warnings), nil
}

// unreadPools takes the lists of NodePools (Karpenter's, rightsize.dev's)
// that failed as forbidden out of errs, and returns their resources and a
// warning for each; read is how many pools the others returned. Other
// errors stay in errs.
func unreadPools(read int, errs ...*error) (resources, warnings []string) {
	for _, err := range errs {
		var ae *APIError
		if !errors.As(*err, &ae) || !forbidden(ae) {
			continue
		}
		*err = nil
		resources = append(resources, ae.Resource)
		consequence := "its NodePools are not planned, only those that could be read"
		if read == 0 {
			consequence = "no NodePool could be read, so the plan uses the default pool, not the cluster's NodePools"
		}
		warnings = append(warnings, ae.Error()+"; "+consequence)
	}
	return resources, warnings
}

// forbidden reports whether err is the API server refusing the request
// (403: RBAC).
func forbidden(err error) bool { return err != nil && apierrors.IsForbidden(err) }

// pointers returns pointers to the elements of s.
func pointers[T any](s []T) []*T {
	out := make([]*T, len(s))
	for i := range s {
		out[i] = &s[i]
	}
	return out
}

// Region returns the most common topology.kubernetes.io/region of the
// nodes, or "" when none has the label.
func (c *Cluster) Region() string {
	count := map[string]int{}
	for i := range c.Nodes {
		if r := c.Nodes[i].Labels[LabelRegion]; r != "" {
			count[r]++
		}
	}
	best := ""
	for r, n := range count {
		if n > count[best] || n == count[best] && r < best {
			best = r
		}
	}
	return best
}

// reader lists objects for ReadCluster.
type reader struct {
	ClusterClients
	opts ClusterOptions
}

// daemonSet is the part of a DaemonSet the conversion reads.
type daemonSet struct {
	namespace, name string
	spec            corev1.PodSpec
}

func (r *reader) apiError(verb, resource, namespace string, err error) error {
	return &APIError{Verb: verb, Resource: resource, Namespace: namespace, Host: r.opts.Host, Timeout: r.opts.Timeout, Err: err}
}

// pods lists the unfinished pods of every namespace, or of opts.Namespace
// when listing every namespace is forbidden.
func (r *reader) pods(ctx context.Context) ([]corev1.Pod, string, error) {
	// Finished pods hold no resources; leave them on the server.
	sel := "status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed)
	list := func(ns string) ([]corev1.Pod, error) {
		return listAll(ctx, r.opts.PageSize, metav1.ListOptions{FieldSelector: sel},
			func(ctx context.Context, o metav1.ListOptions) ([]corev1.Pod, string, error) {
				l, err := r.Kube.CoreV1().Pods(ns).List(ctx, o)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.Continue, nil
			})
	}
	pods, err := list(metav1.NamespaceAll)
	if err == nil {
		return pods, "", nil
	}
	if !apierrors.IsForbidden(err) || r.opts.Namespace == "" {
		return nil, "", r.apiError("list", "pods", "", err)
	}
	if pods, err = list(r.opts.Namespace); err != nil {
		return nil, "", r.apiError("list", "pods", r.opts.Namespace, err)
	}
	return pods, r.opts.Namespace, nil
}

func (r *reader) nodes(ctx context.Context) ([]corev1.Node, error) {
	nodes, err := listAll(ctx, r.opts.PageSize, metav1.ListOptions{},
		func(ctx context.Context, o metav1.ListOptions) ([]corev1.Node, string, error) {
			l, err := r.Kube.CoreV1().Nodes().List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return l.Items, l.Continue, nil
		})
	if err != nil {
		return nil, r.apiError("list", "nodes", "", err)
	}
	return nodes, nil
}

func (r *reader) daemonSets(ctx context.Context) ([]appsv1.DaemonSet, error) {
	list, err := listAll(ctx, r.opts.PageSize, metav1.ListOptions{},
		func(ctx context.Context, o metav1.ListOptions) ([]appsv1.DaemonSet, string, error) {
			l, err := r.Kube.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return l.Items, l.Continue, nil
		})
	if err != nil {
		return nil, r.apiError("list", "daemonsets.apps", "", err)
	}
	return list, nil
}

func (r *reader) pdbs(ctx context.Context) ([]policyv1.PodDisruptionBudget, error) {
	list, err := listAll(ctx, r.opts.PageSize, metav1.ListOptions{},
		func(ctx context.Context, o metav1.ListOptions) ([]policyv1.PodDisruptionBudget, string, error) {
			l, err := r.Kube.PolicyV1().PodDisruptionBudgets(metav1.NamespaceAll).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return l.Items, l.Continue, nil
		})
	if err != nil {
		return nil, r.apiError("list", "poddisruptionbudgets.policy", "", err)
	}
	return list, nil
}

// custom lists a custom resource (Karpenter's v1 NodePools, rightsize.dev
// NodePools or NodeClaims) as JSON when its CRD is served.
func (r *reader) custom(ctx context.Context, gvr schema.GroupVersionResource) ([]json.RawMessage, bool, error) {
	if r.Dynamic == nil {
		return nil, false, nil
	}
	// Ask discovery first: listing a resource the user has no RBAC for is
	// forbidden even when its CRD does not exist.
	gv := gvr.GroupVersion().String()
	res, err := r.Kube.Discovery().ServerResourcesForGroupVersion(gv)
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, r.apiError("discover", gv, "", err)
	}
	if !slices.ContainsFunc(res.APIResources, func(a metav1.APIResource) bool { return a.Name == gvr.Resource }) {
		return nil, false, nil
	}
	resource := gvr.Resource + "." + gvr.Group
	raws, err := listAll(ctx, r.opts.PageSize, metav1.ListOptions{},
		func(ctx context.Context, o metav1.ListOptions) ([]json.RawMessage, string, error) {
			l, err := r.Dynamic.Resource(gvr).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			out := make([]json.RawMessage, 0, len(l.Items))
			for i := range l.Items {
				j, err := l.Items[i].MarshalJSON()
				if err != nil {
					return nil, "", fmt.Errorf("encoding %s %s: %w", l.Items[i].GetKind(), l.Items[i].GetName(), err)
				}
				out = append(out, j)
			}
			return out, l.GetContinue(), nil
		})
	if err != nil {
		return nil, true, r.apiError("list", resource, "", err)
	}
	return raws, true, nil
}

// listAll pages through a list. When the continue token expires
// (410 Gone) it lists again in one request.
func listAll[T any](ctx context.Context, pageSize int64, opts metav1.ListOptions, page func(context.Context, metav1.ListOptions) ([]T, string, error)) ([]T, error) {
	var all []T
	opts.Limit = pageSize
	for {
		items, next, err := page(ctx, opts)
		if err != nil {
			if apierrors.IsResourceExpired(err) && opts.Continue != "" {
				opts.Limit, opts.Continue, all = 0, "", nil
				continue
			}
			return nil, err
		}
		if all == nil {
			all = items
		} else {
			all = append(all, items...)
		}
		if next == "" {
			return all, nil
		}
		opts.Continue = next
	}
}

// addPending converts the pending pods (unbound, not terminating, phase
// Pending) into solver pods.
func (c *Cluster) addPending(pods []corev1.Pod) {
	for i := range pods {
		pod := &pods[i]
		if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodPending {
			continue
		}
		pp := PendingPod{Namespace: pod.Namespace, Name: pod.Name, Owner: Owner(pod), Index: -1}
		pp.SchedulerReason, pp.SchedulerMessage = schedulerView(pod)
		switch {
		case len(pod.Spec.SchedulingGates) > 0:
			names := make([]string, len(pod.Spec.SchedulingGates))
			for k, g := range pod.Spec.SchedulingGates {
				names[k] = g.Name
			}
			pp.NotPlanned = fmt.Sprintf("waits for scheduling gates (%s); it is planned once they are removed", strings.Join(names, ", "))
		case strings.HasPrefix(pp.Owner, "DaemonSet/"):
			pp.NotPlanned = "a DaemonSet pod belongs to one node; a new node does not help — free room on that node"
		default:
			shape, err := c.podShape(pp.Owner+" in namespace "+pod.Namespace, "spec", &pod.Spec)
			if err != nil {
				pp.NotPlanned = "cannot be modelled: " + oneLine(err.Error())
				c.warnf(pp.Key(), "left out of the plan: %v", err)
				break
			}
			shape.Namespace, shape.Name, shape.Owner = pod.Namespace, pod.Name, pp.Owner
			shape.Labels, shape.Controller = pod.Labels, metav1.GetControllerOf(pod) != nil
			resolveMatchLabelKeys(&pod.Spec, &shape)
			if err := c.podVolumes(pod, &shape); err != nil {
				pp.NotPlanned = "cannot be modelled: " + oneLine(err.Error())
				c.warnf(pp.Key(), "left out of the plan: %v", err)
				break
			}
			pp.Index = len(c.Pods)
			c.Pods = append(c.Pods, shape)
		}
		c.Pending = append(c.Pending, pp)
	}
}

// schedulerView returns the reason and message of a False PodScheduled condition.
func schedulerView(pod *corev1.Pod) (reason, message string) {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
			return cond.Reason, oneLine(cond.Message)
		}
	}
	return "", ""
}

// Owner returns a pod's top-level controller as "Kind/name": a ReplicaSet
// made by a Deployment (its name is the Deployment's plus "-" and the
// pod-template-hash label) becomes the Deployment; a pod without a
// controller is "Pod/<name>".
func Owner(pod *corev1.Pod) string {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return "Pod/" + pod.Name
	}
	if ref.Kind == "ReplicaSet" && strings.HasPrefix(ref.APIVersion, "apps/") {
		if h := pod.Labels[LabelPodTemplateHash]; h != "" {
			if d, ok := strings.CutSuffix(ref.Name, "-"+h); ok && d != "" {
				return "Deployment/" + d
			}
		}
	}
	return ref.Kind + "/" + ref.Name
}

// addLivePool converts a NodePool read from the cluster. The API server has
// validated it, so fields newer than this reader are ignored rather than
// refused; a NodePool that still cannot be read is left out with a warning.
// A rightsize.dev NodePool (by its apiVersion) is read as
// addRightsizePools reads it.
func (c *Cluster) addLivePool(raw json.RawMessage) {
	var tm metav1.TypeMeta
	if json.Unmarshal(raw, &tm) == nil && strings.HasPrefix(tm.APIVersion, v1alpha1.Group+"/") {
		np := &v1alpha1.NodePool{}
		if err := json.Unmarshal(raw, np); err != nil {
			c.warnf("NodePool", "left out: %v", err)
			return
		}
		c.addRightsizePools([]*v1alpha1.NodePool{np})
		return
	}
	c.addPoolJSON(raw, OwnerKarpenter)
}

// addPoolJSON converts a Karpenter-shaped NodePool and records its owner;
// it reports whether the pool was added.
func (c *Cluster) addPoolJSON(raw json.RawMessage, owner string) bool {
	var o karpenterPool
	if err := json.Unmarshal(raw, &o); err != nil {
		c.warnf("NodePool", "left out: %v", err)
		return false
	}
	where := "NodePool " + o.Metadata.Name
	if owner == OwnerKarpenter && c.PoolOwners[o.Metadata.Name] == OwnerRightsize {
		c.warnf(where, "both karpenter.sh and rightsize.dev have a NodePool of this name; only the rightsize.dev one is planned")
		return false
	}
	if err := c.addPool(where, "NodePool", &o); err != nil {
		c.warnf(where, "left out of the plan: %v", err)
		return false
	}
	if c.PoolOwners == nil {
		c.PoolOwners = map[string]string{}
	}
	c.PoolOwners[o.Metadata.Name] = owner
	return true
}

// addDaemonSet records a DaemonSet's pod as overhead of new nodes.
func (c *Cluster) addDaemonSet(d *daemonSet) {
	label := fmt.Sprintf("DaemonSet %s/%s", d.namespace, d.name)
	shape, err := c.podShape(label, "spec.template.spec", &d.spec)
	if err != nil {
		c.warnf(label, "left out of the per-node overhead: %v", err)
		return
	}
	c.DaemonSets = append(c.DaemonSets, solver.DaemonSet{
		Namespace: d.namespace, Name: d.name, Requests: shape.Requests,
		NodeSelector: shape.NodeSelector, Affinity: shape.Affinity, Tolerations: shape.Tolerations, HostPorts: shape.HostPorts,
	})
}

// addNodes converts the nodes and adds up the requests of the pods bound to
// them. It runs after the pending pods, pools and DaemonSets, so that only
// the extended resources they name are counted.
func (c *Cluster) addNodes(nodes []corev1.Node, pods []corev1.Pod) {
	index := make(map[string]int, len(nodes))
	c.Nodes = make([]solver.Node, len(nodes))
	capacity := make([]solver.Resources, len(nodes))
	for i := range nodes {
		c.Nodes[i] = c.node(&nodes[i])
		capacity[i] = c.known(nodes[i].Status.Capacity)
		index[nodes[i].Name] = i
	}
	for i := range pods {
		pod := &pods[i]
		if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		c.Scheduled = append(c.Scheduled, ScheduledPod{Namespace: pod.Namespace, Name: pod.Name, Owner: Owner(pod), Node: pod.Spec.NodeName})
		ni, ok := index[pod.Spec.NodeName]
		if !ok {
			continue
		}
		c.Nodes[ni].Pods = append(c.Nodes[ni].Pods, c.boundPod(pod))
		if t := pod.CreationTimestamp.Time; t.After(c.Nodes[ni].LastPodChange) {
			c.Nodes[ni].LastPodChange = t // the last arrival; departures are in NodeClaims (status.lastPodEventTime)
		}
		c.Nodes[ni].Requested = c.Nodes[ni].Requested.Add(c.Nodes[ni].Pods[len(c.Nodes[ni].Pods)-1].Requests)
	}
	// Karpenter counts the capacity of a pool's nodes against its limits.
	for pi := range c.Pools {
		for ni := range c.Nodes {
			if c.Nodes[ni].Labels[solver.LabelNodePool] == c.Pools[pi].Name {
				c.Pools[pi].Used = c.Pools[pi].Used.Add(capacity[ni])
			}
		}
	}
}

// boundPod converts a pod bound to a node: what topology spread,
// (anti-)affinity and consolidation need to know of it.
func (c *Cluster) boundPod(pod *corev1.Pod) solver.Pod {
	p := solver.Pod{
		Namespace: pod.Namespace, Name: pod.Name, Owner: Owner(pod),
		Requests:     c.known(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})),
		Labels:       pod.Labels,
		Controller:   metav1.GetControllerOf(pod) != nil,
		DoNotDisrupt: PodDoNotDisrupt(pod, time.Now()),
		HostPorts:    hostPorts(&pod.Spec),
	}
	p.Requests[solver.Pods] = 1
	// Where the pod may run again once evicted: consolidation moves it
	// only to nodes its nodeSelector, required node affinity and
	// tolerations admit (the API server validated them).
	if len(pod.Spec.NodeSelector) > 0 {
		p.NodeSelector = maps.Clone(pod.Spec.NodeSelector)
	}
	for _, t := range pod.Spec.Tolerations {
		p.Tolerations = append(p.Tolerations, solver.Toleration{Key: t.Key, Operator: string(t.Operator), Value: t.Value, Effect: string(t.Effect)})
	}
	if pod.Spec.Affinity != nil || len(pod.Spec.TopologySpreadConstraints) > 0 {
		where := p.Owner + " in namespace " + pod.Namespace
		var err error
		if p.Affinity, err = c.affinity(where, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", pod.Spec.Affinity); err != nil {
			c.warnf(where, "its node affinity is ignored: %v", err)
		}
		if err := c.podTopology(where, "spec", &pod.Spec, &p); err != nil {
			c.warnf(where, "its topology constraints are ignored: %v", err)
		}
	}
	c.boundVolumes(pod, &p)
	return p
}

// addPDBs converts the PodDisruptionBudgets.
func (c *Cluster) addPDBs(pdbs []policyv1.PodDisruptionBudget) {
	for i := range pdbs {
		b := &pdbs[i]
		sel, err := selector("spec.selector", b.Spec.Selector)
		if err != nil {
			c.warnf(fmt.Sprintf("PodDisruptionBudget %s/%s", b.Namespace, b.Name), "left out: %v", err)
			continue
		}
		c.PDBs = append(c.PDBs, solver.PDB{Namespace: b.Namespace, Name: b.Name, Selector: sel, DisruptionsAllowed: b.Status.DisruptionsAllowed})
	}
}

// node converts a Node. Instance type, zone, capacity type and pool come
// from the well-known labels of kubelets, Karpenter and EKS.
func (c *Cluster) node(n *corev1.Node) solver.Node {
	labels := n.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	sn := solver.Node{
		Name:          n.Name,
		Pool:          firstLabel(labels, solver.LabelNodePool, LabelProvisionerName, LabelEKSNodeGroup),
		InstanceType:  firstLabel(labels, solver.LabelInstanceType, LabelInstanceTypeBeta),
		Zone:          firstLabel(labels, solver.LabelZone, LabelZoneBeta),
		CapacityType:  CapacityType(labels),
		Labels:        labels,
		Allocatable:   c.known(n.Status.Allocatable),
		Unschedulable: n.Spec.Unschedulable,
		DoNotDisrupt:  DoNotDisrupt(n.Annotations),
		Created:       n.CreationTimestamp.Time,
	}
	for _, t := range n.Spec.Taints {
		sn.Taints = append(sn.Taints, solver.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	return sn
}

// DoNotDisrupt reports whether a pod's or node's annotations keep
// consolidation away: karpenter.sh/do-not-disrupt or
// rightsize.dev/do-not-disrupt set to "true".
func DoNotDisrupt(annotations map[string]string) bool {
	return annotations[AnnotationDoNotDisrupt] == "true" || annotations[AnnotationRightsizeDoNotDisrupt] == "true"
}

// CapacityType reads a node's capacity type from Karpenter's label
// (on-demand, spot) or EKS managed node groups' (ON_DEMAND, SPOT); "" when
// neither is set.
func CapacityType(labels map[string]string) string {
	if ct := labels[solver.LabelCapacityType]; ct != "" {
		return ct
	}
	switch labels[LabelEKSCapacityType] {
	case "ON_DEMAND":
		return "on-demand"
	case "SPOT":
		return "spot"
	case "CAPACITY_BLOCK":
		return "reserved"
	}
	return ""
}

func firstLabel(labels map[string]string, keys ...string) string {
	for _, k := range keys {
		if v := labels[k]; v != "" {
			return v
		}
	}
	return ""
}

// known converts a resource list, keeping only the resources the solver
// already has an index for: requests nobody pending asks for do not matter,
// and a node's odd resources (attachable-volumes-*) are not errors.
func (c *Cluster) known(list corev1.ResourceList) solver.Resources {
	var r solver.Resources
	for name, q := range list {
		i := slices.Index(solver.FixedResourceNames[:], string(name))
		if i < 0 {
			j := slices.Index(c.ExtendedResources, string(name))
			if j < 0 {
				continue
			}
			i = solver.NumFixedResources + j
		}
		if v, err := value(&q, i == solver.CPU); err == nil {
			r[i] = v
		}
	}
	return r
}

func dedupe(s []string) []string {
	seen := make(map[string]bool, len(s))
	out := s[:0]
	for _, w := range s {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}
