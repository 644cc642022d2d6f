// Package operator runs the solver continuously in-cluster: a
// controller-runtime manager (leader election, /metrics, /healthz, /readyz,
// graceful shutdown) with one controller per concern, each in its own
// package:
//
//   - provisioning: batches pods the scheduler marked Unschedulable, plans
//     nodes for them and creates NodeClaims;
//   - nodeclaim/lifecycle: launches, registers, initializes and terminates
//     the NodeClaims' instances through the cloud.CloudProvider;
//   - nodeclaim/drift: sets the Drifted condition of NodeClaims whose
//     instance no longer matches its node class (cloud.CloudProvider.IsDrifted);
//   - nodeclaim/repair: deletes the NodeClaims of nodes that stay
//     unhealthy (Karpenter's node repair), to be terminated at once;
//   - nodeclaim/podevents: records on each NodeClaim when a pod last
//     arrived on or left its node, which consolidateAfter counts from;
//   - nodeclaim/garbagecollection: terminates instances no NodeClaim owns
//     (or adopts those `tui --cloud` launched directly) and deletes
//     NodeClaims whose instance vanished;
//   - nodepool: NodePool status and the cost metrics;
//   - disruption: consolidation, expiration and drift: deletes and replaces
//     nodes within the pools' budgets, never losing a pod;
//   - provisioningrequest: answers ProvisioningRequests (check-capacity,
//     best-effort-atomic-scale-up) from a plan of their gang, launching
//     the whole gang's nodes or none.
//
// Only the leader acts; other replicas keep warm caches and take over when
// the leader goes away.
package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/commitments"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/disruption"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim/drift"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim/garbagecollection"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim/lifecycle"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim/podevents"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim/repair"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodepool"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/provisioning"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/provisioningrequest"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/state"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/static"
)

// DefaultLeaderElectionID is the name of the Lease replicas compete for.
const DefaultLeaderElectionID = v1alpha1.OperatorLeaseName

// ErrLeaderElectionLost is wrapped by the error Run returns when the leader
// could not renew its Lease in time. The process should exit: its
// controllers have stopped, and the Deployment's restart makes it a
// candidate again with fresh caches.
var ErrLeaderElectionLost = errors.New("leader election lost")

// Leader-election timings controller-runtime uses when none are given.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// CloudFactory builds the cloud provider. The client it gets reads the API
// server directly (not the cache), so that idempotency checks see the
// latest state.
// ctx lives as long as the operator, for providers that refresh prices in
// the background.
type CloudFactory func(ctx context.Context, c client.Client) (cloud.CloudProvider, error)

// Options configure the operator.
type Options struct {
	// Cloud builds the cloud provider. Required.
	Cloud CloudFactory
	// Logger receives every log line.
	Logger logr.Logger
	// LeaderElect makes replicas elect one leader that acts (true in
	// production); LeaderElectionNamespace and LeaderElectionID locate its
	// Lease.
	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	// LeaseDuration, RenewDeadline and RetryPeriod time the leader
	// election (controller-runtime's defaults, 15 s, 10 s and 2 s, which
	// Karpenter keeps too, when zero): a leader that cannot renew its Lease
	// within RenewDeadline, e.g. during an API server outage, stops leading
	// and Run returns an error wrapping ErrLeaderElectionLost.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// MetricsBindAddress and HealthProbeBindAddress are host:port to serve
	// /metrics and /healthz, /readyz on; "0" disables them.
	MetricsBindAddress     string
	HealthProbeBindAddress string
	// Provisioning tunes batching and the solver (Region and Model must
	// match the cloud provider's).
	Provisioning provisioning.Options
	// Lifecycle tunes liveness and draining (Replan is set by the operator).
	Lifecycle lifecycle.Options
	// GarbageCollection tunes the garbage collector.
	GarbageCollection garbagecollection.Options
	// Drift tunes the NodeClaim drift checks.
	Drift drift.Options
	// Repair tunes the replacement of nodes that stay unhealthy.
	Repair repair.Options
	// Disruption tunes consolidation, expiration and drift.
	Disruption disruption.Options
	// GracefulShutdownTimeout bounds shutdown (30 s when zero).
	GracefulShutdownTimeout time.Duration
	// CloudControllers, when set, adds the cloud provider's own controllers
	// (e.g. AWS interruption handling) to the manager once the provider is
	// built; recorder is the operator's event recorder.
	CloudControllers func(mgr manager.Manager, cp cloud.CloudProvider, recorder events.EventRecorder) error
}

