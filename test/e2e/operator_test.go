package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/catalog"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/sim"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/importer"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

// seedDir holds the seed article's walkthrough manifests (copied verbatim
// into the repository).
var seedDir = filepath.Join("..", "..", "pkg", "snapshot", "testdata", "seed")

// TestOperatorLatency holds the time from Unschedulable to a NodeClaim and
// to Running to its targets, alone on the machine (soloEnv): a test beside
// it on the two cores would measure the load, not the operator.
func TestOperatorLatency(t *testing.T) {
	soloEnv(t).testLatency(t)
}

// TestOperatorBigBurst holds every batch's solve of 5,000 pods of mixed
// shapes created at once to under 1 s, alone on the machine (soloEnv): the
// solve is CPU, and a test beside it on the two cores would measure the
// load (a clean-clone run with the unit tests and three planes beside it
// also left one pod of the 1,000 created unbound after 5 minutes: issue 30).
func TestOperatorBigBurst(t *testing.T) {
	soloEnv(t).testBigBurst(t)
}

// TestOperatorBurst holds the cost of 300 pods created at once, across two
// weighted pools, to 5 % of the offline plan, alone on the machine
// (soloEnv): on a loaded machine the pods take seconds to create, arrive
// in several batches, and the cost measures the load.
func TestOperatorBurst(t *testing.T) {
	soloEnv(t).testBurst(t)
}

// TestOperator runs `kubectl-rightsize operator --cloud sim` as a separate
// process against one real control plane with kwok, scenario by scenario.
func TestOperator(t *testing.T) {
	e := startOpEnv(t)
	t.Run("seed walkthrough: the memory hog gets a right-sized node and runs", e.testSeedWalkthrough)
	t.Run("a tight pool CPU limit is never exceeded; surplus pods stay pending with a reason", e.testPoolLimit)
	t.Run("insufficient capacity on the cheapest offering: the pod runs on the next one a batch later", e.testInsufficientCapacity)
	t.Run("a crash right after a launch: no duplicate instance, the orphan collected", e.testCrashAfterLaunch)
	t.Run("a deleted NodeClaim: its pods' new node launches before they are evicted", e.testLeavingNode)
	t.Run("node repair: a node that stays unhealthy is replaced", e.testNodeRepair)
	t.Run("two replicas: only the leader acts; the other takes over", e.testLeaderElection)
	t.Run("a TUI launch beside the operator: refused for pods it provisions; otherwise launched, and gone with its pool", e.testTUILaunchBesideTheOperator)
}

// operatorProc is a running operator process.
type operatorProc struct {
	t       *testing.T
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error
}

// startOperator runs the built plugin's operator subcommand against e.
func (e *opEnv) startOperator(t *testing.T, name string, env []string, args ...string) *operatorProc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	if os.Getenv("RIGHTSIZE_TESTENV_KEEP") != "" {
		// Kept with the control plane's logs.
		logPath = filepath.Join(e.Dir, strings.NewReplacer("/", "_", " ", "_", ":", "").Replace(t.Name())+"-"+name+".log")
	}
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	// Lease timings four times the defaults: on a loaded 2-core machine the
	// test plane's API server can take longer than the default 10 s renew
	// deadline, and a leader that cannot renew exits (a test that needs
	// the defaults passes them again; the last value given wins).
	all := append([]string{"operator", "--cloud", "sim", "--kubeconfig", e.Kubeconfig,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--cluster-name", "e2e",
		"--leader-elect-lease-duration", "60s", "--leader-elect-renew-deadline", "40s", "--leader-elect-retry-period", "8s"}, args...)
	cmd := exec.Command(filepath.Join(pluginDir, "kubectl-rightsize"), all...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &operatorProc{t: t, name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("--- %s log (last 40 lines) ---\n%s", name, strings.Join(lastLines(p.logs(), 40), "\n"))
		}
	})
	return p
}

// stop sends SIGTERM and waits for a graceful exit (SIGKILL after 20 s).
func (p *operatorProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.t.Errorf("%s did not stop within 20 s of SIGTERM", p.name)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// exitCode waits for the process to exit and returns its code.
func (p *operatorProc) exitCode(timeout time.Duration) (int, error) {
	select {
	case <-p.done:
	case <-time.After(timeout):
		return 0, fmt.Errorf("%s still running after %s", p.name, timeout)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode(), nil
	}
	return 0, p.err
}

// logs returns the process's log lines so far.
func (p *operatorProc) logs() []string {
	data, _ := os.ReadFile(p.logPath)
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// records returns the JSON log records whose msg is msg.
func (p *operatorProc) records(msg string) []map[string]any {
	var out []map[string]any
	for _, line := range p.logs() {
		var r map[string]any
		if json.Unmarshal([]byte(line), &r) == nil && r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// waitLog waits until a record with msg appears.
func (p *operatorProc) waitLog(t *testing.T, msg string, timeout time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if r := p.records(msg); len(r) > 0 {
			return r[0]
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: no %q log within %s", p.name, msg, timeout)
	return nil
}

// logTime is when the operator wrote a JSON log record.
func logTime(t *testing.T, r map[string]any) time.Time {
	t.Helper()
	s, _ := r["time"].(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("log record %v: no time: %v", r, err)
	}
	return at
}

func lastLines(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// namespace creates a namespace for one scenario.
func (e *opEnv) namespace(t *testing.T, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := e.c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	// A pod cannot be created before the namespace's ServiceAccount exists.
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var sa corev1.ServiceAccount
		return e.c.Get(ctx, client.ObjectKey{Namespace: name, Name: "default"}, &sa) == nil, nil
	})
	if err != nil {
		t.Fatalf("no default ServiceAccount in %s", name)
	}
	return name
}

// simClass creates the SimNodeClass "sim" (no delay) if missing.
func (e *opEnv) simClass(t *testing.T) {
	t.Helper()
	snc := &v1alpha1.SimNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "sim"}}
	if err := e.c.Create(context.Background(), snc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// nodePool creates a NodePool on the SimNodeClass "sim".
func (e *opEnv) nodePool(t *testing.T, name string, weight int32, limits corev1.ResourceList, reqs ...v1alpha1.NodeSelectorRequirement) *v1alpha1.NodePool {
	t.Helper()
	e.simClass(t)
	np := &v1alpha1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.NodePoolSpec{
			Template: v1alpha1.NodeClaimTemplate{Spec: v1alpha1.NodeClaimTemplateSpec{
				NodeClassRef: v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "SimNodeClass", Name: "sim"},
				Requirements: reqs,
			}},
			Limits: limits,
		},
	}
	if weight > 0 {
		np.Spec.Weight = ptr.To(weight)
	}
	if err := e.c.Create(context.Background(), np); err != nil {
		t.Fatal(err)
	}
	return np
}

func req(key string, values ...string) v1alpha1.NodeSelectorRequirement {
	return v1alpha1.NodeSelectorRequirement{Key: key, Operator: v1alpha1.NodeSelectorOpIn, Values: values}
}

// opPod is a bare pod with requests (and equal limits).
func opPod(ns, name, cpu, memory string, nodeSelector map[string]string) *corev1.Pod {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": strings.TrimRight(name, "-0123456789")}},
		Spec: corev1.PodSpec{
			NodeSelector:                  nodeSelector,
			TerminationGracePeriodSeconds: ptr.To(int64(0)),
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: rl, Limits: rl},
			}},
		},
	}
}

