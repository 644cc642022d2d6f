package metrics

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/disruption"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/commitments"
)

// States of a NodeClaim, the state label of rightsize_nodeclaims.
const (
	ClaimLaunching    = "launching"    // created, instance not launched yet
	ClaimRegistering  = "registering"  // launched, its Node not joined yet
	ClaimInitializing = "initializing" // Node joined, not open to pods yet
	ClaimInitialized  = "initialized"  // Node open to pods
	ClaimDeleting     = "deleting"     // being drained and terminated
)

// States of a Node, the state label of rightsize_nodes.
const (
	NodeReady      = "ready"
	NodeNotReady   = "not_ready"
	NodeDisrupting = "disrupting" // cordoned, or tainted by a disruption action
	NodeDeleting   = "deleting"
)

// Reasons a pod is pending, the reason label of rightsize_pods_pending_by_reason.
const (
	// PendingUnschedulable: the scheduler found no node, and the pod is not
	// nominated to one: the provisioner has not planned it (yet), or could not.
	PendingUnschedulable = "unschedulable"
	// PendingNominated: marked Unschedulable but nominated to a node, for
	// which it waits (typically an in-flight NodeClaim's).
	PendingNominated = "nominated"
	// PendingGated: held back by scheduling gates.
	PendingGated = "scheduling_gated"
	// PendingQueued: not tried by the scheduler yet.
	PendingQueued = "queued"
	// PendingStarting: bound to a node, not Running yet.
	PendingStarting = "starting"
)

var (
	// NodeClaims counts NodeClaims by pool and state.
	NodeClaims = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "nodeclaims",
		Help: "NodeClaims by NodePool and state (launching, registering, initializing, initialized, deleting), as the operator's cache has them, refreshed every few seconds.",
	}, []string{LabelNodePool, LabelState})
	// Nodes counts the Nodes of NodePools by pool and state.
	Nodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "nodes",
		Help: "Nodes of rightsize.dev NodePools by NodePool and state (ready, not_ready, disrupting, deleting), as the operator's cache has them, refreshed every few seconds.",
	}, []string{LabelNodePool, LabelState})
	// PodsPendingByReason counts pods not running yet by reason.
	PodsPendingByReason = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "pods_pending_by_reason",
		Help: "Pods not running yet by reason (unschedulable, nominated, scheduling_gated, queued, starting), as the operator's cache has them, refreshed every few seconds.",
	}, []string{LabelReason})
)

// Cluster keeps NodeClaims, Nodes and PodsPendingByReason equal to the
// objects themselves, counted afresh from the cache at each refresh rather
// than from events, so that they match what kubectl shows however many
// replicas or restarts counted along the way. It runs on every replica.
type Cluster struct {
	reader   client.Reader
	interval time.Duration
	// shown holds the label values each gauge had at the last refresh, so
	// that series of pools gone are deleted.
	shown map[*prometheus.GaugeVec]map[string][]string
	// commitments, when set (WithCommitments), bills the Commitments.
	commitments *commitments.Reader
}

// NewCluster returns the refresher over reader (the manager's cache),
// refreshing every interval (5 s when zero).
func NewCluster(reader client.Reader, interval time.Duration) *Cluster {
	if interval <= 0 {
		interval = 5 * time.Second
	}
	return &Cluster{reader: reader, interval: interval, shown: map[*prometheus.GaugeVec]map[string][]string{}}
}

// NeedLeaderElection is false: every replica reports the objects.
func (c *Cluster) NeedLeaderElection() bool { return false }

