package explain

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/report"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func TestParseWorkload(t *testing.T) {
	tests := []struct {
		arg, want, err string
	}{
		{"web-0", "Pod/web-0", ""},
		{"pod/web-0", "Pod/web-0", ""},
		{"po/web-0", "Pod/web-0", ""},
		{"deployment/web", "Deployment/web", ""},
		{"deploy/web", "Deployment/web", ""},
		{"Deployment.apps/web", "Deployment/web", ""},
		{"sts/db", "StatefulSet/db", ""},
		{"cronjob/nightly", "CronJob/nightly", ""},
		{"service/web", "", `unknown workload type "service"`},
		{"deployment/", "", "want POD, pod/NAME or TYPE/NAME"},
		{"a/b/c", "", "want POD, pod/NAME or TYPE/NAME"},
	}
	for _, tc := range tests {
		w, err := parseWorkload(tc.arg)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.arg, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.arg, err)
		case w.String() != tc.want:
			t.Errorf("%q: %s, want %s", tc.arg, w, tc.want)
		}
	}
}

func TestWorkloadMatches(t *testing.T) {
	tests := []struct {
		workload, pod, owner string
		want                 bool
	}{
		{"web-0", "web-0", "StatefulSet/web", true},
		{"deployment/web", "web-5d8f-x", "Deployment/web", true},
		{"deployment/web", "web2-5d8f-x", "Deployment/web2", false},
		{"statefulset/web", "web-0", "Deployment/web", false},
		{"cronjob/nightly", "nightly-29000000-x", "Job/nightly-29000000", true},
		{"cronjob/nightly", "nightly-extra-1-x", "Job/nightly-extra-1", false},
		{"job/nightly-29000000", "nightly-29000000-x", "Job/nightly-29000000", true},
	}
	for _, tc := range tests {
		w, err := parseWorkload(tc.workload)
		if err != nil {
			t.Fatal(err)
		}
		if got := w.matches(tc.pod, tc.owner); got != tc.want {
			t.Errorf("%s matches %s (%s) = %v, want %v", tc.workload, tc.pod, tc.owner, got, tc.want)
		}
	}
}

// TestLiveCountsInFlightClaimsAndPaidPrices plans a cluster of the rightsize
// pool "web" with one node whose NodeClaim records what it pays, and one
// NodeClaim still launching: the pending pod goes to the launching node
// (no new node is proposed) and the cluster costs what the claim pays.
func TestLiveCountsInFlightClaimsAndPaidPrices(t *testing.T) {
	now := time.Now()
	list := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("58")}
	labels := map[string]string{solver.LabelInstanceType: "m7i.xlarge", solver.LabelZone: "us-east-1a", solver.LabelCapacityType: "on-demand",
		v1alpha1.LabelNodePool: "web", solver.LabelNodePool: "web"}
	yes := true
	pod := func(name, node, cpu string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name, Controller: &yes}}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if node == "" {
			p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available"}}}
		}
		return p
	}
	claim := func(name, providerID string, initialized bool) *v1alpha1.NodeClaim {
		c := &v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.LabelNodePool: "web"}, CreationTimestamp: metav1.NewTime(now)},
			Spec: v1alpha1.NodeClaimSpec{NodeClassRef: v1alpha1.NodeClassReference{Kind: "SimNodeClass", Name: "default"},
				Requirements: []v1alpha1.NodeSelectorRequirement{
					{Key: solver.LabelInstanceType, Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"m7i.xlarge"}},
					{Key: solver.LabelZone, Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"us-east-1a"}},
					{Key: solver.LabelCapacityType, Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"on-demand"}}}},
			Status: v1alpha1.NodeClaimStatus{ProviderID: providerID, PricePerHour: "0.15"}}
		if initialized {
			c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"}}
		}
		return c
	}
	objs := snapshot.Objects{
		RightsizeInstalled: true, RightsizeNodePools: []*v1alpha1.NodePool{webPool("0s")},
		Nodes: []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "busy", Labels: labels}, Spec: corev1.NodeSpec{ProviderID: "sim://busy"},
			Status: corev1.NodeStatus{Capacity: list, Allocatable: list, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}},
		Pods:       []*corev1.Pod{pod("full", "busy", "3500m"), pod("waiting", "", "2")},
		NodeClaims: []*v1alpha1.NodeClaim{claim("web-busy", "sim://busy", true), claim("web-launching", "", false)},
	}
	cl := snapshot.FromObjects(&objs)
	cat := plan.Catalog{Region: "us-east-1"}
	types, _, err := cat.InstanceTypes()
	if err != nil {
		t.Fatal(err)
	}
	built, err := plan.Build(plan.Input{Cluster: cl, InstanceTypes: types, Catalog: &cat, Default: &plan.DefaultPool{}})
	if err != nil {
		t.Fatal(err)
	}
	solved, err := solver.Solve(built.Problem)
	if err != nil {
		t.Fatal(err)
	}
	if len(solved.NewNodes) != 0 {
		t.Errorf("proposed %d new nodes; the launching NodeClaim has room", len(solved.NewNodes))
	}
	live, err := newLiveResult(cl, built, report.FromPlan(built.Problem, solved, built.InFlight), nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(live.Pending) != 1 || live.Pending[0].Node != "web-launching" || live.Pending[0].NewNode || !strings.Contains(live.Pending[0].Note, "on its way") {
		t.Errorf("pending %+v, want default/waiting on the launching NodeClaim", live.Pending)
	}
	if live.ClusterPricePerHour != 0.15 || len(live.ExistingNodes) != 1 || live.ExistingNodes[0].PricePerHour == nil || *live.ExistingNodes[0].PricePerHour != 0.15 {
		t.Errorf("cluster price %v, nodes %+v: want what the NodeClaim pays, 0.15", live.ClusterPricePerHour, live.ExistingNodes)
	}
}

