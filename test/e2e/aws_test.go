package e2e

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/http/httptest"
	"net/mail"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws/ec2test"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/catalog"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

const (
	awsRegion    = "us-east-1"
	awsCluster   = "e2e"
	awsSecretKey = "e2eSecretAccessKey/DoNotLog+0123456789abcdef"
	// awsBootDelay is how long an instance takes from launch to its
	// kubelet registering the Node (real EC2 nodes take 30–60 s).
	awsBootDelay = 500 * time.Millisecond
	// iceReplanTarget bounds the time from a launch refused for
	// insufficient capacity to the pod Running on the next offering: one
	// batch window (500 ms), a launch, awsBootDelay and the node's opening,
	// with a margin for a loaded machine.
	iceReplanTarget = 10 * time.Second
)

// The spot offering the test account makes cheapest of its type.
const (
	awsSpotType  = "m6i.large"
	awsSpotZone  = awsRegion + "b"
	awsSpotPrice = 0.0123
)

// awsFamilies are the instance families the test account offers: a small
// slice of the region keeps DescribeInstanceTypes cheap while leaving the
// solver real choices.
var awsFamilies = []string{"c6i", "m6i", "r6i"}

// awsEnv is the control plane plus an EC2-protocol server (ec2test, run in
// the test process) whose instances join the cluster as kwok nodes.
type awsEnv struct {
	*opEnv
	srv     *ec2test.Server
	url     string
	cat     *catalog.Catalog
	caB64   string
	k8s     string // the API server's minor version, e.g. 1.37
	model   cloud.NodeModel
	tempDir string
	checked []string // operators whose logs were checked for secrets

	mu         sync.Mutex
	joined     map[string]time.Time // instance ID → when its Node was created
	terminated map[string]time.Time // instance ID → when TerminateInstances took it
	joinErrs   []string
	joins      sync.WaitGroup
}

// TestOperatorAWS runs `kubectl-rightsize operator --cloud aws` as a
// separate process against one real control plane, with the real
// aws-sdk-go-v2 clients speaking to an in-process EC2/SSM/Pricing server
// (AWS_ENDPOINT_URL_*): pending pods get instances whose "kubelets" join
// as kwok nodes from the launch template's user data; spot pools launch
// spot at the server's spot prices; deleted NodeClaims terminate their
// instances; leaked instances are collected; a refused offering falls back
// to the next; a capacity reservation is launched into before on-demand,
// and one full at launch falls back to on-demand; an instance terminated
// elsewhere is replaced; and neither a
// crash between launch and status write nor a SIGKILL mid-launch leaks or
// duplicates an instance.
func TestOperatorAWS(t *testing.T) {
	a := newAWSEnv(t, startOpEnv(t))
	t.Cleanup(func() {
		t.Logf("secrets: checked the logs of %d operator runs %v for the AWS secret key, the cluster CA and user data", len(a.checked), a.checked)
	})

	// One operator runs through the first scenarios; the crash scenario
	// starts its own.
	op := a.startAWSOperator(t, "aws-operator", nil)
	t.Run("pending pods get EC2 instances that join as nodes, and run", func(t *testing.T) { a.testProvision(t, op) })
	t.Run("a pool that allows spot launches spot at the price of the spot price history", a.testSpot)
	t.Run("deleting a NodeClaim terminates its instance and removes its node", a.testDeleteClaim)
	t.Run("an instance tagged for the cluster without a NodeClaim is garbage-collected", func(t *testing.T) { a.testGarbageCollection(t, op) })
	t.Run("a NodePool allowing c, m and r: every NodeClaim allows at least 15 types, one CreateFleet override per type and zone", a.testFlexibleLaunch)
	t.Run("insufficient capacity on the cheapest offering: the same launch lands on the next", func(t *testing.T) { a.testInsufficientCapacity(t, op) })
	t.Run("a capacity reservation of N is used before on-demand: N nodes reserved, the rest on-demand", a.testReservedFirst)
	t.Run("a reservation full by the time of its launch: refused, marked unavailable, the pod runs on-demand", func(t *testing.T) { a.testReservationFullAtLaunch(t, op) })
	t.Run("an instance terminated outside the operator is replaced", func(t *testing.T) { a.testTerminatedElsewhere(t, op) })
	op.stop()
	t.Run("every offering a NodeClaim allows refused: the claim is replanned without them", a.testReplanWhenEveryAllowedOfferingIsRefused)
	t.Run("a crash right after a launch: no duplicate instance, nothing leaked", a.testCrashAfterLaunch)
	t.Run("SIGKILL while launches are in flight: every pod runs, one instance per NodeClaim", a.testKillDuringLaunches)
	t.Run("deleting every NodeClaim terminates every instance; no secret in the logs", a.testTeardown)
}

func newAWSEnv(t *testing.T, e *opEnv) *awsEnv {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	all, err := cat.InstanceTypes(awsRegion)
	if err != nil {
		t.Fatal(err)
	}
	var offered []cloud.InstanceType
	for _, it := range all {
		family, _, _ := strings.Cut(it.Name, ".")
		if slices.Contains(awsFamilies, family) {
			offered = append(offered, it)
		}
	}
	if len(offered) == 0 {
		t.Fatalf("the catalog has no %v types in %s", awsFamilies, awsRegion)
	}
	k8s := k8sMinor(t, e)
	srv := ec2test.New(awsRegion)
	srv.SeedAccount(awsCluster, k8s, offered)
	// A spot price the embedded catalog does not have: the spot scenario
	// must find it through DescribeSpotPriceHistory (later than the seed's).
	time.Sleep(5 * time.Millisecond)
	srv.SetSpotPrice(awsSpotType, awsSpotZone, awsSpotPrice)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	ca := e.RESTConfig().CAData
	if len(ca) == 0 {
		t.Fatal("the test kubeconfig has no inline CA")
	}
	a := &awsEnv{
		opEnv: e, srv: srv, url: hs.URL, cat: cat, caB64: base64.StdEncoding.EncodeToString(ca), k8s: k8s, tempDir: t.TempDir(),
		joined: map[string]time.Time{}, terminated: map[string]time.Time{},
	}
	srv.OnLaunch = func(in ec2test.Instance) {
		a.joins.Add(1)
		go func() {
			defer a.joins.Done()
			a.boot(in)
		}()
	}
	srv.OnTerminate = func(in ec2test.Instance) {
		a.mu.Lock()
		a.terminated[in.ID] = time.Now()
		a.mu.Unlock()
	}
	t.Cleanup(a.joins.Wait)
	t.Logf("EC2 server at %s: %d instance types (%v) in %d zones", hs.URL, len(offered), awsFamilies, len(cat.Zones(awsRegion)))
	return a
}

// k8sMinor is the API server's minor version, e.g. "1.37", which picks the
// images of the al2023@latest alias.
func k8sMinor(t *testing.T, e *opEnv) string {
	t.Helper()
	v, err := e.Client().Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	return v.Major + "." + strings.TrimSuffix(v.Minor, "+")
}

// startAWSOperator runs the operator with --cloud aws, every AWS endpoint
// pointed at the test server and no AWS configuration from the machine.
func (a *awsEnv) startAWSOperator(t *testing.T, name string, env []string, args ...string) *operatorProc {
	t.Helper()
	none := filepath.Join(a.tempDir, "no-such-file")
	vars := []string{
		"AWS_ENDPOINT_URL_EC2=" + a.url, "AWS_ENDPOINT_URL_SSM=" + a.url, "AWS_ENDPOINT_URL_PRICING=" + a.url,
		"AWS_ACCESS_KEY_ID=AKIAE2ETESTKEY", "AWS_SECRET_ACCESS_KEY=" + awsSecretKey, "AWS_SESSION_TOKEN=",
		"AWS_REGION=" + awsRegion, "AWS_DEFAULT_REGION=", "AWS_PROFILE=", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + none, "AWS_SHARED_CREDENTIALS_FILE=" + none,
	}
	// No --kubernetes-version: the operator reads the API server's for
	// the al2023@latest alias.
	all := append([]string{"--cloud", "aws", "--cluster-name", awsCluster, "--leader-elect=false",
		"--gc-grace-period", "5s", "--batch-idle", "500ms"}, args...)
	p := a.startOperator(t, name, append(vars, env...), all...)
	// Before the subtest's temporary directory (and the log) goes.
	t.Cleanup(func() { p.stop(); a.checkSecrets(t, p) })
	return p
}

