package snapshot

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// These tests cover the conversion of live objects only; reading a real
// cluster is tested in test/e2e against a real control plane.

func controller(kind, name string) []metav1.OwnerReference {
	apiVersion := "apps/v1"
	if kind == "Job" {
		apiVersion = "batch/v1"
	}
	yes := true
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, Controller: &yes}}
}

func TestOwner(t *testing.T) {
	tests := []struct {
		name string
		meta metav1.ObjectMeta
		want string
	}{
		{"bare pod", metav1.ObjectMeta{Name: "p"}, "Pod/p"},
		{"ReplicaSet of a Deployment", metav1.ObjectMeta{Name: "web-5d8f-x", Labels: map[string]string{LabelPodTemplateHash: "5d8f"}, OwnerReferences: controller("ReplicaSet", "web-5d8f")}, "Deployment/web"},
		{"bare ReplicaSet", metav1.ObjectMeta{Name: "rs-x", OwnerReferences: controller("ReplicaSet", "rs")}, "ReplicaSet/rs"},
		{"ReplicaSet whose name lacks the hash", metav1.ObjectMeta{Name: "rs-x", Labels: map[string]string{LabelPodTemplateHash: "abc"}, OwnerReferences: controller("ReplicaSet", "rs")}, "ReplicaSet/rs"},
		{"StatefulSet", metav1.ObjectMeta{Name: "db-0", OwnerReferences: controller("StatefulSet", "db")}, "StatefulSet/db"},
		{"Job", metav1.ObjectMeta{Name: "j-x", OwnerReferences: controller("Job", "j")}, "Job/j"},
		{"non-controller owner is ignored", metav1.ObjectMeta{Name: "p", OwnerReferences: []metav1.OwnerReference{{Kind: "ConfigMap", Name: "c"}}}, "Pod/p"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Owner(&corev1.Pod{ObjectMeta: tc.meta}); got != tc.want {
				t.Errorf("Owner = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCapacityType(t *testing.T) {
	tests := []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{"karpenter.sh/capacity-type": "spot"}, "spot"},
		{map[string]string{"eks.amazonaws.com/capacityType": "ON_DEMAND"}, "on-demand"},
		{map[string]string{"eks.amazonaws.com/capacityType": "SPOT"}, "spot"},
		{map[string]string{"karpenter.sh/capacity-type": "on-demand", "eks.amazonaws.com/capacityType": "SPOT"}, "on-demand"},
		{nil, ""},
	}
	for _, tc := range tests {
		if got := CapacityType(tc.labels); got != tc.want {
			t.Errorf("CapacityType(%v) = %q, want %q", tc.labels, got, tc.want)
		}
	}
}

func livePod(name, node string, phase corev1.PodPhase, cpu, mem string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
		}}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

func TestAddPendingKeepsTheSchedulerMessageAndLeavesOutWhatNewNodesCannotFix(t *testing.T) {
	unschedulable := livePod("web-1", "", corev1.PodPending, "1", "1Gi")
	unschedulable.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/3 nodes are available: 3 Insufficient cpu.\npreemption: not helpful"}}
	gated := livePod("gated", "", corev1.PodPending, "1", "1Gi")
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/quota"}}
	ds := livePod("agent-x", "", corev1.PodPending, "100m", "64Mi")
	ds.OwnerReferences = controller("DaemonSet", "agent")
	terminating := livePod("old", "", corev1.PodPending, "1", "1Gi")
	terminating.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	bound := livePod("bound", "n1", corev1.PodPending, "1", "1Gi")
	running := livePod("running", "n1", corev1.PodRunning, "1", "1Gi")

	c := &Cluster{}
	c.addPending([]corev1.Pod{unschedulable, gated, ds, terminating, bound, running})
	if len(c.Pending) != 3 {
		t.Fatalf("pending = %+v, want web-1, gated and agent-x", c.Pending)
	}
	if got := c.Pending[0]; got.Index != 0 || got.SchedulerReason != "Unschedulable" || got.SchedulerMessage != "0/3 nodes are available: 3 Insufficient cpu.; preemption: not helpful" {
		t.Errorf("web-1 = %+v", got)
	}
	if got := c.Pending[1]; got.Index != -1 || !strings.Contains(got.NotPlanned, "example.com/quota") {
		t.Errorf("gated = %+v", got)
	}
	if got := c.Pending[2]; got.Index != -1 || !strings.Contains(got.NotPlanned, "DaemonSet") {
		t.Errorf("DaemonSet pod = %+v", got)
	}
	if len(c.Pods) != 1 || c.Pods[0].Requests[solver.CPU] != 1000 || c.Pods[0].Owner != "Pod/web-1" {
		t.Errorf("planned pods = %+v", c.Pods)
	}
}

func TestAddNodesSumsRequestsOfBoundPods(t *testing.T) {
	node := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{
			"node.kubernetes.io/instance-type": "m7i.large", "topology.kubernetes.io/zone": "us-east-1a",
			"karpenter.sh/capacity-type": "spot", "karpenter.sh/nodepool": "general",
		}},
		Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("29")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m"), corev1.ResourceMemory: resource.MustParse("7Gi"), corev1.ResourcePods: resource.MustParse("29"),
				"attachable-volumes-aws-ebs": resource.MustParse("25"), "example.com/unused": resource.MustParse("1")},
		},
	}
	c := &Cluster{}
	c.Pools = []solver.Pool{{Name: "general"}, {Name: "other"}}
	c.addNodes([]corev1.Node{node}, []corev1.Pod{
		livePod("a", "n1", corev1.PodRunning, "500m", "1Gi"),
		livePod("b", "n1", corev1.PodPending, "250m", "1Gi"),
		livePod("done", "n1", corev1.PodSucceeded, "4", "4Gi"),
		livePod("elsewhere", "gone", corev1.PodRunning, "1", "1Gi"),
		livePod("pending", "", corev1.PodPending, "1", "1Gi"),
	})
	if len(c.Nodes) != 1 {
		t.Fatalf("nodes = %+v", c.Nodes)
	}
	n := c.Nodes[0]
	if n.InstanceType != "m7i.large" || n.Zone != "us-east-1a" || n.CapacityType != "spot" || n.Pool != "general" || !n.Unschedulable || len(n.Taints) != 1 {
		t.Errorf("node = %+v", n)
	}
	if n.Allocatable[solver.CPU] != 1930 || n.Allocatable[solver.Pods] != 29 {
		t.Errorf("allocatable = %v", n.Allocatable)
	}
	if n.Requested[solver.CPU] != 750 || n.Requested[solver.Memory] != 2<<30 || n.Requested[solver.Pods] != 2 {
		t.Errorf("requested = %v, want 750m, 2Gi, 2 pods", n.Requested)
	}
	if len(n.Pods) != 2 || n.Pods[0].Name != "a" || n.Pods[0].Requests[solver.CPU] != 500 || n.Pods[0].Controller {
		t.Errorf("bound pods = %+v, want a and b, bare", n.Pods)
	}
	if len(c.ExtendedResources) != 0 {
		t.Errorf("node resources nobody asks for became extended resources: %v", c.ExtendedResources)
	}
	if c.Pools[0].Used[solver.CPU] != 2000 || c.Pools[1].Used[solver.CPU] != 0 {
		t.Errorf("pool usage = %v / %v, want the node's capacity in general only", c.Pools[0].Used, c.Pools[1].Used)
	}
	if len(c.Scheduled) != 3 {
		t.Errorf("scheduled = %+v, want a, b and elsewhere", c.Scheduled)
	}
}

