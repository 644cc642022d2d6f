package metrics

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/commitments"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/optional"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
)

// launchedClaim is a launched NodeClaim of the web pool.
func launchedClaim(name, typ, zone, capacityType, price, cpu string) *v1alpha1.NodeClaim {
	c := claim(name, "web", v1alpha1.ConditionLaunched)
	c.Status.InstanceType, c.Status.Zone, c.Status.CapacityType, c.Status.PricePerHour = typ, zone, capacityType, price
	c.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	return c
}

func commitment(name string, spec v1alpha1.CommitmentSpec) *v1alpha1.Commitment {
	return &v1alpha1.Commitment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

var (
	// regionalRI is 2 m6i.large: 8 normalised units of any m6i size.
	regionalRI = commitment("m6i-8-units", v1alpha1.CommitmentSpec{Type: v1alpha1.CommitmentReservedInstances,
		ReservedInstances: &v1alpha1.ReservedInstances{InstanceType: "m6i.large", InstanceCount: 2, PricePerHour: "0.06"}})
	// computeSP is $0.30 an hour at 30 % off any on-demand type.
	computeSP = commitment("compute-030", v1alpha1.CommitmentSpec{Type: v1alpha1.CommitmentComputeSavingsPlan,
		SavingsPlan: &v1alpha1.SavingsPlan{Commitment: "0.30", Discount: "0.3"}})
	// elsewhere covers c6i in another region than the operator's.
	elsewhere = commitment("c6i-eu", v1alpha1.CommitmentSpec{Type: v1alpha1.CommitmentEC2InstanceSavingsPlan,
		SavingsPlan: &v1alpha1.SavingsPlan{Commitment: "1", Discount: "0.2", InstanceFamily: "c6i", Region: "eu-west-1"}})
)

// commitmentClaims are NodeClaims of types the reservation covers (m6i,
// a metal one sized by its vCPUs), of another family (c6i), a spot one,
// and one not launched yet; billNodes are the launched ones as the bill
// sees them, written out by hand.
func commitmentClaims() ([]client.Object, []plan.BillNode) {
	pending := claim("web-pending", "web")
	pending.Spec.Requirements = []v1alpha1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"m6i.large"}}}
	going := launchedClaim("web-going", "c6i.large", "us-east-1b", cloud.CapacityTypeOnDemand, "0.085", "2")
	going.DeletionTimestamp, going.Finalizers = &deleted, []string{v1alpha1.TerminationFinalizer}
	objs := []client.Object{
		&v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "web"}},
		launchedClaim("web-xl", "m6i.xlarge", "us-east-1a", cloud.CapacityTypeOnDemand, "0.192", "4"),
		launchedClaim("web-l", "m6i.large", "us-east-1a", cloud.CapacityTypeOnDemand, "0.096", "2"),
		launchedClaim("web-metal", "m6i.metal", "us-east-1a", cloud.CapacityTypeOnDemand, "6.144", "128"),
		launchedClaim("web-c", "c6i.large", "us-east-1b", cloud.CapacityTypeOnDemand, "0.085", "2"),
		going,
		launchedClaim("web-spot", "m6i.2xlarge", "us-east-1a", cloud.CapacityTypeSpot, "0.15", "8"),
		pending,
	}
	return objs, []plan.BillNode{
		{InstanceType: "c6i.large", Zone: "us-east-1b", CapacityType: cloud.CapacityTypeOnDemand, Price: 0.085, VCPUs: 2},
		{InstanceType: "c6i.large", Zone: "us-east-1b", CapacityType: cloud.CapacityTypeOnDemand, Price: 0.085, VCPUs: 2},
		{InstanceType: "m6i.large", Zone: "us-east-1a", CapacityType: cloud.CapacityTypeOnDemand, Price: 0.096, VCPUs: 2},
		{InstanceType: "m6i.metal", Zone: "us-east-1a", CapacityType: cloud.CapacityTypeOnDemand, Price: 6.144, VCPUs: 128},
		{InstanceType: "m6i.2xlarge", Zone: "us-east-1a", CapacityType: cloud.CapacityTypeSpot, Price: 0.15, VCPUs: 8},
		{InstanceType: "m6i.xlarge", Zone: "us-east-1a", CapacityType: cloud.CapacityTypeOnDemand, Price: 0.192, VCPUs: 4},
	}
}

