// Package static keeps the node count of static NodePools (spec.replicas,
// Karpenter v1.15's static capacity): it creates the NodeClaims a pool is
// short of, replaces those that are lost (a NodeClaim deleted, its
// instance gone), deletes the surplus when replicas is lowered, and
// replaces drifted and expired nodes, within limits.nodes. It follows
// kubernetes-sigs/karpenter pkg/controllers/static/provisioning,
// .../static/deprovisioning and pkg/controllers/disruption/staticdrift.go:
// a missing node is a NodeClaim of the pool's template alone (no pods
// planned onto it), which the cloud launches on the cheapest offering the
// pool's requirements allow, created only once the pool is Ready and its
// node class resolves; surplus is taken from NodeClaims not launched yet
// first, then from nodes running the fewest pods. A drifted node (the
// pool's template or node class changed since it launched, as
// disruption.Drifted reads it) is replaced first and deleted once its
// replacement is Ready, as many at a time as the pool's budgets allow for
// reason Drifted; an expired one likewise, whatever the budgets. Decide
// holds every one of these decisions, without the API.
//
// The provisioner never plans a node of a static pool for pending pods,
// and consolidation never removes one: the snapshot leaves static pools
// out of the solver's problem (pkg/snapshot), so their nodes take pods as
// existing capacity but are neither grown nor consolidated, and the
// disruption controller's view blocks their nodes (disruption.NewView),
// so that neither consolidation nor its expiry and drift replacement
// touch them.
package static

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/disruption"
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
	cloud    cloud.CloudProvider
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

// New returns the static NodePool controller. The cloud provider tells
// whether the pool's node class is ready (InstanceTypes); now is the
// clock, time.Now when nil.
func New(c client.Client, cp cloud.CloudProvider, recorder events.EventRecorder, now func() time.Time) *Controller {
	if now == nil {
		now = time.Now
	}
	return &Controller{client: c, cloud: cp, recorder: recorder, now: now, created: map[string]created{}, deleted: map[string]time.Time{}}
}

// RBAC of the static NodePool controller.
//
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodepools;simnodeclasses;ec2nodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodeclaims,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods;nodes,verbs=get;list;watch

// Register adds the controller to the manager: a pool is reconciled when
// it changes, when one of its NodeClaims does, and when its node class
// does (a pool waiting for its class starts once it resolves).
func (c *Controller) Register(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodepool.static").
		For(&v1alpha1.NodePool{}).
		Watches(&v1alpha1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(nodepool.PoolOfClaim)).
		Watches(&v1alpha1.SimNodeClass{}, handler.EnqueueRequestsFromMapFunc(c.poolsOfClass("SimNodeClass"))).
		Watches(&v1alpha1.EC2NodeClass{}, handler.EnqueueRequestsFromMapFunc(c.poolsOfClass("EC2NodeClass"))).
		Complete(c)
}

// poolsOfClass maps a node class of the kind to the static pools that
// launch with it.
func (c *Controller) poolsOfClass(kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var pools v1alpha1.NodePoolList
		if err := c.client.List(ctx, &pools); err != nil {
			logr.FromContextOrDiscard(ctx).Error(err, "listing NodePools for a node class change", "kind", kind, "name", o.GetName())
			return nil
		}
		var out []reconcile.Request
		for i := range pools.Items {
			np := &pools.Items[i]
			if ref := np.Spec.Template.Spec.NodeClassRef; np.Static() && ref.Kind == kind && ref.Name == o.GetName() {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(np)})
			}
		}
		return out
	}
}