// TestBoundPodKeepsWhereItMayRun: a bound pod keeps its nodeSelector,
// required node affinity and tolerations, so that consolidation moves it
// only to nodes that admit it (a pod selecting one NodePool must not be
// planned onto another pool's nodes).
func TestBoundPodKeepsWhereItMayRun(t *testing.T) {
	pod := livePod("a", "n1", corev1.PodRunning, "500m", "1Gi")
	pod.Spec.NodeSelector = map[string]string{"rightsize.dev/nodepool": "one"}
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "x", Effect: corev1.TaintEffectNoSchedule}}
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a"}}}}},
	}}}
	c := &Cluster{}
	p := c.boundPod(&pod)
	if p.NodeSelector["rightsize.dev/nodepool"] != "one" {
		t.Errorf("nodeSelector = %v", p.NodeSelector)
	}
	if len(p.Tolerations) != 1 || p.Tolerations[0].Key != "dedicated" || p.Tolerations[0].Value != "x" {
		t.Errorf("tolerations = %+v", p.Tolerations)
	}
	if len(p.Affinity) != 1 || len(p.Affinity[0]) != 1 {
		t.Errorf("affinity = %+v, want one term of one requirement", p.Affinity)
	}
}

func TestAddLivePoolIgnoresNewerFields(t *testing.T) {
	c := &Cluster{}
	c.addLivePool([]byte(`{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"general","managedFields":[{"manager":"k"}]},
		"spec":{"template":{"spec":{"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"},
		"requirements":[{"key":"karpenter.sh/capacity-type","operator":"In","values":["spot"]}],"someFutureField":true}},
		"limits":{"cpu":"100"}},"status":{"resources":{"cpu":"4"}}}`))
	if len(c.Warnings) != 0 || len(c.Pools) != 1 {
		t.Fatalf("pools %+v, warnings %v", c.Pools, c.Warnings)
	}
	p := c.Pools[0]
	if p.Name != "general" || p.Limits[solver.CPU] != 100_000 || !p.HasLimit[solver.CPU] || len(p.Requirements) != 1 || p.Labels[solver.LabelNodePool] != "general" {
		t.Errorf("pool = %+v", p)
	}
	c.addLivePool([]byte(`{"metadata":{"name":"bad"},"spec":{"weight":500}}`))
	if len(c.Pools) != 1 || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "spec.weight") {
		t.Errorf("a bad pool: pools %d, warnings %v", len(c.Pools), c.Warnings)
	}
}

