// Package operator is the `kubectl rightsize operator` command and its
// `install` subcommand: the flags of the in-cluster operator (pkg/operator)
// and of the manifests that deploy it.
package operator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws/interruption"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/sim"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/cloudprovider"
	op "github.com/rightsize-dev/kubectl-rightsize/pkg/operator"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/disruption"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim/repair"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/provisioning"
)

const operatorExample = `  # Provision kwok nodes from the simulated cloud for the cluster of the current context
  kubectl rightsize operator --cloud sim --leader-elect=false

  # As a Deployment (two replicas, one leader), with metrics and probes
  kubectl-rightsize operator --cloud sim --metrics-bind-address :8080 --health-probe-bind-address :8081`

// exitAfterLaunchEnv, when set to an exit code, makes the operator exit
// right after the cloud launched an instance and before the NodeClaim's
// status records it: the worst moment to crash. For tests only.
const exitAfterLaunchEnv = "RIGHTSIZE_TEST_EXIT_AFTER_LAUNCH"

// OperatorOptions are the options of `kubectl rightsize operator`.
type OperatorOptions struct {
	genericiooptions.IOStreams

	Cloud                   string
	Kubeconfig, Context     string
	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionID        string
	LeaseDuration           time.Duration
	RenewDeadline           time.Duration
	RetryPeriod             time.Duration
	MetricsBindAddress      string
	HealthProbeBindAddress  string
	// KubeClientQPS and KubeClientBurst rate-limit the operator's API
	// client (Karpenter's KUBE_CLIENT_QPS and KUBE_CLIENT_BURST).
	KubeClientQPS       float32
	KubeClientBurst     int
	BatchIdle, BatchMax time.Duration
	BatchHold           time.Duration
	ClusterName         string
	Region              string
	InstanceTypesFile   string
	RegistrationDelay   time.Duration
	GCGracePeriod       time.Duration
	ClusterEndpoint     string
	KubernetesVersion   string
	InterruptionQueue   string
	LogFormat, LogLevel string
	// Disruption flags.
	Consolidation             bool
	ConsolidationInterval     time.Duration
	ValidationDelay           time.Duration
	DrainTimeout              time.Duration
	GangWait                  time.Duration
	NominatePods              bool
	NominateSpreadPods        bool
	ReplacementTimeout        time.Duration
	AllowEvictingUncontrolled bool
	NodeRepair                bool
	NodeRepairToleration      time.Duration
	// Flexible launches.
	LaunchPricePremium float64
	MinValuesPolicy    string

	// RegionSet says --region was given: with aws, an unset region means
	// the SDK's chain instead of the flag's default.
	RegionSet bool

	restConfig *rest.Config
	logger     logr.Logger
}

