package tui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/launch"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/watch"
)

// fakeCloud is the narrowest CloudProvider: Create records the claim and
// returns the instance the claim's requirements pin; nothing else is used.
type fakeCloud struct {
	mu     sync.Mutex
	claims []*v1alpha1.NodeClaim
	views  map[string]*v1alpha1.NodeClaim // by providerID
	err    error
}

func (f *fakeCloud) Name() string { return "fake" }

func (f *fakeCloud) Create(_ context.Context, claim *v1alpha1.NodeClaim) (*v1alpha1.NodeClaim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	f.claims = append(f.claims, claim.DeepCopy())
	pinned := map[string]string{}
	for _, r := range claim.Spec.Requirements {
		if r.Operator == v1alpha1.NodeSelectorOpIn && len(r.Values) == 1 {
			pinned[r.Key] = r.Values[0]
		}
	}
	zone := pinned[solver.LabelZone]
	view := &v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim.Name, Labels: map[string]string{
		solver.LabelInstanceType: pinned[solver.LabelInstanceType], solver.LabelZone: zone, corev1.LabelHostname: claim.Name,
		v1alpha1.LabelNodePool: claim.Labels[v1alpha1.LabelNodePool],
	}, Annotations: claim.Annotations}}
	view.Status = v1alpha1.NodeClaimStatus{
		ProviderID: "fake://" + zone + "/" + claim.Name, InstanceType: pinned[solver.LabelInstanceType], Zone: zone,
		CapacityType: pinned[solver.LabelCapacityType], PricePerHour: "0.192",
	}
	if f.views == nil {
		f.views = map[string]*v1alpha1.NodeClaim{}
	}
	f.views[view.Status.ProviderID] = view
	return view.DeepCopy(), nil
}

func (f *fakeCloud) created() []*v1alpha1.NodeClaim {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*v1alpha1.NodeClaim(nil), f.claims...)
}

func (f *fakeCloud) Delete(context.Context, *v1alpha1.NodeClaim) error { return errors.New("not used") }
func (f *fakeCloud) Get(_ context.Context, id string) (*v1alpha1.NodeClaim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v := f.views[id]; v != nil {
		return v.DeepCopy(), nil
	}
	return nil, &cloud.NotFoundError{ProviderID: id}
}
func (f *fakeCloud) List(context.Context) ([]*v1alpha1.NodeClaim, error) { return nil, nil }
func (f *fakeCloud) InstanceTypes(context.Context, *v1alpha1.NodePool) ([]cloud.InstanceType, error) {
	return nil, nil
}

func (f *fakeCloud) IsDrifted(context.Context, *v1alpha1.NodeClaim) (string, error) {
	return "", nil
}

// directFixture is a DirectLauncher on a fakeCloud, with a fake API client
// standing in for the Nodes and NodeClaims the launcher writes.
type directFixture struct {
	cloud    *fakeCloud
	client   client.Client
	launcher *launch.DirectLauncher
	regions  []string
}

func newDirectFixture(t *testing.T, crd bool, objs ...client.Object) *directFixture {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	f := &directFixture{cloud: &fakeCloud{}}
	f.client = fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&corev1.Node{}, &corev1.Pod{}, &v1alpha1.NodeClaim{}).Build()
	n := 0
	f.launcher = &launch.DirectLauncher{
		CloudName: "sim", ClusterName: "test", Client: f.client, LaunchedBy: "test",
		Cloud: func(_ context.Context, region string) (cloud.CloudProvider, error) {
			f.regions = append(f.regions, region)
			return f.cloud, nil
		},
		ClaimsServed: func() (bool, error) { return crd, nil },
		Suffix:       func() string { n++; return fmt.Sprintf("x%d", n) },
	}
	return f
}

