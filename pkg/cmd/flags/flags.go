// Package flags holds the flag sets that more than one command shares: the
// catalog and default-pool flags of explain and tui, and the resolution of
// the kubeconfig flags (genericclioptions.ConfigFlags) into a cluster. One
// definition and one validation each, so that the commands cannot drift.
package flags

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
)

// DefaultRequestTimeout bounds each request to a live cluster when
// --request-timeout is not set.
const DefaultRequestTimeout = 30 * time.Second

// defaultHost is where client-go points when no kubeconfig exists.
const defaultHost = "http://localhost:8080"

// Planning are the flags that choose the instance types and prices to plan
// with (--region, --instance-types, --vm-memory-overhead-percent,
// --max-pods) and what to plan for when the input lacks it: the NodePool
// (--capacity-type, --instance-family, --arch, --all-instance-types) and
// the EKS DaemonSets (--no-eks-daemonsets).
type Planning struct {
	Catalog plan.Catalog
	Default plan.DefaultPool
}

// AddFlags registers the planning flags on fs.
func (p *Planning) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&p.Catalog.Region, "region", "", "AWS region whose instance types and prices to use (default: the nodes' topology.kubernetes.io/region, else "+plan.DefaultRegion+")")
	fs.StringVar(&p.Catalog.InstanceTypesFile, "instance-types", "", "YAML or JSON file of instance types and offerings that replaces the embedded catalog")
	fs.Float64Var(&p.Catalog.Model.VMMemoryOverheadPercent, "vm-memory-overhead-percent", 0.075, "share of advertised memory the hypervisor keeps")
	fs.Int64Var(&p.Catalog.Model.MaxPods, "max-pods", 110, "cap on the ENI-limited pods per node")
	fs.StringSliceVar(&p.Default.CapacityTypes, "capacity-type", []string{"on-demand"}, "capacity types of the default NodePool (on-demand, spot), used when there is no NodePool")
	fs.StringSliceVar(&p.Default.InstanceFamilies, "instance-family", nil, "instance families of the default NodePool (e.g. m7i,c7g), in place of its instance categories c, m, r of generation > 2")
	fs.StringSliceVar(&p.Default.Architectures, "arch", nil, "CPU architectures of the default NodePool (amd64, arm64; repeatable or comma-separated); amd64 when empty, every architecture when empty with --all-instance-types or --instance-family")
	fs.BoolVar(&p.Default.AllInstanceTypes, "all-instance-types", false, "let the default NodePool use every instance type of the catalog (every category, generation and architecture, burstable types included), not only Karpenter's general-purpose c, m, r")
	fs.BoolVar(&p.Default.NoEKSDaemonSets, "no-eks-daemonsets", false, "plan manifests that have no DaemonSets without the ones EKS runs on every node (aws-node, kube-proxy, eks-pod-identity-agent)")
}

// Validate checks the planning flags before anything is read.
func (p *Planning) Validate() error {
	if v := p.Catalog.Model.VMMemoryOverheadPercent; v < 0 || v >= 1 {
		return fmt.Errorf("--vm-memory-overhead-percent %v: must be at least 0 and below 1", v)
	}
	if p.Catalog.Model.MaxPods < 0 {
		return fmt.Errorf("--max-pods %d: must not be negative", p.Catalog.Model.MaxPods)
	}
	return p.Default.Validate()
}

// Cluster is a live cluster resolved from the kubeconfig flags.
type Cluster struct {
	// RESTConfig has DefaultRequestTimeout when --request-timeout is unset.
	RESTConfig *rest.Config
	// Namespace is -n, else the context's namespace, else "default".
	Namespace string
	// Context is the kubeconfig context in use (--context, else the
	// current one).
	Context string
}

// ResolveCluster resolves the kubeconfig flags of getter into a cluster.
// Without any kubeconfig it returns clientcmd.ErrEmptyConfig rather than
// client-go's fallback to http://localhost:8080, which would hide the real
// problem behind a connection error.
func ResolveCluster(getter genericclioptions.RESTClientGetter) (*Cluster, error) {
	cfg, err := getter.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	loader := getter.ToRawKubeConfigLoader()
	raw, rawErr := loader.RawConfig()
	if rawErr == nil && len(raw.Clusters) == 0 && cfg.Host == defaultHost {
		return nil, clientcmd.ErrEmptyConfig
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		return nil, err
	}
	c := &Cluster{RESTConfig: cfg, Namespace: ns}
	if rawErr == nil {
		c.Context = raw.CurrentContext
	}
	if cf, ok := getter.(*genericclioptions.ConfigFlags); ok && cf.Context != nil && *cf.Context != "" {
		c.Context = *cf.Context
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultRequestTimeout
	}
	return c, nil
}

// NoInputError is the error of a command given neither manifests nor a
// usable cluster; why is what ResolveCluster returned (nil when no
// kubeconfig flags exist at all).
func NoInputError(why error) error {
	const msg = "no input: pass manifests with -f FILE, -f DIR or -f -, or point at a cluster with --kubeconfig or --context"
	if why != nil && !clientcmd.IsEmptyConfig(why) {
		return fmt.Errorf(msg+" (the kubeconfig cannot be used: %w)", why)
	}
	return errors.New(msg + " (no kubeconfig found)")
}
