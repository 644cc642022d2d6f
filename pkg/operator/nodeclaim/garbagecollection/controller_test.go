package garbagecollection

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/nodeclaim"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// fakeCloud lists fixed instances and records terminations; the collector
// uses nothing else of a provider.
type fakeCloud struct {
	mu         sync.Mutex
	instances  []*v1alpha1.NodeClaim
	terminated []string
}

func (f *fakeCloud) Name() string { return "fake" }
func (f *fakeCloud) Create(context.Context, *v1alpha1.NodeClaim) (*v1alpha1.NodeClaim, error) {
	return nil, errors.New("the garbage collector never launches")
}

func (f *fakeCloud) Delete(_ context.Context, c *v1alpha1.NodeClaim) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.terminated = append(f.terminated, c.Status.ProviderID)
	f.instances = slices.DeleteFunc(f.instances, func(i *v1alpha1.NodeClaim) bool { return i.Status.ProviderID == c.Status.ProviderID })
	return nil
}

func (f *fakeCloud) Get(_ context.Context, id string) (*v1alpha1.NodeClaim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, i := range f.instances {
		if i.Status.ProviderID == id {
			return i.DeepCopy(), nil
		}
	}
	return nil, &cloud.NotFoundError{ProviderID: id}
}

func (f *fakeCloud) List(context.Context) ([]*v1alpha1.NodeClaim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*v1alpha1.NodeClaim, len(f.instances))
	for i, in := range f.instances {
		out[i] = in.DeepCopy()
	}
	return out, nil
}

func (f *fakeCloud) InstanceTypes(context.Context, *v1alpha1.NodePool) ([]cloud.InstanceType, error) {
	return nil, errors.New("not used")
}

func (f *fakeCloud) IsDrifted(context.Context, *v1alpha1.NodeClaim) (string, error) {
	return "", errors.New("not used")
}

// instance is the view a provider's List returns: named after its claim,
// in pool, launched age ago, marked as a direct launch when direct.
func instance(name, pool string, age time.Duration, direct bool) *v1alpha1.NodeClaim {
	in := &v1alpha1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, CreationTimestamp: metav1.NewTime(time.Now().Add(-age)),
			Labels: map[string]string{
				v1alpha1.LabelNodePool: pool, solver.LabelInstanceType: "m5.large", solver.LabelZone: "us-east-1a",
				solver.LabelCapacityType: "on-demand", corev1.LabelHostname: name, "team": "from-the-instance",
			},
		},
		Status: v1alpha1.NodeClaimStatus{
			ProviderID: "fake://us-east-1a/" + name, ImageID: "img", InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "on-demand", PricePerHour: "0.096",
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m"), corev1.ResourceMemory: resource.MustParse("7Gi")},
		},
	}
	if pool == "" {
		delete(in.Labels, v1alpha1.LabelNodePool)
	}
	if direct {
		in.Annotations = map[string]string{cloud.AnnotationLaunchedDirectly: "sim",
			v1alpha1.AnnotationNodeClassHash: "h1", v1alpha1.AnnotationNodeClassHashVersion: "v1"}
	}
	return in
}

// nodeOf is the Node of an instance, running its pods.
func nodeOf(in *v1alpha1.NodeClaim) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: in.Name, Labels: in.Labels},
		Spec:       corev1.NodeSpec{ProviderID: in.Status.ProviderID},
	}
}

func pool(name string) *v1alpha1.NodePool {
	return &v1alpha1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-pool-" + name)},
		Spec: v1alpha1.NodePoolSpec{Template: v1alpha1.NodeClaimTemplate{
			ObjectMeta: v1alpha1.ObjectMeta{Labels: map[string]string{"team": "web"}, Annotations: map[string]string{"owner": "platform"}},
			Spec: v1alpha1.NodeClaimTemplateSpec{
				NodeClassRef: v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "SimNodeClass", Name: "sim"},
				Requirements: []v1alpha1.NodeSelectorRequirement{{Key: "kubernetes.io/arch", Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"amd64"}}},
				Taints: []corev1.Taint{
					{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule},
					{Key: "evicts", Effect: corev1.TaintEffectNoExecute},
				},
			},
		}},
	}
}

// fixture is a collector over a fake API server and cloud, with its log
// lines and events.
type fixture struct {
	gc     *Collector
	client client.Client
	cloud  *fakeCloud
	events *events.FakeRecorder
	mu     sync.Mutex
	logs   []string
}

