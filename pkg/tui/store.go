package tui

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/watch"
)

// store is the program's own view of the cluster, built from the watcher's
// events on the UI goroutine. The objects are the informers' and are never
// modified; a plan gets fresh slices of pointers to them.
type store struct {
	pods       map[string]*corev1.Pod
	nodes      map[string]*corev1.Node
	daemonSets map[string]*appsv1.DaemonSet
	pdbs       map[string]*policyv1.PodDisruptionBudget
	pools      map[string]*unstructured.Unstructured // "group/name"
	claims     map[string]*unstructured.Unstructured
	classes    map[string]*unstructured.Unstructured // "group/resource/name"
	// commitments are the rightsize.dev Commitments, which the plans spend.
	commitments map[string]*unstructured.Unstructured
	karpenter   bool
	claimCRD    bool
	// unreadPools are the NodePool resources the user may not list.
	unreadPools []string
}

func newStore() *store {
	return &store{
		pods: map[string]*corev1.Pod{}, nodes: map[string]*corev1.Node{}, daemonSets: map[string]*appsv1.DaemonSet{},
		pdbs: map[string]*policyv1.PodDisruptionBudget{}, pools: map[string]*unstructured.Unstructured{}, claims: map[string]*unstructured.Unstructured{},
		classes: map[string]*unstructured.Unstructured{}, commitments: map[string]*unstructured.Unstructured{},
	}
}

// apply records a batch of events.
func (s *store) apply(b watch.Batch) {
	for _, e := range b.Events {
		switch e.Kind {
		case watch.Pod:
			put(s.pods, e)
		case watch.Node:
			put(s.nodes, e)
		case watch.DaemonSet:
			put(s.daemonSets, e)
		case watch.PDB:
			put(s.pdbs, e)
		case watch.KarpenterNodePool:
			e.Key = "karpenter.sh/" + e.Key
			put(s.pools, e)
		case watch.NodePool:
			e.Key = "rightsize.dev/" + e.Key
			put(s.pools, e)
		case watch.NodeClaim:
			put(s.claims, e)
			s.claimCRD = true
		case watch.NodeClass:
			put(s.classes, e)
		case watch.Commitment:
			put(s.commitments, e)
		}
	}
}

func put[T any](m map[string]*T, e watch.Event) {
	if e.Obj == nil {
		delete(m, e.Key)
		return
	}
	if o, ok := e.Obj.(*T); ok {
		m[e.Key] = o
	}
}

// objects returns fresh slices for a plan, in key order so that the same
// cluster always gives the same plan.
func (s *store) objects() *snapshot.Objects {
	o := &snapshot.Objects{
		Pods:               values(s.pods),
		Nodes:              values(s.nodes),
		DaemonSets:         values(s.daemonSets),
		PDBs:               values(s.pdbs),
		KarpenterInstalled: s.karpenter,
		UnreadNodePools:    s.unreadPools,
	}
	for _, k := range slices.Sorted(maps.Keys(s.pools)) {
		if j, err := s.pools[k].MarshalJSON(); err == nil {
			o.NodePools = append(o.NodePools, j)
		}
		o.RightsizeInstalled = o.RightsizeInstalled || strings.HasPrefix(s.pools[k].GetAPIVersion(), v1alpha1.Group+"/")
	}
	// Node classes, for the pools' kubelet settings.
	for _, k := range slices.Sorted(maps.Keys(s.classes)) {
		group, rest, _ := strings.Cut(k, "/")
		resource, _, _ := strings.Cut(rest, "/")
		gvr := schema.GroupVersionResource{Group: group, Version: s.classes[k].GroupVersionKind().Version, Resource: resource}
		if j, err := s.classes[k].MarshalJSON(); err == nil {
			if o.NodeClasses == nil {
				o.NodeClasses = map[schema.GroupVersionResource][]json.RawMessage{}
			}
			o.NodeClasses[gvr] = append(o.NodeClasses[gvr], j)
		}
	}
	// Commitments, read as live explain reads them (snapshot.Objects).
	for _, k := range slices.Sorted(maps.Keys(s.commitments)) {
		if j, err := s.commitments[k].MarshalJSON(); err == nil {
			o.Commitments = append(o.Commitments, j)
		}
	}
	// Typed NodeClaims give explain's consolidation the operator's view:
	// node prices, pools, and nodes still initializing.
	for _, k := range slices.Sorted(maps.Keys(s.claims)) {
		var c v1alpha1.NodeClaim
		if runtime.DefaultUnstructuredConverter.FromUnstructured(s.claims[k].Object, &c) == nil {
			o.NodeClaims = append(o.NodeClaims, &c)
		}
	}
	return o
}

