// Package e2e tests kubectl-rightsize end to end on a real local control
// plane (test/testenv): the built plugin binary, run directly and through
// the built kubectl, against a real API server, scheduler, controller-manager
// and kwok nodes.
//
// # Which tests share a control plane
//
// Starting a plane and installing the CRDs takes 10-30 s on a loaded
// 2-core machine, and most of a test's time on it is spent waiting on
// timers (batch windows, validation delays, drains), so the tests share a
// few planes and run side by side ([planes]: four unless
// RIGHTSIZE_E2E_PLANES says otherwise, started as tests need them and
// stopped by TestMain). [sharedEnv] calls t.Parallel and gives the test a
// plane to itself, the longest tests first; after each test the plane is
// put back as it was started ([sharedPlane.reset]): what the test created
// — namespaces, workloads, nodes, volumes, NodePools and NodeClaims,
// priority classes, RBAC, CRDs, leader-election Leases, events — is
// deleted, so the next test finds an empty cluster with the rightsize.dev
// CRDs. A test that runs an operator ([startOpEnv]) shares a plane the
// same way: its operators are stopped by the test's cleanups, which run
// before the reset, so no operator outlives its test. A test that holds
// time to a target (latency, the cost after a timed ramp) takes a plane
// with [soloEnv] instead, without t.Parallel: it runs in go test's
// sequential phase, with no other test beside it. The tests that need no
// plane at all, and only read the repository, run in parallel too.
//
// A test keeps a plane of its own ([ownOpEnv], [testenv.Start]) only when
// it stops or pauses the API server, needs a cluster without the
// rightsize.dev CRDs, or installs them (or RBAC for them) its own way, as
// helm does. Those tests call t.Parallel too.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator"
	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

// pluginDir holds the kubectl-rightsize binary built by TestMain.
var pluginDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "rightsize-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-rightsize"), "github.com/rightsize-dev/kubectl-rightsize/cmd/kubectl-rightsize")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building the plugin: %v\n", err)
		return 1
	}
	pluginDir = dir
	defer planes.stop()
	return m.Run()
}

// result is what a run of the plugin printed.
type result struct {
	stdout, stderr string
	err            error
	took           time.Duration
}

// plugin runs the built kubectl-rightsize with KUBECONFIG set to kubeconfig.
func plugin(t testing.TB, kubeconfig string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(pluginDir, "kubectl-rightsize"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "HOME="+t.TempDir())
	return runCmd(cmd)
}

// kubectl runs `kubectl ARGS` with the built kubectl of env and the plugin
// on PATH.
func kubectl(t testing.TB, env *testenv.Env, args ...string) result {
	t.Helper()
	return runKubectl(env, args...)
}

