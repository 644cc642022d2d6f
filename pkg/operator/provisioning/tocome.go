package provisioning

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// toComeTimeout bounds the cache reads of toCome: a cache that has never
// listed ReplicaSets starts an informer and waits for it (forever, if the
// operator's role may not list them).
const toComeTimeout = 5 * time.Second

// toCome counts the pods still to come to the open batch, read from the
// cache: those the ReplicaSets want and have not created yet (a
// Deployment's ramp), and those created that the scheduler has not tried
// yet (pending, unbound, without a PodScheduled condition). While the
// count falls, the batch waits for them (see window.extend), so that a ramp
// is one decision rather than one per burst of the ReplicaSet controller.
//
// ReplicaSets that cannot be read (a role without them) are not asked for
// again: each try would hold the window toComeTimeout longer.
func (p *Provisioner) toCome(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, toComeTimeout)
	defer cancel()
	// Read only, and on every idle gap of a window: no copies.
	var pods corev1.PodList
	if err := p.client.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
		return 0, fmt.Errorf("reading the pods: %w", err)
	}
	if p.noReplicaSets {
		return untried(pods.Items), nil
	}
	var rss appsv1.ReplicaSetList
	if err := p.client.List(ctx, &rss, client.UnsafeDisableDeepCopy); err != nil {
		p.noReplicaSets = true
		return untried(pods.Items), fmt.Errorf("reading the ReplicaSets: %w", err)
	}
	return stillWanted(rss.Items, pods.Items) + untried(pods.Items), nil
}

// stillWanted is how many pods the ReplicaSets want beyond those they own
// (not terminating, not finished): spec.replicas less the pods, where
// positive.
func stillWanted(rss []appsv1.ReplicaSet, pods []corev1.Pod) int {
	owned := map[types.UID]int{}
	for i := range pods {
		pod := &pods[i]
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "ReplicaSet" {
			owned[ref.UID]++
		}
	}
	n := 0
	for i := range rss {
		rs := &rss[i]
		if rs.DeletionTimestamp != nil {
			continue
		}
		n += max(0, int(ptr.Deref(rs.Spec.Replicas, 1))-owned[rs.UID])
	}
	return n
}

// untried counts the pending, unbound pods the scheduler has not tried yet.
func untried(pods []corev1.Pod) int {
	n := 0
	for i := range pods {
		pod := &pods[i]
		if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodPending {
			continue
		}
		tried := false
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				tried = true
			}
		}
		if !tried {
			n++
		}
	}
	return n
}
