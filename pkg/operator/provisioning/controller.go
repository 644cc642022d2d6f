package provisioning

import (
	"context"

	corev1 "k8s.io/api/core/v1"
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

// RBAC of the provisioner: it reads what the solver needs and creates
// NodeClaims and events.
//
// +kubebuilder:rbac:groups="",resources=pods;nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodepools;simnodeclasses;ec2nodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodeclaims,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodepools/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Register adds the provisioner (a leader-only runnable) and the controller
// that triggers it to the manager. Pods turning Unschedulable, NodePools
// changing and NodeClaims going away open or extend a batch.
func (p *Provisioner) Register(mgr ctrl.Manager) error {
	if err := mgr.Add(p); err != nil {
		return err
	}
	trigger := handler.Funcs{
		CreateFunc: func(context.Context, event.CreateEvent, workqueueT) { p.Trigger() },
		UpdateFunc: func(context.Context, event.UpdateEvent, workqueueT) { p.Trigger() },
		DeleteFunc: func(context.Context, event.DeleteEvent, workqueueT) { p.Trigger() },
	}
	claimGone := handler.Funcs{
		DeleteFunc: func(context.Context, event.DeleteEvent, workqueueT) { p.Trigger() },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueueT) {
			if e.ObjectNew.GetDeletionTimestamp() != nil && e.ObjectOld.GetDeletionTimestamp() == nil {
				p.Trigger()
			}
		},
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("provisioning").
		For(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return unschedulable(o.(*corev1.Pod))
		}))).
		Watches(&v1alpha1.NodePool{}, trigger).
		Watches(&v1alpha1.NodeClaim{}, claimGone).
		Complete(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			p.Trigger()
			return reconcile.Result{}, nil
		}))
}
