// Package aws is the EC2 cloud provider: it launches the nodes of NodeClaims
// as EC2 instances with aws-sdk-go-v2 (CreateFleet, one instant fleet per
// NodeClaim), resolves EC2NodeClasses (subnets, security groups, images),
// keeps launch templates per distinct configuration, and serves instance
// types and offerings from the EC2 API, the Pricing API and the spot price
// history, falling back to the embedded catalog for anything they lack.
//
// Tests run the real SDK clients against ec2test, an in-process server
// speaking the EC2 Query protocol.
package aws

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/catalog"
)

// Defaults.
const (
	DefaultRefreshInterval     = 12 * time.Hour
	DefaultUnavailableFor      = 3 * time.Minute
	DefaultRequestTimeout      = 30 * time.Second
	DefaultRetryMaxAttempts    = 8
	DefaultRetryMaxBackoff     = 20 * time.Second
	DefaultNodeClassResolveTTL = 5 * time.Minute
	DefaultClusterServiceCIDR  = "10.100.0.0/16"
	maxInstanceTypes           = 60
	pricingRegionDefault       = "us-east-1"
	launchTemplateNamePrefix   = "rightsize"
)

// NodeClassGetter returns the EC2NodeClass of the given name, e.g. from the
// operator's informer cache, or nil and no error when it does not exist.
type NodeClassGetter func(ctx context.Context, name string) (*v1alpha1.EC2NodeClass, error)

// Options configure the provider. ClusterName is required; everything else
// has a default.
type Options struct {
	// ClusterName names the cluster: it tags every instance and launch
	// template, scopes List, and goes into the node's user data.
	ClusterName string
	// ClusterEndpoint is the API server URL the nodes join, e.g.
	// https://XXXX.gr7.us-east-1.eks.amazonaws.com.
	ClusterEndpoint string
	// ClusterCABundle is the cluster's certificate authority, base64
	// encoded PEM (what `aws eks describe-cluster` calls
	// certificateAuthority.data).
	ClusterCABundle string
	// ClusterServiceCIDR is the cluster's service CIDR, needed by AL2023's
	// nodeadm (10.100.0.0/16 when empty).
	ClusterServiceCIDR string
	// KubernetesVersion is the cluster's minor version, e.g. "1.33"; it
	// picks the images of AMI aliases (al2023@latest …).
	KubernetesVersion string

	// Region is the AWS region; empty means the SDK's usual chain
	// (AWS_REGION, the shared config, IMDS).
	Region string
	// Endpoint, when set, is the base URL for EC2, SSM and Pricing alike
	// (for tests and private endpoints). Without it the SDK's own
	// resolution applies, including AWS_ENDPOINT_URL_EC2 and friends.
	Endpoint string
	// PricingRegion is where the Pricing API is asked (us-east-1 when
	// empty; it exists in few regions).
	PricingRegion string
	// Credentials overrides the SDK's default credential chain.
	Credentials aws.CredentialsProvider
	// HTTPClient overrides the SDK's HTTP client.
	HTTPClient *http.Client

	// RequestTimeout bounds each API call, retries included (30s when zero).
	RequestTimeout time.Duration
	// RetryMaxAttempts is the most attempts of one call (8 when zero).
	RetryMaxAttempts int
	// RetryMaxBackoff caps the delay between attempts (20s when zero).
	RetryMaxBackoff time.Duration

	// RefreshInterval is how often instance types and prices are
	// refreshed in the background (12h when zero; negative disables the
	// background loop, leaving Refresh to the caller).
	RefreshInterval time.Duration
	// UnavailableFor is how long an offering that failed with insufficient
	// capacity is avoided (3m when zero).
	UnavailableFor time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	// NodeClasses finds EC2NodeClasses by name for Create and InstanceTypes.
	NodeClasses NodeClassGetter
	// NodeModel turns instance types into allocatable resources.
	NodeModel cloud.NodeModel
	// Logger receives structured logs; secrets are never logged.
	Logger logr.Logger
	// Registerer, when set, gets the provider's metrics.
	Registerer prometheus.Registerer
}

// Provider is the EC2 implementation of cloud.CloudProvider. It is safe for
// concurrent use.
type Provider struct {
	opts    Options
	region  string
	cfg     aws.Config
	ec2     *ec2.Client
	ssm     *ssm.Client
	pricing *pricing.Client
	catalog *catalog.Catalog
	log     logr.Logger
	metrics *metrics

	unavailable *UnavailableOfferings

	mu          sync.RWMutex
	apiTypes    map[string]cloud.InstanceType // from DescribeInstanceTypes; nil until the first success
	apiZones    map[string][]string           // type → zones, from DescribeInstanceTypeOfferings
	regionZones []string
	odPrices    map[string]float64            // type → USD/h
	spotPrices  map[string]map[string]float64 // type → zone → USD/h
	typesAt     time.Time
	odAt        time.Time
	spotAt      time.Time

	ncMu      sync.Mutex
	resolved  map[string]resolvedClass // node class name → last resolution
	subnetIPs sync.Map                 // subnet ID → free IPv4 addresses (int32), as last seen

	ltMu         sync.Mutex
	templates    map[string]string    // launch template name → ID
	templateUsed map[string]time.Time // launch template name → last use

	instMu    sync.Mutex
	instances map[string]ec2types.Instance // instance ID → the cluster's instance, as last listed for IsDrifted
	instAt    time.Time
}

var _ cloud.CloudProvider = (*Provider)(nil)

