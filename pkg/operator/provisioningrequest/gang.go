package provisioningrequest

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	prv1 "github.com/rightsize-dev/kubectl-rightsize/pkg/apis/provisioningrequest/v1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Reasons of the conditions the controller writes. CapacityIsFound and
// CapacityIsNotFound are Cluster Autoscaler's, which Kueue shows as is.
const (
	ReasonCapacityIsFound     = "CapacityIsFound"
	ReasonCapacityIsNotFound  = "CapacityIsNotFound"
	ReasonCapacityProvisioned = "CapacityIsProvisioned"
	ReasonLaunchFailed        = "LaunchFailed"
	ReasonPodTemplateNotFound = "PodTemplateNotFound"
	ReasonAccepted            = "Accepted"
)

// gangPods returns the pods a request stands for: each pod set's
// PodTemplate, Count times, named "<request>-<set>-<i>" in the request's
// namespace and never created, with Kueue's consume annotations as the
// real pods will have them. templates maps names to the PodTemplates of
// the request's namespace; a missing one is named in the reason.
func gangPods(pr *prv1.ProvisioningRequest, templates map[string]*corev1.PodTemplate) ([]*corev1.Pod, string) {
	var pods []*corev1.Pod
	for si, set := range pr.Spec.PodSets {
		t := templates[set.PodTemplateRef.Name]
		if t == nil {
			return nil, fmt.Sprintf("PodTemplate %s/%s of pod set %d is not found", pr.Namespace, set.PodTemplateRef.Name, si)
		}
		for i := range set.Count {
			name := fmt.Sprintf("%s-%d-%d", pr.Name, si, i)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: pr.Namespace, Name: name,
					UID:         types.UID("provisioningrequest/" + pr.Namespace + "/" + name),
					Labels:      t.Template.Labels,
					Annotations: withConsume(t.Template.Annotations, pr.Name, pr.Spec.ProvisioningClassName),
				},
				Spec:   *t.Template.Spec.DeepCopy(),
				Status: corev1.PodStatus{Phase: corev1.PodPending},
			}
			pods = append(pods, pod)
		}
	}
	if len(pods) == 0 {
		return nil, "the request asks for no pods"
	}
	return pods, ""
}

// withConsume copies a template's annotations and adds those Kueue sets
// on the pods that consume the request.
func withConsume(in map[string]string, request, class string) map[string]string {
	out := make(map[string]string, len(in)+2)
	for k, v := range in {
		out[k] = v
	}
	out[prv1.PodAnnotationConsume] = request
	out[prv1.PodAnnotationClass] = class
	return out
}

// gangProblem is p with the gang's pods (at the given indices) as its
// only pods to plan: the cluster's nodes, pools and their usage are p's,
// other pending pods are left out, so that the answer is about the gang.
func gangProblem(p *solver.Problem, index []int) *solver.Problem {
	q := *p
	q.Pods = make([]solver.Pod, len(index))
	for i, j := range index {
		q.Pods[i] = p.Pods[j]
	}
	return &q
}

// decision is what to do about a request after its gang was planned.
type decision struct {
	// cond is the condition to set: Provisioned (True or False) or Failed.
	cond metav1.Condition
	// launch are the new nodes to launch (best-effort-atomic, whole gang
	// placed); none otherwise.
	launch []solver.NewNode
	// covered is the share of each node of launch the Commitments cover
	// (plan.Spending.Covered); nil without commitments.
	covered []float64
}

// gangPlan is a gang's plan with what it spends of the Commitments.
type gangPlan struct {
	*solver.Plan
	// covered is the share of each new node the Commitments cover; nil
	// without commitments.
	covered []float64
}

// costOf says what new nodes cost an hour at list price, and how much of
// that the Commitments cover when they cover some: "$26.7000/h at list
// price, $13.3500/h of it covered by commitments".
func costOf(nodes []solver.NewNode, covered []float64) string {
	list, paid := plan.CoveredList(nodes, covered)
	s := fmt.Sprintf("$%.4f/h at list price", list)
	if paid > 0 {
		s += fmt.Sprintf(", $%.4f/h of it covered by commitments", paid)
	}
	return s
}

