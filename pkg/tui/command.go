package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/explain"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
)

// DefaultTimeout bounds each re-plan of the TUI: the best plan found by
// then is shown, so that a big cluster still refreshes promptly.
const DefaultTimeout = 10 * time.Second

// CmdOptions are the inputs of `kubectl rightsize tui`.
type CmdOptions struct {
	// Filenames, when set, make the TUI work offline on manifests.
	Filenames []string
	ReadOnly  bool
	// Cloud is "" (launch through NodeClaims), "sim" or "aws".
	Cloud   string
	Catalog explain.Catalog
	Default explain.DefaultPool
	Timeout time.Duration
	Cluster genericclioptions.RESTClientGetter
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

// Validate checks the options before anything is read.
func (o *CmdOptions) Validate() error {
	if len(o.Filenames) == 0 && o.restConfig == nil {
		why := "no kubeconfig found"
		if o.clusterErr != nil && !clientcmd.IsEmptyConfig(o.clusterErr) {
			why = "the kubeconfig cannot be used: " + o.clusterErr.Error()
		}
		return fmt.Errorf("no input: pass manifests with -f FILE, -f DIR or -f -, or point at a cluster with --kubeconfig or --context (%s)", why)
	}
	switch o.Cloud {
	case "":
	case "sim", "aws":
		// TODO(tui): launch through cloud.CloudProvider directly (pkg/cloud/sim,
		// pkg/cloud/aws) when no operator runs, with the same tags so the
		// operator adopts the instances later.
		return fmt.Errorf("--cloud %s: launching through the cloud provider directly is not available yet; install the operator's CRDs (kubectl rightsize operator install) so that launches create NodeClaims", o.Cloud)
	default:
		return fmt.Errorf("--cloud %q: must be sim or aws", o.Cloud)
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
	return Run(ctx, opts, &clients, o.In, o.Out)
}
