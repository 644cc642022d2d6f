package repair

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
)

// The fake client stands in for the cache's indexes here; the e2e test
// TestOperator repairs a node on a real API server.

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func node(name string, conds ...corev1.NodeCondition) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "sim:///a/" + name},
		Status: corev1.NodeStatus{Conditions: conds}}
}

func cond(t corev1.NodeConditionType, s corev1.ConditionStatus, ago time.Duration) corev1.NodeCondition {
	return corev1.NodeCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(now.Add(-ago))}
}

func TestUnhealthy(t *testing.T) {
	tests := []struct {
		name       string
		conds      []corev1.NodeCondition
		toleration time.Duration
		want       string // "Condition=Status due-in" or ""
	}{
		{"healthy", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionTrue, time.Hour)}, 0, ""},
		{"NotReady 10m of 30m", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse, 10*time.Minute)}, 0, "Ready=False 20m0s"},
		{"unreachable 40m", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionUnknown, 40*time.Minute)}, 0, "Ready=Unknown -10m0s"},
		{"an accelerator failure comes due before NotReady", []corev1.NodeCondition{
			cond(corev1.NodeReady, corev1.ConditionFalse, 25*time.Minute), cond("AcceleratedHardwareReady", corev1.ConditionFalse, 8*time.Minute)}, 0,
			"AcceleratedHardwareReady=False 2m0s"},
		{"a condition no policy names", []corev1.NodeCondition{cond("MemoryPressure", corev1.ConditionTrue, time.Hour)}, 0, ""},
		{"KernelReady True is healthy", []corev1.NodeCondition{cond("KernelReady", corev1.ConditionTrue, time.Hour)}, 0, ""},
		{"the toleration flag replaces every policy's", []corev1.NodeCondition{cond("KernelReady", corev1.ConditionFalse, 5*time.Second)}, 2 * time.Second, "KernelReady=False -3s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if b := Unhealthy(node("n", tt.conds...), DefaultPolicies, tt.toleration); b != nil {
				got = fmt.Sprintf("%s=%s %s", b.Policy.Condition, b.Policy.Status, b.Due.Sub(now))
			}
			if got != tt.want {
				t.Errorf("Unhealthy = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReconcileRepairsOnlyPastTheTolerationAndNotAWiderFailure(t *testing.T) {
	tests := []struct {
		name string
		// broken is how long each of the pool's nodes has been NotReady
		// (0: healthy); the first is the one reconciled.
		broken      []time.Duration
		wantDeleted bool
		wantRequeue time.Duration
		wantEvent   string
	}{
		{"healthy", []time.Duration{0, 0}, false, 0, ""},
		{"not yet past the toleration: look again when it is", []time.Duration{20 * time.Minute, 0}, false, 10 * time.Minute, ""},
		{"past it: repaired", []time.Duration{31 * time.Minute, 0, 0, 0, 0}, true, 0, "Repairing node n0 has had Ready=False for 31m0s (tolerated: 30m0s)"},
		{"a pool of one may repair its node", []time.Duration{time.Hour}, true, 0, "Repairing"},
		{"two of five unhealthy: a wider failure, none repaired", []time.Duration{time.Hour, time.Hour, 0, 0, 0}, false, time.Minute,
			"RepairBlocked node n0 has had Ready=False for 1h0m0s, but 2 of NodePool pool's 5 nodes are unhealthy"},
		{"two of six: within 20% rounded up", []time.Duration{time.Hour, time.Hour, 0, 0, 0, 0}, true, 0, "Repairing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			if err := v1alpha1.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			var objs []client.Object
			for i, ago := range tt.broken {
				name := fmt.Sprintf("n%d", i)
				ready := cond(corev1.NodeReady, corev1.ConditionTrue, 2*time.Hour)
				if ago > 0 {
					ready = cond(corev1.NodeReady, corev1.ConditionFalse, ago)
				}
				n := node(name, ready)
				claim := &v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.LabelNodePool: "pool"}, Finalizers: []string{v1alpha1.TerminationFinalizer}},
					Status: v1alpha1.NodeClaimStatus{ProviderID: n.Spec.ProviderID, Conditions: []metav1.Condition{
						{Type: v1alpha1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(now.Add(-3 * time.Hour))}}}}
				objs = append(objs, n, claim)
			}
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
				WithIndex(&v1alpha1.NodeClaim{}, nodeclaim.IndexClaimProviderID, func(o client.Object) []string { return []string{o.(*v1alpha1.NodeClaim).Status.ProviderID} }).
				WithIndex(&corev1.Node{}, nodeclaim.IndexNodeProviderID, func(o client.Object) []string { return []string{o.(*corev1.Node).Spec.ProviderID} }).
				Build()
			rec := events.NewFakeRecorder(10)
			ctrl := New(c, rec, Options{Clock: clocktesting.NewFakePassiveClock(now)})
			res, err := ctrl.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: "n0"}})
			if err != nil {
				t.Fatal(err)
			}
			var claim v1alpha1.NodeClaim
			if err := c.Get(context.Background(), client.ObjectKey{Name: "n0"}, &claim); err != nil {
				t.Fatal(err)
			}
			if deleted := claim.DeletionTimestamp != nil; deleted != tt.wantDeleted {
				t.Errorf("claim deleted %v, want %v", deleted, tt.wantDeleted)
			}
			if tt.wantDeleted && claim.DeletionReason() != v1alpha1.DeletionReasonRepair {
				t.Errorf("deletion reason %q, want %q", claim.DeletionReason(), v1alpha1.DeletionReasonRepair)
			}
			if res.RequeueAfter != tt.wantRequeue {
				t.Errorf("requeue after %s, want %s", res.RequeueAfter, tt.wantRequeue)
			}
			var got string
			select {
			case got = <-rec.Events:
			default:
			}
			if (tt.wantEvent == "") != (got == "") || !strings.Contains(got, tt.wantEvent) {
				t.Errorf("event %q, want one with %q", got, tt.wantEvent)
			}
		})
	}
}