// joins plays the kubelet: the Node of the launched instance registers
// (with the unregistered taint every provider puts on it, and the launch
// marker of a claim no NodeClaim object records), Ready or not.
// It returns the watch event for it.
func (f *directFixture) joins(t *testing.T, claim *v1alpha1.NodeClaim, ready bool) watch.Batch {
	t.Helper()
	ctx := context.Background()
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("58")}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	var n corev1.Node
	err := f.client.Get(ctx, client.ObjectKey{Name: claim.Name}, &n)
	if err != nil {
		n = corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: claim.Name, CreationTimestamp: metav1.NewTime(now), Labels: map[string]string{
				solver.LabelInstanceType: claim.Status.InstanceType, solver.LabelZone: claim.Status.Zone, "kubernetes.io/hostname": claim.Name,
				corev1.LabelTopologyRegion: "us-east-1",
			}},
			Spec: corev1.NodeSpec{ProviderID: claim.Status.ProviderID, Taints: []corev1.Taint{cloud.UnregisteredTaint}},
		}
		if cloudName := claim.Annotations[v1alpha1.AnnotationLaunchedDirectly]; cloudName != "" {
			n.Annotations = map[string]string{v1alpha1.AnnotationLaunchedDirectly: cloudName}
		}
		if err := f.client.Create(ctx, &n); err != nil {
			t.Fatal(err)
		}
	}
	n.Status = corev1.NodeStatus{Capacity: capacity, Allocatable: capacity, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}}
	if err := f.client.Status().Update(ctx, &n); err != nil {
		t.Fatal(err)
	}
	return f.nodeEvent(t, claim.Name)
}

