package testenv_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

// TestPlane: a Deployment's pods stay Pending with the scheduler's
// Unschedulable condition while there are no nodes, and run once a kwok node
// is added — the real scheduler, controller-manager and kwok at work.
func TestPlane(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	// /version is stamped by the build.
	v, err := c.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("server version: %v", err)
	}
	if v.GitVersion != testenv.KubernetesVersion {
		t.Errorf("server version = %q, want %q", v.GitVersion, testenv.KubernetesVersion)
	}

	// The cached kubectl talks to the plane.
	out, err := env.Kubectl(ctx, "get", "namespaces", "-o", "name").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "namespace/default") {
		t.Fatalf("kubectl get namespaces: %v\n%s", err, out)
	}

	replicas := int32(2)
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:  "web",
						Image: "registry.example/web:1",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("100m"),
							corev1.ResourceMemory: resource.MustParse("128Mi"),
						}},
					}},
				},
			},
		},
	}
	if _, err := c.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}

	// No nodes: both pods exist and the scheduler marks them Unschedulable.
	waitPods(ctx, t, c, 60*time.Second, "2 pods Unschedulable", func(pods []corev1.Pod) bool {
		n := 0
		for _, p := range pods {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse &&
					cond.Reason == corev1.PodReasonUnschedulable && p.Status.Phase == corev1.PodPending {
					n++
				}
			}
		}
		return n == 2
	})
	pods, _ := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	for _, p := range pods.Items {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled {
				t.Logf("pod %s: %s: %s", p.Name, cond.Reason, cond.Message)
			}
		}
	}

	// A kwok node takes them.
	added := time.Now()
	if _, err := env.AddNode(ctx, testenv.Node{
		Name:   "kwok-node-1",
		Labels: map[string]string{"node.kubernetes.io/instance-type": "m5.xlarge"},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("4"),
			corev1.ResourceMemory: resource.MustParse("16Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		},
	}); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitNodeReady(ctx, "kwok-node-1", 60*time.Second); err != nil {
		t.Fatal(err)
	}
	nodeReady := time.Since(added)
	if n, err := c.CoreV1().Nodes().Get(ctx, "kwok-node-1", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if cpu := n.Status.Allocatable[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("node kwok-node-1 is Ready with %s CPU allocatable, AddNode gave it 4", cpu.String())
	}
	waitPods(ctx, t, c, 60*time.Second, "2 pods Running on kwok-node-1", func(pods []corev1.Pod) bool {
		n := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == "kwok-node-1" {
				n++
			}
		}
		return n == 2
	})
	running := time.Since(added)

	// The Deployment controller sees them available.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := c.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == 2, nil
	})
	if err != nil {
		t.Fatalf("deployment web never reported 2 available replicas")
	}
	// kwok makes a node Ready without writing an allocatable of its own
	// (its stock stage writes 1k CPU when the node it watched had none,
	// racing the status every test sets right after the create).
	bare := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-bare", Annotations: map[string]string{testenv.NodeAnnotation: "fake"}}}
	if _, err := c.CoreV1().Nodes().Create(ctx, bare, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node kwok-bare: %v", err)
	}
	if err := env.WaitNodeReady(ctx, "kwok-bare", 60*time.Second); err != nil {
		t.Fatal(err)
	}
	if n, err := c.CoreV1().Nodes().Get(ctx, "kwok-bare", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if len(n.Status.Allocatable) > 0 || len(n.Status.Capacity) > 0 {
		t.Errorf("kwok wrote node kwok-bare's allocatable %v and capacity %v; it must leave them to whoever creates the node", n.Status.Allocatable, n.Status.Capacity)
	}

	var total int64
	var mem []string
	for name, rss := range env.ResidentMemory() {
		total += rss
		mem = append(mem, fmt.Sprintf("%s %dMiB", name, rss>>20))
	}
	sort.Strings(mem)
	t.Logf("memory (RSS): %dMiB total: %s", total>>20, strings.Join(mem, ", "))
	t.Logf("timings: plane start %s; node Ready %s after creation; pods Running %s after the node was added; deployment available %s after",
		env.StartupTime.Round(time.Millisecond), nodeReady.Round(time.Millisecond), running.Round(time.Millisecond), time.Since(added).Round(time.Millisecond))
}

func waitPods(ctx context.Context, t *testing.T, c kubernetes.Interface, timeout time.Duration, what string, ok func([]corev1.Pod) bool) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		var b strings.Builder
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "%s phase=%s node=%q; ", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
		last = b.String()
		return ok(pods.Items), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s (%s): last seen: %s", what, timeout, last)
	}
}

// TestMissingBinaries: an empty cache is reported with the binary's name and
// `make testenv`.
func TestMissingBinaries(t *testing.T) {
	t.Setenv("RIGHTSIZE_TESTENV_DIR", t.TempDir())
	_, err := testenv.CheckBinaries()
	if err == nil || !strings.Contains(err.Error(), "make testenv") || !strings.Contains(err.Error(), "etcd") {
		t.Fatalf("CheckBinaries on an empty cache = %v, want an error naming etcd and `make testenv`", err)
	}
}
