package aws

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws/ec2test"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/catalog"
)

func offering(types []cloud.InstanceType, name, zone, ct string) (cloud.Offering, bool) {
	for _, it := range types {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == ct {
				return o, true
			}
		}
	}
	return cloud.Offering{}, false
}

func TestInstanceTypesComeFromPagedAPIsMergedWithPrices(t *testing.T) {
	w := newWorld(t)
	w.srv.SetPageSize(2)
	if err := w.p.Refresh(context.Background()); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	if got := w.srv.Calls("DescribeInstanceTypes"); got < 3 {
		t.Errorf("DescribeInstanceTypes called %d times; with 5 types and pages of 2 it needs 3 pages", got)
	}
	if got := w.srv.Calls("DescribeInstanceTypeOfferings"); got < 7 {
		t.Errorf("DescribeInstanceTypeOfferings called %d times, want every page of 14 offerings", got)
	}
	types, err := w.p.InstanceTypes(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range types {
		names = append(names, it.Name)
	}
	if want := []string{"c5.large", "m5.large", "m5.xlarge", "m6g.large", "r5.large"}; !slices.Equal(names, want) {
		t.Fatalf("types = %v, want %v (the API's list, not the catalog's)", names, want)
	}
	tests := []struct {
		typ, zone, ct string
		price         float64
		ok            bool
	}{
		{"m5.large", "us-east-1a", cloud.CapacityTypeOnDemand, 0.096, true},
		{"m5.large", "us-east-1c", cloud.CapacityTypeSpot, 0.042, true},
		{"m6g.large", "us-east-1b", cloud.CapacityTypeSpot, 0.031, true},
		{"r5.large", "us-east-1a", cloud.CapacityTypeSpot, 0, false}, // not sold as spot
		{"r5.large", "us-east-1c", cloud.CapacityTypeOnDemand, 0, false},
	}
	for _, tc := range tests {
		o, ok := offering(types, tc.typ, tc.zone, tc.ct)
		if ok != tc.ok || (ok && o.Price != tc.price) {
			t.Errorf("%s %s %s: got %v %v, want %v %v", tc.typ, tc.zone, tc.ct, o.Price, ok, tc.price, tc.ok)
		}
	}
	m6g := types[slices.IndexFunc(types, func(it cloud.InstanceType) bool { return it.Name == "m6g.large" })]
	if m6g.Architecture != "arm64" || m6g.CPU != 2000 || m6g.Memory != 8<<30 || m6g.MaxENIs != 3 {
		t.Errorf("m6g.large shape = %+v", m6g)
	}
}

func TestInstanceTypesOfAPoolFollowItsNodeClass(t *testing.T) {
	w := newWorld(t)
	pool := &v1alpha1.NodePool{}
	pool.Name = "default"
	pool.Spec.Template.Spec.NodeClassRef = v1alpha1.NodeClassReference{Kind: "EC2NodeClass", Name: "default"}
	types, err := w.p.InstanceTypes(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range types {
		for _, o := range it.Offerings {
			if o.Zone == "us-east-1c" {
				t.Errorf("%s offered in us-east-1c, which has no selected subnet", it.Name)
			}
		}
	}
	// Only an x86 image: arm64 types disappear.
	nc := defaultClass()
	nc.Generation = 2
	nc.Spec.AMISelectorTerms = []v1alpha1.AMISelectorTerm{{ID: "ami-al2023amd64"}}
	nc.Spec.AMIFamily = aws.String(FamilyAL2023)
	w.setClass(nc)
	types, err = w.p.InstanceTypes(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(types, func(it cloud.InstanceType) bool { return it.Architecture == "arm64" }) {
		t.Errorf("arm64 types offered without an arm64 image")
	}
}

func TestThrottlingIsRecoveredByRetries(t *testing.T) {
	for _, action := range []string{"DescribeInstanceTypes", "DescribeSpotPriceHistory", "ssm:GetParameter", "pricing:GetProducts"} {
		t.Run(action, func(t *testing.T) {
			// Adaptive mode slows the client down after a throttle (about
			// 2s a retry here), hence two throttles and parallel subtests.
			t.Parallel()
			w := newWorld(t)
			before := w.srv.Calls(action)
			w.srv.Throttle(action, 2)
			if err := w.p.Refresh(context.Background()); err != nil {
				t.Fatalf("Refresh after 2 throttles: %v", err)
			}
			if _, err := w.p.Resolve(context.Background(), defaultClass()); err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if got := w.srv.Calls(action) - before; got < 3 {
				t.Errorf("%s called %d times, want the 2 throttled attempts and a successful one", action, got)
			}
			if got := counter(t, w.p.metrics.refreshFailures.WithLabelValues("types")) + counter(t, w.p.metrics.refreshFailures.WithLabelValues("spot")) +
				counter(t, w.p.metrics.refreshFailures.WithLabelValues("on_demand")); got != 0 {
				t.Errorf("refresh failures counted: %v", got)
			}
		})
	}
}

func TestServerErrorsAreRetriedAndClientErrorsAreNot(t *testing.T) {
	w := newWorld(t)
	w.srv.FailNext("DescribeSubnets", 2, http.StatusInternalServerError, "InternalError")
	if _, err := w.p.Resolve(context.Background(), defaultClass()); err != nil {
		t.Fatalf("Resolve after two 500s: %v", err)
	}
	before := w.srv.Calls("CreateFleet")
	w.srv.FailNext("CreateFleet", 1, http.StatusForbidden, "UnauthorizedOperation")
	_, err := w.p.Create(context.Background(), claim("denied", "1", "1Gi", onDemand()))
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "UnauthorizedOperation" {
		t.Fatalf("Create error = %v, want the UnauthorizedOperation error document", err)
	}
	if cloud.IsInsufficientCapacity(err) {
		t.Errorf("an authorization error reported as insufficient capacity")
	}
	if got := w.srv.Calls("CreateFleet") - before; got != 1 {
		t.Errorf("CreateFleet called %d times; a 403 must not be retried", got)
	}
}

func TestDryRunIsRefusedWithDryRunOperation(t *testing.T) {
	w := newWorld(t)
	_, err := w.p.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{DryRun: aws.Bool(true)})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "DryRunOperation" {
		t.Fatalf("err = %v, want DryRunOperation", err)
	}
	var re *smithyhttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusPreconditionFailed {
		t.Fatalf("err = %v, want HTTP 412", err)
	}
}

func TestResolveSelectsSubnetsGroupsAndImages(t *testing.T) {
	w := newWorld(t)
	tests := []struct {
		name     string
		mutate   func(*v1alpha1.EC2NodeClass)
		subnets  []string
		groups   []string
		images   []string
		notReady string
	}{
		{name: "tags and alias", subnets: []string{"subnet-aaa", "subnet-bb2", "subnet-bbb"}, groups: []string{"sg-node"}, images: []string{"ami-al2023amd64", "ami-al2023arm64"}},
		{name: "ids, name and wildcard tag", mutate: func(nc *v1alpha1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []v1alpha1.SubnetSelectorTerm{{ID: "subnet-ccc"}, {Tags: map[string]string{"Name": "*"}}}
			nc.Spec.SecurityGroupSelectorTerms = []v1alpha1.SecurityGroupSelectorTerm{{Name: "other"}, {ID: "sg-node"}}
			nc.Spec.AMISelectorTerms = []v1alpha1.AMISelectorTerm{{Name: "amazon-eks-node-al2023-x86_64-*", Owner: "amazon"}}
			nc.Spec.AMIFamily = aws.String(FamilyAL2023)
		}, subnets: []string{"subnet-ccc"}, groups: []string{"sg-node", "sg-other"}, images: []string{"ami-al2023amd64"}},
		{name: "image tags", mutate: func(nc *v1alpha1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []v1alpha1.AMISelectorTerm{{Tags: map[string]string{"team": "infra"}}}
			nc.Spec.AMIFamily = aws.String(FamilyCustom)
		}, subnets: []string{"subnet-aaa", "subnet-bb2", "subnet-bbb"}, groups: []string{"sg-node"}, images: []string{"ami-custom"}},
		{name: "no subnet", mutate: func(nc *v1alpha1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []v1alpha1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "elsewhere"}}}
		}, notReady: "SubnetsNotFound"},
		{name: "unpublished alias", mutate: func(nc *v1alpha1.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []v1alpha1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
		}, notReady: "AMIsNotFound"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nc := defaultClass()
			if tc.mutate != nil {
				tc.mutate(nc)
			}
			st, err := w.p.Resolve(context.Background(), nc)
			ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
			if tc.notReady != "" {
				var nr *cloud.NodeClassNotReadyError
				if !errors.As(err, &nr) || ready == nil || ready.Status != "False" || ready.Reason != tc.notReady {
					t.Fatalf("err = %v, Ready = %+v; want not ready with %s", err, ready, tc.notReady)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if ready == nil || ready.Status != "True" {
				t.Errorf("Ready = %+v", ready)
			}
			var subnets, groups, images []string
			for _, s := range st.Subnets {
				subnets = append(subnets, s.ID)
			}
			for _, g := range st.SecurityGroups {
				groups = append(groups, g.ID)
			}
			for _, im := range st.AMIs {
				images = append(images, im.ID)
			}
			slices.Sort(subnets)
			slices.Sort(images)
			if !slices.Equal(subnets, tc.subnets) || !slices.Equal(groups, tc.groups) || !slices.Equal(images, tc.images) {
				t.Errorf("got subnets %v groups %v images %v; want %v %v %v", subnets, groups, images, tc.subnets, tc.groups, tc.images)
			}
			if st.InstanceProfile != "KarpenterNodeRole-test" {
				t.Errorf("instance profile = %q", st.InstanceProfile)
			}
		})
	}
}

