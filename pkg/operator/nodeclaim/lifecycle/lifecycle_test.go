package lifecycle

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/state"
)

// These tests step a fake clock through the controller's timers against
// controller-runtime's fake client, which stands in for the informer cache
// and the API server only for the claim's own bookkeeping; launching,
// registering and draining against a real control plane are tested end to
// end (test/e2e).

var epoch = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// stubCloud launches every claim at once, as sim:///us-east-1a/<name>.
type stubCloud struct{ created, deleted int }

func (s *stubCloud) Name() string { return "stub" }
func (s *stubCloud) Create(_ context.Context, claim *v1alpha1.NodeClaim) (*v1alpha1.NodeClaim, error) {
	s.created++
	view := claim.DeepCopy()
	view.Status.ProviderID = "sim:///us-east-1a/" + claim.Name
	view.Status.InstanceType, view.Status.Zone, view.Status.CapacityType = "m5.large", "us-east-1a", "on-demand"
	view.Labels = map[string]string{corev1.LabelTopologyZone: "us-east-1a"} // copied onto the claim at launch
	return view, nil
}
func (s *stubCloud) Delete(context.Context, *v1alpha1.NodeClaim) error { s.deleted++; return nil }
func (s *stubCloud) Get(_ context.Context, id string) (*v1alpha1.NodeClaim, error) {
	return nil, &cloud.NotFoundError{ProviderID: id}
}
func (s *stubCloud) List(context.Context) ([]*v1alpha1.NodeClaim, error) { return nil, nil }
func (s *stubCloud) InstanceTypes(context.Context, *v1alpha1.NodePool) ([]cloud.InstanceType, error) {
	return nil, nil
}
func (s *stubCloud) IsDrifted(context.Context, *v1alpha1.NodeClaim) (string, error) { return "", nil }

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// fakeClient is the fake client with the operator's field indexes.
func fakeClient(t *testing.T, objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.NodeClaim{}).
		WithIndex(&v1alpha1.NodeClaim{}, nodeclaim.IndexClaimProviderID, func(o client.Object) []string {
			if id := o.(*v1alpha1.NodeClaim).Status.ProviderID; id != "" {
				return []string{id}
			}
			return nil
		}).
		WithIndex(&corev1.Node{}, nodeclaim.IndexNodeProviderID, func(o client.Object) []string {
			if id := o.(*corev1.Node).Spec.ProviderID; id != "" {
				return []string{id}
			}
			return nil
		}).Build()
}

// newClaim is a claim created at epoch, launched launchedAgo before the
// clock's time (not launched when negative).
func newClaim(now time.Time, launchedAgo time.Duration) *v1alpha1.NodeClaim {
	c := &v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{
		Name: "web-abcde", CreationTimestamp: metav1.NewTime(epoch), Finalizers: []string{v1alpha1.TerminationFinalizer},
		Labels: map[string]string{v1alpha1.LabelNodePool: "web"},
	}}
	if launchedAgo >= 0 {
		c.Status.ProviderID = "sim:///us-east-1a/web-abcde"
		c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionLaunched, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonLaunched,
			LastTransitionTime: metav1.NewTime(now.Add(-launchedAgo))}}
	}
	return c
}

func TestLivenessDeletesClaimsThatDoNotLaunchOrRegisterInTime(t *testing.T) {
	for _, tc := range []struct {
		name        string
		now         time.Duration // since epoch
		launchedAgo time.Duration // -1: not launched
		wantReason  v1alpha1.DeletionReason
		wantRequeue time.Duration
		wantCreated int
	}{
		{name: "not launched within LaunchTimeout", now: 5*time.Minute + time.Second, launchedAgo: -1, wantReason: v1alpha1.DeletionReasonLaunchTimeout},
		{name: "exactly at LaunchTimeout: launched, waiting for its node", now: 5 * time.Minute, launchedAgo: -1, wantCreated: 1},
		{name: "launched, its node has 5 minutes left to register", now: time.Hour, launchedAgo: 10 * time.Minute, wantRequeue: 5 * time.Minute},
		{name: "node not registered within RegistrationTimeout", now: time.Hour, launchedAgo: 15*time.Minute + time.Second, wantReason: v1alpha1.DeletionReasonRegistrationTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(epoch.Add(tc.now))
			c := fakeClient(t, newClaim(clk.Now(), tc.launchedAgo))
			cp := &stubCloud{}
			replans := 0
			ctrl := New(c, nil, cp, events.NewFakeRecorder(10), state.NewUnavailable(time.Minute), Options{
				Clock: clk, Replan: func() { replans++ },
			})
			res, err := ctrl.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: "web-abcde"}})
			if err != nil {
				t.Fatal(err)
			}
			var got v1alpha1.NodeClaim
			if err := c.Get(context.Background(), client.ObjectKey{Name: "web-abcde"}, &got); err != nil {
				t.Fatal(err)
			}
			deleted := got.DeletionTimestamp != nil
			if want := tc.wantReason != ""; deleted != want {
				t.Fatalf("deleted %v, want %v", deleted, want)
			}
			if deleted && (got.DeletionReason() != tc.wantReason || replans != 1) {
				t.Errorf("deleted for %q with %d replans, want %q and 1", got.DeletionReason(), replans, tc.wantReason)
			}
			// A launch now records its transition at the wall clock's time,
			// not the fake one's; its registration wait is only checked to be
			// pending.
			if tc.wantCreated > 0 && (!got.IsLaunched() || res.RequeueAfter <= 0) {
				t.Errorf("launched %v, requeue after %s; want launched and a requeue", got.IsLaunched(), res.RequeueAfter)
			} else if tc.wantCreated == 0 && res.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeue after %s, want %s", res.RequeueAfter, tc.wantRequeue)
			}
			if cp.created != tc.wantCreated {
				t.Errorf("%d launches, want %d", cp.created, tc.wantCreated)
			}
		})
	}
}

