package lifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/state"
)

// staleClient reads the NodeClaim it holds instead of the current one, as
// the informer cache does before it has seen the claim's last update.
type staleClient struct {
	client.Client
	claim *v1alpha1.NodeClaim
}

func (s *staleClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if c, ok := obj.(*v1alpha1.NodeClaim); ok && key.Name == s.claim.Name {
		s.claim.DeepCopyInto(c)
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

// TestEachTransitionIsCountedOnceWhenTheCacheLags reconciles a claim, then
// reconciles it again from the copy read before the first reconcile's
// status writes, as happens when its Node's updates requeue it before the
// cache shows them: the bug behind rightsize_nodeclaims_registered_total
// exceeding launched (issue 14).
func TestEachTransitionIsCountedOnceWhenTheCacheLags(t *testing.T) {
	for _, tc := range []struct {
		name string
		// launched: the claim starts launched; its Node exists either way.
		launched bool
		want     [3]float64 // launched, registered, initialized
	}{
		{name: "from creation to an open node", launched: false, want: [3]float64{1, 1, 1}},
		{name: "from launched to an open node", launched: true, want: [3]float64{0, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(epoch.Add(time.Minute))
			ago := time.Duration(-1)
			if tc.launched {
				ago = time.Second
			}
			claim := newClaim(clk.Now(), ago)
			node := readyNode("web-abcde", cloud.UnregisteredTaint)
			node.Spec.ProviderID = "sim:///us-east-1a/web-abcde"
			c := fakeClient(t, claim, node)
			var before v1alpha1.NodeClaim
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(claim), &before); err != nil {
				t.Fatal(err)
			}
			counters := []*prometheus.CounterVec{metrics.NodeClaimsLaunched, metrics.NodeClaimsRegistered, metrics.NodeClaimsInitialized}
			var start [3]float64
			for i, m := range counters {
				start[i] = testutil.ToFloat64(m.WithLabelValues("web"))
			}
			cp := &stubCloud{}
			opts := Options{Clock: clk, GangWait: time.Nanosecond}
			req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(claim)}
			for _, cl := range []client.Client{c, &staleClient{Client: c, claim: &before}} {
				// A fresh controller each time, as after a restart: the
				// in-process record of opened nodes must not be what
				// prevents the second count.
				ctrl := New(cl, kubefake.NewClientset(node.DeepCopy()), cp, events.NewFakeRecorder(10), state.NewUnavailable(time.Minute), opts)
				if _, err := ctrl.Reconcile(context.Background(), req); err != nil {
					t.Fatal(err)
				}
			}
			var got v1alpha1.NodeClaim
			if err := c.Get(context.Background(), req.NamespacedName, &got); err != nil {
				t.Fatal(err)
			}
			if !got.IsLaunched() || !got.IsRegistered() || !got.IsInitialized() {
				t.Fatalf("conditions %+v, want launched, registered and initialized", got.Status.Conditions)
			}
			for i, m := range counters {
				if d := testutil.ToFloat64(m.WithLabelValues("web")) - start[i]; d != tc.want[i] {
					t.Errorf("%s counted %v times, want %v", []string{"launched", "registered", "initialized"}[i], d, tc.want[i])
				}
			}
		})
	}
}
