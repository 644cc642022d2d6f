// Package garbagecollection reconciles the cloud with the NodeClaims:
// instances that no NodeClaim owns (e.g. after a crash between launch and
// the status write, or a NodeClaim force-deleted) are terminated after a
// grace period, and NodeClaims whose instance vanished are deleted so that
// their pods are planned again.
//
// Instances marked v1alpha1.AnnotationLaunchedDirectly are the exception:
// kubectl rightsize tui --cloud launched them without the operator, on a
// cluster with no NodeClaim CRD (or no NodePool) to record them in, and
// they run the user's pods. Past the grace period the collector adopts
// such an instance instead of terminating it: it creates the NodeClaim the
// instance was tagged with (same name, the NodePool's labels, node class
// and taints, requirements pinned to the instance's type, zone and
// capacity type, owned by the NodePool) with the instance already
// Launched, and the lifecycle controller registers and initializes it
// without launching anything. The pool's NoExecute taints are left off the
// adopted claim, since they would evict the pods the node runs. From then
// on the claim is like any other: it counts against the pool's limits
// (adoption does not check them: the node exists already), consolidation
// and expiry apply, and if its Node never registers the lifecycle
// controller's registration timeout, counted from the adoption, deletes
// it and terminates the instance. When the
// instance's NodePool does not exist, the instance is left running and
// logged once (an event on its Node too) as not adoptable yet: a node a
// user launched on purpose is not the operator's to terminate, and it is
// adopted as soon as the NodePool is created. To get rid of it, delete the
// Node (sim) or terminate the instance (aws) yourself.
package garbagecollection

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
)

// Options tune the garbage collector.
type Options struct {
	// GracePeriod is how old an instance without a NodeClaim must be before
	// it is terminated (1 minute when zero): a launch whose claim status is
	// not written yet must not be collected.
	GracePeriod time.Duration
	// Interval is how often the cloud is listed (10 s, or half the grace
	// period if shorter, when zero).
	Interval time.Duration
	// Replan is called when a NodeClaim is deleted.
	Replan func()
	// Recorder, when set, records an event on each NodeClaim adopted and
	// on the Node of each instance that cannot be adopted yet.
	Recorder events.EventRecorder
	// Clock tells the time of the grace period and the listing interval;
	// the real clock when nil.
	Clock clock.WithTicker
}

// Collector is a leader-only manager.Runnable.
type Collector struct {
	reader client.Reader // the API server, not the cache: GC must not act on stale data
	client client.Client
	cloud  cloud.CloudProvider
	log    logr.Logger
	opts   Options

	mu sync.Mutex
	// unadoptable holds the providerIDs of marked instances already
	// reported as not adoptable, so that each is reported once.
	unadoptable map[string]bool
}

// RBAC of the garbage collector.
//
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodeclaims/status,verbs=patch
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;delete

