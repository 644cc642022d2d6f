package disruption

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/disruption"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// commitmentSource serves a snapshot of one on-demand m6i.2xlarge node "a"
// ($0.384/h, its NodeClaim says) and the commitments given.
type commitmentSource struct {
	Source
	cs  []plan.Commitment
	err error
}

func (s commitmentSource) Snapshot(context.Context) (*disruption.Snapshot, error) {
	var alloc solver.Resources
	alloc[solver.CPU], alloc[solver.Memory], alloc[solver.Pods] = 8000, 32<<30, 110
	p := &solver.Problem{
		Pools: []solver.Pool{{Name: "pool", Labels: map[string]string{}, Consolidation: solver.Consolidation{Policy: solver.WhenEmptyOrUnderutilized, NodesAllowed: -1}}},
		Nodes: []solver.Node{{Name: "a", Pool: "pool", InstanceType: "m6i.2xlarge", Zone: "us-east-1a", CapacityType: "on-demand", Allocatable: alloc,
			Labels: map[string]string{solver.LabelNodePool: "pool", solver.LabelHostname: "a"}}},
	}
	return &disruption.Snapshot{Problem: p, Pools: map[string]*v1alpha1.NodePool{"pool": {ObjectMeta: metav1.ObjectMeta{Name: "pool"}}}}, nil
}

func (s commitmentSource) Commitments(context.Context) ([]plan.Commitment, error) { return s.cs, s.err }

// TestViewPricesNodesBeyondTheirCommitments: consolidation plans on nodes
// priced at what they cost beyond the commitments (plan.CoveredPrices), so
// that moving a node off covered capacity never counts the commitment's
// value as a saving; a Commitment list that fails fails the plan rather
// than plan at list prices.
func TestViewPricesNodesBeyondTheirCommitments(t *testing.T) {
	const list = 0.384
	ri := func(units float64) plan.Commitment {
		return plan.Commitment{Name: "ri", Type: v1alpha1.CommitmentReservedInstances, InstanceType: "m6i.large", Family: "m6i", Count: int(units / 4), Units: units}
	}
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.NodeSpec{ProviderID: "sim://a"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	claim := &v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a-claim", Labels: map[string]string{v1alpha1.LabelNodePool: "pool"}},
		Status: v1alpha1.NodeClaimStatus{ProviderID: "sim://a", PricePerHour: "0.384"}}
	for _, tc := range []struct {
		name  string
		src   commitmentSource
		price float64
		fails bool
	}{
		{name: "no commitment: its NodeClaim's price", price: list},
		{name: "covered whole: a thousandth of it", src: commitmentSource{cs: []plan.Commitment{ri(16)}}, price: list / 1000},
		{name: "covered a quarter: the rest", src: commitmentSource{cs: []plan.Commitment{ri(4)}}, price: list * 0.75},
		{name: "the Commitments could not be read", src: commitmentSource{err: errors.New("timeout")}, fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(node.DeepCopy(), claim.DeepCopy()).Build()
			ctrl := New(c, nil, tc.src, events.NewFakeRecorder(10), logr.Discard(), Options{Clock: clocktesting.NewFakeClock(time.Now())})
			v, err := ctrl.view(context.Background(), nil)
			if tc.fails {
				if err == nil {
					t.Fatal("no error when the Commitments could not be read")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := v.Problem().Nodes[0].Price; math.Abs(got-tc.price) > 1e-12 {
				t.Errorf("node priced $%v/h, want $%v/h", got, tc.price)
			}
		})
	}
}
