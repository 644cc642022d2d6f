package tui

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
)

// TestClaimOf: the TUI reads a watched NodeClaim as planning reads it
// (plan.ClaimOf): the launch's In requirement (the last) over the pool's,
// and the provider ID, allocatable, labels and taints the in-flight node is
// built from.
func TestClaimOf(t *testing.T) {
	claim := func(status map[string]any) *unstructured.Unstructured {
		o := map[string]any{
			"apiVersion": "rightsize.dev/v1alpha1", "kind": "NodeClaim",
			"metadata": map[string]any{"name": "c", "creationTimestamp": "2026-06-01T12:00:00Z",
				"labels": map[string]any{"rightsize.dev/nodepool": "web", "team": "a"}},
			"spec": map[string]any{
				"nodeClassRef": map[string]any{"group": "rightsize.dev", "kind": "SimNodeClass", "name": "sim"},
				"requirements": []any{
					// The pool's requirements first, the launch's after.
					map[string]any{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": []any{"m5.large", "c5.large"}},
					map[string]any{"key": "topology.kubernetes.io/zone", "operator": "In", "values": []any{"zone-a", "zone-b"}},
					map[string]any{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": []any{"c5.large"}},
					map[string]any{"key": "topology.kubernetes.io/zone", "operator": "In", "values": []any{"zone-b"}},
					map[string]any{"key": "karpenter.sh/capacity-type", "operator": "In", "values": []any{"spot"}},
				},
				"resources": map[string]any{"requests": map[string]any{"cpu": "2"}},
				"taints":    []any{map[string]any{"key": "dedicated", "value": "a", "effect": "NoSchedule"}},
			},
		}
		if status != nil {
			o["status"] = status
		}
		return &unstructured.Unstructured{Object: o}
	}
	tests := []struct {
		name string
		in   *unstructured.Unstructured
		want plan.Claim
	}{
		{name: "not launched: the launch's requirements", in: claim(nil), want: plan.Claim{
			Name: "c", Pool: "web", InstanceType: "c5.large", Zone: "zone-b", CapacityType: "spot",
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Labels:   map[string]string{"rightsize.dev/nodepool": "web", "team": "a"},
			Taints:   []corev1.Taint{{Key: "dedicated", Value: "a", Effect: corev1.TaintEffectNoSchedule}},
		}},
		{name: "launched: its status", in: claim(map[string]any{
			"providerID": "sim://c", "instanceType": "m5.large", "zone": "zone-a", "capacityType": "on-demand", "pricePerHour": "0.096",
			"allocatable": map[string]any{"cpu": "1930m"},
			"conditions":  []any{map[string]any{"type": "Launched", "status": "True", "lastTransitionTime": "2026-06-01T12:00:00Z", "reason": "Launched", "message": ""}},
		}), want: plan.Claim{
			Name: "c", Pool: "web", InstanceType: "m5.large", Zone: "zone-a", CapacityType: "on-demand", ProviderID: "sim://c", Price: 0.096,
			Conditions:  []string{"Launched"},
			Requests:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m")},
			Labels:      map[string]string{"rightsize.dev/nodepool": "web", "team": "a"},
			Taints:      []corev1.Taint{{Key: "dedicated", Value: "a", Effect: corev1.TaintEffectNoSchedule}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := claimOf(tt.in)
			tt.want.Created = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
			if !got.Created.Equal(tt.want.Created) {
				t.Errorf("Created %v, want %v", got.Created, tt.want.Created)
			}
			got.Created = tt.want.Created
			if got.Name != tt.want.Name || got.Pool != tt.want.Pool || got.InstanceType != tt.want.InstanceType || got.Zone != tt.want.Zone ||
				got.CapacityType != tt.want.CapacityType || got.ProviderID != tt.want.ProviderID || got.Price != tt.want.Price ||
				!slices.Equal(got.Conditions, tt.want.Conditions) || !slices.Equal(got.Taints, tt.want.Taints) ||
				!equalResources(got.Requests, tt.want.Requests) || !equalResources(got.Allocatable, tt.want.Allocatable) ||
				len(got.Labels) != len(tt.want.Labels) || got.Labels["team"] != tt.want.Labels["team"] {
				t.Errorf("claimOf:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func equalResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, q := range a {
		if r, ok := b[k]; !ok || q.Cmp(r) != 0 {
			return false
		}
	}
	return true
}
