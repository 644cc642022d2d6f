package drift

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
)

// The fake client only stores the claim between reconciles; the e2e test
// TestDisruption runs the controller against a real API server.

// driftCloud answers IsDrifted with why and err; the other methods are
// not used.
type driftCloud struct {
	cloud.CloudProvider
	why   string
	err   error
	calls int
}

func (d *driftCloud) IsDrifted(context.Context, *v1alpha1.NodeClaim) (string, error) {
	d.calls++
	return d.why, d.err
}

func TestReconcileKeepsTheDriftedCondition(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	launched := &v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: v1alpha1.NodeClaimStatus{Conditions: []metav1.Condition{
		{Type: v1alpha1.ConditionLaunched, Status: metav1.ConditionTrue, Reason: "Launched", LastTransitionTime: metav1.Now()}}}}
	pending := &v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "pending"}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(launched, pending).WithStatusSubresource(&v1alpha1.NodeClaim{}).Build()
	cp := &driftCloud{}
	rec := events.NewFakeRecorder(10)
	ctrl := New(c, cp, rec, Options{Interval: time.Minute})
	ctx := context.Background()
	const why = "SimNodeClass sim's launch settings changed since the node was launched"

	steps := []struct {
		name      string
		why       string
		err       error
		wantCond  metav1.ConditionStatus // "" means absent
		wantEvent bool
		wantErr   bool
	}{
		{name: "not drifted: no condition", wantCond: ""},
		{name: "drifted: True with the reason, and an event", why: why, wantCond: metav1.ConditionTrue, wantEvent: true},
		{name: "still drifted: unchanged, no second event", why: why, wantCond: metav1.ConditionTrue},
		{name: "node class not ready: unknown, the condition stays", err: &cloud.NodeClassNotReadyError{NodeClass: "sim", Reason: "gone"},
			wantCond: metav1.ConditionTrue},
		{name: "a transient error is returned, the condition stays", err: errors.New("throttled"), wantCond: metav1.ConditionTrue, wantErr: true},
		{name: "no longer drifted: the condition goes", wantCond: ""},
	}
	for _, st := range steps {
		cp.why, cp.err = st.why, st.err
		res, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "a"}})
		if (err != nil) != st.wantErr {
			t.Fatalf("%s: Reconcile error %v, want error %v", st.name, err, st.wantErr)
		}
		if err == nil && res.RequeueAfter != time.Minute {
			t.Errorf("%s: requeue after %s, want the interval", st.name, res.RequeueAfter)
		}
		var got v1alpha1.NodeClaim
		if err := c.Get(ctx, client.ObjectKey{Name: "a"}, &got); err != nil {
			t.Fatal(err)
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionDrifted)
		switch {
		case st.wantCond == "" && cond != nil:
			t.Errorf("%s: condition %+v, want none", st.name, cond)
		case st.wantCond != "" && (cond == nil || cond.Status != st.wantCond || cond.Message != why || cond.Reason != ReasonDrifted):
			t.Errorf("%s: condition %+v, want %s with the reason", st.name, cond, st.wantCond)
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionLaunched) {
			t.Errorf("%s: the Launched condition was lost: %+v", st.name, got.Status.Conditions)
		}
		select {
		case e := <-rec.Events:
			if !st.wantEvent || !strings.Contains(e, why) {
				t.Errorf("%s: event %q, want none", st.name, e)
			}
		default:
			if st.wantEvent {
				t.Errorf("%s: no Drifted event", st.name)
			}
		}
	}
	// A claim not launched yet is not asked about.
	before := cp.calls
	if _, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "pending"}}); err != nil {
		t.Fatal(err)
	}
	if cp.calls != before {
		t.Errorf("IsDrifted called for a claim that is not launched")
	}
}
