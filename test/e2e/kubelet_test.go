package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/catalog"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/sim"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

// TestOperatorKubeletMaxPods runs the operator on the simulated cloud with
// a SimNodeClass whose kubelet allows 5 pods per node: 12 small pods that
// one m5.large (29 pods by its ENIs) would hold need 3 nodes, whose Nodes
// report 5 pods of capacity and allocatable as a kubelet started with
// maxPods 5 would, and every pod runs.
func TestOperatorKubeletMaxPods(t *testing.T) {
	const pods, maxPods = 12, 5
	e := startOpEnv(t)
	ctx := context.Background()
	ns := e.namespace(t, "kubelet")
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	zone := cat.Zones(sim.DefaultRegion)[0]
	snc := &v1alpha1.SimNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "sim-kubelet"},
		Spec:       v1alpha1.SimNodeClassSpec{Kubelet: &v1alpha1.KubeletConfiguration{MaxPods: ptr.To(int32(maxPods))}},
	}
	if err := e.c.Create(ctx, snc); err != nil {
		t.Fatal(err)
	}
	np := &v1alpha1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "kubelet"},
		Spec: v1alpha1.NodePoolSpec{Template: v1alpha1.NodeClaimTemplate{Spec: v1alpha1.NodeClaimTemplateSpec{
			NodeClassRef: v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "SimNodeClass", Name: snc.Name},
			Requirements: []v1alpha1.NodeSelectorRequirement{
				req(v1alpha1.LabelCapacityType, cloud.CapacityTypeOnDemand), req(solver.LabelInstanceType, "m5.large"), req(solver.LabelZone, zone),
			},
		}}},
	}
	if err := e.c.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	// A tainted node for system pods, so that the scheduler retries the
	// pending pods as nodes arrive rather than on its backoff timer.
	system := testenv.Node{Name: "system-kubelet", Taints: []corev1.Taint{{Key: "CriticalAddonsOnly", Value: "true", Effect: corev1.TaintEffectNoSchedule}}}
	if _, err := e.AddNode(ctx, system); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitNodeReady(ctx, system.Name, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	op := e.startOperator(t, "operator", nil, "--leader-election-id", "e2e-kubelet", "--batch-idle", "1s")
	op.waitLog(t, "provisioner started", 30*time.Second)

	start := time.Now()
	var ps []*corev1.Pod
	for i := range pods {
		ps = append(ps, opPod(ns, fmt.Sprintf("small-%d", i), "10m", "16Mi", map[string]string{v1alpha1.LabelNodePool: np.Name}))
	}
	e.createPods(t, ps)
	e.waitRunning(t, ns, pods, 40*time.Second)
	t.Logf("%d pods Running in %s", pods, time.Since(start).Round(10*time.Millisecond))

	claims := e.claims(t, np.Name)
	if want := (pods + maxPods - 1) / maxPods; len(claims) < want {
		t.Errorf("%d NodeClaims, want at least %d for %d pods at %d per node", len(claims), want, pods, maxPods)
	}
	perNode := map[string]int{}
	list, err := e.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s is %s on %q, want Running", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
		perNode[p.Spec.NodeName]++
	}
	for _, c := range claims {
		if got := c.Status.Capacity.Pods().Value(); got != maxPods {
			t.Errorf("NodeClaim %s capacity pods %d, want %d", c.Name, got, maxPods)
		}
		node, err := e.Client().CoreV1().Nodes().Get(ctx, c.Status.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Errorf("NodeClaim %s: node %q: %v", c.Name, c.Status.NodeName, err)
			continue
		}
		if node.Status.Capacity.Pods().Value() != maxPods || node.Status.Allocatable.Pods().Value() != maxPods {
			t.Errorf("node %s reports %v pods of capacity, %v allocatable; want %d", node.Name, node.Status.Capacity.Pods(), node.Status.Allocatable.Pods(), maxPods)
		}
		if perNode[node.Name] > maxPods {
			t.Errorf("node %s runs %d of the pods, more than its %d", node.Name, perNode[node.Name], maxPods)
		}
	}
	t.Logf("%d NodeClaims; pods per node %v", len(claims), perNode)
	e.cleanup(t, ns, np.Name)
	_ = e.c.Delete(ctx, snc)
}
