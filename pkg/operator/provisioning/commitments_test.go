package provisioning

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/commitments"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/state"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// commitmentCloud offers m6i.large and c6i.large in one zone, on-demand
// and spot: at list prices a pod goes on spot.
type commitmentCloud struct{ cloud.CloudProvider }

func (commitmentCloud) InstanceTypes(context.Context, *v1alpha1.NodePool) ([]cloud.InstanceType, error) {
	typ := func(name string, onDemand, spot float64) cloud.InstanceType {
		return cloud.InstanceType{Name: name, CPU: 2000, Memory: 8 << 30, Architecture: "amd64", MaxENIs: 3, IPv4PerENI: 10,
			Offerings: []cloud.Offering{
				{Zone: "us-east-1a", CapacityType: cloud.CapacityTypeOnDemand, Price: onDemand},
				{Zone: "us-east-1a", CapacityType: cloud.CapacityTypeSpot, Price: spot},
			}}
	}
	return []cloud.InstanceType{typ("m6i.large", 0.096, 0.04), typ("c6i.large", 0.085, 0.035)}, nil
}

// commitmentScheme has the Kubernetes kinds and ours.
func commitmentScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// turnedAway is a pending pod of 1 CPU the scheduler turned away.
func turnedAway(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}}
}

// TestABatchLaunchesTheCapacityItsCommitmentsCover: a batch plans its pods
// onto the capacity a Commitment has room for, as explain's plan does
// (plan.Spend), and launches each covered node on its planned offering
// alone; without room it buys the cheapest list price (spot), flexibly.
func TestABatchLaunchesTheCapacityItsCommitmentsCover(t *testing.T) {
	ri := func(count int32) *v1alpha1.Commitment {
		return &v1alpha1.Commitment{ObjectMeta: metav1.ObjectMeta{Name: "m6i-ri"}, Spec: v1alpha1.CommitmentSpec{
			Type:              v1alpha1.CommitmentReservedInstances,
			ReservedInstances: &v1alpha1.ReservedInstances{InstanceType: "m6i.large", InstanceCount: count, Region: "us-east-1", PricePerHour: "0.06"}}}
	}
	for _, tc := range []struct {
		name        string
		commitments []*v1alpha1.Commitment
		// covered is how many m6i.large on-demand nodes are launched, each
		// pinned to its offering; the rest go on spot.
		covered int
		// stopping plans as the operator does once its context ends: the
		// blind plan, no further solve.
		stopping bool
	}{
		{name: "no Commitment: spot, at list price the cheapest"},
		{name: "a reservation of two m6i.large: two covered nodes, the rest on spot", commitments: []*v1alpha1.Commitment{ri(2)}, covered: 2},
		{name: "a reservation of ten: every node covered", commitments: []*v1alpha1.Commitment{ri(10)}, covered: 4},
		{name: "the operator stopping: the blind plan, no commitment-aware solve", commitments: []*v1alpha1.Commitment{ri(10)}, stopping: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := commitmentScheme(t)
			np := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
			np.Spec.Template.Spec.NodeClassRef = v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "EC2NodeClass", Name: "default"}
			objs := []client.Object{np}
			for i := range 4 { // one pod a node: 1 CPU of 2 leaves no room for a second with the overhead
				objs = append(objs, turnedAway(fmt.Sprintf("web-%d", i)))
			}
			served := make([]client.Object, len(tc.commitments))
			for i, c := range tc.commitments {
				served[i] = c
			}
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
			api := fake.NewClientBuilder().WithScheme(s).WithObjects(served...).Build()
			p := New(c, commitmentCloud{}, nil, logr.Discard(), state.NewUnavailable(0), Options{Region: "us-east-1", LaunchPricePremium: 0.2}).
				WithCommitments(commitments.NewReader(api, "us-east-1"))
			ctx := context.Background()
			b, err := p.snapshot(ctx, true)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := p.Commitments(ctx)
			if err != nil {
				t.Fatal(err)
			}
			solveCtx, stop := context.WithCancel(ctx)
			if tc.stopping {
				stop()
			}
			defer stop()
			solved, options, _, err := p.solve(solveCtx, b, cs)
			if err != nil {
				t.Fatal(err)
			}
			if len(solved.Unschedulable) > 0 {
				t.Fatalf("%d pods unplaced: %+v", len(solved.Unschedulable), solved.Unschedulable)
			}
			covered := 0
			for i, n := range solved.NewNodes {
				desc := fmt.Sprintf("%s %s $%v/h", n.InstanceType, n.CapacityType, n.Price)
				if n.InstanceType == "m6i.large" && n.CapacityType == cloud.CapacityTypeOnDemand {
					covered++
					if len(options[i]) != 1 || options[i][0].InstanceType != n.InstanceType || options[i][0].CapacityType != n.CapacityType {
						t.Errorf("covered node %s may launch on %+v, want its planned offering alone", desc, options[i])
					}
					if n.Price != 0.096 {
						t.Errorf("covered node %s: want its list price", desc)
					}
					continue
				}
				if n.CapacityType != cloud.CapacityTypeSpot {
					t.Errorf("node %s: uncovered capacity should be the cheapest, spot", desc)
				}
				if len(options[i]) < 2 {
					t.Errorf("uncovered node %s may launch on %+v only, want the flexible choice", desc, options[i])
				}
			}
			if covered != tc.covered {
				t.Errorf("%d covered m6i.large nodes of %d, want %d", covered, len(solved.NewNodes), tc.covered)
			}
		})
	}
}