// Reconcile brings one static NodePool to its replica count and replaces
// its drifted and expired nodes.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var np v1alpha1.NodePool
	if err := c.client.Get(ctx, req.NamespacedName, &np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !np.Static() {
		return reconcile.Result{}, nil
	}
	var list v1alpha1.NodeClaimList
	if err := c.client.List(ctx, &list, client.MatchingLabels{v1alpha1.LabelNodePool: np.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the NodeClaims of NodePool %s: %w", np.Name, err)
	}
	s, byName, err := c.state(ctx, &np, list.Items)
	if err != nil {
		return reconcile.Result{}, err
	}
	d := Decide(s)
	log := logr.FromContextOrDiscard(ctx).WithValues("nodepool", np.Name)
	for _, del := range d.Delete {
		if err := c.delete(ctx, &np, byName[del.Name], del); err != nil {
			return reconcile.Result{}, err
		}
	}
	if d.Create > 0 {
		if err := c.create(ctx, &np, s, d); err != nil {
			return reconcile.Result{}, err
		}
	}
	if d.Wait != "" {
		log.Info("static NodePool waits", "reason", d.Wait, "replicas", s.Replicas, "claims", int64(len(s.Claims))+s.Pending)
		c.recorder.Eventf(&np, nil, corev1.EventTypeWarning, waitReason(s, d), "Provision", "static NodePool %s has %d of its %d replicas: %s",
			np.Name, int64(len(s.Claims))+s.Pending, s.Replicas, d.Wait)
		return reconcile.Result{RequeueAfter: 30 * time.Second}, nil
	}
	return reconcile.Result{RequeueAfter: time.Minute}, nil
}

// waitReason is the event reason for a decision that waits.
func waitReason(s State, d Decision) string {
	switch {
	case s.NotReady != "" && d.Wait == s.NotReady:
		return "NotReady"
	case strings.HasPrefix(d.Wait, "limits.nodes"):
		return "LimitReached"
	}
	return "DisruptionBlocked"
}

// state reads what Decide needs of a static pool: its claims (those of
// ours the cache does not show yet included), which must be replaced, the
// pods on their nodes, readiness and the drift budget.
func (c *Controller) state(ctx context.Context, np *v1alpha1.NodePool, claims []v1alpha1.NodeClaim) (State, map[string]*v1alpha1.NodeClaim, error) {
	now := c.now()
	s := State{Replicas: *np.Spec.Replicas, Limit: math.MaxInt64, Deleting: np.DeletionTimestamp != nil}
	if s.Deleting {
		return s, nil, nil
	}
	if q, ok := np.Spec.Limits[snapshot.NodeCountResource]; ok {
		s.Limit = q.Value()
	}
	active := c.active(claims)
	s.Pending = c.pendingCreates(np.Name, claims)
	s.Terminating = int64(len(claims) - len(active))
	var pods map[string]int
	byName := map[string]*v1alpha1.NodeClaim{}
	for _, cl := range active {
		byName[cl.Name] = cl
		sc := Claim{Name: cl.Name, Created: cl.CreationTimestamp.Time, Ready: cl.IsTrue(v1alpha1.ConditionReady),
			Launched: cl.Status.ProviderID != "" && cl.Status.NodeName != ""}
		if sc.Replace = disruption.Expired(cl, now); sc.Replace != "" {
			sc.Expired = true
		} else if sc.Launched {
			var node corev1.Node
			err := c.client.Get(ctx, client.ObjectKey{Name: cl.Status.NodeName}, &node)
			if client.IgnoreNotFound(err) != nil {
				return s, nil, fmt.Errorf("reading node %s of NodeClaim %s: %w", cl.Status.NodeName, cl.Name, err)
			}
			if err == nil {
				sc.Replace = disruption.Drifted(&node, cl, np)
			}
		}
		if sc.Launched && pods == nil && (int64(len(active)) > s.Replicas || sc.Replace != "") {
			var err error
			if pods, err = c.podsByNode(ctx); err != nil {
				return s, nil, err
			}
		}
		s.Claims = append(s.Claims, sc)
	}
	for i := range s.Claims {
		if s.Claims[i].Launched {
			s.Claims[i].Pods = pods[byName[s.Claims[i].Name].Status.NodeName]
		}
	}
	budgets, err := disruption.PoolBudgets(np)
	if err != nil {
		budgets = []disruption.Budget{{Nodes: "0"}} // an invalid budget blocks, as the disruption controller reads it
	}
	s.DriftBudget = disruption.Allowed(budgets, disruption.ReasonDrifted, len(claims), int(s.Terminating), now)
	s.NotReady = c.notReady(ctx, np)
	return s, byName, nil
}

// notReady says why the pool cannot launch now, "" when it can. A pool
// is ready when its Ready condition is True, and its node class resolves
// (cloud.CloudProvider.InstanceTypes, as the provisioner and the NodePool
// status controller decide it): the class is read afresh, since the
// condition is only written when the pool or one of its claims changes.
func (c *Controller) notReady(ctx context.Context, np *v1alpha1.NodePool) string {
	ref := np.Spec.Template.Spec.NodeClassRef
	if _, err := c.cloud.InstanceTypes(ctx, np); err != nil {
		return fmt.Sprintf("its node class %s %s is not ready: %v", ref.Kind, ref.Name, err)
	}
	cond := meta.FindStatusCondition(np.Status.Conditions, v1alpha1.ConditionReady)
	switch {
	case cond == nil:
		return "its Ready condition is not set yet"
	case cond.Status != metav1.ConditionTrue && cond.Reason != v1alpha1.ReasonNodeClassNotReady:
		// NodeClassNotReady is checked afresh above.
		return fmt.Sprintf("it is not Ready (%s: %s)", cond.Reason, cond.Message)
	}
	return ""
}

// create creates the claims the decision asks for, of the pool's template.
func (c *Controller) create(ctx context.Context, np *v1alpha1.NodePool, s State, d Decision) error {
	have := int64(len(s.Claims)) + s.Pending
	for i := range d.Create {
		replacement := i >= d.Create-d.Replacements
		reason := fmt.Sprintf("static NodePool %s keeps %d nodes (spec.replicas); the cheapest offering its requirements allow", np.Name, s.Replicas)
		if replacement {
			reason = fmt.Sprintf("static NodePool %s replaces a drifted or expired node before deleting it; the cheapest offering its requirements allow", np.Name)
		}
		claim := np.NewNodeClaim(v1alpha1.NodeClaimOptions{Annotations: map[string]string{v1alpha1.AnnotationReason: reason}})
		claim.Name = np.Name + "-" + utilrand.String(5)
		c.mu.Lock()
		c.created[claim.Name] = created{pool: np.Name, at: c.now()}
		c.mu.Unlock()
		if err := c.client.Create(ctx, claim); err != nil {
			c.mu.Lock()
			delete(c.created, claim.Name)
			c.mu.Unlock()
			return fmt.Errorf("creating a NodeClaim of static NodePool %s: %w", np.Name, err)
		}
		if replacement {
			metrics.ClaimCreated(np.Name, metrics.ReasonDisruption, disruption.ReasonDrifted, false)
			c.recorder.Eventf(np, claim, corev1.EventTypeNormal, "Replacing", "Provision",
				"NodeClaim %s: static NodePool %s replaces a drifted or expired node; it is deleted once this one is Ready", claim.Name, np.Name)
		} else {
			metrics.ClaimCreated(np.Name, metrics.ReasonProvisioning, "", false)
			c.recorder.Eventf(np, claim, corev1.EventTypeNormal, "Launching", "Provision",
				"NodeClaim %s: static NodePool %s has %d of its %d replicas", claim.Name, np.Name, have, s.Replicas)
		}
		have++
	}
	return nil
}

// delete deletes one claim the decision names.
func (c *Controller) delete(ctx context.Context, np *v1alpha1.NodePool, cl *v1alpha1.NodeClaim, del Deletion) error {
	c.mu.Lock()
	c.deleted[cl.Name] = c.now()
	c.mu.Unlock()
	if err := c.client.Delete(ctx, cl); client.IgnoreNotFound(err) != nil {
		c.mu.Lock()
		delete(c.deleted, cl.Name)
		c.mu.Unlock()
		return fmt.Errorf("deleting NodeClaim %s of static NodePool %s: %w", cl.Name, np.Name, err)
	}
	reason := "ScaledDown"
	if del.Replaced {
		reason = "Replaced"
	}
	c.recorder.Eventf(np, cl, corev1.EventTypeNormal, reason, "Deprovision", "NodeClaim %s deleted: %s", cl.Name, del.Why)
	return nil
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
