package metrics

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// The metrics below carry Karpenter's names, labels and units
// (kubernetes-sigs/karpenter pkg/metrics, pkg/controllers/metrics,
// pkg/controllers/disruption/metrics.go), so that dashboards and alerts
// written for Karpenter read the operator unchanged. Each counts what one of
// the rightsize_ metrics counts, named in its help.

// Karpenter's label names.
const (
	LabelZone                = "zone"
	LabelMinValuesRelaxed    = "min_values_relaxed"
	LabelConsolidationPolicy = "consolidation_policy"
	LabelTerminationMode     = "termination_mode"
	LabelDecision            = "decision"
	LabelConsolidationType   = "consolidation_type"
	LabelResourceType        = "resource_type"
)

// Values of termination_mode, as Karpenter derives them from a NodeClaim's
// terminationGracePeriod.
const (
	TerminationGraceful = "graceful"
	TerminationEventual = "eventual"
	TerminationForceful = "forceful"
)

// The collectors served under Karpenter's names. Each one's name, labels
// and help are its row of karpenterMetrics, from which init builds and
// registers it.
var (
	KarpenterNodeClaimsCreated, KarpenterNodeClaimsTerminated, KarpenterNodeClaimsDisrupted,
	KarpenterPodsDisruptionInitiated, KarpenterNodesCreated, KarpenterNodesTerminated,
	KarpenterDecisions *prometheus.CounterVec
	KarpenterEligibleNodes, KarpenterNodePoolUsage, KarpenterNodePoolLimit, KarpenterPodState,
	KarpenterNodesAllocatable, KarpenterNodesPodRequests, KarpenterNodesDaemonRequests,
	KarpenterNodesSystemOverhead *prometheus.GaugeVec
	KarpenterPodStartupDuration prometheus.Summary
)

// karpenterMetric is one metric under Karpenter's name: the variable its
// collector is built into (a **prometheus.CounterVec, **prometheus.GaugeVec
// or *prometheus.Summary), its full name, label names and help.
type karpenterMetric struct {
	collector any
	name      string
	labels    []string
	help      string
}

