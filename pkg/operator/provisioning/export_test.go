package provisioning

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/state"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// gangPod is a pod that does not exist, asking cpu.
func gangPod(name, cpu string) *corev1.Pod {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
}

// existingNode is a Ready node of 2 CPUs and 8Gi with nothing on it.
func existingNode(i int) *corev1.Node {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	name := fmt.Sprintf("node-%04d", i)
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name,
		corev1.LabelTopologyZone: "us-east-1a", corev1.LabelInstanceTypeStable: "m5.large", corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"}},
		Status: corev1.NodeStatus{Allocatable: alloc, Capacity: alloc, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

// gangProvisioner is a provisioner on a fake cache of n nodes, each with a
// running pod of 500m when busy, and a pool "a" of m5.large.
func gangProvisioner(t *testing.T, n int, busy bool) *Provisioner {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	np := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	np.Spec.Template.Spec.NodeClassRef = v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "EC2NodeClass", Name: "a"}
	objs := []client.Object{np}
	for i := range n {
		node := existingNode(i)
		objs = append(objs, node)
		if busy {
			pod := gangPod("app-"+node.Name, "500m")
			pod.Namespace, pod.Spec.NodeName, pod.Status.Phase = "apps", node.Name, corev1.PodRunning
			objs = append(objs, pod)
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	od := cloud.Offering{Zone: "us-east-1a", CapacityType: cloud.CapacityTypeOnDemand, Price: 0.096}
	return New(c, offeringsByPool{offerings: map[string][]cloud.Offering{"a": {od}}}, nil, logr.Discard(), state.NewUnavailable(0), Options{Region: "us-east-1"})
}

// TestSnapshotWithPlansPodsThatDoNotExist: pods that exist nowhere (a
// ProvisioningRequest's gang) are in the snapshot's problem as pending,
// at the indices returned, beside the cluster's nodes and pools.
func TestSnapshotWithPlansPodsThatDoNotExist(t *testing.T) {
	tests := []struct {
		name     string
		nodes    int
		cpu      string
		newNodes int // when the gang alone is planned
	}{
		{"fits the free room", 3, "1", 0},
		{"needs new nodes (one 1-CPU pod per m5.large)", 0, "1", 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := gangProvisioner(t, tc.nodes, false)
			pods := []*corev1.Pod{gangPod("job-0-0", tc.cpu), gangPod("job-0-1", tc.cpu), gangPod("job-0-2", tc.cpu)}
			s, index, err := p.SnapshotWith(context.Background(), pods)
			if err != nil {
				t.Fatal(err)
			}
			if len(index) != len(pods) {
				t.Fatalf("%d indices for %d pods", len(index), len(pods))
			}
			q := *s.Problem
			q.Pods = nil
			for i, j := range index {
				if j < 0 || s.Problem.Pods[j].Key() != "ml/"+pods[i].Name || s.Problem.Pods[j].Requests[solver.CPU] != 1000 {
					t.Fatalf("pod %s at %d: %+v", pods[i].Name, j, s.Problem.Pods)
				}
				q.Pods = append(q.Pods, s.Problem.Pods[j])
			}
			if s.Pools["a"] == nil || len(s.Problem.Nodes) != tc.nodes {
				t.Fatalf("snapshot pools %v, %d nodes; want a and %d", s.Pools, len(s.Problem.Nodes), tc.nodes)
			}
			plan, err := solver.Solve(&q)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.NewNodes) != tc.newNodes || len(plan.Unschedulable) != 0 {
				t.Errorf("plan: %d new nodes, %d unplaced; want %d, 0", len(plan.NewNodes), len(plan.Unschedulable), tc.newNodes)
			}
			// The cluster read afterwards has no trace of them.
			b, err := p.snapshot(context.Background(), false)
			if err != nil {
				t.Fatal(err)
			}
			if len(b.problem.Pods) != 0 {
				t.Errorf("a later snapshot plans %d pods; the gang's must not stay", len(b.problem.Pods))
			}
		})
	}
}

// TestSnapshotWithOnAThousandNodes times what a check-capacity answer
// costs on a cluster of 1,000 nodes, each running a pod: the snapshot with the gang and the
// gang's plan (issue 32 asks for under 2 s).
func TestSnapshotWithOnAThousandNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 nodes")
	}
	p := gangProvisioner(t, 1000, true)
	var pods []*corev1.Pod
	for i := range 8 {
		pods = append(pods, gangPod(fmt.Sprintf("job-0-%d", i), "1"))
	}
	start := time.Now()
	s, index, err := p.SnapshotWith(context.Background(), pods)
	if err != nil {
		t.Fatal(err)
	}
	snap := time.Since(start)
	q := *s.Problem
	q.Pods = nil
	for _, j := range index {
		q.Pods = append(q.Pods, s.Problem.Pods[j])
	}
	plan, err := solver.Solve(&q)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("1,000 nodes, a gang of 8: snapshot %s, snapshot and plan %s", snap.Round(time.Millisecond), took.Round(time.Millisecond))
	if len(plan.NewNodes) != 0 || len(plan.Existing) != 8 {
		t.Errorf("plan: %d new nodes, %d on existing; want the gang on the free room", len(plan.NewNodes), len(plan.Existing))
	}
}
