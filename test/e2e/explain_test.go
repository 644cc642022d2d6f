package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/catalog"
	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

// plan is the part of `explain -o json` the tests read.
type plan struct {
	Kind  string `json:"kind"`
	Nodes []struct {
		Name, InstanceType, CapacityType, Zone, NodePool string
		PricePerHour                                     float64
		Pods                                             []string
	} `json:"nodes"`
	TotalPricePerHour      float64 `json:"totalPricePerHour"`
	LowerBoundPricePerHour float64 `json:"lowerBoundPricePerHour"`
	DefaultPool            string  `json:"defaultPool"`
	Scope                  *struct {
		Namespace        string   `json:"namespace"`
		Workload         string   `json:"workload"`
		Running          int      `json:"running"`
		PendingInCluster int      `json:"pendingInCluster"`
		NodePoolsUnread  []string `json:"nodePoolsUnread"`
	} `json:"scope"`
	Pending []struct {
		Pod, Owner, SchedulerReason, SchedulerMessage, Reason, Node, InstanceType, CapacityType, Zone string
		NewNode                                                                                       bool
		PricePerHour                                                                                  float64
	} `json:"pending"`
	ExistingNodes []struct {
		Name, InstanceType, CapacityType, Zone string
		PricePerHour                           *float64
		Allocatable, Requested                 map[string]string
		Pods                                   int
	} `json:"existingNodes"`
	ClusterPricePerHour  float64 `json:"clusterPricePerHour"`
	ClusterPricePerMonth float64 `json:"clusterPricePerMonth"`
}

func decodePlan(t *testing.T, r result) plan {
	t.Helper()
	if r.err != nil {
		t.Fatalf("explain: %v\nstderr: %s", r.err, r.stderr)
	}
	var p plan
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
		t.Fatalf("explain -o json printed no JSON: %v\n%s", err, r.stdout)
	}
	if p.Kind != "Plan" || p.Scope == nil || p.Pending == nil || p.ExistingNodes == nil {
		t.Fatalf("not a live plan: %s", r.stdout)
	}
	return p
}

// deployment makes a Deployment of pause pods with the given requests.
func deployment(name string, replicas int32, cpu, memory string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
					}},
				}}},
			},
		},
	}
}

// waitPods waits until want pods labelled app=name pass ok, and returns them.
func waitPods(t *testing.T, c kubernetes.Interface, name string, want int, ok func(*corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := c.CoreV1().Pods(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, nil
		}
		pods = pods[:0]
		for i := range list.Items {
			if ok(&list.Items[i]) {
				pods = append(pods, list.Items[i])
			}
		}
		return len(pods) == want, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d pods of %s: %d after 60s", want, name, len(pods))
	}
	return pods
}

func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && c.Message != "" {
			return true
		}
	}
	return false
}

func running(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }

// TestPendingDeploymentGetsANodeAndRuns follows a Deployment from pending
// (no nodes) to running on the node explain proposed, through the built
// plugin binary.
func TestPendingDeploymentGetsANodeAndRuns(t *testing.T) {
	env := sharedEnv(t).Env
	ctx := context.Background()
	c := env.Client()
	if _, err := c.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, deployment("web", 3, "500m", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := waitPods(t, c, "web", 3, unschedulable)
	schedulerSays := ""
	for _, cond := range pods[0].Status.Conditions {
		if cond.Type == corev1.PodScheduled {
			schedulerSays = cond.Message
		}
	}

	// Pending: reported with the scheduler's message and a proposed node.
	before := decodePlan(t, plugin(t, env.Kubeconfig, "explain", "-o", "json", "--capacity-type", "on-demand"))
	if len(before.Pending) != 3 || before.Scope.Namespace != "default" {
		t.Fatalf("pending = %+v, want the 3 pods of web in default", before.Pending)
	}
	if len(before.Nodes) == 0 || before.TotalPricePerHour <= 0 || before.LowerBoundPricePerHour <= 0 || before.LowerBoundPricePerHour > before.TotalPricePerHour+1e-9 {
		t.Fatalf("want proposed nodes with a cost and a lower bound: %+v", before)
	}
	proposed := before.Nodes[0]
	for _, p := range before.Pending {
		if p.Owner != "Deployment/web" || p.SchedulerReason != "Unschedulable" || p.SchedulerMessage != strings.Join(strings.Fields(schedulerSays), " ") {
			t.Errorf("pending %+v: want owner Deployment/web and the scheduler's message %q", p, schedulerSays)
		}
		if !p.NewNode || p.Node == "" || p.InstanceType == "" || p.PricePerHour <= 0 || p.Reason != "" {
			t.Errorf("pending %+v: want a proposed node with its price", p)
		}
	}
	if len(before.Nodes) != 1 {
		t.Fatalf("3 pods of 500m/1Gi want one node, got %d: %+v", len(before.Nodes), before.Nodes)
	}
	human := plugin(t, env.Kubeconfig, "explain")
	t.Logf("kubectl rightsize explain, pods pending:\n%s", human.stdout)
	for _, want := range []string{
		`3 pending pod(s) in namespace "default"`,
		"Deployment/web: 3 pod(s)",
		"Scheduler: " + strings.Join(strings.Fields(schedulerSays), " "),
		fmt.Sprintf("Plan:      a new %s (%s, %s, $%.4f/h): new-1", proposed.InstanceType, proposed.CapacityType, proposed.Zone, proposed.PricePerHour),
		// 3 pods onto new nodes only: compared with the exact optimum, not the bound.
		"This plan is optimal: an exhaustive search finds none cheaper for these 3 pods.",
		"Current nodes: none.",
	} {
		if !strings.Contains(human.stdout, want) {
			t.Errorf("explain output lacks %q:\n%s%s", want, human.stdout, human.stderr)
		}
	}

	// Add the node the plan asked for, with the catalog's capacity.
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	it, ok := cat.Lookup(proposed.InstanceType)
	if !ok {
		t.Fatalf("catalog lacks %s", proposed.InstanceType)
	}
	region := strings.TrimRight(proposed.Zone, "abcdefghijklmnopqrstuvwxyz")
	arch := it.Architecture
	if arch == "" {
		arch = "amd64"
	}
	if _, err := env.AddNode(ctx, testenv.Node{
		Name: "node-1",
		Labels: map[string]string{
			"node.kubernetes.io/instance-type": proposed.InstanceType,
			"topology.kubernetes.io/zone":      proposed.Zone,
			"topology.kubernetes.io/region":    region,
			"karpenter.sh/capacity-type":       proposed.CapacityType,
			"kubernetes.io/arch":               arch,
		},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(it.CPU, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(it.Memory, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(cloud.NodeModel{}.Pods(&it), resource.DecimalSI),
		},
	}); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitNodeReady(ctx, "node-1", 60*time.Second); err != nil {
		t.Fatal(err)
	}
	waitPods(t, c, "web", 3, running)

	// Running: nothing pending, the node shown with its price.
	after := decodePlan(t, plugin(t, env.Kubeconfig, "explain", "-o", "json"))
	if len(after.Pending) != 0 || len(after.Nodes) != 0 || after.Scope.PendingInCluster != 0 {
		t.Errorf("after the node was added: pending %+v, proposed %+v", after.Pending, after.Nodes)
	}
	if len(after.ExistingNodes) != 1 {
		t.Fatalf("existing nodes = %+v", after.ExistingNodes)
	}
	n := after.ExistingNodes[0]
	if n.Name != "node-1" || n.InstanceType != proposed.InstanceType || n.Zone != proposed.Zone || n.CapacityType != proposed.CapacityType || n.Pods != 3 {
		t.Errorf("node = %+v, want node-1 of %+v with 3 pods", n, proposed)
	}
	if n.PricePerHour == nil || math.Abs(*n.PricePerHour-proposed.PricePerHour) > 1e-9 || math.Abs(after.ClusterPricePerHour-proposed.PricePerHour) > 1e-9 {
		t.Errorf("node price %v, cluster %v; want the proposed %v", n.PricePerHour, after.ClusterPricePerHour, proposed.PricePerHour)
	}
	if n.Requested["cpu"] != "1500m" || n.Requested["memory"] != "3Gi" {
		t.Errorf("requested %v, want cpu 1500m and memory 3Gi (exact, canonical)", n.Requested)
	}

	// Narrowed to the workload, in kubectl's words.
	narrowed := plugin(t, env.Kubeconfig, "explain", "deployment/web")
	t.Logf("kubectl rightsize explain deployment/web, pods running:\n%s", narrowed.stdout)
	for _, want := range []string{"deployment/web: 3 pod(s) running, 0 pending.", "No pending pods of deployment/web in namespace \"default\".", "node-1", fmt.Sprintf("%.4f", proposed.PricePerHour)} {
		if !strings.Contains(narrowed.stdout, want) {
			t.Errorf("explain deployment/web lacks %q:\n%s%s", want, narrowed.stdout, narrowed.stderr)
		}
	}
	pod := plugin(t, env.Kubeconfig, "explain", pods[0].Name, "-o", "json")
	if p := decodePlan(t, pod); p.Scope.Workload != "Pod/"+pods[0].Name || p.Scope.Running != 1 || len(p.ExistingNodes) != 1 {
		t.Errorf("explain POD: %+v", p)
	}
	missing := plugin(t, env.Kubeconfig, "explain", "deployment/nope")
	if missing.err == nil || !strings.Contains(missing.stderr, `no pods of deployment/nope in namespace "default"`) {
		t.Errorf("explain deployment/nope: %v %s", missing.err, missing.stderr)
	}
}

// TestPluginThroughKubectl runs `kubectl rightsize explain` with the built
// kubectl finding the plugin on PATH.
func TestPluginThroughKubectl(t *testing.T) {
	env := sharedEnv(t).Env
	ctx := context.Background()
	c := env.Client()
	if _, err := c.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, deployment("api", 2, "1", "2Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPods(t, c, "api", 2, unschedulable)
	r := kubectl(t, env, "rightsize", "explain", "-o", "json")
	p := decodePlan(t, r)
	if len(p.Pending) != 2 || p.Pending[0].Owner != "Deployment/api" || p.Pending[0].SchedulerMessage == "" || !p.Pending[0].NewNode {
		t.Errorf("kubectl rightsize explain: %+v", p.Pending)
	}
	if r := kubectl(t, env, "rightsize", "explain", "-A"); r.err != nil || !strings.Contains(r.stdout, "2 pending pod(s) in all namespaces") {
		t.Errorf("kubectl rightsize explain -A: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	if r := kubectl(t, env, "rightsize", "explain", "-n", "kube-system"); r.err != nil || !strings.Contains(r.stdout, `No pending pods in namespace "kube-system"`) || !strings.Contains(r.stdout, "Proposed new nodes (for all 2 pending pods)") {
		t.Errorf("kubectl rightsize explain -n kube-system: %v\n%s%s", r.err, r.stdout, r.stderr)
	}

	completesThroughKubectl(t, env, c)

	// With Karpenter's NodePool CRD and a NodePool, the plan uses the pool.
	for _, args := range [][]string{
		{"apply", "-f", "testdata/karpenter-nodepools-crd.yaml"},
		{"wait", "--for", "condition=Established", "--timeout", "30s", "crd/nodepools.karpenter.sh"},
		{"apply", "-f", "testdata/nodepool.yaml"},
	} {
		if r := kubectl(t, env, args...); r.err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, r.err, r.stderr)
		}
	}
	p = decodePlan(t, kubectl(t, env, "rightsize", "explain", "-o", "json"))
	if len(p.Nodes) == 0 {
		t.Fatalf("no node proposed: %+v", p)
	}
	for _, n := range p.Nodes {
		if n.NodePool != "general" || n.CapacityType != "spot" || !strings.HasPrefix(n.InstanceType, "m7i.") {
			t.Errorf("proposed %+v, want spot m7i nodes of NodePool general", n)
		}
	}
}

// completionScript is the kubectl_complete-rightsize the README tells
// users to put on PATH: kubectl (1.26+) runs it to complete a plugin.
const completionScript = "#!/bin/sh\nexec kubectl rightsize __complete \"$@\"\n"

// completesThroughKubectl: with the README's kubectl_complete-rightsize on
// PATH, kubectl's own completion offers the pending pods and workload
// types for `kubectl rightsize explain`, a workload type's names, and the
// cluster's namespaces for -n.
func completesThroughKubectl(t *testing.T, env *testenv.Env, c kubernetes.Interface) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kubectl_complete-rightsize"), []byte(completionScript), 0o755); err != nil {
		t.Fatal(err)
	}
	pods, err := c.CoreV1().Pods(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{LabelSelector: "app=api"})
	if err != nil || len(pods.Items) != 2 {
		t.Fatalf("pods of api: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"explain", ""}, []string{pods.Items[0].Name, pods.Items[1].Name, "deployment/", "statefulset/"}},
		{[]string{"explain", "deployment/"}, []string{"deployment/api"}},
		{[]string{"explain", "-n", "kube-"}, []string{"kube-system", "kube-public"}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := env.Kubectl(ctx, append([]string{"__complete", "rightsize"}, tc.args...)...)
		// kubectl finds the script, the script finds kubectl and the plugin.
		cmd.Env = append(cmd.Env, "PATH="+strings.Join([]string{dir, pluginDir, env.BinDir, os.Getenv("PATH")}, string(os.PathListSeparator)))
		r := runCmd(cmd)
		cancel()
		got := strings.Fields(r.stdout)
		for _, w := range tc.want {
			if r.err != nil || !slices.Contains(got, w) {
				t.Errorf("kubectl __complete rightsize %q = %v (%v): want %q\n%s", tc.args, got, r.err, w, r.stderr)
			}
		}
	}
}