// runKubectl is kubectl outside a test.
func runKubectl(env *testenv.Env, args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := env.Kubectl(ctx, args...)
	cmd.Env = append(cmd.Env, "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return runCmd(cmd)
}

func runCmd(cmd *exec.Cmd) result {
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	return result{stdout: out.String(), stderr: errOut.String(), err: err, took: time.Since(start)}
}

// crdDir holds the generated CRD manifests.
var crdDir = filepath.Join("..", "..", "config", "crd")

// installCRDs applies config/crd (a kustomization) to env and waits until every CRD is
// Established.
func installCRDs(t testing.TB, env *testenv.Env) {
	t.Helper()
	if err := applyCRDs(env); err != nil {
		t.Fatal(err)
	}
}

// applyCRDs is installCRDs returning what went wrong.
func applyCRDs(env *testenv.Env) error {
	if r := runKubectl(env, "apply", "--server-side", "-k", crdDir); r.err != nil {
		return fmt.Errorf("kubectl apply -k %s: %w\n%s%s", crdDir, r.err, r.stdout, r.stderr)
	}
	args := []string{"wait", "--for", "condition=Established", "--timeout", "60s"}
	for _, res := range resources {
		args = append(args, "crd/"+res+"."+v1alpha1.Group)
	}
	if r := runKubectl(env, args...); r.err != nil {
		return fmt.Errorf("kubectl wait: %w\n%s%s", r.err, r.stdout, r.stderr)
	}
	return nil
}

// opEnv is a control plane with a client that knows the rightsize.dev
// kinds.
type opEnv struct {
	*testenv.Env
	c client.Client
}

// startOpEnv gives a test that runs an operator the shared control plane
// (sharedEnv): the operators it starts are stopped by cleanups registered
// after sharedEnv's, which therefore run first, before the reset.
func startOpEnv(t *testing.T) *opEnv {
	t.Helper()
	return sharedEnv(t)
}

// ownOpEnv starts a control plane of the test's own with the rightsize.dev
// CRDs installed, for a test that stops or pauses the API server.
func ownOpEnv(t *testing.T) *opEnv {
	t.Helper()
	env := testenv.Start(t)
	installCRDs(t, env)
	return newOpEnv(t, env)
}

// newOpEnv wraps env with a client that knows the rightsize.dev kinds.
func newOpEnv(t testing.TB, env *testenv.Env) *opEnv {
	t.Helper()
	e, err := opClient(env)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func opClient(env *testenv.Env) (*opEnv, error) {
	ctrllog.SetLogger(logr.Discard())
	scheme, err := operator.Scheme()
	if err != nil {
		return nil, fmt.Errorf("operator scheme: %w", err)
	}
	c, err := client.New(env.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("controller-runtime client: %w", err)
	}
	return &opEnv{Env: env, c: c}, nil
}

// dumpLogs logs the tail of each component's log if t failed.
func (s *sharedPlane) dumpLogs(t *testing.T) {
	if t.Failed() {
		var buf bytes.Buffer
		s.env.DumpLogs(&buf, 40)
		t.Log(buf.String())
	}
}

// resetTargets are the kinds a test may create on the shared plane and
// reset deletes, CRDs and namespaces first. Objects of other kinds in a
// namespace go with the namespace; finalizers are stripped, for no
// controller here removes those of PersistentVolumes, claims or
// NodeClaims once their owner is gone.
var resetTargets = []schema.GroupVersionResource{
	{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
	{Version: "v1", Resource: "namespaces"},
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "apps", Version: "v1", Resource: "daemonsets"},
	{Group: "apps", Version: "v1", Resource: "replicasets"},
	{Group: "batch", Version: "v1", Resource: "jobs"},
	{Version: "v1", Resource: "pods"},
	{Version: "v1", Resource: "persistentvolumeclaims"},
	{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"},
	{Version: "v1", Resource: "events"},
	{Version: "v1", Resource: "serviceaccounts"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	{Version: "v1", Resource: "nodes"},
	{Version: "v1", Resource: "persistentvolumes"},
	{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"},
	{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	v1alpha1.SchemeGroupVersion.WithResource("nodeclaims"),
	v1alpha1.SchemeGroupVersion.WithResource("nodepools"),
	v1alpha1.SchemeGroupVersion.WithResource("simnodeclasses"),
	v1alpha1.SchemeGroupVersion.WithResource("ec2nodeclasses"),
	v1alpha1.SchemeGroupVersion.WithResource("commitments"),
}

// namespaces is the reset target of namespaces.
var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// keep reports whether reset leaves o alone although the plane did not
// hold it when it started: what the control plane's own components create
// and would create again (their leader-election and identity Leases, each
// namespace's default ServiceAccount), so that reset does not chase them.
func keep(gvr schema.GroupVersionResource, o *unstructured.Unstructured) bool {
	switch gvr.Resource {
	case "leases":
		name := o.GetName()
		return o.GetNamespace() == "kube-system" && (strings.HasPrefix(name, "kube-") || strings.HasPrefix(name, "apiserver-"))
	case "serviceaccounts":
		return o.GetName() == "default"
	}
	return false
}

// inventory lists the objects of every reset target, by namespace/name.
func (s *sharedPlane) inventory() (map[schema.GroupVersionResource]map[string]bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inv := map[schema.GroupVersionResource]map[string]bool{}
	for _, gvr := range resetTargets {
		list, err := s.dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", gvr.Resource, err)
		}
		inv[gvr] = map[string]bool{}
		for _, o := range list.Items {
			inv[gvr][objectKey(&o)] = true
		}
	}
	return inv, nil
}

func objectKey(o *unstructured.Unstructured) string { return o.GetNamespace() + "/" + o.GetName() }

// reset deletes every object of the reset targets that the plane did not
// hold when it started, and waits until they are gone. Pods go at once
// (grace period 0): no kubelet has to stop them.
func (s *sharedPlane) reset() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var left []string
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		left = left[:0]
		for _, gvr := range resetTargets {
			list, err := s.dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) { // a CRD this test deleted
					continue
				}
				return false, fmt.Errorf("listing %s: %w", gvr.Resource, err)
			}
			for _, o := range list.Items {
				if s.base[gvr][objectKey(&o)] || keep(gvr, &o) {
					continue
				}
				if gvr.Resource == "events" && !s.base[namespaces]["/"+o.GetNamespace()] {
					continue // goes with its namespace, and there may be thousands
				}
				left = append(left, gvr.Resource+" "+strings.TrimPrefix(objectKey(&o), "/"))
				if err := s.remove(ctx, gvr, &o); err != nil {
					return false, err
				}
			}
		}
		return len(left) == 0, nil
	})
	if err != nil && len(left) > 0 {
		return fmt.Errorf("%w; still there: %s", err, strings.Join(left, ", "))
	}
	if err != nil {
		return err
	}
	// kubectl's discovery cache may name the CRDs a test installed and
	// reset removed: the next test's kubectl discovers the API afresh.
	if err := os.RemoveAll(s.env.KubectlCacheDir()); err != nil {
		return fmt.Errorf("removing kubectl's discovery cache: %w", err)
	}
	return nil
}

// remove strips o's finalizers and deletes it, unless it is going already.
func (s *sharedPlane) remove(ctx context.Context, gvr schema.GroupVersionResource, o *unstructured.Unstructured) error {
	r := s.dyn.Resource(gvr).Namespace(o.GetNamespace())
	if len(o.GetFinalizers()) > 0 && gvr.Resource != "namespaces" {
		_, err := r.Patch(ctx, o.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the finalizers of %s %s: %w", gvr.Resource, objectKey(o), err)
		}
	}
	if o.GetDeletionTimestamp() != nil {
		return nil
	}
	opts := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}
	if gvr.Resource == "pods" {
		opts.GracePeriodSeconds = ptr.To[int64](0)
	}
	if err := r.Delete(ctx, o.GetName(), opts); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s: %w", gvr.Resource, objectKey(o), err)
	}
	return nil
}
