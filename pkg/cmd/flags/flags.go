// Package flags holds what more than one command shares around its flags:
// the resolution of the kubeconfig flags (genericclioptions.ConfigFlags)
// into a cluster, the error without input, and running Complete, Validate
// and Run. Each package binds its own options' flags (explain.Options,
// tui.Options, plan.Catalog, … AddFlags); the commands copy nothing.
package flags

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// DefaultRequestTimeout bounds each request to a live cluster when
// --request-timeout is not set.
const DefaultRequestTimeout = 30 * time.Second

// defaultHost is where client-go points when no kubeconfig exists.
const defaultHost = "http://localhost:8080"

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