// TestGangWaitOpensAUsableNodeWithoutTheRestOfItsDecisionInTheEnd: a
// usable node planned for a hard-spread pod waits GangWait for the other
// node of its decision, then opens alone; one planned for pods without
// such constraints, or for none, opens at once.
func TestGangWaitOpensAUsableNodeWithoutTheRestOfItsDecisionInTheEnd(t *testing.T) {
	type step struct {
		advance     time.Duration
		wantRequeue time.Duration
		wantOpen    bool
	}
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: "pod-a"}}
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod // planned onto the node; nil: none
		steps []step
	}{
		{name: "a hard spread waits for the decision", pod: spreadPod("pod-a"), steps: []step{
			{0, 10 * time.Second, false},
			{4 * time.Second, 6 * time.Second, false},
			{6 * time.Second, 0, true},
		}},
		{name: "a pod without constraints opens at once", pod: plain, steps: []step{{0, 0, true}}},
		{name: "no pod planned opens at once", steps: []step{{0, 0, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(epoch)
			claim := batchClaim("a", "b1", "2", "a", v1alpha1.ConditionLaunched, v1alpha1.ConditionRegistered)
			node := readyNode("a", cloud.UnregisteredTaint)
			objs := []client.Object{claim, node}
			nominated := func(string) []types.NamespacedName { return nil }
			if tc.pod != nil {
				objs = append(objs, tc.pod)
				nominated = func(string) []types.NamespacedName { return []types.NamespacedName{client.ObjectKeyFromObject(tc.pod)} }
			}
			c := fakeClient(t, objs...)
			kube := kubefake.NewClientset(node.DeepCopy())
			ctrl := New(c, kube, &stubCloud{}, events.NewFakeRecorder(10), state.NewUnavailable(time.Minute), Options{
				Clock: clk, GangWait: 10 * time.Second, NominatedPods: nominated, KeepNominations: time.Millisecond, LateWait: time.Millisecond,
			})
			ctx := context.Background()
			get := func() *v1alpha1.NodeClaim {
				var got v1alpha1.NodeClaim
				if err := c.Get(ctx, client.ObjectKey{Name: "a"}, &got); err != nil {
					t.Fatal(err)
				}
				return &got
			}
			for _, step := range tc.steps {
				clk.Step(step.advance)
				res, err := ctrl.initialize(ctx, get())
				if err != nil {
					t.Fatal(err)
				}
				open := get().IsInitialized()
				if res.RequeueAfter != step.wantRequeue || open != step.wantOpen {
					t.Errorf("at +%s: requeue after %s, initialized %v; want %s, %v", clk.Since(epoch), res.RequeueAfter, open, step.wantRequeue, step.wantOpen)
				}
			}
			n, err := kube.CoreV1().Nodes().Get(ctx, "a", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(n.Spec.Taints) != 0 {
				t.Errorf("taints %v after opening, want none", n.Spec.Taints)
			}
		})
	}
}

func TestDrainIsGracefulUntilTheTerminationGracePeriodEnds(t *testing.T) {
	hour := metav1.Duration{Duration: time.Hour}
	for _, tc := range []struct {
		name           string
		reason         v1alpha1.DeletionReason
		grace          *metav1.Duration
		deletedAgo     time.Duration
		wantNoEviction bool
		wantGrace      int
	}{
		{"no grace period: evicted however long it takes", v1alpha1.DeletionReasonDisruption, nil, 48 * time.Hour, false, -1},
		{"within the grace period: evicted", v1alpha1.DeletionReasonDisruption, &hour, 59 * time.Minute, false, -1},
		{"past the grace period: deleted, with the pods' own grace", v1alpha1.DeletionReasonDeleted, &hour, 61 * time.Minute, true, -1},
		{"repair: deleted at once", v1alpha1.DeletionReasonRepair, &hour, 0, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(epoch)
			ctrl := New(nil, nil, nil, nil, nil, Options{Clock: clk})
			claim := newClaim(epoch, -1)
			claim.SetDeletionReason(tc.reason)
			claim.Spec.TerminationGracePeriod = tc.grace
			deleted := metav1.NewTime(epoch.Add(-tc.deletedAgo))
			claim.DeletionTimestamp = &deleted
			h := ctrl.drainer(context.Background(), claim)
			if h.DisableEviction != tc.wantNoEviction || h.GracePeriodSeconds != tc.wantGrace {
				t.Errorf("eviction disabled %v, grace %d; want %v, %d", h.DisableEviction, h.GracePeriodSeconds, tc.wantNoEviction, tc.wantGrace)
			}
		})
	}
}
