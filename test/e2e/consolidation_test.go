package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

// consolidationPool is a Karpenter NodePool whose nodes may be consolidated at once.
const consolidationPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m7i]}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 0s
    budgets: [{nodes: "100%"}]
`

// TestExplainConsolidation reads a cluster of three m7i.xlarge nodes with
// two small pods of a Deployment and a bare pod, and checks that
// `explain --consolidation` proposes removing nodes, saves money, changes
// nothing, and says why the node with the bare pod stays.
func TestExplainConsolidation(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	c := env.Client()
	for _, args := range [][]string{
		{"apply", "-f", "testdata/karpenter-nodepools-crd.yaml"},
		{"wait", "--for", "condition=Established", "--timeout", "30s", "crd/nodepools.karpenter.sh"},
	} {
		if r := kubectl(t, env, args...); r.err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, r.err, r.stderr)
		}
	}
	apply := env.Kubectl(ctx, "apply", "-f", "-")
	apply.Stdin = strings.NewReader(consolidationPool)
	if r := runCmd(apply); r.err != nil {
		t.Fatalf("apply pool: %v\n%s", r.err, r.stderr)
	}
	nodes := []string{"node-a", "node-b", "node-c"}
	for i, name := range nodes {
		if _, err := env.AddNode(ctx, testenv.Node{
			Name: name,
			Labels: map[string]string{
				"node.kubernetes.io/instance-type": "m7i.xlarge",
				"topology.kubernetes.io/zone":      fmt.Sprintf("us-east-1%c", 'a'+i),
				"topology.kubernetes.io/region":    "us-east-1",
				"karpenter.sh/capacity-type":       "on-demand",
				"karpenter.sh/nodepool":            "general",
			},
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("58")},
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range nodes {
		if err := env.WaitNodeReady(ctx, name, 60*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, deployment("web", 2, "250m", "512Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bare := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{NodeName: "node-c", Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
	}
	if _, err := c.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, bare, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPods(t, c, "web", 2, running)

	r := plugin(t, env.Kubeconfig, "explain", "--consolidation", "--region", "us-east-1", "-o", "json")
	if r.err != nil {
		t.Fatalf("explain --consolidation: %v\n%s", r.err, r.stderr)
	}
	var got struct {
		Consolidation struct {
			Actions []struct {
				Kind   string
				Nodes  []string
				Saving float64 `json:"savingPerHour"`
				Reason string
			}
			Blocked []struct{ Node, Reason string }
			Current float64 `json:"currentPricePerHour"`
			Target  float64 `json:"targetPricePerHour"`
			Saving  float64 `json:"savingPerHour"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("explain output is not JSON: %v\n%s", err, r.stdout)
	}
	cons := got.Consolidation
	t.Logf("consolidation: %+v", cons)
	if len(cons.Actions) == 0 || cons.Saving <= 0 || cons.Target >= cons.Current {
		t.Fatalf("want actions that save money on three nodes holding 0.6 CPU: %+v", cons)
	}
	removed := map[string]bool{}
	for _, a := range cons.Actions {
		if a.Reason == "" {
			t.Errorf("action %+v has no reason", a)
		}
		for _, n := range a.Nodes {
			removed[n] = true
		}
	}
	if removed["node-c"] {
		t.Errorf("node-c runs a bare pod and must not be removed: %+v", cons.Actions)
	}
	blockedC := ""
	for _, b := range cons.Blocked {
		if b.Node == "node-c" {
			blockedC = b.Reason
		}
	}
	if !strings.Contains(blockedC, "default/bare") {
		t.Errorf("node-c's reason %q should name the bare pod", blockedC)
	}

	// Read-only: every node and pod is still there, nothing cordoned.
	list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range list.Items {
		if n.Spec.Unschedulable || len(n.Spec.Taints) > 0 {
			t.Errorf("node %s was changed: unschedulable %v, taints %v", n.Name, n.Spec.Unschedulable, n.Spec.Taints)
		}
	}
	if len(list.Items) != 3 {
		t.Errorf("%d nodes after explain, want 3", len(list.Items))
	}
	human := plugin(t, env.Kubeconfig, "explain", "--consolidation", "--region", "us-east-1")
	t.Logf("kubectl rightsize explain --consolidation:\n%s", human.stdout)
	for _, want := range []string{"Consolidation (read-only: nothing is changed)", "Saving available:", "node-c"} {
		if !strings.Contains(human.stdout, want) {
			t.Errorf("output lacks %q:\n%s%s", want, human.stdout, human.stderr)
		}
	}
}