// Start refreshes the gauges until ctx ends.
func (c *Cluster) Start(ctx context.Context) error {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		_ = c.Refresh(ctx) // a failed list keeps the last values until the next tick
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Refresh lists the objects and sets the gauges, the commitment gauges
// last: an error reading or billing Commitments leaves the others set.
func (c *Cluster) Refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var pools v1alpha1.NodePoolList
	if err := c.reader.List(ctx, &pools, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing NodePools: %w", err)
	}
	var claimList v1alpha1.NodeClaimList
	if err := c.reader.List(ctx, &claimList, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing NodeClaims: %w", err)
	}
	var nodeList corev1.NodeList
	if err := c.reader.List(ctx, &nodeList, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing Nodes: %w", err)
	}
	var pods corev1.PodList
	if err := c.reader.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing Pods: %w", err)
	}
	claims := map[string]map[string]int{}
	nodes := map[string]map[string]int{}
	var usage, limits []series
	for i := range pools.Items {
		p := &pools.Items[i]
		claims[p.Name] = zeros(ClaimLaunching, ClaimRegistering, ClaimInitializing, ClaimInitialized, ClaimDeleting)
		nodes[p.Name] = zeros(NodeReady, NodeNotReady, NodeDisrupting, NodeDeleting)
		byType := func(rt string) []string { return []string{rt, p.Name} }
		usage = addResources(usage, p.Status.Resources, byType)
		limits = addResources(limits, p.Spec.Limits, byType)
	}
	for i := range claimList.Items {
		add(claims, claimList.Items[i].NodePool(), NodeClaimState(&claimList.Items[i]))
	}
	byName := make(map[string]*corev1.Node, len(nodeList.Items))
	for i := range nodeList.Items {
		n := &nodeList.Items[i]
		byName[n.Name] = n
		if pool := n.Labels[v1alpha1.LabelNodePool]; pool != "" {
			add(nodes, pool, NodeState(n))
		}
	}
	pending := zeros(PendingUnschedulable, PendingNominated, PendingGated, PendingQueued, PendingStarting)
	podStates := make([]series, 0, len(pods.Items))
	requests := map[string]corev1.ResourceList{}
	daemons := map[string]corev1.ResourceList{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if reason, ok := PendingReason(pod); ok {
			pending[reason]++
		}
		podStates = append(podStates, series{labels: podStateLabels(pod, byName[pod.Spec.NodeName]), value: 1})
		if n := byName[pod.Spec.NodeName]; n == nil || n.Labels[v1alpha1.LabelNodePool] == "" ||
			pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		r := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		addInto(requests, pod.Spec.NodeName, r)
		if owner := metav1.GetControllerOf(pod); owner != nil && owner.Kind == "DaemonSet" {
			addInto(daemons, pod.Spec.NodeName, r)
		}
	}
	var allocatable, podRequests, daemonRequests, overhead []series
	for _, n := range byName {
		if n.Labels[v1alpha1.LabelNodePool] == "" {
			continue
		}
		labels := nodeLabels(n)
		byType := func(rt string) []string { return append(slices.Clone(labels), rt) }
		allocatable = addResources(allocatable, n.Status.Allocatable, byType)
		podRequests = addResources(podRequests, requests[n.Name], byType)
		daemonRequests = addResources(daemonRequests, daemons[n.Name], byType)
		reserved := corev1.ResourceList{}
		for name, q := range n.Status.Capacity {
			q = q.DeepCopy()
			q.Sub(n.Status.Allocatable[name])
			reserved[name] = q
		}
		overhead = addResources(overhead, reserved, byType)
	}
	c.set(NodeClaims, byTwo(claims))
	c.set(Nodes, byTwo(nodes))
	c.set(PodsPendingByReason, byTwo(map[string]map[string]int{"": pending}))
	c.set(KarpenterNodePoolUsage, usage)
	c.set(KarpenterNodePoolLimit, limits)
	c.set(KarpenterPodState, podStates)
	c.set(KarpenterNodesAllocatable, allocatable)
	c.set(KarpenterNodesPodRequests, podRequests)
	c.set(KarpenterNodesDaemonRequests, daemonRequests)
	c.set(KarpenterNodesSystemOverhead, overhead)
	return c.refreshCommitments(ctx, claimList.Items)
}

// series is one child of a gauge: its label values and value.
type series struct {
	labels []string
	value  float64
}

// byTwo turns counts by first and second label value into series (of
// the second label alone when the first is "").
func byTwo(counts map[string]map[string]int) []series {
	var out []series
	for first, byState := range counts {
		for second, n := range byState {
			labels := []string{first, second}
			if first == "" {
				labels = []string{second}
			}
			out = append(out, series{labels: labels, value: float64(n)})
		}
	}
	return out
}

// set sets the gauge to the series, and deletes the series it showed last
// time and not now.
func (c *Cluster) set(g *prometheus.GaugeVec, all []series) {
	now := make(map[string][]string, len(all))
	for _, s := range all {
		g.WithLabelValues(s.labels...).Set(s.value)
		now[strings.Join(s.labels, "\x00")] = s.labels
	}
	for key, labels := range c.shown[g] {
		if _, ok := now[key]; !ok {
			g.DeleteLabelValues(labels...)
		}
	}
	c.shown[g] = now
}

// addInto adds r to m[key].
func addInto(m map[string]corev1.ResourceList, key string, r corev1.ResourceList) {
	sum := m[key]
	if sum == nil {
		sum = corev1.ResourceList{}
		m[key] = sum
	}
	for name, q := range r {
		acc := sum[name]
		acc.Add(q)
		sum[name] = acc
	}
}

func zeros(keys ...string) map[string]int {
	m := make(map[string]int, len(keys))
	for _, k := range keys {
		m[k] = 0
	}
	return m
}

func add(m map[string]map[string]int, pool, state string) {
	if m[pool] == nil {
		m[pool] = map[string]int{} // a pool deleted while its nodes go
	}
	m[pool][state]++
}

// NodeClaimState is the claim's state label: the furthest condition it
// reached, or deleting.
func NodeClaimState(claim *v1alpha1.NodeClaim) string {
	switch {
	case claim.DeletionTimestamp != nil:
		return ClaimDeleting
	case claim.IsInitialized():
		return ClaimInitialized
	case claim.IsRegistered():
		return ClaimInitializing
	case claim.IsLaunched():
		return ClaimRegistering
	}
	return ClaimLaunching
}

// NodeState is the node's state label.
func NodeState(node *corev1.Node) string {
	if node.DeletionTimestamp != nil {
		return NodeDeleting
	}
	if node.Spec.Unschedulable {
		return NodeDisrupting
	}
	for _, t := range node.Spec.Taints {
		if t.Key == disruption.TaintKey {
			return NodeDisrupting
		}
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return NodeReady
		}
	}
	return NodeNotReady
}

// PendingReason is why a pod does not run yet, and false for pods that
// run, ran or are going away.
func PendingReason(pod *corev1.Pod) (string, bool) {
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodPending {
		return "", false
	}
	if pod.Spec.NodeName != "" {
		return PendingStarting, true
	}
	if len(pod.Spec.SchedulingGates) > 0 {
		return PendingGated, true
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			if pod.Status.NominatedNodeName != "" {
				return PendingNominated, true
			}
			return PendingUnschedulable, true
		}
	}
	return PendingQueued, true
}
