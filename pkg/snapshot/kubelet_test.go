package snapshot

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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

// TestNodeStorageFollowsNodeClassRefs checks that a pool gets the
// ephemeral storage of the node class it references, offline and live:
// instanceStorePolicy RAID0, a blockDeviceMappings entry marked rootVolume
// (one not so marked is the AMI's business and changes nothing here), and
// nothing for a class that sets neither.
func TestNodeStorageFollowsNodeClassRefs(t *testing.T) {
	const gi = int64(1) << 30
	pool := func(name, class string) string {
		return `{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"` + name + `"},
		"spec":{"template":{"spec":{"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"` + class + `"},"requirements":[]}}}}`
	}
	classes := []string{
		`{"metadata":{"name":"nvme"},"spec":{"instanceStorePolicy":"RAID0"}}`,
		`{"metadata":{"name":"big-root"},"spec":{"blockDeviceMappings":[{"deviceName":"/dev/xvdb","ebs":{"volumeSize":"500Gi"}},{"deviceName":"/dev/xvda","rootVolume":true,"ebs":{"volumeSize":"100Gi"}}]}}`,
		`{"metadata":{"name":"not-root"},"spec":{"blockDeviceMappings":[{"deviceName":"/dev/xvda","ebs":{"volumeSize":"100Gi"}}]}}`,
	}
	want := map[string]NodeStorage{"a": {InstanceStore: true}, "b": {RootVolume: 100 * gi}}
	pools := map[string]string{"a": "nvme", "b": "big-root", "c": "not-root", "d": "missing"}
	check := func(t *testing.T, got map[string]NodeStorage, warnings []string) {
		for p := range pools {
			if got[p] != want[p] {
				t.Errorf("pool %s storage %+v, want %+v; warnings %q", p, got[p], want[p], warnings)
			}
		}
	}
	t.Run("offline", func(t *testing.T) {
		var docs []string
		for p, class := range pools {
			docs = append(docs, pool(p, class))
		}
		for _, c := range classes {
			docs = append(docs, `{"apiVersion":"karpenter.k8s.aws/v1","kind":"EC2NodeClass",`+c[1:])
		}
		docs = append(docs, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}]}}`)
		path := filepath.Join(t.TempDir(), "in.yaml")
		if err := os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := Read([]string{path}, nil)
		if err != nil {
			t.Fatal(err)
		}
		check(t, m.Storage, m.Warnings)
	})
	t.Run("live", func(t *testing.T) {
		c := &Cluster{}
		for p, class := range pools {
			c.addLivePool(json.RawMessage(pool(p, class)))
		}
		var raws []json.RawMessage
		for _, cl := range classes {
			raws = append(raws, json.RawMessage(cl))
		}
		c.addLiveClasses(KarpenterEC2NodeClasses, "EC2NodeClass", raws)
		c.resolveKubelets()
		check(t, c.Storage, c.Warnings)
	})
}