// NewCmdOperator builds `kubectl rightsize operator`, without its install
// subcommand. The kubeconfig and context come from cluster (the root
// command's --kubeconfig and --context) when it is given, else from
// KUBECONFIG, ~/.kube/config or the in-cluster service account. The
// command only parses: it runs runF when given (tests), else
// OperatorOptions.Run, until the context (cancelled by main on SIGINT and
// SIGTERM) ends.
func NewCmdOperator(streams genericiooptions.IOStreams, cluster *genericclioptions.ConfigFlags, runF func(context.Context, *OperatorOptions) error) *cobra.Command {
	o := &OperatorOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run the provisioning operator: launch right-sized nodes for pods the scheduler cannot place",
		Long: `Run the operator: the same solver as explain, run continuously against the cluster.

It watches pods the scheduler marks Unschedulable, batches them, plans the
cheapest right-sized nodes within the rightsize.dev NodePools and their limits,
and launches them as NodeClaims through the cloud provider. It keeps NodePool
status, terminates instances no NodeClaim owns, and drains nodes whose NodeClaim
is deleted. It consolidates: deletes empty nodes and nodes whose pods fit
elsewhere, replaces nodes by cheaper ones, and replaces expired and drifted
nodes, within each NodePool's policy, consolidateAfter, minimum saving and
disruption budgets, do-not-disrupt annotations and PodDisruptionBudgets.
Replicas elect a leader; only the leader acts. A leader that cannot renew
its Lease within --leader-elect-renew-deadline (e.g. while the API server is
down) exits with status 1 and one line saying so, for its Deployment to
restart it; raise the three --leader-elect-* timings to ride out longer
outages, at the cost of a slower takeover when a leader dies.

With --cloud aws and --interruption-queue, it also long-polls the SQS queue
EventBridge sends EC2 interruption events to: nodes of spot instances about
to be reclaimed, of instances stopping or terminating and of instances with
scheduled maintenance are drained and replaced before EC2 takes them (as
Karpenter's --interruption-queue; see docs/aws.md for the queue and rules).

--cloud sim launches simulated nodes: Node objects that kwok runs, priced from
the embedded catalog (or --instance-types). Any cluster running kwok becomes a
playground.`,
		Example: operatorExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.RegionSet = cmd.Flags().Changed("region")
			if cluster != nil {
				o.Kubeconfig, o.Context = value(cluster.KubeConfig), value(cluster.Context)
			}
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Cloud, "cloud", "sim", "cloud provider: sim (kwok nodes) or aws")
	f.BoolVar(&o.LeaderElect, "leader-elect", true, "elect a leader among replicas; only the leader acts")
	f.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader-election Lease (default: the pod's namespace in-cluster, else kube-system)")
	f.StringVar(&o.LeaderElectionID, "leader-election-id", op.DefaultLeaderElectionID, "name of the leader-election Lease")
	f.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", op.DefaultLeaseDuration, "how long replicas wait after the leader's last renewal before taking the Lease over; controller-runtime's and Karpenter's default")
	f.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", op.DefaultRenewDeadline, "how long the leader keeps trying to renew its Lease before it gives up leading and exits; an API server outage longer than this ends the process; controller-runtime's and Karpenter's default")
	f.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", op.DefaultRetryPeriod, "how often replicas try to acquire or renew the Lease; controller-runtime's and Karpenter's default")
	f.StringVar(&o.MetricsBindAddress, "metrics-bind-address", ":8080", "address to serve /metrics on; 0 disables it")
	f.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", ":8081", "address to serve /healthz and /readyz on; 0 disables it")
	f.Float32Var(&o.KubeClientQPS, "kube-client-qps", 200, "queries per second the operator may send the API server (Karpenter's KUBE_CLIENT_QPS default): a large batch's NodeClaims, nominations and events go through it")
	f.IntVar(&o.KubeClientBurst, "kube-client-burst", 300, "queries the operator may send at once above --kube-client-qps (Karpenter's KUBE_CLIENT_BURST default)")
	f.DurationVar(&o.BatchIdle, "batch-idle", time.Second, "close a batch of pending pods once none arrived for this long (the gap grows, up to 4 times, with the gaps between arrivals)")
	f.DurationVar(&o.BatchHold, "batch-hold", 10*time.Second, "keep a batch open beyond --batch-idle, while a workload of its pods is still creating them or its arrivals pause, for at most this long after it opened (never past --batch-max)")
	f.DurationVar(&o.BatchMax, "batch-max", 2*time.Minute, "close a batch of pending pods after this long regardless; while arrivals keep it open, it decides early every --batch-hold, launching the nodes its plan fills, and plans the rest with the pods after them")
	f.StringVar(&o.ClusterName, "cluster-name", "", "name of this cluster; instances are tagged with it and garbage collection touches only its own (required with --cloud aws; default "+defaultSimClusterName+" with sim)")
	f.StringVar(&o.Region, "region", sim.DefaultRegion, "region whose instance types and prices to use (aws: default AWS_REGION or the shared config)")
	f.StringVar(&o.ClusterEndpoint, "cluster-endpoint", "", "API server URL new nodes join (aws; default: the kubeconfig's server)")
	f.StringVar(&o.KubernetesVersion, "kubernetes-version", "", "the cluster's minor version, e.g. 1.33, for AMI aliases (aws; default: the API server's)")
	f.StringVar(&o.InterruptionQueue, "interruption-queue", "", "SQS queue that EventBridge sends EC2 spot interruption, rebalance, state-change and scheduled-change events to; interrupted nodes are drained and replaced (aws; empty: off)")
	f.StringVar(&o.InstanceTypesFile, "instance-types", "", "YAML or JSON file of instance types and offerings that replaces the embedded catalog (sim)")
	f.DurationVar(&o.RegistrationDelay, "registration-delay", 0, "how long simulated nodes take to register, for SimNodeClasses that set none (sim)")
	f.DurationVar(&o.GangWait, "gang-wait", 10*time.Second, "how long a ready node planned for pods with a hard topology spread or required pod affinity waits for the other such nodes of its provisioning decision, so that they open to pods together as planned; other nodes open as soon as they are ready")
	f.BoolVar(&o.NominatePods, "nominate-pods", true, "when a node opens, set status.nominatedNodeName on the pods planned onto it, so that kube-scheduler keeps their room there and places them as planned; false leaves placement to the scheduler, as Karpenter does (pods bind sooner; the scheduler scatters them and consolidation moves them)")
	f.BoolVar(&o.NominateSpreadPods, "nominate-spread-pods", true, "with --nominate-pods, nominate also the pods with a hard topology spread or required pod affinity; false lets them bind sooner (kube-scheduler counts the pods of a spread nominated to one node against each other) at the price of the scheduler placing them against the plan")
	f.DurationVar(&o.GCGracePeriod, "gc-grace-period", time.Minute, "how old an instance without a NodeClaim must be before it is terminated")
	f.BoolVar(&o.NodeRepair, "node-repair", true, "replace nodes that stay unhealthy (Ready False or Unknown 30m, EKS node monitoring conditions 10-30m), unless over 20% of their NodePool is")
	f.DurationVar(&o.NodeRepairToleration, "node-repair-toleration", 0, "how long any repair condition is tolerated before the node is replaced (0: each condition's own)")
	f.BoolVar(&o.Consolidation, "disruption", true, "consolidate, expire and replace drifted nodes within the NodePools' disruption settings; false leaves nodes alone")
	f.DurationVar(&o.ConsolidationInterval, "consolidation-interval", 5*time.Minute, "plan consolidation at least this often (cluster changes and consolidateAfter deadlines plan sooner)")
	f.DurationVar(&o.ValidationDelay, "disruption-validation-delay", 15*time.Second, "wait this long after choosing a disruption action, then plan again and act only if it still holds")
	f.DurationVar(&o.DrainTimeout, "drain-timeout", 5*time.Minute, "roll a disruption action back (untaint its nodes) when draining takes longer than this")
	f.DurationVar(&o.ReplacementTimeout, "replacement-timeout", 10*time.Minute, "roll a replacement back (untaint the old node, delete the new NodeClaim) when the new node does not initialize within this")
	f.BoolVar(&o.AllowEvictingUncontrolled, "allow-evicting-uncontrolled-pods", false, "let disruption evict pods no controller recreates (they are lost); by default such pods keep their node")
	f.Float64Var(&o.LaunchPricePremium, "launch-price-premium", -1, "let a NodeClaim allow the instance types and offerings that hold its planned pods at most this fraction above the planned price (0.1: 10%), for the cloud to choose among; negative: no bound, every compatible type up to 60 by price (Karpenter's behaviour)")
	f.StringVar(&o.MinValuesPolicy, "min-values-policy", "Strict", "when a NodeClaim's allowed instance types span fewer values than a NodePool requirement's minValues: Strict refuses the launch, BestEffort launches with what there is (Karpenter's --min-values-policy)")
	f.StringVar(&o.LogFormat, "log-format", "json", "log format: json or text")
	f.StringVar(&o.LogLevel, "log-level", "info", "log level: debug, info or error")
	return cmd
}

