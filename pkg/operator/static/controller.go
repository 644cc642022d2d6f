// Package static keeps the node count of static NodePools (spec.replicas,
// Karpenter v1.15's static capacity): it creates the NodeClaims a pool is
// short of, replaces those that are lost (a NodeClaim deleted, its
// instance gone), and deletes the surplus when replicas is lowered, within
// limits.nodes. It follows kubernetes-sigs/karpenter
// pkg/controllers/static/provisioning and .../static/deprovisioning: a
// missing node is a NodeClaim of the pool's template alone (no pods
// planned onto it), which the cloud launches on the cheapest offering the
// pool's requirements allow; surplus is taken from NodeClaims not launched
// yet first, then from nodes running the fewest pods.
//
// The provisioner never plans a node of a static pool for pending pods,
// and consolidation never removes one: the snapshot leaves static pools
// out of the solver's problem (pkg/snapshot), so their nodes take pods as
// existing capacity but are neither grown nor consolidated.
package static

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodepool"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
)

// settle is how long a NodeClaim this controller created or deleted is
// counted as such before the cache shows it: long enough for any informer
// lag, short enough that a lost write is soon made again.
const settle = 30 * time.Second

// Controller keeps static NodePools at their replica count.
type Controller struct {
	client   client.Client
	recorder events.EventRecorder
	now      func() time.Time

	mu sync.Mutex
	// created and deleted are the claims written but perhaps not yet in
	// the cache, by name, with when.
	created map[string]created
	deleted map[string]time.Time
}

// created is a claim this controller created, of pool, at.
type created struct {
	pool string
	at   time.Time
}

// New returns the static NodePool controller.
func New(c client.Client, recorder events.EventRecorder) *Controller {
	return &Controller{client: c, recorder: recorder, now: time.Now, created: map[string]created{}, deleted: map[string]time.Time{}}
}

// RBAC of the static NodePool controller.
//
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodeclaims,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods;nodes,verbs=get;list;watch

// Register adds the controller to the manager: a pool is reconciled when
// it changes and when one of its NodeClaims does.
func (c *Controller) Register(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodepool.static").
		For(&v1alpha1.NodePool{}).
		Watches(&v1alpha1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(nodepool.PoolOfClaim)).
		Complete(c)
}

// Reconcile brings one static NodePool to its replica count.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var np v1alpha1.NodePool
	if err := c.client.Get(ctx, req.NamespacedName, &np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !np.Static() || np.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	var list v1alpha1.NodeClaimList
	if err := c.client.List(ctx, &list, client.MatchingLabels{v1alpha1.LabelNodePool: np.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the NodeClaims of NodePool %s: %w", np.Name, err)
	}
	active := c.active(list.Items)
	want := *np.Spec.Replicas
	have := int64(len(active)) + c.pendingCreates(np.Name, list.Items)
	switch {
	case have < want:
		return c.scaleUp(ctx, &np, have, want)
	case int64(len(active)) > want:
		return c.scaleDown(ctx, &np, active, int64(len(active))-want)
	}
	return reconcile.Result{RequeueAfter: time.Minute}, nil
}

// active returns the claims not being deleted, neither by the API nor by
// a delete of ours the cache does not show yet.
func (c *Controller) active(claims []v1alpha1.NodeClaim) []*v1alpha1.NodeClaim {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	var out []*v1alpha1.NodeClaim
	for i := range claims {
		cl := &claims[i]
		if at, ok := c.deleted[cl.Name]; ok && cl.DeletionTimestamp == nil && now.Sub(at) < settle {
			continue
		}
		delete(c.deleted, cl.Name)
		if cl.DeletionTimestamp == nil {
			out = append(out, cl)
		}
	}
	return out
}

// pendingCreates counts the claims of pool this controller created that
// the cache does not show yet.
func (c *Controller) pendingCreates(pool string, claims []v1alpha1.NodeClaim) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	var n int64
	for name, cr := range c.created {
		seen := slices.ContainsFunc(claims, func(cl v1alpha1.NodeClaim) bool { return cl.Name == name })
		switch {
		case seen || now.Sub(cr.at) >= settle:
			delete(c.created, name)
		case cr.pool == pool:
			n++
		}
	}
	return n
}

