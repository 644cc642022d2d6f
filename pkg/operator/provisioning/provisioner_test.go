package provisioning

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
)

func newTestProvisioner(t *testing.T, c client.Client) *Provisioner {
	t.Helper()
	return New(c, nil, nil, logr.Discard(), nil, Options{})
}

func testClaim(name string) *v1alpha1.NodeClaim {
	return &v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
}

func names(claims []*v1alpha1.NodeClaim) []string {
	var out []string
	for _, c := range claims {
		out = append(out, c.Name)
	}
	slices.Sort(out)
	return out
}

func TestMergeRecentCountsEveryInFlightClaimOnce(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name string
		// recent claims and how long ago they were remembered
		recent map[string]time.Duration
		// events the informer delivered (claim name → gone)
		events map[string]bool
		cached []string
		// want are the claims counted; kept those still remembered after
		want, kept []string
	}{
		{
			name:   "a claim the cache does not show yet is counted and kept",
			recent: map[string]time.Duration{"a": time.Second},
			want:   []string{"a"}, kept: []string{"a"},
		},
		{
			name:   "a claim the cache shows is counted once, from the cache, and forgotten",
			recent: map[string]time.Duration{"a": time.Second},
			cached: []string{"a", "b"},
			want:   []string{"a", "b"},
		},
		{
			name:   "a claim the cache never showed is forgotten after recentTTL",
			recent: map[string]time.Duration{"a": recentTTL + time.Second, "b": recentTTL - time.Second},
			want:   []string{"b"}, kept: []string{"b"},
		},
		{
			name:   "a claim created and deleted between two batches is not counted",
			recent: map[string]time.Duration{"refused": 30 * time.Millisecond, "other": 30 * time.Millisecond},
			events: map[string]bool{"refused": true},
			want:   []string{"other"}, kept: []string{"other"},
		},
		{
			name:   "a claim the informer delivered is counted from the cache",
			recent: map[string]time.Duration{"a": time.Second},
			events: map[string]bool{"a": false},
			cached: []string{"a"},
			want:   []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestProvisioner(t, nil)
			for name, age := range tt.recent {
				p.remember(testClaim(name), nil, now.Add(-age))
			}
			for name, gone := range tt.events {
				p.observed(name, gone)
			}
			var cached []v1alpha1.NodeClaim
			for _, name := range tt.cached {
				cached = append(cached, *testClaim(name))
			}
			got := names(p.mergeRecent(cached, now))
			if !slices.Equal(got, tt.want) {
				t.Errorf("counted %v, want %v", got, tt.want)
			}
			var kept []string
			for name := range p.recent {
				kept = append(kept, name)
			}
			slices.Sort(kept)
			if !slices.Equal(kept, tt.kept) {
				t.Errorf("still remembered %v, want %v", kept, tt.kept)
			}
		})
	}
}

func TestCreateRemembersTheClaimUntilTheInformerShowsIt(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	np := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	tests := []struct {
		name string
		// during runs inside Create, as the informer or the API server
		// would; nil means nothing happens.
		during func(p *Provisioner, name string) error
		// wantRecent: whether the claim still counts from memory after
		// Create; wantNominated: whether its pod still waits for it.
		wantErr, wantRecent, wantNominated bool
	}{
		{
			name:       "created, not shown yet: remembered with the server's fields",
			wantRecent: true, wantNominated: true,
		},
		{
			name: "the informer shows it before Create returns: left to the cache",
			during: func(p *Provisioner, name string) error {
				p.observed(name, false)
				return nil
			},
			wantNominated: true,
		},
		{
			name: "the cloud refused it and the lifecycle deleted it before Create returned: pods free",
			during: func(p *Provisioner, name string) error {
				p.observed(name, false)
				p.observed(name, true)
				return nil
			},
		},
		{
			name:    "Create fails: forgotten",
			during:  func(*Provisioner, string) error { return errors.New("boom") },
			wantErr: true, wantNominated: true, // provision drops the nominations of failed creates
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p *Provisioner
			c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if tt.during != nil {
						if err := tt.during(p, obj.GetName()); err != nil {
							return err
						}
					}
					return c.Create(ctx, obj, opts...)
				},
			}).Build()
			p = newTestProvisioner(t, c)
			claim, pod := testClaim("general-abcde"), testPod("web-0")
			p.remember(claim, []*corev1.Pod{pod}, time.Now())
			err := p.create(context.Background(), claim, np, metrics.ReasonProvisioning, "")
			if (err != nil) != tt.wantErr {
				t.Fatalf("create: %v, want error %v", err, tt.wantErr)
			}
			r, ok := p.recent[claim.Name]
			if ok != tt.wantRecent {
				t.Errorf("remembered %v, want %v", ok, tt.wantRecent)
			}
			if ok && r.claim.ResourceVersion == "" {
				t.Errorf("the remembered claim lacks the server's fields: %+v", r.claim.ObjectMeta)
			}
			got := p.NominatedPods(claim.Name)
			if nominated := len(got) == 1 && got[0] == client.ObjectKeyFromObject(pod); nominated != tt.wantNominated {
				t.Errorf("nominated pods %v, want web-0 nominated %v", got, tt.wantNominated)
			}
		})
	}
}