// boot plays the instance's kubelet: after the boot delay it reads the
// launch template's user data (AL2023 NodeConfig), checks it points at this
// cluster, and registers the Node as the kubelet would — named after the
// private DNS name, with the provider ID, the well-known labels, the
// user data's labels and taints, and the type's capacity and max pods —
// for kwok to run. An instance launched without a launch template joins
// with the defaults if it is tagged kubernetes.io/cluster/<cluster> (its
// own bootstrap, as a leaked node would), else not at all.
func (a *awsEnv) boot(in ec2test.Instance) {
	time.Sleep(awsBootDelay)
	if err := a.join(in); err != nil {
		a.mu.Lock()
		a.joinErrs = append(a.joinErrs, in.ID+": "+err.Error())
		a.mu.Unlock()
	}
}

func (a *awsEnv) join(in ec2test.Instance) error {
	if !slices.ContainsFunc(a.srv.Running(), func(r ec2test.Instance) bool { return r.ID == in.ID }) {
		return nil // terminated before it booted
	}
	it, ok := a.cat.Lookup(in.Type)
	if !ok {
		return fmt.Errorf("instance type %s is not in the catalog", in.Type)
	}
	nc := nodeConfig{}
	nc.Spec.Kubelet.Config.MaxPods = a.model.Pods(&it)
	if in.LaunchTemplateID != "" {
		i := slices.IndexFunc(a.srv.LaunchTemplates(), func(lt ec2test.LaunchTemplate) bool { return lt.ID == in.LaunchTemplateID })
		if i < 0 {
			return fmt.Errorf("launch template %s is gone", in.LaunchTemplateID)
		}
		var err error
		if nc, err = parseAL2023UserData(a.srv.LaunchTemplates()[i].Data.UserData); err != nil {
			return err
		}
		if nc.Spec.Cluster.Name != awsCluster || nc.Spec.Cluster.APIServerEndpoint != a.Host || nc.Spec.Cluster.CertificateAuthority != a.caB64 {
			return fmt.Errorf("the user data joins cluster %q at %q (CA %d bytes), not %q at %q", nc.Spec.Cluster.Name,
				nc.Spec.Cluster.APIServerEndpoint, len(nc.Spec.Cluster.CertificateAuthority), awsCluster, a.Host)
		}
	} else if in.Tags["kubernetes.io/cluster/"+awsCluster] == "" {
		return nil // someone else's instance: its kubelet joins its own cluster
	}
	labels := map[string]string{
		corev1.LabelHostname: in.PrivateDNSName, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
		corev1.LabelInstanceTypeStable: in.Type, corev1.LabelTopologyZone: in.Zone, corev1.LabelTopologyRegion: awsRegion,
	}
	if in.Arch == "arm64" {
		labels[corev1.LabelArchStable] = "arm64"
	}
	maps.Copy(labels, nc.labels())
	st := a.model.SolverType(&it, awsRegion)
	st.Capacity[solver.Pods] = nc.Spec.Kubelet.Config.MaxPods
	capacity := cloud.ResourceList(st.Capacity)
	allocatable := cloud.ResourceList(st.Capacity.Sub(st.Overhead))
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: in.PrivateDNSName, Labels: labels, Annotations: map[string]string{
			testenv.NodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0",
		}},
		Spec: corev1.NodeSpec{ProviderID: in.ProviderID(), Taints: nc.Spec.Kubelet.Config.RegisterWithTaints},
		// A kubelet registers its node with its status.
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: allocatable,
			NodeInfo: corev1.NodeSystemInfo{Architecture: labels[corev1.LabelArchStable], OperatingSystem: "linux", KubeletVersion: "v" + a.k8s + ".0"}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.Client().CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("registering node %s: %w", node.Name, err)
	}
	a.mu.Lock()
	a.joined[in.ID] = time.Now()
	a.mu.Unlock()
	return nil
}

// nodeConfig is the part of nodeadm's NodeConfig the kubelet acts on.
type nodeConfig struct {
	Spec struct {
		Cluster struct {
			Name                 string `json:"name"`
			APIServerEndpoint    string `json:"apiServerEndpoint"`
			CertificateAuthority string `json:"certificateAuthority"`
			CIDR                 string `json:"cidr"`
		} `json:"cluster"`
		Kubelet struct {
			Config struct {
				MaxPods            int64          `json:"maxPods"`
				RegisterWithTaints []corev1.Taint `json:"registerWithTaints"`
			} `json:"config"`
			Flags []string `json:"flags"`
		} `json:"kubelet"`
	} `json:"spec"`
}

// labels are the --node-labels of the kubelet flags.
func (nc nodeConfig) labels() map[string]string {
	out := map[string]string{}
	for _, f := range nc.Spec.Kubelet.Flags {
		list, ok := strings.CutPrefix(f, "--node-labels=")
		if !ok {
			continue
		}
		for kv := range strings.SplitSeq(list, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				out[k] = v
			}
		}
	}
	return out
}

// parseAL2023UserData reads the NodeConfig out of base64 MIME multi-part
// user data, as nodeadm does on boot.
func parseAL2023UserData(b64 string) (nodeConfig, error) {
	var nc nodeConfig
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nc, fmt.Errorf("user data is not base64: %w", err)
	}
	msg, err := mail.ReadMessage(bufio.NewReader(strings.NewReader(string(raw))))
	if err != nil {
		return nc, fmt.Errorf("user data is not MIME: %w", err)
	}
	_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return nc, fmt.Errorf("user data content type: %w", err)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	found := false
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nc, fmt.Errorf("user data part: %w", err)
		}
		if part.Header.Get("Content-Type") != "application/node.eks.aws" {
			continue
		}
		body, err := io.ReadAll(part)
		if err != nil {
			return nc, err
		}
		if err := yaml.Unmarshal(body, &nc); err != nil {
			return nc, fmt.Errorf("NodeConfig: %w", err)
		}
		found = true
	}
	if !found {
		return nc, errors.New("user data has no NodeConfig part")
	}
	return nc, nil
}

// ec2NodeClass creates the EC2NodeClass "default": subnets and security
// groups by the discovery tag, the al2023@latest alias, IMDS left to the
// defaults.
func (a *awsEnv) ec2NodeClass(t *testing.T) { a.ec2NodeClassNamed(t, "default", nil) }

// ec2NodeClassNamed creates an EC2NodeClass of the name, as "default"
// then as edit changes it (when not nil).
func (a *awsEnv) ec2NodeClassNamed(t *testing.T, name string, edit func(*v1alpha1.EC2NodeClassSpec)) {
	t.Helper()
	discovery := map[string]string{"karpenter.sh/discovery": awsCluster}
	nc := &v1alpha1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []v1alpha1.SubnetSelectorTerm{{Tags: discovery}},
			SecurityGroupSelectorTerms: []v1alpha1.SecurityGroupSelectorTerm{{Tags: discovery}},
			AMISelectorTerms:           []v1alpha1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       "KarpenterNodeRole-e2e",
			Tags:                       map[string]string{"team": "e2e"},
		},
	}
	if edit != nil {
		edit(&nc.Spec)
	}
	if err := a.c.Create(context.Background(), nc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// awsPool creates a NodePool on the EC2NodeClass "default".
func (a *awsEnv) awsPool(t *testing.T, name string, reqs ...v1alpha1.NodeSelectorRequirement) {
	t.Helper()
	a.ec2NodeClass(t)
	a.awsPoolOn(t, "default", name, reqs...)
}

// awsPoolOn creates a NodePool on an EC2NodeClass that exists.
func (a *awsEnv) awsPoolOn(t *testing.T, class, name string, reqs ...v1alpha1.NodeSelectorRequirement) {
	t.Helper()
	np := &v1alpha1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.NodePoolSpec{Template: v1alpha1.NodeClaimTemplate{Spec: v1alpha1.NodeClaimTemplateSpec{
			NodeClassRef: v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "EC2NodeClass", Name: class},
			Requirements: reqs,
		}}},
	}
	if err := a.c.Create(context.Background(), np); err != nil {
		t.Fatal(err)
	}
}

