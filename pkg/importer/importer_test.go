package importer

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the testdata/*.out.yaml golden files")

// TestImportGolden converts each testdata/*.in.yaml and the seed walkthrough
// and compares the YAML printed with the golden *.out.yaml, and checks the
// warnings that explain each change. The golden files are also applied to a
// real API server by test/e2e's TestCRDsValidate.
func TestImportGolden(t *testing.T) {
	tests := []struct {
		name  string
		input string
		// warnings are substrings that must each appear in some warning.
		warnings []string
		// warningCount is the exact number of warnings.
		warningCount int
	}{
		{"seed", "../snapshot/testdata/seed", []string{
			`01-ec2nodeclass.yaml: document 1: EC2NodeClass "default": apiVersion karpenter.sh/v1alpha5 never had EC2NodeClass`,
			`spec.amiFamily: AmazonLinux2 became AL2`,
			`spec.amiFamily: AL2 without amiSelectorTerms became amiSelectorTerms: [{alias: al2@latest}]`,
			`02-provisioner.yaml: document 1: Provisioner "default": mixes the v1alpha5 Provisioner layout`,
			`spec.template.spec.nodeClassRef has no kind: EC2NodeClass "default" assumed`,
			`spec.template.spec.expireAfter: Never`,
			`spec.disruption.budgets[0] dropped: a duration (1h) without a schedule, which Karpenter rejects`,
			`the default budget (10% of the nodes at a time) applies`,
			`03-memory-hog.yaml: document 1: Deployment "memory-hog-app" skipped: not a Karpenter kind`,
			`Provisioner "default": given the requirements Karpenter's AWS webhook defaulted v1alpha5 Provisioners to: kubernetes.io/arch In [amd64]`,
		}, 10},
		{"v1alpha5-provisioner", "testdata/v1alpha5-provisioner.in.yaml", []string{
			`spec.requirements[3]: requirement on kubernetes.io/hostname dropped`,
			`spec.providerRef became spec.template.spec.nodeClassRef`,
			`spec.ttlSecondsUntilExpired: 2592000 became spec.template.spec.expireAfter: 720h`,
			`Provisioner "general": spec.kubeletConfiguration moved to EC2NodeClass "general" spec.kubelet`,
			`spec.ttlSecondsAfterEmpty: 30 became spec.disruption.consolidationPolicy: WhenEmpty with consolidateAfter: 30s`,
			`AWSNodeTemplate "general": became EC2NodeClass "general"`,
			`Provisioner "general": given the requirements Karpenter's AWS webhook defaulted v1alpha5 Provisioners to: kubernetes.io/arch In [amd64]`,
		}, 7},
		{"v1alpha5-consolidation", "testdata/v1alpha5-consolidation.in.yaml", []string{
			`Provisioner "consolidated": spec.provider became EC2NodeClass "consolidated"`,
			`no spec.provider.amiFamily or amiSelectorTerms (AL2, Karpenter's old default, assumed) became amiSelectorTerms: [{alias: al2@latest}]`,
			`spec.consolidation.enabled: true became spec.disruption.consolidationPolicy: WhenEmptyOrUnderutilized`,
			`Provisioner "bare": no nodeClassRef, providerRef or provider: spec.template.spec.nodeClassRef names EC2NodeClass "default"`,
			`Provisioner "bare": no consolidation: spec.disruption.consolidateAfter: Never keeps it off`,
			`Provisioner "consolidated": given the requirements Karpenter's AWS webhook defaulted v1alpha5 Provisioners to: karpenter.sh/capacity-type In [on-demand], karpenter.k8s.aws/instance-category In [c m r], karpenter.k8s.aws/instance-generation Gt [2]`,
			`Provisioner "bare": given the requirements Karpenter's AWS webhook defaulted v1alpha5 Provisioners to: kubernetes.io/arch In [amd64], karpenter.k8s.aws/instance-category In [c m r]`,
		}, 9},
		{"v1beta1-nodepool", "testdata/v1beta1-nodepool.in.yaml", []string{
			`NodePool "web": spec.template.spec.kubelet moved to EC2NodeClass "web" spec.kubelet`,
			`spec.disruption.expireAfter moved to spec.template.spec.expireAfter`,
			`consolidationPolicy: WhenUnderutilized became WhenEmptyOrUnderutilized`,
			`EC2NodeClass "web": spec.instanceStorePolicy dropped`,
		}, 4},
		{"v1-nodepool", "testdata/v1-nodepool.in.yaml", []string{
			`items[0]: NodePool "batch": spec.template.metadata.labels: label karpenter.sh/nodepool dropped`,
			`requirements: minValues kept, but the planner does not enforce it yet`,
		}, 2},
		{"v1-15-nodepool", "testdata/v1-15-nodepool.in.yaml", []string{
			`spec.template.spec.requirements[0]: Gte 4 became Gt 3, the same bound on an integer label`,
			`spec.template.spec.requirements[1]: Lte 7 became Lt 8`,
		}, 2},
		{"v1beta1-kubelet-split", "testdata/v1beta1-kubelet-split.in.yaml", []string{
			`NodePool "dense": spec.template.spec.kubelet moved to EC2NodeClass "shared" spec.kubelet`,
			`NodePool "dense-too": spec.template.spec.kubelet moved to EC2NodeClass "shared" spec.kubelet`,
			`NodePool "plain": EC2NodeClass "shared" split: NodePool "plain" has other kubelet settings than NodePool "dense", which shares it; NodePool "plain" now uses EC2NodeClass "shared-plain"`,
		}, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Import([]string{tc.input}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := PrintYAML(&buf, res.Objects); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tc.name+".out.yaml")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got := buf.String(); got != string(want) {
				t.Errorf("output differs from %s (run with -update to accept):\n%s", golden, got)
			}
			all := strings.Join(res.Warnings, "\n")
			for _, w := range tc.warnings {
				if !strings.Contains(all, w) {
					t.Errorf("no warning contains %q; warnings:\n%s", w, all)
				}
			}
			if len(res.Warnings) != tc.warningCount {
				t.Errorf("%d warnings, want %d:\n%s", len(res.Warnings), tc.warningCount, all)
			}
			for _, w := range res.Warnings {
				if strings.Contains(w, "\n") {
					t.Errorf("warning is not one line: %q", w)
				}
			}
		})
	}
}

// TestImportSeedKeepsWorkloadsScheduling checks that the seed's memory-hog,
// which selects karpenter.sh/provisioner-name: default, still matches the
// imported pool's nodes.
func TestImportSeedKeepsWorkloadsScheduling(t *testing.T) {
	res, err := Import([]string{"../snapshot/testdata/seed"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	np := importedPool(t, res)
	labels := np.NodeLabels()
	for k, v := range map[string]string{
		"karpenter.sh/provisioner-name": "default",
		"karpenter.sh/nodepool":         "default",
		"rightsize.dev/nodepool":        "default",
	} {
		if labels[k] != v {
			t.Errorf("node label %s = %q, want %q (labels %v)", k, labels[k], v, labels)
		}
	}
}

func TestImportJSON(t *testing.T) {
	res, err := Import([]string{"../snapshot/testdata/seed"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := PrintJSON(&buf, res.Objects); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		} `json:"items"`
	}
	if err := json.Unmarshal(buf.Bytes(), &list); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, buf.String())
	}
	if list.Kind != "List" || len(list.Items) != 2 || list.Items[0].Kind != "EC2NodeClass" || list.Items[1].Kind != "NodePool" || list.Items[1].APIVersion != "rightsize.dev/v1alpha1" {
		t.Errorf("JSON = %+v", list)
	}
	buf.Reset()
	if err := PrintJSON(&buf, res.Objects[1:]); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "{\n    \"apiVersion\": \"rightsize.dev/v1alpha1\",\n    \"kind\": \"NodePool\"") {
		t.Errorf("one object is not printed alone:\n%s", buf.String())
	}
}

// TestImportStdin reads "-".
func TestImportStdin(t *testing.T) {
	in := strings.NewReader("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: a}\nspec:\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: x}\n")
	res, err := Import([]string{"-"}, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objects) != 1 || len(res.Warnings) != 0 {
		t.Fatalf("objects %d, warnings %v", len(res.Objects), res.Warnings)
	}
}

// crClass is an EC2NodeClass up to its capacityReservationSelectorTerms.
const crClass = "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: c}\nspec:\n  role: r\n  amiSelectorTerms: [{alias: al2023@latest}]\n" +
	"  subnetSelectorTerms: [{tags: {a: b}}]\n  securityGroupSelectorTerms: [{tags: {a: b}}]\n  capacityReservationSelectorTerms: "

func TestImportErrors(t *testing.T) {
	const np = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: a}\n"
	const ref = "  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: x}\n"
	tests := []struct {
		name, input, want string
	}{
		{"no Karpenter objects", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n", "no Karpenter Provisioner, NodePool, EC2NodeClass or AWSNodeTemplate in <stdin>"},
		{"misspelt field", np + "spec:\n  wieght: 5\n" + ref, `<stdin>: document 1 (line 1): NodePool "a": unknown field "spec.wieght"`},
		{"bad quantity", np + "spec:\n  limits: {cpu: lots}\n" + ref, `spec.limits.cpu: invalid quantity`},
		{"bad duration", np + "spec:\n  disruption: {consolidateAfter: 5 minutes}\n" + ref, `spec.disruption.consolidateAfter: want a duration such as 720h, got "5 minutes"`},
		{"sub-second duration", np + "spec:\n  disruption: {consolidateAfter: 1500ms}\n" + ref, `not a whole number of seconds`},
		{"budget in seconds", np + "spec:\n  disruption: {budgets: [{nodes: '1', schedule: '@daily', duration: 90s}]}\n" + ref, `spec.disruption.budgets[0].duration: 90s is not a whole number of minutes`},
		{"weight above 100", np + "spec:\n  weight: 101\n" + ref, `<stdin>: document 1 (line 1): NodePool "a": spec.weight: must be between 1 and 100 (101)`},
		{"Provisioner weight 0", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: p}\nspec: {weight: 0}\n", `Provisioner "p": spec.weight: must be between 1 and 100 (0)`},
		{"budget nodes not a percentage", np + "spec:\n  disruption: {budgets: [{nodes: 'abc%'}]}\n" + ref, `NodePool "a": spec.disruption.budgets[0].nodes: "abc%" is not a count`},
		{"budget nodes above 100%", np + "spec:\n  disruption: {budgets: [{nodes: '101%'}]}\n" + ref, `spec.disruption.budgets[0].nodes: "101%" is not a count`},
		{"budget schedule of six fields", np + "spec:\n  disruption: {budgets: [{nodes: '1', schedule: '0 0 9 * * *', duration: 1h}]}\n" + ref, `NodePool "a": spec.disruption.budgets[0].schedule: "0 0 9 * * *" has 6 fields`},
		{"budget schedule @every", np + "spec:\n  disruption: {budgets: [{nodes: '1', schedule: '@every 5m', duration: 1h}]}\n" + ref, `spec.disruption.budgets[0].schedule: "@every 5m" is not a cron expression of five fields`},
		{"unknown consolidation policy", np + "spec:\n  disruption: {consolidationPolicy: Always}\n" + ref, `spec.disruption.consolidationPolicy: unsupported value "Always"`},
		{"another cloud's node class", np + "spec:\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.azure.com, kind: AKSNodeClass, name: x}\n", `nodeClassRef.kind: AKSNodeClass cannot be imported`},
		{"negative replicas", np + "spec:\n  replicas: -1\n" + ref, `spec.replicas: must not be negative (-1)`},
		{"static pool with a cpu limit", np + "spec:\n  replicas: 3\n  limits: {cpu: '10'}\n" + ref, `spec.limits.cpu: only limits.nodes is allowed on a static NodePool`},
		{"static pool with a weight", np + "spec:\n  replicas: 3\n  weight: 5\n" + ref, `spec.weight: not allowed on a static NodePool`},
		{"Gte without an integer", np + "spec:\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: x}\n      requirements: [{key: k, operator: Gte, values: [x]}]\n", `spec.template.spec.requirements[0]: operator Gte needs an integer, got "x"`},
		{"no name", "apiVersion: karpenter.sh/v1\nkind: NodePool\nspec: {}\n", "metadata.name is required"},
		{"two pools of one name", np + "spec:\n" + ref + "---\n" + np + "spec:\n" + ref, `NodePool "a" was already made from <stdin>: document 1`},
		{"both consolidation and ttlSecondsAfterEmpty", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: p}\nspec: {consolidation: {enabled: true}, ttlSecondsAfterEmpty: 30}\n", "Karpenter rejects that"},
		{"Ubuntu without terms", "apiVersion: karpenter.k8s.aws/v1beta1\nkind: EC2NodeClass\nmetadata: {name: c}\nspec: {amiFamily: Ubuntu, role: r}\n", `spec.amiFamily: "Ubuntu" cannot be imported`},
		{"launch template", "apiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\nmetadata: {name: t}\nspec: {launchTemplate: my-lt}\n", "spec.launchTemplate: launch templates cannot be imported"},
		{"malformed YAML", "apiVersion: karpenter.sh/v1\nkind: [\n", "<stdin>: document 1 (line 1): invalid YAML"},
		{"capacity reservation id with an owner", crClass + "[{id: cr-1234, ownerID: '123456789012'}]\n", `spec.capacityReservationSelectorTerms[0]: id cannot be set with tags, ownerID or instanceMatchCriteria`},
		{"capacity reservation term selecting nothing", crClass + "[{ownerID: '123456789012'}]\n", `spec.capacityReservationSelectorTerms[0]: set tags, id or instanceMatchCriteria`},
		{"capacity reservation by name", crClass + "[{name: my-odcr}]\n", `spec.capacityReservationSelectorTerms[0]: only id, tags, ownerID and instanceMatchCriteria select capacity reservations`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Import([]string{"-"}, strings.NewReader(tc.input))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestImportSkips(t *testing.T) {
	in := `apiVersion: rightsize.dev/v1alpha1
kind: NodePool
metadata: {name: mine}
---
apiVersion: karpenter.sh/v1alpha1
kind: Provisioner
metadata: {name: old}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: c}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: r
  subnetSelectorTerms: [{id: subnet-1}]
  securityGroupSelectorTerms: [{id: sg-1}]
`
	res, err := Import([]string{"-"}, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`<stdin>: document 1: NodePool "mine" skipped: already rightsize.dev/v1alpha1`,
		`<stdin>: document 2: Provisioner "old" skipped: apiVersion karpenter.sh/v1alpha1 is not one import reads`,
	}
	if strings.Join(res.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(res.Warnings, "\n"), strings.Join(want, "\n"))
	}
}

func TestNormalizeDuration(t *testing.T) {
	for in, want := range map[string]string{"720h": "720h", "1440m": "24h", "90s": "1m30s", "0s": "0s", "1h30m": "1h30m", "Never": "Never", "2h0m5s": "2h5s"} {
		if got, err := normalizeDuration("x", in, true); err != nil || got != want {
			t.Errorf("normalizeDuration(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := normalizeDuration("x", "Never", false); err == nil {
		t.Error("Never allowed where it must not be")
	}
}

// TestImportStaticPool maps Karpenter v1.15's spec.replicas onto the
// rightsize.dev NodePool, with its limits.nodes, as a static pool.
func TestImportStaticPool(t *testing.T) {
	in := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: fixed}
spec:
  replicas: 3
  limits: {nodes: "5"}
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: x}
      requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}]
`
	res, err := Import([]string{"-"}, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	np := importedPool(t, res)
	if !np.Static() || *np.Spec.Replicas != 3 {
		t.Errorf("spec.replicas = %v; want 3", np.Spec.Replicas)
	}
	if q := np.Spec.Limits["nodes"]; q.Value() != 5 || len(np.Spec.Limits) != 1 {
		t.Errorf("spec.limits = %v; want nodes: 5 alone", np.Spec.Limits)
	}
	if np.Spec.Weight != nil {
		t.Errorf("spec.weight = %d; a static pool has none", *np.Spec.Weight)
	}
}

// importedPool is the (last) NodePool an import produced.
func importedPool(t *testing.T, res *Result) *v1alpha1.NodePool {
	t.Helper()
	var np *v1alpha1.NodePool
	for _, o := range res.Objects {
		if p, ok := o.(*v1alpha1.NodePool); ok {
			np = p
		}
	}
	if np == nil {
		t.Fatalf("no NodePool imported: %v", res.Objects)
	}
	return np
}