// commitmentGauges are the three commitment gauges, named by the field of
// plan.CommitmentUse each shows.
var commitmentGauges = []struct {
	name  string
	gauge *prometheus.GaugeVec
	value func(plan.CommitmentUse) float64
}{
	{"Utilization", CommitmentUtilization, func(u plan.CommitmentUse) float64 { return u.Utilization }},
	{"Covered", CommitmentCovered, func(u plan.CommitmentUse) float64 { return u.Covered }},
	{"Spilled", CommitmentSpilled, func(u plan.CommitmentUse) float64 { return u.Spilled }},
}

// expectCommitments checks that the commitment gauges have one series per
// commitment of want, with the values plan.BillOf gives nodes and want.
func expectCommitments(t *testing.T, nodes []plan.BillNode, want ...*v1alpha1.Commitment) {
	t.Helper()
	objs := make([]v1alpha1.Commitment, len(want))
	for i, c := range want {
		objs[i] = *c
	}
	cs, _, err := plan.CommitmentsOf(objs, "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	bill := plan.BillOf(nodes, cs)
	for _, g := range commitmentGauges {
		if n := testutil.CollectAndCount(g.gauge); n != len(want) {
			t.Errorf("%s: %d series, want %d", g.name, n, len(want))
		}
		for _, u := range bill.Commitments {
			got := testutil.ToFloat64(g.gauge.WithLabelValues(u.Name, string(u.Type)))
			if w := g.value(u); math.Abs(got-w) > 1e-12 {
				t.Errorf("%s of %s: %v, want %v (plan.BillOf)", g.name, u.Name, got, w)
			}
			if g.name == "Utilization" && (got < 0 || got > 1) {
				t.Errorf("utilization of %s is %v, not within 0-1", u.Name, got)
			}
		}
	}
}

func TestCommitmentGaugesBillTheLaunchedNodeClaims(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	noCRD := &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: v1alpha1.SchemeGroupVersion.Group, Kind: "Commitment"}, SearchedVersions: []string{"v1alpha1"}}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: v1alpha1.SchemeGroupVersion.Group, Resource: "commitments"}, "",
		errors.New(`User "system:serviceaccount:rightsize-system:rightsize-operator" cannot list resource "commitments" in API group "rightsize.dev" at the cluster scope`))
	for _, tc := range []struct {
		name string
		// commitments are in the API server; listErr, when set, is what
		// listing them answers instead.
		commitments []client.Object
		listErr     error
		// want are the commitments with series, billed together.
		want []*v1alpha1.Commitment
	}{
		{name: "a regional reservation and a Compute Savings Plan bill the launched on-demand claims, another region's plan has no series",
			commitments: []client.Object{regionalRI, computeSP, elsewhere}, want: []*v1alpha1.Commitment{regionalRI, computeSP}},
		{name: "no Commitment: no series", want: nil},
		{name: "the CRD not installed: no series, the other gauges set", commitments: []client.Object{regionalRI}, listErr: noCRD},
		{name: "not allowed to list Commitments (an older ClusterRole): no series, the other gauges set", commitments: []client.Object{regionalRI}, listErr: forbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, g := range []*prometheus.GaugeVec{NodeClaims, CommitmentUtilization, CommitmentCovered, CommitmentSpilled} {
				g.Reset()
			}
			objs, nodes := commitmentClaims()
			cache := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
			served := make([]client.Object, len(tc.commitments))
			for i, c := range tc.commitments {
				served[i] = c.DeepCopyObject().(client.Object)
			}
			lists := 0
			api := fake.NewClientBuilder().WithScheme(s).WithObjects(served...).WithInterceptorFuncs(interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					if _, ok := list.(*v1alpha1.CommitmentList); !ok {
						t.Errorf("listed %T through the API reader", list)
					}
					lists++
					if tc.listErr != nil {
						return tc.listErr
					}
					return c.List(ctx, list, opts...)
				},
			}).Build()
			now := time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC)
			cluster := NewCluster(cache, 0).WithCommitments(commitments.NewReader(api, "us-east-1").WithClock(func() time.Time { return now }))
			if err := cluster.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
			expectCommitments(t, nodes, tc.want...)
			compare(t, NodeClaims, map[string]float64{
				"web/deleting":     1,
				"web/initialized":  0,
				"web/initializing": 0,
				"web/launching":    1,
				"web/registering":  5,
			})

			// Refreshed again within optional.Retry: an absent kind is not
			// asked for again, a served one is.
			now = now.Add(optional.Retry / 2)
			if err := cluster.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
			wantLists := 2
			if tc.listErr != nil {
				wantLists = 1
			}
			if lists != wantLists {
				t.Errorf("%d lists of Commitments in two refreshes %s apart, want %d", lists, optional.Retry/2, wantLists)
			}
			now = now.Add(optional.Retry)
			if err := cluster.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
			if lists != wantLists+1 {
				t.Errorf("%d lists of Commitments after %s, want %d", lists, optional.Retry, wantLists+1)
			}
			expectCommitments(t, nodes, tc.want...)
		})
	}
}