// New builds the provider: it loads the SDK configuration (credential chain,
// region, endpoints, adaptive retries), seeds instance types and prices from
// the embedded catalog, refreshes them once from the APIs (failures are
// logged and counted, not fatal), and, unless RefreshInterval is negative,
// keeps refreshing them until ctx is done.
func New(ctx context.Context, o Options) (*Provider, error) {
	if o.ClusterName == "" {
		return nil, errors.New("aws: the cluster name is required (it tags and finds the instances this operator owns)")
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.RetryMaxAttempts == 0 {
		o.RetryMaxAttempts = DefaultRetryMaxAttempts
	}
	if o.RetryMaxBackoff == 0 {
		o.RetryMaxBackoff = DefaultRetryMaxBackoff
	}
	if o.RefreshInterval == 0 {
		o.RefreshInterval = DefaultRefreshInterval
	}
	if o.UnavailableFor == 0 {
		o.UnavailableFor = DefaultUnavailableFor
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ClusterServiceCIDR == "" {
		o.ClusterServiceCIDR = DefaultClusterServiceCIDR
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	cfg, err := loadConfig(ctx, o)
	if err != nil {
		return nil, err
	}
	if cfg.Region == "" {
		return nil, errors.New("aws: no region: set --region, AWS_REGION or a region in the shared config")
	}
	cat, err := catalog.Load()
	if err != nil {
		return nil, fmt.Errorf("aws: %w", err)
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("aws: registering metrics: %w", err)
	}
	p := &Provider{
		opts:      o,
		region:    cfg.Region,
		cfg:       cfg,
		catalog:   cat,
		log:       o.Logger.WithValues("cloud", "aws", "region", cfg.Region),
		metrics:   m,
		resolved:  map[string]resolvedClass{},
		templates: map[string]string{},
	}
	p.unavailable = NewUnavailableOfferings(o.UnavailableFor, o.Now)
	p.ec2 = ec2.NewFromConfig(cfg, func(eo *ec2.Options) {
		if o.Endpoint != "" {
			eo.BaseEndpoint = aws.String(o.Endpoint)
		}
	})
	p.ssm = ssm.NewFromConfig(cfg, func(so *ssm.Options) {
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
	})
	p.pricing = pricing.NewFromConfig(cfg, func(po *pricing.Options) {
		po.Region = pricingRegion(o.PricingRegion, cfg.Region)
		if o.Endpoint != "" {
			po.BaseEndpoint = aws.String(o.Endpoint)
		}
	})
	p.seedFromCatalog()
	p.Refresh(ctx)
	if o.RefreshInterval > 0 {
		go p.refreshLoop(ctx)
	}
	return p, nil
}

// pricingRegion picks where to call the Pricing API: the option, else the
// endpoint closest to the cluster's region among those that exist.
func pricingRegion(opt, region string) string {
	if opt != "" {
		return opt
	}
	switch {
	case len(region) >= 3 && region[:3] == "ap-":
		return "ap-south-1"
	case len(region) >= 3 && (region[:3] == "eu-" || region[:3] == "me-" || region[:3] == "af-"):
		return "eu-central-1"
	}
	return pricingRegionDefault
}

// loadConfig loads the SDK configuration: the default credential chain and
// region, adaptive retries, and the HTTP client.
func loadConfig(ctx context.Context, o Options) (aws.Config, error) {
	lo := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithRetryer(func() aws.Retryer {
			return retry.NewAdaptiveMode(func(ao *retry.AdaptiveModeOptions) {
				ao.StandardOptions = append(ao.StandardOptions, func(so *retry.StandardOptions) {
					so.MaxAttempts = o.RetryMaxAttempts
					so.MaxBackoff = o.RetryMaxBackoff
					so.Backoff = retry.NewExponentialJitterBackoff(o.RetryMaxBackoff)
				})
			})
		}),
	}
	if o.Region != "" {
		lo = append(lo, awsconfig.WithRegion(o.Region))
	}
	if o.Credentials != nil {
		lo = append(lo, awsconfig.WithCredentialsProvider(o.Credentials))
	}
	if o.HTTPClient != nil {
		lo = append(lo, awsconfig.WithHTTPClient(o.HTTPClient))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("aws: loading the SDK configuration: %w", err)
	}
	return cfg, nil
}

// Name implements cloud.CloudProvider.
func (p *Provider) Name() string { return "aws" }

// Region is the provider's region.
func (p *Provider) Region() string { return p.region }

// AWSConfig is the SDK configuration the provider's clients are built from
// (credential chain, region, retries, HTTP client), for clients of other
// services of the same account, such as the interruption queue's SQS
// client. Options.Endpoint is not in it: each service's endpoint resolves
// on its own (AWS_ENDPOINT_URL_SQS, …).
func (p *Provider) AWSConfig() aws.Config { return p.cfg.Copy() }

// Unavailable is the cache of offerings recently refused for lack of
// capacity.
func (p *Provider) Unavailable() *UnavailableOfferings { return p.unavailable }

// call runs one API call under the request timeout.
func (p *Provider) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, p.opts.RequestTimeout)
}

func (p *Provider) refreshLoop(ctx context.Context) {
	t := time.NewTicker(p.opts.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.Refresh(ctx)
		}
	}
}

// Refresh refreshes instance types, offerings, on-demand and spot prices
// from the APIs. What fails keeps its last good data (the embedded catalog
// at first); each failure is logged and counted in
// rightsize_aws_refresh_failures_total{source}. It returns the failures
// joined.
func (p *Provider) Refresh(ctx context.Context) error {
	return errors.Join(p.RefreshInstanceTypes(ctx), p.RefreshOnDemandPrices(ctx), p.RefreshSpotPrices(ctx))
}