// createPods creates pods with 16 workers.
func (e *opEnv) createPods(t *testing.T, pods []*corev1.Pod) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(pods))
	next := make(chan *corev1.Pod)
	for range 16 {
		wg.Go(func() {
			for p := range next {
				if _, err := e.Client().CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, p := range pods {
		next <- p
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// waitRunning waits until n pods of ns are Running.
func (e *opEnv) waitRunning(t *testing.T, ns string, n int, timeout time.Duration) {
	t.Helper()
	var last int
	var waiting []string
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := e.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		last, waiting = 0, waiting[:0]
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				last++
				continue
			}
			w := fmt.Sprintf("%s: %s on node %q", p.Name, p.Status.Phase, p.Spec.NodeName)
			for _, c := range p.Status.Conditions {
				if c.Status != corev1.ConditionTrue {
					w += fmt.Sprintf(", %s %s: %s", c.Type, c.Reason, c.Message)
				}
			}
			waiting = append(waiting, w)
		}
		return last >= n, nil
	})
	if err != nil {
		// Say what the pods and the claims were waiting on.
		for _, c := range e.claims(t, "") {
			st := fmt.Sprintf("NodeClaim %s: providerID %q node %q", c.Name, c.Status.ProviderID, c.Status.NodeName)
			for _, cond := range c.Status.Conditions {
				st += fmt.Sprintf(", %s=%s %s", cond.Type, cond.Status, cond.Reason)
			}
			t.Log(st)
		}
		t.Fatalf("%d of %d pods Running in %s after %s; not Running: %s", last, n, ns, timeout, strings.Join(waiting, "; "))
	}
}

// claims lists the NodeClaims, optionally of one pool.
func (e *opEnv) claims(t *testing.T, pool string) []v1alpha1.NodeClaim {
	t.Helper()
	var l v1alpha1.NodeClaimList
	opts := []client.ListOption{}
	if pool != "" {
		opts = append(opts, client.MatchingLabels{v1alpha1.LabelNodePool: pool})
	}
	if err := e.c.List(context.Background(), &l, opts...); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// simNodes lists the nodes the simulated cloud launched.
func (e *opEnv) simNodes(t *testing.T) []corev1.Node {
	t.Helper()
	var l corev1.NodeList
	if err := e.c.List(context.Background(), &l, client.MatchingLabels{sim.LabelCluster: "e2e"}); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// cleanup deletes the scenario's namespace and waits for its pods to go,
// then deletes every NodeClaim (the running operator drains and terminates
// them) and the pools, and waits until no simulated node is left. It
// returns how long termination took.
func (e *opEnv) cleanup(t *testing.T, ns string, pools ...string) time.Duration {
	t.Helper()
	ctx := context.Background()
	if ns != "" {
		_ = e.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			var pods corev1.PodList
			err := e.c.List(ctx, &pods, client.InNamespace(ns))
			return err == nil && len(pods.Items) == 0, nil
		})
	}
	start := time.Now()
	if err := e.c.DeleteAllOf(ctx, &v1alpha1.NodeClaim{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		return len(e.claims(t, "")) == 0 && len(e.simNodes(t)) == 0, nil
	})
	if err != nil {
		t.Errorf("after deleting the NodeClaims: %d claims and %d simulated nodes left", len(e.claims(t, "")), len(e.simNodes(t)))
	}
	took := time.Since(start)
	for _, p := range pools {
		_ = e.c.Delete(ctx, &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: p}})
	}
	return took
}

// forceCleanup removes NodeClaims without an operator: finalizers dropped,
// simulated nodes deleted.
func (e *opEnv) forceCleanup(t *testing.T, ns string, pools ...string) {
	ctx := context.Background()
	for _, c := range e.claims(t, "") {
		orig := c.DeepCopy()
		c.Finalizers = nil
		_ = e.c.Patch(ctx, &c, client.MergeFrom(orig))
		_ = e.c.Delete(ctx, &c)
	}
	for _, n := range e.simNodes(t) {
		_ = e.c.Delete(ctx, &n)
	}
	for _, p := range pools {
		_ = e.c.Delete(ctx, &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: p}})
	}
	_ = e.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
}

// podEvents returns the notes of the events with a reason on an object of
// a namespace ("" for cluster-scoped objects such as nodes).
func (e *opEnv) podEvents(t *testing.T, ns, pod, reason string) []string {
	t.Helper()
	evs, err := e.Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + pod + ",reason=" + reason,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs.Items {
		out = append(out, ev.Message)
	}
	return out
}

