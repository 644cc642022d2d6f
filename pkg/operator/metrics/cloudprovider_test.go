package metrics

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
)

// failingCloud answers every call with err, taking no time.
type failingCloud struct {
	cloud.CloudProvider
	err error
}

func (f failingCloud) Name() string { return "stub" }
func (f failingCloud) Create(context.Context, *v1alpha1.NodeClaim) (*v1alpha1.NodeClaim, error) {
	return nil, f.err
}
func (f failingCloud) Delete(context.Context, *v1alpha1.NodeClaim) error { return f.err }
func (f failingCloud) Get(context.Context, string) (*v1alpha1.NodeClaim, error) {
	return nil, f.err
}
func (f failingCloud) List(context.Context) ([]*v1alpha1.NodeClaim, error) { return nil, f.err }
func (f failingCloud) InstanceTypes(context.Context, *v1alpha1.NodePool) ([]cloud.InstanceType, error) {
	return nil, f.err
}
func (f failingCloud) IsDrifted(context.Context, *v1alpha1.NodeClaim) (string, error) {
	return "", f.err
}

// TestMeasuredCloudCountsCallsAndErrorsAsKarpenter: every call is timed
// under Karpenter's method name and the controller's, and an error is
// counted with Karpenter's name for its kind (kubernetes-sigs/karpenter
// pkg/cloudprovider/metrics/cloudprovider.go, GetErrorTypeLabelValue).
func TestMeasuredCloudCountsCallsAndErrorsAsKarpenter(t *testing.T) {
	for _, tc := range []struct {
		err       error
		wantLabel string
	}{
		{nil, ""},
		{&cloud.InsufficientCapacityError{}, CloudErrorInsufficientCapacity},
		{fmt.Errorf("launching: %w", &cloud.NotFoundError{ProviderID: "sim:///a/b"}), CloudErrorNotFound},
		{&cloud.NodeClassNotReadyError{NodeClass: "default", Reason: "no subnet"}, CloudErrorNodeClassNotReady},
		{errors.New("throttled"), ""},
	} {
		controller := fmt.Sprintf("test-%s-%t", tc.wantLabel, tc.err == nil)
		m := MeasureCloud(failingCloud{err: tc.err}, controller)
		at := time.Unix(0, 0)
		m.now = func() time.Time { at = at.Add(250 * time.Millisecond); return at }
		ctx := context.Background()
		_, _ = m.Create(ctx, nil)
		_ = m.Delete(ctx, nil)
		_, _ = m.Get(ctx, "")
		_, _ = m.List(ctx)
		_, _ = m.InstanceTypes(ctx, nil)
		_, _ = m.IsDrifted(ctx, nil)
		for _, method := range []string{"Create", "Delete", "Get", "List", "GetInstanceTypes", "IsDrifted"} {
			h := CloudProviderDuration.WithLabelValues(controller, method, "stub")
			sum := histogramSum(t, h)
			if sum != 0.25 {
				t.Errorf("%v: %s took %v s, want 0.25", tc.err, method, sum)
			}
			errs := testutil.ToFloat64(CloudProviderErrors.WithLabelValues(controller, method, "stub", tc.wantLabel))
			if want := map[bool]float64{true: 0, false: 1}[tc.err == nil]; errs != want {
				t.Errorf("%v: %s errors{error=%q} = %v, want %v", tc.err, method, tc.wantLabel, errs, want)
			}
		}
	}
}

// histogramSum reads the sum of one histogram series.
func histogramSum(t *testing.T, o prometheus.Observer) float64 {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleSum()
}
