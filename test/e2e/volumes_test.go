package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

// TestLiveExplainPlansPodsWhereTheirVolumesAre: on the test control plane,
// a pod whose claim is bound to an EBS volume in us-east-1b is planned a
// new node there, not the existing node with room in us-east-1a, and
// kube-scheduler binds it to exactly that node once it exists; a pod whose
// Immediate claim cannot bind is reported pending with the sentence and
// stays pending.
func TestLiveExplainPlansPodsWhereTheirVolumesAre(t *testing.T) {
	env := sharedEnv(t).Env
	ctx := context.Background()
	c := env.Client()
	const ebsZone = "topology.ebs.csi.aws.com/zone"
	mustCreate := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	wffc, immediate := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	_, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "gp3"},
		Provisioner: "ebs.csi.aws.com", VolumeBindingMode: &wffc}, metav1.CreateOptions{})
	mustCreate(err)
	// No in-tree aws-ebs provisioner runs here, so this claim never binds.
	_, err = c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "gp2"},
		Provisioner: "kubernetes.io/aws-ebs", VolumeBindingMode: &immediate}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = c.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-1b"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:         corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("20Gi")},
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: "gp3",
			ClaimRef:         &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: metav1.NamespaceDefault, Name: "data"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "ebs.csi.aws.com", VolumeHandle: "vol-0123456789abcdef0"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: ebsZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1b"}}},
			}}}},
		},
	}, metav1.CreateOptions{})
	mustCreate(err)
	claim := func(name, class, volume, size string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class), VolumeName: volume,
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}}
	}
	_, err = c.CoreV1().PersistentVolumeClaims(metav1.NamespaceDefault).Create(ctx, claim("data", "gp3", "pv-1b", "20Gi"), metav1.CreateOptions{})
	mustCreate(err)
	_, err = c.CoreV1().PersistentVolumeClaims(metav1.NamespaceDefault).Create(ctx, claim("data-0", "gp2", "", "10Gi"), metav1.CreateOptions{})
	mustCreate(err)
	// The PV controller completes the binding kube-scheduler checks.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		pvc, err := c.CoreV1().PersistentVolumeClaims(metav1.NamespaceDefault).Get(ctx, "data", metav1.GetOptions{})
		return err == nil && pvc.Status.Phase == corev1.ClaimBound, nil
	}); err != nil {
		t.Fatalf("claim data never bound to pv-1b: %v", err)
	}

	// An existing node with room, in the wrong zone. Nodes carry the EBS
	// driver's zone label too, as the driver sets it on real nodes.
	_, err = env.AddNode(ctx, testenv.Node{Name: "node-1a", Labels: map[string]string{
		"topology.kubernetes.io/zone": "us-east-1a", "topology.kubernetes.io/region": "us-east-1", ebsZone: "us-east-1a",
		"node.kubernetes.io/instance-type": "m5.xlarge", "karpenter.sh/capacity-type": "on-demand"}})
	mustCreate(err)
	mustCreate(env.WaitNodeReady(ctx, "node-1a", 60*time.Second))

	pod := func(name, claimName string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault, Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}}},
			}}
	}
	for _, p := range []*corev1.Pod{pod("db", "data"), pod("worker", "data-0")} {
		_, err := c.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, p, metav1.CreateOptions{})
		mustCreate(err)
	}
	waitPods(t, c, "db", 1, unschedulable)
	waitPods(t, c, "worker", 1, unschedulable)

	before := decodePlan(t, plugin(t, env.Kubeconfig, "explain", "-o", "json", "--capacity-type", "on-demand"))
	var db, worker string
	var dbZone, dbType string
	for _, p := range before.Pending {
		switch p.Pod {
		case "default/db":
			db, dbZone, dbType = p.Node, p.Zone, p.InstanceType
			if !p.NewNode || p.Zone != "us-east-1b" {
				t.Errorf("db: %+v, want a new node in us-east-1b (its volume's zone), not node-1a", p)
			}
		case "default/worker":
			worker = p.Reason
			if want := "PVC data-0 is not bound yet (StorageClass gp2 binds Immediately)"; p.Reason != want || p.Node != "" {
				t.Errorf("worker: %+v, want pending with %q", p, want)
			}
		}
	}
	if db == "" || worker == "" {
		t.Fatalf("pending %+v, want db planned and worker explained", before.Pending)
	}
	t.Logf("db planned on %s (%s, %s); worker: %s", db, dbType, dbZone, worker)

	// The judge: the planned node, created, is where kube-scheduler binds db.
	_, err = env.AddNode(ctx, testenv.Node{Name: "node-1b", Labels: map[string]string{
		"topology.kubernetes.io/zone": dbZone, "topology.kubernetes.io/region": "us-east-1", ebsZone: dbZone,
		"node.kubernetes.io/instance-type": dbType, "karpenter.sh/capacity-type": "on-demand"}})
	mustCreate(err)
	mustCreate(env.WaitNodeReady(ctx, "node-1b", 60*time.Second))
	bound := waitPods(t, c, "db", 1, running)
	if bound[0].Spec.NodeName != "node-1b" {
		t.Errorf("kube-scheduler bound db to %s, want node-1b, the node planned in %s", bound[0].Spec.NodeName, dbZone)
	}
	w, err := c.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, "worker", metav1.GetOptions{})
	mustCreate(err)
	if w.Spec.NodeName != "" || !strings.Contains(conditionMessage(w), "unbound immediate PersistentVolumeClaims") {
		t.Errorf("worker on %q, scheduler says %q; want it pending on its unbound immediate claim", w.Spec.NodeName, conditionMessage(w))
	}
}

// conditionMessage is the message of a pod's PodScheduled condition.
func conditionMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Message
		}
	}
	return ""
}