// Scheme returns the scheme the operator's clients use: the built-in kinds
// and rightsize.dev/v1alpha1.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Run runs the operator until ctx is cancelled, then shuts down gracefully
// (the leader releases its Lease so that another replica takes over at
// once).
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	if opts.Cloud == nil {
		return errors.New("operator: no cloud provider")
	}
	log := opts.Logger
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 100, 200
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "kubectl-rightsize-operator"
	}
	scheme, err := Scheme()
	if err != nil {
		return err
	}
	opts = withDefaults(opts)
	mgr, err := newManager(cfg, scheme, log, &opts)
	if err != nil {
		return err
	}
	if err := nodeclaim.SetupIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("operator: indexes: %w", err)
	}
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("operator: client: %w", err)
	}
	cp, err := opts.Cloud(ctx, direct)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("operator: clientset: %w", err)
	}
	// The operator's own broadcaster rather than the manager's, so that
	// failed writes are counted rather than logged one by one.
	broadcaster := events.NewBroadcaster(&countingSink{sink: &events.EventSinkImpl{Interface: kube.EventsV1()}, log: log.WithName("events")})
	recordCtx, stopRecording := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), logr.Discard()))
	defer func() {
		broadcaster.Shutdown()
		stopRecording()
	}()
	if err := broadcaster.StartRecordingToSinkWithContext(recordCtx); err != nil {
		return fmt.Errorf("operator: events: %w", err)
	}
	recorder := broadcaster.NewRecorder(scheme, "rightsize")
	// Commitments through the API server: an informer on the kind would
	// never sync where an older install lacks its CRD or the right to list.
	cs := commitments.NewReader(mgr.GetAPIReader(), opts.Provisioning.Region)
	if err := addControllers(mgr, kube, cp, recorder, log, cs, opts); err != nil {
		return err
	}
	if err := startInformers(ctx, mgr, cs); err != nil {
		return err
	}
	go func() {
		select {
		case <-mgr.Elected():
			if opts.LeaderElect {
				log.Info("elected leader; acting", "lease", opts.LeaderElectionNamespace+"/"+opts.LeaderElectionID)
			}
		case <-ctx.Done():
		}
	}()
	log.Info("starting operator", "cloud", cp.Name(), "leaderElection", opts.LeaderElect,
		"metrics", opts.MetricsBindAddress, "health", opts.HealthProbeBindAddress)
	if err := mgr.Start(ctx); err != nil {
		if opts.LeaderElect && strings.Contains(err.Error(), ErrLeaderElectionLost.Error()) {
			return leaseLost(opts)
		}
		return fmt.Errorf("operator: %w", err)
	}
	log.Info("operator stopped")
	return nil
}

// withDefaults fills in the leader election ID and the durations opts
// leaves unset.
func withDefaults(opts Options) Options {
	if opts.LeaderElectionID == "" {
		opts.LeaderElectionID = DefaultLeaderElectionID
	}
	if opts.GracefulShutdownTimeout <= 0 {
		opts.GracefulShutdownTimeout = 30 * time.Second
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&opts.LeaseDuration, DefaultLeaseDuration}, {&opts.RenewDeadline, DefaultRenewDeadline}, {&opts.RetryPeriod, DefaultRetryPeriod}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	return opts
}

// newManager creates the controller manager: its metrics and health
// endpoints, leader election as opts sets it (releasing the Lease on
// cancel), and caches without managed fields.
func newManager(cfg *rest.Config, scheme *runtime.Scheme, log logr.Logger, opts *Options) (manager.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Logger:                        log,
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		HealthProbeBindAddress:        opts.HealthProbeBindAddress,
		LeaderElection:                opts.LeaderElect,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &opts.LeaseDuration,
		RenewDeadline:                 &opts.RenewDeadline,
		RetryPeriod:                   &opts.RetryPeriod,
		GracefulShutdownTimeout:       &opts.GracefulShutdownTimeout,
		Cache:                         cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
		Controller:                    config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("operator: creating the manager: %w", err)
	}
	return mgr, nil
}

