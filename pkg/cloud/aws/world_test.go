package aws

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws/ec2test"
)

const (
	testRegion    = "us-east-1"
	testCluster   = "test-cluster"
	testK8s       = "1.33"
	testSecretKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	testAccessKey = "AKIAIOSFODNN7EXAMPLE"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Step(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// world is a provider wired to an ec2test server with a small, realistic
// account: five instance types in three zones, subnets in two of them, a
// security group, AL2023 images for both architectures behind the public
// SSM parameters, and one EC2NodeClass.
type world struct {
	srv      *ec2test.Server
	p        *Provider
	clock    *clock
	reg      *prometheus.Registry
	logs     *syncBuffer
	classes  map[string]*v1alpha1.EC2NodeClass
	classMu  sync.Mutex
	endpoint string
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) add(line string) { s.mu.Lock(); s.b.WriteString(line + "\n"); s.mu.Unlock() }
func (s *syncBuffer) String() string  { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

type worldOption func(*Options)

func newWorld(t *testing.T, opts ...worldOption) *world {
	t.Helper()
	clk := &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	srv := ec2test.New(testRegion)
	srv.Now = clk.Now
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	for _, it := range []ec2test.InstanceType{
		{Name: "m5.large", VCPUs: 2, MemoryMiB: 8192, Arch: "x86_64", MaxENIs: 3, IPv4PerENI: 10, Spot: true, Zones: zones, OnDemandPrice: 0.096},
		{Name: "m5.xlarge", VCPUs: 4, MemoryMiB: 16384, Arch: "x86_64", MaxENIs: 4, IPv4PerENI: 15, Spot: true, Zones: zones, OnDemandPrice: 0.192},
		{Name: "c5.large", VCPUs: 2, MemoryMiB: 4096, Arch: "x86_64", MaxENIs: 3, IPv4PerENI: 10, Spot: true, Zones: zones, OnDemandPrice: 0.085},
		{Name: "m6g.large", VCPUs: 2, MemoryMiB: 8192, Arch: "arm64", MaxENIs: 3, IPv4PerENI: 10, Spot: true, Zones: zones, OnDemandPrice: 0.077},
		{Name: "r5.large", VCPUs: 2, MemoryMiB: 16384, Arch: "x86_64", MaxENIs: 3, IPv4PerENI: 10, Spot: false, Zones: zones[:2], OnDemandPrice: 0.126},
	} {
		srv.AddInstanceType(it)
	}
	spot := map[string]float64{"m5.large": 0.040, "m5.xlarge": 0.080, "c5.large": 0.035, "m6g.large": 0.030}
	for typ, price := range spot {
		for i, z := range zones {
			srv.SetSpotPrice(typ, z, price+float64(i)*0.001)
		}
	}
	discovery := map[string]string{"karpenter.sh/discovery": testCluster}
	srv.AddSubnet(ec2test.Subnet{ID: "subnet-aaa", Zone: "us-east-1a", ZoneID: "use1-az1", VpcID: "vpc-1", AvailableIPs: 100, Tags: discovery})
	srv.AddSubnet(ec2test.Subnet{ID: "subnet-bbb", Zone: "us-east-1b", ZoneID: "use1-az2", VpcID: "vpc-1", AvailableIPs: 200, Tags: discovery})
	srv.AddSubnet(ec2test.Subnet{ID: "subnet-bb2", Zone: "us-east-1b", ZoneID: "use1-az2", VpcID: "vpc-1", AvailableIPs: 50, Tags: discovery})
	srv.AddSubnet(ec2test.Subnet{ID: "subnet-ccc", Zone: "us-east-1c", ZoneID: "use1-az3", VpcID: "vpc-1", AvailableIPs: 300, Tags: map[string]string{"Name": "private-c"}})
	srv.AddSecurityGroup(ec2test.SecurityGroup{ID: "sg-node", Name: "eks-node", Tags: discovery})
	srv.AddSecurityGroup(ec2test.SecurityGroup{ID: "sg-other", Name: "other"})
	created := clk.Now().Add(-24 * time.Hour)
	srv.AddImage(ec2test.Image{ID: "ami-al2023amd64", Name: "amazon-eks-node-al2023-x86_64-standard-1.33-v20260501", Owner: "amazon", Arch: "x86_64", Created: created})
	srv.AddImage(ec2test.Image{ID: "ami-al2023arm64", Name: "amazon-eks-node-al2023-arm64-standard-1.33-v20260501", Owner: "amazon", Arch: "arm64", Created: created})
	srv.AddImage(ec2test.Image{ID: "ami-old", Name: "amazon-eks-node-al2023-x86_64-standard-1.33-v20250101", Owner: "amazon", Arch: "x86_64", Created: created.Add(-300 * 24 * time.Hour)})
	srv.AddImage(ec2test.Image{ID: "ami-custom", Name: "team-node-image", Owner: "self", Arch: "x86_64", Created: created, Tags: map[string]string{"team": "infra"}})
	srv.SetParameter("/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id", "ami-al2023amd64")
	srv.SetParameter("/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/arm64/standard/recommended/image_id", "ami-al2023arm64")

	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	w := &world{srv: srv, clock: clk, reg: prometheus.NewRegistry(), logs: &syncBuffer{}, classes: map[string]*v1alpha1.EC2NodeClass{}, endpoint: hs.URL}
	w.classes["default"] = defaultClass()
	o := Options{
		ClusterName:       testCluster,
		ClusterEndpoint:   "https://ABCDEF.gr7.us-east-1.eks.amazonaws.com",
		ClusterCABundle:   "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
		KubernetesVersion: testK8s,
		Region:            testRegion,
		Endpoint:          hs.URL,
		Credentials:       credentials.NewStaticCredentialsProvider(testAccessKey, testSecretKey, ""),
		RequestTimeout:    10 * time.Second,
		RetryMaxBackoff:   5 * time.Millisecond,
		RefreshInterval:   -1,
		Now:               clk.Now,
		NodeClasses: func(_ context.Context, name string) (*v1alpha1.EC2NodeClass, error) {
			w.classMu.Lock()
			defer w.classMu.Unlock()
			nc, ok := w.classes[name]
			if !ok {
				return nil, fmt.Errorf("ec2nodeclass %q not found", name)
			}
			return nc.DeepCopy(), nil
		},
		Logger:     funcr.New(func(prefix, args string) { w.logs.add(prefix + " " + args) }, funcr.Options{Verbosity: 10}),
		Registerer: w.reg,
	}
	for _, fn := range opts {
		fn(&o)
	}
	p, err := New(context.Background(), o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	w.p = p
	return w
}

func (w *world) setClass(nc *v1alpha1.EC2NodeClass) {
	w.classMu.Lock()
	defer w.classMu.Unlock()
	w.classes[nc.Name] = nc
}

func defaultClass() *v1alpha1.EC2NodeClass {
	discovery := map[string]string{"karpenter.sh/discovery": testCluster}
	return &v1alpha1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 1},
		Spec: v1alpha1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []v1alpha1.SubnetSelectorTerm{{Tags: discovery}},
			SecurityGroupSelectorTerms: []v1alpha1.SecurityGroupSelectorTerm{{Tags: discovery}},
			AMISelectorTerms:           []v1alpha1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       "KarpenterNodeRole-test",
			Tags:                       map[string]string{"team": "platform"},
		},
	}
}

// claim returns a NodeClaim of pool "default" asking for cpu and memory,
// with extra requirements.
func claim(name, cpu, memory string, reqs ...v1alpha1.NodeSelectorRequirement) *v1alpha1.NodeClaim {
	return &v1alpha1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{
			v1alpha1.LabelNodePool: "default", v1alpha1.KarpenterLabelNodePool: "default", "team": "platform",
		}},
		Spec: v1alpha1.NodeClaimSpec{
			Requirements: reqs,
			Resources: v1alpha1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
			}},
			NodeClassRef: v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "EC2NodeClass", Name: "default"},
		},
	}
}

func req(key string, op v1alpha1.NodeSelectorOperator, values ...string) v1alpha1.NodeSelectorRequirement {
	return v1alpha1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func onDemand() v1alpha1.NodeSelectorRequirement {
	return req(v1alpha1.LabelCapacityType, v1alpha1.NodeSelectorOpIn, "on-demand")
}

func counter(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	return testutil.ToFloat64(c)
}