// clusterInstances are the live instances tagged for the cluster.
func (a *awsEnv) clusterInstances() []ec2test.Instance {
	return slices.DeleteFunc(a.srv.Running(), func(in ec2test.Instance) bool { return in.Tags[aws.TagCluster] != awsCluster })
}

// awsNodes are the Nodes with an aws:// provider ID.
func (a *awsEnv) awsNodes(t *testing.T) []corev1.Node {
	t.Helper()
	var l corev1.NodeList
	if err := a.c.List(context.Background(), &l); err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(l.Items, func(n corev1.Node) bool { return !strings.HasPrefix(n.Spec.ProviderID, "aws:///") })
}

// checkNoLeak checks that the cloud and the cluster agree: every live
// instance of the cluster belongs to a NodeClaim (by provider ID, or by
// name for a claim whose status is not written yet), no claim has two,
// every launched claim has a live instance, and Nodes exist only for live
// instances.
func (a *awsEnv) checkNoLeak(t *testing.T) {
	t.Helper()
	claims := a.claims(t, "")
	byID, byName := map[string]bool{}, map[string]bool{}
	for _, c := range claims {
		byID[c.Status.ProviderID] = true
		byName[c.Name] = true
	}
	live := map[string]bool{}
	perClaim := map[string]int{}
	for _, in := range a.clusterInstances() {
		live[in.ProviderID()] = true
		if perClaim[in.Tags[aws.TagNodeClaim]]++; perClaim[in.Tags[aws.TagNodeClaim]] == 2 {
			t.Errorf("NodeClaim %s has more than one live instance", in.Tags[aws.TagNodeClaim])
		}
		if !byID[in.ProviderID()] && !byName[in.Tags[aws.TagNodeClaim]] {
			t.Errorf("instance %s (%s, claim tag %q) is leaked: no NodeClaim owns it", in.ID, in.Type, in.Tags[aws.TagNodeClaim])
		}
	}
	for _, c := range claims {
		// A claim being deleted whose instance is gone waits only for its
		// finalizer, which the operator removes once the node is gone too.
		if c.Status.ProviderID != "" && !live[c.Status.ProviderID] && c.DeletionTimestamp == nil {
			t.Errorf("NodeClaim %s points at %s, which is not running", c.Name, c.Status.ProviderID)
		}
	}
	for _, n := range a.awsNodes(t) {
		if !live[n.Spec.ProviderID] && n.DeletionTimestamp == nil {
			t.Errorf("node %s stays for %s, which is not running", n.Name, n.Spec.ProviderID)
		}
	}
}

// waitInstanceGone waits until the instance is terminated on the server and
// its Node is gone, and returns when each happened.
func (a *awsEnv) waitInstanceGone(t *testing.T, id string, timeout time.Duration) (terminated, nodeGone time.Time) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		a.mu.Lock()
		at, ok := a.terminated[id]
		a.mu.Unlock()
		if ok && terminated.IsZero() {
			terminated = at
		}
		if nodeGone.IsZero() && !slices.ContainsFunc(a.awsNodes(t), func(n corev1.Node) bool { return strings.HasSuffix(n.Spec.ProviderID, "/"+id) }) {
			nodeGone = time.Now()
		}
		return !terminated.IsZero() && !nodeGone.IsZero(), nil
	})
	if err != nil {
		t.Fatalf("instance %s: terminated %v, node gone %v after %s", id, !terminated.IsZero(), !nodeGone.IsZero(), timeout)
	}
	return terminated, nodeGone
}

func instanceByProviderID(ins []ec2test.Instance, providerID string) (ec2test.Instance, bool) {
	i := slices.IndexFunc(ins, func(in ec2test.Instance) bool { return in.ProviderID() == providerID })
	if i < 0 {
		return ec2test.Instance{}, false
	}
	return ins[i], true
}