// karpenterMetrics are the metrics served under Karpenter's names, one row
// each.
var karpenterMetrics = []karpenterMetric{
	{&KarpenterNodeClaimsCreated, "karpenter_nodeclaims_created_total", []string{LabelReason, LabelNodePool, LabelMinValuesRelaxed},
		"Karpenter's name for rightsize_nodeclaims_created_total: NodeClaims created, by reason (provisioned; the lower-case disruption reason for replacements: underutilized, empty, drifted, expired; adopted), NodePool and whether minValues was relaxed (--min-values-policy=BestEffort launched it with fewer values)."},
	{&KarpenterNodeClaimsTerminated, "karpenter_nodeclaims_terminated_total", []string{LabelNodePool, LabelCapacityType, LabelZone},
		"Karpenter's name for rightsize_nodeclaims_deleted_total: NodeClaims whose instance was terminated and finalizer removed, by NodePool, capacity type and zone."},
	{&KarpenterNodeClaimsDisrupted, "karpenter_nodeclaims_disrupted_total", []string{LabelReason, LabelNodePool, LabelCapacityType, LabelConsolidationPolicy, LabelTerminationMode},
		"NodeClaims disrupted, by reason (underutilized, empty, drifted, expired from the disruption controller, counted as rightsize_disruption_actions_total counts their actions; unhealthy, garbage_collected, insufficient_capacity, launch_timeout, registration_timeout, interruption when terminated), NodePool, capacity type, consolidation policy (for underutilized and empty only) and termination mode (graceful, eventual, forceful)."},
	{&KarpenterPodsDisruptionInitiated, "karpenter_pods_disruption_initiated_total", []string{LabelReason, LabelNodePool, LabelCapacityType, LabelConsolidationPolicy, LabelTerminationMode},
		"Karpenter's name for rightsize_disruption_pods_evicted_total: pods evicted by the disruption controller's actions (DaemonSet and mirror pods excluded), with the labels of karpenter_nodeclaims_disrupted_total."},
	{&KarpenterNodesCreated, "karpenter_nodes_created_total", []string{LabelNodePool, LabelZone},
		"Karpenter's name for rightsize_nodeclaims_registered_total: Nodes that registered for a NodeClaim, by NodePool and zone."},
	{&KarpenterNodesTerminated, "karpenter_nodes_terminated_total", []string{LabelNodePool, LabelZone},
		"Nodes of NodeClaims deleted after their instance was terminated, by NodePool and zone."},
	{&KarpenterDecisions, "karpenter_voluntary_disruption_decisions_total", []string{LabelDecision, LabelReason, LabelConsolidationType},
		"Karpenter's name for rightsize_disruption_actions_total: disruption actions carried out, by decision (delete, replace), reason (underutilized, empty, drifted, expired) and consolidation type (empty, single, multi; empty for drift and expiry)."},
	{&KarpenterEligibleNodes, "karpenter_voluntary_disruption_eligible_nodes", []string{LabelReason},
		"Nodes the last consolidation plan would remove, before budgets and guards, by reason (empty, underutilized); drifted and expired nodes are not counted here."},
	{&KarpenterNodePoolUsage, "karpenter_nodepools_usage", []string{LabelResourceType, LabelNodePool},
		"Resources provisioned for a NodePool (its status.resources), by resource type (cpu in cores, memory and ephemeral_storage in bytes, others as counts) and NodePool."},
	{&KarpenterNodePoolLimit, "karpenter_nodepools_limit", []string{LabelResourceType, LabelNodePool},
		"A NodePool's spec.limits, by resource type (in the units of karpenter_nodepools_usage) and NodePool."},
	{&KarpenterPodState, "karpenter_pods_state", []string{"name", "namespace", "owner", "node", "scheduled", LabelNodePool, LabelZone, "arch", LabelCapacityType, "instance_type", "phase", "ready", "managed"},
		"One series of value 1 per pod, labelled by its name, namespace, first owner, node, whether it is scheduled, the node's NodePool, zone, architecture, capacity type and instance type, its phase, readiness and whether its node belongs to a NodePool; refreshed with rightsize_pods_pending_by_reason."},
	{&KarpenterPodStartupDuration, "karpenter_pods_startup_duration_seconds", nil,
		"Time from a pod's creation to its Ready condition turning true, for pods the operator saw pending; beside rightsize_pod_unschedulable_to_running_seconds, which starts at Unschedulable."},
	{&KarpenterNodesAllocatable, "karpenter_nodes_allocatable", nodeLabelNames,
		"Allocatable resources of the Nodes of NodePools, by the node's well-known labels, name and resource type (cpu in cores)."},
	{&KarpenterNodesPodRequests, "karpenter_nodes_total_pod_requests", nodeLabelNames,
		"Resources requested by the pods bound to the Nodes of NodePools, DaemonSet pods included, with the labels of karpenter_nodes_allocatable."},
	{&KarpenterNodesDaemonRequests, "karpenter_nodes_total_daemon_requests", nodeLabelNames,
		"Resources requested by the DaemonSet pods bound to the Nodes of NodePools, with the labels of karpenter_nodes_allocatable."},
	{&KarpenterNodesSystemOverhead, "karpenter_nodes_system_overhead", nodeLabelNames,
		"Capacity less allocatable of the Nodes of NodePools (kube-reserved, system-reserved, eviction threshold), with the labels of karpenter_nodes_allocatable."},
}

// karpenterObjectives are the quantiles of Karpenter's summaries, each
// to within 0.01.
var karpenterObjectives = map[float64]float64{0: 0.01, 0.5: 0.01, 0.9: 0.01, 0.99: 0.01, 1: 0.01}

func init() {
	for _, m := range karpenterMetrics {
		crmetrics.Registry.MustRegister(m.build())
	}
}

// build makes m's collector, stores it in m's variable and returns it.
func (m karpenterMetric) build() prometheus.Collector {
	switch v := m.collector.(type) {
	case **prometheus.CounterVec:
		*v = prometheus.NewCounterVec(prometheus.CounterOpts{Name: m.name, Help: m.help}, m.labels)
		return *v
	case **prometheus.GaugeVec:
		*v = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: m.name, Help: m.help}, m.labels)
		return *v
	case *prometheus.Summary:
		*v = prometheus.NewSummary(prometheus.SummaryOpts{Name: m.name, Help: m.help, Objectives: karpenterObjectives})
		return *v
	}
	panic(fmt.Sprintf("metrics: %s: no constructor for a %T", m.name, m.collector))
}

// nodeLabelNames are the labels of Karpenter's per-node gauges: its
// well-known node labels in snake case, then node_name, phase, managed and
// resource_type.
var nodeLabelNames = []string{LabelNodePool, LabelZone, "region", "instance_type", "arch", "os", LabelCapacityType, "windows_build", "node_name", "phase", "managed", LabelResourceType}