func TestNominationHoldsWhileTheClaimIsInFlight(t *testing.T) {
	now := time.Now()
	initialized := func(ago time.Duration) *v1alpha1.NodeClaim {
		c := testClaim("a")
		c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionInitialized, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-ago))}}
		c.Status.NodeName = "node-a"
		return c
	}
	deleting := testClaim("a")
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	tests := []struct {
		name   string
		claims []*v1alpha1.NodeClaim
		// nominatedNode is the pod's status.nominatedNodeName.
		nominatedNode string
		want          bool
	}{
		{name: "launching", claims: []*v1alpha1.NodeClaim{testClaim("a")}, want: true},
		{name: "initialized less than nominationTTL ago", claims: []*v1alpha1.NodeClaim{initialized(nominationTTL / 2)}, want: true},
		{name: "initialized nominationTTL ago", claims: []*v1alpha1.NodeClaim{initialized(nominationTTL + time.Second)}},
		{name: "initialized nominationTTL ago, the scheduler not come to the pod yet", claims: []*v1alpha1.NodeClaim{initialized(nominationTTL + time.Second)}, nominatedNode: "node-a", want: true},
		{name: "initialized nominationTTL ago, the pod nominated elsewhere", claims: []*v1alpha1.NodeClaim{initialized(nominationTTL + time.Second)}, nominatedNode: "node-b"},
		{name: "being deleted", claims: []*v1alpha1.NodeClaim{deleting}},
		{name: "gone", claims: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestProvisioner(t, nil)
			pod := testPod("web-0")
			p.remember(testClaim("a"), []*corev1.Pod{pod}, now)
			byName := map[string]*v1alpha1.NodeClaim{}
			for _, c := range tt.claims {
				byName[c.Name] = c
			}
			name, ok := p.nominated(pod.UID, tt.nominatedNode, byName, now)
			if ok != tt.want || (ok && name != "a") {
				t.Errorf("nominated = %q, %v; want held %v", name, ok, tt.want)
			}
			if _, still := p.nominations[pod.UID]; still != tt.want {
				t.Errorf("nomination kept %v, want %v", still, tt.want)
			}
		})
	}
}

func TestForgetDropsPodsNoLongerPending(t *testing.T) {
	p := newTestProvisioner(t, nil)
	pending, bound := testPod("pending"), testPod("bound")
	p.remember(testClaim("a"), []*corev1.Pod{pending, bound}, time.Now())
	p.told[pending.UID], p.told[bound.UID] = "no fit", "no fit"
	p.forget(map[types.UID]bool{pending.UID: true})
	if _, ok := p.nominations[pending.UID]; !ok {
		t.Error("the pending pod lost its nomination")
	}
	if _, ok := p.nominations[bound.UID]; ok {
		t.Error("the bound pod is still nominated")
	}
	if _, ok := p.told[bound.UID]; ok {
		t.Error("the bound pod's reason is still remembered")
	}
	if got := p.NominatedPods("a"); len(got) != 1 || got[0].Name != "pending" {
		t.Errorf("NominatedPods = %v, want only default/pending", got)
	}
}