func TestListAllPagesAndRestartsWhenTheTokenExpires(t *testing.T) {
	var calls []string
	pages := map[string][]int{"": {1, 2}, "a": {3, 4}, "b": {5}}
	next := map[string]string{"": "a", "a": "b"}
	expireOnce := true
	got, err := listAll(context.Background(), 2, metav1.ListOptions{}, func(_ context.Context, o metav1.ListOptions) ([]int, string, error) {
		calls = append(calls, fmt.Sprintf("%d:%s", o.Limit, o.Continue))
		if o.Continue == "b" && expireOnce {
			expireOnce = false
			return nil, "", apierrors.NewResourceExpired("too old")
		}
		if o.Limit == 0 {
			return []int{1, 2, 3, 4, 5}, "", nil
		}
		return pages[o.Continue], next[o.Continue], nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[1 2 3 4 5]" || strings.Join(calls, " ") != "2: 2:a 2:b 0:" {
		t.Errorf("got %v after calls %v", got, calls)
	}
}

func TestAPIErrorIsOneLineWithTheNextStep(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "",
		errors.New(`User "system:serviceaccount:default:reader" cannot list resource "nodes" in API group "" at the cluster scope`))
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:1/api/v1/pods", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	timeout := &url.Error{Op: "Get", URL: "https://10.0.0.1/api", Err: context.DeadlineExceeded}
	tests := []struct {
		name string
		err  *APIError
		want string
	}{
		{"forbidden at cluster scope", &APIError{Verb: "list", Resource: "nodes", Err: forbidden},
			`cannot list nodes at cluster scope: user "system:serviceaccount:default:reader" is forbidden; ask for "list" on "nodes" (RBAC)`},
		{"forbidden in a namespace", &APIError{Verb: "list", Resource: "pods", Namespace: "shop", Err: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))},
			`cannot list pods in namespace "shop": you are forbidden; ask for "list" on "pods" (RBAC)`},
		{"expired credentials", &APIError{Verb: "list", Resource: "pods", Host: "https://k", Err: apierrors.NewUnauthorized("Unauthorized")},
			"cannot list pods: the cluster at https://k rejected your credentials (401 Unauthorized); they may have expired: log in again or refresh the kubeconfig (--kubeconfig, --context)"},
		{"connection refused", &APIError{Verb: "list", Resource: "pods", Host: "https://127.0.0.1:1", Err: refused},
			"cannot list pods: cannot reach the cluster at https://127.0.0.1:1: connection refused; check that the API server is up and that --kubeconfig/--context point at it"},
		{"timeout", &APIError{Verb: "list", Resource: "nodes", Host: "https://10.0.0.1", Timeout: 30 * time.Second, Err: timeout},
			"cannot list nodes: the cluster at https://10.0.0.1 did not answer within 30s; check that it is up and reachable, or raise --request-timeout"},
		{"anything else", &APIError{Verb: "list", Resource: "pods", Err: errors.New("boom\nagain")}, "cannot list pods at cluster scope: boom; again"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if !errors.Is(tc.err, tc.err.Err) {
				t.Error("does not unwrap")
			}
		})
	}
}