// addControllers registers the operator's controllers with mgr:
// provisioning, the NodeClaim lifecycle, drift, repair and pod events,
// NodePools and static NodePools, garbage collection, disruption,
// ProvisioningRequests, and the
// cloud provider's own controllers when opts adds them. Provisioning and
// disruption spend the Commitments cs reads.
func addControllers(mgr manager.Manager, kube kubernetes.Interface, cp cloud.CloudProvider, recorder events.EventRecorder, log logr.Logger, cs *commitments.Reader, opts Options) error {
	unavailable := state.NewUnavailable(0)

	prov := provisioning.New(mgr.GetClient(), metrics.MeasureCloud(cp, "provisioning"), recorder, log.WithName("provisioning"), unavailable, opts.Provisioning).WithCommitments(cs)
	if err := prov.Register(mgr); err != nil {
		return fmt.Errorf("operator: provisioning: %w", err)
	}
	lc := opts.Lifecycle
	lc.Replan = prov.Trigger
	lc.NominatedPods = prov.NominatedPods
	lc.Waiting = prov.Waiting
	if err := lifecycle.New(mgr.GetClient(), kube, metrics.MeasureCloud(cp, "nodeclaim.lifecycle"), recorder, unavailable, lc).Register(mgr); err != nil {
		return fmt.Errorf("operator: nodeclaim lifecycle: %w", err)
	}
	if err := drift.New(mgr.GetClient(), metrics.MeasureCloud(cp, "nodeclaim.drift"), recorder, opts.Drift).Register(mgr); err != nil {
		return fmt.Errorf("operator: nodeclaim drift: %w", err)
	}
	if err := repair.New(mgr.GetClient(), recorder, opts.Repair).Register(mgr); err != nil {
		return fmt.Errorf("operator: nodeclaim repair: %w", err)
	}
	if err := podevents.New(mgr.GetClient(), log.WithName("podevents"), nil).Register(mgr); err != nil {
		return fmt.Errorf("operator: nodeclaim pod events: %w", err)
	}
	if err := nodepool.New(mgr.GetClient(), metrics.MeasureCloud(cp, "nodepool")).Register(mgr); err != nil {
		return fmt.Errorf("operator: nodepool: %w", err)
	}
	if err := static.New(mgr.GetClient(), metrics.MeasureCloud(cp, "nodepool.static"), recorder, nil).Register(mgr); err != nil {
		return fmt.Errorf("operator: static nodepools: %w", err)
	}
	gc := opts.GarbageCollection
	gc.Replan = prov.Trigger
	gc.Recorder = recorder
	if err := mgr.Add(garbagecollection.New(mgr.GetAPIReader(), mgr.GetClient(), metrics.MeasureCloud(cp, "nodeclaim.garbagecollection"), log.WithName("garbagecollection"), gc)); err != nil {
		return fmt.Errorf("operator: garbage collection: %w", err)
	}

	if err := disruption.New(mgr.GetClient(), kube, prov, recorder, log.WithName("disruption"), opts.Disruption).Register(mgr); err != nil {
		return fmt.Errorf("operator: disruption: %w", err)
	}
	if err := mgr.Add(provisioningrequest.New(mgr.GetClient(), mgr.GetAPIReader(), prov, log.WithName("provisioningrequest"), provisioningrequest.Options{})); err != nil {
		return fmt.Errorf("operator: provisioning requests: %w", err)
	}

	if opts.CloudControllers != nil {
		if err := opts.CloudControllers(mgr, cp, recorder); err != nil {
			return fmt.Errorf("operator: %s controllers: %w", cp.Name(), err)
		}
	}
	return nil
}

// startInformers starts every informer the controllers read, adds the
// pod latency and cluster metrics (the commitment gauges billing the
// Commitments cs reads), and the health and readiness checks (ready once
// the caches have synced).
func startInformers(ctx context.Context, mgr manager.Manager, cs *commitments.Reader) error {
	// Start every informer the controllers read now, rather than on the
	// first read, so that the first batch does not wait for them.
	for _, o := range []client.Object{&corev1.Pod{}, &corev1.Node{}, &appsv1.DaemonSet{}, &policyv1.PodDisruptionBudget{},
		&v1alpha1.NodePool{}, &v1alpha1.NodeClaim{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, o); err != nil {
			return fmt.Errorf("operator: informer for %T: %w", o, err)
		}
	}
	podInformer, err := mgr.GetCache().GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("operator: pod informer: %w", err)
	}
	if _, err := podInformer.AddEventHandler(metrics.NewPodLatency(metrics.PodUnschedulableToRunning, metrics.KarpenterPodStartupDuration, nil).Handler()); err != nil {
		return fmt.Errorf("operator: pod latency: %w", err)
	}
	if err := mgr.Add(metrics.NewCluster(mgr.GetCache(), 0).WithCommitments(cs)); err != nil {
		return fmt.Errorf("operator: cluster gauges: %w", err)
	}
	synced := &cacheSynced{cache: mgr.GetCache()}
	if err := mgr.Add(synced); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("cache", synced.check)
}

// leaseLost is the one-line error of a leader that lost its Lease.
// controller-runtime only says "leader election lost"; the reason is
// always that no renewal succeeded within the renew deadline (the API
// server unreachable or too slow, or another replica took the Lease over).
func leaseLost(opts Options) error {
	return fmt.Errorf("%w: the Lease %s/%s was not renewed within the %s renew deadline (API server unreachable or slow, or taken over); "+
		"exiting so the Deployment restarts the operator", ErrLeaderElectionLost, opts.LeaderElectionNamespace, opts.LeaderElectionID, opts.RenewDeadline)
}

// cacheSynced reports ready once the informer caches have synced; it runs
// on every replica, leader or not.
type cacheSynced struct {
	cache cache.Cache
	done  atomic.Bool
}

func (s *cacheSynced) NeedLeaderElection() bool { return false }

func (s *cacheSynced) Start(ctx context.Context) error {
	if s.cache.WaitForCacheSync(ctx) {
		s.done.Store(true)
	}
	<-ctx.Done()
	return nil
}

func (s *cacheSynced) check(*http.Request) error {
	if !s.done.Load() {
		return errors.New("informer caches not synced yet")
	}
	return nil
}

var _ manager.LeaderElectionRunnable = (*cacheSynced)(nil)
