// Package cloudprovider builds the cloud provider of the operator and of the
// TUI's direct launches (tui --cloud) from the commands' flags.
package cloudprovider

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/sim"
)

// Options are what a cloud provider is built from. The operator and the
// TUI's direct launches (tui --cloud) build theirs with the same function,
// so that an instance launched by either carries the same cluster, pool and
// NodeClaim tags and the other recognises it.
type Options struct {
	// Cloud is sim or aws.
	Cloud string
	// ClusterName tags every instance; List and garbage collection see only
	// this cluster's.
	ClusterName string
	// Region: for sim, the catalog region (sim.DefaultRegion when empty);
	// for aws, empty means the SDK's chain (AWS_REGION, shared config, IMDS).
	Region string
	// InstanceTypesFile and RegistrationDelay are for sim.
	InstanceTypesFile string
	RegistrationDelay time.Duration
	// ClusterEndpoint is the API server aws nodes join (default: the
	// REST config's host); KubernetesVersion picks AMI aliases (aws; the API server's
	// major.minor when empty).
	ClusterEndpoint   string
	KubernetesVersion string
	Model             cloud.NodeModel
	Logger            logr.Logger
	// Registerer, when set, gets the aws provider's metrics.
	Registerer prometheus.Registerer
}

// New builds the sim or aws provider. cfg is the cluster's REST
// config (aws nodes join its server with its CA); c reads node classes and,
// for sim, creates the Nodes.
func New(ctx context.Context, o Options, cfg *rest.Config, c client.Client) (cloud.CloudProvider, error) {
	switch o.Cloud {
	case "sim":
		return sim.New(sim.Options{
			Client: c, ClusterName: o.ClusterName, Region: o.Region, InstanceTypesFile: o.InstanceTypesFile,
			Model: o.Model, RegistrationDelay: o.RegistrationDelay,
		})
	case "aws":
	default:
		return nil, fmt.Errorf("--cloud %q: want sim or aws", o.Cloud)
	}
	endpoint := o.ClusterEndpoint
	if endpoint == "" {
		endpoint = cfg.Host
	}
	ca := cfg.CAData
	var err error
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("reading the cluster CA: %w", err)
		}
	}
	version := o.KubernetesVersion
	if version == "" {
		if version, err = serverMinorVersion(cfg); err != nil {
			return nil, fmt.Errorf("reading the API server's version for AMI aliases: %w; pass --kubernetes-version", err)
		}
	}
	return aws.New(ctx, aws.Options{
		ClusterName: o.ClusterName, ClusterEndpoint: endpoint, ClusterCABundle: base64.StdEncoding.EncodeToString(ca),
		KubernetesVersion: version, Region: o.Region, NodeModel: o.Model,
		Logger: o.Logger.WithName("aws"), Registerer: o.Registerer,
		NodeClasses: func(ctx context.Context, name string) (*v1alpha1.EC2NodeClass, error) {
			var nc v1alpha1.EC2NodeClass
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &nc); err != nil {
				if apierrors.IsNotFound(err) {
					return nil, nil // the provider says the class does not exist
				}
				return nil, err
			}
			return &nc, nil
		},
	})
}

// serverMinorVersion is the API server's major.minor version, e.g. "1.33"
// (EKS reports minors such as "33+").
func serverMinorVersion(cfg *rest.Config) (string, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return "", err
	}
	return v.Major + "." + strings.TrimRight(v.Minor, "+"), nil
}

// DefaultSimClusterName names the cluster for clouds where the name only
// labels simulated instances.
const DefaultSimClusterName = "rightsize"

// AddFlags binds the cloud flags of `kubectl rightsize operator` to o and
// sets their defaults (the TUI names its --cloud and --cluster-name
// differently). Region's default is the simulated cloud's; with aws, the
// command clears it when --region is not given, for the SDK's chain.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Cloud, "cloud", "sim", "cloud provider: sim (kwok nodes) or aws")
	fs.StringVar(&o.ClusterName, "cluster-name", "", "name of this cluster; instances are tagged with it and garbage collection touches only its own (required with --cloud aws; default "+DefaultSimClusterName+" with sim)")
	fs.StringVar(&o.Region, "region", sim.DefaultRegion, "region whose instance types and prices to use (aws: default AWS_REGION or the shared config)")
	fs.StringVar(&o.ClusterEndpoint, "cluster-endpoint", "", "API server URL new nodes join (aws; default: the kubeconfig's server)")
	fs.StringVar(&o.KubernetesVersion, "kubernetes-version", "", "the cluster's minor version, e.g. 1.33, for AMI aliases (aws; default: the API server's)")
	fs.StringVar(&o.InstanceTypesFile, "instance-types", "", "YAML or JSON file of instance types and offerings that replaces the embedded catalog (sim)")
	fs.DurationVar(&o.RegistrationDelay, "registration-delay", 0, "how long simulated nodes take to register, for SimNodeClasses that set none (sim)")
}