func TestPodsOfLeavingNodesArePlannedAheadOnlyIfTheirControllerRecreatesThem(t *testing.T) {
	now := metav1.Now()
	owned := func(kind string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{Kind: kind, Name: "x", Controller: ptr.To(true)}}
	}
	tests := []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"a ReplicaSet's pod", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: owned("ReplicaSet")}}, true},
		{"a StatefulSet's pod", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: owned("StatefulSet")}}, true},
		{"a DaemonSet's pod goes with the node", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: owned("DaemonSet")}}, false},
		{"a static pod", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: owned("Node"), Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}}}, false},
		{"a bare pod is lost, not moved", corev1.Pod{}, false},
		{"an owner that is not the controller", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "x"}}}}, false},
		{"a pod already terminating is replaced already", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: owned("ReplicaSet"), DeletionTimestamp: &now}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reschedulable(&tt.pod); got != tt.want {
				t.Errorf("reschedulable = %v, want %v", got, tt.want)
			}
		})
	}

	nodes := []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "kept"}, Spec: corev1.NodeSpec{ProviderID: "sim:///a/kept"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "claim-deleted"}, Spec: corev1.NodeSpec{ProviderID: "sim:///a/claim-deleted"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "node-deleted", DeletionTimestamp: &now}},
	}
	byID := map[string]*corev1.Node{}
	for i := range nodes {
		byID[nodes[i].Spec.ProviderID] = &nodes[i]
	}
	deleting := testClaim("claim-deleted")
	deleting.DeletionTimestamp, deleting.Status.ProviderID = &now, "sim:///a/claim-deleted"
	unlaunched := testClaim("unlaunched")
	unlaunched.DeletionTimestamp = &now
	kept := testClaim("kept")
	kept.Status.ProviderID = "sim:///a/kept"
	got := leavingNodes(nodes, []*v1alpha1.NodeClaim{deleting, unlaunched, kept}, byID)
	if len(got) != 2 || !got["claim-deleted"] || !got["node-deleted"] {
		t.Errorf("leaving nodes %v, want claim-deleted and node-deleted", got)
	}

	pod := testPod("web-1")
	pod.Spec.NodeName, pod.Status.Phase = "claim-deleted", corev1.PodRunning
	moved := asPending(pod)
	if moved.Spec.NodeName != "" || moved.Status.Phase != corev1.PodPending || pod.Spec.NodeName != "claim-deleted" {
		t.Errorf("asPending gave node %q phase %s and left the original on %q", moved.Spec.NodeName, moved.Status.Phase, pod.Spec.NodeName)
	}
}

// TestWakeAtTriggersABatchWhenTheNominationLapses drives the provisioner's
// timers on a fake clock: a batch is triggered 100 ms after the time
// wakeAt was given, not before, and a later wakeAt replaces the earlier.
func TestWakeAtTriggersABatchWhenTheNominationLapses(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	p := New(nil, nil, nil, logr.Discard(), nil, Options{Clock: fake})
	triggered := func() bool {
		select {
		case <-p.trigger:
			return true
		default:
			return false
		}
	}
	p.wakeAt(time.Time{}) // nothing arranged
	p.wakeAt(fake.Now().Add(5 * time.Second))
	fake.Step(5 * time.Second)
	if triggered() {
		t.Fatal("a batch was triggered at the lapse, before its 100 ms margin")
	}
	fake.Step(100 * time.Millisecond)
	if !triggered() {
		t.Fatal("no batch triggered 100 ms after the lapse")
	}
	p.wakeAt(fake.Now().Add(time.Second))
	p.wakeAt(fake.Now().Add(10 * time.Second))
	fake.Step(2 * time.Second)
	if triggered() {
		t.Fatal("the replaced wake-up still triggered a batch")
	}
	fake.Step(9 * time.Second)
	if !triggered() {
		t.Fatal("the later wake-up triggered no batch")
	}
}

// TestNodeOverlaysNotListedAreNotApplied: an operator whose ClusterRole may
// not list NodeOverlays (an upgrade that kept the old RBAC) or whose
// cluster lacks their CRD plans without them instead of failing every
// batch; any other error still fails the read.
func TestNodeOverlaysNotListedAreNotApplied(t *testing.T) {
	gr := schema.GroupResource{Group: "karpenter.sh", Resource: "nodeoverlays"}
	tests := []struct {
		name    string
		err     error
		wantErr bool
	}{
		{"forbidden", apierrors.NewForbidden(gr, "", errors.New("no rule")), false},
		{"not found", apierrors.NewNotFound(gr, ""), false},
		{"no CRD", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "karpenter.sh", Kind: "NodeOverlayList"}}, false},
		{"server error", apierrors.NewInternalError(errors.New("etcd down")), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
				List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error { return tt.err },
			}).Build()
			for range 2 {
				got, err := newTestProvisioner(t, c).nodeOverlays(context.Background())
				if (err != nil) != tt.wantErr || len(got) != 0 {
					t.Fatalf("nodeOverlays = %v, %v; want none and error %v", got, err, tt.wantErr)
				}
			}
		})
	}
}
