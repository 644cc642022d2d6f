package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/sim"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/launch"
	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

// terminal drives the built plugin in a detached tmux session on a private
// socket: keys in with send-keys, the screen out with capture-pane.
type terminal struct {
	t      *testing.T
	socket string
	name   string
}

// startTerminal runs the plugin with args in a width×height tmux window.
func startTerminal(t *testing.T, kubeconfig string, width, height int, args ...string) *terminal {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is needed to drive the TUI (apt-get install -y tmux): %v", err)
	}
	term := &terminal{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock"), name: "tui"}
	quoted := []string{filepath.Join(pluginDir, "kubectl-rightsize")}
	for _, a := range args {
		quoted = append(quoted, "'"+a+"'")
	}
	// The shell keeps the window open after the plugin exits, so that an
	// error stays readable in the capture.
	script := fmt.Sprintf("KUBECONFIG=%s HOME=%s NO_COLOR=1 TERM=xterm-256color %s; echo EXITED $?; sleep 600", kubeconfig, t.TempDir(), strings.Join(quoted, " "))
	term.tmux("new-session", "-d", "-s", term.name, "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), "sh", "-c", script)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", term.socket, "kill-server").Run() })
	return term
}

func (term *terminal) tmux(args ...string) string {
	term.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", term.socket}, args...)...).CombinedOutput()
	if err != nil {
		term.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// capture returns the visible screen as plain text.
func (term *terminal) capture() string {
	return term.tmux("capture-pane", "-p", "-t", term.name)
}

// keys sends tmux key names ("2", "Enter", "Escape", "Space"), one at a
// time with a pause. After Escape it waits until the screen changes (every
// Escape here closes a view): a key that follows an unread Escape is read
// with it as Alt+key, which a fixed pause did not prevent on a loaded
// machine (a clean-clone run read "Escape", "2" as Alt+2, and the help
// stayed open).
func (term *terminal) keys(keys ...string) {
	term.t.Helper()
	for _, k := range keys {
		before := ""
		if k == "Escape" {
			before = term.capture()
		}
		term.tmux("send-keys", "-t", term.name, k)
		if k == "Escape" {
			term.waitUntil(10*time.Second, "a change after Escape", func(screen string) bool { return screen != before })
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// waitFor waits until the screen contains every string.
func (term *terminal) waitFor(timeout time.Duration, wants ...string) string {
	term.t.Helper()
	return term.waitUntil(timeout, fmt.Sprintf("%q", wants), func(screen string) bool {
		for _, w := range wants {
			if !strings.Contains(screen, w) {
				return false
			}
		}
		return true
	})
}

// waitUntil waits until ok accepts the screen; what describes what ok
// waits for.
func (term *terminal) waitUntil(timeout time.Duration, what string, ok func(screen string) bool) string {
	term.t.Helper()
	var screen string
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if screen = term.capture(); ok(screen) {
			return screen
		}
		time.Sleep(100 * time.Millisecond)
	}
	term.t.Fatalf("screen never showed %s within %v:\n%s", what, timeout, screen)
	return ""
}

// keep logs a screen and, when RIGHTSIZE_TUI_CAPTURES names a directory,
// writes it there (the README's captures come from here).
func (term *terminal) keep(name, screen string) {
	term.t.Logf("%s:\n%s", name, screen)
	if dir := os.Getenv("RIGHTSIZE_TUI_CAPTURES"); dir != "" {
		lines := strings.Split(strings.TrimRight(screen, "\n"), "\n")
		for i := range lines {
			lines[i] = strings.TrimRight(lines[i], " ")
		}
		if err := os.WriteFile(filepath.Join(dir, name+".txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			term.t.Error(err)
		}
	}
}

const (
	tuiSimClass = `
apiVersion: rightsize.dev/v1alpha1
kind: SimNodeClass
metadata: {name: sim}
spec: {}
`
	tuiPool = `
apiVersion: rightsize.dev/v1alpha1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: rightsize.dev, kind: SimNodeClass, name: sim}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge, m5.2xlarge, c5.xlarge, c5.2xlarge]}
`
)

// TestTUIShowsPendingPodsAndLaunchesANodeClaim drives `kubectl rightsize tui`
// in tmux against the local control plane: pending pods appear with the
// scheduler's message and our reason, every view draws, a proposed node is
// launched from the screen after the confirmation, the NodeClaim appears in
// the cluster, and once a node registers for it (this test plays the
// operator) the pods turn Running on screen.
func TestTUIShowsPendingPodsAndLaunchesANodeClaim(t *testing.T) {
	env := sharedEnv(t).Env
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	installTUICRDs(t, env)
	dyn, err := dynamic.NewForConfig(env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{tuiSimClass, tuiPool} {
		if _, err := create(ctx, t, dyn, doc); err != nil {
			t.Fatalf("creating %s: %v", doc, err)
		}
	}
	addNodeRetrying(ctx, t, env, testenv.Node{Name: "small-1", Labels: map[string]string{
		"node.kubernetes.io/instance-type": "m5.large", "karpenter.sh/capacity-type": "on-demand", "topology.kubernetes.io/zone": "us-east-1a",
	}, Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")}})
	if err := env.WaitNodeReady(ctx, "small-1", time.Minute); err != nil {
		t.Fatal(err)
	}
	kube := env.Client()
	if _, err := kube.AppsV1().Deployments("default").Create(ctx, deployment("web", 2, "1500m", "3Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// One of the two fits small-1; wait for the other to be Unschedulable.
	waitUnschedulable(ctx, t, env, 1)

	term := startTerminal(t, env.Kubeconfig, 120, 32, "tui")
	screen := term.waitFor(60*time.Second, "Deployment/web", "Insufficient cpu", "1 pending", "new-1")
	term.keep("pending", screen)

	term.keys("Enter")
	term.keep("pending-detail", term.waitFor(10*time.Second, "Constraints of the pod", "NodePool general", "type(s) fit; cheapest"))
	term.keys("Escape")

	term.keys("2")
	term.keep("proposed", term.waitFor(10*time.Second, "Plan: 1 node(s)", "lower bound", "new-1"))
	term.keys("3")
	term.keep("nodes", term.waitFor(10*time.Second, "small-1", "m5.large", "Ready"))
	term.keys("4")
	term.keep("consolidation", term.waitFor(10*time.Second, "Saving available"))
	term.keys("?")
	term.keep("help", term.waitFor(10*time.Second, "Keys", "launch selected"))
	term.keys("Escape")

	// Cancel first: nothing is created.
	term.keys("2", "Space", "L")
	term.keep("launch-confirm", term.waitFor(10*time.Second, "Launch 1 node(s)?", "Total: $", "[y] launch"))
	term.keys("n")
	term.waitFor(10*time.Second, "launch cancelled")
	claims := dyn.Resource(v1alpha1.SchemeGroupVersion.WithResource("nodeclaims"))
	if l, err := claims.List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Fatalf("after cancel: %v NodeClaims, err %v", len(l.Items), err)
	}

	// Accept: a NodeClaim appears.
	term.keys("Space", "L", "y")
	term.waitFor(20*time.Second, "created NodeClaim general-")
	var claim *unstructured.Unstructured
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := claims.List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) == 0 {
			return false, nil
		}
		claim = &l.Items[0]
		return true, nil
	}); err != nil {
		t.Fatalf("no NodeClaim created: %v", err)
	}
	typ, zone := claimRequirement(claim, "node.kubernetes.io/instance-type"), claimRequirement(claim, "topology.kubernetes.io/zone")
	if typ == "" || zone == "" || claim.GetLabels()[v1alpha1.LabelNodePool] != "general" {
		t.Fatalf("NodeClaim %s lacks its type, zone or pool: %v", claim.GetName(), claim.Object)
	}
	if ref, _, _ := unstructured.NestedString(claim.Object, "spec", "nodeClassRef", "name"); ref != "sim" {
		t.Errorf("NodeClaim nodeClassRef %q, want the pool's sim", ref)
	}
	term.keep("launched", term.waitFor(20*time.Second, claim.GetName(), "NodeClaim pending"))

	// Play the operator: the node registers, the claim records it.
	t.Logf("no operator runs in this test: registering node %s for NodeClaim %s (%s in %s) by hand", claim.GetName(), claim.GetName(), typ, zone)
	addNodeRetrying(ctx, t, env, testenv.Node{Name: claim.GetName(), Labels: map[string]string{
		"node.kubernetes.io/instance-type": typ, "topology.kubernetes.io/zone": zone, "karpenter.sh/capacity-type": "on-demand",
		v1alpha1.KarpenterLabelNodePool: "general", v1alpha1.LabelNodePool: "general",
	}, Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")}})
	_ = unstructured.SetNestedField(claim.Object, claim.GetName(), "status", "nodeName")
	_ = unstructured.SetNestedSlice(claim.Object, []any{
		map[string]any{"type": "Launched", "status": "True", "reason": "Launched", "message": "", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)},
		map[string]any{"type": "Registered", "status": "True", "reason": "Registered", "message": "", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)},
	}, "status", "conditions")
	if _, err := claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating the NodeClaim's status: %v", err)
	}
	screen = term.waitFor(90*time.Second, claim.GetName(), "node Ready, 1/1 pods Running")
	term.keep("launched-running", screen)
	term.keys("1")
	term.keep("pending-after", term.waitFor(30*time.Second, "0 pending", "No pending pods."))
	term.keys("3")
	term.keep("nodes-after", term.waitFor(10*time.Second, claim.GetName(), "small-1"))
	term.keys("q")
	term.waitFor(10*time.Second, "EXITED 0")

	// The NodePool goes: the TUI's NodeClaim goes with it, collected by the
	// controller-manager's garbage collector through its owner reference,
	// as the operator's own claims are (the operator, were it running,
	// would then drain and terminate the node).
	pools := dyn.Resource(v1alpha1.SchemeGroupVersion.WithResource("nodepools"))
	if err := pools.Delete(ctx, "general", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting NodePool general: %v", err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := claims.Get(ctx, claim.GetName(), metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("NodeClaim %s outlived its deleted NodePool general by 60 s: the TUI's claims must go with their pool", claim.GetName())
	}
}

const tuiDirectPool = `
apiVersion: rightsize.dev/v1alpha1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: rightsize.dev, kind: SimNodeClass, name: sim}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge]}
`

// TestTUILaunchesDirectlyOnTheSimulatedCloudWithoutTheOperator drives
// `kubectl rightsize tui --cloud sim` with no operator running: the pending
// pods show, a proposed node is launched from the screen through the
// simulated cloud (a kwok Node appears), the TUI registers it in the
// operator's place, and the pods turn Running on screen. With the CRDs and
// a NodePool installed, the NodeClaim it records carries the instance, so
// that an operator started later adopts it; without them the instance is
// launched for the default pool and only its tags name the claim.
func TestTUILaunchesDirectlyOnTheSimulatedCloudWithoutTheOperator(t *testing.T) {
	for _, crds := range []bool{true, false} {
		name := "with the CRDs and a NodePool"
		if !crds {
			name = "without the CRDs"
		}
		t.Run(name, func(t *testing.T) { testTUIDirectLaunch(t, crds) })
	}
}

func testTUIDirectLaunch(t *testing.T, crds bool) {
	// Without the CRDs, on a plane of its own: the shared one has them.
	var env *testenv.Env
	if crds {
		env = sharedEnv(t).Env
	} else {
		env = testenv.Start(t)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dyn, err := dynamic.NewForConfig(env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	pool, typ := "default", "c6a.xlarge" // the general-purpose default pool's cheapest for the pods
	if crds {
		installTUICRDs(t, env)
		for _, doc := range []string{tuiSimClass, tuiDirectPool} {
			if _, err := create(ctx, t, dyn, doc); err != nil {
				t.Fatalf("creating %s: %v", doc, err)
			}
		}
		pool, typ = "general", "m5.xlarge"
	}
	kube := env.Client()
	if _, err := kube.AppsV1().Deployments("default").Create(ctx, deployment("api", 2, "1", "2Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUnschedulable(ctx, t, env, 2)

	term := startTerminal(t, env.Kubeconfig, 120, 30, "tui", "--cloud", "sim")
	term.waitFor(60*time.Second, "rightsize DIRECT:sim", "Deployment/api", "2 pending", typ)
	term.keys("2", "a", "L")
	suffix := map[bool]string{true: "", false: "-no-crds"}[crds]
	term.keep("direct-confirm"+suffix, term.waitFor(10*time.Second, "node(s)?", "directly on sim", typ, "[y] launch"))
	launchAt := time.Now()
	term.keys("y")
	record := "no NodeClaim CRD or NodePool to record it in"
	if crds {
		record = "NodeClaim " + pool + "-"
	}
	term.waitFor(20*time.Second, "launched sim://", record)

	// The kwok Nodes of the simulated instances, opened to pods.
	var nodes []corev1.Node
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "sim.rightsize.dev/cluster=rightsize"})
		if err != nil || len(l.Items) == 0 {
			return false, nil
		}
		nodes = l.Items
		return true, nil
	}); err != nil {
		t.Fatalf("no simulated node appeared: %v", err)
	}
	nodeAt := time.Since(launchAt)
	screen := term.waitFor(60*time.Second, nodes[0].Name, "pods Running")
	var pods *corev1.PodList
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err = kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("pods not Running: %v", err)
	}
	// Every launch row, not just one, must get there (the scheduler binds
	// the pods of two launches a moment apart).
	screen = term.waitUntil(30*time.Second, "every launch's pods Running", func(s string) bool {
		return strings.Contains(s, "0 pending") && strings.Contains(s, "pods Running") &&
			!strings.Contains(s, " 0/") && !strings.Contains(s, "waiting for its node") && !strings.Contains(s, "not Ready")
	})
	runningAt := time.Since(launchAt)
	term.keep("direct-running"+suffix, screen)
	t.Logf("%d node(s); launch key to the first Node object: %v; to every pod Running on screen: %v", len(nodes), nodeAt.Round(time.Millisecond), runningAt.Round(time.Millisecond))

	onNodes := map[string]*corev1.Node{}
	for i := range nodes {
		n, err := kube.CoreV1().Nodes().Get(ctx, nodes[i].Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		onNodes[n.Name] = n
		for _, taint := range n.Spec.Taints {
			if taint.Key == v1alpha1.TaintKeyUnregistered {
				t.Errorf("node %s keeps the unregistered taint", n.Name)
			}
		}
		if n.Labels[v1alpha1.LabelNodePool] != pool || n.Labels["node.kubernetes.io/instance-type"] != typ || n.Labels["sim.rightsize.dev/nodeclaim"] != n.Name {
			t.Errorf("node %s labels %v: want pool %s, %s, tagged with its claim", n.Name, n.Labels, pool, typ)
		}
		// Marked for an operator's garbage collection to adopt only when
		// no NodeClaim object records it (test/e2e/adopt_test.go).
		if marked := n.Annotations[v1alpha1.AnnotationLaunchedDirectly] == "sim"; marked == crds {
			t.Errorf("node %s annotations %v: adoption marker %v, want %v", n.Name, n.Annotations, marked, !crds)
		}
	}
	for _, p := range pods.Items {
		if onNodes[p.Spec.NodeName] == nil {
			t.Errorf("pod %s Running on %q, not on a launched node", p.Name, p.Spec.NodeName)
		}
	}
	claims, err := dyn.Resource(v1alpha1.SchemeGroupVersion.WithResource("nodeclaims")).List(ctx, metav1.ListOptions{})
	if !crds {
		if err == nil {
			t.Errorf("without the CRDs NodeClaims are served: %d", len(claims.Items))
		}
	} else {
		if err != nil || len(claims.Items) != len(nodes) {
			t.Fatalf("%d NodeClaims for %d nodes: %v", len(claims.Items), len(nodes), err)
		}
		// Each NodeClaim records its instance, as the operator would have.
		for _, claim := range claims.Items {
			n := onNodes[claim.GetName()]
			id, _, _ := unstructured.NestedString(claim.Object, "status", "providerID")
			nodeName, _, _ := unstructured.NestedString(claim.Object, "status", "nodeName")
			if n == nil || id != n.Spec.ProviderID || nodeName != n.Name {
				t.Errorf("NodeClaim %s status providerID %q nodeName %q matches no launched node", claim.GetName(), id, nodeName)
			}
			conds, _, _ := unstructured.NestedSlice(claim.Object, "status", "conditions")
			trueConds := map[string]bool{}
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["status"] == "True" {
					trueConds[fmt.Sprint(m["type"])] = true
				}
			}
			for _, want := range []string{"Launched", "Registered", "Initialized", "Ready"} {
				if !trueConds[want] {
					t.Errorf("NodeClaim %s: condition %s not True: %v", claim.GetName(), want, conds)
				}
			}
			if claim.GetAnnotations()[v1alpha1.AnnotationLaunchedDirectly] != "sim" {
				t.Errorf("NodeClaim annotations %v lack launched-directly: sim", claim.GetAnnotations())
			}
		}
	}
	term.keys("q")
	term.waitFor(10*time.Second, "EXITED 0")
	resumeAfterQuit(ctx, t, env, pool, suffix)
	t.Logf("test took %v after the control plane started", time.Since(start).Round(time.Millisecond))
}

// resumeAfterQuit: a run that launched a node and quit before it joined
// leaves it closed to pods (the unregistered taint); the next run of
// tui --cloud sim finds it by its launch marker, registers and opens it,
// and the pod it was launched for runs there.
func resumeAfterQuit(ctx context.Context, t *testing.T, env *testenv.Env, pool, suffix string) {
	t.Helper()
	kube := env.Client()
	if _, err := kube.AppsV1().Deployments("default").Create(ctx, deployment("late", 1, "2", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUnschedulable(ctx, t, env, 1)
	// The earlier run's launch, through the launcher code the TUI calls;
	// the run "quits" before the node joins: no Register, no Open. (Two
	// CPUs fit on none of the nodes launched so far.)
	c := newOpEnv(t, env).c
	provider, err := sim.New(sim.Options{Client: c, ClusterName: "rightsize"})
	if err != nil {
		t.Fatal(err)
	}
	l := &launch.DirectLauncher{
		CloudName: "sim", ClusterName: "rightsize", Client: c, LaunchedBy: "kubectl-rightsize-tui",
		Cloud:        func(context.Context, string) (cloud.CloudProvider, error) { return provider, nil },
		ClaimsServed: func() (bool, error) { return launch.Served(kube.Discovery(), launch.NodeClaims) },
	}
	launched, err := l.Launch(ctx, launch.Request{Name: "new-1", Region: sim.DefaultRegion, Node: solver.NewNode{
		Pool: pool, InstanceType: "m5.xlarge", Zone: "us-east-1a", CapacityType: cloud.CapacityTypeOnDemand,
		Requested: solver.Resources{solver.CPU: 2000, solver.Memory: 1 << 30},
	}})
	if err != nil {
		t.Fatal(err)
	}
	node := waitNode(ctx, t, kube, launched.Direct.Status.ProviderID)
	if !launch.HasUnregisteredTaint(node) {
		t.Fatalf("node %s joined open to pods before anyone registered it: %v", node.Name, node.Spec.Taints)
	}

	resumedAt := time.Now()
	term := startTerminal(t, env.Kubeconfig, 120, 30, "tui", "--cloud", "sim")
	term.waitFor(60*time.Second, "launched directly by an earlier run", node.Name)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=late"})
		return err == nil && len(pods.Items) == 1 && pods.Items[0].Status.Phase == corev1.PodRunning && pods.Items[0].Spec.NodeName == node.Name, nil
	}); err != nil {
		t.Fatalf("the pod of the resumed node %s never ran there: %v", node.Name, err)
	}
	term.keep("direct-resumed"+suffix, term.waitFor(30*time.Second, "0 pending"))
	t.Logf("resumed node %s: pod Running on it %v after the next run started", node.Name, time.Since(resumedAt).Round(time.Millisecond))
	term.keys("q")
	term.waitFor(10*time.Second, "EXITED 0")
}

// waitNode waits for the Node of an instance.
func waitNode(ctx context.Context, t *testing.T, kube kubernetes.Interface, providerID string) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for i := range nodes.Items {
			if nodes.Items[i].Spec.ProviderID == providerID {
				node = &nodes.Items[i]
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("no node for instance %s: %v", providerID, err)
	}
	return node
}

// TestTUIReadOnlyOffersNoLaunch checks --read-only on a live cluster.
func TestTUIReadOnlyOffersNoLaunch(t *testing.T) {
	env := sharedEnv(t).Env
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := env.Client().AppsV1().Deployments("default").Create(ctx, deployment("api", 1, "1", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUnschedulable(ctx, t, env, 1)
	term := startTerminal(t, env.Kubeconfig, 80, 24, "tui", "--read-only")
	term.waitFor(60*time.Second, "READ-ONLY", "Deployment/api", "prices: embedded AWS catalog of ")
	term.keys("2", "Space", "L")
	term.waitFor(10*time.Second, "read-only: launching is off")
	term.keys("q")
	term.waitFor(10*time.Second, "EXITED 0")
}

// installTUICRDs applies the generated CRDs, config/crd/rightsize.dev_*.yaml.
func installTUICRDs(t *testing.T, env *testenv.Env) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(crdDir, "rightsize.dev_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s: %v", crdDir, err)
	}
	args := []string{"apply", "--server-side"}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	if r := kubectl(t, env, args...); r.err != nil {
		t.Fatalf("kubectl apply: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	if r := kubectl(t, env, "wait", "--for", "condition=Established", "--timeout", "60s", "crd/nodeclaims.rightsize.dev", "crd/nodepools.rightsize.dev", "crd/simnodeclasses.rightsize.dev"); r.err != nil {
		t.Fatalf("kubectl wait: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
}

// waitUnschedulable waits until n pods of the default namespace are
// marked Unschedulable by the scheduler.
func waitUnschedulable(ctx context.Context, t *testing.T, env *testenv.Env, n int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := env.Client().CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		count := 0
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
					count++
				}
			}
		}
		return count >= n, nil
	})
	if err != nil {
		t.Fatalf("fewer than %d unschedulable pods: %v", n, err)
	}
}

// addNodeRetrying is env.AddNode, tolerating a conflict when it sets the
// node's status: the controller-manager may update a fresh Node first.
func addNodeRetrying(ctx context.Context, t *testing.T, env *testenv.Env, n testenv.Node) {
	t.Helper()
	_, err := env.AddNode(ctx, n)
	if err == nil {
		return
	}
	if !strings.Contains(err.Error(), "set status") {
		t.Fatal(err)
	}
	t.Logf("retrying the node's status after a conflict: %v", err)
	nodes := env.Client().CoreV1().Nodes()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := nodes.Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		capacity := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}
		for k, v := range n.Capacity {
			capacity[k] = v
		}
		node.Status.Capacity, node.Status.Allocatable = capacity, capacity.DeepCopy()
		_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// claimRequirement returns the single In value of a NodeClaim requirement.
func claimRequirement(u *unstructured.Unstructured, key string) string {
	reqs, _, _ := unstructured.NestedSlice(u.Object, "spec", "requirements")
	for _, r := range reqs {
		m, _ := r.(map[string]any)
		if m["key"] == key {
			if vals, _ := m["values"].([]any); len(vals) == 1 {
				s, _ := vals[0].(string)
				return s
			}
		}
	}
	return ""
}

// TestTUIOfflineTellsTheTruth drives `kubectl rightsize tui -f` in tmux,
// no cluster, through what issue 18 asks of the TUI: the prices' source
// and date under the summary, tab badges that count what the summary
// counts, offline help without launch keys, a proposed node's allowed
// instance types (#17: their count and the first few), and a what-if
// region that fails: its error shown, the header and prices line still
// those of the plan on screen.
func TestTUIOfflineTellsTheTruth(t *testing.T) {
	t.Parallel() // no control plane
	manifest := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(manifest, []byte(webDeployment(6, `{requests: {cpu: "1", memory: 2Gi}}`)), 0o600); err != nil {
		t.Fatal(err)
	}
	term := startTerminal(t, "/nonexistent", 100, 30, "tui", "-f", manifest)
	screen := term.waitFor(60*time.Second, "6 pods │ plan $", "prices: embedded AWS catalog of 2026-07-20, region us-east-1 (spot 2025-05-28)")
	term.keep("offline-pending", screen)
	// The pending badge counts pods, as the summary and the header do.
	if !strings.Contains(screen, " 1 Pending 6 ") {
		t.Errorf("the pending tab's badge does not count the 6 pods:\n%s", screen)
	}

	term.keys("?")
	screen = term.waitFor(10*time.Second, "What-if", "Offline (-f): nothing to launch into")
	for _, launch := range []string{"launch selected", "select a proposed node"} {
		if strings.Contains(screen, launch) {
			t.Errorf("offline help lists %q:\n%s", launch, screen)
		}
	}
	term.keys("Escape", "2")
	screen = term.waitFor(10*time.Second, " 2 Proposed ", "prices: embedded AWS catalog of 2026-07-20, region us-east-1 (spot 2025-05-28)")
	term.keys("Enter")
	screen = term.waitFor(10*time.Second, "Allowed types: ", "more (explain -o json lists them all)")
	term.keep("offline-proposed-detail", screen)
	flat := strings.Join(strings.Fields(screen), " ")
	if !regexp.MustCompile(`Allowed types: \d+, the cloud picks among them \(planned first, then by price\): ([a-z0-9-]+\.[a-z0-9]+, ){8}… \d+ more`).MatchString(flat) {
		t.Errorf("the detail does not give the count and the first 8 allowed types:\n%s", screen)
	}

	// A region that does not exist: the error, and the plan before it.
	term.keys("Escape", "r", "C-u")
	for _, k := range "xx-nowhere-1" {
		term.keys(string(k))
	}
	term.keys("Enter")
	screen = term.waitFor(30*time.Second, "re-planning failed, showing the last plan: ", "unknown AWS region", "e.g.")
	term.keep("offline-whatif-failed", screen)
	if !strings.Contains(screen, "prices: embedded AWS catalog of 2026-07-20, region us-east-1 (spot 2025-05-28)") || strings.Contains(screen, "region xx-nowhere-1") {
		t.Errorf("after the failed what-if the prices line does not name the plan on screen's region:\n%s", screen)
	}
	term.keys("q")
	term.waitFor(10*time.Second, "EXITED 0")
}
