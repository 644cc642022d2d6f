// Package operatorcmd is the `kubectl rightsize operator` command and its
// `install` subcommand: the flags of the in-cluster operator (pkg/operator)
// and of the manifests that deploy it.
package operatorcmd

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
	"github.com/spf13/pflag"
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
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/cloudprovider"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/flags"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator"
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

// OperatorOptions are the options of `kubectl rightsize operator`: the
// options of the operator's packages, each bound to its flags by its own
// AddFlags, and what only the command needs (the kubeconfig, the API
// client's rate limits, logging).
type OperatorOptions struct {
	genericiooptions.IOStreams

	// Operator are the manager's and its controllers' options
	// (operator.Options.AddFlags); Complete sets what follows from the cloud.
	Operator operator.Options
	// Provider builds the cloud provider (cloudprovider.Options.AddFlags).
	Provider cloudprovider.Options
	// Interruption's Queue is --interruption-queue; Run sets the rest.
	Interruption interruption.Options

	Kubeconfig, Context string
	// KubeClientQPS and KubeClientBurst rate-limit the operator's API
	// client (Karpenter's KUBE_CLIENT_QPS and KUBE_CLIENT_BURST).
	KubeClientQPS       float32
	KubeClientBurst     int
	LogFormat, LogLevel string

	// RegionSet says --region was given: with aws, an unset region means
	// the SDK's chain instead of the flag's default.
	RegionSet bool

	cluster    *genericclioptions.ConfigFlags // the root's kubeconfig flags; nil without
	region     *pflag.Flag                    // --region, to tell whether it was given
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
	o := &OperatorOptions{IOStreams: streams, cluster: cluster}
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
		RunE:    flags.RunE(o, runF),
	}
	f := cmd.Flags()
	o.Provider.AddFlags(f)
	o.Interruption.AddFlags(f)
	o.Operator.AddFlags(f)
	o.region = f.Lookup("region")
	f.Float32Var(&o.KubeClientQPS, "kube-client-qps", 200, "queries per second the operator may send the API server (Karpenter's KUBE_CLIENT_QPS default): a large batch's NodeClaims, nominations and events go through it")
	f.IntVar(&o.KubeClientBurst, "kube-client-burst", 300, "queries the operator may send at once above --kube-client-qps (Karpenter's KUBE_CLIENT_BURST default)")
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