// nodeWellKnown are the node labels read into the first eight of
// nodeLabelNames.
var nodeWellKnown = []string{v1alpha1.KarpenterLabelNodePool, corev1.LabelTopologyZone, corev1.LabelTopologyRegion, corev1.LabelInstanceTypeStable,
	corev1.LabelArchStable, corev1.LabelOSStable, v1alpha1.LabelCapacityType, corev1.LabelWindowsBuild}

// ClaimCreated counts a NodeClaim created for pool, under both names.
// reason is ours (ReasonProvisioning, ReasonAdopted, ReasonDisruption);
// disruptionReason, for a replacement, the disruption reason that
// Karpenter labels it with instead (Underutilized, Drifted, ...);
// minValuesRelaxed whether it was launched with fewer values than a
// minValues asked for.
func ClaimCreated(pool, reason, disruptionReason string, minValuesRelaxed bool) {
	NodeClaimsCreated.WithLabelValues(pool, reason).Inc()
	karpenter := reason
	switch {
	case reason == ReasonProvisioning:
		karpenter = "provisioned"
	case reason == ReasonDisruption && disruptionReason != "":
		karpenter = SnakeCase(disruptionReason)
	}
	KarpenterNodeClaimsCreated.WithLabelValues(karpenter, pool, strconv.FormatBool(minValuesRelaxed)).Inc()
}

// ClaimTerminated counts a NodeClaim whose finalizer was removed, and its
// node if it had one, under both names; an involuntary deletion (repair,
// garbage collection, launch failures, interruption) also counts as
// disrupted, as Karpenter counts it.
func ClaimTerminated(claim *v1alpha1.NodeClaim, node *corev1.Node) {
	pool, reason := claim.NodePool(), claim.DeletionReason()
	NodeClaimsDeleted.WithLabelValues(pool, string(reason)).Inc()
	ct, zone := claimLabel(claim, node, v1alpha1.LabelCapacityType), claimLabel(claim, node, corev1.LabelTopologyZone)
	KarpenterNodeClaimsTerminated.WithLabelValues(pool, ct, zone).Inc()
	if node != nil {
		KarpenterNodesTerminated.WithLabelValues(pool, zone).Inc()
	}
	var disrupted string
	switch reason {
	case v1alpha1.DeletionReasonDeleted, v1alpha1.DeletionReasonDisruption:
		return // not a disruption, or counted when the action was carried out
	case v1alpha1.DeletionReasonRepair:
		disrupted = "unhealthy"
	case v1alpha1.DeletionReasonInstanceGone:
		disrupted = "garbage_collected"
	default:
		disrupted = string(reason)
	}
	KarpenterNodeClaimsDisrupted.WithLabelValues(disrupted, pool, ct, "", TerminationMode(claim)).Inc()
}

// NodeRegistered counts the Node that registered for a claim, under both
// names.
func NodeRegistered(claim *v1alpha1.NodeClaim, node *corev1.Node) {
	NodeClaimsRegistered.WithLabelValues(claim.NodePool()).Inc()
	KarpenterNodesCreated.WithLabelValues(claim.NodePool(), claimLabel(claim, node, corev1.LabelTopologyZone)).Inc()
}

// NodeDisrupted counts one node (of claim) a disruption action removed for
// reason (Underutilized, Empty, Drifted, Expired), with the pods evicted
// from it, under Karpenter's names (the action itself is counted once by
// ActionCarriedOut). policy is its NodePool's consolidationPolicy.
func NodeDisrupted(claim *v1alpha1.NodeClaim, node *corev1.Node, policy, reason string, evicted int64) {
	if reason != "Underutilized" && reason != "Empty" {
		policy = "" // Karpenter reports a policy for consolidation only
	}
	labels := []string{SnakeCase(reason), claim.NodePool(), claimLabel(claim, node, v1alpha1.LabelCapacityType), SnakeCase(policy), TerminationMode(claim)}
	KarpenterNodeClaimsDisrupted.WithLabelValues(labels...).Inc()
	KarpenterPodsDisruptionInitiated.WithLabelValues(labels...).Add(float64(evicted))
}

// ActionCarriedOut counts a disruption action for reason on nodes nodes
// under Karpenter's name, decision replace if it launched replacements,
// delete if not.
func ActionCarriedOut(reason string, nodes int, replacements bool) {
	decision := "delete"
	if replacements {
		decision = "replace"
	}
	KarpenterDecisions.WithLabelValues(decision, SnakeCase(reason), ConsolidationType(reason, nodes)).Inc()
}

