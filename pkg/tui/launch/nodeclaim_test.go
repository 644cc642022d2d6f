package launch

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// These tests stand fake clients in for the API server: they check what
// the launcher asks and decides, not Kubernetes' behaviour; the TUI's
// launches against a real control plane are tested end to end.

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func lease(renewedAgo time.Duration) *coordinationv1.Lease {
	holder, seconds := "rightsize-operator-7d9f_1", int32(15)
	renewed := metav1.NewMicroTime(now.Add(-renewedAgo))
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: v1alpha1.OperatorLeaseName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, RenewTime: &renewed}}
}

func inFlight(name, launchedBy string) *v1alpha1.NodeClaim {
	c := &v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.LabelNodePool: "default"}}}
	if launchedBy != "" {
		c.Annotations = map[string]string{v1alpha1.AnnotationLaunchedBy: launchedBy}
	}
	c.SetLaunched(v1alpha1.ReasonLaunched, "")
	return c
}

func pendingPod(nominated string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "web-0"}, Status: corev1.PodStatus{Phase: corev1.PodPending, NominatedNodeName: nominated}}
}

func TestNodeClaimLauncherRefusesWhatTheRunningOperatorProvisionsAndSaysWhoLaunches(t *testing.T) {
	const byTUI = "kubectl-rightsize-tui"
	for _, tc := range []struct {
		name string
		// lease is the operator's Lease (nil: none); claims the NodeClaims
		// there besides the pool; planned those the plan counted.
		lease   *coordinationv1.Lease
		claims  []*v1alpha1.NodeClaim
		pod     *corev1.Pod
		planned []string
		wantErr string // "" when the NodeClaim is created
		summary string
	}{
		{name: "no operator: created, and pending until one runs", pod: pendingPod(""),
			summary: "No operator is running: this creates NodeClaims, and each stays pending until one does"},
		{name: "a Lease not renewed within its duration is no operator", lease: lease(20 * time.Second), pod: pendingPod(""),
			claims: []*v1alpha1.NodeClaim{inFlight("default-op12", "")}, summary: "No operator is running"},
		{name: "an operator with nothing in flight for the pods: created, the operator launches it", lease: lease(2 * time.Second), pod: pendingPod(""),
			summary: "the operator (Lease kube-system/rightsize-operator held by rightsize-operator-7d9f_1, renewed 2s ago) launches the instances"},
		{name: "an operator claim in flight the plan counted: created", lease: lease(2 * time.Second), pod: pendingPod(""),
			claims: []*v1alpha1.NodeClaim{inFlight("default-op12", "")}, planned: []string{"default-op12"}, summary: "the operator (Lease"},
		{name: "an operator claim created since the plan: refused", lease: lease(2 * time.Second), pod: pendingPod(""),
			claims:  []*v1alpha1.NodeClaim{inFlight("default-op12", ""), inFlight("default-op13", "")},
			wantErr: "new-1: not launched: the operator (Lease kube-system/rightsize-operator held by rightsize-operator-7d9f_1, renewed 2s ago) already provisions these pods: NodeClaim default-op12 and 1 more, created since this plan, is in flight for the pending pods",
			summary: "the operator (Lease"},
		{name: "this program's own claim in flight is no sign", lease: lease(2 * time.Second), pod: pendingPod(""),
			claims: []*v1alpha1.NodeClaim{inFlight("default-tui1", byTUI)}, summary: "the operator (Lease"},
		{name: "a pod nominated meanwhile: refused", lease: lease(2 * time.Second), pod: pendingPod("default-op12"),
			wantErr: "already provisions these pods: pod web/web-0 is nominated to node default-op12", summary: "the operator (Lease"},
		{name: "no operator, a claim in flight: created all the same", pod: pendingPod(""),
			claims: []*v1alpha1.NodeClaim{inFlight("default-op12", "")}, summary: "No operator is running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The dynamic client holds unstructured objects only, as the
			// real one returns them.
			pool := &v1alpha1.NodePool{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "NodePool"},
				ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "pool-uid"},
				Spec:       v1alpha1.NodePoolSpec{Template: v1alpha1.NodeClaimTemplate{Spec: v1alpha1.NodeClaimTemplateSpec{NodeClassRef: v1alpha1.NodeClassReference{Name: "sim"}}}}}
			objs := []runtime.Object{unstructuredOf(t, pool)}
			for _, c := range tc.claims {
				c.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "NodeClaim"}
				objs = append(objs, unstructuredOf(t, c))
			}
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{NodeClaims: "NodeClaimList", NodePools: "NodePoolList"}, objs...)
			var kubeObjs []runtime.Object
			if tc.lease != nil {
				kubeObjs = append(kubeObjs, tc.lease)
			}
			kubeObjs = append(kubeObjs, tc.pod)
			kube := kubefake.NewClientset(kubeObjs...)
			kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
				GroupVersion: v1alpha1.SchemeGroupVersion.String(), APIResources: []metav1.APIResource{{Name: "nodeclaims"}, {Name: "nodepools"}},
			}}
			l := &NodeClaimLauncher{Dynamic: dyn, Discovery: kube.Discovery(), Kube: kube, LaunchedBy: byTUI, Now: func() time.Time { return now }}
			if s := l.Summary(); !strings.Contains(s, "checking whether an operator runs") {
				t.Errorf("summary before any look %q", s)
			}
			req := Request{Name: "new-1", Node: solver.NewNode{Pool: "default", InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "on-demand"},
				Pods: []string{"web/web-0"}, InFlight: tc.planned}
			got, err := l.Launch(context.Background(), req)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			list, lerr := dyn.Resource(NodeClaims).List(context.Background(), metav1.ListOptions{})
			if lerr != nil {
				t.Fatal(lerr)
			}
			if created := len(list.Items) - len(tc.claims); created != map[bool]int{true: 1, false: 0}[tc.wantErr == ""] || got.ClaimInCluster != (tc.wantErr == "") {
				t.Errorf("%d NodeClaims created, in cluster %v; want one only when not refused", created, got.ClaimInCluster)
			}
			for _, item := range list.Items {
				if item.GetName() == got.Claim && (len(item.GetOwnerReferences()) != 1 || item.GetOwnerReferences()[0].UID != "pool-uid") {
					t.Errorf("NodeClaim %s owners %v, want its NodePool, so that it goes with the pool", got.Claim, item.GetOwnerReferences())
				}
			}
			if s := l.Summary(); !strings.Contains(s, tc.summary) {
				t.Errorf("summary %q, want it to say %q", s, tc.summary)
			}
		})
	}
}

func unstructuredOf(t *testing.T, o runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}