func (a *awsEnv) testProvision(t *testing.T, op *operatorProc) {
	ctx := context.Background()
	ns := a.namespace(t, "aws-provision")
	a.awsPool(t, "general", req(v1alpha1.LabelCapacityType, "on-demand"), req(cloud.LabelInstanceFamily, awsFamilies...))
	fleetsBefore := a.srv.Calls("CreateFleet")

	var pods []*corev1.Pod
	for i := range 3 {
		pods = append(pods, opPod(ns, fmt.Sprintf("web-%d", i), "1500m", "3Gi", map[string]string{v1alpha1.LabelNodePool: "general"}))
	}
	pods = append(pods, opPod(ns, "cache-0", "1", "24Gi", map[string]string{v1alpha1.LabelNodePool: "general"}))
	start := time.Now()
	a.createPods(t, pods)
	a.waitRunning(t, ns, len(pods), 90*time.Second)
	running := time.Since(start)

	claims := a.claims(t, "general")
	instances := a.clusterInstances()
	nodes := a.awsNodes(t)
	if len(claims) == 0 || len(instances) != len(claims) || len(nodes) != len(claims) {
		t.Fatalf("%d NodeClaims, %d instances, %d nodes; want as many of each", len(claims), len(instances), len(nodes))
	}
	var launchToJoin, firstLaunch time.Duration
	var shapes []string
	for _, c := range claims {
		in, ok := instanceByProviderID(instances, c.Status.ProviderID)
		if !ok {
			t.Fatalf("NodeClaim %s has provider ID %q, which no running instance has", c.Name, c.Status.ProviderID)
		}
		shapes = append(shapes, in.Type+"/"+in.Zone)
		if d := in.LaunchTime.Sub(start); firstLaunch == 0 || d < firstLaunch {
			firstLaunch = d
		}
		a.mu.Lock()
		launchToJoin = max(launchToJoin, a.joined[in.ID].Sub(in.LaunchTime))
		a.mu.Unlock()
		for k, v := range map[string]string{
			aws.TagCluster: awsCluster, "kubernetes.io/cluster/" + awsCluster: "owned", aws.TagNodeClaim: c.Name,
			aws.TagNodePool: "general", aws.TagNodeClass: "default", "team": "e2e", "Name": c.Name,
		} {
			if in.Tags[k] != v {
				t.Errorf("instance %s tag %s=%q, want %q", in.ID, k, in.Tags[k], v)
			}
			if in.VolumeTags[k] != v {
				t.Errorf("instance %s volume tag %s=%q, want %q", in.ID, k, in.VolumeTags[k], v)
			}
		}
		if in.ClientToken != string(c.UID) {
			t.Errorf("instance %s was launched with client token %q, want the NodeClaim's UID %s", in.ID, in.ClientToken, c.UID)
		}
		if in.CapacityType != ec2test.OnDemand || in.ImageID != "ami-al2023x8664" {
			t.Errorf("instance %s: %s on %s, want on-demand on the al2023@latest image", in.ID, in.CapacityType, in.ImageID)
		}
		lt := slices.IndexFunc(a.srv.LaunchTemplates(), func(lt ec2test.LaunchTemplate) bool { return lt.ID == in.LaunchTemplateID })
		if lt < 0 {
			t.Fatalf("instance %s: launch template %s not found", in.ID, in.LaunchTemplateID)
		}
		d := a.srv.LaunchTemplates()[lt].Data
		if d.HTTPTokens != "required" || d.HopLimit != 1 || !slices.Contains(d.SecurityGroupIDs, "sg-nodes") || d.InstanceProfile != "KarpenterNodeRole-e2e" {
			t.Errorf("launch template %s: httpTokens %q, hop limit %d, groups %v, profile %q; want IMDSv2 required, hop limit 1, sg-nodes, the role",
				in.LaunchTemplateID, d.HTTPTokens, d.HopLimit, d.SecurityGroupIDs, d.InstanceProfile)
		}
		// What the kubelet registers with comes from the user data.
		if nc, err := parseAL2023UserData(d.UserData); err != nil {
			t.Errorf("launch template %s: %v", in.LaunchTemplateID, err)
		} else if !slices.ContainsFunc(nc.Spec.Kubelet.Config.RegisterWithTaints, func(tn corev1.Taint) bool { return tn.Key == cloud.UnregisteredTaintKey }) ||
			nc.labels()[v1alpha1.LabelNodePool] != "general" || nc.Spec.Kubelet.Config.MaxPods != c.Status.Capacity.Pods().Value() {
			t.Errorf("launch template %s: user data registers with taints %v, labels %v, max pods %d; want the unregistered taint, the pool label and the claim's %s pods",
				in.LaunchTemplateID, nc.Spec.Kubelet.Config.RegisterWithTaints, nc.labels(), nc.Spec.Kubelet.Config.MaxPods, c.Status.Capacity.Pods())
		}
		var node corev1.Node
		if err := a.c.Get(ctx, client.ObjectKey{Name: c.Status.NodeName}, &node); err != nil {
			t.Fatalf("NodeClaim %s: node %q: %v", c.Name, c.Status.NodeName, err)
		}
		if node.Spec.ProviderID != in.ProviderID() || node.Labels[v1alpha1.LabelNodePool] != "general" ||
			node.Labels[corev1.LabelInstanceTypeStable] != in.Type || node.Labels[corev1.LabelTopologyZone] != in.Zone {
			t.Errorf("node %s: providerID %s, labels %v; want %s of pool general, %s in %s", node.Name, node.Spec.ProviderID, node.Labels, in.ProviderID(), in.Type, in.Zone)
		}
		if slices.ContainsFunc(node.Spec.Taints, func(tn corev1.Taint) bool { return tn.Key == cloud.UnregisteredTaintKey }) {
			t.Errorf("node %s still has the unregistered taint it registered with", node.Name)
		}
	}
	if fleets := a.fleetsFor(claims); fleets != len(claims) {
		t.Errorf("%d CreateFleet calls for %d NodeClaims, want one each (%d calls in all since the scenario began)", fleets, len(claims), a.srv.Calls("CreateFleet")-fleetsBefore)
	}
	a.mu.Lock()
	if len(a.joinErrs) > 0 {
		t.Errorf("kubelets could not join: %v", a.joinErrs)
	}
	a.mu.Unlock()
	// Everything came from the test server: types, offerings, on-demand
	// and spot prices, the image alias; nothing fell back for lack of it.
	for _, msg := range []string{"refreshing instance types failed; keeping the last good list",
		"refreshing on-demand prices failed; keeping the last good prices", "refreshing spot prices failed; keeping the last good prices"} {
		if r := op.records(msg); len(r) > 0 {
			t.Errorf("operator logged %q: %v", msg, r[0])
		}
	}
	for _, action := range []string{"DescribeInstanceTypes", "DescribeInstanceTypeOfferings", "DescribeSpotPriceHistory", "pricing:GetProducts",
		"ssm:GetParameter", "DescribeSubnets", "DescribeSecurityGroups", "DescribeImages", "CreateLaunchTemplate"} {
		if a.srv.Calls(action) == 0 {
			t.Errorf("the operator never called %s on the test server", action)
		}
	}
	slices.Sort(shapes)
	t.Logf("provision: %d pods pending → Running in %s over %d instances %v; first CreateFleet launch %s after the pods; launch → node registered ≤ %s (boot delay %s)",
		len(pods), running.Round(time.Millisecond), len(claims), shapes, firstLaunch.Round(time.Millisecond), launchToJoin.Round(time.Millisecond), awsBootDelay)
	a.checkNoLeak(t)
}

func (a *awsEnv) testSpot(t *testing.T) {
	ctx := context.Background()
	ns := a.namespace(t, "aws-spot")
	a.awsPool(t, "spot", req(v1alpha1.LabelCapacityType, "spot", "on-demand"), req(solver.LabelInstanceType, awsSpotType))
	start := time.Now()
	a.createPods(t, []*corev1.Pod{opPod(ns, "spot-0", "1", "2Gi", map[string]string{v1alpha1.LabelNodePool: "spot"})})
	a.waitRunning(t, ns, 1, 60*time.Second)
	took := time.Since(start)
	claims := a.claims(t, "spot")
	if len(claims) != 1 {
		t.Fatalf("%d NodeClaims of pool spot, want 1", len(claims))
	}
	c := claims[0]
	want := strconv.FormatFloat(awsSpotPrice, 'f', -1, 64)
	if c.Status.CapacityType != cloud.CapacityTypeSpot || c.Status.Zone != awsSpotZone || c.Status.PricePerHour != want {
		t.Errorf("NodeClaim %s: %s in %s at $%s/h; want spot in %s at $%s/h from the spot price history", c.Name, c.Status.CapacityType, c.Status.Zone,
			c.Status.PricePerHour, awsSpotZone, want)
	}
	in, ok := instanceByProviderID(a.clusterInstances(), c.Status.ProviderID)
	if !ok || in.CapacityType != ec2test.Spot {
		t.Errorf("instance of NodeClaim %s: %+v; want a running spot instance", c.Name, in)
	}
	var fleet map[string][]string
	for _, r := range a.srv.Requests("CreateFleet") {
		if slices.Contains(r["ClientToken"], string(c.UID)) {
			fleet = r
		}
	}
	if got := fleet["TargetCapacitySpecification.DefaultTargetCapacityType"]; !slices.Equal(got, []string{"spot"}) {
		t.Errorf("CreateFleet DefaultTargetCapacityType %v, want spot", got)
	}
	if got := fleet["SpotOptions.AllocationStrategy"]; !slices.Equal(got, []string{"price-capacity-optimized"}) {
		t.Errorf("CreateFleet SpotOptions.AllocationStrategy %v, want price-capacity-optimized", got)
	}
	var node corev1.Node
	if err := a.c.Get(ctx, client.ObjectKey{Name: c.Status.NodeName}, &node); err != nil || node.Labels[v1alpha1.LabelCapacityType] != "spot" {
		t.Errorf("node %s: capacity type label %q, %v; want spot", c.Status.NodeName, node.Labels[v1alpha1.LabelCapacityType], err)
	}
	t.Logf("spot: %s spot in %s at $%s/h (the price set on the server only); pod Running %s after creation",
		awsSpotType, c.Status.Zone, c.Status.PricePerHour, took.Round(time.Millisecond))
	a.checkNoLeak(t)
}