// EligibleNodes sets karpenter_voluntary_disruption_eligible_nodes from a
// consolidation plan's actions: those that delete nodes without moving
// pods count as empty, the rest as underutilized.
func EligibleNodes(actions []solver.Action) {
	empty, underutilized := 0, 0
	for _, a := range actions {
		if a.Kind == solver.ActionDelete && len(a.Moves) == 0 {
			empty += len(a.Nodes)
		} else {
			underutilized += len(a.Nodes)
		}
	}
	KarpenterEligibleNodes.WithLabelValues("empty").Set(float64(empty))
	KarpenterEligibleNodes.WithLabelValues("underutilized").Set(float64(underutilized))
}

// ConsolidationType is Karpenter's consolidation_type of an action for
// reason on nodes nodes: empty, single or multi for consolidation, "" for
// drift and expiry.
func ConsolidationType(reason string, nodes int) string {
	switch {
	case reason == "Empty":
		return "empty"
	case reason != "Underutilized":
		return ""
	case nodes > 1:
		return "multi"
	}
	return "single"
}

// TerminationMode is Karpenter's termination_mode of a claim: graceful
// without a terminationGracePeriod, eventual with a positive one, forceful
// with zero.
func TerminationMode(claim *v1alpha1.NodeClaim) string {
	switch g := claim.Spec.TerminationGracePeriod; {
	case g == nil:
		return TerminationGraceful
	case g.Duration <= 0:
		return TerminationForceful
	}
	return TerminationEventual
}

// SnakeCase writes a Kubernetes-style name (WhenEmptyOrUnderutilized,
// Drifted) as Karpenter's label values are (when_empty_or_underutilized,
// drifted).
func SnakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// claimLabel is a label of the claim, or of its node where the claim does
// not have it (a flexible claim learns its zone at launch).
func claimLabel(claim *v1alpha1.NodeClaim, node *corev1.Node, key string) string {
	if v := claim.Labels[key]; v != "" {
		return v
	}
	if node != nil {
		return node.Labels[key]
	}
	return ""
}

// addResources adds a series for each resource of list, labelled by
// labels(its resource_type) and valued in Karpenter's units: cpu in cores,
// the rest as integers (bytes, counts).
func addResources(out []series, list corev1.ResourceList, labels func(resourceType string) []string) []series {
	for name, q := range list {
		v := float64(q.Value())
		if name == corev1.ResourceCPU {
			v = float64(q.MilliValue()) / 1000
		}
		out = append(out, series{labels: labels(strings.ReplaceAll(strings.ToLower(string(name)), "-", "_")), value: v})
	}
	return out
}

// nodeLabels are the values of nodeLabelNames but the last for node.
func nodeLabels(node *corev1.Node) []string {
	out := make([]string, 0, len(nodeLabelNames))
	for _, k := range nodeWellKnown {
		out = append(out, node.Labels[k])
	}
	return append(out, node.Name, string(node.Status.Phase), "true")
}

// podStateLabels are the values of karpenter_pods_state's labels for pod
// on node (nil when unbound or unknown).
func podStateLabels(pod *corev1.Pod, node *corev1.Node) []string {
	var labels map[string]string
	if node != nil {
		labels = node.Labels
	}
	_, ready := podReady(pod)
	return []string{pod.Name, pod.Namespace, ownerLink(pod), pod.Spec.NodeName, strconv.FormatBool(pod.Spec.NodeName != ""),
		labels[v1alpha1.KarpenterLabelNodePool], labels[corev1.LabelTopologyZone], labels[corev1.LabelArchStable],
		labels[v1alpha1.LabelCapacityType], labels[corev1.LabelInstanceTypeStable], string(pod.Status.Phase),
		strconv.FormatBool(ready), strconv.FormatBool(labels[v1alpha1.LabelNodePool] != "")}
}

// ownerLink is Karpenter's owner label of a pod: the self link of its
// first owner.
func ownerLink(pod *corev1.Pod) string {
	if len(pod.OwnerReferences) == 0 {
		return ""
	}
	o := pod.OwnerReferences[0]
	return fmt.Sprintf("/apis/%s/namespaces/%s/%ss/%s", o.APIVersion, pod.Namespace, strings.ToLower(o.Kind), o.Name)
}

// podReady reports the pod's Ready condition.
func podReady(pod *corev1.Pod) (corev1.PodCondition, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}