// TestLiveNotDiagnosedPodsGetTheFlagThatPlacesThem: explain against a
// cluster without NodePools (the default pool applies) words a pod left
// undiagnosed at the deadline as explain -f does, with the flag that would
// place it when a wider pool does.
func TestLiveNotDiagnosedPodsGetTheFlagThatPlacesThem(t *testing.T) {
	pending := func(name, cpu string, selector map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{NodeSelector: selector, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/0 nodes are available"}}}}
	}
	objs := snapshot.Objects{Pods: []*corev1.Pod{
		pending("batch", "1", map[string]string{solver.LabelCapacityType: "spot"}),
		pending("giant", "5000", nil),
	}}
	cl := snapshot.FromObjects(&objs)
	cat := plan.Catalog{Region: "us-east-1"}
	types, _, err := cat.InstanceTypes()
	if err != nil {
		t.Fatal(err)
	}
	in := plan.Input{Cluster: cl, InstanceTypes: types, Catalog: &cat, Default: &plan.DefaultPool{}}
	built, err := plan.Build(in)
	if err != nil {
		t.Fatal(err)
	}
	if built.DefaultPool == "" {
		t.Fatal("no default pool: the cluster has no NodePools")
	}
	built.Problem.Options.Deadline = time.Now().Add(-time.Second)
	solved, err := solver.Solve(built.Problem)
	if err != nil {
		t.Fatal(err)
	}
	flags, err := notDiagnosedFlags(context.Background(), in, built.Problem, solved)
	if err != nil {
		t.Fatal(err)
	}
	live, err := newLiveResult(cl, built, report.FromPlan(built.Problem, solved, built.InFlight), flags, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range live.Pending {
		got[p.Pod] = p.Reason
	}
	want := map[string]string{
		"default/batch": solver.NotDiagnosed + "; allowing spot (--capacity-type on-demand,spot) would place it",
		"default/giant": solver.NotDiagnosed,
	}
	if !maps.Equal(got, want) {
		t.Errorf("reasons\n%q\nwant\n%q", got, want)
	}
}

// TestWithPlacingFlag: only a pod the solver did not diagnose gets the
// widening's flags, and only when a widening places it.
func TestWithPlacingFlag(t *testing.T) {
	spot := &plan.Widening{What: "spot", Flags: "--capacity-type on-demand,spot"}
	tests := []struct {
		name, reason string
		w            *plan.Widening
		want         string
	}{
		{"not diagnosed, placed by a widening", solver.NotDiagnosed, spot, solver.NotDiagnosed + "; allowing spot (--capacity-type on-demand,spot) would place it"},
		{"not diagnosed, placed by none", solver.NotDiagnosed, nil, solver.NotDiagnosed},
		{"diagnosed: the reason says it already", "no instance type has 5000 CPU", spot, "no instance type has 5000 CPU"},
		{"placed", "", spot, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := withPlacingFlag(tc.reason, tc.w); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