// nodeEvent is the watch event of the node as the API client has it now.
func (f *directFixture) nodeEvent(t *testing.T, name string) watch.Batch {
	t.Helper()
	var n corev1.Node
	if err := f.client.Get(context.Background(), client.ObjectKey{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	return watch.Batch{Events: []watch.Event{{Kind: watch.Node, Key: name, Obj: &n}}}
}

// podsRun binds the pods to the node, Running.
func podsRun(m *Model, keys []string, node string) watch.Batch {
	var b watch.Batch
	for _, k := range keys {
		p := m.store.pods[k].DeepCopy()
		p.Spec.NodeName = node
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning}
		b.Events = append(b.Events, watch.Event{Kind: watch.Pod, Key: k, Obj: p})
	}
	return b
}

func TestDirectLaunchConfirmsTheCloudAndShowsProgressUntilThePodsRun(t *testing.T) {
	var objs []client.Object
	for _, e := range cluster().Events {
		if p, ok := e.Obj.(*corev1.Pod); ok && p.Spec.NodeName == "" {
			objs = append(objs, p.DeepCopy())
		}
	}
	f := newDirectFixture(t, false, objs...)
	m := liveModel(t, Options{Launcher: f.launcher, DirectCloud: "sim", NominationWait: time.Millisecond})
	mustContain(t, screen(m), "rightsize DIRECT:sim │ test-ctx")
	drive(t, m, keys("2", "space", "L")...)
	mustContain(t, screen(m), "Launch 1 node(s)?", "No operator: this launches the", "instances directly on sim", "cluster test", "Nothing records them", "Total: $")
	want := m.rep.Plan.NewNodes[0]
	pods := m.rep.Proposed[0].Pods
	proposed := len(m.rep.Proposed)
	drive(t, m, keys("y")...)

	claims := f.cloud.created()
	if len(claims) != 1 {
		t.Fatalf("cloud got %d launches, want 1; flash %q", len(claims), m.flash)
	}
	c := claims[0]
	if c.Name != "default-x1" || c.Labels[v1alpha1.LabelNodePool] != "default" || c.Labels[v1alpha1.KarpenterLabelNodePool] != "default" ||
		c.Annotations[v1alpha1.AnnotationLaunchedDirectly] != "sim" || c.Annotations[v1alpha1.AnnotationLaunchedBy] != "test" {
		t.Errorf("claim launched %s, labels %v, annotations %v: want default-x1 in pool default, launched directly on sim by test", c.Name, c.Labels, c.Annotations)
	}
	pinned := map[string]string{}
	for _, r := range c.Spec.Requirements {
		pinned[r.Key] = strings.Join(r.Values, ",")
	}
	if pinned[solver.LabelInstanceType] != want.InstanceType || pinned[solver.LabelZone] != want.Zone || pinned[solver.LabelCapacityType] != want.CapacityType {
		t.Errorf("claim requirements %v, want the plan's %s %s %s", pinned, want.InstanceType, want.Zone, want.CapacityType)
	}
	if cpu := c.Spec.Resources.Requests[corev1.ResourceCPU]; cpu.MilliValue() != want.Requested[solver.CPU] {
		t.Errorf("claim requests %s CPU, want the plan's %dm", cpu.String(), want.Requested[solver.CPU])
	}
	if len(f.regions) != 1 || f.regions[0] != "us-east-1" {
		t.Errorf("provider built for regions %v, want the plan's us-east-1", f.regions)
	}
	var list v1alpha1.NodeClaimList
	if err := f.client.List(context.Background(), &list); err != nil || len(list.Items) != 0 {
		t.Errorf("without the CRD no NodeClaim object may be written: %d, %v", len(list.Items), err)
	}
	s := screen(m)
	mustContain(t, s, "launched fake://"+want.Zone+"/default-x1", "no NodeClaim CRD or NodePool to record it in", "default-x1", "launched, waiting for its node")
	// The launch is in-flight capacity: the plan sends its pods there
	// rather than proposing the node again.
	if len(m.rep.Proposed) != proposed-1 {
		t.Errorf("after the launch the plan proposes %d nodes, want %d:\n%s", len(m.rep.Proposed), proposed-1, s)
	}
	drive(t, m, keys("1")...)
	mustContain(t, screen(m), "default-x1")
	drive(t, m, keys("2")...)

	view := c.DeepCopy()
	view.Status.ProviderID, view.Status.InstanceType, view.Status.Zone = "fake://"+want.Zone+"/default-x1", want.InstanceType, want.Zone
	drive(t, m, f.joins(t, view, false))
	mustContain(t, screen(m), "node registered, not Ready")
	var node corev1.Node
	_ = f.client.Get(context.Background(), client.ObjectKey{Name: "default-x1"}, &node)
	if node.Labels[v1alpha1.LabelNodePool] != "default" || !launch.HasUnregisteredTaint(&node) {
		t.Errorf("before Ready the node gets the claim's labels and keeps the unregistered taint: labels %v, taints %v", node.Labels, node.Spec.Taints)
	}

	drive(t, m, f.joins(t, view, true))
	_ = f.client.Get(context.Background(), client.ObjectKey{Name: "default-x1"}, &node)
	if launch.HasUnregisteredTaint(&node) {
		t.Fatalf("a Ready node keeps the unregistered taint: %v", node.Spec.Taints)
	}
	// The planned pods were pointed at it first, as the operator does.
	for _, k := range pods {
		ns, name, _ := strings.Cut(k, "/")
		var p corev1.Pod
		if err := f.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil || p.Status.NominatedNodeName != "default-x1" {
			t.Errorf("pod %s nominated to %q (%v), want default-x1", k, p.Status.NominatedNodeName, err)
		}
	}
	drive(t, m, f.nodeEvent(t, "default-x1"))
	mustContain(t, screen(m), fmt.Sprintf("node Ready, 0/%d pods Running", len(pods)))

	drive(t, m, podsRun(m, pods, "default-x1"))
	mustContain(t, screen(m), fmt.Sprintf("node Ready, %d/%d pods Running", len(pods), len(pods)))
}

func TestDirectLaunchRecordsTheNodeClaimWhenTheCRDAndNodePoolExist(t *testing.T) {
	pool := &v1alpha1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "pool-uid"},
		Spec: v1alpha1.NodePoolSpec{Template: v1alpha1.NodeClaimTemplate{
			ObjectMeta: v1alpha1.ObjectMeta{Labels: map[string]string{"team": "web"}},
			Spec:       v1alpha1.NodeClaimTemplateSpec{NodeClassRef: v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "SimNodeClass", Name: "sim"}},
		}},
	}
	f := newDirectFixture(t, true, pool)
	m := liveModel(t, Options{Launcher: f.launcher, NominationWait: time.Millisecond})
	drive(t, m, keys("2", "space", "L", "y")...)
	ctx := context.Background()
	var claim v1alpha1.NodeClaim
	if err := f.client.Get(ctx, client.ObjectKey{Name: "default-x1"}, &claim); err != nil {
		t.Fatalf("no NodeClaim object for the direct launch: %v; flash %q", err, m.flash)
	}
	if claim.Status.ProviderID == "" || !meta.IsStatusConditionTrue(claim.Status.Conditions, v1alpha1.ConditionLaunched) {
		t.Errorf("NodeClaim status %+v: want the instance's providerID and Launched", claim.Status)
	}
	if claim.Spec.NodeClassRef.Name != "sim" || claim.Labels["team"] != "web" || len(claim.OwnerReferences) != 1 || claim.OwnerReferences[0].UID != "pool-uid" {
		t.Errorf("NodeClaim %v, %v, owners %v: want the pool's node class and labels, owned by the pool", claim.Spec.NodeClassRef, claim.Labels, claim.OwnerReferences)
	}
	if c := f.cloud.created(); len(c) != 1 || c[0].Name != claim.Name {
		t.Fatalf("cloud launched %d claims; want one named %s", len(c), claim.Name)
	} else if c[0].Annotations[v1alpha1.AnnotationLaunchedDirectly] != "" {
		// The claim object records the instance: it is the operator's
		// like any other, not one for the garbage collector to adopt.
		t.Errorf("instance launched with annotations %v: want no adoption marker when a NodeClaim records it", c[0].Annotations)
	}
	mustContain(t, screen(m), "NodeClaim default-x1 records it")

	drive(t, m, f.joins(t, &claim, true))
	drive(t, m, f.nodeEvent(t, "default-x1"))
	if err := f.client.Get(ctx, client.ObjectKey{Name: "default-x1"}, &claim); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{v1alpha1.ConditionRegistered, v1alpha1.ConditionInitialized, v1alpha1.ConditionReady} {
		if !meta.IsStatusConditionTrue(claim.Status.Conditions, c) {
			t.Errorf("NodeClaim condition %s not True after the node joined Ready: %+v", c, claim.Status.Conditions)
		}
	}
	var node corev1.Node
	_ = f.client.Get(ctx, client.ObjectKey{Name: "default-x1"}, &node)
	// The fake API client sets no UIDs; the real one does, and then the
	// node gets an owner reference to its claim.
	owned := claim.UID == "" || len(node.OwnerReferences) == 1 && node.OwnerReferences[0].Name == "default-x1"
	if claim.Status.NodeName != "default-x1" || !owned || node.Labels["team"] != "web" {
		t.Errorf("node %v owners %v, claim nodeName %q: want the node owned by its claim, with the pool's labels", node.Labels, node.OwnerReferences, claim.Status.NodeName)
	}
	mustContain(t, screen(m), "node Ready, 0/")
}