func TestCreateLaunchesTheCheapestOfferingAndTagsIt(t *testing.T) {
	w := newWorld(t)
	var hooked []ec2test.Instance
	w.srv.OnLaunch = func(in ec2test.Instance) { hooked = append(hooked, in) }
	nc, err := w.p.Create(context.Background(), claim("default-abcde", "1", "2Gi", onDemand()))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	// m6g.large (arm64, $0.077) is the cheapest on-demand type that fits.
	if nc.Status.InstanceType != "m6g.large" || nc.Status.CapacityType != "on-demand" || nc.Status.PricePerHour != "0.077" || nc.Status.ImageID != "ami-al2023arm64" {
		t.Errorf("status = %+v", nc.Status)
	}
	if !strings.HasPrefix(nc.Status.ProviderID, "aws:///us-east-1") || !strings.Contains(nc.Status.ProviderID, "/i-") {
		t.Errorf("providerID = %q", nc.Status.ProviderID)
	}
	if nc.Labels[cloud.LabelArch] != "arm64" || nc.Labels["topology.kubernetes.io/zone"] != nc.Status.Zone || nc.Labels["team"] != "platform" {
		t.Errorf("labels = %v", nc.Labels)
	}
	if cpu := nc.Status.Allocatable.Cpu(); cpu.MilliValue() <= 1000 || cpu.MilliValue() >= 2000 {
		t.Errorf("allocatable cpu = %v", cpu)
	}
	running := w.srv.Running()
	if len(running) != 1 || len(hooked) != 1 || hooked[0].ProviderID() != nc.Status.ProviderID {
		t.Fatalf("running = %v, hooked = %v", running, hooked)
	}
	in := running[0]
	for k, v := range map[string]string{TagCluster: testCluster, TagNodePool: "default", TagNodeClaim: "default-abcde",
		"kubernetes.io/cluster/" + testCluster: "owned", "team": "platform", TagNodeClass: "default"} {
		if in.Tags[k] != v || in.VolumeTags[k] != v {
			t.Errorf("tag %s: instance %q, volume %q, want %q", k, in.Tags[k], in.VolumeTags[k], v)
		}
	}
	fleet := w.srv.Requests("CreateFleet")[0]
	if fleet["ClientToken"][0] != "uid-default-abcde" || fleet["Type"][0] != "instant" ||
		fleet["OnDemandOptions.AllocationStrategy"][0] != "lowest-price" || fleet["TargetCapacitySpecification.DefaultTargetCapacityType"][0] != "on-demand" {
		t.Errorf("fleet request = %v", fleet)
	}
	// The subnet with more free addresses is chosen in us-east-1b.
	for k, v := range fleet {
		if strings.HasSuffix(k, ".SubnetId") && v[0] == "subnet-bb2" {
			t.Errorf("override %s uses subnet-bb2, which has fewer free addresses than subnet-bbb", k)
		}
	}
}

