package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/importer"
)

// resources maps this API's kinds to their resources.
var resources = map[string]string{
	"NodePool":     "nodepools",
	"NodeClaim":    "nodeclaims",
	"EC2NodeClass": "ec2nodeclasses",
	"SimNodeClass": "simnodeclasses",
	"Commitment":   "commitments",
}

// parseObject reads one YAML object of this API.
func parseObject(t *testing.T, doc string) (*unstructured.Unstructured, schema.GroupVersionResource) {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("bad test YAML: %v\n%s", err, doc)
	}
	u := &unstructured.Unstructured{Object: m}
	res, ok := resources[u.GetKind()]
	if !ok {
		t.Fatalf("bad test YAML: kind %q", u.GetKind())
	}
	return u, v1alpha1.SchemeGroupVersion.WithResource(res)
}

// create creates the object doc describes and returns the stored object.
func create(ctx context.Context, t *testing.T, dyn dynamic.Interface, doc string) (*unstructured.Unstructured, error) {
	t.Helper()
	u, gvr := parseObject(t, doc)
	return dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{})
}

// Valid objects of every kind, named "valid-*" so that invalid variants can
// reuse the names.
const (
	validNodePool = `
apiVersion: rightsize.dev/v1alpha1
kind: NodePool
metadata: {name: valid}
spec:
  template:
    metadata:
      labels: {team: web}
    spec:
      nodeClassRef: {group: rightsize.dev, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand, spot]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge, c5.xlarge], minValues: 2}
        - {key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["1"]}
        - {key: kubernetes.io/arch, operator: Exists}
      taints: [{key: dedicated, value: web, effect: NoSchedule}]
      startupTaints: [{key: node.cilium.io/agent-not-ready, effect: NoExecute}]
      expireAfter: Never
  limits: {cpu: "100", memory: 500Gi}
  weight: 10
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 5m
    budgets:
      - nodes: "10%"
      - {nodes: "0", schedule: "0 9 * * mon-fri", duration: 8h, reasons: [Underutilized]}
    minSaving: {perHour: "0.01", percent: 5}
`
	validEC2NodeClass = `
apiVersion: rightsize.dev/v1alpha1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: karpenter-my-cluster
  subnetSelectorTerms: [{tags: {Name: "private-*"}}]
  securityGroupSelectorTerms: [{tags: {Env: production}}]
  tags: {Project: ecommerce}
  blockDeviceMappings:
    - {deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 20Gi, volumeType: gp3}}
  kubelet:
    maxPods: 110
    podsPerCore: 10
    systemReserved: {cpu: 100m, memory: 100Mi, ephemeral-storage: 1Gi, pid: "1000"}
    kubeReserved: {cpu: 200m, memory: 1.5Gi}
    evictionHard: {memory.available: 5%, nodefs.available: 10%, imagefs.available: 500Mi}
    evictionSoft: {memory.available: 750Mi}
    evictionSoftGracePeriod: {memory.available: 1m30s}
    evictionMaxPodGracePeriod: 60
    imageGCHighThresholdPercent: 85
    imageGCLowThresholdPercent: 80
    cpuCFSQuota: true
    clusterDNS: [10.100.0.10]
`
	validNodeClaim = `
apiVersion: rightsize.dev/v1alpha1
kind: NodeClaim
metadata: {name: valid}
spec:
  nodeClassRef: {kind: SimNodeClass, name: sim}
  requirements:
    - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
  resources: {requests: {cpu: 1500m, memory: 3Gi}}
`
	validSimNodeClass = `
apiVersion: rightsize.dev/v1alpha1
kind: SimNodeClass
metadata: {name: sim}
spec:
  registrationDelay: 2s
  insufficientCapacity: [{instanceType: m5.large, zone: us-east-1a}]
  tags: {env: test}
`
	validCommitments = `
apiVersion: rightsize.dev/v1alpha1
kind: Commitment
metadata: {name: m6i-ri}
spec:
  type: ReservedInstances
  reservedInstances: {instanceType: m6i.large, instanceCount: 5, region: us-east-1, pricePerHour: "0.06"}
---
apiVersion: rightsize.dev/v1alpha1
kind: Commitment
metadata: {name: compute-sp}
spec:
  type: ComputeSavingsPlan
  savingsPlan: {commitment: "5", discount: "0.28", rates: [{instanceType: m6i.large, pricePerHour: "0.0691"}]}
`
)

// commitment is a Commitment document named bad with spec.
func commitment(spec string) string {
	return "apiVersion: rightsize.dev/v1alpha1\nkind: Commitment\nmetadata: {name: bad}\nspec: " + spec + "\n"
}

