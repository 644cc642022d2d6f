// Package tuicmd is the `kubectl rightsize tui` command: its flags, their
// validation and the run that starts the program of pkg/tui.
package tuicmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/cloudprovider"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/flags"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/launch"
)

const tuiExample = `  # Pending pods, proposed nodes, current nodes and consolidation of the current cluster
  kubectl rightsize tui

  # Look, never touch: no selecting, no launching
  kubectl rightsize tui --read-only

  # No operator in the cluster: launch simulated (kwok) nodes from the screen
  kubectl rightsize tui --cloud sim

  # What-if on manifests, offline: toggle spot (c), families (f) and region (r) on screen
  kubectl rightsize tui -f deploy/`

// TUIOptions are the options of `kubectl rightsize tui`: the program's,
// bound to their flags by tui.Options.AddFlags, and what only the command
// needs.
type TUIOptions struct {
	// Options are the program's; Run sets the input, the cluster's context
	// and the launcher.
	tui.Options
	genericiooptions.IOStreams
	// Cluster gives the kubeconfig flags of the root command.
	Cluster genericclioptions.RESTClientGetter

	// Input, when given, makes the TUI work offline on manifests.
	Input snapshot.Input
	// Cloud is "" (launch through NodeClaims), "sim" or "aws" (launch
	// through that cloud provider directly, for clusters without the
	// operator).
	Cloud string
	// ClusterName tags directly launched instances, as the operator's
	// --cluster-name does; the two must agree for the operator to adopt.
	ClusterName string
	// NewCloud builds the provider of Cloud for a region (the plan's); the
	// command wires the constructor the operator uses.
	NewCloud func(ctx context.Context, region string, cfg *rest.Config, c client.Client) (cloud.CloudProvider, error)
	// OperatorLease is the name of the operator's leader-election Lease: a
	// fresh one means an operator runs, and direct launches are refused.
	OperatorLease string

	// Set by Complete.
	cluster    *flags.Cluster
	clusterErr error
}

// NewCmdTUI builds `kubectl rightsize tui`. cluster gives the kubeconfig
// flags of the root command. The command only parses: it runs runF when
// given (tests), else TUIOptions.Run.
func NewCmdTUI(streams genericiooptions.IOStreams, cluster genericclioptions.RESTClientGetter, runF func(context.Context, *TUIOptions) error) *cobra.Command {
	o := &TUIOptions{IOStreams: streams, Cluster: cluster, OperatorLease: v1alpha1.OperatorLeaseName}
	o.NewCloud = func(ctx context.Context, region string, cfg *rest.Config, c client.Client) (cloud.CloudProvider, error) {
		co := cloudprovider.Options{
			Cloud: o.Cloud, ClusterName: o.ClusterName, Region: region,
			InstanceTypesFile: o.Catalog.InstanceTypesFile, Model: o.Catalog.Model, Logger: logr.Discard(),
		}
		return cloudprovider.New(ctx, co, cfg, c)
	}
	cmd := &cobra.Command{
		Use:   "tui [-f FILENAME]",
		Short: "Interactive: why pods are pending, the right-sized nodes that would fix it and their cost; launch them from the screen",
		Long: `An interactive view of the same plan explain prints, kept up to date as the cluster changes.

Views (1-4 or tab): pending pods grouped by owner with the scheduler's message,
our reason and the node that would take them (enter: every constraint checked and
the instance types ruled out); the proposed nodes with price and utilisation and
the plan's cost against the lower bound; the current nodes with CPU and memory
bars, price and NodeClaims in flight; and what consolidation would save.

Select proposed nodes with space and press L to launch them: after a confirmation
showing what will be created and its cost, NodeClaims are created for the
operator to launch. With --cloud sim|aws and no operator running, the TUI
launches the instances itself through that cloud provider, for NodeClaims built
as the operator builds them (created in the cluster too when the CRDs and the
NodePool exist, so that an operator started later adopts the instances), and
opens the nodes to pods once they are Ready; progress shows in place until the
pods run. --read-only removes every action. With -f it works offline on
manifests; c, f and r re-plan with spot, other instance families or another
region and show the cost difference. Press ? for every key.`,
		Example: tuiExample,
		Args:    cobra.ArbitraryArgs,
		RunE:    flags.RunE(o, runF),
	}
	f := cmd.Flags()
	o.Input.AddFlags(f, "a file or a directory")
	f.StringVar(&o.Cloud, "cloud", "", "launch through this cloud provider directly when no operator runs: sim (kwok nodes) or aws")
	f.StringVar(&o.ClusterName, "cluster-name", "", "with --cloud: the cluster name instances are tagged with; the operator's --cluster-name, so that it adopts them (required with --cloud aws; rightsize with sim)")
	o.Options.AddFlags(f)
	return cmd
}