func (e *opEnv) testSeedWalkthrough(t *testing.T) {
	ctx := context.Background()
	res, err := importer.Import([]string{filepath.Join(seedDir, "01-ec2nodeclass.yaml"), filepath.Join(seedDir, "02-provisioner.yaml")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var poolName string
	for _, obj := range res.Objects {
		o := obj.(client.Object)
		if np, ok := obj.(*v1alpha1.NodePool); ok {
			poolName = np.Name
			// The published list (m5.large, m5.xlarge, c5.xlarge) cannot hold
			// 4 CPU / 16Gi; widen it.
			for i, r := range np.Spec.Template.Spec.Requirements {
				if r.Key == corev1.LabelInstanceTypeStable {
					np.Spec.Template.Spec.Requirements[i].Values = append(r.Values, "m5.2xlarge", "r5.2xlarge")
				}
			}
		}
		if err := e.c.Create(ctx, o); err != nil {
			t.Fatalf("creating the imported %T: %v", obj, err)
		}
	}
	ns := e.namespace(t, "seed")
	metricsAddr := freePort(t)
	op := e.startOperator(t, "operator", nil, "--leader-election-id", "e2e-seed", "--metrics-bind-address", metricsAddr)
	t.Cleanup(func() { e.cleanup(t, ns, poolName) })

	if r := kubectl(t, e.Env, "apply", "-n", ns, "-f", filepath.Join(seedDir, "03-memory-hog.yaml")); r.err != nil {
		t.Fatalf("kubectl apply: %v\n%s", r.err, r.stderr)
	}
	e.waitRunning(t, ns, 1, 60*time.Second)

	claims := e.claims(t, poolName)
	if len(claims) != 1 {
		t.Fatalf("%d NodeClaims, want 1", len(claims))
	}
	nc := claims[0]
	var node corev1.Node
	if err := e.c.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, &node); err != nil {
		t.Fatal(err)
	}
	if v := node.Labels[v1alpha1.KarpenterLabelProvisionerName]; v != "default" {
		t.Errorf("node label %s = %q, want default (the hog's affinity needs it)", v1alpha1.KarpenterLabelProvisionerName, v)
	}
	launch := op.records("launching NodeClaim")
	if len(launch) != 1 {
		t.Fatalf("%d 'launching NodeClaim' logs, want 1", len(launch))
	}
	l := launch[0]
	if l["instanceType"] != nc.Status.InstanceType || !strings.Contains(fmt.Sprint(l["reason"]), "cheapest allowed type") {
		t.Errorf("launch log does not name the type and why: %v", l)
	}
	t.Logf("seed walkthrough: %s %s %s $%s/h; log: %v: %v", nc.Status.InstanceType, nc.Status.CapacityType, nc.Status.Zone, nc.Status.PricePerHour, l["instanceType"], l["reason"])
	if nc.Status.InstanceType != "m5.2xlarge" {
		t.Errorf("instance type %s, want m5.2xlarge (the only widened type that holds 4 CPU / 16Gi)", nc.Status.InstanceType)
	}
	var pods corev1.PodList
	if err := e.c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	nominated := e.podEvents(t, ns, pods.Items[0].Name, "Nominated")
	if len(nominated) == 0 || !strings.Contains(nominated[0], nc.Name) || !strings.Contains(nominated[0], "m5.2xlarge") {
		t.Errorf("Nominated events on the pod: %q", nominated)
	}
	var np v1alpha1.NodePool
	if err := e.c.Get(ctx, client.ObjectKey{Name: poolName}, &np); err != nil {
		t.Fatal(err)
	}
	t.Logf("NodePool %s status: nodes %d, cpu %s, memory %s, cost $%s/h", poolName, np.Status.Nodes, ptr.To(np.Status.Resources[corev1.ResourceCPU]).String(),
		ptr.To(np.Status.Resources[corev1.ResourceMemory]).String(), np.Status.CostPerHour)
	e.testSeedCommitment(t, op, metricsAddr, ns, poolName, &nc)
}

// testSeedCommitment goes on from the seed walkthrough (first is its
// NodeClaim): a regional reservation of 16 m5 units (4 m5.large, one
// m5.2xlarge's worth) is created, and the hog scaled to a second replica.
// The operator reads the Commitment live: the second node is the
// on-demand m5.2xlarge the reservation covers when the first went on spot
// (the cheapest list price), and its gauges on /metrics bill the
// NodeClaims as AWS would; once the Commitment is deleted, its series go.
func (e *opEnv) testSeedCommitment(t *testing.T, op *operatorProc, metricsAddr, ns, pool string, first *v1alpha1.NodeClaim) {
	ctx, start := context.Background(), time.Now()
	defer func() { t.Logf("the Commitment's steps took %s", time.Since(start).Round(time.Millisecond)) }()
	ri := &v1alpha1.Commitment{ObjectMeta: metav1.ObjectMeta{Name: "e2e-m5-units"}, Spec: v1alpha1.CommitmentSpec{
		Type:              v1alpha1.CommitmentReservedInstances,
		ReservedInstances: &v1alpha1.ReservedInstances{InstanceType: "m5.large", InstanceCount: 4, Region: sim.DefaultRegion, PricePerHour: "0.06"}}}
	if err := e.c.Create(ctx, ri); err != nil {
		t.Fatalf("creating the Commitment: %v", err)
	}
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), ri) })
	if r := kubectl(t, e.Env, "scale", "-n", ns, "deployment/memory-hog-app", "--replicas", "2"); r.err != nil {
		t.Fatalf("kubectl scale: %v\n%s", r.err, r.stderr)
	}
	e.waitRunning(t, ns, 2, 90*time.Second)
	claims := e.claims(t, pool)
	var second *v1alpha1.NodeClaim
	for i := range claims {
		if claims[i].Name != first.Name {
			second = &claims[i]
		}
	}
	if len(claims) != 2 || second == nil {
		t.Fatalf("%d NodeClaims after the second replica, want 2", len(claims))
	}
	t.Logf("with the reservation: %s %s $%s/h (the first: %s %s $%s/h); log: %v", second.Status.InstanceType, second.Status.CapacityType,
		second.Status.PricePerHour, first.Status.InstanceType, first.Status.CapacityType, first.Status.PricePerHour, op.records("commitments spent"))
	if first.Status.CapacityType == cloud.CapacityTypeSpot && (second.Status.CapacityType != cloud.CapacityTypeOnDemand || second.Status.InstanceType != "m5.2xlarge") {
		t.Errorf("the second node is %s %s, want the on-demand m5.2xlarge the reservation covers", second.Status.InstanceType, second.Status.CapacityType)
	}
	// The bill: the 16 units cover one on-demand m5.2xlarge whole; another
	// spills, spot is never covered.
	var covered, spilled float64
	for _, c := range claims {
		if c.Status.CapacityType != cloud.CapacityTypeOnDemand || c.Status.InstanceType != "m5.2xlarge" {
			continue
		}
		var price float64
		if _, err := fmt.Sscan(c.Status.PricePerHour, &price); err != nil {
			t.Fatalf("NodeClaim %s's price %q: %v", c.Name, c.Status.PricePerHour, err)
		}
		if covered == 0 {
			covered = price
		} else {
			spilled += price
		}
	}
	series := func(name string) string { return name + `{commitment="e2e-m5-units",type="ReservedInstances"}` }
	want := map[string]float64{series("rightsize_commitment_utilization"): 1, series("rightsize_commitment_covered_dollars_per_hour"): covered,
		series("rightsize_commitment_spilled_dollars_per_hour"): spilled}
	var m map[string]float64
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		m = metricSums(scrape(t, metricsAddr))
		for k, v := range want {
			if got, ok := m[k]; !ok || got < v-1e-6 || got > v+1e-6 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("commitment gauges %v, want %v", pick(m, want), want)
	}
	e.explainBillsTheCommitment(t, ri.Name, covered, spilled)
	if err := e.c.Delete(ctx, ri); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, ok := metricSums(scrape(t, metricsAddr))[series("rightsize_commitment_utilization")]
		return !ok, nil
	})
	if err != nil {
		t.Errorf("the deleted Commitment's series are still on /metrics")
	}
}

