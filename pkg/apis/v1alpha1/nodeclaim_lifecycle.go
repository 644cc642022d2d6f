package v1alpha1

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeletionReason is why a NodeClaim was deleted, recorded in
// AnnotationDeletionReason. Its values are the reason label of the
// operator's nodeclaims_deleted_total metric, so they are snake_case.
type DeletionReason string

// Deletion reasons.
const (
	// DeletionReasonDeleted is the reason of a claim deleted by someone
	// other than the operator (kubectl delete), which records none.
	DeletionReasonDeleted DeletionReason = "deleted"
	// DeletionReasonInsufficientCapacity: the cloud had none of the
	// claim's offerings; its pods are planned again without them.
	DeletionReasonInsufficientCapacity DeletionReason = "insufficient_capacity"
	// DeletionReasonLaunchTimeout: the instance was not launched in time.
	DeletionReasonLaunchTimeout DeletionReason = "launch_timeout"
	// DeletionReasonRegistrationTimeout: the instance's Node did not join
	// in time.
	DeletionReasonRegistrationTimeout DeletionReason = "registration_timeout"
	// DeletionReasonInstanceGone: the claim's instance vanished from the
	// cloud.
	DeletionReasonInstanceGone DeletionReason = "instance_gone"
	// DeletionReasonDisruption: consolidation, expiration or drift replaced
	// or removed the node (or rolled back a replacement).
	DeletionReasonDisruption DeletionReason = "disruption"
	// DeletionReasonRepair: the node stayed unhealthy longer than its
	// toleration; it is terminated without a graceful drain.
	DeletionReasonRepair DeletionReason = "repair"
	// DeletionReasonInterruption: the cloud announced it will reclaim the
	// instance (spot interruption, scheduled maintenance).
	DeletionReasonInterruption DeletionReason = "interruption"
)

// Graceful reports whether the node of a claim deleted for r is drained
// gracefully: cordoned and its pods evicted through the eviction API,
// honouring PodDisruptionBudgets and grace periods. It is false for a node
// being repaired: a broken node runs no graceful shutdown, so its pods are
// deleted at once and their controllers replace them elsewhere.
func (r DeletionReason) Graceful() bool {
	return r != DeletionReasonRepair
}

// Reasons of the NodeClaim conditions the operator sets.
const (
	ReasonLaunched               = "Launched"
	ReasonAdopted                = "Adopted"
	ReasonLaunchFailed           = "LaunchFailed"
	ReasonNodeClassNotReady      = "NodeClassNotReady"
	ReasonAwaitingRegistration   = "AwaitingRegistration"
	ReasonNotRegistered          = "NotRegistered"
	ReasonRegistered             = "Registered"
	ReasonAwaitingInitialization = "AwaitingInitialization"
	ReasonInitialized            = "Initialized"
	ReasonReady                  = "Ready"
)

// NodePool returns the name of the NodePool the claim belongs to (its
// LabelNodePool).
func (nc *NodeClaim) NodePool() string {
	return nc.Labels[LabelNodePool]
}

// DeletionReason returns why the claim was deleted, as recorded in
// AnnotationDeletionReason; DeletionReasonDeleted when none was.
func (nc *NodeClaim) DeletionReason() DeletionReason {
	if r := nc.Annotations[AnnotationDeletionReason]; r != "" {
		return DeletionReason(r)
	}
	return DeletionReasonDeleted
}

// SetDeletionReason records why the claim is being deleted.
func (nc *NodeClaim) SetDeletionReason(r DeletionReason) {
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[AnnotationDeletionReason] = string(r)
}

// IsTrue reports whether the claim's condition is True.
func (nc *NodeClaim) IsTrue(condition string) bool {
	return meta.IsStatusConditionTrue(nc.Status.Conditions, condition)
}

// IsLaunched reports whether the claim's instance exists.
func (nc *NodeClaim) IsLaunched() bool { return nc.IsTrue(ConditionLaunched) }

// IsRegistered reports whether the claim's Node joined.
func (nc *NodeClaim) IsRegistered() bool { return nc.IsTrue(ConditionRegistered) }

// IsInitialized reports whether the claim's Node was opened to pods.
func (nc *NodeClaim) IsInitialized() bool { return nc.IsTrue(ConditionInitialized) }

// TransitionTime returns when the condition last changed, or the zero time
// when the claim does not have it.
func (nc *NodeClaim) TransitionTime(condition string) time.Time {
	if c := meta.FindStatusCondition(nc.Status.Conditions, condition); c != nil {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// SetCondition sets a condition, observed at the claim's generation; it
// reports whether anything changed.
func (nc *NodeClaim) SetCondition(condition string, status metav1.ConditionStatus, reason, message string) bool {
	return meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type: condition, Status: status, Reason: reason, Message: message, ObservedGeneration: nc.Generation,
	})
}

// SetLaunched marks the claim's instance launched, for the reason given
// (ReasonLaunched, or ReasonAdopted for an instance launched without the
// operator), and the claim waiting for its Node to register.
func (nc *NodeClaim) SetLaunched(reason, message string) {
	nc.SetCondition(ConditionLaunched, metav1.ConditionTrue, reason, message)
	nc.SetCondition(ConditionRegistered, metav1.ConditionUnknown, ReasonAwaitingRegistration, "waiting for the node to join")
	nc.SetCondition(ConditionReady, metav1.ConditionFalse, ReasonNotRegistered, "the node has not joined yet")
}

// SetLaunchFailed records a failed launch attempt on the Launched
// condition; it reports whether anything changed.
func (nc *NodeClaim) SetLaunchFailed(reason, message string) bool {
	return nc.SetCondition(ConditionLaunched, metav1.ConditionFalse, reason, message)
}

// SetRegistered records that the Node named joined for the claim, and that
// the claim now waits for it to be initialized.
func (nc *NodeClaim) SetRegistered(node string) {
	nc.Status.NodeName = node
	nc.SetCondition(ConditionRegistered, metav1.ConditionTrue, ReasonRegistered, "")
	nc.SetCondition(ConditionInitialized, metav1.ConditionUnknown, ReasonAwaitingInitialization, "waiting for the node to be Ready")
}

// SetInitialized marks the claim's Node initialized (open to pods) and the
// claim Ready.
func (nc *NodeClaim) SetInitialized() {
	nc.SetCondition(ConditionInitialized, metav1.ConditionTrue, ReasonInitialized, "")
	nc.SetCondition(ConditionReady, metav1.ConditionTrue, ReasonReady, "")
}
