package snapshot

import (
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	cbv1beta1 "github.com/rightsize-dev/kubectl-rightsize/pkg/apis/capacitybuffer/v1beta1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// Objects are the cluster objects a Cluster is built from, as a watcher's
// caches hold them. The objects are read, never modified.
type Objects struct {
	// Pods are the unfinished pods (finished ones are skipped).
	Pods       []*corev1.Pod
	Nodes      []*corev1.Node
	DaemonSets []*appsv1.DaemonSet
	PDBs       []*policyv1.PodDisruptionBudget
	// NodePools are Karpenter-shaped NodePools as JSON (karpenter.sh/v1 or
	// rightsize.dev/v1alpha1: the same field names).
	NodePools []json.RawMessage
	// NodeOverlays are Karpenter's karpenter.sh/v1alpha1 NodeOverlays as
	// JSON, when their CRD exists.
	NodeOverlays []json.RawMessage
	// PodNamespace is "" when Pods cover every namespace, else the only
	// namespace they cover.
	PodNamespace string
	// KarpenterInstalled reports whether the karpenter.sh/v1 NodePool CRD exists.
	KarpenterInstalled bool
	// RightsizeNodePools and NodeClaims are rightsize.dev's, typed; they
	// are read when RightsizeInstalled (the NodePool CRD exists).
	RightsizeNodePools []*v1alpha1.NodePool
	NodeClaims         []*v1alpha1.NodeClaim
	RightsizeInstalled bool
	// NodeClasses are the node classes (as JSON) of each of
	// NodeClassResources, for the pools' kubelet settings.
	NodeClasses map[schema.GroupVersionResource][]json.RawMessage
	// Volumes are the storage objects pods' volumes are resolved against;
	// nil plans pods as if they had no volume.
	Volumes *Volumes
	// UnreadNodePools are the NodePool resources served that the user may
	// not list (Cluster.UnreadNodePools).
	UnreadNodePools []string
	// CapacityBuffers (autoscaling.x-k8s.io) and the PodTemplates they
	// refer to: each buffer's room is planned as pending pods never
	// created (Manifests.Buffers). A scalableRef is resolved against the
	// pods of Pods only.
	CapacityBuffers []*cbv1beta1.CapacityBuffer
	PodTemplates    []*corev1.PodTemplate
	// Commitments are the rightsize.dev Commitments (Reserved Instances,
	// Savings Plans) as JSON, when their CRD exists: Manifests.Commitments.
	Commitments []json.RawMessage
}

// FromObjects converts objects already read (for example by informers) the
// way ReadCluster converts what it lists, so that a watcher and a one-shot
// read give the solver the same input.
func FromObjects(o *Objects) *Cluster { return assemble(o, nil) }

// assemble converts the objects, ReadCluster's and a watcher's alike;
// warnings (what could not be read) come first.
func assemble(o *Objects, warnings []string) *Cluster {
	pods := make([]corev1.Pod, 0, len(o.Pods))
	for _, p := range o.Pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		pods = append(pods, *p) // a shallow copy: the converters only read
	}
	nodes := make([]corev1.Node, len(o.Nodes))
	for i, n := range o.Nodes {
		nodes[i] = *n
	}
	pdbs := make([]policyv1.PodDisruptionBudget, len(o.PDBs))
	for i, b := range o.PDBs {
		pdbs[i] = *b
	}
	cl := &Cluster{PodNamespace: o.PodNamespace, KarpenterInstalled: o.KarpenterInstalled, UnreadNodePools: o.UnreadNodePools}
	if o.PodNamespace != "" {
		cl.warnf("pods", "you may not list pods in every namespace; free room on nodes counts only the pods of namespace %q", o.PodNamespace)
	}
	cl.Warnings = append(cl.Warnings, warnings...)
	cl.setVolumes(o.Volumes)
	cl.addPending(pods)
	cl.addPDBs(pdbs)
	for _, raw := range o.NodePools {
		cl.addLivePool(raw)
	}
	for _, raw := range o.NodeOverlays {
		cl.addLiveOverlay(raw)
	}
	cl.addCommitments(o.Commitments)
	cl.Rightsize.Installed = o.RightsizeInstalled
	cl.addRightsizePools(o.RightsizeNodePools)
	for i, gvr := range classResources {
		cl.addLiveClasses(gvr, classKinds[i], o.NodeClasses[gvr])
	}
	cl.resolveKubelets()
	for _, d := range o.DaemonSets {
		ds := daemonSet{namespace: d.Namespace, name: d.Name, spec: d.Spec.Template.Spec}
		cl.addDaemonSet(&ds)
	}
	cl.addNodes(nodes, pods)
	cl.nodeAttachLimits()
	claims := make([]v1alpha1.NodeClaim, len(o.NodeClaims))
	for i, c := range o.NodeClaims {
		claims[i] = *c
	}
	cl.Rightsize.Claims, cl.Rightsize.NodeObjects = claims, nodes
	cl.addClaims(claims)
	cl.addBuffers(o.CapacityBuffers, o.PodTemplates)
	cl.Warnings = dedupe(cl.Warnings)
	return cl
}