// explainBillsTheCommitment runs `kubectl rightsize explain` against the
// cluster, which reads the Commitments live as the operator does, and
// checks that it bills the named one as the operator's gauges do: used
// whole, covering covered $/h and spilling spilled $/h.
func (e *opEnv) explainBillsTheCommitment(t *testing.T, name string, covered, spilled float64) {
	t.Helper()
	r := plugin(t, e.Kubeconfig, "explain", "--region", sim.DefaultRegion, "-o", "json")
	if r.err != nil {
		t.Fatalf("explain: %v\n%s", r.err, r.stderr)
	}
	var got struct {
		Commitments *struct {
			Commitments []struct {
				Name                                               string
				UtilizationPercent, CoveredPerHour, SpilledPerHour float64
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("explain output is not JSON: %v\n%s", err, r.stdout)
	}
	if got.Commitments == nil {
		t.Fatalf("live explain prints no commitments with Commitment %s in the cluster:\n%s", name, r.stdout)
	}
	for _, c := range got.Commitments.Commitments {
		if c.Name != name {
			continue
		}
		t.Logf("live explain: %s %.1f %% used, $%.4f/h covered, $%.4f/h spilled", name, c.UtilizationPercent, c.CoveredPerHour, c.SpilledPerHour)
		if c.UtilizationPercent != 100 || math.Abs(c.CoveredPerHour-covered) > 1e-4 || math.Abs(c.SpilledPerHour-spilled) > 1e-4 {
			t.Errorf("live explain bills %s at %.1f %% used, $%.4f/h covered, $%.4f/h spilled; the operator's gauges say 100 %%, $%.4f/h, $%.4f/h",
				name, c.UtilizationPercent, c.CoveredPerHour, c.SpilledPerHour, covered, spilled)
		}
		return
	}
	t.Errorf("live explain's commitments do not name %s: %+v", name, got.Commitments.Commitments)
}

// pick is m's values of want's keys (absent ones left out).
func pick(m, want map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k := range want {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

func (e *opEnv) testLatency(t *testing.T) {
	// The targets, with zero registration delay. The first sample
	// warms the operator up (its first batch, first solve, first create
	// after start: 1.5 s once in a full CI run where the others took
	// 1.03-1.06 s); it is logged, and the targets hold for the samples after
	// it, the steady state the issue measures.
	const (
		warmUp        = 1
		samples       = warmUp + 3
		batchIdle     = time.Second
		claimTarget   = batchIdle + 200*time.Millisecond
		runningTarget = 3 * time.Second
	)
	ctx := context.Background()
	ns := e.namespace(t, "latency")
	e.nodePool(t, "latency", 0, nil, req(v1alpha1.LabelCapacityType, "on-demand"), req("karpenter.k8s.aws/instance-family", "c6i"))
	// The node a real cluster runs the operator (and its other system pods)
	// on; its taint keeps the test's pods off it. Without any node the
	// scheduler takes a pod's failure as "no nodes available", retries it on
	// its backoff timer (1 s, 2 s, 4 s, ...) instead of on the new node's
	// events, and the first sample then measures that timer (up to 4.1 s
	// seen), not the operator.
	system := testenv.Node{Name: "system", Taints: []corev1.Taint{{Key: "CriticalAddonsOnly", Value: "true", Effect: corev1.TaintEffectNoSchedule}}}
	if _, err := e.AddNode(ctx, system); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: system.Name}})
	})
	if err := e.WaitNodeReady(ctx, system.Name, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	op := e.startOperator(t, "operator", nil, "--leader-election-id", "e2e-latency", "--batch-idle", batchIdle.String())
	t.Cleanup(func() { e.cleanup(t, ns, "latency") })
	op.waitLog(t, "provisioner started", 30*time.Second)

	w, err := client.NewWithWatch(e.RESTConfig(), client.Options{Scheme: e.c.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	var toClaim, toBound, toRunning []time.Duration
	for i := range samples {
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		podW, err := w.Watch(wctx, &corev1.PodList{}, client.InNamespace(ns))
		if err != nil {
			t.Fatal(err)
		}
		claimW, err := w.Watch(wctx, &v1alpha1.NodeClaimList{})
		if err != nil {
			t.Fatal(err)
		}
		before := map[string]bool{}
		for _, c := range e.claims(t, "") {
			before[c.Name] = true
		}
		// 7 CPUs: a node of its own each time.
		name := fmt.Sprintf("solo-%d", i)
		if err := e.c.Create(ctx, opPod(ns, name, "7", "1Gi", nil)); err != nil {
			t.Fatal(err)
		}
		var tUnsched, tClaim, tBound, tRunning time.Time
		var trace []string // what the pod went through, shown if a target is missed
		created := time.Now()
		for tUnsched.IsZero() || tClaim.IsZero() || tRunning.IsZero() {
			select {
			case ev := <-podW.ResultChan():
				p, ok := ev.Object.(*corev1.Pod)
				if !ok || p.Name != name {
					continue
				}
				now := time.Now()
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodScheduled {
						trace = append(trace, fmt.Sprintf("%6dms nominated %q node %q phase %s; PodScheduled %s %s: %s", now.Sub(created).Milliseconds(),
							p.Status.NominatedNodeName, p.Spec.NodeName, p.Status.Phase, c.Status, c.Reason, c.Message))
					}
				}
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && tUnsched.IsZero() {
						tUnsched = now
					}
				}
				if p.Spec.NodeName != "" && tBound.IsZero() {
					tBound = now
				}
				if p.Status.Phase == corev1.PodRunning && tRunning.IsZero() {
					tRunning = now
				}
			case ev := <-claimW.ResultChan():
				if nc, ok := ev.Object.(*v1alpha1.NodeClaim); ok && ev.Type == "ADDED" && tClaim.IsZero() && !before[nc.Name] {
					tClaim = time.Now()
				}
			case <-wctx.Done():
				t.Fatalf("sample %d: Unschedulable at %v, NodeClaim at %v, Running at %v: timed out", i, tUnsched, tClaim, tRunning)
			}
		}
		cancel()
		podW.Stop()
		claimW.Stop()
		toClaim = append(toClaim, tClaim.Sub(tUnsched))
		toBound = append(toBound, tBound.Sub(tUnsched))
		toRunning = append(toRunning, tRunning.Sub(tUnsched))
		if tClaim.Sub(tUnsched) > claimTarget || tRunning.Sub(tUnsched) > runningTarget {
			t.Logf("sample %d missed a target; NodeClaim at %dms; the pod's updates:\n  %s", i, tClaim.Sub(created).Milliseconds(), strings.Join(trace, "\n  "))
		}
	}
	for i := range samples {
		what := ""
		if i < warmUp {
			what = " (warm-up, not held to the targets)"
		}
		t.Logf("latency sample %d%s: Unschedulable → NodeClaim created %s (target ≤ %s); → pod bound %s; → pod Running %s (target ≤ %s, zero registration delay)",
			i, what, toClaim[i].Round(time.Millisecond), claimTarget, toBound[i].Round(time.Millisecond), toRunning[i].Round(time.Millisecond), runningTarget)
	}
	claimMax, runningMax := slices.Max(toClaim[warmUp:]), slices.Max(toRunning[warmUp:])
	t.Logf("latency: Unschedulable → NodeClaim up to %s (target %s); → Running up to %s (target %s)",
		claimMax.Round(time.Millisecond), claimTarget, runningMax.Round(time.Millisecond), runningTarget)
	if claimMax > claimTarget {
		t.Errorf("Unschedulable → NodeClaim took up to %s, beyond the target of batch idle + 200ms = %s", claimMax.Round(time.Millisecond), claimTarget)
	}
	if runningMax > runningTarget {
		t.Errorf("Unschedulable → Running took up to %s, beyond the target of %s", runningMax.Round(time.Millisecond), runningTarget)
	}
}