// value is *s, or "" for nil.
func value(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Complete defaults the cluster name (sim only), loads the kubeconfig and
// builds the logger. A missing cluster name with aws is refused first,
// before a missing kubeconfig.
func (o *OperatorOptions) Complete() error {
	if o.ClusterName == "" {
		if o.Cloud == "aws" {
			// A shared default would let two clusters in one account each
			// garbage-collect the other's instances as their own.
			return errors.New("--cluster-name is required with --cloud aws: the operator tags the instances it launches with it " +
				"and terminates instances carrying that tag that no NodeClaim owns, so two clusters sharing a name in one account " +
				"would terminate each other's nodes; pass the EKS cluster's name")
		}
		// Nothing outside the cluster is tagged by the simulated cloud.
		o.ClusterName = defaultSimClusterName
	}
	if o.LeaderElectionNamespace == "" {
		o.LeaderElectionNamespace = os.Getenv("POD_NAMESPACE")
	}
	if o.LeaderElectionNamespace == "" {
		if ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
			o.LeaderElectionNamespace = strings.TrimSpace(string(ns))
		}
	}
	if o.LeaderElectionNamespace == "" {
		o.LeaderElectionNamespace = "kube-system"
	}
	var level slog.Level
	switch o.LogLevel {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "error":
		level = slog.LevelError
	default:
		return fmt.Errorf("--log-level %q: want debug, info or error", o.LogLevel)
	}
	hopts := &slog.HandlerOptions{Level: level}
	switch o.LogFormat {
	case "json":
		o.logger = logr.FromSlogHandler(slog.NewJSONHandler(o.ErrOut, hopts))
	case "text":
		o.logger = logr.FromSlogHandler(slog.NewTextHandler(o.ErrOut, hopts))
	default:
		return fmt.Errorf("--log-format %q: want json or text", o.LogFormat)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context}).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w; pass --kubeconfig, set KUBECONFIG, or run in a pod", err)
	}
	cfg.QPS, cfg.Burst = o.KubeClientQPS, o.KubeClientBurst
	o.restConfig = cfg
	return nil
}