// TestCRDsValidate installs the generated CRDs on a real API server and
// checks that valid objects, including the imported seed walkthrough, are
// accepted and defaulted, and that invalid ones are refused with a message
// naming the field.
func TestCRDsValidate(t *testing.T) {
	env := sharedEnv(t).Env
	installCRDs(t, env)
	dyn, err := dynamic.NewForConfig(env.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("valid objects are accepted and defaulted", func(t *testing.T) {
		docs := []string{validNodePool, validEC2NodeClass, validNodeClaim, validSimNodeClass}
		for _, doc := range append(docs, strings.Split(validCommitments, "---\n")...) {
			if _, err := create(ctx, t, dyn, doc); err != nil {
				t.Fatalf("create: %v\n%s", err, doc)
			}
		}
		np, err := dyn.Resource(v1alpha1.SchemeGroupVersion.WithResource("nodepools")).Get(ctx, "valid", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if g, _, _ := unstructured.NestedString(np.Object, "spec", "template", "spec", "nodeClassRef", "group"); g != v1alpha1.Group {
			t.Errorf("nodeClassRef.group = %q, want %q", g, v1alpha1.Group)
		}
		ec2, err := dyn.Resource(v1alpha1.SchemeGroupVersion.WithResource("ec2nodeclasses")).Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		md, _, _ := unstructured.NestedMap(ec2.Object, "spec", "metadataOptions")
		want := map[string]any{"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpPutResponseHopLimit": int64(1), "httpTokens": "required"}
		for k, v := range want {
			if md[k] != v {
				t.Errorf("default metadataOptions.%s = %v (%T), want %v", k, md[k], md[k], v)
			}
		}
		nc, err := dyn.Resource(v1alpha1.SchemeGroupVersion.WithResource("nodeclaims")).Get(ctx, "valid", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if e, _, _ := unstructured.NestedString(nc.Object, "spec", "expireAfter"); e != "720h" {
			t.Errorf("default NodeClaim expireAfter = %q, want 720h", e)
		}
	})

	t.Run("a pool with no disruption gets Karpenter's defaults", func(t *testing.T) {
		doc := strings.Replace(minimalNodePool, "name: minimal", "name: defaults", 1)
		np, err := create(ctx, t, dyn, doc)
		if err != nil {
			t.Fatal(err)
		}
		d, _, _ := unstructured.NestedMap(np.Object, "spec", "disruption")
		if d["consolidationPolicy"] != "WhenEmptyOrUnderutilized" || d["consolidateAfter"] != "0s" {
			t.Errorf("disruption defaults = %v", d)
		}
		budgets, _, _ := unstructured.NestedSlice(np.Object, "spec", "disruption", "budgets")
		if len(budgets) != 1 || budgets[0].(map[string]any)["nodes"] != "10%" {
			t.Errorf("default budgets = %v, want [{nodes: 10%%}]", budgets)
		}
		if e, _, _ := unstructured.NestedString(np.Object, "spec", "template", "spec", "expireAfter"); e != "720h" {
			t.Errorf("default expireAfter = %q, want 720h", e)
		}
	})

	t.Run("invalid objects are refused naming the field", func(t *testing.T) {
		for _, tc := range invalidObjects {
			t.Run(tc.name, func(t *testing.T) {
				_, err := create(ctx, t, dyn, tc.doc)
				if err == nil {
					t.Fatalf("created; want refused with %q", tc.want)
				}
				t.Logf("refused: %v", err)
				if !apierrors.IsInvalid(err) {
					t.Fatalf("error is not Invalid: %v", err)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q\n does not contain %q", err, w)
					}
				}
			})
		}
	})

	t.Run("NodeClaim spec is immutable", func(t *testing.T) {
		gvr := v1alpha1.SchemeGroupVersion.WithResource("nodeclaims")
		nc, err := dyn.Resource(gvr).Get(ctx, "valid", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(nc.Object, "Never", "spec", "expireAfter"); err != nil {
			t.Fatal(err)
		}
		_, err = dyn.Resource(gvr).Update(ctx, nc, metav1.UpdateOptions{})
		if err == nil || !strings.Contains(err.Error(), "spec is immutable") {
			t.Fatalf("update of spec: %v, want spec is immutable", err)
		}
	})

	t.Run("the imported seed walkthrough is accepted", func(t *testing.T) {
		res, err := importer.Import([]string{filepath.Join("..", "..", "pkg", "snapshot", "testdata", "seed")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Objects) != 2 {
			t.Fatalf("imported %d objects, want 2 (EC2NodeClass, NodePool)", len(res.Objects))
		}
		dir := t.TempDir()
		out := filepath.Join(dir, "seed.yaml")
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		if err := importer.PrintYAML(f, res.Objects); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		// The seed's names ("default") are taken by the objects above.
		if r := kubectl(t, env, "delete", "nodepool,ec2nodeclass", "--all"); r.err != nil {
			t.Fatalf("kubectl delete: %v\n%s", r.err, r.stderr)
		}
		if r := kubectl(t, env, "apply", "-f", out); r.err != nil {
			b, _ := os.ReadFile(out)
			t.Fatalf("kubectl apply of the imported seed: %v\n%s%s\n%s", r.err, r.stdout, r.stderr, b)
		}
		np, err := dyn.Resource(v1alpha1.SchemeGroupVersion.WithResource("nodepools")).Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		labels, _, _ := unstructured.NestedStringMap(np.Object, "spec", "template", "metadata", "labels")
		if labels[v1alpha1.KarpenterLabelProvisionerName] != "default" {
			t.Errorf("imported pool labels = %v, want %s: default", labels, v1alpha1.KarpenterLabelProvisionerName)
		}
	})

	t.Run("every import golden file is accepted", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join("..", "..", "pkg", "importer", "testdata", "*.out.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no golden files: %v", err)
		}
		for _, f := range files {
			if r := kubectl(t, env, "apply", "-f", f); r.err != nil {
				t.Errorf("kubectl apply -f %s: %v\n%s%s", f, r.err, r.stdout, r.stderr)
			}
		}
	})

	t.Run("kubectl get shows the printer columns, short names and category", func(t *testing.T) {
		r := kubectl(t, env, "get", "nodepools")
		if r.err != nil {
			t.Fatalf("kubectl get nodepools: %v\n%s", r.err, r.stderr)
		}
		header := strings.Fields(strings.SplitN(r.stdout, "\n", 2)[0])
		if got, want := strings.Join(header, " "), "NAME NODES CPU MEMORY COST/H READY AGE"; got != want {
			t.Errorf("kubectl get nodepools header = %q, want %q", got, want)
		}
		r = kubectl(t, env, "get", "nodeclaims")
		if r.err != nil {
			t.Fatalf("kubectl get nodeclaims: %v\n%s", r.err, r.stderr)
		}
		header = strings.Fields(strings.SplitN(r.stdout, "\n", 2)[0])
		if got, want := strings.Join(header, " "), "NAME TYPE ZONE CAPACITY NODE READY AGE"; got != want {
			t.Errorf("kubectl get nodeclaims header = %q, want %q", got, want)
		}
		for _, short := range []string{"np", "nc", "ec2nc", "simnc", "rightsize"} {
			if r := kubectl(t, env, "get", short, "-o", "name"); r.err != nil || r.stdout == "" {
				t.Errorf("kubectl get %s: %v %q %s", short, r.err, r.stdout, r.stderr)
			}
		}
	})
}

// minimalNodePool is the least a NodePool needs.
const minimalNodePool = `
apiVersion: rightsize.dev/v1alpha1
kind: NodePool
metadata: {name: minimal}
spec:
  template:
    spec:
      nodeClassRef: {kind: EC2NodeClass, name: default}
`

// minimalEC2NodeClass is the least an EC2NodeClass needs.
const minimalEC2NodeClass = `
apiVersion: rightsize.dev/v1alpha1
kind: EC2NodeClass
metadata: {name: minimal}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: node-role
  subnetSelectorTerms: [{tags: {Name: "private-*"}}]
  securityGroupSelectorTerms: [{tags: {Env: production}}]
`

// pool returns a NodePool named "bad" with extra appended under spec.
func pool(extraSpec string) string {
	return strings.Replace(minimalNodePool, "name: minimal", "name: bad", 1) + indent(extraSpec, "  ")
}

// poolTemplate returns a NodePool named "bad" with extra appended under
// spec.template.spec.
func poolTemplate(extra string) string {
	return strings.Replace(minimalNodePool, "name: minimal", "name: bad", 1) + indent(extra, "      ")
}

// ec2Class returns an EC2NodeClass named "bad" with extra appended under spec.
func ec2Class(extra string) string {
	return strings.Replace(minimalEC2NodeClass, "name: minimal", "name: bad", 1) + indent(extra, "  ")
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// invalidObjects must each be refused; want are substrings of the error
// (the field path and the message).
var invalidObjects = []struct {
	name string
	doc  string
	want []string
}{
	{"bad requirement operator", poolTemplate(`requirements: [{key: kubernetes.io/arch, operator: Equals, values: [amd64]}]`),
		[]string{`spec.template.spec.requirements[0].operator`, `Unsupported value: "Equals"`}},
	{"In without values", poolTemplate(`requirements: [{key: kubernetes.io/arch, operator: In}]`),
		[]string{`spec.template.spec.requirements[0].values`, "operators In and NotIn need at least one value"}},
	{"Exists with values", poolTemplate(`requirements: [{key: kubernetes.io/arch, operator: Exists, values: [amd64]}]`),
		[]string{`spec.template.spec.requirements[0].values`, "operators Exists and DoesNotExist take no values"}},
	{"Gt with a word", poolTemplate(`requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: [four]}]`),
		[]string{`spec.template.spec.requirements[0].values`, "single non-negative integer"}},
	{"Lt with two values", poolTemplate(`requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: ["4", "8"]}]`),
		[]string{`spec.template.spec.requirements[0].values`, "single non-negative integer"}},
	{"minValues above the values", poolTemplate(`requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large], minValues: 2}]`),
		[]string{`spec.template.spec.requirements[0].minValues`, "minValues must not exceed the number of values"}},
	{"requirement on the pool label", poolTemplate(`requirements: [{key: karpenter.sh/nodepool, operator: In, values: [x]}]`),
		[]string{`spec.template.spec.requirements`, "karpenter.sh/nodepool"}},
	{"template label karpenter.sh/nodepool", strings.Replace(pool(""), "    spec:\n      nodeClassRef", "    metadata: {labels: {karpenter.sh/nodepool: other}}\n    spec:\n      nodeClassRef", 1),
		[]string{`spec.template.metadata.labels`, "set by the operator"}},
	{"bad taint effect", poolTemplate(`taints: [{key: a, effect: NoWay}]`),
		[]string{`spec.template.spec.taints`, "taint effect must be"}},
	{"bad expireAfter", poolTemplate(`expireAfter: 30d`),
		[]string{`spec.template.spec.expireAfter`, "should match"}},
	{"nodeClassRef of Karpenter's group", strings.Replace(pool(""), "{kind: EC2NodeClass, name: default}", "{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}", 1),
		[]string{`spec.template.spec.nodeClassRef.group`, `Unsupported value: "karpenter.k8s.aws"`}},
	{"negative limit", pool(`limits: {cpu: "-1"}`),
		[]string{`spec.limits`, "limits must not be negative"}},
	{"weight 0", pool(`weight: 0`),
		[]string{`spec.weight`, "greater than or equal to 1"}},
	{"weight 101", pool(`weight: 101`),
		[]string{`spec.weight`, "less than or equal to 100"}},
	{"v1beta1 consolidation policy", pool(`disruption: {consolidationPolicy: WhenUnderutilized}`),
		[]string{`spec.disruption.consolidationPolicy`, `Unsupported value: "WhenUnderutilized"`}},
	{"budget schedule without duration", pool(`disruption: {budgets: [{nodes: "0", schedule: "@daily"}]}`),
		[]string{`spec.disruption.budgets[0].duration`, "a budget with a schedule needs a duration"}},
	{"budget duration without schedule", pool(`disruption: {budgets: [{nodes: "10%", duration: 1h}]}`),
		[]string{`spec.disruption.budgets[0].schedule`, "a budget with a duration needs a schedule"}},
	{"budget nodes 150%", pool(`disruption: {budgets: [{nodes: "150%"}]}`),
		[]string{`spec.disruption.budgets[0].nodes`, "should match"}},
	{"minSaving percent 200", pool(`disruption: {minSaving: {percent: 200}}`),
		[]string{`spec.disruption.minSaving.percent`, "less than or equal to 100"}},
	{"minSaving perHour not a number", pool(`disruption: {minSaving: {perHour: "one cent"}}`),
		[]string{`spec.disruption.minSaving.perHour`, "should match"}},
	{"commitment of reserved instances without them", commitment(`{type: ReservedInstances, savingsPlan: {commitment: "5", discount: "0.2"}}`),
		[]string{`spec.reservedInstances`, "reservedInstances is set exactly when type is ReservedInstances"}},
	{"zonal and regional reserved instances", commitment(`{type: ReservedInstances, reservedInstances: {instanceType: m6i.large, instanceCount: 1, region: us-east-1, availabilityZone: us-east-1a}}`),
		[]string{`spec.reservedInstances`, "not both"}},
	{"EC2 instance savings plan without a family", commitment(`{type: EC2InstanceSavingsPlan, savingsPlan: {commitment: "5", discount: "0.3", region: us-east-1}}`),
		[]string{`spec.savingsPlan`, "names its instanceFamily and region"}},
	{"savings plan without rates or discount", commitment(`{type: ComputeSavingsPlan, savingsPlan: {commitment: "5"}}`),
		[]string{`spec.savingsPlan`, "give the plan's rates or a discount"}},
	{"httpTokens bogus", ec2Class(`metadataOptions: {httpTokens: bogus}`),
		[]string{`spec.metadataOptions.httpTokens`, `Unsupported value: "bogus"`}},
	{"hop limit 0", ec2Class(`metadataOptions: {httpPutResponseHopLimit: 0}`),
		[]string{`spec.metadataOptions.httpPutResponseHopLimit`, "greater than or equal to 1"}},
	{"role and instanceProfile", ec2Class(`instanceProfile: node-profile`),
		[]string{"exactly one of role and instanceProfile must be set"}},
	{"no amiFamily without an alias", strings.Replace(ec2Class(""), "{alias: al2023@latest}", "{id: ami-0123456789abcdef0}", 1),
		[]string{`spec.amiFamily`, "amiFamily is required unless"}},
	{"amiFamily AmazonLinux2", ec2Class(`amiFamily: AmazonLinux2`),
		[]string{`spec.amiFamily`, `Unsupported value: "AmazonLinux2"`}},
	{"subnet term with id and tags", strings.Replace(ec2Class(""), `[{tags: {Name: "private-*"}}]`, `[{id: subnet-123, tags: {a: b}}]`, 1),
		[]string{`spec.subnetSelectorTerms[0]`, "set exactly one of id and tags"}},
	{"no subnet terms", strings.Replace(ec2Class(""), `[{tags: {Name: "private-*"}}]`, `[]`, 1),
		[]string{`spec.subnetSelectorTerms`, "should have at least 1 items"}},
	{"volume size too big", ec2Class(`blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 100Ti}}]`),
		[]string{`spec.blockDeviceMappings[0].ebs.volumeSize`, "should match"}},
	{"kubeReserved gpu", ec2Class(`kubelet: {kubeReserved: {nvidia.com/gpu: "1"}}`),
		[]string{`spec.kubelet.kubeReserved`, "kubeReserved keys must be cpu, memory, ephemeral-storage or pid"}},
	{"systemReserved negative", ec2Class(`kubelet: {systemReserved: {memory: -1Gi}}`),
		[]string{`spec.kubelet.systemReserved.memory`, "should match"}},
	{"evictionHard bogus signal", ec2Class(`kubelet: {evictionHard: {memory.free: 100Mi}}`),
		[]string{`spec.kubelet.evictionHard`, "evictionHard keys must be kubelet eviction signals"}},
	{"evictionHard 150%", ec2Class(`kubelet: {evictionHard: {memory.available: 150%}}`),
		[]string{`spec.kubelet.evictionHard.memory.available`, "should match"}},
	{"evictionSoft without grace period", ec2Class(`kubelet: {evictionSoft: {memory.available: 1Gi}}`),
		[]string{`spec.kubelet`, "every evictionSoft signal needs an evictionSoftGracePeriod"}},
	{"imageGC high below low", ec2Class(`kubelet: {imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 60}`),
		[]string{`spec.kubelet`, "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"}},
	{"imageGC 101", ec2Class(`kubelet: {imageGCHighThresholdPercent: 101}`),
		[]string{`spec.kubelet.imageGCHighThresholdPercent`, "less than or equal to 100"}},
	{"SimNodeClass negative maxPods", `
apiVersion: rightsize.dev/v1alpha1
kind: SimNodeClass
metadata: {name: bad}
spec: {kubelet: {maxPods: -1}}
`, []string{`spec.kubelet.maxPods`, "greater than or equal to 0"}},
	{"NodeClaim without nodeClassRef", `
apiVersion: rightsize.dev/v1alpha1
kind: NodeClaim
metadata: {name: bad}
spec: {requirements: []}
`, []string{`spec.nodeClassRef`, "Required value"}},
	{"SimNodeClass bad capacity type", `
apiVersion: rightsize.dev/v1alpha1
kind: SimNodeClass
metadata: {name: bad}
spec: {insufficientCapacity: [{instanceType: m5.large, capacityType: reserved}]}
`, []string{`spec.insufficientCapacity[0].capacityType`, `Unsupported value: "reserved"`}},
}