// scaleUp creates the claims pool is short of, as many as limits.nodes
// allows.
func (c *Controller) scaleUp(ctx context.Context, np *v1alpha1.NodePool, have, want int64) (reconcile.Result, error) {
	n := want - have
	if limit, ok := np.Spec.Limits[snapshot.NodeCountResource]; ok {
		n = min(n, max(limit.Value()-have, 0))
	}
	if n <= 0 {
		c.recorder.Eventf(np, nil, corev1.EventTypeWarning, "LimitReached", "Provision",
			"static NodePool %s has %d of its %d replicas; limits.nodes %s allows no more", np.Name, have, want, limitString(np))
		return reconcile.Result{RequeueAfter: 30 * time.Second}, nil
	}
	for range n {
		claim := np.NewNodeClaim(v1alpha1.NodeClaimOptions{Annotations: map[string]string{
			v1alpha1.AnnotationReason: fmt.Sprintf("static NodePool %s keeps %d nodes (spec.replicas); the cheapest offering its requirements allow", np.Name, want),
		}})
		claim.Name = np.Name + "-" + utilrand.String(5)
		c.mu.Lock()
		c.created[claim.Name] = created{pool: np.Name, at: c.now()}
		c.mu.Unlock()
		if err := c.client.Create(ctx, claim); err != nil {
			c.mu.Lock()
			delete(c.created, claim.Name)
			c.mu.Unlock()
			return reconcile.Result{}, fmt.Errorf("creating a NodeClaim of static NodePool %s: %w", np.Name, err)
		}
		metrics.ClaimCreated(np.Name, metrics.ReasonProvisioning, "", false)
		c.recorder.Eventf(np, claim, corev1.EventTypeNormal, "Launching", "Provision",
			"NodeClaim %s: static NodePool %s has %d of its %d replicas", claim.Name, np.Name, have, want)
		have++
	}
	return reconcile.Result{RequeueAfter: time.Minute}, nil
}

// scaleDown deletes n of pool's active claims: those not launched yet
// first, then those whose nodes run the fewest pods, then the newest.
func (c *Controller) scaleDown(ctx context.Context, np *v1alpha1.NodePool, active []*v1alpha1.NodeClaim, n int64) (reconcile.Result, error) {
	pods, err := c.podsByNode(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	rank := func(cl *v1alpha1.NodeClaim) int {
		if cl.Status.ProviderID == "" || cl.Status.NodeName == "" {
			return -1
		}
		return pods[cl.Status.NodeName]
	}
	slices.SortStableFunc(active, func(a, b *v1alpha1.NodeClaim) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), b.CreationTimestamp.Compare(a.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	for _, cl := range active[:n] {
		c.mu.Lock()
		c.deleted[cl.Name] = c.now()
		c.mu.Unlock()
		if err := c.client.Delete(ctx, cl); client.IgnoreNotFound(err) != nil {
			c.mu.Lock()
			delete(c.deleted, cl.Name)
			c.mu.Unlock()
			return reconcile.Result{}, fmt.Errorf("deleting NodeClaim %s of static NodePool %s: %w", cl.Name, np.Name, err)
		}
		c.recorder.Eventf(np, cl, corev1.EventTypeNormal, "ScaledDown", "Deprovision",
			"NodeClaim %s deleted: static NodePool %s keeps %d nodes (spec.replicas)", cl.Name, np.Name, *np.Spec.Replicas)
	}
	return reconcile.Result{RequeueAfter: time.Minute}, nil
}

// podsByNode counts the pods bound to each node that are not finished
// (DaemonSet pods included: every node has them alike).
func (c *Controller) podsByNode(ctx context.Context) (map[string]int, error) {
	var pods corev1.PodList
	if err := c.client.List(ctx, &pods); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	out := map[string]int{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out[p.Spec.NodeName]++
		}
	}
	return out, nil
}

// limitString is the pool's limits.nodes for messages.
func limitString(np *v1alpha1.NodePool) string {
	if q, ok := np.Spec.Limits[snapshot.NodeCountResource]; ok {
		return q.String()
	}
	return strconv.FormatInt(math.MaxInt64, 10)
}