func newFixture(t *testing.T, instances []*v1alpha1.NodeClaim, objs ...client.Object) *fixture {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, in := range instances {
		objs = append(objs, nodeOf(in))
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.NodeClaim{}, &corev1.Node{}).
		WithIndex(&corev1.Node{}, nodeclaim.IndexNodeProviderID, func(o client.Object) []string {
			return []string{o.(*corev1.Node).Spec.ProviderID}
		}).Build()
	f := &fixture{client: c, cloud: &fakeCloud{instances: instances}, events: events.NewFakeRecorder(100)}
	log := funcr.New(func(prefix, args string) {
		f.mu.Lock()
		f.logs = append(f.logs, args)
		f.mu.Unlock()
	}, funcr.Options{})
	f.gc = New(c, c, f.cloud, log, Options{GracePeriod: time.Minute, Recorder: f.events})
	return f
}

// logged counts the log lines containing s.
func (f *fixture) logged(s string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, l := range f.logs {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

func (f *fixture) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-f.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (f *fixture) claim(t *testing.T, name string) *v1alpha1.NodeClaim {
	t.Helper()
	var c v1alpha1.NodeClaim
	if err := f.client.Get(context.Background(), client.ObjectKey{Name: name}, &c); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return &c
}

func (f *fixture) nodeExists(t *testing.T, name string) bool {
	t.Helper()
	var n corev1.Node
	err := f.client.Get(context.Background(), client.ObjectKey{Name: name}, &n)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func TestCollectAdoptsDirectLaunchesAndTerminatesOtherOrphans(t *testing.T) {
	for _, tc := range []struct {
		name      string
		instance  *v1alpha1.NodeClaim
		objs      []client.Object
		adopted   bool
		terminate bool
		log       string
		event     string
	}{
		{
			name:     "marked, its NodePool exists: adopted",
			instance: instance("default-abcde", "default", 2*time.Minute, true),
			objs:     []client.Object{pool("default")},
			adopted:  true,
			log:      "adopted an instance launched by kubectl rightsize tui",
			event:    "Normal Adopted adopted instance fake://us-east-1a/default-abcde (m5.large on-demand us-east-1a) launched by kubectl rightsize tui directly on sim",
		},
		{
			name:     "marked, no NodePool: left running, reported",
			instance: instance("gone-abcde", "gone", 2*time.Minute, true),
			log:      "not adopting an instance launched by kubectl rightsize tui",
			event:    `Warning NotAdopted instance fake://us-east-1a/gone-abcde was launched by kubectl rightsize tui without the operator and its NodePool "gone" does not exist`,
		},
		{
			name:     "marked, no NodePool label: left running, reported",
			instance: instance("unknown", "", 2*time.Minute, true),
			objs:     []client.Object{pool("default")},
			log:      "not adopting an instance launched by kubectl rightsize tui",
			event:    "it is not tagged with a NodePool and NodeClaim name",
		},
		{
			name:     "marked, within the grace period: left alone",
			instance: instance("default-young", "default", 10*time.Second, true),
			objs:     []client.Object{pool("default")},
		},
		{
			name:      "unmarked orphan past the grace period: terminated, even with its NodePool there",
			instance:  instance("default-orphan", "default", 2*time.Minute, false),
			objs:      []client.Object{pool("default")},
			terminate: true,
			log:       "terminating an instance no NodeClaim owns",
		},
		{
			name:     "unmarked orphan within the grace period: left alone",
			instance: instance("default-launching", "default", 10*time.Second, false),
			objs:     []client.Object{pool("default")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, []*v1alpha1.NodeClaim{tc.instance}, tc.objs...)
			ctx := context.Background()
			for range 3 { // passes after the first change nothing and report nothing new
				if err := f.gc.Collect(ctx); err != nil {
					t.Fatal(err)
				}
			}
			id := tc.instance.Status.ProviderID
			if got := len(f.cloud.terminated) > 0; got != tc.terminate {
				t.Errorf("terminated %v, want terminated: %v", f.cloud.terminated, tc.terminate)
			}
			if f.nodeExists(t, tc.instance.Name) == tc.terminate {
				t.Errorf("node exists: %v after terminating: %v", !tc.terminate, tc.terminate)
			}
			claim := f.claim(t, tc.instance.Name)
			if (claim != nil) != tc.adopted {
				t.Fatalf("NodeClaim %s exists: %v, want %v", tc.instance.Name, claim != nil, tc.adopted)
			}
			if tc.log != "" && f.logged(tc.log) != 1 {
				t.Errorf("%q logged %d times in 3 passes, want once; log:\n%s", tc.log, f.logged(tc.log), strings.Join(f.logs, "\n"))
			}
			evs := f.drainEvents()
			if tc.event == "" && len(evs) > 0 || tc.event != "" && (len(evs) != 1 || !strings.Contains(evs[0], tc.event)) {
				t.Errorf("events %q, want one with %q", evs, tc.event)
			}
			if !tc.adopted {
				return
			}
			// The claim the provisioner would have made for the pool,
			// pinned to the instance, owned by the pool, already Launched.
			want := map[string]string{
				v1alpha1.LabelNodePool: "default", v1alpha1.KarpenterLabelNodePool: "default", v1alpha1.LabelNodeClass: "sim",
				"team": "web", solver.LabelInstanceType: "m5.large", solver.LabelZone: "us-east-1a",
			}
			for k, v := range want {
				if claim.Labels[k] != v {
					t.Errorf("label %s = %q, want %q (labels %v)", k, claim.Labels[k], v, claim.Labels)
				}
			}
			if _, ok := claim.Labels[corev1.LabelHostname]; ok {
				t.Errorf("labels %v carry the hostname", claim.Labels)
			}
			if claim.Annotations[cloud.AnnotationLaunchedDirectly] != "sim" || claim.Annotations["owner"] != "platform" {
				t.Errorf("annotations %v: want the marker and the pool's", claim.Annotations)
			}
			if claim.Annotations[v1alpha1.AnnotationNodeClassHash] != "h1" || claim.Annotations[v1alpha1.AnnotationNodeClassHashVersion] != "v1" {
				t.Errorf("annotations %v: want the node class hash the instance was launched with, for drift", claim.Annotations)
			}
			pinned := map[string]string{}
			for _, r := range claim.Spec.Requirements {
				pinned[r.Key] = strings.Join(r.Values, ",")
			}
			if pinned[solver.LabelInstanceType] != "m5.large" || pinned[solver.LabelZone] != "us-east-1a" || pinned[solver.LabelCapacityType] != "on-demand" || pinned["kubernetes.io/arch"] != "amd64" {
				t.Errorf("requirements %v: want the pool's, pinned to the instance", claim.Spec.Requirements)
			}
			if claim.Spec.NodeClassRef.Name != "sim" || len(claim.Spec.Taints) != 1 || claim.Spec.Taints[0].Key != "dedicated" {
				t.Errorf("node class %v, taints %v: want the pool's, NoExecute left off", claim.Spec.NodeClassRef, claim.Spec.Taints)
			}
			if len(claim.OwnerReferences) != 1 || claim.OwnerReferences[0].Kind != "NodePool" || claim.OwnerReferences[0].UID != "uid-pool-default" {
				t.Errorf("owners %v: want the NodePool", claim.OwnerReferences)
			}
			s := claim.Status
			if s.ProviderID != id || s.InstanceType != "m5.large" || s.PricePerHour != "0.096" || s.Allocatable.Cpu().MilliValue() != 1930 {
				t.Errorf("status %+v: want the instance's", s)
			}
			if !nodeclaim.IsTrue(claim, v1alpha1.ConditionLaunched) || nodeclaim.IsTrue(claim, v1alpha1.ConditionRegistered) {
				t.Errorf("conditions %+v: want Launched, registration left to the lifecycle controller", s.Conditions)
			}
		})
	}
}

func TestAMarkedInstanceIsAdoptedOnceItsNodePoolIsCreated(t *testing.T) {
	in := instance("later-abcde", "later", 2*time.Minute, true)
	f := newFixture(t, []*v1alpha1.NodeClaim{in})
	ctx := context.Background()
	if err := f.gc.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if f.claim(t, in.Name) != nil || len(f.cloud.terminated) > 0 {
		t.Fatalf("without its pool: claim %v, terminated %v; want neither", f.claim(t, in.Name), f.cloud.terminated)
	}
	if err := f.client.Create(ctx, pool("later")); err != nil {
		t.Fatal(err)
	}
	if err := f.gc.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if c := f.claim(t, in.Name); c == nil || c.Status.ProviderID != in.Status.ProviderID {
		t.Fatalf("after the pool was created: claim %v, want it adopted", c)
	}
	if len(f.cloud.terminated) > 0 || !f.nodeExists(t, in.Name) {
		t.Errorf("terminated %v; want the node kept", f.cloud.terminated)
	}
}

// The collector keeps its report-once memory only for instances that
// still exist.
func TestUnadoptableMemoryForgetsInstancesThatAreGone(t *testing.T) {
	in := instance("gone-abcde", "gone", 2*time.Minute, true)
	f := newFixture(t, []*v1alpha1.NodeClaim{in})
	ctx := context.Background()
	_ = f.gc.Collect(ctx)
	f.cloud.mu.Lock()
	f.cloud.instances = nil
	f.cloud.mu.Unlock()
	_ = f.gc.Collect(ctx)
	if len(f.gc.unadoptable) != 0 {
		t.Errorf("unadoptable %v after the instance went", f.gc.unadoptable)
	}
}
