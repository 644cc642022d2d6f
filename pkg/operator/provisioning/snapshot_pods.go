package provisioning

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

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

// sortPods orders pods oldest first (as a manifest lists them for
// explain -f), then by name. The cache lists in no set order; the
// solver's answer depends on the order of its pods, so the same pods give
// the same plan only sorted.
func sortPods(pods []corev1.Pod) {
	slices.SortFunc(pods, func(a, b corev1.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
}

// placePods sorts the cluster's pods (in their order) into those the
// snapshot plans or places, returned as toPlan, and those nominated to an
// in-flight NodeClaim, returned by claim name:
//   - bound pods that have not finished are where they run, except, with
//     batching set, those on leaving nodes their controller recreates,
//     which are planned as pending (b.moving);
//   - unschedulable pods count in b.pending, and are planned unless
//     nominated (nominations a claim records and this replica does not
//     remember are read back first);
//   - other pods are left out.
//
// The nominations and reasons of pods no longer pending are forgotten.
func (p *Provisioner) placePods(b *batch, pods []corev1.Pod, claims []*v1alpha1.NodeClaim, byName map[string]*v1alpha1.NodeClaim,
	leaving map[string]bool, batching bool, now time.Time) (toPlan []*corev1.Pod, nominated map[string][]*corev1.Pod) {
	// Pods a claim records as nominated to it and this replica does not
	// remember (it restarted, or took over the lease) keep that claim.
	var unplaced []*corev1.Pod
	for i := range pods {
		if unschedulable(&pods[i]) {
			unplaced = append(unplaced, &pods[i])
		}
	}
	if n := p.restore(unplaced, committedClaims(claims), now); n > 0 {
		p.log.Info("nominations read back from the NodeClaims in flight", "pods", n)
	}
	nominated = map[string][]*corev1.Pod{}
	stillPending := map[types.UID]bool{}
	for i := range pods {
		pod := &pods[i]
		switch {
		case pod.Spec.NodeName != "":
			switch {
			case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
			case batching && leaving[pod.Spec.NodeName] && reschedulable(pod):
				b.moving[pod.UID] = true
				toPlan = append(toPlan, asPending(pod))
			default:
				toPlan = append(toPlan, pod)
			}
		case unschedulable(pod):
			b.pending++
			stillPending[pod.UID] = true
			if name, ok := p.nominated(pod.UID, pod.Status.NominatedNodeName, byName, now); ok {
				nominated[name] = append(nominated[name], pod)
				continue
			}
			toPlan = append(toPlan, pod)
		}
	}
	p.forget(stillPending)
	return toPlan, nominated
}

// nominationLapse returns when the first of the nominations that keep
// pods out of the batch lapses, so that they are planned again then
// (zero when none does): nominationTTL after the claim's node
// initialized, and no sooner than nominationTTL from now (held past that
// by the scheduler's nomination: look again later, not at once); for a
// claim not initialized yet, nominationTTL from now.
func nominationLapse(nominated map[string][]*corev1.Pod, byName map[string]*v1alpha1.NodeClaim, now time.Time) time.Time {
	var lapse time.Time
	for name := range nominated {
		at := now.Add(nominationTTL) // not initialized yet: look again by then
		if c := byName[name]; nodeclaim.IsTrue(c, v1alpha1.ConditionInitialized) {
			at = maxTime(nodeclaim.TransitionTime(c, v1alpha1.ConditionInitialized).Add(nominationTTL), now.Add(nominationTTL))
		}
		if lapse.IsZero() || at.Before(lapse) {
			lapse = at
		}
	}
	return lapse
}

// podsByIndex maps the solver's pod indices to the pods they were read
// from, by namespace and name.
func podsByIndex(solverPods []solver.Pod, pods []*corev1.Pod) []*corev1.Pod {
	byKey := make(map[string]*corev1.Pod, len(pods))
	for _, pod := range pods {
		byKey[pod.Namespace+"/"+pod.Name] = pod
	}
	out := make([]*corev1.Pod, len(solverPods))
	for i := range solverPods {
		out[i] = byKey[solverPods[i].Key()]
	}
	return out
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
