package snapshot

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// termsOf renders a pod's node affinity as "term | term", each term as
// solver.FormatRequirements does.
func termsOf(p *solver.Pod) string {
	parts := make([]string, len(p.Affinity))
	for i, t := range p.Affinity {
		parts[i] = solver.FormatRequirements(t)
	}
	return strings.Join(parts, " | ")
}

// ebsOf is the EBS volumes a pod requests (EBSAttachResource).
func ebsOf(m *Manifests, p *solver.Pod) int64 {
	i := slices.Index(m.ExtendedResources, EBSAttachResource)
	if i < 0 {
		return 0
	}
	return p.Requests[solver.NumFixedResources+i]
}

const (
	gp3WFFC = `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: gp3, annotations: {storageclass.kubernetes.io/is-default-class: "true"}}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
- matchLabelExpressions:
  - {key: topology.ebs.csi.aws.com/zone, values: [us-east-1a, us-east-1c]}
---
`
	gp2Immediate = `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: gp2}
provisioner: kubernetes.io/aws-ebs
---
`
	efs = `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: efs}
provisioner: efs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
---
`
	ebsPV1b = `apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-1b}
spec:
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-1}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: topology.ebs.csi.aws.com/zone, operator: In, values: [us-east-1b]}]
---
`
	legacyPV = `apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv-legacy
  labels: {failure-domain.beta.kubernetes.io/zone: us-east-1a__us-east-1d, failure-domain.beta.kubernetes.io/region: us-east-1}
spec:
  awsElasticBlockStore: {volumeID: vol-2}
---
`
)

// claim is a PVC document; volume binds it, class names its class ("-"
// for none given).
func claim(name, class, volume string) string {
	s := "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: " + name + "}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n"
	if class != "-" {
		s += "  storageClassName: \"" + class + "\"\n"
	}
	if volume != "" {
		s += "  volumeName: " + volume + "\n"
	}
	return s + "---\n"
}

// podWith is a pod document mounting the claims; affinity, when set, is
// its required node affinity's nodeSelectorTerms in flow style.
func podWith(affinity string, claims ...string) string {
	s := "apiVersion: v1\nkind: Pod\nmetadata: {name: app}\nspec:\n  containers: [{name: c, resources: {requests: {cpu: 100m}}}]\n"
	if affinity != "" {
		s += "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: " + affinity + "}}}\n"
	}
	if len(claims) > 0 {
		s += "  volumes:\n"
		for i, c := range claims {
			s += "  - {name: v" + string(rune('0'+i)) + ", persistentVolumeClaim: {claimName: " + c + "}}\n"
		}
	}
	return s
}

