// Package metrics defines the operator's Prometheus metrics, registered with
// controller-runtime's registry and served on the manager's /metrics.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

const namespace = "rightsize"

// Label names.
const (
	LabelNodePool     = "nodepool"
	LabelReason       = "reason"
	LabelCapacityType = "capacity_type"
	LabelAction       = "action"
	LabelState        = "state"
)

// Reasons NodeClaims are created for, the reason label of
// nodeclaims_created_total. The reasons they are deleted for, the reason
// label of nodeclaims_deleted_total, are v1alpha1.DeletionReason values.
const (
	ReasonProvisioning = "provisioning"
	// ReasonAdopted is a NodeClaim garbage collection created for an
	// instance `tui --cloud` launched before the operator's CRDs existed.
	ReasonAdopted = "adopted"
	// ReasonDisruption is a NodeClaim created by the disruption controller
	// to replace nodes (consolidation, expiration or drift).
	ReasonDisruption = "disruption"
)

var (
	// PendingPods is the number of pods the scheduler marked Unschedulable
	// seen by the last provisioning batch, and how many were left without
	// a node.
	PendingPods = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "pods_pending",
		Help: "Pods marked Unschedulable by the scheduler at the last provisioning batch; state=unplaced are those no node could be planned for.",
	}, []string{"state"})
	// BufferReplicas is each CapacityBuffer's chunks at the last
	// provisioning batch: state=asked as counted from its spec, state=placed
	// those with room on a node or a launching NodeClaim.
	BufferReplicas = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "buffer_replicas",
		Help: "CapacityBuffer chunks at the last provisioning batch, by buffer; state=asked from its spec, state=placed those with room on a node or a launching NodeClaim.",
	}, []string{"namespace", "name", "state"})
	// NodeClaimsCreated counts NodeClaims created.
	NodeClaimsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "nodeclaims_created_total",
		Help: "NodeClaims created, by NodePool and reason.",
	}, []string{LabelNodePool, LabelReason})
	// NodeClaimsLaunched counts NodeClaims whose instance was launched.
	NodeClaimsLaunched = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "nodeclaims_launched_total",
		Help: "NodeClaims whose cloud instance was launched, by NodePool.",
	}, []string{LabelNodePool})
	// NodeClaimsRegistered counts NodeClaims whose Node joined.
	NodeClaimsRegistered = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "nodeclaims_registered_total",
		Help: "NodeClaims whose Node registered, by NodePool.",
	}, []string{LabelNodePool})
	// NodeClaimsInitialized counts NodeClaims whose Node was opened to pods.
	NodeClaimsInitialized = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "nodeclaims_initialized_total",
		Help: "NodeClaims whose Node was initialized (Ready, startup taints gone, opened to pods), by NodePool.",
	}, []string{LabelNodePool})
	// NodeClaimsDeleted counts NodeClaims deleted.
	NodeClaimsDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "nodeclaims_deleted_total",
		Help: "NodeClaims deleted (instance terminated), by NodePool and reason.",
	}, []string{LabelNodePool, LabelReason})
	// InstancesGarbageCollected counts instances terminated for having no NodeClaim.
	InstancesGarbageCollected = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "instances_garbage_collected_total",
		Help: "Cloud instances terminated because no NodeClaim owned them.",
	})
	// DecisionDuration is the time from a batch closing to its NodeClaims created.
	DecisionDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Name: "provisioning_decision_duration_seconds",
		Help:    "Time from a provisioning batch closing to its NodeClaims being created.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	})
	// SolverDuration is the time one solve takes.
	SolverDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Name: "solver_duration_seconds",
		Help:    "Time the solver took to plan one provisioning batch.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	})
	// BatchSize is the number of pods planned per batch.
	BatchSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Name: "provisioning_batch_pods",
		Help:    "Pods planned per provisioning batch.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14),
	})
	// DisruptionActions counts disruption actions carried out.
	DisruptionActions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "disruption_actions_total",
		Help: "Disruption actions carried out, by action (Delete, Replace, Merge), NodePool and reason (Empty, Underutilized, Drifted, Expired).",
	}, []string{LabelAction, LabelNodePool, LabelReason})
	// DisruptionSaving sums the hourly saving of the actions carried out.
	DisruptionSaving = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "disruption_saving_per_hour_dollars_total",
		Help: "Hourly saving realised by disruption actions, summed over the actions carried out, in US dollars per hour, by NodePool (replacements for drift and expiration can count negative).",
	}, []string{LabelNodePool})
	// PodsEvicted counts pods evicted by disruption.
	PodsEvicted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "disruption_pods_evicted_total",
		Help: "Pods evicted through the eviction API by disruption actions, by NodePool.",
	}, []string{LabelNodePool})
	// DisruptionRolledBack counts actions undone.
	DisruptionRolledBack = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "disruption_actions_rolled_back_total",
		Help: "Disruption actions rolled back (nodes untainted, replacements deleted), by action, NodePool and reason (replacement_failed, drain_timeout, taint_failed).",
	}, []string{LabelAction, LabelNodePool, LabelReason})
	// EventWriteErrors counts failed attempts to write an Event.
	EventWriteErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "event_write_errors_total",
		Help: "Failed attempts to write a Kubernetes Event (the API server unreachable or refusing it); an unreachable server is retried up to 12 times per event, 10 s apart, each failure counted.",
	})
	// PodsNominated counts nominations set on pending pods.
	PodsNominated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "pods_nominated_total",
		Help: "Nominations (status.nominatedNodeName) set on pending pods for the nodes planned for them as the nodes open, by attempt: first, or again after the scheduler dropped one; and pods the provisioner planned onto a second node after it had nominated them to another (moved).",
	}, []string{"attempt"})
	// DisruptionInvalidated counts chosen actions dropped at validation.
	DisruptionInvalidated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "disruption_actions_invalidated_total",
		Help: "Disruption actions chosen but not carried out because they no longer held when planned again after the validation delay, by action and reason.",
	}, []string{LabelAction, LabelReason})
	// ClusterCost is the summed hourly price of the NodeClaims.
	ClusterCost = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "cluster_cost_per_hour_dollars",
		Help: "Summed price of the launched NodeClaims in US dollars per hour, by NodePool and capacity type.",
	}, []string{LabelNodePool, LabelCapacityType})
)

func init() {
	crmetrics.Registry.MustRegister(PendingPods, NodeClaimsCreated, NodeClaimsLaunched, NodeClaimsRegistered, NodeClaimsInitialized,
		NodeClaimsDeleted, InstancesGarbageCollected, DecisionDuration, SolverDuration, BatchSize, ClusterCost,
		DisruptionActions, DisruptionSaving, PodsEvicted, DisruptionRolledBack, EventWriteErrors,
		PodsNominated, DisruptionInvalidated, PodUnschedulableToRunning, NodeClaims, Nodes, PodsPendingByReason, BufferReplicas,
		CommitmentUtilization, CommitmentCovered, CommitmentSpilled)
}
