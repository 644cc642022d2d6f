// Package garbagecollection reconciles the cloud with the NodeClaims:
// instances that no NodeClaim owns (e.g. after a crash between launch and
// the status write, or a NodeClaim force-deleted) are terminated after a
// grace period, and NodeClaims whose instance vanished are deleted so that
// their pods are planned again.
package garbagecollection

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim/lifecycle"
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
}

// Collector is a leader-only manager.Runnable.
type Collector struct {
	reader client.Reader // the API server, not the cache: GC must not act on stale data
	client client.Client
	cloud  cloud.CloudProvider
	log    logr.Logger
	opts   Options
}

// RBAC of the garbage collector.
//
// +kubebuilder:rbac:groups=rightsize.dev,resources=nodeclaims,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;delete

// New returns the garbage collector.
func New(reader client.Reader, c client.Client, cp cloud.CloudProvider, log logr.Logger, opts Options) *Collector {
	if opts.GracePeriod <= 0 {
		opts.GracePeriod = time.Minute
	}
	if opts.Interval <= 0 {
		opts.Interval = min(10*time.Second, max(opts.GracePeriod/2, time.Second))
	}
	if opts.Replan == nil {
		opts.Replan = func() {}
	}
	return &Collector{reader: reader, client: c, cloud: cp, log: log, opts: opts}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (g *Collector) NeedLeaderElection() bool { return true }

// Start collects every Interval until ctx ends.
func (g *Collector) Start(ctx context.Context) error {
	t := time.NewTicker(g.opts.Interval)
	defer t.Stop()
	for {
		if err := g.Collect(ctx); err != nil && ctx.Err() == nil {
			g.log.Error(err, "garbage collection failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
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
		age := time.Since(inst.CreationTimestamp.Time)
		if age < g.opts.GracePeriod {
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
	for i := range claims.Items {
		c := &claims.Items[i]
		id := c.Status.ProviderID
		if id == "" || alive[id] || c.DeletionTimestamp != nil || !nodeclaim.IsTrue(c, v1alpha1.ConditionLaunched) {
			continue
		}
		if time.Since(nodeclaim.TransitionTime(c, v1alpha1.ConditionLaunched)) < 10*time.Second {
			continue
		}
		if _, err := g.cloud.Get(ctx, id); !cloud.IsNotFound(err) {
			continue
		}
		g.log.Info("deleting a NodeClaim whose instance is gone", "nodeclaim", c.Name, "providerID", id)
		orig := c.DeepCopy()
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[lifecycle.AnnotationDeletionReason] = metrics.ReasonInstanceGone
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
