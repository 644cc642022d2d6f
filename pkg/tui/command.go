package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/explain"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/launch"
)

// DefaultTimeout bounds each re-plan of the TUI: the best plan found by
// then is shown, so that a big cluster still refreshes promptly.
const DefaultTimeout = 10 * time.Second

// CmdOptions are the inputs of `kubectl rightsize tui`.
type CmdOptions struct {
	// Filenames, when set, make the TUI work offline on manifests.
	Filenames []string
	ReadOnly  bool
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
	Catalog       explain.Catalog
	Default       explain.DefaultPool
	Timeout       time.Duration
	Cluster       genericclioptions.RESTClientGetter
	genericiooptions.IOStreams

	restConfig *rest.Config
	clusterErr error
	context    string
}

// Complete resolves the cluster unless manifests are given.
func (o *CmdOptions) Complete(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("tui takes no arguments, got %q; filter workloads on screen with /", args)
	}
	if len(o.Filenames) > 0 || o.Cluster == nil {
		return nil
	}
	cfg, err := o.Cluster.ToRESTConfig()
	if err != nil {
		o.clusterErr = err
		return nil
	}
	loader := o.Cluster.ToRawKubeConfigLoader()
	raw, rawErr := loader.RawConfig()
	if rawErr == nil && len(raw.Clusters) == 0 && cfg.Host == "http://localhost:8080" {
		o.clusterErr = clientcmd.ErrEmptyConfig
		return nil
	}
	if rawErr == nil {
		o.context = raw.CurrentContext
	}
	if cf, ok := o.Cluster.(*genericclioptions.ConfigFlags); ok && cf.Context != nil && *cf.Context != "" {
		o.context = *cf.Context
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = explain.DefaultRequestTimeout
	}
	o.restConfig = cfg
	return nil
}

// Validate checks the options before anything is read: flags that
// contradict each other first, then the input.
func (o *CmdOptions) Validate() error {
	switch o.Cloud {
	case "":
	case "sim", "aws":
		switch {
		case len(o.Filenames) > 0:
			return fmt.Errorf("--cloud %s launches into a cluster, and -f works offline on manifests with nothing to launch into; drop one of them", o.Cloud)
		case o.ReadOnly:
			return fmt.Errorf("--cloud %s is for launching, which --read-only turns off; drop one of them", o.Cloud)
		case o.ClusterName == "":
			return fmt.Errorf("--cluster-name must not be empty with --cloud %s: it tags the instances, as the operator's --cluster-name does", o.Cloud)
		case o.NewCloud == nil:
			return fmt.Errorf("--cloud %s: no cloud provider constructor wired", o.Cloud)
		}
	default:
		return fmt.Errorf("--cloud %q: must be sim or aws", o.Cloud)
	}
	if len(o.Filenames) == 0 && o.restConfig == nil {
		why := "no kubeconfig found"
		if o.clusterErr != nil && !clientcmd.IsEmptyConfig(o.clusterErr) {
			why = "the kubeconfig cannot be used: " + o.clusterErr.Error()
		}
		return fmt.Errorf("no input: pass manifests with -f FILE, -f DIR or -f -, or point at a cluster with --kubeconfig or --context (%s)", why)
	}
	for _, f := range o.Filenames {
		if f == "-" {
			return errors.New("-f -: the TUI reads keys from the terminal; pass a file or a directory")
		}
	}
	if o.Catalog.Model.VMMemoryOverheadPercent < 0 || o.Catalog.Model.VMMemoryOverheadPercent >= 1 {
		return fmt.Errorf("--vm-memory-overhead-percent %v: must be at least 0 and below 1", o.Catalog.Model.VMMemoryOverheadPercent)
	}
	if _, err := o.Default.Pool(); err != nil {
		return err
	}
	return nil
}

// Run starts the program on the terminal.
func (o *CmdOptions) Run(ctx context.Context) error {
	opts := Options{
		Catalog: o.Catalog, Default: o.Default, Timeout: o.Timeout, ReadOnly: o.ReadOnly,
		NoColor: os.Getenv("NO_COLOR") != "", Context: o.context,
	}
	if len(o.Filenames) > 0 {
		m, err := snapshot.Read(o.Filenames, nil)
		if err != nil {
			return err
		}
		for _, w := range m.Warnings {
			fmt.Fprintf(o.ErrOut, "Warning: %s\n", w)
		}
		opts.Manifests, opts.Context = m, "offline"
		return Run(ctx, opts, nil, o.In, o.Out)
	}
	clients, err := snapshot.NewClusterClients(o.restConfig)
	if err != nil {
		return err
	}
	if o.Cloud != "" {
		if opts.Launcher, err = o.directLauncher(clients); err != nil {
			return err
		}
		opts.DirectCloud = o.Cloud
	}
	return Run(ctx, opts, &clients, o.In, o.Out)
}

// directLauncher launches through the cloud provider (--cloud), with a
// controller-runtime client for the provider, NodePools, NodeClaims and
// Nodes.
func (o *CmdOptions) directLauncher(clients snapshot.ClusterClients) (*launch.DirectLauncher, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(o.restConfig, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("--cloud %s: %w", o.Cloud, err)
	}
	cfg := o.restConfig
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
