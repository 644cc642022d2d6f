package provisioning

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

type workqueueT = workqueue.TypedRateLimitingInterface[reconcile.Request]

// RBAC of the provisioner: it reads what the solver needs and the
// workloads of pending pods (whether they still create pods, see growing),
// and creates NodeClaims and events.
//
// +kubebuilder:rbac:groups="",resources=pods;nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=daemonsets;replicasets;statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;persistentvolumes,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses;csinodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodepools;simnodeclasses;ec2nodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodeclaims,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodepools/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeoverlays,verbs=get;list;watch

// Register adds the provisioner (a leader-only runnable) and the controller
// that triggers it to the manager. Pods turning Unschedulable, NodePools
// created, deleted or respecified, and NodeClaims going away open or extend
// a batch. Updates of pods that stay Unschedulable (the scheduler retrying
// them, nominations being set) and of NodePool status do not: they would
// hold a batch open without changing its input. A pod whose nomination
// lapses is planned again by a trigger at the lapse (see provision).
func (p *Provisioner) Register(mgr ctrl.Manager) error {
	if err := mgr.Add(p); err != nil {
		return err
	}
	// The workloads growing reads are cached from the manager's start, so
	// that the first window's check does not wait for their informers.
	for _, obj := range []client.Object{&appsv1.ReplicaSet{}, &appsv1.StatefulSet{}, &batchv1.Job{}} {
		if _, err := mgr.GetCache().GetInformer(context.Background(), obj); err != nil {
			return fmt.Errorf("watching %T: %w", obj, err)
		}
	}
	poolChanged := handler.Funcs{
		CreateFunc: func(context.Context, event.CreateEvent, workqueueT) { p.Trigger() },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueueT) {
			if e.ObjectNew.GetGeneration() != e.ObjectOld.GetGeneration() ||
				(e.ObjectNew.GetDeletionTimestamp() != nil) != (e.ObjectOld.GetDeletionTimestamp() != nil) {
				p.Trigger()
			}
		},
		DeleteFunc: func(context.Context, event.DeleteEvent, workqueueT) { p.Trigger() },
	}
	// Every NodeClaim event also tells the provisioner that the cache
	// shows the claim (see observed): a claim refused by the cloud lives a
	// few milliseconds, and no batch may ever have seen it in the cache.
	claimGone := handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, _ workqueueT) { p.observed(e.Object.GetName(), false) },
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueueT) {
			p.observed(e.Object.GetName(), true)
			p.Trigger()
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueueT) {
			p.observed(e.ObjectNew.GetName(), false)
			if e.ObjectNew.GetDeletionTimestamp() != nil && e.ObjectOld.GetDeletionTimestamp() == nil {
				p.Trigger()
			}
		},
	}
	// A pod turning Unschedulable triggers the batch through the
	// reconciler; whether a controller owns it is noted first (see
	// window: only such arrivals grow the idle gap).
	arrived := func(pod *corev1.Pod) bool {
		if metav1.GetControllerOf(pod) != nil {
			p.ownedArrived.Store(true)
		}
		return true
	}
	turnedUnschedulable := predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			pod := e.Object.(*corev1.Pod)
			return unschedulable(pod) && arrived(pod)
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			pod := e.ObjectNew.(*corev1.Pod)
			return unschedulable(pod) && !unschedulable(e.ObjectOld.(*corev1.Pod)) && arrived(pod)
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("provisioning").
		For(&corev1.Pod{}, builder.WithPredicates(turnedUnschedulable)).
		Watches(&v1alpha1.NodePool{}, poolChanged).
		Watches(&v1alpha1.NodeClaim{}, claimGone).
		Complete(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			p.Trigger()
			return reconcile.Result{}, nil
		}))
}
