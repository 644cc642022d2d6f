package v1alpha1_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

func TestNewNodeClaimAllowsEveryValueOfAFlexibleLaunch(t *testing.T) {
	np := &v1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	np.Spec.Template.Spec.Requirements = []v1alpha1.NodeSelectorRequirement{
		{Key: "karpenter.k8s.aws/instance-category", Operator: v1alpha1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}, MinValues: new(2)},
	}
	for _, tc := range []struct {
		name string
		opts v1alpha1.NodeClaimOptions
		want map[string][]string // requirement key -> values, in order
	}{
		{
			name: "lists win over the single pins, planned first",
			opts: v1alpha1.NodeClaimOptions{InstanceType: "c6i.large", Zone: "a", CapacityType: "spot",
				InstanceTypes: []string{"c6i.large", "c5.large", "m6i.large"}, Zones: []string{"a", "b"}, CapacityTypes: []string{"spot", "on-demand"}},
			want: map[string][]string{
				corev1.LabelInstanceTypeStable: {"c6i.large", "c5.large", "m6i.large"},
				corev1.LabelTopologyZone:       {"a", "b"},
				v1alpha1.LabelCapacityType:     {"spot", "on-demand"},
			},
		},
		{
			name: "a key without a list keeps its pin",
			opts: v1alpha1.NodeClaimOptions{InstanceType: "c6i.large", Zone: "a", InstanceTypes: []string{"c6i.large", "c5.large"}},
			want: map[string][]string{
				corev1.LabelInstanceTypeStable: {"c6i.large", "c5.large"},
				corev1.LabelTopologyZone:       {"a"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := np.NewNodeClaim(tc.opts)
			got := map[string][]string{}
			for _, r := range c.Spec.Requirements[1:] {
				if r.Operator != v1alpha1.NodeSelectorOpIn {
					t.Errorf("requirement %v: want In", r)
				}
				got[r.Key] = r.Values
			}
			if len(got) != len(tc.want) {
				t.Errorf("requirements %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if !slices.Equal(got[k], v) {
					t.Errorf("%s In %v, want %v", k, got[k], v)
				}
			}
			if r := c.Spec.Requirements[0]; r.MinValues == nil || *r.MinValues != 2 {
				t.Errorf("template requirement %v: want its minValues kept", r)
			}
			tc.opts.InstanceTypes[0] = "changed"
			if c.Spec.Requirements[1].Values[0] == "changed" {
				t.Error("the claim shares the options' slice")
			}
		})
	}
}