func (a *awsEnv) testDeleteClaim(t *testing.T) {
	ctx := context.Background()
	claims := a.claims(t, "general")
	if len(claims) == 0 {
		t.Skip("no NodeClaim from the provisioning scenario")
	}
	c := claims[0]
	id, err := aws.ParseProviderID(c.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	terminationsBefore := a.srv.Calls("TerminateInstances")
	start := time.Now()
	if err := a.c.Delete(ctx, &c); err != nil {
		t.Fatal(err)
	}
	terminated, nodeGone := a.waitInstanceGone(t, id, 60*time.Second)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var got v1alpha1.NodeClaim
		return apierrors.IsNotFound(a.c.Get(ctx, client.ObjectKey{Name: c.Name}, &got)), nil
	})
	if err != nil {
		t.Fatalf("NodeClaim %s still there after its instance was terminated", c.Name)
	}
	gone := time.Since(start)
	if n := a.srv.Calls("TerminateInstances") - terminationsBefore; n < 1 {
		t.Errorf("%d TerminateInstances calls", n)
	}
	t.Logf("delete: NodeClaim %s deleted → TerminateInstances %s after, node gone %s after, claim gone %s after (drain included)",
		c.Name, terminated.Sub(start).Round(time.Millisecond), nodeGone.Sub(start).Round(time.Millisecond), gone.Round(time.Millisecond))
	a.checkNoLeak(t)
}

func (a *awsEnv) testGarbageCollection(t *testing.T, op *operatorProc) {
	gcBefore := len(op.records("terminating an instance no NodeClaim owns"))
	leaked := a.srv.LaunchInstance(ec2test.Instance{Type: "m6i.large", Zone: awsRegion + "a", SubnetID: "subnet-" + awsRegion + "a", ImageID: "ami-al2023x8664", Arch: "x86_64",
		Tags: map[string]string{aws.TagCluster: awsCluster, "kubernetes.io/cluster/" + awsCluster: "owned", aws.TagNodeClaim: "general-leaked", aws.TagNodePool: "general", aws.TagNodeClass: "default"}})
	foreign := a.srv.LaunchInstance(ec2test.Instance{Type: "m6i.large", Zone: awsRegion + "a", SubnetID: "subnet-" + awsRegion + "a", ImageID: "ami-al2023x8664", Arch: "x86_64",
		Tags: map[string]string{aws.TagCluster: "another-cluster", aws.TagNodeClaim: "theirs"}})
	untagged := a.srv.LaunchInstance(ec2test.Instance{Type: "m6i.large", Zone: awsRegion + "a", SubnetID: "subnet-" + awsRegion + "a", ImageID: "ami-al2023x8664", Arch: "x86_64"})
	// Its kubelet joins first, so that collecting it must remove a Node too.
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		_, ok := a.joined[leaked.ID]
		return ok, nil
	})
	if err != nil {
		t.Fatalf("the leaked instance %s never joined as a node", leaked.ID)
	}
	terminated, nodeGone := a.waitInstanceGone(t, leaked.ID, 60*time.Second)
	for _, other := range []ec2test.Instance{foreign, untagged} {
		if !slices.ContainsFunc(a.srv.Running(), func(in ec2test.Instance) bool { return in.ID == other.ID }) {
			t.Errorf("instance %s (tags %v) was terminated, but it is not this cluster's", other.ID, other.Tags)
		}
	}
	recs := op.records("terminating an instance no NodeClaim owns")
	if len(recs)-gcBefore != 1 {
		t.Errorf("%d garbage-collection logs, want 1", len(recs)-gcBefore)
	}
	t.Logf("gc: leaked %s terminated %s after launch (grace 5s), its node gone %s after launch; the other cluster's and the untagged instance left alone",
		leaked.ID, terminated.Sub(leaked.LaunchTime).Round(time.Millisecond), nodeGone.Sub(leaked.LaunchTime).Round(time.Millisecond))
	a.checkNoLeak(t)
}

// testInsufficientCapacity: the cheapest offering the pod fits is refused
// for capacity; the NodeClaim also allows the next (a flexible launch), so
// the same CreateFleet call lands there: no second call, no new plan.
func (a *awsEnv) testInsufficientCapacity(t *testing.T, op *operatorProc) {
	ns := a.namespace(t, "aws-ice")
	// One zone and two types, so that the cheapest offering the pod fits
	// is one type × zone × on-demand: the server refuses it.
	allowed, zone := []string{"c6i.large", "m6i.large"}, awsRegion+"a"
	a.awsPool(t, "ice", req(v1alpha1.LabelCapacityType, "on-demand"), req(solver.LabelInstanceType, allowed...), req(solver.LabelZone, zone))
	cheapest, price := a.cheapestOnDemand(allowed, zone)
	a.srv.RefuseCapacity(cheapest, zone, ec2test.OnDemand, "")
	t.Cleanup(func() { a.srv.AllowCapacity(cheapest, zone, ec2test.OnDemand) })
	fleetsBefore := a.srv.Calls("CreateFleet")
	replansBefore := len(op.records("insufficient capacity; replanning"))
	start := time.Now()
	a.createPods(t, []*corev1.Pod{opPod(ns, "ice-0", "1", "2Gi", map[string]string{v1alpha1.LabelNodePool: "ice"})})
	a.waitRunning(t, ns, 1, 60*time.Second)
	took := time.Since(start)
	claims := a.claims(t, "ice")
	if len(claims) != 1 {
		t.Fatalf("%d NodeClaims of pool ice, want 1", len(claims))
	}
	c := claims[0]
	if got := claimValues(&c, solver.LabelInstanceType); len(got) != 2 || got[0] != cheapest {
		t.Errorf("NodeClaim %s allows instance types %v; want both, the planned %s first", c.Name, got, cheapest)
	}
	in, ok := instanceByProviderID(a.clusterInstances(), c.Status.ProviderID)
	if !ok || in.Type == cheapest || c.Status.InstanceType != in.Type {
		t.Fatalf("pool ice runs on %+v (claim status %s); want a live instance other than the refused %s", in, c.Status.InstanceType, cheapest)
	}
	refused := op.records("fleet refused an offering")
	refused = slices.DeleteFunc(refused, func(r map[string]any) bool { return r["nodeClaim"] != c.Name })
	if len(refused) != 1 || refused[0]["instanceType"] != cheapest || refused[0]["code"] != "InsufficientInstanceCapacity" {
		t.Errorf("fleet refusals logged for %s: %v; want one InsufficientInstanceCapacity for %s", c.Name, refused, cheapest)
	}
	if fleets := a.srv.Calls("CreateFleet") - fleetsBefore; fleets != 1 {
		t.Errorf("%d CreateFleet calls, want 1: the refused offering and the next are overrides of one call", fleets)
	}
	if replans := len(op.records("insufficient capacity; replanning")) - replansBefore; replans != 0 {
		t.Errorf("%d replans after the refusal, want none", replans)
	}
	var fallThrough time.Duration
	for _, r := range op.records("launched instance") {
		if r["nodeClaim"] == c.Name && len(refused) == 1 {
			fallThrough = logTime(t, r).Sub(logTime(t, refused[0]))
		}
	}
	t.Logf("ice: %s/%s/on-demand ($%.4f/h) refused; the same CreateFleet call launched %s/%s (refusal → launch logged %s apart); pod Running %s after creation, no replan",
		cheapest, zone, price, in.Type, in.Zone, fallThrough.Round(time.Millisecond), took.Round(time.Millisecond))
	a.checkNoLeak(t)
}

// cheapestOnDemand returns the type of types with the cheapest on-demand
// offering in zone, in the catalog, and its price.
func (a *awsEnv) cheapestOnDemand(types []string, zone string) (string, float64) {
	var cheapest string
	price := 0.0
	all, _ := a.cat.InstanceTypes(awsRegion)
	for _, it := range all {
		if !slices.Contains(types, it.Name) {
			continue
		}
		for _, o := range it.Offerings {
			if o.CapacityType == cloud.CapacityTypeOnDemand && o.Zone == zone && (cheapest == "" || o.Price < price) {
				cheapest, price = it.Name, o.Price
			}
		}
	}
	return cheapest, price
}

// claimValues are the values of the claim's last In requirement on key:
// the launch's, planned value first.
func claimValues(c *v1alpha1.NodeClaim, key string) []string {
	for _, r := range slices.Backward(c.Spec.Requirements) {
		if r.Key == key && r.Operator == v1alpha1.NodeSelectorOpIn {
			return r.Values
		}
	}
	return nil
}