// TestDirectLaunchOfAnEarlierRunIsOpenedByTheNextOne: a run that quit
// after launching, before its node joined, leaves the node tainted; the
// next run with --cloud finds it by its launch marker, registers it and
// opens it to pods, once, and leaves it alone when an operator runs.
func TestDirectLaunchOfAnEarlierRunIsOpenedByTheNextOne(t *testing.T) {
	for _, tc := range []struct {
		name     string
		operator bool
	}{{"no operator", false}, {"an operator runs", true}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDirectFixture(t, false)
			first := liveModel(t, Options{Launcher: f.launcher, DirectCloud: "sim", NominationWait: time.Millisecond})
			drive(t, first, keys("2", "space", "L", "y")...)
			if quit := drive(t, first, keys("q")...); quit {
				t.Fatal("q quit at once with a launch not open to pods")
			}
			mustContain(t, screen(first), "1 launched node(s) not open to pods yet: q again quits anyway")
			if quit := drive(t, first, keys("q")...); !quit {
				t.Fatal("the second q did not quit")
			}
			launched := f.cloud.created()
			if len(launched) != 1 {
				t.Fatalf("%d launches, want 1", len(launched))
			}
			view, err := f.cloud.Get(context.Background(), "fake://"+first.launches[0].req.Node.Zone+"/default-x1")
			if err != nil {
				t.Fatal(err)
			}
			f.joins(t, view, true) // after the first run quit

			if tc.operator {
				f.launcher.OperatorRunning = func(context.Context) (string, error) { return "an operator runs", nil }
			}
			next := liveModel(t, Options{Launcher: f.launcher, DirectCloud: "sim", NominationWait: time.Millisecond})
			drive(t, next, f.nodeEvent(t, "default-x1"))
			drive(t, next, f.nodeEvent(t, "default-x1"))
			var node corev1.Node
			if err := f.client.Get(context.Background(), client.ObjectKey{Name: "default-x1"}, &node); err != nil {
				t.Fatal(err)
			}
			if tc.operator {
				if !launch.HasUnregisteredTaint(&node) || len(next.launches) != 0 || next.flash != "" {
					t.Errorf("with an operator running the next run took the node up: taints %v, %d launches, flash %q", node.Spec.Taints, len(next.launches), next.flash)
				}
				return
			}
			if launch.HasUnregisteredTaint(&node) || node.Labels[v1alpha1.LabelNodePool] != "default" {
				t.Errorf("the next run left node %s closed or unlabelled: taints %v, labels %v", node.Name, node.Spec.Taints, node.Labels)
			}
			if len(next.launches) != 1 {
				t.Fatalf("the next run follows %d launches, want the resumed one", len(next.launches))
			}
			drive(t, next, keys("2")...)
			mustContain(t, screen(next), "default-x1", "node Ready, 0/0 pods Running")
			if quit := drive(t, next, keys("q")...); !quit {
				t.Error("q did not quit once the resumed node was open")
			}
		})
	}
}