func TestCommitmentGaugesFollowTheCommitments(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, g := range []*prometheus.GaugeVec{NodeClaims, CommitmentUtilization, CommitmentCovered, CommitmentSpilled} {
		g.Reset()
	}
	objs, nodes := commitmentClaims()
	cache := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	ri, sp := regionalRI.DeepCopy(), computeSP.DeepCopy()
	var listErr error // what listing Commitments answers, when set
	api := fake.NewClientBuilder().WithScheme(s).WithObjects(ri, sp).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if listErr != nil {
				return listErr
			}
			return c.List(ctx, list, opts...)
		},
	}).Build()
	now := time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC)
	cluster := NewCluster(cache, 0).WithCommitments(commitments.NewReader(api, "us-east-1").WithClock(func() time.Time { return now }))
	ctx := context.Background()
	if err := cluster.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	expectCommitments(t, nodes, regionalRI, computeSP)
	// By hand: the 8 units cover the m6i.large (4) and half the m6i.xlarge
	// (4 of 8), smallest first; the other half and the metal (2 units a
	// vCPU, 256) spill.
	ri8 := []string{regionalRI.Name, string(v1alpha1.CommitmentReservedInstances)}
	for _, tc := range []struct {
		gauge *prometheus.GaugeVec
		name  string
		want  float64
	}{
		{CommitmentUtilization, "utilization", 1},
		{CommitmentCovered, "covered", 0.096 + 0.192/2},
		{CommitmentSpilled, "spilled", 0.192/2 + 6.144},
	} {
		if got := testutil.ToFloat64(tc.gauge.WithLabelValues(ri8...)); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("the reservation's %s: %v, want %v", tc.name, got, tc.want)
		}
	}

	// The API server does not answer in time: the last values stay.
	listErr = apierrors.NewTimeoutError("slow", 1)
	if err := cluster.Refresh(ctx); err == nil {
		t.Error("no error for a Commitment list that timed out")
	}
	expectCommitments(t, nodes, regionalRI, computeSP)
	listErr = nil

	// The reservation expires: its series go; the Savings Plan's are
	// billed without it.
	if err := api.Delete(ctx, ri); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	expectCommitments(t, nodes, computeSP)

	// A Commitment the bill cannot spend is reported and left out; the
	// others keep their series.
	bad := commitment("bad", v1alpha1.CommitmentSpec{Type: v1alpha1.CommitmentReservedInstances,
		ReservedInstances: &v1alpha1.ReservedInstances{InstanceType: "m6i.weird", InstanceCount: 1}})
	if err := api.Create(ctx, bad); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Refresh(ctx); err == nil {
		t.Error("no error for a Commitment the bill cannot spend")
	}
	expectCommitments(t, nodes, computeSP)

	// The CRD is deleted: every commitment series goes, the other gauges
	// stay.
	listErr = &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: v1alpha1.SchemeGroupVersion.Group, Kind: "Commitment"}, SearchedVersions: []string{"v1alpha1"}}
	now = now.Add(time.Minute)
	if err := cluster.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	expectCommitments(t, nodes)
	if n := testutil.CollectAndCount(NodeClaims); n == 0 {
		t.Error("no rightsize_nodeclaims series once the Commitment CRD is gone")
	}
}