// Complete resolves the cluster unless manifests are given. A kubeconfig
// that cannot be used is not an error yet: Validate reports it, since -f
// needs none.
func (o *TUIOptions) Complete(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("tui takes no arguments, got %q; filter workloads on screen with /", args)
	}
	if o.Input.Given() || o.Cluster == nil {
		return nil
	}
	o.cluster, o.clusterErr = flags.ResolveCluster(o.Cluster)
	return nil
}

// Validate checks the options before anything is read: flags that
// contradict each other first, then the input.
func (o *TUIOptions) Validate() error {
	switch o.Cloud {
	case "":
	case "sim", "aws":
		switch {
		case o.Input.Given():
			return fmt.Errorf("--cloud %s launches into a cluster, and -f works offline on manifests with nothing to launch into; drop one of them", o.Cloud)
		case o.ReadOnly:
			return fmt.Errorf("--cloud %s is for launching, which --read-only turns off; drop one of them", o.Cloud)
		case o.ClusterName == "" && o.Cloud == "aws":
			// No default on AWS: two clusters left on one default in an
			// account would adopt and collect each other's instances.
			return errors.New("--cluster-name is required with --cloud aws: it tags the instances, as the operator's --cluster-name does, so that the operator adopts them")
		case o.NewCloud == nil:
			return fmt.Errorf("--cloud %s: no cloud provider constructor wired", o.Cloud)
		}
	default:
		return fmt.Errorf("--cloud %q: must be sim or aws", o.Cloud)
	}
	if o.Cloud == "sim" && o.ClusterName == "" {
		o.ClusterName = "rightsize"
	}
	if !o.Input.Given() && o.cluster == nil {
		return flags.NoInputError(o.clusterErr)
	}
	for _, f := range o.Input.Filenames {
		if f == "-" {
			return errors.New("-f -: the TUI reads keys from the terminal; pass a file or a directory")
		}
	}
	return o.Options.Validate()
}

// errNoTerminal is Run's error when the input is not a terminal: a script
// or a pipe, which explain serves.
var errNoTerminal = errors.New("tui needs a terminal; use explain for scripts (kubectl rightsize explain, -o json for machines)")

// Run starts the program on the terminal until the user quits or ctx ends.
// Without a terminal for input (a pipe, /dev/null, a CI job) it fails
// before reading anything.
func (o *TUIOptions) Run(ctx context.Context) error {
	if f, ok := o.In.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		return errNoTerminal
	}
	o.Catalog.MaxInputSize = o.Input.MaxInputSize
	o.Input.RemoteTimeout = o.Timeout
	opts := o.Options
	opts.NoColor = os.Getenv("NO_COLOR") != ""
	if o.Input.Given() {
		m, err := o.Input.ReadContext(ctx, nil)
		if err != nil {
			return err
		}
		for _, w := range m.Warnings {
			fmt.Fprintf(o.ErrOut, "Warning: %s\n", w)
		}
		opts.Manifests, opts.Context = m, "offline"
		return tui.Run(ctx, opts, nil, o.In, o.Out)
	}
	opts.Context = o.cluster.Context
	clients, err := snapshot.NewClusterClients(o.cluster.RESTConfig)
	if err != nil {
		return err
	}
	if o.Cloud != "" {
		if opts.Launcher, err = o.directLauncher(clients); err != nil {
			return err
		}
		opts.DirectCloud = o.Cloud
	}
	return tui.Run(ctx, opts, &clients, o.In, o.Out)
}

// directLauncher launches through the cloud provider (--cloud), with a
// controller-runtime client for the provider, NodePools, NodeClaims and
// Nodes.
func (o *TUIOptions) directLauncher(clients snapshot.ClusterClients) (*launch.DirectLauncher, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	cfg := o.cluster.RESTConfig
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("--cloud %s: %w", o.Cloud, err)
	}
	return &launch.DirectLauncher{
		CloudName: o.Cloud, ClusterName: o.ClusterName, Client: c, LaunchedBy: "kubectl-rightsize-tui",
		Cloud: func(ctx context.Context, region string) (cloud.CloudProvider, error) {
			return o.NewCloud(ctx, region, cfg, c)
		},
		ClaimsServed: func() (bool, error) { return launch.Served(clients.Kube.Discovery(), launch.NodeClaims) },
		OperatorRunning: func(ctx context.Context) (string, error) {
			return launch.OperatorRunning(ctx, clients.Kube, o.OperatorLease, time.Now())
		},
	}, nil
}
