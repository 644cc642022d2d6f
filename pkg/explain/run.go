package explain

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// DefaultRequestTimeout bounds each request to a live cluster when
// --request-timeout is not set.
const DefaultRequestTimeout = 30 * time.Second

// DefaultRegion is the catalog region used when neither --region nor the
// nodes' topology.kubernetes.io/region label says otherwise.
const DefaultRegion = plan.DefaultRegion

// defaultHost is where client-go points when no kubeconfig exists.
const defaultHost = "http://localhost:8080"

// Options are the inputs of `kubectl rightsize explain`.
type Options struct {
	// Filenames are files, directories or "-" to read manifests from. When
	// empty, explain reads the live cluster that Cluster points at.
	Filenames []string
	// Output is "", "wide", "json" or "yaml".
	Output  string
	Catalog Catalog
	Default DefaultPool
	// Timeout bounds the solve; the best plan found by then is printed.
	Timeout time.Duration
	// AllNamespaces reports the pending pods of every namespace rather than
	// those of the current namespace (-A).
	AllNamespaces bool
	// Consolidation adds what the consolidation planner would do now (live
	// clusters only; read-only).
	Consolidation bool
	// Workload narrows the report to one workload: "NAME" or "pod/NAME" for
	// a pod, "TYPE/NAME" for a controller (deployment/web). The plan still
	// considers every pending pod.
	Workload string
	// Cluster gives the kubeconfig, context, namespace and request timeout
	// (the root command's --kubeconfig, --context, -n, --request-timeout).
	Cluster genericclioptions.RESTClientGetter

	genericiooptions.IOStreams

	// Set by Complete.
	restConfig *rest.Config
	clusterErr error
	namespace  string
	target     *workload
}

// Complete takes the positional arguments and, when no manifests are given,
// resolves the cluster from Cluster. A kubeconfig that cannot be used is
// not an error yet: Validate reports it, since -f needs none.
func (o *Options) Complete(args []string) error {
	switch len(args) {
	case 0:
	case 1:
		o.Workload = args[0]
	default:
		return fmt.Errorf("at most one workload may be named (POD, pod/NAME or TYPE/NAME), got %d: %s", len(args), strings.Join(args, " "))
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
	// Without any kubeconfig, client-go falls back to http://localhost:8080,
	// as kubectl does; here that would hide the real problem.
	if raw, err := loader.RawConfig(); err == nil && len(raw.Clusters) == 0 && cfg.Host == defaultHost {
		o.clusterErr = clientcmd.ErrEmptyConfig
		return nil
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		o.clusterErr = err
		return nil
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultRequestTimeout
	}
	o.restConfig, o.namespace = cfg, ns
	return nil
}

// Validate checks the options before anything is read.
func (o *Options) Validate() error {
	if len(o.Filenames) == 0 && o.restConfig == nil {
		why := "no kubeconfig found"
		if o.clusterErr != nil && !clientcmd.IsEmptyConfig(o.clusterErr) {
			why = "the kubeconfig cannot be used: " + o.clusterErr.Error()
		}
		return fmt.Errorf("no input: pass manifests with -f FILE, -f DIR or -f -, or point at a cluster with --kubeconfig or --context (%s)", why)
	}
	if o.Workload != "" {
		if len(o.Filenames) > 0 {
			return fmt.Errorf("%s: naming a workload needs a live cluster; with -f every manifest is planned", o.Workload)
		}
		w, err := parseWorkload(o.Workload)
		if err != nil {
			return err
		}
		o.target = w
	}
	switch o.Output {
	case "", "wide", "json", "yaml":
	default:
		return fmt.Errorf("--output %q: must be one of wide, json, yaml", o.Output)
	}
	if o.Catalog.Model.VMMemoryOverheadPercent < 0 || o.Catalog.Model.VMMemoryOverheadPercent >= 1 {
		return fmt.Errorf("--vm-memory-overhead-percent %v: must be at least 0 and below 1", o.Catalog.Model.VMMemoryOverheadPercent)
	}
	if o.Catalog.Model.MaxPods < 0 {
		return fmt.Errorf("--max-pods %d: must not be negative", o.Catalog.Model.MaxPods)
	}
	if o.Consolidation && len(o.Filenames) > 0 {
		return fmt.Errorf("--consolidation reads a live cluster's nodes; it cannot be combined with -f")
	}
	return nil
}

// Run reads the manifests or the cluster, solves and prints.
func (o *Options) Run() error {
	if len(o.Filenames) == 0 {
		return o.runLive(context.Background())
	}
	m, err := snapshot.Read(o.Filenames, o.In)
	if err != nil {
		return err
	}
	o.warn(m.Warnings)
	if o.Catalog.Region == "" {
		o.Catalog.Region = DefaultRegion
	}
	types, source, err := o.Catalog.InstanceTypes()
	if err != nil {
		return err
	}
	built, err := plan.Build(plan.Input{Manifests: m, InstanceTypes: types, Catalog: &o.Catalog, Default: &o.Default})
	if err != nil {
		return err
	}
	p := built.Problem
	solved, err := o.solve(p)
	if err != nil {
		return err
	}
	return o.print(NewResult(p, solved, source))
}

func (o *Options) warn(warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", w)
	}
}

func (o *Options) solve(p *solver.Problem) (*solver.Plan, error) {
	if o.Timeout > 0 {
		p.Options.Deadline = time.Now().Add(o.Timeout)
	}
	plan, err := solver.Solve(p)
	if err != nil {
		return nil, fmt.Errorf("planning: %w", err)
	}
	return plan, nil
}

func (o *Options) print(result *Result) error {
	switch o.Output {
	case "json", "yaml":
		printer, err := genericclioptions.NewJSONYamlPrintFlags().ToPrinter(o.Output)
		if err != nil {
			return err
		}
		return printer.PrintObj(result, o.Out)
	}
	return PrintHuman(o.Out, result, o.Output == "wide")
}
