package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
)

// Karpenter's cloud provider metrics (kubernetes-sigs/karpenter
// pkg/cloudprovider/metrics/cloudprovider.go): the duration and the errors
// of every CloudProvider call, by the controller that made it, the method
// and the provider. Karpenter's method names are kept where ours differ
// (InstanceTypes is its GetInstanceTypes), so that its dashboards read
// them unchanged.
var (
	// CloudProviderDuration is karpenter_cloudprovider_duration_seconds.
	CloudProviderDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "karpenter_cloudprovider_duration_seconds",
		Help: "Duration of cloud provider method calls, by the controller that made them, method name (Create, Delete, Get, List, GetInstanceTypes, IsDrifted) and provider (aws, sim).",
	}, []string{"controller", "method", "provider"})
	// CloudProviderErrors is karpenter_cloudprovider_errors_total.
	CloudProviderErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_cloudprovider_errors_total",
		Help: "Errors returned from cloud provider calls, by controller, method, provider and error (InsufficientCapacityError, NodeClaimNotFoundError, NodeClassNotReadyError, or empty for any other).",
	}, []string{"controller", "method", "provider", "error"})
)

func init() {
	crmetrics.Registry.MustRegister(CloudProviderDuration, CloudProviderErrors)
}

// Values of the error label, Karpenter's names of the errors the
// CloudProvider contract defines.
const (
	CloudErrorInsufficientCapacity = "InsufficientCapacityError"
	CloudErrorNotFound             = "NodeClaimNotFoundError"
	CloudErrorNodeClassNotReady    = "NodeClassNotReadyError"
)

// CloudErrorLabel is the error label value of a CloudProvider error.
func CloudErrorLabel(err error) string {
	var notReady *cloud.NodeClassNotReadyError
	switch {
	case cloud.IsInsufficientCapacity(err):
		return CloudErrorInsufficientCapacity
	case cloud.IsNotFound(err):
		return CloudErrorNotFound
	case errors.As(err, &notReady):
		return CloudErrorNodeClassNotReady
	default:
		return ""
	}
}

// MeasuredCloud is a CloudProvider whose calls are measured as made by one
// controller. Give each controller its own, and measure no provider
// twice, or the calls are counted twice.
type MeasuredCloud struct {
	cloud.CloudProvider
	controller string
	now        func() time.Time
}

// MeasureCloud returns cp with its calls measured in
// CloudProviderDuration and CloudProviderErrors under the controller's
// name.
func MeasureCloud(cp cloud.CloudProvider, controller string) *MeasuredCloud {
	return &MeasuredCloud{CloudProvider: cp, controller: controller, now: time.Now}
}

// observe records one call of method that started at start.
func (m *MeasuredCloud) observe(method string, start time.Time, err error) {
	provider := m.Name()
	CloudProviderDuration.WithLabelValues(m.controller, method, provider).Observe(m.now().Sub(start).Seconds())
	if err != nil {
		CloudProviderErrors.WithLabelValues(m.controller, method, provider, CloudErrorLabel(err)).Inc()
	}
}

// Create implements cloud.CloudProvider.
func (m *MeasuredCloud) Create(ctx context.Context, claim *v1alpha1.NodeClaim) (*v1alpha1.NodeClaim, error) {
	start := m.now()
	out, err := m.CloudProvider.Create(ctx, claim)
	m.observe("Create", start, err)
	return out, err
}

// Delete implements cloud.CloudProvider.
func (m *MeasuredCloud) Delete(ctx context.Context, claim *v1alpha1.NodeClaim) error {
	start := m.now()
	err := m.CloudProvider.Delete(ctx, claim)
	m.observe("Delete", start, err)
	return err
}

// Get implements cloud.CloudProvider.
func (m *MeasuredCloud) Get(ctx context.Context, providerID string) (*v1alpha1.NodeClaim, error) {
	start := m.now()
	out, err := m.CloudProvider.Get(ctx, providerID)
	m.observe("Get", start, err)
	return out, err
}

// List implements cloud.CloudProvider.
func (m *MeasuredCloud) List(ctx context.Context) ([]*v1alpha1.NodeClaim, error) {
	start := m.now()
	out, err := m.CloudProvider.List(ctx)
	m.observe("List", start, err)
	return out, err
}

// InstanceTypes implements cloud.CloudProvider (Karpenter's
// GetInstanceTypes).
func (m *MeasuredCloud) InstanceTypes(ctx context.Context, pool *v1alpha1.NodePool) ([]cloud.InstanceType, error) {
	start := m.now()
	out, err := m.CloudProvider.InstanceTypes(ctx, pool)
	m.observe("GetInstanceTypes", start, err)
	return out, err
}

// IsDrifted implements cloud.CloudProvider.
func (m *MeasuredCloud) IsDrifted(ctx context.Context, claim *v1alpha1.NodeClaim) (string, error) {
	start := m.now()
	out, err := m.CloudProvider.IsDrifted(ctx, claim)
	m.observe("IsDrifted", start, err)
	return out, err
}