func TestReadVolumesConstrainPods(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		terms   string // the first pod's node affinity, as termsOf renders it
		ebs     int64
		pending string // a part of the first pod's Unschedulable sentence
	}{
		// kube-scheduler volumebinding_test.go "all bound" and
		// volumezone_test.go: a bound PV's node affinity decides.
		{"a bound EBS volume pins its zone (the driver's key read as the zone)",
			claim("data", "gp3", "pv-1b") + ebsPV1b + podWith("", "data"),
			"topology.kubernetes.io/zone In [us-east-1b]", 1, ""},
		{"the PV may come after the pod that uses it",
			podWith("", "data") + "\n---\n" + claim("data", "gp3", "pv-1b") + ebsPV1b,
			"topology.kubernetes.io/zone In [us-east-1b]", 1, ""},
		// volumezone_test.go: legacy zone labels, "__" separating zones.
		{"a PV's legacy zone and region labels restrict the node",
			claim("data", "-", "pv-legacy") + legacyPV + podWith("", "data"),
			"topology.kubernetes.io/zone In [us-east-1a, us-east-1d], topology.kubernetes.io/region In [us-east-1]", 1, ""},
		{"the volume's zone is ANDed into every term of the pod's own affinity",
			claim("data", "gp3", "pv-1b") + ebsPV1b +
				podWith("[{matchExpressions: [{key: kubernetes.io/arch, operator: In, values: [arm64]}]}, {matchExpressions: [{key: team, operator: Exists}]}]", "data"),
			"kubernetes.io/arch In [arm64], topology.kubernetes.io/zone In [us-east-1b] | team Exists, topology.kubernetes.io/zone In [us-east-1b]", 1, ""},
		// volumebinding_test.go "unbound/no pv found" with WaitForFirstConsumer:
		// the class's allowedTopologies decide where it may be provisioned.
		{"an unbound WaitForFirstConsumer claim follows its class's allowedTopologies",
			gp3WFFC + claim("data", "gp3", "") + podWith("", "data"),
			"topology.kubernetes.io/zone In [us-east-1a, us-east-1c]", 1, ""},
		{"an unbound claim without a class uses the default class",
			gp3WFFC + claim("data", "-", "") + podWith("", "data"),
			"topology.kubernetes.io/zone In [us-east-1a, us-east-1c]", 1, ""},
		{"a non-EBS class neither pins nor counts against the EBS limit",
			efs + claim("shared", "efs", "") + podWith("", "shared"), "", 0, ""},
		{"two claims count two volumes, and a claim mounted twice once",
			gp3WFFC + claim("a", "gp3", "") + claim("b", "gp3", "pv-1b") + ebsPV1b + podWith("", "a", "b", "a"),
			"topology.kubernetes.io/zone In [us-east-1a, us-east-1c], topology.kubernetes.io/zone In [us-east-1b]", 2, ""},
		// volumebinding_test.go "immediate claims not bound".
		{"an unbound Immediate claim leaves the pod pending",
			gp2Immediate + claim("data-0", "gp2", "") + podWith("", "data-0"), "", 0,
			"PVC data-0 is not bound yet (StorageClass gp2 binds Immediately)"},
		{"a claim with storageClassName \"\" waits for a matching PV",
			claim("data", "", "") + podWith("", "data"), "", 0, `its storageClassName is ""`},
		// volumebinding_test.go "pvc not found".
		{"a missing claim leaves the pod pending, named",
			podWith("", "nope"), "", 0, `persistentvolumeclaim "nope" not found in the input`},
		// volumebinding_test.go "bound and pv not found".
		{"a claim bound to a missing PV leaves the pod pending",
			claim("data", "gp3", "pv-gone") + podWith("", "data"), "", 0,
			"PVC data is bound to PersistentVolume pv-gone, which is not in the input"},
		{"a StatefulSet's claim templates are WaitForFirstConsumer claims of the default class",
			gp3WFFC + `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`, "topology.kubernetes.io/zone In [us-east-1a, us-east-1c]", 1, ""},
		{"a StatefulSet replica whose claim exists and is bound follows its PV",
			gp3WFFC + claim("data-db-0", "gp3", "pv-1b") + ebsPV1b + `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {storageClassName: gp3, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`, "topology.kubernetes.io/zone In [us-east-1b]", 1, ""},
		{"a generic ephemeral volume is a claim of its template's class",
			gp3WFFC + `apiVersion: v1
kind: Pod
metadata: {name: scratch}
spec:
  containers: [{name: c}]
  volumes:
  - name: tmp
    ephemeral:
      volumeClaimTemplate:
        spec: {storageClassName: gp3, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`, "topology.kubernetes.io/zone In [us-east-1a, us-east-1c]", 1, ""},
		{"a PV whose node affinity is invalid leaves the pod pending, with where",
			claim("data", "gp3", "pv-bad") + `apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-bad}
spec:
  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: Near, values: [a]}]}]}}
---
` + podWith("", "data"), "", 0, `PersistentVolume pv-bad of PVC data cannot be read: spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator: unsupported value "Near"`},
		{"a class outside the input is planned as WaitForFirstConsumer anywhere, uncounted",
			claim("data", "gp3", "") + podWith("", "data"), "", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &Manifests{}
			if err := Decode("in.yaml", []byte(tc.in), m); err != nil {
				t.Fatal(err)
			}
			m.workloads = max(m.workloads, 1)
			if _, err := m.finish([]string{"in.yaml"}); err != nil {
				t.Fatal(err)
			}
			if len(m.Pods) == 0 {
				t.Fatal("no pods read")
			}
			p := &m.Pods[0]
			if got := termsOf(p); got != tc.terms {
				t.Errorf("node affinity %q, want %q", got, tc.terms)
			}
			if got := ebsOf(m, p); got != tc.ebs {
				t.Errorf("%d EBS volumes requested, want %d", got, tc.ebs)
			}
			if tc.pending == "" && p.Unschedulable != "" || !strings.Contains(p.Unschedulable, tc.pending) {
				t.Errorf("unschedulable %q, want it to contain %q", p.Unschedulable, tc.pending)
			}
			if tc.pending != "" && p.Unschedulable == "" {
				t.Errorf("the pod is planned, want it pending with %q", tc.pending)
			}
		})
	}
}

