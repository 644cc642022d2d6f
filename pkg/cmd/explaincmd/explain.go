// Package explaincmd is the `kubectl rightsize explain` command: its flags,
// their validation and the run that prints the report of pkg/explain.
package explaincmd

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/flags"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/explain"
)

const explainExample = `  # Why are pods pending in the current namespace, what would fix it, and what do the nodes cost?
  kubectl rightsize explain

  # The same for every namespace, or for one workload
  kubectl rightsize explain -A
  kubectl rightsize explain deployment/web -n shop

  # Plan nodes for a directory of manifests with the embedded AWS catalog, offline
  kubectl rightsize explain -f deploy/

  # The same in eu-west-1, allowing spot, one row per node with its pods
  kubectl rightsize explain -f app.yaml --region eu-west-1 --capacity-type spot,on-demand -o wide

  # Your own instance types and prices, output as JSON
  kubectl rightsize explain -f app.yaml --instance-types my-types.yaml -o json

  # In CI: fail when a pod of the manifests could not be placed
  kubectl rightsize explain -f deploy/ --exit-code`

// ExplainOptions are the options of `kubectl rightsize explain`: the
// report's options, bound to their flags by explain.Options.AddFlags, and
// what only the command needs.
type ExplainOptions struct {
	// Options are the report's. Without manifests (Input), explain reads
	// the live cluster that Cluster points at; Complete sets RESTConfig
	// and Namespace from it.
	explain.Options
	// Cluster gives the kubeconfig, context, namespace and request timeout
	// (the root command's --kubeconfig, --context, -n, --request-timeout).
	Cluster genericclioptions.RESTClientGetter
	// ExitCode makes the exit status say whether every pod can be placed,
	// as kubectl diff's says whether there are differences: 0 when all
	// can, 1 when any cannot, above 1 when explain failed.
	ExitCode bool

	// Set by Complete.
	cluster    *flags.Cluster
	clusterErr error
}

// NewCmdExplain builds `kubectl rightsize explain`. cluster gives the
// kubeconfig flags of the root command. The command only parses: it runs
// runF when given (tests), else ExplainOptions.Run.
func NewCmdExplain(streams genericiooptions.IOStreams, cluster genericclioptions.RESTClientGetter, runF func(context.Context, *ExplainOptions) error) *cobra.Command {
	o := &ExplainOptions{Options: explain.Options{IOStreams: streams}, Cluster: cluster}
	cmd := &cobra.Command{
		Use:   "explain [POD | TYPE/NAME] [-f FILENAME]",
		Short: "Show why pods are pending, which right-sized nodes would fix it, what they cost, and what the current nodes cost",
		Long: `Show why pods are pending, which right-sized nodes would fix it and what they cost.

Without -f, explain reads the cluster of the current kubeconfig context: pending
pods (of the current namespace, -n NAMESPACE, or -A for all), nodes, DaemonSets,
PodDisruptionBudgets and Karpenter NodePools. It plans for every pending pod,
then reports the pending pods in scope with the scheduler's message and the
node that would take them, the proposed nodes, and the current nodes with their
price. Naming a pod or a workload (deployment/web) narrows the report to it.

With -f, explain plans offline for the workloads in the manifests.

With --exit-code, the exit status says whether every pod can be placed, as
kubectl diff's says whether there are differences: 0 when every pod can be
placed, 1 when any cannot, 2 when explain itself failed.`,
		Example: explainExample,
		Args:    cobra.ArbitraryArgs, // Complete says what is wrong with extra ones
		RunE:    flags.RunE(o, runF),
	}
	f := cmd.Flags()
	o.Options.AddFlags(f)
	f.BoolVar(&o.ExitCode, "exit-code", false, "exit 1 when any pod cannot be placed (in scope, for a cluster), 0 when every one can, and 2 on errors, as kubectl diff does; for CI")
	return cmd
}

// Complete takes the positional arguments, gives the catalog
// --max-input-size and the remote bases --timeout and, when no manifests
// are given, resolves the cluster from Cluster. A kubeconfig that cannot be
// used is not an error yet: Validate reports it, since -f needs none.
func (o *ExplainOptions) Complete(args []string) error {
	o.Catalog.MaxInputSize = o.Input.MaxInputSize
	o.Input.RemoteTimeout = o.Timeout
	switch len(args) {
	case 0:
	case 1:
		o.Workload = args[0]
	default:
		return fmt.Errorf("at most one workload may be named (POD, pod/NAME or TYPE/NAME), got %d: %s", len(args), strings.Join(args, " "))
	}
	if o.Input.Given() || o.Cluster == nil {
		return nil
	}
	o.cluster, o.clusterErr = flags.ResolveCluster(o.Cluster)
	if o.cluster != nil {
		o.RESTConfig, o.Namespace = o.cluster.RESTConfig, o.cluster.Namespace
	}
	return nil
}

// Validate checks the options before anything is read.
func (o *ExplainOptions) Validate() error {
	if !o.Input.Given() && o.cluster == nil {
		return flags.NoInputError(o.clusterErr)
	}
	if o.Workload != "" {
		if o.Input.Given() {
			return fmt.Errorf("%s: naming a workload needs a live cluster; with -f every manifest is planned", o.Workload)
		}
		if err := explain.CheckWorkload(o.Workload); err != nil {
			return err
		}
	}
	switch o.Output {
	case "", "wide", "json", "yaml":
	default:
		return fmt.Errorf("--output %q: must be one of wide, json, yaml", o.Output)
	}
	if err := o.Catalog.Validate(); err != nil {
		return err
	}
	if err := o.Default.Validate(); err != nil {
		return err
	}
	if o.Consolidation && o.Input.Given() {
		return fmt.Errorf("--consolidation reads a live cluster's nodes; it cannot be combined with -f")
	}
	return nil
}

// Run reads the manifests or the cluster, solves and prints the report.
// When ctx ends first (Ctrl-C), it returns promptly with an error that
// says so, and prints no report.
func (o *ExplainOptions) Run(ctx context.Context) error {
	tuneGC(os.Getenv)
	err := o.Options.Run(ctx)
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("interrupted before the report was ready, nothing printed: %w", err)
	}
	switch {
	case !o.ExitCode:
		return err
	case err != nil:
		return &flags.ExitError{Code: 2, Err: err}
	case o.Unplaced() > 0:
		return &flags.ExitError{Code: 1}
	}
	return nil
}

// explain is one batch over a heap that mostly lives to the end (the
// decoded manifests, the problem, the plan): with Go's default GOGC=100 the
// collector marks it again and again, a fifth of the CPU of a large run
// (DLRM's 23,871 pods on every type: 3.4 CPU-s at GOGC=100, 2.5 at 400,
// peak RSS 208 MB and 352 MB). gcPercent trades that memory for the CPU;
// gcSoftLimit makes the collector work harder again before the heap passes
// 320 MiB: with 1 GiB, the hostile-input suite's largest inputs (256 MiB,
// --max-input-size) peaked at 538 MB, over its 512 MB bound (409 MB at
// GOGC=100). GOGC and GOMEMLIMIT, when set, win.
const (
	gcPercent   = 400
	gcSoftLimit = 320 << 20
)

// tuneGC sets the collector for a batch run unless the environment (getenv)
// says otherwise.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(gcSoftLimit)
	}
}