// Complete takes the kubeconfig and context from the root's flags and
// whether --region was given, then defaults the cluster name (sim only), clears an unset aws
// region (the SDK's chain), gives the provisioner the cloud's region, loads
// the kubeconfig and builds the logger. A missing cluster name with aws is
// refused first, before a missing kubeconfig.
func (o *OperatorOptions) Complete(_ []string) error {
	if o.region != nil {
		o.RegionSet = o.region.Changed
	}
	if o.cluster != nil {
		o.Kubeconfig, o.Context = value(o.cluster.KubeConfig), value(o.cluster.Context)
	}
	p := &o.Provider
	if p.ClusterName == "" {
		if p.Cloud == "aws" {
			// A shared default would let two clusters in one account each
			// garbage-collect the other's instances as their own.
			return errors.New("--cluster-name is required with --cloud aws: the operator tags the instances it launches with it " +
				"and terminates instances carrying that tag that no NodeClaim owns, so two clusters sharing a name in one account " +
				"would terminate each other's nodes; pass the EKS cluster's name")
		}
		// Nothing outside the cluster is tagged by the simulated cloud.
		p.ClusterName = cloudprovider.DefaultSimClusterName
	}
	if p.Cloud == "aws" && !o.RegionSet {
		p.Region = "" // the SDK's chain; the provider's region labels its nodes
	}
	o.Operator.Provisioning.Region = p.Region
	o.completeLeaderElection()
	if err := o.completeLogger(); err != nil {
		return err
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

// completeLeaderElection defaults the Lease's namespace to the pod's, else
// kube-system.
func (o *OperatorOptions) completeLeaderElection() {
	ns := &o.Operator.LeaderElectionNamespace
	if *ns == "" {
		*ns = os.Getenv("POD_NAMESPACE")
	}
	if *ns == "" {
		if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
			*ns = strings.TrimSpace(string(b))
		}
	}
	if *ns == "" {
		*ns = "kube-system"
	}
}

// completeLogger builds the logger of --log-format and --log-level, for
// the operator and the cloud provider.
func (o *OperatorOptions) completeLogger() error {
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
	o.Operator.Logger, o.Provider.Logger = o.logger, o.logger
	return nil
}

// Validate checks the flags.
func (o *OperatorOptions) Validate() error {
	p, opt := &o.Provider, &o.Operator
	switch p.Cloud {
	case "sim":
	case "aws":
		if p.InstanceTypesFile != "" || p.RegistrationDelay != 0 {
			return errors.New("--instance-types and --registration-delay are for --cloud sim; AWS reads its instance types and prices from its APIs")
		}
	default:
		return fmt.Errorf("--cloud %q: want sim or aws", p.Cloud)
	}
	if o.Interruption.Queue != "" && p.Cloud != "aws" {
		return fmt.Errorf("--interruption-queue is for --cloud aws: EC2 interruption events do not reach --cloud %s nodes", p.Cloud)
	}
	if o.KubeClientQPS <= 0 || o.KubeClientBurst < 1 {
		return fmt.Errorf("--kube-client-qps (%g) and --kube-client-burst (%d) must be positive", o.KubeClientQPS, o.KubeClientBurst)
	}
	if pr := opt.Provisioning; pr.BatchIdle <= 0 || pr.BatchMax < pr.BatchIdle {
		return fmt.Errorf("--batch-idle (%s) must be positive and at most --batch-max (%s)", pr.BatchIdle, pr.BatchMax)
	}
	if opt.LeaderElect {
		if err := validateLease(opt.LeaseDuration, opt.RenewDeadline, opt.RetryPeriod); err != nil {
			return err
		}
	}
	d := opt.Disruption
	for name, v := range map[string]time.Duration{"--consolidation-interval": d.Interval, "--disruption-validation-delay": d.ValidationDelay,
		"--drain-timeout": d.DrainTimeout, "--replacement-timeout": d.ReplacementTimeout, "--gang-wait": opt.Lifecycle.GangWait, "--batch-hold": opt.Provisioning.BatchHold} {
		if v <= 0 {
			return fmt.Errorf("%s (%s) must be positive", name, v)
		}
	}
	if mv := opt.Provisioning.MinValuesPolicy; mv != provisioning.MinValuesStrict && mv != provisioning.MinValuesBestEffort {
		return fmt.Errorf("--min-values-policy %q: want %s or %s", mv, provisioning.MinValuesStrict, provisioning.MinValuesBestEffort)
	}
	if opt.Repair.Toleration < 0 {
		return fmt.Errorf("--node-repair-toleration (%s) must not be negative", opt.Repair.Toleration)
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

// Run runs the operator until ctx ends.
func (o *OperatorOptions) Run(ctx context.Context) error {
	ctrl.SetLogger(o.logger)
	klog.SetLogger(o.logger.WithName("client-go"))
	opts := o.Operator
	o.Provider.Registerer = crmetrics.Registry
	opts.Cloud = func(ctx context.Context, c client.Client) (cloud.CloudProvider, error) {
		return cloudprovider.New(ctx, o.Provider, o.restConfig, c)
	}
	if o.Interruption.Queue != "" {
		opts.CloudControllers = o.interruptionController
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
	return operator.Run(ctx, o.restConfig, opts)
}

// interruptionController adds the controller that drains and replaces
// nodes on the EC2 interruption events of --interruption-queue.
func (o *OperatorOptions) interruptionController(mgr manager.Manager, cp cloud.CloudProvider, recorder events.EventRecorder) error {
	p, ok := cp.(*aws.Provider)
	if !ok {
		return fmt.Errorf("--interruption-queue needs the aws provider, not %s", cp.Name())
	}
	ic := o.Interruption
	ic.SQS, ic.Client, ic.Recorder = sqs.NewFromConfig(p.AWSConfig()), mgr.GetClient(), recorder
	ic.Unavailable, ic.Logger, ic.Registerer = p.Unavailable(), o.logger.WithName("interruption"), crmetrics.Registry
	c, err := interruption.New(ic)
	if err != nil {
		return err
	}
	return mgr.Add(c)
}