// TestClusterVolumes reads pods through FromObjects, as ReadCluster and
// the operator's watcher do.
func TestClusterVolumes(t *testing.T) {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	gp3 := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "gp3"}, Provisioner: EBSDriver, VolumeBindingMode: &wffc}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1b"}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: EBSDriver, VolumeHandle: "vol-1"}},
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: LabelEBSZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1b"}}},
		}}}},
	}}
	bound := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("gp3"), VolumeName: "pv-1b"}}
	held := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "held"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("gp3"), VolumeName: "pv-1b"}}
	mount := func(p *corev1.Pod, claims ...string) *corev1.Pod {
		for _, c := range claims {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: c, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
		}
		return p
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{solver.LabelZone: "us-east-1a"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}}}
	csi := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{
		Name: EBSDriver, NodeID: "i-1", Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](25)},
	}}}}
	pending := func(name string) *corev1.Pod { p := livePod(name, "", corev1.PodPending, "100m", "64Mi"); return &p }
	running := livePod("runner", "n1", corev1.PodRunning, "100m", "64Mi")
	vols := &Volumes{Claims: []*corev1.PersistentVolumeClaim{bound, held}, Volumes: []*corev1.PersistentVolume{pv},
		StorageClasses: []*storagev1.StorageClass{gp3}, CSINodes: []*storagev1.CSINode{csi}}

	tests := []struct {
		name    string
		volumes *Volumes
		terms   string
		pending string
		// nodeEBS is n1's EBS allocatable and requested; nil when the
		// attach resource is not in the problem.
		nodeEBS []int64
	}{
		{"a bound EBS volume pins the pending pod; the node's CSINode limit and its pods' volumes are counted",
			vols, "topology.kubernetes.io/zone In [us-east-1b]", "", []int64{25, 1}},
		{"without CSINodes an existing node is not limited",
			&Volumes{Claims: vols.Claims, Volumes: vols.Volumes, StorageClasses: vols.StorageClasses}, "topology.kubernetes.io/zone In [us-east-1b]", "", []int64{1<<31 - 1, 1}},
		{"volumes not read: planned as if the pod had none", nil, "", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := running
			cl := FromObjects(&Objects{
				Pods:    []*corev1.Pod{mount(pending("db"), "data"), mount(pending("lost"), "gone"), mount(&r, "held")},
				Nodes:   []*corev1.Node{node},
				Volumes: tc.volumes,
			})
			if len(cl.Pods) != 2 {
				t.Fatalf("%d pods planned, want 2", len(cl.Pods))
			}
			if got := termsOf(&cl.Pods[0]); got != tc.terms {
				t.Errorf("db's node affinity %q, want %q", got, tc.terms)
			}
			wantLost := `persistentvolumeclaim "gone" not found`
			if tc.volumes == nil {
				wantLost = ""
			}
			if got := cl.Pods[1].Unschedulable; got != wantLost {
				t.Errorf("lost's reason %q, want %q", got, wantLost)
			}
			i := slices.Index(cl.ExtendedResources, EBSAttachResource)
			switch {
			case tc.nodeEBS == nil && i >= 0:
				t.Errorf("attach resource in the problem, want none")
			case tc.nodeEBS != nil && i < 0:
				t.Fatalf("no attach resource in the problem")
			case tc.nodeEBS != nil:
				n := &cl.Nodes[0]
				if got := []int64{n.Allocatable[solver.NumFixedResources+i], n.Requested[solver.NumFixedResources+i]}; !slices.Equal(got, tc.nodeEBS) {
					t.Errorf("n1's EBS allocatable, requested = %v, want %v", got, tc.nodeEBS)
				}
				if got := termsOf(&n.Pods[0]); got != tc.terms {
					t.Errorf("the running pod may move to %q, want %q (its volume's zone)", got, tc.terms)
				}
			}
		})
	}
}