// decide answers a request of the given class from the plan of its gang
// (gangProblem's, with the room other requests hold reserved):
// check-capacity is Provisioned when every pod fits the free room of the
// nodes there are (or launching); else Provisioned=False (retried), Failed
// with noRetry. best-effort-atomic fails when a pod cannot be placed at
// all (a pool limit, no type fits) and otherwise launches the plan's new
// nodes, all of them; with none needed it is Provisioned at once.
func decide(class string, noRetry bool, q *solver.Problem, plan gangPlan) decision {
	n := len(q.Pods)
	atomic := class == prv1.ClassBestEffortAtomicScaleUp
	if len(plan.Unschedulable) > 0 {
		msg := unplacedMessage(q, plan.Unschedulable, n, atomic)
		if !atomic && !noRetry {
			return decision{cond: cond(prv1.ConditionProvisioned, false, ReasonCapacityIsNotFound, msg)}
		}
		return decision{cond: cond(prv1.ConditionFailed, true, ReasonCapacityIsNotFound, msg)}
	}
	if len(plan.NewNodes) == 0 {
		return decision{cond: cond(prv1.ConditionProvisioned, true, ReasonCapacityIsFound,
			fmt.Sprintf("all %d pods fit the free room of the cluster's nodes", n))}
	}
	if atomic {
		return decision{launch: plan.NewNodes, covered: plan.covered}
	}
	on := 0
	for _, node := range plan.NewNodes {
		on += len(node.Pods)
	}
	msg := fmt.Sprintf("%d of %d pods do not fit the free room of the cluster's nodes; they would need %s, %s", on, n, describeNodes(plan.NewNodes), costOf(plan.NewNodes, plan.covered))
	if noRetry {
		return decision{cond: cond(prv1.ConditionFailed, true, ReasonCapacityIsNotFound, msg)}
	}
	return decision{cond: cond(prv1.ConditionProvisioned, false, ReasonCapacityIsNotFound, msg)}
}

// reserve returns q with the room of the booked pods the plan put on
// nodes there are (or launching) taken: other requests hold it. Booked
// pods the plan could not put on those nodes hold nothing (their room is
// gone; CapacityRevoked is not written yet). q's nodes are not modified.
func reserve(q *solver.Problem, booked *solver.Problem, plan *solver.Plan) *solver.Problem {
	if len(plan.Existing) == 0 {
		return q
	}
	at := make(map[string]int, len(q.Nodes))
	for i := range q.Nodes {
		at[q.Nodes[i].Name] = i
	}
	r := *q
	r.Nodes = slices.Clone(q.Nodes)
	for _, pl := range plan.Existing {
		if i, ok := at[pl.Node]; ok {
			r.Nodes[i].Requested = r.Nodes[i].Requested.Add(booked.Pods[pl.Pod].Requests)
		}
	}
	return &r
}

// unplacedMessage says in one sentence how many of the gang's n pods
// cannot be placed and why (for an atomic request, that nothing is
// launched), with the first pod's reason (the solver's, which names the
// pool limit or the constraint no type meets).
func unplacedMessage(q *solver.Problem, unplaced []solver.Unschedulable, n int, atomic bool) string {
	u := unplaced[0]
	name := ""
	if u.Pod >= 0 && u.Pod < len(q.Pods) {
		name = " (" + q.Pods[u.Pod].Name + ")"
	}
	none := ""
	if atomic {
		none = ", so no node is launched"
	}
	return fmt.Sprintf("%d of %d pods cannot be placed%s: %s%s", len(unplaced), n, none, strings.TrimSuffix(u.Reason, "."), name)
}

// describeNodes says what new nodes a plan needs: "2 new nodes (2 ×
// p5.48xlarge in NodePool gpu)".
func describeNodes(nodes []solver.NewNode) string {
	count := map[string]int{}
	for _, n := range nodes {
		count[n.InstanceType+" in NodePool "+n.Pool]++
	}
	parts := make([]string, 0, len(count))
	for k, v := range count {
		parts = append(parts, fmt.Sprintf("%d × %s", v, k))
	}
	sort.Strings(parts)
	word := "nodes"
	if len(nodes) == 1 {
		word = "node"
	}
	return fmt.Sprintf("%d new %s (%s)", len(nodes), word, strings.Join(parts, ", "))
}

// cond builds a condition.
func cond(typ string, status bool, reason, msg string) metav1.Condition {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg}
}