// fleetOf returns the CreateFleet request made for a claim (its UID is
// the ClientToken), nil if none.
// fleetsFor counts the CreateFleet calls made for the claims, by their
// client tokens: a replacement an earlier scenario's NodeClaim launches in
// the same window is not theirs.
func (a *awsEnv) fleetsFor(claims []v1alpha1.NodeClaim) int {
	n := 0
	for _, r := range a.srv.Requests("CreateFleet") {
		for i := range claims {
			if slices.Contains(r["ClientToken"], string(claims[i].UID)) {
				n++
			}
		}
	}
	return n
}

func (a *awsEnv) fleetOf(c *v1alpha1.NodeClaim) map[string][]string {
	var fleet map[string][]string
	for _, r := range a.srv.Requests("CreateFleet") {
		if slices.Contains(r["ClientToken"], string(c.UID)) {
			fleet = r
		}
	}
	return fleet
}

// fleetOverrideTypes returns the instance type of every override of a
// CreateFleet request.
func fleetOverrideTypes(r map[string][]string) []string {
	var out []string
	for k, v := range r {
		if strings.HasPrefix(k, "LaunchTemplateConfigs.") && strings.Contains(k, ".Overrides.") && strings.HasSuffix(k, ".InstanceType") {
			out = append(out, v...)
		}
	}
	return out
}

// testFlexibleLaunch: a NodePool allowing the c, m and r categories (at
// least 3 of them, minValues) launches NodeClaims that allow every type
// that holds their pods, and EC2 gets them all as overrides of one
// CreateFleet call with the spot strategy.
func (a *awsEnv) testFlexibleLaunch(t *testing.T) {
	ns := a.namespace(t, "aws-flex")
	category := req(cloud.LabelInstanceCategory, "c", "m", "r")
	category.MinValues = ptr.To(3)
	a.awsPool(t, "flex", req(v1alpha1.LabelCapacityType, "spot", "on-demand"), category)
	fleetsBefore := a.srv.Calls("CreateFleet")
	sel := map[string]string{v1alpha1.LabelNodePool: "flex"}
	// Three sizes, one per node (hostname anti-affinity): three claims.
	pods := []*corev1.Pod{opPod(ns, "flex-small-0", "1", "2Gi", sel), opPod(ns, "flex-medium-0", "3", "8Gi", sel), opPod(ns, "flex-big-0", "6", "20Gi", sel)}
	for _, p := range pods {
		p.Labels["group"] = "flex"
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"group": "flex"}}, TopologyKey: corev1.LabelHostname,
		}}}}
	}
	start := time.Now()
	a.createPods(t, pods)
	a.waitRunning(t, ns, len(pods), 90*time.Second)
	took := time.Since(start)
	claims := a.claims(t, "flex")
	if len(claims) != len(pods) {
		t.Fatalf("%d NodeClaims of pool flex, want %d (one per pod)", len(claims), len(pods))
	}
	var summary []string
	for i := range claims {
		c := &claims[i]
		types := claimValues(c, solver.LabelInstanceType)
		categories := map[byte]bool{}
		for _, name := range types {
			categories[name[0]] = true
		}
		if len(types) < 15 || len(categories) < 3 || !slices.Contains(types, c.Status.InstanceType) {
			t.Errorf("NodeClaim %s allows %d types in %d categories %v (launched %s); want at least 15 in 3 (minValues), the launched one among them",
				c.Name, len(types), len(categories), types, c.Status.InstanceType)
		}
		fleet := a.fleetOf(c)
		if fleet == nil {
			t.Errorf("no CreateFleet call for NodeClaim %s", c.Name)
			continue
		}
		overrides := fleetOverrideTypes(fleet)
		distinct := slices.Compact(slices.Sorted(slices.Values(overrides)))
		if len(distinct) < 15 || len(distinct) > 60 {
			t.Errorf("CreateFleet for %s has %d overrides of %d types; want at least 15 types, at most 60", c.Name, len(overrides), len(distinct))
		}
		for _, typ := range distinct {
			if !slices.Contains(types, typ) {
				t.Errorf("CreateFleet for %s overrides %s, which the claim does not allow", c.Name, typ)
			}
		}
		if got := fleet["TargetCapacitySpecification.DefaultTargetCapacityType"]; !slices.Equal(got, []string{"spot"}) {
			t.Errorf("CreateFleet for %s: DefaultTargetCapacityType %v, want spot", c.Name, got)
		}
		if got := fleet["SpotOptions.AllocationStrategy"]; !slices.Equal(got, []string{"price-capacity-optimized"}) {
			t.Errorf("CreateFleet for %s: SpotOptions.AllocationStrategy %v, want price-capacity-optimized", c.Name, got)
		}
		var node corev1.Node
		if err := a.c.Get(context.Background(), client.ObjectKey{Name: c.Status.NodeName}, &node); err != nil ||
			node.Labels[corev1.LabelInstanceTypeStable] != c.Status.InstanceType || node.Labels[corev1.LabelTopologyZone] != c.Status.Zone {
			t.Errorf("node %s: labels %s/%s, %v; want what EC2 launched, %s/%s", c.Status.NodeName, node.Labels[corev1.LabelInstanceTypeStable],
				node.Labels[corev1.LabelTopologyZone], err, c.Status.InstanceType, c.Status.Zone)
		}
		summary = append(summary, fmt.Sprintf("%s: %d types (%d categories), %d overrides, planned %s, launched %s %s %s $%s/h",
			c.Name, len(types), len(categories), len(overrides), types[0], c.Status.InstanceType, c.Status.CapacityType, c.Status.Zone, c.Status.PricePerHour))
	}
	if fleets := a.fleetsFor(claims); fleets != len(claims) {
		t.Errorf("%d CreateFleet calls for %d NodeClaims, want one each (%d calls in all since the scenario began)", fleets, len(claims), a.srv.Calls("CreateFleet")-fleetsBefore)
	}
	t.Logf("flex: %d pods Running %s after creation on %d NodeClaims: %s", len(pods), took.Round(time.Millisecond), len(claims), strings.Join(summary, "; "))
	a.checkNoLeak(t)
}

