package commitments

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/optional"
)

func TestReaderReadsWhatTheBillSpends(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ri := &v1alpha1.Commitment{ObjectMeta: metav1.ObjectMeta{Name: "ri"}, Spec: v1alpha1.CommitmentSpec{Type: v1alpha1.CommitmentReservedInstances,
		ReservedInstances: &v1alpha1.ReservedInstances{InstanceType: "m6i.large", InstanceCount: 2}}}
	eu := &v1alpha1.Commitment{ObjectMeta: metav1.ObjectMeta{Name: "eu"}, Spec: v1alpha1.CommitmentSpec{Type: v1alpha1.CommitmentEC2InstanceSavingsPlan,
		SavingsPlan: &v1alpha1.SavingsPlan{Commitment: "1", Discount: "0.2", InstanceFamily: "c6i", Region: "eu-west-1"}}}
	weird := &v1alpha1.Commitment{ObjectMeta: metav1.ObjectMeta{Name: "weird"}, Spec: v1alpha1.CommitmentSpec{Type: v1alpha1.CommitmentReservedInstances,
		ReservedInstances: &v1alpha1.ReservedInstances{InstanceType: "m6i.weird", InstanceCount: 1}}}
	gr := schema.GroupResource{Group: v1alpha1.Group, Resource: "commitments"}
	for _, tc := range []struct {
		name    string
		objs    []client.Object
		listErr error
		want    []string // names read
		invalid bool
		err     bool
		// paced: a second read within optional.Retry does not list again.
		paced bool
	}{
		{name: "those of the region, or of none", objs: []client.Object{ri, eu}, want: []string{"ri"}},
		{name: "one the bill cannot spend is left out and said", objs: []client.Object{ri, weird}, want: []string{"ri"}, invalid: true},
		{name: "no CRD: none, asked again after optional.Retry", listErr: &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: v1alpha1.Group, Kind: "Commitment"}}, paced: true},
		{name: "not allowed: none, asked again after optional.Retry", listErr: apierrors.NewForbidden(gr, "", errors.New("no")), paced: true},
		{name: "a server error is an error", listErr: apierrors.NewTimeoutError("slow", 1), err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lists := 0
			api := fake.NewClientBuilder().WithScheme(s).WithObjects(tc.objs...).WithInterceptorFuncs(interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					lists++
					if tc.listErr != nil {
						return tc.listErr
					}
					return c.List(ctx, list, opts...)
				},
			}).Build()
			now := time.Date(2026, 12, 7, 18, 0, 0, 0, time.UTC)
			r := NewReader(api, "us-east-1").WithClock(func() time.Time { return now })
			cs, invalid, err := r.Read(context.Background())
			if (err != nil) != tc.err || (invalid != nil) != tc.invalid {
				t.Fatalf("invalid %v, err %v; want invalid %v, an error %v", invalid, err, tc.invalid, tc.err)
			}
			var got []string
			for _, c := range cs {
				got = append(got, c.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("read %v, want %v", got, tc.want)
			}
			now = now.Add(optional.Retry / 2)
			if _, _, err := r.Read(context.Background()); (err != nil) != tc.err {
				t.Fatalf("second read: %v", err)
			}
			if want := map[bool]int{true: 1, false: 2}[tc.paced]; lists != want {
				t.Errorf("%d lists in two reads %s apart, want %d", lists, optional.Retry/2, want)
			}
		})
	}
}

// TestReaderIsSafeForConcurrentUse: the provisioner, the disruption
// controller and the gauges read through one reader (go test -race).
func TestReaderIsSafeForConcurrentUse(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	gr := schema.GroupResource{Group: v1alpha1.Group, Resource: "commitments"}
	api := fake.NewClientBuilder().WithScheme(s).WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return apierrors.NewForbidden(gr, "", errors.New("no"))
		},
	}).Build()
	r := NewReader(api, "")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if _, _, err := r.Read(context.Background()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}