// Validate checks the flags.
func (o *OperatorOptions) Validate() error {
	switch o.Cloud {
	case "sim":
	case "aws":
		if o.InstanceTypesFile != "" || o.RegistrationDelay != 0 {
			return errors.New("--instance-types and --registration-delay are for --cloud sim; AWS reads its instance types and prices from its APIs")
		}
	default:
		return fmt.Errorf("--cloud %q: want sim or aws", o.Cloud)
	}
	if o.InterruptionQueue != "" && o.Cloud != "aws" {
		return fmt.Errorf("--interruption-queue is for --cloud aws: EC2 interruption events do not reach --cloud %s nodes", o.Cloud)
	}
	if o.KubeClientQPS <= 0 || o.KubeClientBurst < 1 {
		return fmt.Errorf("--kube-client-qps (%g) and --kube-client-burst (%d) must be positive", o.KubeClientQPS, o.KubeClientBurst)
	}
	if o.BatchIdle <= 0 || o.BatchMax < o.BatchIdle {
		return fmt.Errorf("--batch-idle (%s) must be positive and at most --batch-max (%s)", o.BatchIdle, o.BatchMax)
	}
	if o.LeaderElect {
		if err := validateLease(o.LeaseDuration, o.RenewDeadline, o.RetryPeriod); err != nil {
			return err
		}
	}
	for name, d := range map[string]time.Duration{"--consolidation-interval": o.ConsolidationInterval, "--disruption-validation-delay": o.ValidationDelay,
		"--drain-timeout": o.DrainTimeout, "--replacement-timeout": o.ReplacementTimeout, "--gang-wait": o.GangWait, "--batch-hold": o.BatchHold} {
		if d <= 0 {
			return fmt.Errorf("%s (%s) must be positive", name, d)
		}
	}
	if o.MinValuesPolicy != provisioning.MinValuesStrict && o.MinValuesPolicy != provisioning.MinValuesBestEffort {
		return fmt.Errorf("--min-values-policy %q: want %s or %s", o.MinValuesPolicy, provisioning.MinValuesStrict, provisioning.MinValuesBestEffort)
	}
	if o.NodeRepairToleration < 0 {
		return fmt.Errorf("--node-repair-toleration (%s) must not be negative", o.NodeRepairToleration)
	}
	return nil
}

// validateLease checks the leader-election timings as client-go's leader
// elector would (it refuses to start otherwise), in the flags' terms.
func validateLease(lease, renew, retry time.Duration) error {
	switch {
	case retry <= 0:
		return fmt.Errorf("--leader-elect-retry-period (%s) must be positive", retry)
	case renew <= time.Duration(leaderElectionJitter*float64(retry)):
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be more than %.1f times --leader-elect-retry-period (%s), so that the leader tries to renew more than once", renew, leaderElectionJitter, retry)
	case lease <= renew:
		return fmt.Errorf("--leader-elect-lease-duration (%s) must be more than --leader-elect-renew-deadline (%s), so that no replica takes over a Lease its leader is still renewing", lease, renew)
	}
	return nil
}

// leaderElectionJitter is client-go's leaderelection.JitterFactor.
const leaderElectionJitter = 1.2