// New returns the garbage collector.
func New(reader client.Reader, c client.Client, cp cloud.CloudProvider, log logr.Logger, opts Options) *Collector {
	if opts.GracePeriod <= 0 {
		opts.GracePeriod = time.Minute
	}
	if opts.Interval <= 0 {
		opts.Interval = min(10*time.Second, max(opts.GracePeriod/2, time.Second))
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Replan == nil {
		opts.Replan = func() {}
	}
	return &Collector{reader: reader, client: c, cloud: cp, log: log, opts: opts, unadoptable: map[string]bool{}}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (g *Collector) NeedLeaderElection() bool { return true }

// Start collects every Interval until ctx ends.
func (g *Collector) Start(ctx context.Context) error {
	t := g.opts.Clock.NewTicker(g.opts.Interval)
	defer t.Stop()
	for {
		if err := g.Collect(ctx); err != nil && ctx.Err() == nil {
			g.log.Error(err, "garbage collection failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Collect runs one pass.
func (g *Collector) Collect(ctx context.Context) error {
	instances, err := g.cloud.List(ctx)
	if err != nil {
		return err
	}
	var claims v1alpha1.NodeClaimList
	if err := g.reader.List(ctx, &claims); err != nil {
		return err
	}
	byName := map[string]bool{}
	byID := map[string]bool{}
	for i := range claims.Items {
		byName[claims.Items[i].Name] = true
		if id := claims.Items[i].Status.ProviderID; id != "" {
			byID[id] = true
		}
	}
	alive := map[string]bool{}
	for _, inst := range instances {
		alive[inst.Status.ProviderID] = true
		if byID[inst.Status.ProviderID] || byName[inst.Name] {
			continue
		}
		age := g.opts.Clock.Since(inst.CreationTimestamp.Time)
		if age < g.opts.GracePeriod {
			continue
		}
		if inst.Annotations[v1alpha1.AnnotationLaunchedDirectly] != "" {
			if err := g.adopt(ctx, inst); err != nil {
				g.log.Error(err, "adopting an instance launched by kubectl rightsize tui", "providerID", inst.Status.ProviderID, "nodeclaim", inst.Name)
			}
			continue
		}
		g.log.Info("terminating an instance no NodeClaim owns", "providerID", inst.Status.ProviderID, "nodeclaim", inst.Name,
			"instanceType", inst.Status.InstanceType, "age", age.Round(time.Second).String())
		if err := g.cloud.Delete(ctx, inst); err != nil && !cloud.IsNotFound(err) {
			g.log.Error(err, "terminating an orphan instance", "providerID", inst.Status.ProviderID)
			continue
		}
		metrics.InstancesGarbageCollected.Inc()
		var nodes corev1.NodeList
		if err := g.client.List(ctx, &nodes, client.MatchingFields{nodeclaim.IndexNodeProviderID: inst.Status.ProviderID}); err == nil {
			for i := range nodes.Items {
				if err := g.client.Delete(ctx, &nodes.Items[i]); err != nil && !apierrors.IsNotFound(err) {
					g.log.Error(err, "deleting the node of an orphan instance", "node", nodes.Items[i].Name)
				}
			}
		}
	}
	g.mu.Lock()
	maps.DeleteFunc(g.unadoptable, func(id string, _ bool) bool { return !alive[id] })
	g.mu.Unlock()
	for i := range claims.Items {
		c := &claims.Items[i]
		id := c.Status.ProviderID
		if id == "" || alive[id] || c.DeletionTimestamp != nil || !c.IsLaunched() {
			continue
		}
		if g.opts.Clock.Since(c.TransitionTime(v1alpha1.ConditionLaunched)) < 10*time.Second {
			continue
		}
		if _, err := g.cloud.Get(ctx, id); !cloud.IsNotFound(err) {
			continue
		}
		g.log.Info("deleting a NodeClaim whose instance is gone", "nodeclaim", c.Name, "providerID", id)
		orig := c.DeepCopy()
		c.SetDeletionReason(v1alpha1.DeletionReasonInstanceGone)
		if err := g.client.Patch(ctx, c, client.MergeFrom(orig)); err != nil {
			continue
		}
		if err := g.client.Delete(ctx, c); err != nil && !apierrors.IsNotFound(err) {
			g.log.Error(err, "deleting a NodeClaim whose instance is gone", "nodeclaim", c.Name)
			continue
		}
		g.opts.Replan()
	}
	return nil
}

// adopt creates the NodeClaim of an instance launched directly by the TUI,
// or reports once that its NodePool does not exist.
func (g *Collector) adopt(ctx context.Context, inst *v1alpha1.NodeClaim) error {
	id := inst.Status.ProviderID
	poolName := inst.NodePool()
	var pool v1alpha1.NodePool
	var err error
	if poolName != "" && inst.Name != "" {
		err = g.reader.Get(ctx, client.ObjectKey{Name: poolName}, &pool)
	}
	if poolName == "" || inst.Name == "" || apierrors.IsNotFound(err) || err == nil && pool.DeletionTimestamp != nil {
		g.notAdoptable(ctx, inst, poolName)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading NodePool %s: %w", poolName, err)
	}
	claim := adoptedClaim(&pool, inst)
	if err := g.client.Create(ctx, claim); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil // created meanwhile: owned on the next pass
		}
		return fmt.Errorf("creating NodeClaim %s: %w", claim.Name, err)
	}
	// The status says Launched, so the lifecycle controller goes straight
	// to registration. Should this write fail (or the controller see the
	// claim first), it calls Create, which finds the instance by the claim
	// name and launches nothing.
	orig := claim.DeepCopy()
	claim.Status = adoptedStatus(inst, claim.Generation)
	if err := g.client.Status().Patch(ctx, claim, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsConflict(err) {
		g.log.Error(err, "recording the instance on an adopted NodeClaim; the lifecycle controller will", "nodeclaim", claim.Name)
	}
	by := inst.Annotations[v1alpha1.AnnotationLaunchedDirectly]
	metrics.ClaimCreated(pool.Name, metrics.ReasonAdopted, "", false)
	g.mu.Lock()
	delete(g.unadoptable, id)
	g.mu.Unlock()
	s := &inst.Status
	g.log.Info("adopted an instance launched by kubectl rightsize tui", "nodeclaim", claim.Name, "nodepool", pool.Name, "providerID", id,
		"instanceType", s.InstanceType, "zone", s.Zone, "capacityType", s.CapacityType, "cloud", by)
	if g.opts.Recorder != nil {
		g.opts.Recorder.Eventf(claim, nil, corev1.EventTypeNormal, "Adopted", "Adopt",
			"adopted instance %s (%s %s %s) launched by kubectl rightsize tui directly on %s", id, s.InstanceType, s.CapacityType, s.Zone, by)
	}
	return nil
}

// notAdoptable reports, once per instance, a marked instance whose
// NodePool does not exist. It keeps running.
func (g *Collector) notAdoptable(ctx context.Context, inst *v1alpha1.NodeClaim, pool string) {
	id := inst.Status.ProviderID
	g.mu.Lock()
	seen := g.unadoptable[id]
	g.unadoptable[id] = true
	g.mu.Unlock()
	if seen {
		return
	}
	why := fmt.Sprintf("its NodePool %q does not exist", pool)
	if pool == "" || inst.Name == "" {
		why = "it is not tagged with a NodePool and NodeClaim name"
	}
	msg := fmt.Sprintf("instance %s was launched by kubectl rightsize tui without the operator and %s, so it is not adopted: it keeps running, unmanaged; create the NodePool to have it adopted, or delete the node yourself", id, why)
	g.log.Info("not adopting an instance launched by kubectl rightsize tui", "providerID", id, "nodeclaim", inst.Name, "nodepool", pool, "reason", msg)
	if g.opts.Recorder == nil {
		return
	}
	var nodes corev1.NodeList
	if err := g.client.List(ctx, &nodes, client.MatchingFields{nodeclaim.IndexNodeProviderID: id}); err == nil {
		for i := range nodes.Items {
			g.opts.Recorder.Eventf(&nodes.Items[i], nil, corev1.EventTypeWarning, "NotAdopted", "Adopt", "%s", msg)
		}
	}
}

// adoptedClaim builds the NodeClaim of a directly launched instance as the
// provisioner would have built it for its pool, pinned to what was
// launched; the instance's own labels fill in what the pool does not set.
func adoptedClaim(pool *v1alpha1.NodePool, inst *v1alpha1.NodeClaim) *v1alpha1.NodeClaim {
	by := inst.Annotations[v1alpha1.AnnotationLaunchedDirectly]
	// The hash of the node class the instance was launched with, when the
	// provider recorded one: drift is judged by it. Without it the claim
	// never drifts by hash.
	annotations := cloud.CopyNodeClassHash(map[string]string{
		v1alpha1.AnnotationLaunchedDirectly: by,
		v1alpha1.AnnotationReason:           "launched by kubectl rightsize tui directly on " + by + " and adopted by the operator",
	}, inst.Annotations)
	claim := pool.NewNodeClaim(v1alpha1.NodeClaimOptions{
		InstanceType: inst.Status.InstanceType, Zone: inst.Status.Zone, CapacityType: inst.Status.CapacityType,
		Labels: inst.Labels, Annotations: annotations,
	})
	claim.Name = inst.Name
	// A NoExecute taint would evict the pods the node runs already.
	claim.Spec.Taints = slices.DeleteFunc(slices.Clone(claim.Spec.Taints), func(t corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute })
	return claim
}

// adoptedStatus is the status of an adopted claim: the instance as
// launched, waiting for registration (the lifecycle controller matches the
// Node by providerID, and it usually is there already).
func adoptedStatus(inst *v1alpha1.NodeClaim, generation int64) v1alpha1.NodeClaimStatus {
	s := inst.Status
	out := v1alpha1.NodeClaimStatus{
		ProviderID: s.ProviderID, ImageID: s.ImageID,
		Capacity: s.Capacity.DeepCopy(), Allocatable: s.Allocatable.DeepCopy(),
		InstanceType: s.InstanceType, Zone: s.Zone, CapacityType: s.CapacityType, PricePerHour: s.PricePerHour,
	}
	c := &v1alpha1.NodeClaim{Status: out}
	c.Generation = generation
	by := inst.Annotations[v1alpha1.AnnotationLaunchedDirectly]
	c.SetLaunched(v1alpha1.ReasonAdopted, "launched by kubectl rightsize tui directly on "+by+"; adopted by the garbage collector")
	return c.Status
}