func TestDirectLaunchIsRefusedNextToARunningOperatorAndOnCloudErrors(t *testing.T) {
	f := newDirectFixture(t, false)
	f.launcher.OperatorRunning = func(context.Context) (string, error) {
		return "an operator runs (Lease kube-system/rightsize-operator held by op-1, renewed 2s ago)", nil
	}
	m := liveModel(t, Options{Launcher: f.launcher})
	drive(t, m, keys("2", "space", "L", "y")...)
	if len(f.cloud.created()) != 0 {
		t.Fatalf("launched next to a running operator")
	}
	mustContain(t, screen(m), "an operator runs", "new-1")

	f.launcher.OperatorRunning = nil
	f.cloud.err = &cloud.InsufficientCapacityError{Offerings: []string{"x"}, Err: errors.New("out of them")}
	// The cursor is on the failed launch's row; the proposed node is above.
	drive(t, m, keys("k", "space", "L", "y")...)
	mustContain(t, screen(m), "launching", "on sim: insufficient capacity", "new-1")
}

func TestHeldLeaseSaysAnOperatorRunsOnlyWhileItRenews(t *testing.T) {
	holder, dur := "op-1", int32(15)
	lease := func(renew time.Time, holder *string) coordinationv1.Lease {
		r := metav1.NewMicroTime(renew)
		return coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "rightsize-operator"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: holder, RenewTime: &r, LeaseDurationSeconds: &dur}}
	}
	for _, tc := range []struct {
		name   string
		leases []coordinationv1.Lease
		want   string
	}{
		{"fresh", []coordinationv1.Lease{lease(now.Add(-5*time.Second), &holder)}, "an operator runs (Lease kube-system/rightsize-operator held by op-1, renewed 5s ago)"},
		{"stale", []coordinationv1.Lease{lease(now.Add(-time.Minute), &holder)}, ""},
		{"released", []coordinationv1.Lease{lease(now, nil)}, ""},
		{"none", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := launch.HeldLease(tc.leases, now); got != tc.want {
				t.Errorf("HeldLease = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestProgramLaunchesDirectlyThroughTheRealEventLoop runs a direct launch
// in a real tea.Program with teatest.
func TestProgramLaunchesDirectlyThroughTheRealEventLoop(t *testing.T) {
	f := newDirectFixture(t, false)
	m := New(Options{Launcher: f.launcher, Context: "teatest", Catalog: plan.Catalog{Region: "us-east-1"}, Debounce: time.Millisecond, Now: func() time.Time { return now }, NoColor: true})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 30))
	tm.Send(cluster())
	tm.Send(watchSynced())
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("StatefulSet/web")) }, teatest.WithDuration(10*time.Second))
	tm.Type("2")
	tm.Send(tea.KeyPressMsg{Code: tea.KeySpace, Text: " "})
	tm.Type("L")
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("directly on sim")) }, teatest.WithDuration(5*time.Second))
	tm.Type("y")
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("waiting for its node")) }, teatest.WithDuration(5*time.Second))
	// The node is not open to pods yet: the first q only warns.
	tm.Type("q")
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("q again quits anyway")) }, teatest.WithDuration(5*time.Second))
	tm.Type("q")
	final := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
	if len(f.cloud.created()) != 1 || len(final.launches) != 1 || final.launches[0].launched.Direct == nil {
		t.Fatalf("launched %d instances, %d launches in the model", len(f.cloud.created()), len(final.launches))
	}
	_, _ = io.ReadAll(tm.FinalOutput(t))
}