func TestRepairWaitsOutTheTolerationOnTheClock(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	n := node("n0", cond(corev1.NodeReady, corev1.ConditionFalse, 10*time.Minute))
	claim := &v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "n0", Labels: map[string]string{v1alpha1.LabelNodePool: "pool"}, Finalizers: []string{v1alpha1.TerminationFinalizer}},
		Status: v1alpha1.NodeClaimStatus{ProviderID: n.Spec.ProviderID}}
	claim.SetInitialized()
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(n, claim).
		WithIndex(&v1alpha1.NodeClaim{}, nodeclaim.IndexClaimProviderID, func(o client.Object) []string { return []string{o.(*v1alpha1.NodeClaim).Status.ProviderID} }).
		WithIndex(&corev1.Node{}, nodeclaim.IndexNodeProviderID, func(o client.Object) []string { return []string{o.(*corev1.Node).Spec.ProviderID} }).
		Build()
	clk := clocktesting.NewFakePassiveClock(now)
	ctrl := New(c, events.NewFakeRecorder(10), Options{Clock: clk})
	for _, step := range []struct {
		at          time.Duration // after now
		wantRequeue time.Duration
		wantDeleted bool
	}{
		{0, 20 * time.Minute, false}, // NotReady for 10 of the 30 minutes tolerated
		{19 * time.Minute, time.Minute, false},
		{20 * time.Minute, 0, true},
	} {
		clk.SetTime(now.Add(step.at))
		res, err := ctrl.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: "n0"}})
		if err != nil {
			t.Fatal(err)
		}
		var got v1alpha1.NodeClaim
		if err := c.Get(context.Background(), client.ObjectKey{Name: "n0"}, &got); err != nil {
			t.Fatal(err)
		}
		if deleted := got.DeletionTimestamp != nil; res.RequeueAfter != step.wantRequeue || deleted != step.wantDeleted {
			t.Errorf("at +%s: requeue after %s, deleted %v; want %s, %v", step.at, res.RequeueAfter, deleted, step.wantRequeue, step.wantDeleted)
		}
	}
}