// testReplanWhenEveryAllowedOfferingIsRefused: with --launch-price-premium
// 0 the claim allows only offerings as cheap as the planned one, so a
// refusal of the cheapest leaves it nothing: the claim is deleted and its
// pod planned again, without the refused offering, in the next batch.
func (a *awsEnv) testReplanWhenEveryAllowedOfferingIsRefused(t *testing.T) {
	op := a.startAWSOperator(t, "aws-operator-premium0", nil, "--launch-price-premium", "0")
	defer op.stop()
	ns := a.namespace(t, "aws-ice-replan")
	// One zone and two types, so that the cheapest offering the pod fits
	// is one type × zone × on-demand: the server refuses it.
	allowed, zone := []string{"c6i.large", "m6i.large"}, awsRegion+"a"
	a.awsPool(t, "ice-replan", req(v1alpha1.LabelCapacityType, "on-demand"), req(solver.LabelInstanceType, allowed...), req(solver.LabelZone, zone))
	cheapest, price := a.cheapestOnDemand(allowed, zone)
	a.srv.RefuseCapacity(cheapest, zone, ec2test.OnDemand, "")
	t.Cleanup(func() { a.srv.AllowCapacity(cheapest, zone, ec2test.OnDemand) })
	fleetsBefore := a.srv.Calls("CreateFleet")
	start := time.Now()
	a.createPods(t, []*corev1.Pod{opPod(ns, "ice-replan-0", "1", "2Gi", map[string]string{v1alpha1.LabelNodePool: "ice-replan"})})
	// The refused claim is deleted at once and its pod planned again in
	// the next batch: a batch window (500 ms), a launch and a boot
	// (awsBootDelay) after the refusal. Before that was fixed the pod
	// waited 80–96 s for a nomination to a claim no batch had seen.
	a.waitRunning(t, ns, 1, 60*time.Second)
	took := time.Since(start)
	refusal := op.waitLog(t, "insufficient capacity; replanning", time.Second)
	afterRefusal := time.Since(logTime(t, refusal))
	claims := a.claims(t, "ice-replan")
	if len(claims) != 1 {
		t.Fatalf("%d NodeClaims of pool ice-replan, want 1", len(claims))
	}
	in, ok := instanceByProviderID(a.clusterInstances(), claims[0].Status.ProviderID)
	if !ok || in.Type == cheapest {
		t.Fatalf("pool ice-replan runs on %+v; want a live instance other than the refused %s", in, cheapest)
	}
	refused := op.records("fleet refused an offering")
	if len(refused) != 1 || refused[0]["instanceType"] != cheapest || refused[0]["code"] != "InsufficientInstanceCapacity" {
		t.Errorf("fleet refusals logged: %v; want one InsufficientInstanceCapacity for %s", refused, cheapest)
	}
	fleets := a.srv.Calls("CreateFleet") - fleetsBefore
	if fleets != 2 {
		t.Errorf("%d CreateFleet calls, want 2: the refused offering, then the next cheapest", fleets)
	}
	t.Logf("ice-replan (premium 0): %s/%s/on-demand ($%.4f/h) refused; the pod ran on %s/%s %s after the refusal (target ≤ %s), %s after creation, %d CreateFleet calls, the refused claim deleted and replanned",
		cheapest, zone, price, in.Type, in.Zone, afterRefusal.Round(time.Millisecond), iceReplanTarget, took.Round(time.Millisecond), fleets)
	if afterRefusal > iceReplanTarget {
		t.Errorf("the pod ran %s after the refusal, beyond %s (batch idle 500 ms + launch + boot %s + margin): the replan waited for more than the next batch",
			afterRefusal.Round(time.Millisecond), iceReplanTarget, awsBootDelay)
	}
	a.checkNoLeak(t)
}

func (a *awsEnv) testTerminatedElsewhere(t *testing.T, op *operatorProc) {
	ctx := context.Background()
	ns := a.namespace(t, "aws-replace")
	a.awsPool(t, "replace", req(v1alpha1.LabelCapacityType, "on-demand"), req(cloud.LabelInstanceFamily, "m6i"))
	d := deployment("replace", 1, "1", "2Gi")
	d.Namespace = ns
	d.Spec.Template.Spec.NodeSelector = map[string]string{v1alpha1.LabelNodePool: "replace"}
	d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To(int64(0))
	if _, err := a.Client().AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = a.Client().AppsV1().Deployments(ns).Delete(ctx, d.Name, metav1.DeleteOptions{})
		_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			var pods corev1.PodList
			return a.c.List(ctx, &pods, client.InNamespace(ns)) == nil && len(pods.Items) == 0, nil
		})
	})
	a.waitRunning(t, ns, 1, 60*time.Second)
	claims := a.claims(t, "replace")
	if len(claims) != 1 {
		t.Fatalf("%d NodeClaims of pool replace, want 1", len(claims))
	}
	old := claims[0]
	id, err := aws.ParseProviderID(old.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	gcBefore := len(op.records("deleting a NodeClaim whose instance is gone"))
	start := time.Now()
	if !a.srv.Terminate(id) {
		t.Fatalf("instance %s was not running", id)
	}
	var claimGone, replaced time.Duration
	var now corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		if claimGone == 0 {
			var c v1alpha1.NodeClaim
			if apierrors.IsNotFound(a.c.Get(ctx, client.ObjectKey{Name: old.Name}, &c)) {
				claimGone = time.Since(start)
			}
		}
		var pods corev1.PodList
		if err := a.c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.Spec.NodeName != old.Status.NodeName {
				now, replaced = p, time.Since(start)
			}
		}
		return claimGone > 0 && replaced > 0, nil
	})
	if err != nil {
		t.Fatalf("after terminating %s outside the operator: claim %s gone %v, replacement pod Running %v", id, old.Name, claimGone > 0, replaced > 0)
	}
	if n := len(op.records("deleting a NodeClaim whose instance is gone")) - gcBefore; n != 1 {
		t.Errorf("%d \"instance is gone\" logs, want 1", n)
	}
	var node corev1.Node
	if err := a.c.Get(ctx, client.ObjectKey{Name: old.Status.NodeName}, &node); !apierrors.IsNotFound(err) {
		t.Errorf("the node %s of the terminated instance is still there (%v)", old.Status.NodeName, err)
	}
	t.Logf("replace: %s terminated outside the operator → NodeClaim %s deleted %s after, its pod's replacement Running on %s %s after",
		id, old.Name, claimGone.Round(time.Millisecond), now.Spec.NodeName, replaced.Round(time.Millisecond))
	a.checkNoLeak(t)
}

