package snapshot

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// TestLiveKubeletsFollowNodeClassRefs checks that a live cluster's pools
// get the kubelet settings of the node class they reference: Karpenter's
// pool its karpenter.k8s.aws EC2NodeClass's, our pool its SimNodeClass's
// (not the same-named class of another kind or group), and a pool whose
// class sets none gets none.
func TestLiveKubeletsFollowNodeClassRefs(t *testing.T) {
	c := &Cluster{}
	c.addLivePool(json.RawMessage(`{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"karp"},
		"spec":{"template":{"spec":{"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"shared"},"requirements":[]}}}}`))
	c.addLivePool(json.RawMessage(`{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"plain"},
		"spec":{"template":{"spec":{"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"plain"},"requirements":[]}}}}`))
	c.addRightsizePools([]*v1alpha1.NodePool{{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "NodePool"},
		ObjectMeta: metav1.ObjectMeta{Name: "ours"},
		Spec: v1alpha1.NodePoolSpec{Template: v1alpha1.NodeClaimTemplate{Spec: v1alpha1.NodeClaimTemplateSpec{
			NodeClassRef: v1alpha1.NodeClassReference{Group: v1alpha1.Group, Kind: "SimNodeClass", Name: "shared"},
		}}},
	}})
	c.addLiveClasses(KarpenterEC2NodeClasses, "EC2NodeClass", []json.RawMessage{
		json.RawMessage(`{"metadata":{"name":"shared"},"spec":{"kubelet":{"maxPods":110}}}`),
		json.RawMessage(`{"metadata":{"name":"plain"},"spec":{}}`),
	})
	c.addLiveClasses(RightsizeEC2NodeClasses, "EC2NodeClass", []json.RawMessage{
		json.RawMessage(`{"metadata":{"name":"shared"},"spec":{"kubelet":{"maxPods":7}}}`),
	})
	c.addLiveClasses(RightsizeSimNodeClasses, "SimNodeClass", []json.RawMessage{
		json.RawMessage(`{"metadata":{"name":"shared"},"spec":{"kubelet":{"maxPods":5}}}`),
	})
	c.resolveKubelets()
	maxPods := func(pool string) int32 {
		if k := c.Kubelets[pool]; k != nil && k.MaxPods != nil {
			return *k.MaxPods
		}
		return -1
	}
	for pool, want := range map[string]int32{"karp": 110, "ours": 5, "plain": -1} {
		if got := maxPods(pool); got != want {
			t.Errorf("pool %s maxPods = %d, want %d (-1: no settings); warnings %v", pool, got, want, c.Warnings)
		}
	}
}