// TestAGangNodeTheCommitmentsCoverLaunchesPinned: a ProvisioningRequest's
// node launches flexibly (every offering that takes its pods within the
// premium) unless the commitments cover it in the gang's plan; then only
// its planned offering is allowed, as a batch's covered node is.
func TestAGangNodeTheCommitmentsCoverLaunchesPinned(t *testing.T) {
	for _, tc := range []struct {
		name    string
		covered float64
		types   int // instance types the NodeClaim allows; 0 for more than one
	}{
		{"uncovered: flexible", 0, 0},
		{"covered in part: pinned", 0.5, 1},
		{"covered whole: pinned", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := commitmentScheme(t)
			np := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
			np.Spec.Template.Spec.NodeClassRef = v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "EC2NodeClass", Name: "default"}
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(np).Build()
			p := New(c, commitmentCloud{}, nil, logr.Discard(), state.NewUnavailable(0), Options{Region: "us-east-1", LaunchPricePremium: 0.2})
			ctx := context.Background()
			snap, index, err := p.SnapshotWith(ctx, []*corev1.Pod{gangPod("job-0-0", "1")})
			if err != nil {
				t.Fatal(err)
			}
			q := *snap.Problem
			q.Pods = []solver.Pod{snap.Problem.Pods[index[0]]}
			planned, err := solver.Solve(&q)
			if err != nil || len(planned.NewNodes) != 1 {
				t.Fatalf("gang plan: %v, err %v; want one new node", planned, err)
			}
			n := &planned.NewNodes[0]
			claim, err := p.LaunchGang(ctx, snap, n, []string{"ml/job-0-0"}, "provreq-1", 1, tc.covered)
			if err != nil {
				t.Fatal(err)
			}
			var types, capacity []string
			for _, r := range claim.Spec.Requirements {
				switch r.Key {
				case corev1.LabelInstanceTypeStable:
					types = r.Values
				case v1alpha1.LabelCapacityType:
					capacity = r.Values
				}
			}
			switch {
			case tc.types == 0 && len(types) < 2:
				t.Errorf("uncovered node may launch on %v only; want the flexible choice", types)
			case tc.types == 1 && (len(types) != 1 || types[0] != n.InstanceType || len(capacity) != 1 || capacity[0] != n.CapacityType):
				t.Errorf("covered node may launch on %v %v; want its planned %s %s alone", types, capacity, n.InstanceType, n.CapacityType)
			}
		})
	}
}

// TestACoveredReplacementLaunchesOnItsPlannedOffering: consolidation may
// replace a node by capacity a Savings Plan's room pays for
// (plan.CoveredPrices offers it as a capacity reservation, near zero);
// its NodeClaim must allow that on-demand offering alone, never the
// cheaper spot or other types a flexible launch would take.
func TestACoveredReplacementLaunchesOnItsPlannedOffering(t *testing.T) {
	s := commitmentScheme(t)
	np := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "EC2NodeClass", Name: "default"}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(np).Build()
	p := New(c, commitmentCloud{}, nil, logr.Discard(), state.NewUnavailable(0), Options{Region: "us-east-1", LaunchPricePremium: 0.2})
	ctx := context.Background()
	snap, index, err := p.SnapshotWith(ctx, []*corev1.Pod{gangPod("web-0", "1")})
	if err != nil {
		t.Fatal(err)
	}
	plan.CoveredPrices(snap.Problem, []plan.Commitment{{Name: "sp", Type: v1alpha1.CommitmentComputeSavingsPlan, Hourly: 1, Fee: 1, Discount: 0.3}})
	q := *snap.Problem
	q.Pods = []solver.Pod{snap.Problem.Pods[index[0]]}
	planned, err := solver.Solve(&q)
	if err != nil || len(planned.NewNodes) != 1 {
		t.Fatalf("plan: %v, err %v; want one new node", planned, err)
	}
	n := &planned.NewNodes[0]
	if n.CapacityType != cloud.CapacityTypeOnDemand || n.Price > 0.001 {
		t.Fatalf("planned %s %s $%v/h; want on-demand capacity the room covers", n.InstanceType, n.CapacityType, n.Price)
	}
	for _, reason := range []string{string(v1alpha1.DisruptionReasonUnderutilized), string(v1alpha1.DisruptionReasonDrifted)} {
		claim, err := p.Launch(ctx, snap, n, reason, []string{"ml/web-0"})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]string{}
		for _, r := range claim.Spec.Requirements {
			got[r.Key] = r.Values
		}
		if types, capacity := got[corev1.LabelInstanceTypeStable], got[v1alpha1.LabelCapacityType]; len(types) != 1 || types[0] != n.InstanceType ||
			len(capacity) != 1 || capacity[0] != n.CapacityType {
			t.Errorf("%s replacement may launch on %v %v; want its planned %s %s alone", reason, types, capacity, n.InstanceType, n.CapacityType)
		}
	}
}
