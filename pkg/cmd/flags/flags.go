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

// AddFlags registers the planning flags on fs (plan.Catalog's and
// plan.DefaultPool's AddFlags).
func (p *Planning) AddFlags(fs *pflag.FlagSet) {
	p.Catalog.AddFlags(fs)
	p.Default.AddFlags(fs)
}

// Validate checks the planning flags before anything is read.
func (p *Planning) Validate() error {
	if err := p.Catalog.Validate(); err != nil {
		return err
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
