package provisioningrequest

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	prv1 "github.com/rightsize-dev/kubectl-rightsize/pkg/apis/provisioningrequest/v1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/provisioning"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/state"
)

// benchCloud offers m5.2xlarge (8 CPU, 32Gi) in three zones, on-demand
// and spot.
type benchCloud struct{ cloud.CloudProvider }

func (benchCloud) InstanceTypes(context.Context, *v1alpha1.NodePool) ([]cloud.InstanceType, error) {
	var offerings []cloud.Offering
	for _, z := range []string{"us-east-1a", "us-east-1b", "us-east-1c"} {
		offerings = append(offerings, cloud.Offering{Zone: z, CapacityType: cloud.CapacityTypeOnDemand, Price: 0.384},
			cloud.Offering{Zone: z, CapacityType: cloud.CapacityTypeSpot, Price: 0.154})
	}
	return []cloud.InstanceType{{Name: "m5.2xlarge", CPU: 8000, Memory: 32 << 30, Architecture: "amd64", MaxENIs: 4, IPv4PerENI: 15,
		Offerings: offerings}}, nil
}

// bigCluster is nodes initialized m5.2xlarge nodes of pool default, each
// with its NodeClaim and perNode running pods of 1 CPU and 2Gi (room left
// for a gang of 1-CPU pods), a PodTemplate ml/worker of workerCPU and 2Gi,
// and a check-capacity ProvisioningRequest ml/job of gang workers.
func bigCluster(t testing.TB, nodes, perNode int, gang int32, workerCPU string) (*runtime.Scheme, []client.Object, *prv1.ProvisioningRequest) {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, prv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	np := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "EC2NodeClass", Name: "default"}
	objs := []client.Object{np}
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("58")}
	allocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7910m"), corev1.ResourceMemory: resource.MustParse("29Gi"), corev1.ResourcePods: resource.MustParse("58")}
	created := metav1.NewTime(time.Now().Add(-time.Hour))
	for i := range nodes {
		name, zone := fmt.Sprintf("node-%04d", i), []string{"us-east-1a", "us-east-1b", "us-east-1c"}[i%3]
		id := "sim://" + name
		labels := map[string]string{corev1.LabelInstanceTypeStable: "m5.2xlarge", corev1.LabelTopologyZone: zone, corev1.LabelHostname: name,
			corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux", v1alpha1.LabelCapacityType: cloud.CapacityTypeOnDemand, v1alpha1.LabelNodePool: "default"}
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: created}, Spec: corev1.NodeSpec{ProviderID: id},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: allocatable,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}})
		claim := &v1alpha1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name + "-claim", Labels: labels, CreationTimestamp: created},
			Status: v1alpha1.NodeClaimStatus{ProviderID: id, NodeName: name, Capacity: capacity, Allocatable: allocatable, PricePerHour: "0.384"}}
		for _, c := range []string{v1alpha1.ConditionLaunched, v1alpha1.ConditionRegistered, v1alpha1.ConditionInitialized} {
			meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: c, LastTransitionTime: created})
		}
		objs = append(objs, claim)
		for j := range perNode {
			pod := fmt.Sprintf("app-%04d-%d", i, j)
			objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: pod, UID: types.UID(pod)},
				Spec:   corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: requests}}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning}})
		}
	}
	worker := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(workerCPU), corev1.ResourceMemory: resource.MustParse("2Gi")}
	objs = append(objs, &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "worker"}, Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: worker}}}}}})
	pr := &prv1.ProvisioningRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "job", UID: "job-uid"},
		Spec: prv1.ProvisioningRequestSpec{ProvisioningClassName: prv1.ClassCheckCapacity,
			PodSets: []prv1.PodSet{{PodTemplateRef: prv1.Reference{Name: "worker"}, Count: gang}}}}
	return s, append(objs, pr), pr
}

// BenchmarkCheckCapacity1000Nodes answers a check-capacity request for a
// gang of 64 pods on a cluster of 1,000 nodes running 6,000 pods, through
// the controller's own path (answerRequest: templates, the provisioner's
// snapshot with the gang, the gang's plan, the status written): a gang of
// 1-CPU pods that fits the free room (Provisioned), and one of 6-CPU pods
// that does not (Provisioned=False, naming the nodes it would need). The
// issue's must-show is under 2 s an answer. Two readers: the fake client
// (each List a JSON round trip of every object, which the operator never
// pays), and the same objects listed as the informer cache lists them
// (a deep copy of each; "cache").
func BenchmarkCheckCapacity1000Nodes(b *testing.B) {
	for _, gang := range []struct {
		name, cpu string
		fits      metav1.ConditionStatus
	}{{"fits", "1", metav1.ConditionTrue}, {"needs-nodes", "6", metav1.ConditionFalse}} {
		s, objs, pr := bigCluster(b, 1000, 6, 64, gang.cpu)
		for _, cached := range []bool{false, true} {
			name := gang.name + "/fake"
			if cached {
				name = gang.name + "/cache"
			}
			b.Run(name, func(b *testing.B) { benchAnswer(b, benchClient(b, s, objs, cached), pr, gang.fits) })
		}
	}
}

// benchAnswer answers pr b.N times on c, each answer Provisioned as want
// says.
func benchAnswer(b *testing.B, c client.Client, pr *prv1.ProvisioningRequest, want metav1.ConditionStatus) {
	prov := provisioning.New(c, benchCloud{}, nil, logr.Discard(), state.NewUnavailable(0), provisioning.Options{Region: "us-east-1"})
	ctrl := New(c, c, prov, logr.Discard(), Options{})
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		answered := pr.DeepCopy()
		if err := ctrl.answerRequest(ctx, answered, nil); err != nil {
			b.Fatal(err)
		}
		if got := meta.FindStatusCondition(answered.Status.Conditions, prv1.ConditionProvisioned); got == nil || got.Status != want {
			b.Fatalf("Provisioned %+v, want %s", got, want)
		}
	}
}

// benchClient is a fake client of objs; cached, it lists pods, nodes and
// NodeClaims (without options) as deep copies of lists read once, as the
// informer cache does, rather than through the fake's JSON round trip.
func benchClient(b *testing.B, s *runtime.Scheme, objs []client.Object, cached bool) client.Client {
	b.Helper()
	build := func() *fake.ClientBuilder {
		return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&prv1.ProvisioningRequest{})
	}
	if !cached {
		return build().Build()
	}
	plain := build().Build()
	lists := map[reflect.Type]client.ObjectList{}
	for _, l := range []client.ObjectList{&corev1.PodList{}, &corev1.NodeList{}, &v1alpha1.NodeClaimList{}} {
		if err := plain.List(context.Background(), l); err != nil {
			b.Fatal(err)
		}
		lists[reflect.TypeOf(l)] = l
	}
	return build().WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if l, ok := lists[reflect.TypeOf(list)]; ok && len(opts) == 0 {
				reflect.ValueOf(list).Elem().Set(reflect.ValueOf(l.DeepCopyObject()).Elem())
				return nil
			}
			return c.List(ctx, list, opts...)
		},
	}).Build()
}