func values[T any](m map[string]*T) []*T {
	out := make([]*T, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}

// claimList converts the NodeClaims for the planner and the Nodes view.
func (s *store) claimList() []plan.Claim {
	out := make([]plan.Claim, 0, len(s.claims))
	for _, k := range slices.Sorted(maps.Keys(s.claims)) {
		out = append(out, claimOf(s.claims[k]))
	}
	return out
}

// claimOf reads a NodeClaim as planning does (plan.ClaimOf). One the
// typed NodeClaim cannot hold (a field of the wrong type) keeps only its
// name, pool and timestamps.
func claimOf(u *unstructured.Unstructured) plan.Claim {
	var nc v1alpha1.NodeClaim
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &nc); err != nil {
		return plan.Claim{Name: u.GetName(), Pool: u.GetLabels()[v1alpha1.LabelNodePool], Created: u.GetCreationTimestamp().Time,
			Deleting: u.GetDeletionTimestamp() != nil}
	}
	return plan.ClaimOf(&nc)
}

// nodeOfClaim finds the node that registered for a claim: status.nodeName,
// or a node named after it (as the simulated cloud names them).
func (s *store) nodeOfClaim(c *plan.Claim) *corev1.Node {
	if c.NodeName != "" {
		if n := s.nodes[c.NodeName]; n != nil {
			return n
		}
	}
	return s.nodes[c.Name]
}

// nodeOfInstance finds the node of a directly launched instance by its
// providerID; hint is the name it usually has (the simulated cloud names
// nodes after their claim), tried first.
func (s *store) nodeOfInstance(providerID, hint string) *corev1.Node {
	if providerID == "" {
		return nil
	}
	if n := s.nodes[hint]; n != nil && n.Spec.ProviderID == providerID {
		return n
	}
	for _, n := range s.nodes {
		if n.Spec.ProviderID == providerID {
			return n
		}
	}
	return nil
}

// pendingOf returns the keys of the pods among keys not bound to a node yet.
func (s *store) pendingOf(keys []string) []string {
	var out []string
	for _, k := range keys {
		if p := s.pods[k]; p != nil && p.Spec.NodeName == "" {
			out = append(out, k)
		}
	}
	return out
}

// nominatedTo reports whether every pod among keys not bound yet is
// nominated to node.
func (s *store) nominatedTo(keys []string, node string) bool {
	for _, k := range keys {
		if p := s.pods[k]; p != nil && p.Spec.NodeName == "" && p.Status.NominatedNodeName != node {
			return false
		}
	}
	return true
}

// podsRunning counts the pods among keys that are Running, on any node.
func (s *store) podsRunning(keys []string) int {
	n := 0
	for _, k := range keys {
		if p := s.pods[k]; p != nil && p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
			n++
		}
	}
	return n
}

// podsRunningOn counts the pods among keys bound to node and Running.
func (s *store) podsRunningOn(keys []string, node string) (running, bound int) {
	for _, k := range keys {
		p := s.pods[k]
		if p == nil || node == "" || p.Spec.NodeName != node {
			continue
		}
		bound++
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	return running, bound
}

// podOnNode reports whether any pod among keys is Running anywhere.
func (s *store) anyPending(keys []string) int {
	n := 0
	for _, k := range keys {
		if p := s.pods[k]; p != nil && p.Spec.NodeName == "" {
			n++
		}
	}
	return n
}

// nodeReady reports whether the node's Ready condition is True.
func nodeReady(n *corev1.Node) bool {
	if n == nil {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