// TestForbiddenNodePoolsAreWarnedAboutNotFatal: a NodePool list refused by
// RBAC becomes a warning naming the verb, the resource and the RBAC, which
// says whether the other pools or the default pool are planned; any other
// error stays an error.
func TestForbiddenNodePoolsAreWarnedAboutNotFatal(t *testing.T) {
	forbiddenList := func(resource string) error {
		return &APIError{Verb: "list", Resource: resource, Err: apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "",
			errors.New(`User "jane" cannot list resource "nodepools"`))}
	}
	down := &APIError{Verb: "list", Resource: "nodepools.karpenter.sh", Err: apierrors.NewServiceUnavailable("etcd")}
	tests := []struct {
		name          string
		read          int
		karpenter, rs error
		wantUnread    []string
		wantWarning   []string
		wantKept      []error // what is left in karpenter, rs
	}{
		{"rightsize.dev forbidden, Karpenter's pools read", 2, nil, forbiddenList("nodepools.rightsize.dev"),
			[]string{"nodepools.rightsize.dev"},
			[]string{`cannot list nodepools.rightsize.dev at cluster scope: user "jane" is forbidden; ask for "list" on "nodepools.rightsize.dev" (RBAC); its NodePools are not planned, only those that could be read`},
			[]error{nil, nil}},
		{"the only pools forbidden: the default pool", 0, nil, forbiddenList("nodepools.rightsize.dev"),
			[]string{"nodepools.rightsize.dev"},
			[]string{`cannot list nodepools.rightsize.dev at cluster scope: user "jane" is forbidden; ask for "list" on "nodepools.rightsize.dev" (RBAC); no NodePool could be read, so the plan uses the default pool, not the cluster's NodePools`},
			[]error{nil, nil}},
		{"both forbidden: one line each", 0, forbiddenList("nodepools.karpenter.sh"), forbiddenList("nodepools.rightsize.dev"),
			[]string{"nodepools.karpenter.sh", "nodepools.rightsize.dev"}, nil, []error{nil, nil}},
		{"an unavailable server stays an error", 0, down, nil, nil, nil, []error{down, nil}},
		{"nothing failed", 3, nil, nil, nil, nil, []error{nil, nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kp, rs := tc.karpenter, tc.rs
			unread, warnings := unreadPools(tc.read, &kp, &rs)
			if fmt.Sprint(unread) != fmt.Sprint(tc.wantUnread) {
				t.Errorf("unread %v, want %v", unread, tc.wantUnread)
			}
			if len(warnings) != len(tc.wantUnread) {
				t.Errorf("%d warnings, want one per unread resource: %q", len(warnings), warnings)
			}
			for i, w := range tc.wantWarning {
				if i >= len(warnings) || warnings[i] != w {
					t.Errorf("warning %d:\n got %q\nwant %q", i, warnings, w)
				}
			}
			for _, w := range warnings {
				if strings.Contains(w, "\n") {
					t.Errorf("warning on more than one line: %q", w)
				}
			}
			if kp != tc.wantKept[0] || rs != tc.wantKept[1] {
				t.Errorf("errors left: %v, %v; want %v", kp, rs, tc.wantKept)
			}
		})
	}
}