// burstPods are the burst scenario's pods: five shapes, two of which must
// run on on-demand capacity.
func burstPods(ns string) []*corev1.Pod {
	onDemand := map[string]string{v1alpha1.LabelCapacityType: "on-demand"}
	shapes := []struct {
		name, cpu, mem string
		n              int
		sel            map[string]string
	}{
		{"web", "250m", "512Mi", 100, nil},
		{"api", "500m", "1Gi", 80, onDemand},
		{"cache", "1", "4Gi", 60, nil},
		{"batch", "2", "2Gi", 40, nil},
		{"db", "1", "8Gi", 20, onDemand},
	}
	var pods []*corev1.Pod
	for _, s := range shapes {
		for i := range s.n {
			pods = append(pods, opPod(ns, fmt.Sprintf("%s-%d", s.name, i), s.cpu, s.mem, s.sel))
		}
	}
	return pods
}

// offlinePlan asks the solver, in process, for the same pods and pools.
func offlinePlan(t *testing.T, pods []*corev1.Pod, pools []*v1alpha1.NodePool) *solver.Plan {
	t.Helper()
	var objs snapshot.Objects
	for _, p := range pods {
		p = p.DeepCopy()
		p.Status.Phase = corev1.PodPending
		objs.Pods = append(objs.Pods, p)
	}
	for _, p := range pools {
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		objs.NodePools = append(objs.NodePools, raw)
	}
	cl := snapshot.FromObjects(&objs)
	for i := range cl.Pools {
		cl.Pools[i].Labels[v1alpha1.LabelNodePool] = cl.Pools[i].Name
	}
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	types, err := cat.InstanceTypes(sim.DefaultRegion)
	if err != nil {
		t.Fatal(err)
	}
	st := make([]solver.InstanceType, len(types))
	for i := range types {
		st[i] = cloud.NodeModel{}.SolverType(&types[i], sim.DefaultRegion)
	}
	plan, err := solver.Solve(&solver.Problem{ExtendedResources: cl.ExtendedResources, Pods: cl.Pods, Pools: cl.Pools, InstanceTypes: st})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func (e *opEnv) testBurst(t *testing.T) {
	ns := e.namespace(t, "burst")
	families := req("karpenter.k8s.aws/instance-family", "c6i", "m6i", "r6i")
	spot := e.nodePool(t, "spot", 50, nil, req(v1alpha1.LabelCapacityType, "spot"), families)
	od := e.nodePool(t, "on-demand", 10, nil, req(v1alpha1.LabelCapacityType, "on-demand"), families)
	op := e.startOperator(t, "operator", nil, "--leader-election-id", "e2e-burst")
	var terminated time.Duration
	t.Cleanup(func() {
		terminated = e.cleanup(t, ns, "spot", "on-demand")
		t.Logf("burst: deleting every NodeClaim drained and terminated all nodes in %s", terminated.Round(time.Millisecond))
	})
	op.waitLog(t, "provisioner started", 30*time.Second)

	pods := burstPods(ns)
	start := time.Now()
	e.createPods(t, pods)
	created := time.Since(start)
	var allBound, allRunning time.Duration
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		var l corev1.PodList
		if err := e.c.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		bound, running := 0, 0
		for _, p := range l.Items {
			if p.Spec.NodeName != "" {
				bound++
			}
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		if bound == len(pods) && allBound == 0 {
			allBound = time.Since(start)
		}
		if running == len(pods) {
			allRunning = time.Since(start)
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("not all %d pods Running after 3 minutes", len(pods))
	}

	plan := offlinePlan(t, pods, []*v1alpha1.NodePool{spot, od})
	claims := e.claims(t, "")
	cost := 0.0
	perPool := map[string]int{}
	for _, c := range claims {
		var p float64
		fmt.Sscan(c.Status.PricePerHour, &p)
		cost += p
		perPool[c.Labels[v1alpha1.LabelNodePool]]++
	}
	offlinePerPool := map[string]int{}
	for _, n := range plan.NewNodes {
		offlinePerPool[n.Pool]++
	}
	batches := op.records("batch planned")
	t.Logf("burst: %d pods created in %s, all bound to nodes after %s, all Running after %s; %d batches", len(pods), created.Round(time.Millisecond),
		allBound.Round(time.Millisecond), allRunning.Round(time.Millisecond), len(batches))
	for _, b := range batches {
		t.Logf("  batch: pods %v, nodeClaims %v, onInFlightNodes %v, window %v, solve %v, decision %v", b["pods"], b["nodeClaims"], b["onInFlightNodes"], b["window"], b["solve"], b["decision"])
	}
	t.Logf("burst: launched %d nodes %v for $%.4f/h; offline plan %d nodes %v for $%.4f/h (lower bound $%.4f/h): %+.2f%%",
		len(claims), perPool, cost, len(plan.NewNodes), offlinePerPool, plan.TotalPrice, plan.LowerBound, 100*(cost/plan.TotalPrice-1))
	e.logPlacement(t, ns, claims)
	// The operator opens the nodes of one decision together with the
	// pods nominated to them, so the scheduler packs them as planned and no
	// second batch is needed.
	if cost > plan.TotalPrice*1.05 {
		t.Errorf("launched $%.4f/h, more than 5%% above the offline plan's $%.4f/h", cost, plan.TotalPrice)
	}
	if perPool["spot"] == 0 || perPool["on-demand"] == 0 {
		t.Errorf("nodes per pool %v: want both pools used (on-demand pods need the low-weight pool, the rest the high-weight one)", perPool)
	}
	if n := len(e.simNodes(t)); n != len(claims) {
		t.Errorf("%d simulated nodes for %d NodeClaims", n, len(claims))
	}
}

// logPlacement reports, per NodeClaim, how many pods were nominated to it
// (their last Nominated event) and how many of those the scheduler bound
// to its node, so that a plan the scheduler did not follow shows.
func (e *opEnv) logPlacement(t *testing.T, ns string, claims []v1alpha1.NodeClaim) {
	t.Helper()
	ctx := context.Background()
	evs, err := e.Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Nominated"})
	if err != nil {
		t.Fatal(err)
	}
	planned := map[string]string{} // pod -> claim of its latest nomination
	latest := map[string]time.Time{}
	for _, ev := range evs.Items {
		at := ev.EventTime.Time
		if at.IsZero() {
			at = ev.LastTimestamp.Time
		}
		f := strings.Fields(strings.TrimPrefix(ev.Message, "nominated for NodeClaim "))
		if len(f) == 0 || at.Before(latest[ev.InvolvedObject.Name]) {
			continue
		}
		planned[ev.InvolvedObject.Name] = strings.TrimRight(f[0], ":,")
		latest[ev.InvolvedObject.Name] = at
	}
	nodeOf := map[string]string{}
	for _, c := range claims {
		nodeOf[c.Name] = c.Status.NodeName
	}
	var pods corev1.PodList
	if err := e.c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	type tally struct{ planned, asPlanned, elsewhere int }
	per := map[string]*tally{}
	for _, c := range claims {
		per[c.Name] = &tally{}
	}
	moved := 0
	for _, p := range pods.Items {
		c := planned[p.Name]
		if per[c] == nil {
			per[c] = &tally{}
		}
		per[c].planned++
		if p.Spec.NodeName == nodeOf[c] {
			per[c].asPlanned++
		} else {
			per[c].elsewhere++
			moved++
		}
	}
	for _, c := range claims {
		tl := per[c.Name]
		t.Logf("  NodeClaim %s (%s %s): %d pods planned, %d bound there, %d elsewhere", c.Name, c.Status.InstanceType, c.Status.CapacityType, tl.planned, tl.asPlanned, tl.elsewhere)
	}
	t.Logf("burst: %d of %d pods bound to the node of the NodeClaim they were nominated for", len(pods.Items)-moved, len(pods.Items))
}

func (e *opEnv) testPoolLimit(t *testing.T) {
	ctx := context.Background()
	ns := e.namespace(t, "limit")
	e.nodePool(t, "tight", 0, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16")},
		req(v1alpha1.LabelCapacityType, "on-demand"), req("karpenter.k8s.aws/instance-family", "c6i", "m6i"))
	op := e.startOperator(t, "operator", nil, "--leader-election-id", "e2e-limit")
	t.Cleanup(func() { e.cleanup(t, ns, "tight") })
	op.waitLog(t, "provisioner started", 30*time.Second)

	// 20 pods of 1.5 CPU = 30 CPUs wanted; the pool may launch 16.
	var pods []*corev1.Pod
	for i := range 20 {
		pods = append(pods, opPod(ns, fmt.Sprintf("cruncher-%d", i), "1500m", "1Gi", nil))
	}
	start := time.Now()
	e.createPods(t, pods)
	var running, pending []corev1.Pod
	var notes []string // the NotProvisioned events of an unbound pending pod
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var l corev1.PodList
		if err := e.c.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		running, pending = nil, nil
		for _, p := range l.Items {
			if p.Status.Phase == corev1.PodRunning {
				running = append(running, p)
			} else {
				pending = append(pending, p)
			}
		}
		if len(running) == 0 || len(pending) == 0 {
			return false, nil
		}
		// Any unbound pending pod carrying the event will do: pods bound
		// but not yet running have none, and events arrive per batch.
		for _, p := range pending {
			if p.Spec.NodeName == "" {
				if notes = e.podEvents(t, ns, p.Name, "NotProvisioned"); len(notes) > 0 {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%d Running, %d pending, and no NotProvisioned event on a pending pod", len(running), len(pending))
	}
	seen := time.Since(start)
	// Give the operator a few more batches to misbehave.
	time.Sleep(3 * time.Second)
	capacity := resource.Quantity{}
	claims := e.claims(t, "tight")
	for _, c := range claims {
		capacity.Add(c.Status.Capacity[corev1.ResourceCPU])
	}
	if capacity.Cmp(resource.MustParse("16")) > 0 {
		t.Errorf("the pool's NodeClaims have %s CPUs, over its limit of 16", capacity.String())
	}
	var np v1alpha1.NodePool
	if err := e.c.Get(ctx, client.ObjectKey{Name: "tight"}, &np); err != nil {
		t.Fatal(err)
	}
	t.Logf("limit: %d NodeClaims with %s CPUs (limit 16; status.resources.cpu %s), %d pods Running, %d pending; event on a pending pod within %s: %s",
		len(claims), capacity.String(), ptr.To(np.Status.Resources[corev1.ResourceCPU]).String(), len(running), len(pending), seen.Round(time.Millisecond), notes[0])
	if !strings.Contains(notes[0], "limit") {
		t.Errorf("the pending pod's event does not name the limit: %q", notes[0])
	}
}

// testInsufficientCapacity has the simulated cloud refuse the cheapest
// offering the pod fits: the refused NodeClaim is deleted within
// milliseconds, before any batch's cache shows it, and the pod must be
// planned again in the very next batch rather than stay nominated to it.
func (e *opEnv) testInsufficientCapacity(t *testing.T) {
	const (
		batchIdle = time.Second
		// One batch window, a launch and the node's opening (zero
		// registration delay), with a margin for a loaded machine.
		target = batchIdle + 4*time.Second
	)
	ctx := context.Background()
	ns := e.namespace(t, "ice")
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	all, err := cat.InstanceTypes(sim.DefaultRegion)
	if err != nil {
		t.Fatal(err)
	}
	allowed, zone := []string{"c6i.large", "m6i.large"}, cat.Zones(sim.DefaultRegion)[0]
	var cheapest string
	price := 0.0
	for _, it := range all {
		if !slices.Contains(allowed, it.Name) {
			continue
		}
		for _, o := range it.Offerings {
			if o.CapacityType == cloud.CapacityTypeOnDemand && o.Zone == zone && (cheapest == "" || o.Price < price) {
				cheapest, price = it.Name, o.Price
			}
		}
	}
	if cheapest == "" {
		t.Fatalf("the catalog offers none of %v on demand in %s", allowed, zone)
	}
	snc := &v1alpha1.SimNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "sim-ice"},
		Spec: v1alpha1.SimNodeClassSpec{InsufficientCapacity: []v1alpha1.SimOffering{
			{InstanceType: cheapest, Zone: zone, CapacityType: cloud.CapacityTypeOnDemand},
		}},
	}
	if err := e.c.Create(ctx, snc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), snc) })
	np := &v1alpha1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "ice"},
		Spec: v1alpha1.NodePoolSpec{Template: v1alpha1.NodeClaimTemplate{Spec: v1alpha1.NodeClaimTemplateSpec{
			NodeClassRef: v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "SimNodeClass", Name: snc.Name},
			Requirements: []v1alpha1.NodeSelectorRequirement{
				req(v1alpha1.LabelCapacityType, cloud.CapacityTypeOnDemand), req(solver.LabelInstanceType, allowed...), req(solver.LabelZone, zone),
			},
		}}},
	}
	if err := e.c.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	// A node for the system pods, as in the latency scenario: with no node
	// at all the scheduler retries the pod on its backoff timer rather than
	// on the new node's arrival.
	system := testenv.Node{Name: "system-ice", Taints: []corev1.Taint{{Key: "CriticalAddonsOnly", Value: "true", Effect: corev1.TaintEffectNoSchedule}}}
	if _, err := e.AddNode(ctx, system); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: system.Name}})
	})
	if err := e.WaitNodeReady(ctx, system.Name, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	// --launch-price-premium 0: the claim allows only offerings as cheap
	// as the planned one, so the refusal leaves it nothing and the replan
	// path is what runs (with no bound the same launch would land on the
	// next type: TestOperatorAWS shows that).
	op := e.startOperator(t, "operator", nil, "--leader-election-id", "e2e-ice", "--batch-idle", batchIdle.String(), "--launch-price-premium", "0")
	t.Cleanup(func() { e.cleanup(t, ns, np.Name) })
	op.waitLog(t, "provisioner started", 30*time.Second)

	start := time.Now()
	e.createPods(t, []*corev1.Pod{opPod(ns, "ice-0", "1", "2Gi", map[string]string{v1alpha1.LabelNodePool: np.Name})})
	e.waitRunning(t, ns, 1, 60*time.Second)
	took := time.Since(start)
	refusal := op.waitLog(t, "insufficient capacity; replanning", time.Second)
	afterRefusal := time.Since(logTime(t, refusal))
	claims := e.claims(t, np.Name)
	if len(claims) != 1 || claims[0].Status.InstanceType == cheapest || claims[0].Status.InstanceType == "" {
		t.Fatalf("pool ice has %d NodeClaims (%v); want one launched on an offering other than the refused %s", len(claims), claims, cheapest)
	}
	if n := len(op.records("launching NodeClaim")); n != 2 {
		t.Errorf("%d NodeClaims launched, want 2: the refused offering's, then the next cheapest's", n)
	}
	t.Logf("ice: %s/%s/on-demand ($%.4f/h) refused; the pod ran on %s %s after the refusal (target ≤ %s), %s after creation",
		cheapest, zone, price, claims[0].Status.InstanceType, afterRefusal.Round(time.Millisecond), target, took.Round(time.Millisecond))
	if afterRefusal > target {
		t.Errorf("the pod ran %s after the refusal, beyond %s (batch idle + launch + margin): the replan waited for more than the next batch",
			afterRefusal.Round(time.Millisecond), target)
	}
}