func TestCreateIsIdempotentPerNodeClaim(t *testing.T) {
	w := newWorld(t)
	c := claim("default-idem", "1", "2Gi", onDemand())
	first, err := w.p.Create(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	second, err := w.p.Create(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if first.Status.ProviderID != second.Status.ProviderID || len(w.srv.Running()) != 1 || w.srv.Calls("CreateFleet") != 1 {
		t.Errorf("second Create gave %s (first %s), %d instances, %d fleets", second.Status.ProviderID, first.Status.ProviderID, len(w.srv.Running()), w.srv.Calls("CreateFleet"))
	}
}

// When the search by tag misses a fresh instance (EC2's eventual
// consistency), the retried CreateFleet carries the same ClientToken and
// gets the same instance back rather than a second one.
func TestCreateRetriedBeforeTheInstanceIsListedReusesTheClientToken(t *testing.T) {
	w := newWorld(t)
	w.srv.SetListLag(time.Hour)
	c := claim("default-lagged", "1", "2Gi", onDemand())
	first, err := w.p.Create(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	second, err := w.p.Create(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	tokens := map[string]bool{}
	for _, r := range w.srv.Requests("CreateFleet") {
		tokens[r["ClientToken"][0]] = true
	}
	if first.Status.ProviderID != second.Status.ProviderID || len(w.srv.Running()) != 1 || w.srv.Calls("CreateFleet") != 2 || len(tokens) != 1 || !tokens[string(c.UID)] {
		t.Errorf("second Create gave %s (first %s): %d instances, %d fleets, client tokens %v; want one instance from two calls with the claim's UID",
			second.Status.ProviderID, first.Status.ProviderID, len(w.srv.Running()), w.srv.Calls("CreateFleet"), tokens)
	}
}

func TestCreateUsesSpotWhenAllowed(t *testing.T) {
	w := newWorld(t)
	nc, err := w.p.Create(context.Background(), claim("default-spot", "1", "2Gi", req(cloud.LabelArch, v1alpha1.NodeSelectorOpIn, "amd64")))
	if err != nil {
		t.Fatal(err)
	}
	if nc.Status.CapacityType != "spot" || nc.Status.InstanceType != "c5.large" || nc.Status.Zone != "us-east-1a" {
		t.Errorf("status = %+v, want the cheapest amd64 spot pool c5.large in us-east-1a", nc.Status)
	}
	fleet := w.srv.Requests("CreateFleet")[0]
	if fleet["SpotOptions.AllocationStrategy"][0] != "price-capacity-optimized" {
		t.Errorf("spot strategy = %v", fleet["SpotOptions.AllocationStrategy"])
	}
	if in := w.srv.Running()[0]; in.CapacityType != ec2test.Spot {
		t.Errorf("instance capacity type = %s", in.CapacityType)
	}
	got, err := w.p.Get(context.Background(), nc.Status.ProviderID)
	if err != nil || got.Status.CapacityType != "spot" || got.Name != "default-spot" {
		t.Errorf("Get = %+v, %v", got, err)
	}
}

func TestInsufficientCapacityFallsBackAndIsAvoidedForThreeMinutes(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	// The cheapest pools refuse: the same fleet call lands on the next cheapest.
	w.srv.RefuseCapacity("m6g.large", "us-east-1a", ec2test.OnDemand, "")
	w.srv.RefuseCapacity("m6g.large", "us-east-1b", ec2test.OnDemand, "")
	nc, err := w.p.Create(ctx, claim("default-ice", "1", "2Gi", onDemand()))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if nc.Status.InstanceType != "c5.large" || w.srv.Calls("CreateFleet") != 1 {
		t.Errorf("launched %s after %d fleet calls; want c5.large in the same call", nc.Status.InstanceType, w.srv.Calls("CreateFleet"))
	}
	if got := counter(t, w.p.metrics.insufficientCapacity.WithLabelValues("m6g.large", "us-east-1a", "on-demand", "InsufficientInstanceCapacity")); got != 1 {
		t.Errorf("insufficient capacity counted %v times for m6g.large/us-east-1a", got)
	}
	types, _ := w.p.InstanceTypes(ctx, nil)
	if _, ok := offering(types, "m6g.large", "us-east-1a", cloud.CapacityTypeOnDemand); ok {
		t.Errorf("refused offering still offered")
	}
	if _, ok := offering(types, "m6g.large", "us-east-1a", cloud.CapacityTypeSpot); !ok {
		t.Errorf("the spot offering of the same type and zone was dropped too")
	}

	// A claim that only the refused pool satisfies: an insufficient-capacity
	// error, and the next attempt does not even call EC2.
	only := claim("default-only", "1", "2Gi", onDemand(),
		req("node.kubernetes.io/instance-type", v1alpha1.NodeSelectorOpIn, "m6g.large"),
		req("topology.kubernetes.io/zone", v1alpha1.NodeSelectorOpIn, "us-east-1a", "us-east-1b"))
	fleets := w.srv.Calls("CreateFleet")
	_, err = w.p.Create(ctx, only)
	if !cloud.IsInsufficientCapacity(err) || w.srv.Calls("CreateFleet") != fleets {
		t.Fatalf("err = %v after %d new fleet calls; want insufficient capacity without asking EC2", err, w.srv.Calls("CreateFleet")-fleets)
	}

	// Three minutes later the pool is tried again, and it has capacity now.
	w.srv.AllowCapacity("m6g.large", "us-east-1a", ec2test.OnDemand)
	w.clock.Step(DefaultUnavailableFor + time.Second)
	nc, err = w.p.Create(ctx, only)
	if err != nil || nc.Status.InstanceType != "m6g.large" || nc.Status.Zone != "us-east-1a" {
		t.Fatalf("after 3m: %+v, %v", nc.Status, err)
	}
}

func TestInsufficientCapacityOnEveryOfferingIsReported(t *testing.T) {
	w := newWorld(t)
	only := claim("default-none", "1", "2Gi", onDemand(), req("node.kubernetes.io/instance-type", v1alpha1.NodeSelectorOpIn, "c5.large"))
	for _, z := range []string{"us-east-1a", "us-east-1b"} {
		w.srv.RefuseCapacity("c5.large", z, ec2test.OnDemand, "InsufficientInstanceCapacity")
	}
	_, err := w.p.Create(context.Background(), only)
	var ice *cloud.InsufficientCapacityError
	if !errors.As(err, &ice) || len(ice.Offerings) != 2 || !slices.Contains(ice.Offerings, "c5.large/us-east-1a/on-demand") {
		t.Fatalf("err = %v", err)
	}
	if w.p.Unavailable().Len() != 2 {
		t.Errorf("unavailable = %d, want 2", w.p.Unavailable().Len())
	}
}

func TestSpotPriceChangeIsSeenAfterRefresh(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	types, _ := w.p.InstanceTypes(ctx, nil)
	if o, _ := offering(types, "c5.large", "us-east-1a", cloud.CapacityTypeSpot); o.Price != 0.035 {
		t.Fatalf("spot price before = %v", o.Price)
	}
	w.clock.Step(time.Minute)
	w.srv.SetSpotPrice("c5.large", "us-east-1a", 0.09)
	w.clock.Step(time.Minute)
	if err := w.p.RefreshSpotPrices(ctx); err != nil {
		t.Fatal(err)
	}
	types, _ = w.p.InstanceTypes(ctx, nil)
	if o, _ := offering(types, "c5.large", "us-east-1a", cloud.CapacityTypeSpot); o.Price != 0.09 {
		t.Errorf("spot price after = %v, want 0.09", o.Price)
	}
	// The next launch prefers what is now cheapest.
	nc, err := w.p.Create(ctx, claim("default-after", "1", "2Gi", req(cloud.LabelArch, v1alpha1.NodeSelectorOpIn, "amd64")))
	if err != nil || nc.Status.InstanceType != "c5.large" || nc.Status.Zone != "us-east-1b" {
		t.Errorf("launched %+v, %v; want c5.large in us-east-1b", nc.Status, err)
	}
}

func TestPricingAPIDownKeepsEmbeddedPrices(t *testing.T) {
	w := newWorld(t, func(o *Options) { o.RetryMaxAttempts = 2 })
	ctx := context.Background()
	w.srv.FailNext("pricing:GetProducts", 10, http.StatusServiceUnavailable, "ServiceUnavailableException")
	w.srv.SetOnDemandPrice("m5.large", 0.5) // what the API would say if it were up
	if err := w.p.RefreshOnDemandPrices(ctx); err == nil {
		t.Fatal("refresh succeeded with the Pricing API down")
	}
	if got := counter(t, w.p.metrics.refreshFailures.WithLabelValues("on_demand")); got != 1 {
		t.Errorf("failures counted = %v", got)
	}
	if !strings.Contains(w.logs.String(), "refreshing on-demand prices failed") {
		t.Errorf("no log line for the failed refresh")
	}
	types, _ := w.p.InstanceTypes(ctx, nil)
	// The embedded snapshot's us-east-1 on-demand price of m5.large.
	if o, ok := offering(types, "m5.large", "us-east-1a", cloud.CapacityTypeOnDemand); !ok || o.Price != 0.096 {
		t.Errorf("m5.large on-demand = %v %v, want the snapshot's 0.096", o.Price, ok)
	}
	for _, it := range types {
		if !slices.ContainsFunc(it.Offerings, func(o cloud.Offering) bool { return o.CapacityType == cloud.CapacityTypeOnDemand && o.Price > 0 }) {
			t.Errorf("%s has no on-demand price", it.Name)
		}
	}
	// Back up: the API's price wins.
	w.srv.FailNext("pricing:GetProducts", 0, 0, "")
	for w.srv.Calls("pricing:GetProducts") < 100 { // drain the remaining faults
		if err := w.p.RefreshOnDemandPrices(ctx); err == nil {
			break
		}
	}
	types, _ = w.p.InstanceTypes(ctx, nil)
	if o, _ := offering(types, "m5.large", "us-east-1a", cloud.CapacityTypeOnDemand); o.Price != 0.5 {
		t.Errorf("m5.large on-demand after recovery = %v, want 0.5", o.Price)
	}
}

func TestLaunchTemplatesRequireIMDSv2AndAreReused(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	amd64 := req(cloud.LabelArch, v1alpha1.NodeSelectorOpIn, "amd64")
	if _, err := w.p.Create(ctx, claim("default-lt1", "1", "2Gi", onDemand(), amd64)); err != nil {
		t.Fatal(err)
	}
	// One template per distinct max-pods value among the overrides (29 and 58 here).
	first := w.srv.LaunchTemplates()
	if len(first) != 2 {
		t.Fatalf("%d launch templates, want 2", len(first))
	}
	if _, err := w.p.Create(ctx, claim("default-lt2", "1", "2Gi", onDemand(), amd64)); err != nil {
		t.Fatal(err)
	}
	lts := w.srv.LaunchTemplates()
	if len(lts) != 2 || w.srv.Calls("CreateLaunchTemplate") != 2 {
		t.Fatalf("%d launch templates after %d creates; want the same two, reused", len(lts), w.srv.Calls("CreateLaunchTemplate"))
	}
	d := lts[0].Data
	if d.HTTPTokens != "required" || d.HopLimit != 1 || d.HTTPEndpoint != "enabled" {
		t.Errorf("metadata options = tokens %q hop %d endpoint %q", d.HTTPTokens, d.HopLimit, d.HTTPEndpoint)
	}
	if d.InstanceProfile != "KarpenterNodeRole-test" || !slices.Equal(d.SecurityGroupIDs, []string{"sg-node"}) {
		t.Errorf("profile %q groups %v", d.InstanceProfile, d.SecurityGroupIDs)
	}
	if len(d.BlockDevices) != 1 || d.BlockDevices[0].VolumeSize != 20 || d.BlockDevices[0].VolumeType != "gp3" || d.BlockDevices[0].Encrypted == nil || !*d.BlockDevices[0].Encrypted {
		t.Errorf("block devices = %+v", d.BlockDevices)
	}
	if lts[0].Tags[TagCluster] != testCluster || lts[0].Tags[TagNodeClass] != "default" {
		t.Errorf("launch template tags = %v", lts[0].Tags)
	}
	ud, err := base64.StdEncoding.DecodeString(d.UserData)
	if err != nil || !strings.Contains(string(ud), "kind: NodeConfig") || !strings.Contains(string(ud), "name: "+testCluster) ||
		!strings.Contains(string(ud), "key: "+cloud.UnregisteredTaintKey) {
		t.Errorf("user data = %s, %v", ud, err)
	}

	// The class opts out of IMDSv2 and raises the hop limit: a new template says so.
	nc := defaultClass()
	nc.Generation = 2
	nc.Spec.MetadataOptions = &v1alpha1.MetadataOptions{HTTPTokens: aws.String("optional"), HTTPPutResponseHopLimit: aws.Int64(2)}
	w.setClass(nc)
	if _, err := w.p.Create(ctx, claim("default-lt3", "1", "2Gi", onDemand(), amd64)); err != nil {
		t.Fatal(err)
	}
	lts = w.srv.LaunchTemplates()
	if len(lts) != 4 {
		t.Fatalf("%d templates, want 4", len(lts))
	}
	for _, lt := range lts[2:] {
		if lt.Data.HTTPTokens != "optional" || lt.Data.HopLimit != 2 {
			t.Errorf("new template metadata = %q hop %d", lt.Data.HTTPTokens, lt.Data.HopLimit)
		}
	}

	// Pruning keeps what is in use; deleting the class's templates removes them.
	if n, err := w.p.PruneLaunchTemplates(ctx, time.Hour); err != nil || n != 0 {
		t.Errorf("prune deleted %d, %v; want 0 (both in use)", n, err)
	}
	w.clock.Step(2 * time.Hour)
	if _, err := w.p.Create(ctx, claim("default-lt4", "1", "2Gi", onDemand(), amd64)); err != nil {
		t.Fatal(err)
	}
	if n, err := w.p.PruneLaunchTemplates(ctx, time.Hour); err != nil || n != 2 {
		t.Errorf("prune deleted %d, %v; want the two stale templates", n, err)
	}
	if n, err := w.p.DeleteLaunchTemplates(ctx, "default"); err != nil || n != 2 || len(w.srv.LaunchTemplates()) != 0 {
		t.Errorf("delete deleted %d, %v; %d left", n, err, len(w.srv.LaunchTemplates()))
	}
}

func TestListGetAndDelete(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	nc, err := w.p.Create(ctx, claim("default-list", "1", "2Gi", onDemand()))
	if err != nil {
		t.Fatal(err)
	}
	leaked := w.srv.LaunchInstance(ec2test.Instance{Type: "m5.large", Zone: "us-east-1b", ImageID: "ami-al2023amd64",
		Tags: map[string]string{TagCluster: testCluster, TagNodeClaim: "gone", TagNodePool: "default"}})
	w.srv.LaunchInstance(ec2test.Instance{Type: "m5.large", Zone: "us-east-1b", Tags: map[string]string{TagCluster: "another-cluster"}})
	w.srv.SetPageSize(1)
	list, err := w.p.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list {
		ids = append(ids, c.Name+"="+c.Status.ProviderID)
	}
	want := []string{"default-list=" + nc.Status.ProviderID, "gone=" + leaked.ProviderID()}
	if !slices.Equal(ids, want) {
		t.Fatalf("List = %v, want %v", ids, want)
	}
	if list[1].Labels[v1alpha1.LabelNodePool] != "default" || list[1].CreationTimestamp.IsZero() || list[1].Status.PricePerHour != "0.096" {
		t.Errorf("leaked view = %+v", list[1])
	}
	if err := w.p.Delete(ctx, list[1]); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := w.p.Delete(ctx, list[1]); !cloud.IsNotFound(err) {
		t.Errorf("second Delete = %v, want NotFound", err)
	}
	if _, err := w.p.Get(ctx, leaked.ProviderID()); !cloud.IsNotFound(err) {
		t.Errorf("Get terminated = %v, want NotFound", err)
	}
	if _, err := w.p.Get(ctx, "aws:///us-east-1a/i-00000000000000bad"); !cloud.IsNotFound(err) {
		t.Errorf("Get unknown = %v, want NotFound from the error document", err)
	}
	foreign := &v1alpha1.NodeClaim{}
	foreign.Status.ProviderID = w.srv.Running()[1].ProviderID()
	if err := w.p.Delete(ctx, foreign); err == nil || cloud.IsNotFound(err) {
		t.Errorf("Delete of another cluster's instance = %v, want a refusal", err)
	}
}

// A claim whose launch status was never written (the operator died right
// after CreateFleet) has no provider ID; deleting it must still find and
// terminate its instance by the NodeClaim tag, then report NotFound, or the
// claim's finalizer would never go.
func TestDeleteOfAClaimWithoutStatusFindsItsInstanceByTag(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	var terminated []string
	w.srv.OnTerminate = func(in ec2test.Instance) { terminated = append(terminated, in.ID) }
	c := claim("default-crashed", "1", "2Gi", onDemand())
	launched, err := w.p.Create(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := ParseProviderID(launched.Status.ProviderID)
	if err := w.p.Delete(ctx, c); err != nil {
		t.Fatalf("Delete without a provider ID: %v", err)
	}
	if len(w.srv.Running()) != 0 || !slices.Equal(terminated, []string{id}) {
		t.Errorf("running %v, OnTerminate saw %v; want %s terminated", w.srv.Running(), terminated, id)
	}
	if err := w.p.Delete(ctx, c); !cloud.IsNotFound(err) {
		t.Errorf("second Delete = %v, want NotFound", err)
	}
	if err := w.p.Delete(ctx, claim("never-launched", "1", "2Gi")); !cloud.IsNotFound(err) {
		t.Errorf("Delete of a claim that never launched = %v, want NotFound", err)
	}
	if len(terminated) != 1 {
		t.Errorf("OnTerminate called %d times, want once", len(terminated))
	}
}

// An instance terminated behind the provider's back (its owner, a spot
// interruption) is gone for Get, List and Delete alike.
func TestAnInstanceTerminatedElsewhereIsNotFound(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	var hooked []string
	w.srv.OnTerminate = func(in ec2test.Instance) { hooked = append(hooked, in.ID) }
	nc, err := w.p.Create(ctx, claim("default-gone", "1", "2Gi", onDemand()))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := ParseProviderID(nc.Status.ProviderID)
	if !w.srv.Terminate(id) || w.srv.Terminate(id) {
		t.Fatalf("Terminate(%s) twice: want true, then false", id)
	}
	if _, err := w.p.Get(ctx, nc.Status.ProviderID); !cloud.IsNotFound(err) {
		t.Errorf("Get = %v, want NotFound", err)
	}
	if list, err := w.p.List(ctx); err != nil || len(list) != 0 {
		t.Errorf("List = %d instances, %v; want none", len(list), err)
	}
	if err := w.p.Delete(ctx, nc); !cloud.IsNotFound(err) {
		t.Errorf("Delete = %v, want NotFound", err)
	}
	if !slices.Equal(hooked, []string{id}) {
		t.Errorf("OnTerminate saw %v, want [%s]", hooked, id)
	}
}

func TestParseProviderID(t *testing.T) {
	for _, tc := range []struct {
		in, id string
		ok     bool
	}{
		{"aws:///us-east-1a/i-0123456789abcdef0", "i-0123456789abcdef0", true},
		{"aws:///i-0123", "i-0123", true},
		{"sim://x", "", false},
		{"aws:///us-east-1a/", "", false},
		{"aws:///us-east-1a/vol-1", "", false},
	} {
		id, err := ParseProviderID(tc.in)
		if (err == nil) != tc.ok || id != tc.id {
			t.Errorf("ParseProviderID(%q) = %q, %v", tc.in, id, err)
		}
	}
}

func TestSecretsNeverReachTheLogs(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	const secret = "s3cr3t-join-token-DO-NOT-LOG"
	nc := defaultClass()
	nc.Spec.UserData = aws.String("#!/bin/bash\necho " + secret + " > /etc/token\n")
	w.setClass(nc)
	c, err := w.p.Create(ctx, claim("default-secret", "1", "2Gi", onDemand()))
	if err != nil {
		t.Fatal(err)
	}
	w.srv.RefuseCapacity("m5.large", "us-east-1a", ec2test.OnDemand, "")
	_, _ = w.p.Create(ctx, claim("default-secret2", "1", "2Gi", onDemand(), req("node.kubernetes.io/instance-type", v1alpha1.NodeSelectorOpIn, "m5.large")))
	w.srv.FailNext("pricing:GetProducts", 20, 500, "InternalError")
	_ = w.p.Refresh(ctx)
	_ = w.p.Delete(ctx, c)
	ud := w.srv.LaunchTemplates()[0].Data.UserData
	logs := w.logs.String()
	if !strings.Contains(logs, "launched instance") {
		t.Fatalf("the test captured no logs: %q", logs)
	}
	for _, s := range []string{secret, ud, ud[:40], testSecretKey, testAccessKey, base64.StdEncoding.EncodeToString([]byte(secret))} {
		if strings.Contains(logs, s) {
			t.Errorf("logs contain a secret (%.20s…)", s)
		}
	}
}

func TestNewRequiresAClusterName(t *testing.T) {
	if _, err := New(context.Background(), Options{Region: testRegion}); err == nil {
		t.Error("New without a cluster name succeeded")
	}
}

func TestServiceEndpointsComeFromTheEnvironment(t *testing.T) {
	w := newWorld(t)
	for _, v := range []string{"AWS_ENDPOINT_URL_EC2", "AWS_ENDPOINT_URL_SSM", "AWS_ENDPOINT_URL_PRICING"} {
		t.Setenv(v, w.endpoint)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", testAccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testSecretKey)
	t.Setenv("AWS_REGION", testRegion)
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	before := w.srv.Calls("DescribeInstanceTypes")
	p, err := New(context.Background(), Options{ClusterName: testCluster, RefreshInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if p.Region() != testRegion || w.srv.Calls("DescribeInstanceTypes") == before || w.srv.Calls("pricing:GetProducts") < 2 {
		t.Errorf("the provider built from the environment did not reach the server (region %q)", p.Region())
	}
}

func TestSeedAccountServesACatalogRegion(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	types, err := cat.InstanceTypes("eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	srv := ec2test.New("eu-west-1")
	srv.SeedAccount(testCluster, testK8s, types)
	var launched []string
	srv.OnLaunch = func(in ec2test.Instance) { launched = append(launched, in.ProviderID()) }
	hs := httptest.NewServer(srv)
	defer hs.Close()
	nc := defaultClass()
	p, err := New(context.Background(), Options{
		ClusterName: testCluster, ClusterEndpoint: "https://k8s.example.com", KubernetesVersion: testK8s, Region: "eu-west-1", Endpoint: hs.URL,
		Credentials: credentials.NewStaticCredentialsProvider(testAccessKey, testSecretKey, ""), RefreshInterval: -1,
		NodeClasses: func(context.Context, string) (*v1alpha1.EC2NodeClass, error) { return nc, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := p.InstanceTypes(context.Background(), nil)
	if len(all) < len(types)*9/10 {
		t.Errorf("%d types served, the catalog has %d", len(all), len(types))
	}
	c, err := p.Create(context.Background(), claim("big", "30", "100Gi", onDemand()))
	if err != nil {
		t.Fatal(err)
	}
	if len(launched) != 1 || launched[0] != c.Status.ProviderID || c.Status.Allocatable.Cpu().Value() < 30 {
		t.Errorf("launched %v for %+v", launched, c.Status)
	}
}

// TestKubeletSettingsOfTheNodeClass checks that an EC2NodeClass's kubelet
// settings size the instance types the planner sees, the claim's capacity
// and the node's user data.
func TestKubeletSettingsOfTheNodeClass(t *testing.T) {
	w := newWorld(t)
	nc := defaultClass()
	maxPods := int32(8)
	nc.Spec.Kubelet = &v1alpha1.KubeletConfiguration{MaxPods: &maxPods, KubeReserved: map[string]v1alpha1.ReservedQuantity{"memory": "1Gi"}}
	w.setClass(nc)
	ctx := context.Background()
	pool := &v1alpha1.NodePool{Spec: v1alpha1.NodePoolSpec{Template: v1alpha1.NodeClaimTemplate{Spec: v1alpha1.NodeClaimTemplateSpec{
		NodeClassRef: v1alpha1.NodeClassReference{Kind: "EC2NodeClass", Name: "default"}}}}}
	types, err := w.p.InstanceTypes(ctx, pool)
	if err != nil || len(types) == 0 {
		t.Fatalf("InstanceTypes: %d types, %v", len(types), err)
	}
	for _, it := range types {
		if pods := w.p.opts.NodeModel.Pods(&it); pods != 8 {
			t.Errorf("type %s: %d pods, want maxPods 8", it.Name, pods)
		}
	}
	claimed, err := w.p.Create(ctx, claim("default-kubelet", "1", "2Gi", onDemand()))
	if err != nil {
		t.Fatal(err)
	}
	if pods := claimed.Status.Capacity.Pods().Value(); pods != 8 {
		t.Errorf("claim capacity pods %d, want 8", pods)
	}
	ud, err := base64.StdEncoding.DecodeString(w.srv.LaunchTemplates()[0].Data.UserData)
	if err != nil || !strings.Contains(string(ud), "maxPods: 8\n") || !strings.Contains(string(ud), "kubeReserved:\n        memory: \"1Gi\"") {
		t.Errorf("user data lacks maxPods 8 and kubeReserved memory 1Gi: %v\n%s", err, ud)
	}
}
