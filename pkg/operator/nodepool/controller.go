// Package nodepool keeps each NodePool's status: the capacity, count and
// hourly cost of its nodes, and whether it can launch nodes (Ready). It
// also exports the cluster's cost per hour by pool and capacity type.
// Limits themselves are enforced where NodeClaims are created, by the
// provisioner.
package nodepool

import (
	"context"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
)

// Controller reconciles NodePool status.
type Controller struct {
	client client.Client
	cloud  cloud.CloudProvider
}

// New returns the NodePool status controller.
func New(c client.Client, cp cloud.CloudProvider) *Controller {
	return &Controller{client: c, cloud: cp}
}

// RBAC of the NodePool status controller.
//
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodepools/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodeclaims;simnodeclasses;ec2nodeclasses,verbs=get;list;watch

// Register adds the controller to the manager.
func (c *Controller) Register(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodepool").
		For(&v1alpha1.NodePool{}).
		Watches(&v1alpha1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(PoolOfClaim)).
		Complete(c)
}

// PoolOfClaim maps a NodeClaim to a request for its NodePool (none for a
// claim without the pool label), so that a NodePool controller reconciles
// a pool when one of its claims changes.
func PoolOfClaim(_ context.Context, o client.Object) []reconcile.Request {
	if pool := o.GetLabels()[v1alpha1.LabelNodePool]; pool != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: pool}}}
	}
	return nil
}

// Reconcile updates one NodePool's status and cost metrics.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var claims v1alpha1.NodeClaimList
	if err := c.client.List(ctx, &claims, client.MatchingLabels{v1alpha1.LabelNodePool: req.Name}); err != nil {
		return reconcile.Result{}, err
	}
	resources := corev1.ResourceList{}
	var nodes int64
	cost := map[string]float64{cloud.CapacityTypeOnDemand: 0, cloud.CapacityTypeSpot: 0}
	total := 0.0
	for i := range claims.Items {
		cl := &claims.Items[i]
		if cl.DeletionTimestamp != nil {
			continue
		}
		nodes++
		for name, q := range cl.Status.Capacity {
			sum := resources[name]
			sum.Add(q)
			resources[name] = sum
		}
		if p := nodeclaim.Price(cl); p > 0 {
			cost[cl.Status.CapacityType] += p
			total += p
		}
	}
	var np v1alpha1.NodePool
	if err := c.client.Get(ctx, req.NamespacedName, &np); err != nil {
		if client.IgnoreNotFound(err) == nil {
			for ct := range cost {
				metrics.ClusterCost.DeleteLabelValues(req.Name, ct)
			}
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	for ct, v := range cost {
		metrics.ClusterCost.WithLabelValues(np.Name, ct).Set(v)
	}
	orig := np.DeepCopy()
	np.Status.Resources = resources
	np.Status.Nodes = nodes
	np.Status.CostPerHour = strconv.FormatFloat(float64(int64(total*10000+0.5))/10000, 'f', -1, 64)
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", ObservedGeneration: np.Generation}
	if _, err := c.cloud.InstanceTypes(ctx, &np); err != nil {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "NodeClassNotReady", err.Error()
	}
	meta.SetStatusCondition(&np.Status.Conditions, ready)
	if equality.Semantic.DeepEqual(orig.Status, np.Status) && maps.Equal(orig.Labels, np.Labels) {
		return reconcile.Result{}, nil
	}
	if err := c.client.Status().Patch(ctx, &np, client.MergeFrom(orig)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	return reconcile.Result{}, nil
}