func (e *opEnv) testCrashAfterLaunch(t *testing.T) {
	ctx := context.Background()
	ns := e.namespace(t, "crash")
	e.nodePool(t, "crash", 0, nil, req(v1alpha1.LabelCapacityType, "on-demand"), req("karpenter.k8s.aws/instance-family", "m6i"))
	t.Cleanup(func() { e.forceCleanup(t, ns, "crash") })
	crashEnv := []string{"RIGHTSIZE_TEST_EXIT_AFTER_LAUNCH=42"}
	args := []string{"--leader-elect=false", "--gc-grace-period", "2s"}

	// 1. The operator launches and dies before writing the claim's status.
	if err := e.c.Create(ctx, opPod(ns, "first", "1", "1Gi", nil)); err != nil {
		t.Fatal(err)
	}
	crashing := e.startOperator(t, "crashing-1", crashEnv, args...)
	if code, err := crashing.exitCode(60 * time.Second); err != nil || code != 42 {
		t.Fatalf("operator exit: code %d, %v; want the test hook's 42", code, err)
	}
	claims, nodes := e.claims(t, "crash"), e.simNodes(t)
	if len(claims) != 1 || claims[0].Status.ProviderID != "" || len(nodes) != 1 {
		t.Fatalf("after the crash: %d claims (providerID %q), %d nodes; want 1 claim without status and 1 instance", len(claims), claims[0].Status.ProviderID, len(nodes))
	}
	instance := nodes[0].Spec.ProviderID

	// 2. Restarted, it adopts the instance instead of launching another.
	op := e.startOperator(t, "restarted-1", nil, args...)
	e.waitRunning(t, ns, 1, 60*time.Second)
	claims, nodes = e.claims(t, "crash"), e.simNodes(t)
	if len(claims) != 1 || len(nodes) != 1 || claims[0].Status.ProviderID != instance {
		t.Fatalf("after the restart: %d claims, %d nodes, claim's providerID %q (instance %s); want the one instance adopted",
			len(claims), len(nodes), claims[0].Status.ProviderID, instance)
	}
	t.Logf("crash: restarted operator adopted %s; 1 NodeClaim, 1 instance", instance)
	op.stop()

	// 3. Crash again, and force-delete that claim while the operator is
	// down: its instance is an orphan, collected after the grace period,
	// and the pod gets a new node.
	if err := e.c.Create(ctx, opPod(ns, "second", "1", "1Gi", nil)); err != nil {
		t.Fatal(err)
	}
	// The first node still has room for "second"; make sure it cannot go there.
	if err := e.c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"}}); err != nil {
		t.Fatal(err)
	}
	big := opPod(ns, "second", "7", "1Gi", nil)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return e.c.Create(ctx, big) == nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	crashing = e.startOperator(t, "crashing-2", crashEnv, args...)
	if code, err := crashing.exitCode(60 * time.Second); err != nil || code != 42 {
		t.Fatalf("second crash: code %d, %v", code, err)
	}
	var orphan string
	for _, c := range e.claims(t, "crash") {
		if c.Status.ProviderID == "" {
			orphan = c.Name
			orig := c.DeepCopy()
			c.Finalizers = nil
			if err := e.c.Patch(ctx, &c, client.MergeFrom(orig)); err != nil {
				t.Fatal(err)
			}
			if err := e.c.Delete(ctx, &c); err != nil {
				t.Fatal(err)
			}
		}
	}
	if orphan == "" {
		t.Fatal("no unlaunched claim after the second crash")
	}
	op = e.startOperator(t, "restarted-2", nil, args...)
	e.waitRunning(t, ns, 2, 60*time.Second)
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var n corev1.Node
		return apierrors.IsNotFound(e.c.Get(ctx, client.ObjectKey{Name: orphan}, &n)), nil
	})
	if err != nil {
		t.Fatalf("the orphan instance %s was not collected", orphan)
	}
	claims, nodes = e.claims(t, "crash"), e.simNodes(t)
	if len(claims) != 2 || len(nodes) != 2 {
		t.Errorf("at the end: %d claims and %d instances, want 2 and 2", len(claims), len(nodes))
	}
	gc := op.records("terminating an instance no NodeClaim owns")
	if len(gc) != 1 {
		t.Errorf("%d garbage-collection logs, want 1", len(gc))
	} else {
		t.Logf("crash: orphan %v collected after %v; the pod got a new node", gc[0]["nodeclaim"], gc[0]["age"])
	}
	op.stop()
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (e *opEnv) testLeaderElection(t *testing.T) {
	ns := e.namespace(t, "leader")
	e.nodePool(t, "leader", 0, nil, req(v1alpha1.LabelCapacityType, "on-demand"), req("karpenter.k8s.aws/instance-family", "c6i"))
	metricsA, metricsB := freePort(t), freePort(t)
	a := e.startOperator(t, "replica-a", nil, "--leader-election-id", "e2e-leader", "--metrics-bind-address", metricsA)
	a.waitLog(t, "elected leader; acting", 30*time.Second)
	b := e.startOperator(t, "replica-b", nil, "--leader-election-id", "e2e-leader", "--metrics-bind-address", metricsB)
	b.waitLog(t, "starting operator", 30*time.Second)
	t.Cleanup(func() { e.cleanup(t, ns, "leader") })

	var pods []*corev1.Pod
	for i := range 3 {
		pods = append(pods, opPod(ns, fmt.Sprintf("led-%d", i), "3", "1Gi", nil))
	}
	e.createPods(t, pods)
	e.waitRunning(t, ns, 3, 60*time.Second)
	if n := len(a.records("launching NodeClaim")); n == 0 {
		t.Errorf("the leader launched nothing")
	}
	if n := len(b.records("launching NodeClaim")) + len(b.records("launched")) + len(b.records("batch planned")); n != 0 {
		t.Errorf("the follower acted: %d provisioning logs", n)
	}
	if len(b.records("elected leader; acting")) != 0 {
		t.Errorf("both replicas were elected")
	}
	metrics := scrape(t, metricsA)
	for _, m := range []string{"rightsize_nodeclaims_created_total", "rightsize_nodeclaims_launched_total", "rightsize_nodeclaims_registered_total",
		"rightsize_provisioning_decision_duration_seconds", "rightsize_solver_duration_seconds", "rightsize_cluster_cost_per_hour_dollars", "rightsize_pods_pending"} {
		if !strings.Contains(metrics, m) {
			t.Errorf("leader's /metrics lacks %s", m)
		}
	}

	// The leader goes away; the follower takes over and acts.
	stopped := time.Now()
	a.stop()
	b.waitLog(t, "elected leader; acting", 30*time.Second)
	takeover := time.Since(stopped)
	e.createPods(t, []*corev1.Pod{opPod(ns, "after", "3", "1Gi", nil)})
	e.waitRunning(t, ns, 4, 60*time.Second)
	if len(b.records("launching NodeClaim")) == 0 {
		t.Errorf("the new leader launched nothing")
	}
	t.Logf("leader election: replica-a acted, replica-b idle; after replica-a's SIGTERM, replica-b led within %s and provisioned", takeover.Round(time.Millisecond))
}

// scrape returns the text of /metrics at addr.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		sb.WriteString(sc.Text() + "\n")
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return sb.String()
}