func (a *awsEnv) testCrashAfterLaunch(t *testing.T) {
	ctx := context.Background()
	ns := a.namespace(t, "aws-crash")
	a.awsPool(t, "crash", req(v1alpha1.LabelCapacityType, "on-demand"), req(cloud.LabelInstanceFamily, "m6i"))
	crashEnv := []string{"RIGHTSIZE_TEST_EXIT_AFTER_LAUNCH=42"}
	sel := map[string]string{v1alpha1.LabelNodePool: "crash"}

	// 1. The operator launches and dies before writing the claim's status;
	// the instance boots and its kubelet joins regardless. For a while a
	// search by tag does not find the new instance (EC2's eventual
	// consistency), so the restarted operator cannot adopt it that way:
	// only CreateFleet's ClientToken keeps it from launching another.
	a.srv.SetListLag(20 * time.Second)
	defer a.srv.SetListLag(0)
	if err := a.c.Create(ctx, opPod(ns, "first", "1", "1Gi", sel)); err != nil {
		t.Fatal(err)
	}
	crashing := a.startAWSOperator(t, "aws-crashing-1", crashEnv)
	if code, err := crashing.exitCode(60 * time.Second); err != nil || code != 42 {
		t.Fatalf("operator exit: code %d, %v; want the test hook's 42", code, err)
	}
	claims := a.claims(t, "crash")
	if len(claims) != 1 || claims[0].Status.ProviderID != "" {
		t.Fatalf("after the crash: %d claims; want 1 without status", len(claims))
	}
	var launched []ec2test.Instance
	for _, in := range a.clusterInstances() {
		if in.Tags[aws.TagNodeClaim] == claims[0].Name {
			launched = append(launched, in)
		}
	}
	if len(launched) != 1 {
		t.Fatalf("after the crash: %d instances tagged for NodeClaim %s, want 1", len(launched), claims[0].Name)
	}
	instance := launched[0]
	fleets := a.srv.Calls("CreateFleet")

	// 2. Restarted, it adopts the instance instead of launching another.
	start := time.Now()
	op := a.startAWSOperator(t, "aws-restarted-1", nil)
	a.waitRunning(t, ns, 1, 60*time.Second)
	adopted := time.Since(start)
	claims = a.claims(t, "crash")
	if len(claims) != 1 || claims[0].Status.ProviderID != instance.ProviderID() {
		t.Fatalf("after the restart: %d claims, providerID %q; want the instance %s adopted", len(claims), claims[0].Status.ProviderID, instance.ProviderID())
	}
	var tokened int
	for _, in := range a.srv.Instances() {
		if in.ClientToken == string(claims[0].UID) {
			tokened++
		}
	}
	if tokened != 1 {
		t.Errorf("%d instances launched with the NodeClaim's client token, want 1", tokened)
	}
	var retried []string
	for _, r := range a.srv.Requests("CreateFleet")[fleets:] {
		retried = append(retried, r["ClientToken"]...)
	}
	// A reconcile of the claim from a cache not yet showing its status may
	// retry once more; every retry must carry the same token.
	if len(retried) == 0 || slices.ContainsFunc(retried, func(tok string) bool { return tok != string(claims[0].UID) }) {
		t.Errorf("CreateFleet client tokens after the restart: %v; want retries with the claim's UID %s only", retried, claims[0].UID)
	}
	t.Logf("crash: the restarted operator retried CreateFleet %d× with the claim's ClientToken (the instance not yet listed) and got %s back; pod Running %s after the restart; 1 instance for the claim",
		len(retried), instance.ID, adopted.Round(time.Millisecond))
	a.srv.SetListLag(0)
	a.checkNoLeak(t)
	op.stop()

	// 3. Crash again, and force-delete that claim while the operator is
	// down: its instance is an orphan, collected after the grace period,
	// and the pod gets another node.
	if err := a.c.Create(ctx, opPod(ns, "second", "7", "1Gi", sel)); err != nil {
		t.Fatal(err)
	}
	crashing = a.startAWSOperator(t, "aws-crashing-2", crashEnv)
	if code, err := crashing.exitCode(60 * time.Second); err != nil || code != 42 {
		t.Fatalf("second crash: code %d, %v", code, err)
	}
	var orphan string
	for _, c := range a.claims(t, "crash") {
		if c.Status.ProviderID == "" {
			orphan = c.Name
			orig := c.DeepCopy()
			c.Finalizers = nil
			if err := a.c.Patch(ctx, &c, client.MergeFrom(orig)); err != nil {
				t.Fatal(err)
			}
			if err := a.c.Delete(ctx, &c); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
	}
	if orphan == "" {
		t.Fatal("no unlaunched claim after the second crash")
	}
	i := slices.IndexFunc(a.clusterInstances(), func(in ec2test.Instance) bool { return in.Tags[aws.TagNodeClaim] == orphan })
	if i < 0 {
		t.Fatalf("no instance tagged for the force-deleted claim %s", orphan)
	}
	orphanInstance := a.clusterInstances()[i]
	start = time.Now()
	op = a.startAWSOperator(t, "aws-restarted-2", nil)
	a.waitRunning(t, ns, 2, 60*time.Second)
	terminated, _ := a.waitInstanceGone(t, orphanInstance.ID, 60*time.Second)
	t.Logf("crash: orphan %s of force-deleted claim %s terminated %s after the restart; the pod got a new node",
		orphanInstance.ID, orphan, terminated.Sub(start).Round(time.Millisecond))
	a.checkNoLeak(t)
	op.stop()
}

func (a *awsEnv) testKillDuringLaunches(t *testing.T) {
	ns := a.namespace(t, "aws-kill")
	a.awsPool(t, "kill", req(v1alpha1.LabelCapacityType, "on-demand"), req(cloud.LabelInstanceFamily, "c6i"))
	const n = 6
	var pods []*corev1.Pod
	for i := range n {
		p := opPod(ns, fmt.Sprintf("spread-%d", i), "1", "1Gi", map[string]string{v1alpha1.LabelNodePool: "kill"})
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}}, TopologyKey: corev1.LabelHostname,
		}}}}
		pods = append(pods, p)
	}
	ofPool := func() []ec2test.Instance {
		return slices.DeleteFunc(a.clusterInstances(), func(in ec2test.Instance) bool { return in.Tags[aws.TagNodePool] != "kill" })
	}
	op := a.startAWSOperator(t, "aws-killed", nil)
	op.waitLog(t, "provisioner started", 30*time.Second)
	// Slow API calls keep several launches in flight; fresh instances stay
	// out of tag searches for a while.
	a.srv.SetLatency(300 * time.Millisecond)
	a.srv.SetListLag(10 * time.Second)
	defer func() { a.srv.SetLatency(0); a.srv.SetListLag(0) }()
	a.createPods(t, pods)
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		return len(ofPool()) > 0, nil
	})
	if err != nil {
		t.Fatal("no instance launched for pool kill")
	}
	_ = op.cmd.Process.Kill()
	<-op.done
	claims := a.claims(t, "kill")
	withStatus := 0
	for _, c := range claims {
		if c.Status.ProviderID != "" {
			withStatus++
		}
	}
	atKill, claimsAtKill := len(ofPool()), len(claims)
	restarted := a.startAWSOperator(t, "aws-after-kill", nil)
	start := time.Now()
	a.waitRunning(t, ns, n, 90*time.Second)
	took := time.Since(start)
	a.srv.SetLatency(0)
	a.srv.SetListLag(0)
	claims, instances := a.claims(t, "kill"), ofPool()
	tokens := map[string]int{}
	for _, in := range a.srv.Instances() {
		if in.Tags[aws.TagNodePool] == "kill" {
			tokens[in.ClientToken]++
		}
	}
	if len(claims) != n || len(instances) != n || len(tokens) != n {
		t.Errorf("after the restart: %d NodeClaims, %d instances, %d client tokens for %d pods that need a node each", len(claims), len(instances), len(tokens), n)
	}
	for _, c := range claims {
		if tokens[string(c.UID)] != 1 {
			t.Errorf("NodeClaim %s: %d instances launched with its UID as client token, want 1", c.Name, tokens[string(c.UID)])
		}
	}
	t.Logf("kill: SIGKILL with %d NodeClaims (%d with status) and %d instances launched; after the restart all %d pods Running in %s on %d instances, one per NodeClaim",
		claimsAtKill, withStatus, atKill, n, took.Round(time.Millisecond), len(instances))
	a.checkNoLeak(t)
	restarted.stop()
}

func (a *awsEnv) testTeardown(t *testing.T) {
	ctx := context.Background()
	op := a.startAWSOperator(t, "aws-teardown", nil)
	for _, ns := range []string{"aws-provision", "aws-spot", "aws-ice", "aws-replace", "aws-crash", "aws-kill"} {
		_ = a.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	start := time.Now()
	if err := a.c.DeleteAllOf(ctx, &v1alpha1.NodeClaim{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		return len(a.claims(t, "")) == 0 && len(a.clusterInstances()) == 0 && len(a.awsNodes(t)) == 0, nil
	})
	if err != nil {
		t.Fatalf("after deleting every NodeClaim: %d claims, %d instances of the cluster, %d aws nodes left",
			len(a.claims(t, "")), len(a.clusterInstances()), len(a.awsNodes(t)))
	}
	var total int
	for _, in := range a.srv.Instances() {
		if in.Tags[aws.TagCluster] == awsCluster {
			total++
		}
	}
	t.Logf("teardown: every NodeClaim, instance and node gone %s after deleting the claims; %d instances launched for the cluster in all, none left running",
		time.Since(start).Round(time.Millisecond), total)
	op.stop()
}

// checkSecrets fails t if the operator's log holds a secret: the AWS
// secret key, the cluster CA, or any launch template's user data (encoded
// or decoded).
func (a *awsEnv) checkSecrets(t *testing.T, p *operatorProc) {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		t.Errorf("reading %s's log: %v", p.name, err)
		return
	}
	log := string(data)
	mid := func(s string) string { return s[len(s)/2 : len(s)/2+min(40, len(s)/2)] }
	secrets := map[string]string{"the AWS secret key": awsSecretKey, "the cluster CA": mid(a.caB64)}
	for _, lt := range a.srv.LaunchTemplates() {
		secrets["the user data of "+lt.Name] = mid(lt.Data.UserData)
		if raw, err := base64.StdEncoding.DecodeString(lt.Data.UserData); err == nil {
			secrets["the decoded user data of "+lt.Name] = mid(string(raw))
		}
	}
	for what, secret := range secrets {
		if secret != "" && strings.Contains(log, secret) {
			t.Errorf("%s's log contains %s", p.name, what)
		}
	}
	a.mu.Lock()
	a.checked = append(a.checked, p.name)
	a.mu.Unlock()
}