// cloudOptions are the provider's options from the flags. An aws region
// left unset means the SDK's chain (AWS_REGION, shared config, IMDS).
func (o *OperatorOptions) cloudOptions(model cloud.NodeModel) cloudprovider.Options {
	region := o.Region
	if o.Cloud == "aws" && !o.RegionSet {
		region = ""
	}
	return cloudprovider.Options{
		Cloud: o.Cloud, ClusterName: o.ClusterName, Region: region, InstanceTypesFile: o.InstanceTypesFile,
		RegistrationDelay: o.RegistrationDelay, ClusterEndpoint: o.ClusterEndpoint, KubernetesVersion: o.KubernetesVersion,
		Model: model, Logger: o.logger, Registerer: crmetrics.Registry,
	}
}

// Run runs the operator until ctx ends.
func (o *OperatorOptions) Run(ctx context.Context) error {
	ctrl.SetLogger(o.logger)
	klog.SetLogger(o.logger.WithName("client-go"))
	model := cloud.NodeModel{}
	opts := op.Options{
		Logger:                  o.logger,
		LeaderElect:             o.LeaderElect,
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		LeaderElectionID:        o.LeaderElectionID,
		LeaseDuration:           o.LeaseDuration,
		RenewDeadline:           o.RenewDeadline,
		RetryPeriod:             o.RetryPeriod,
		MetricsBindAddress:      o.MetricsBindAddress,
		HealthProbeBindAddress:  o.HealthProbeBindAddress,
		Cloud: func(ctx context.Context, c client.Client) (cloud.CloudProvider, error) {
			return cloudprovider.New(ctx, o.cloudOptions(model), o.restConfig, c)
		},
	}
	opts.Provisioning.BatchIdle, opts.Provisioning.BatchHold, opts.Provisioning.BatchMax = o.BatchIdle, o.BatchHold, o.BatchMax
	opts.Provisioning.Region, opts.Provisioning.Model = o.Region, model
	opts.Provisioning.LaunchPricePremium, opts.Provisioning.MinValuesPolicy = o.LaunchPricePremium, o.MinValuesPolicy
	if o.Cloud == "aws" && !o.RegionSet {
		opts.Provisioning.Region = "" // the provider's region labels its nodes
	}
	if o.InterruptionQueue != "" {
		opts.CloudControllers = o.interruptionController
	}
	opts.GarbageCollection.GracePeriod = o.GCGracePeriod
	opts.Repair = repair.Options{Disabled: !o.NodeRepair, Toleration: o.NodeRepairToleration}
	opts.Lifecycle.GangWait = o.GangWait
	opts.Lifecycle.NoNominations = !o.NominatePods
	opts.Lifecycle.SkipSpreadNominations = !o.NominateSpreadPods
	opts.Disruption = disruption.Options{
		Disabled: !o.Consolidation, Interval: o.ConsolidationInterval, ValidationDelay: o.ValidationDelay,
		DrainTimeout: o.DrainTimeout, ReplacementTimeout: o.ReplacementTimeout, AllowUncontrolled: o.AllowEvictingUncontrolled,
	}
	if v := os.Getenv(exitAfterLaunchEnv); v != "" {
		code, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%s=%q: want an exit code", exitAfterLaunchEnv, v)
		}
		opts.Lifecycle.AfterLaunch = func(claim *v1alpha1.NodeClaim) {
			o.logger.Info("exiting right after a launch, before the NodeClaim status is written (test hook)", "nodeclaim", claim.Name)
			os.Exit(code)
		}
	}
	return op.Run(ctx, o.restConfig, opts)
}

// interruptionController adds the controller that drains and replaces
// nodes on the EC2 interruption events of --interruption-queue.
func (o *OperatorOptions) interruptionController(mgr manager.Manager, cp cloud.CloudProvider, recorder events.EventRecorder) error {
	p, ok := cp.(*aws.Provider)
	if !ok {
		return fmt.Errorf("--interruption-queue needs the aws provider, not %s", cp.Name())
	}
	c, err := interruption.New(interruption.Options{
		Queue: o.InterruptionQueue, SQS: sqs.NewFromConfig(p.AWSConfig()), Client: mgr.GetClient(),
		Recorder: recorder, Unavailable: p.Unavailable(), Logger: o.logger.WithName("interruption"), Registerer: crmetrics.Registry,
	})
	if err != nil {
		return err
	}
	return mgr.Add(c)
}
