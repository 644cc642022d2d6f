package provisioning

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A batching window that closes while the workloads of its pods are still
// creating them plans the first part of a ramp as if it were all of it, and
// the rest in later decisions around nodes already launched: issue 14
// measured a ramp split into 16 such decisions costing 1.21 × the plan of
// the whole. Arrival gaps alone cannot tell a controller's pause from the
// end of its ramp (the ReplicaSet controller's slow start and a loaded API
// server pause it for seconds), but the workloads themselves can: a
// ReplicaSet with fewer pods than spec.replicas is not done. So the window
// stays open, up to --batch-max, while a workload that owns a pending pod
// still wants more pods than it has (see growing).

// growing returns a sentence naming a workload that owns an Unschedulable
// pod and has fewer pods than it wants, or "" when there is none: every
// pending pod's ReplicaSet, Parallel StatefulSet and Job is complete (or
// cannot grow), and a window may close. Pods of other owners, and of
// owners the cache does not show, never hold a window.
func (p *Provisioner) growing(ctx context.Context) (string, error) {
	var pods corev1.PodList
	if err := p.client.List(ctx, &pods); err != nil {
		return "", fmt.Errorf("reading the pods from the cache: %w", err)
	}
	owners := map[types.UID]ownerKey{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !unschedulable(pod) {
			continue
		}
		if ref := metav1.GetControllerOf(pod); ref != nil && wantsPods(ref) {
			owners[ref.UID] = ownerKey{kind: ref.Kind, key: client.ObjectKey{Namespace: pod.Namespace, Name: ref.Name}}
		}
	}
	if len(owners) == 0 {
		return "", nil
	}
	// The pods each owner has: those not terminating and not finished, as
	// the ReplicaSet and Job controllers count their active pods.
	have := map[types.UID]int32{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if ref := metav1.GetControllerOf(pod); ref != nil {
			if _, ok := owners[ref.UID]; ok {
				have[ref.UID]++
			}
		}
	}
	for uid, o := range owners {
		want, err := p.wanted(ctx, uid, o)
		if err != nil {
			return "", err
		}
		if have[uid] < want {
			return fmt.Sprintf("%s %s has %d of the %d pods it wants", o.kind, o.key, have[uid], want), nil
		}
	}
	return "", nil
}

// ownerKey names a pod's controller.
type ownerKey struct {
	kind string
	key  client.ObjectKey
}

// wantsPods reports whether a controller reference names a kind whose
// wanted pod count growing reads.
func wantsPods(ref *metav1.OwnerReference) bool {
	switch {
	case ref.Kind == "ReplicaSet" || ref.Kind == "StatefulSet":
		return ref.APIVersion == appsv1.SchemeGroupVersion.String()
	case ref.Kind == "Job":
		return ref.APIVersion == batchv1.SchemeGroupVersion.String()
	}
	return false
}

// wanted returns how many active pods the owner wants now; 0 when it is
// gone, replaced (another UID), being deleted, or cannot grow: a
// ReplicaSet whose pod creations fail (ReplicaFailure), an OrderedReady
// StatefulSet (it creates its next pod only once this one runs, so
// waiting for it would wait for nothing), a suspended or finished Job.
func (p *Provisioner) wanted(ctx context.Context, uid types.UID, o ownerKey) (int32, error) {
	var obj client.Object
	switch o.kind {
	case "ReplicaSet":
		obj = &appsv1.ReplicaSet{}
	case "StatefulSet":
		obj = &appsv1.StatefulSet{}
	default:
		obj = &batchv1.Job{}
	}
	if err := p.client.Get(ctx, o.key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("reading %s %s from the cache: %w", o.kind, o.key, err)
	}
	if obj.GetUID() != uid || obj.GetDeletionTimestamp() != nil {
		return 0, nil
	}
	switch w := obj.(type) {
	case *appsv1.ReplicaSet:
		for _, c := range w.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
				return 0, nil
			}
		}
		return replicas(w.Spec.Replicas), nil
	case *appsv1.StatefulSet:
		if w.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
			return 0, nil
		}
		return replicas(w.Spec.Replicas), nil
	case *batchv1.Job:
		if w.Spec.Suspend != nil && *w.Spec.Suspend {
			return 0, nil
		}
		for _, c := range w.Status.Conditions {
			if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed ||
				c.Type == batchv1.JobFailureTarget || c.Type == batchv1.JobSuccessCriteriaMet) {
				return 0, nil
			}
		}
		want := replicas(w.Spec.Parallelism)
		if w.Spec.Completions != nil {
			want = min(want, max(0, *w.Spec.Completions-w.Status.Succeeded))
		}
		return want, nil
	}
	return 0, nil
}

// replicas is a spec's replica count, 1 when unset (the API's default).
func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}
