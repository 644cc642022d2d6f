package snapshot

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

const gi = 1 << 30

func TestReadSeed(t *testing.T) {
	m, err := Read([]string{"testdata/seed"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Pools) != 1 {
		t.Fatalf("pools = %d, want 1", len(m.Pools))
	}
	p := m.Pools[0]
	if p.Name != "default" {
		t.Errorf("pool name = %q", p.Name)
	}
	wantLabels := map[string]string{LabelNodePool: "default", LabelProvisionerName: "default"}
	if !reflect.DeepEqual(p.Labels, wantLabels) {
		t.Errorf("pool labels = %v, want %v", p.Labels, wantLabels)
	}
	wantReqs := []solver.Requirement{
		{Key: "karpenter.sh/capacity-type", Operator: "In", Values: []string{"on-demand", "spot"}},
		{Key: "node.kubernetes.io/instance-type", Operator: "In", Values: []string{"m5.large", "m5.xlarge", "c5.xlarge"}},
		{Key: "kubernetes.io/arch", Operator: "In", Values: []string{"amd64"}}, // Karpenter's v1alpha5 default
	}
	if !reflect.DeepEqual(p.Requirements, wantReqs) {
		t.Errorf("pool requirements = %v, want %v", p.Requirements, wantReqs)
	}
	if !p.HasLimit[solver.CPU] || p.Limits[solver.CPU] != 100_000 || !p.HasLimit[solver.Memory] || p.Limits[solver.Memory] != 500*gi {
		t.Errorf("pool limits = %v %v, want cpu 100 and memory 500Gi", p.Limits, p.HasLimit)
	}
	if p.HasLimit[solver.Pods] {
		t.Errorf("pool has a pods limit")
	}
	if !reflect.DeepEqual(m.NodeClasses, []string{"default"}) {
		t.Errorf("node classes = %v", m.NodeClasses)
	}
	if !hasWarning(m, "01-ec2nodeclass.yaml: document 1: ", "karpenter.k8s.aws/v1") {
		t.Errorf("no apiVersion warning for the EC2NodeClass in %q", m.Warnings)
	}
	if hasWarning(m, "nodeClassRef") {
		t.Errorf("nodeClassRef warned although the class is in the input: %q", m.Warnings)
	}
	if len(m.Pods) != 1 {
		t.Fatalf("pods = %d, want 1", len(m.Pods))
	}
	pod := m.Pods[0]
	if pod.Key() != "default/memory-hog-app-0" || pod.Owner != "Deployment/memory-hog-app" {
		t.Errorf("pod = %s owner %s", pod.Key(), pod.Owner)
	}
	if want := (solver.Resources{solver.CPU: 4000, solver.Memory: 16 * gi, solver.Pods: 1}); pod.Requests != want {
		t.Errorf("pod requests = %v, want %v", pod.Requests, want)
	}
	wantAff := []solver.Term{{{Key: LabelProvisionerName, Operator: "In", Values: []string{"default"}}}}
	if !reflect.DeepEqual(pod.Affinity, wantAff) {
		t.Errorf("pod affinity = %v, want %v", pod.Affinity, wantAff)
	}
}

func hasWarning(m *Manifests, parts ...string) bool {
	for _, w := range m.Warnings {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(w, p)
		}
		if ok {
			return true
		}
	}
	return false
}

// pod is a compact expectation: key, owner and requests.
type pod struct {
	key, owner string
	req        solver.Resources
}

func res(cpu, mem int64, more ...int64) solver.Resources {
	r := solver.Resources{solver.CPU: cpu, solver.Memory: mem, solver.Pods: 1}
	for i := 0; i+1 < len(more); i += 2 {
		r[more[i]] = more[i+1]
	}
	return r
}

const container = `
    metadata: {labels: {app: x}}
    spec:
      containers:
      - name: c
        image: x
        resources:
          requests: {cpu: 500m, memory: 1Gi}
`

func TestDecodeWorkloads(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		pods     []pod
		ds       int
		warnings []string // substrings, each in some warning
	}{
		{name: "pod", in: `
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns}
spec:
  containers:
  - name: c
    resources: {requests: {cpu: "1", memory: 2Gi}}
`, pods: []pod{{"ns/p", "Pod/p", res(1000, 2*gi)}}},
		{name: "deployment replicas and default namespace", in: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: x}}
  template:` + container,
			pods: []pod{{"default/web-0", "Deployment/web", res(500, gi)}, {"default/web-1", "Deployment/web", res(500, gi)}, {"default/web-2", "Deployment/web", res(500, gi)}}},
		{name: "statefulset default replicas", in: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: data}
spec:
  selector: {matchLabels: {app: x}}
  template:` + container,
			pods: []pod{{"data/db-0", "StatefulSet/db", res(500, gi)}}},
		{name: "replicaset", in: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec:
  replicas: 2
  selector: {matchLabels: {app: x}}
  template:` + container,
			pods: []pod{{"default/rs-0", "ReplicaSet/rs", res(500, gi)}, {"default/rs-1", "ReplicaSet/rs", res(500, gi)}}},
		// The API server refuses an apps/v1 workload whose selector is
		// missing, empty or does not select its template; offline it is
		// planned, with a warning. A ReplicationController's is optional.
		{name: "deployment without a selector warns", in: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:` + container,
			pods:     []pod{{"default/web-0", "Deployment/web", res(500, gi)}},
			warnings: []string{`Deployment "web": spec.selector is missing: the API server refuses an apps/v1 workload without one (planned anyway)`}},
		{name: "empty selector warns", in: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  selector: {}
  template:` + container,
			pods:     []pod{{"default/db-0", "StatefulSet/db", res(500, gi)}},
			warnings: []string{`StatefulSet "db": spec.selector is empty: the API server refuses it (planned anyway)`}},
		{name: "selector not matching the template warns", in: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchExpressions: [{key: app, operator: In, values: [other]}]}
  template:` + container, ds: 1,
			warnings: []string{`DaemonSet "agent": spec.selector app in (other) does not match spec.template.metadata.labels app=x: the API server refuses it (planned anyway)`}},
		{name: "replicationcontroller", in: `
apiVersion: v1
kind: ReplicationController
metadata: {name: rc}
spec:
  template:` + container,
			pods: []pod{{"default/rc-0", "ReplicationController/rc", res(500, gi)}}},
		{name: "zero replicas", in: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 0
  selector: {matchLabels: {app: x}}
  template:` + container},
		{name: "job parallelism capped by completions", in: `
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  parallelism: 5
  completions: 2
  template:` + container,
			pods: []pod{{"default/j-0", "Job/j", res(500, gi)}, {"default/j-1", "Job/j", res(500, gi)}}},
		{name: "job defaults to one pod", in: `
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  template:` + container,
			pods: []pod{{"default/j-0", "Job/j", res(500, gi)}}},
		{name: "suspended job", in: `
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  suspend: true
  template:` + container, warnings: []string{`Job "j" skipped: suspended`}},
		{name: "cronjob", in: `
apiVersion: batch/v1
kind: CronJob
metadata: {name: cj, namespace: batch}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      parallelism: 2
      template:
        spec:
          containers:
          - name: c
            resources: {requests: {cpu: 250m}}
`, pods: []pod{{"batch/cj-0", "CronJob/cj", res(250, 0)}, {"batch/cj-1", "CronJob/cj", res(250, 0)}}},
		{name: "suspended cronjob", in: `
apiVersion: batch/v1
kind: CronJob
metadata: {name: cj}
spec:
  schedule: "@daily"
  suspend: true
  jobTemplate: {spec: {template: {spec: {containers: [{name: c}]}}}}
`, warnings: []string{`CronJob "cj" skipped: suspended`}},
		{name: "daemonset is overhead", in: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: x}}
  template:` + container, ds: 1},
		{name: "bound pod skipped", in: `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {nodeName: n1, containers: [{name: c}]}
`, warnings: []string{`Pod "p" skipped: already bound to node "n1"`}},
		{name: "finished pods skipped", in: `
apiVersion: v1
kind: Pod
metadata: {name: a}
spec: {containers: [{name: c}]}
status: {phase: Succeeded}
---
apiVersion: v1
kind: Pod
metadata: {name: b}
spec: {containers: [{name: c}]}
status: {phase: Failed}
`, warnings: []string{`document 1: Pod "a" skipped: phase Succeeded`, `document 2: Pod "b" skipped: phase Failed`}},
		{name: "limits default requests", in: `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    resources:
      requests: {cpu: 100m}
      limits: {cpu: "2", memory: 3Gi, nvidia.com/gpu: 1}
`, pods: []pod{{"default/p", "Pod/p", res(100, 3*gi, solver.GPU, 1)}}},
		{name: "init containers, sidecars and overhead", in: `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  overhead: {cpu: 10m, memory: 1Mi}
  initContainers:
  - name: init
    resources: {requests: {cpu: "2", memory: 1Gi}}
  - name: sidecar
    restartPolicy: Always
    resources: {requests: {cpu: 100m, memory: 1Gi}}
  containers:
  - name: a
    resources: {requests: {cpu: 500m, memory: 2Gi, ephemeral-storage: 1Gi}}
  - name: b
    resources: {requests: {cpu: 500m, memory: 2Gi, hugepages-2Mi: 2Mi}, limits: {hugepages-2Mi: 2Mi}}
`, pods: []pod{{"default/p", "Pod/p", res(2010, 5*gi+1<<20, solver.EphemeralStorage, gi)}}},
		{name: "extended resources get indices", in: `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    resources: {limits: {vendor.com/fpga: 2, example.com/dongle: 1}}
`, pods: []pod{{"default/p", "Pod/p", res(0, 0, solver.NumFixedResources, 1, solver.NumFixedResources+1, 2)}}},
		{name: "unknown kinds and apiVersions are skipped", in: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: s}
---
apiVersion: extensions/v1beta1
kind: Deployment
metadata: {name: old}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data: {a: b}
`, warnings: []string{"document 1: kind Widget skipped: not supported", `document 2: Deployment "old" skipped: apiVersion extensions/v1beta1 is not supported`}},
		{name: "list", in: `
apiVersion: v1
kind: List
metadata: {resourceVersion: ""}
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: a}
  spec: {containers: [{name: c, resources: {requests: {cpu: 1}}}]}
- apiVersion: example.com/v1
  kind: Widget
  metadata: {name: s}
`, pods: []pod{{"default/a", "Pod/a", res(1000, 0)}}, warnings: []string{"document 1: items[1]: kind Widget skipped"}},
		{name: "a typed list, whatever its apiVersion, is read as a list (kube-prometheus ships a RoleList)", in: `
apiVersion: apps/v1
kind: DeploymentList
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: d}
  spec:
    replicas: 2
    selector: {matchLabels: {app: d}}
    template:
      metadata: {labels: {app: d}}
      spec: {containers: [{name: c, resources: {requests: {cpu: 1}}}]}
`, pods: []pod{{"default/d-0", "Deployment/d", res(1000, 0)}, {"default/d-1", "Deployment/d", res(1000, 0)}}},
		{name: "json documents separated by ---", in: `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": [{"name": "c"}]}}
---
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b"}, "spec": {"containers": [{"name": "c"}]}}
---
`,
			pods: []pod{{"default/a", "Pod/a", res(0, 0)}, {"default/b", "Pod/b", res(0, 0)}}},
		{name: "json stream", in: `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": [{"name": "c"}]}}
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b"}, "spec": {"containers": [{"name": "c"}]}}`,
			pods: []pod{{"default/a", "Pod/a", res(0, 0)}, {"default/b", "Pod/b", res(0, 0)}}},
		{name: "empty documents and comments", in: "---\n# nothing\n---\n\n...\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c}]}\n---\n~\n",
			pods: []pod{{"default/a", "Pod/a", res(0, 0)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Manifests{}
			if err := Decode("in.yaml", []byte(tt.in), m); err != nil {
				t.Fatal(err)
			}
			var got []pod
			for _, p := range m.Pods {
				got = append(got, pod{p.Key(), p.Owner, p.Requests})
			}
			if !reflect.DeepEqual(got, tt.pods) {
				t.Errorf("pods = %v\nwant %v", got, tt.pods)
			}
			if len(m.DaemonSets) != tt.ds {
				t.Errorf("daemonsets = %d, want %d", len(m.DaemonSets), tt.ds)
			}
			for _, w := range tt.warnings {
				if !hasWarning(m, "in.yaml: ", w) {
					t.Errorf("no warning %q in %q", w, m.Warnings)
				}
			}
			if len(tt.warnings) == 0 && len(m.Warnings) > 0 {
				t.Errorf("unexpected warnings %q", m.Warnings)
			}
		})
	}
}

func TestDecodeScheduling(t *testing.T) {
	in := `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  template:
    spec:
      nodeSelector: {kubernetes.io/arch: arm64}
      tolerations:
      - {key: gpu, operator: Exists, effect: NoSchedule}
      - {key: team, value: a}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: topology.kubernetes.io/zone, operator: In, values: [a, b]}
              - {key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["3"]}
            - matchFields:
              - {key: metadata.name, operator: In, values: [n1]}
            - matchExpressions:
              - {key: spot, operator: DoesNotExist}
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: kubernetes.io/hostname
            labelSelector: {matchLabels: {app: web}}
      containers: [{name: c}]
`
	m := &Manifests{}
	if err := Decode("in.yaml", []byte(in), m); err != nil {
		t.Fatal(err)
	}
	if len(m.Pods) != 2 {
		t.Fatalf("pods = %d", len(m.Pods))
	}
	p := m.Pods[0]
	if want := map[string]string{"kubernetes.io/arch": "arm64"}; !reflect.DeepEqual(p.NodeSelector, want) {
		t.Errorf("nodeSelector = %v", p.NodeSelector)
	}
	wantTol := []solver.Toleration{{Key: "gpu", Operator: "Exists", Effect: "NoSchedule"}, {Key: "team", Value: "a"}}
	if !reflect.DeepEqual(p.Tolerations, wantTol) {
		t.Errorf("tolerations = %v, want %v", p.Tolerations, wantTol)
	}
	wantAff := []solver.Term{
		{{Key: "topology.kubernetes.io/zone", Operator: "In", Values: []string{"a", "b"}}, {Key: "karpenter.k8s.aws/instance-cpu", Operator: "Gt", Values: []string{"3"}}},
		// matchFields metadata.name: the node's hostname label.
		{{Key: "kubernetes.io/hostname", Operator: "In", Values: []string{"n1"}}},
		{{Key: "spot", Operator: "DoesNotExist"}},
	}
	if !reflect.DeepEqual(p.Affinity, wantAff) {
		t.Errorf("affinity = %v, want %v", p.Affinity, wantAff)
	}
	wantAnti := []solver.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname", Selector: solver.Selector{MatchLabels: map[string]string{"app": "web"}}}}
	if !reflect.DeepEqual(p.PodAntiAffinity, wantAnti) {
		t.Errorf("pod anti-affinity = %+v, want %+v", p.PodAntiAffinity, wantAnti)
	}
	if !p.Controller {
		t.Errorf("a Deployment's pod has no controller")
	}
	// Pods of one workload must not share mutable state.
	m.Pods[1].NodeSelector["x"] = "y"
	m.Pods[1].Affinity[0][0].Values[0] = "z"
	if len(p.NodeSelector) != 1 || p.Affinity[0][0].Values[0] != "a" {
		t.Errorf("pods share maps or slices")
	}
}

func TestDecodeTopology(t *testing.T) {
	in := `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  template:
    metadata:
      labels: {app: web}
    spec:
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}, minDomains: 3}
      - {maxSkew: 2, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchExpressions: [{key: app, operator: In, values: [web]}]}}
      affinity:
        nodeAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 20
            preference: {matchExpressions: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]}
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - {topologyKey: topology.kubernetes.io/zone, labelSelector: {matchLabels: {app: db}}, namespaces: [data]}
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: web}}}
      containers: [{name: c}]
`
	m := &Manifests{}
	if err := Decode("in.yaml", []byte(in), m); err != nil {
		t.Fatal(err)
	}
	p := m.Pods[0]
	if p.Labels["app"] != "web" {
		t.Errorf("labels = %v", p.Labels)
	}
	wantSpread := []solver.TopologySpread{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: "DoNotSchedule", MinDomains: 3, Selector: solver.Selector{MatchLabels: map[string]string{"app": "web"}}}}
	if !reflect.DeepEqual(p.Spread, wantSpread) {
		t.Errorf("spread = %+v, want %+v", p.Spread, wantSpread)
	}
	wantAff := []solver.PodAffinityTerm{{TopologyKey: "topology.kubernetes.io/zone", Namespaces: []string{"data"}, Selector: solver.Selector{MatchLabels: map[string]string{"app": "db"}}}}
	if !reflect.DeepEqual(p.PodAffinity, wantAff) {
		t.Errorf("pod affinity = %+v, want %+v", p.PodAffinity, wantAff)
	}
	kinds := map[string]int32{}
	for _, pref := range p.Preferences {
		kinds[pref.Kind] = pref.Weight
	}
	want := map[string]int32{solver.PreferScheduleAnywaySpread: 1, solver.PreferNodeAffinity: 20, solver.PreferPodAntiAffinity: 100}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("preferences = %v, want %v", kinds, want)
	}
}

func TestDecodeTopologyErrors(t *testing.T) {
	tests := []struct{ name, spec, want string }{
		{"maxSkew", "topologySpreadConstraints: [{maxSkew: 0, topologyKey: k, whenUnsatisfiable: DoNotSchedule}]", "maxSkew: must be at least 1"},
		{"policy", "topologySpreadConstraints: [{maxSkew: 1, topologyKey: k, whenUnsatisfiable: Maybe}]", "whenUnsatisfiable: unsupported value"},
		{"term key", "affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {}}]}}", "topologyKey: required"},
		{"selector op", "affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: k, labelSelector: {matchExpressions: [{key: a, operator: Gt}]}}]}}", "operator: unsupported value"},
		{"weight", "affinity: {podAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 0, podAffinityTerm: {topologyKey: k}}]}}", "weight: must be 1-100"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  " + tc.spec + "\n  containers: [{name: c}]\n"
			err := Decode("in.yaml", []byte(in), &Manifests{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDecodePools(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     solver.Pool
		classes  []string
		warnings []string
	}{
		{name: "v1 NodePool", in: `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  weight: 10
  template:
    metadata:
      labels: {team: a}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: 720h
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, c5], minValues: 2}
      taints: [{key: dedicated, value: a, effect: NoSchedule}]
      startupTaints: [{key: init, effect: NoExecute}]
  limits: {cpu: 1000, memory: 1000Gi, nvidia.com/gpu: 4}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
    budgets: [{nodes: "10%"}, {nodes: "0", schedule: "@daily", duration: 10m}]
`, want: solver.Pool{
			Name: "general", Weight: 10,
			Requirements: []solver.Requirement{
				{Key: "kubernetes.io/arch", Operator: "In", Values: []string{"amd64"}},
				{Key: "karpenter.k8s.aws/instance-family", Operator: "In", Values: []string{"m5", "c5"}},
			},
			MinValues:     map[string]int{"karpenter.k8s.aws/instance-family": 2},
			Labels:        map[string]string{"team": "a", LabelNodePool: "general"},
			Taints:        []solver.Taint{{Key: "dedicated", Value: "a", Effect: "NoSchedule"}},
			StartupTaints: []solver.Taint{{Key: "init", Effect: "NoExecute"}},
			Limits:        solver.Resources{solver.CPU: 1_000_000, solver.Memory: 1000 * gi, solver.GPU: 4},
			HasLimit:      [solver.MaxResources]bool{solver.CPU: true, solver.Memory: true, solver.GPU: true},
			Consolidation: solver.Consolidation{Policy: solver.WhenEmptyOrUnderutilized, After: time.Minute, NodesAllowed: -1},
		}, warnings: []string{`nodeClassRef "default" is not in the input`}},
		{name: "v1beta1 NodePool", in: `
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: b}
spec:
  template:
    spec:
      nodeClassRef: {apiVersion: karpenter.k8s.aws/v1beta1, kind: EC2NodeClass, name: default}
      kubelet: {maxPods: 110}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]
  limits: {cpu: "8"}
  disruption: {consolidationPolicy: WhenUnderutilized, expireAfter: Never}
---
apiVersion: karpenter.k8s.aws/v1beta1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiFamily: AL2
  role: r
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{id: sg-1}]
`, want: solver.Pool{
			Name:          "b",
			Requirements:  []solver.Requirement{{Key: "karpenter.sh/capacity-type", Operator: "In", Values: []string{"spot"}}},
			Labels:        map[string]string{LabelNodePool: "b"},
			Limits:        solver.Resources{solver.CPU: 8000},
			HasLimit:      [solver.MaxResources]bool{solver.CPU: true},
			Consolidation: solver.Consolidation{Policy: solver.WhenEmptyOrUnderutilized, NodesAllowed: -1},
		}, classes: []string{"default"}},
		{name: "rightsize.dev NodePool and its node class", in: `
apiVersion: rightsize.dev/v1alpha1
kind: NodePool
metadata: {name: ours}
spec:
  template:
    metadata:
      labels: {team: a}
    spec:
      nodeClassRef: {group: rightsize.dev, kind: SimNodeClass, name: sim}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]
  disruption:
    consolidateAfter: 30s
    minSaving: {perHour: "0.05"}
---
apiVersion: rightsize.dev/v1alpha1
kind: SimNodeClass
metadata: {name: sim}
spec:
  kubelet: {maxPods: 8}
`, want: solver.Pool{
			Name:          "ours",
			Requirements:  []solver.Requirement{{Key: "karpenter.sh/capacity-type", Operator: "In", Values: []string{"spot"}}},
			Labels:        map[string]string{"team": "a", LabelNodePool: "ours", v1alpha1.LabelNodePool: "ours"},
			Consolidation: solver.Consolidation{Policy: solver.WhenEmptyOrUnderutilized, After: 30 * time.Second, NodesAllowed: -1, MinSaving: 0.05, MinSavingSet: true},
		}, classes: []string{"sim"}},
		{name: "v1alpha5 Provisioner, flat layout", in: `
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: old}
spec:
  weight: 50
  labels: {env: prod}
  requirements: [{key: node.kubernetes.io/instance-type, operator: NotIn, values: [t3.nano]}]
  taints: [{key: a, effect: PreferNoSchedule}]
  startupTaints: [{key: b, effect: NoSchedule}]
  providerRef: {name: default}
  ttlSecondsAfterEmpty: 30
  consolidation: {enabled: false}
  limits: {resources: {cpu: 1k, pods: 500}}
`, want: solver.Pool{
			Name: "old", Weight: 50,
			Requirements: []solver.Requirement{{Key: "node.kubernetes.io/instance-type", Operator: "NotIn", Values: []string{"t3.nano"}},
				// Karpenter's AWS webhook defaults for a v1alpha5 Provisioner.
				{Key: "karpenter.sh/capacity-type", Operator: "In", Values: []string{"on-demand"}},
				{Key: "kubernetes.io/arch", Operator: "In", Values: []string{"amd64"}}},
			Labels:        map[string]string{"env": "prod", LabelNodePool: "old", LabelProvisionerName: "old"},
			Taints:        []solver.Taint{{Key: "a", Effect: "PreferNoSchedule"}},
			StartupTaints: []solver.Taint{{Key: "b", Effect: "NoSchedule"}},
			Limits:        solver.Resources{solver.CPU: 1_000_000, solver.Pods: 500},
			HasLimit:      [solver.MaxResources]bool{solver.CPU: true, solver.Pods: true},
			Consolidation: solver.Consolidation{Policy: solver.WhenEmpty, After: 30 * time.Second, NodesAllowed: -1},
		}, warnings: []string{`Provisioner "old": planned with the requirements Karpenter's AWS webhook defaulted v1alpha5 Provisioners to: karpenter.sh/capacity-type In [on-demand], kubernetes.io/arch In [amd64]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "pool.yaml"), tt.in)
			writeFile(t, filepath.Join(dir, "pod.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n")
			m, err := Read([]string{dir}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Pools) != 1 {
				t.Fatalf("pools = %d", len(m.Pools))
			}
			if !reflect.DeepEqual(m.Pools[0], tt.want) {
				t.Errorf("pool =\n%+v\nwant\n%+v", m.Pools[0], tt.want)
			}
			if k := m.Kubelets[tt.want.Name]; tt.want.Name == "ours" && (k == nil || k.MaxPods == nil || *k.MaxPods != 8) {
				t.Errorf("pool ours kubelet = %+v, want the SimNodeClass's maxPods 8", k)
			}
			if !reflect.DeepEqual(m.NodeClasses, tt.classes) {
				t.Errorf("classes = %v, want %v", m.NodeClasses, tt.classes)
			}
			for _, w := range tt.warnings {
				if !hasWarning(m, "pool.yaml: document 1: ", w) {
					t.Errorf("no warning %q in %q", w, m.Warnings)
				}
			}
			if len(tt.warnings) == 0 && len(m.Warnings) > 0 {
				t.Errorf("unexpected warnings %q", m.Warnings)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: ok}\nspec: {containers: [{name: c}]}\n---\n"
	tests := []struct {
		name string
		in   string
		want string // the error is "in.yaml: document N (line L): " + want...
	}{
		{"malformed YAML", pod + "apiVersion: v1\nkind: Pod\n  bad: [\n", "document 2 (line 6): invalid YAML: yaml: line 8:"},
		{"malformed JSON", `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": [{"name": "c"}]}}` + "\n{\"kind\": ", "document 2 (line 2): invalid JSON"},
		{"helm template", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: {{ .Values.replicaCount }}\n",
			"document 1 (line 1): invalid YAML: yaml: invalid map key: map[interface {}]interface {}{\".Values.replicaCount\":interface {}(nil)}; this looks like a Helm template: render it first: helm template RELEASE CHART | kubectl rightsize explain -f -"},
		{"helm template that parses", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {cpu: \"{{ .Values.cpu }}\"}}\n",
			`invalid quantity "{{ .Values.cpu }}"; this looks like a Helm template: render it first`},
		{"duplicate key", "apiVersion: v1\nkind: Pod\nkind: Pod\n", "document 1 (line 1): invalid YAML"},
		{"not an object", "- a\n- b\n", "document 1 (line 1): expected a Kubernetes object, got a list"},
		{"missing kind", "apiVersion: v1\nmetadata: {name: a}\n", "document 1 (line 1): kind is missing"},
		{"missing apiVersion", "kind: Pod\nmetadata: {name: a}\n", `document 1 (line 1): Pod "a": apiVersion is missing`},
		{"kind not a string", "apiVersion: v1\nkind: [Pod]\n", "kind: expected a string, got a list"},
		{"unknown field", pod + "# comment\n\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replica: 3\n  template: {spec: {containers: [{name: c}]}}\n",
			`document 2 (line 8): Deployment "web": unknown field "spec.replica"`},
		{"unknown field of our NodePool", "apiVersion: rightsize.dev/v1alpha1\nkind: NodePool\nmetadata: {name: x}\nspec: {bogus: 1}\n", `NodePool "x": unknown field "spec.bogus"`},
		{"wrong case field", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  Replicas: 3\n", `unknown field "spec.Replicas"`},
		{"bad quantity", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {cpu: 2 cores}}\n",
			`document 1 (line 1): Pod "p": spec.containers[0].resources.requests.cpu: invalid quantity "2 cores"`},
		{"negative request", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {memory: -1Gi}}\n",
			`Pod "p": spec.containers[0].resources.requests.memory: must not be negative (-1Gi)`},
		{"request above its limit", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {cpu: \"1\"}, limits: {cpu: 500m}}\n",
			`Pod "p": spec.containers[0].resources.requests.cpu: 1 is above the limit of 500m; the API server refuses such a pod`},
		{"pod-level request above its limit", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  resources: {requests: {memory: 2Gi}, limits: {memory: 1Gi}}\n  containers: [{name: c}]\n",
			`Pod "p": spec.resources.requests.memory: 2Gi is above the limit of 1Gi`},
		{"unsupported resource", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {cpus: 1}}\n",
			`spec.containers[0].resources.requests: unsupported resource "cpus"`},
		{"a quantity beyond the largest", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {memory: 999999999999Ei}}\n",
			`Pod "p": spec.containers[0].resources.requests.memory: too large: a quantity stops at 8Ei`},
		{"huge request", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {cpu: 1E}}\n", "too large"},
		{"pod without containers", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n", `Pod "p": spec.containers: required; the API server refuses a pod without containers`},
		{"deployment without containers", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {template: {spec: {containers: []}}}\n", `Deployment "web": spec.template.spec.containers: required`},
		{"fraction of a GPU", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources: {limits: {nvidia.com/gpu: \"1.5\"}}\n",
			`Pod "p": spec.containers[0].resources.limits.nvidia.com/gpu: 1500m is not a whole number`},
		{"fraction of a GPU requested", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {nvidia.com/gpu: 500m}, limits: {nvidia.com/gpu: 500m}}\n",
			`spec.containers[0].resources.limits.nvidia.com/gpu: 500m is not a whole number`},
		{"no replicas, still a fraction of a GPU", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 0\n  template: {spec: {containers: [{name: c, resources: {limits: {amd.com/gpu: 0.5}}}]}}\n",
			`Deployment "web": spec.template.spec.containers[0].resources.limits.amd.com/gpu: 500m is not a whole number`},
		{"GPU requested without a limit", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {nvidia.com/gpu: 1}}\n",
			`Pod "p": spec.containers[0].resources.limits.nvidia.com/gpu: required, equal to the request of 1`},
		{"GPU request below its limit", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  initContainers:\n  - name: i\n    resources: {requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 2}}\n  containers: [{name: c}]\n",
			`Pod "p": spec.initContainers[0].resources.requests.nvidia.com/gpu: 1 differs from the limit of 2`},
		{"hugepages request below its limit", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {hugepages-2Mi: 2Mi}, limits: {hugepages-2Mi: 4Mi}}\n",
			`spec.containers[0].resources.requests.hugepages-2Mi: 2Mi differs from the limit of 4Mi`},
		{"two pods of one name", pod + pod, `document 2 (line 6): Pod ok is also in in.yaml: document 1; the API server keeps one object per kind, namespace and name`},
		{"two deployments of one namespace and name", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec: {template: {spec: {containers: [{name: c}]}}}\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: web, namespace: shop}\n  spec: {template: {spec: {containers: [{name: c}]}}}\n",
			`document 2 (line 6): items[0]: Deployment shop/web is also in in.yaml: document 1`},
		{"negative replicas", pod + "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: -3\n  template: {spec: {containers: [{name: c}]}}\n",
			`document 2 (line 6): Deployment "web": spec.replicas: must not be negative (-3)`},
		{"negative parallelism", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  parallelism: -1\n  template: {spec: {containers: [{name: c}]}}\n",
			`Job "j": spec.parallelism: must not be negative (-1)`},
		{"missing name", "apiVersion: apps/v1\nkind: Deployment\nspec: {template: {spec: {containers: [{name: c}]}}}\n", "Deployment: metadata.name is required"},
		{"bad operator", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c}]\n  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Within, values: [b]}]}]}}}\n",
			`nodeSelectorTerms[0].matchExpressions[0].operator: unsupported value "Within"`},
		{"Gt needs an integer", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c}]\n  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Gt, values: [x]}]}]}}}\n",
			`operator Gt needs an integer`},
		{"bad toleration", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c}]\n  tolerations: [{key: a, operator: Maybe}]\n", `spec.tolerations[0].operator: unsupported value "Maybe"`},
		{"unknown pool field", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec:\n  template: {spec: {requirments: []}}\n",
			`NodePool "np": unknown field "spec.template.spec.requirments"`},
		{"provisioner field in NodePool", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec:\n  requirements: []\n",
			`NodePool "np": spec.requirements: a v1alpha5 Provisioner field`},
		{"limits.resources in NodePool", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec:\n  limits: {resources: {cpu: 1}}\n",
			`spec.limits.resources: a v1alpha5 Provisioner field`},
		{"bad pool limit", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec:\n  limits: {cpu: lots}\n",
			`NodePool "np": spec.limits.cpu: invalid quantity "lots"`},
		{"bad provisioner limit", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: p}\nspec:\n  limits: {resources: {memory: 1Zi}}\n",
			`Provisioner "p": spec.limits.resources.memory: invalid quantity "1Zi"`},
		{"bad taint effect", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec:\n  template: {spec: {taints: [{key: a, effect: Never}]}}\n",
			`spec.template.spec.taints[0].effect: unsupported value "Never"`},
		{"bad weight", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec: {weight: 101}\n", "spec.weight: must be between 1 and 100"},
		{"bad duration", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec: {disruption: {consolidateAfter: soon}}\n", `spec.disruption.consolidateAfter: want a duration`},
		{"weight 0 of our NodePool", "apiVersion: rightsize.dev/v1alpha1\nkind: NodePool\nmetadata: {name: np}\nspec: {weight: 0, template: {spec: {nodeClassRef: {group: rightsize.dev, kind: SimNodeClass, name: c}}}}\n", `NodePool "np": spec.weight: must be between 1 and 100 (0)`},
		{"budget nodes not a percentage", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec: {disruption: {budgets: [{nodes: \"abc%\"}]}}\n", `NodePool "np": spec.disruption.budgets[0].nodes: "abc%" is not a count`},
		{"budget schedule @every", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec: {disruption: {budgets: [{nodes: \"1\", schedule: \"@every 5m\", duration: 1h}]}}\n", `NodePool "np": spec.disruption.budgets[0].schedule: "@every 5m" is not a cron expression of five fields`},
		{"budget schedule of six fields", "apiVersion: rightsize.dev/v1alpha1\nkind: NodePool\nmetadata: {name: np}\nspec: {template: {spec: {nodeClassRef: {group: rightsize.dev, kind: SimNodeClass, name: c}}}, disruption: {budgets: [{nodes: \"1\", schedule: \"0 0 9 * * *\", duration: 1h}]}}\n", `NodePool "np": spec.disruption.budgets[0].schedule: "0 0 9 * * *" has 6 fields`},
		{"budget duration in seconds", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec: {disruption: {budgets: [{nodes: \"1\", schedule: \"@daily\", duration: 90s}]}}\n", `NodePool "np": spec.disruption.budgets[0].duration: "90s" is not hours and minutes`},
		{"unknown EC2NodeClass field", "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: c}\nspec: {subnetSelector: {a: b}}\n", `EC2NodeClass "c": unknown field "spec.subnetSelector"`},
		{"wrong type", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: three\n", `Deployment "web": spec.replicas: expected a number, got string`},
		{"too many pods", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2000000000\n  template: {spec: {containers: [{name: c}]}}\n", `document 1 (line 1): Deployment "web": 2000000000 pods would make 2000000000 in all, more than the 100000 supported`},
		{"nested list", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: List, items: []}\n", `items[0]: a List in a List is not supported`},
		{"bad list item", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec: {foo: 1}\n", `document 1 (line 1): items[0]: Pod "p": unknown field "spec.foo"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Decode("in.yaml", []byte(tt.in), &Manifests{Strict: true})
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			msg := err.Error()
			t.Log(msg)
			if !strings.HasPrefix(msg, "in.yaml: document ") || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q\nwant it to contain %q", msg, tt.want)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error has several lines: %q", msg)
			}
		})
	}
}

func TestSkippedObjectsSummed(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "app.yaml")
	doc := func(apiVersion, kind, name string) string {
		return fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata: {name: %s}\n---\n", apiVersion, kind, name)
	}
	data := doc("v1", "Service", "a") + doc("v1", "Service", "b") + doc("v1", "ConfigMap", "c") + doc("rbac.authorization.k8s.io/v1", "ClusterRole", "d") +
		doc("monitoring.coreos.com/v1", "Prometheus", "k8s") + doc("monitoring.coreos.com/v1", "Alertmanager", "main") + doc("example.com/v1", "Widget", "w") +
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n---\n" +
		"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleList\nitems:\n- {apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: r}}\n"
	if err := os.WriteFile(in, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Read([]string{in}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		in + ": document 7: kind Widget skipped: not supported",
		"skipped 5 object(s) of 4 kind(s) that do not schedule pods (ClusterRole, ConfigMap, Role, Service)",
		`not planned: Prometheus "k8s", Alertmanager "main" run pods through an operator`,
	}
	if len(m.Warnings) != len(want) {
		t.Fatalf("warnings %q, want %d", m.Warnings, len(want))
	}
	for i, w := range want {
		if !strings.Contains(m.Warnings[i], w) {
			t.Errorf("warning %d %q, want it to contain %q", i, m.Warnings[i], w)
		}
	}
}

func TestUnknownFieldsWarn(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		warnings []string // each is contained in one warning, in order
		pods     int
		check    func(*testing.T, *Manifests)
	}{
		{"misspelt replicas plans one", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replica: 3\n  template: {spec: {containers: [{name: c}]}}\n",
			[]string{`in.yaml: document 1: Deployment "web": unknown field "spec.replica" ignored (--strict rejects it); did you mean replicas? without it 1 replica is planned`}, 1, nil},
		{"misspelt requests", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources: {requets: {cpu: 2}}\n",
			[]string{`Pod "p": unknown field "spec.containers[0].resources.requets" ignored (--strict rejects it); did you mean requests? without it the container requests no CPU or memory`}, 1,
			func(t *testing.T, m *Manifests) {
				if got := m.Pods[0].Requests[solver.CPU]; got != 0 {
					t.Errorf("cpu request %d, want 0: the misspelt field is ignored", got)
				}
			}},
		{"wrong case", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  Replicas: 3\n  template: {spec: {containers: [{name: c}]}}\n",
			[]string{`unknown field "spec.Replicas" ignored (--strict rejects it); did you mean replicas?`}, 1, nil},
		{"unrelated field has no hint", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, imagePolicy: x}]\n",
			[]string{`Pod "p": unknown field "spec.containers[0].imagePolicy" ignored (--strict rejects it)`}, 1,
			func(t *testing.T, m *Manifests) {
				if strings.Contains(m.Warnings[0], "did you mean") {
					t.Errorf("hint on an unrelated field: %s", m.Warnings[0])
				}
			}},
		{"pool typo keeps the pool", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec:\n  template: {spec: {requirments: [], nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n",
			[]string{`NodePool "np": unknown field "spec.template.spec.requirments" ignored (--strict rejects it); did you mean requirements? without it the pool allows every instance type`}, 1,
			func(t *testing.T, m *Manifests) {
				if len(m.Pools) != 1 {
					t.Errorf("%d pools, want 1", len(m.Pools))
				}
			}},
		{"list item", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec: {foo: 1, containers: [{name: c}]}\n",
			[]string{`in.yaml: document 1: items[0]: Pod "p": unknown field "spec.foo" ignored`}, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Manifests{}
			if err := Decode("in.yaml", []byte(tt.in), m); err != nil {
				t.Fatalf("error %v, want warnings only", err)
			}
			var fieldWarnings []string
			for _, w := range m.Warnings {
				if strings.Contains(w, "field") {
					fieldWarnings = append(fieldWarnings, w)
				}
			}
			if len(fieldWarnings) != len(tt.warnings) {
				t.Fatalf("warnings %q, want %d about fields", m.Warnings, len(tt.warnings))
			}
			for i, want := range tt.warnings {
				if !strings.Contains(fieldWarnings[i], want) {
					t.Errorf("warning %q\nwant it to contain %q", fieldWarnings[i], want)
				}
			}
			if len(m.Pods) != tt.pods {
				t.Errorf("%d pods, want %d", len(m.Pods), tt.pods)
			}
			if tt.check != nil {
				tt.check(t, m)
			}
		})
	}
}

func TestTooManyExtendedResources(t *testing.T) {
	in := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources: {limits: {a.com/x: 1, b.com/x: 1, c.com/x: 1, d.com/x: 1}}\n"
	err := Decode("in.yaml", []byte(in), &Manifests{})
	if err == nil || !strings.Contains(err.Error(), `extended resource "d.com/x": at most 3`) {
		t.Fatalf("err = %v", err)
	}
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	podYAML := "apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec: {containers: [{name: c}]}\n"
	writeFile(t, filepath.Join(dir, "b.yaml"), strings.Replace(podYAML, "%s", "b", 1))
	writeFile(t, filepath.Join(dir, "a", "z.yml"), strings.Replace(podYAML, "%s", "z", 1))
	writeFile(t, filepath.Join(dir, "c.json"), `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "c"}, "spec": {"containers": [{"name": "c"}]}}`)
	writeFile(t, filepath.Join(dir, "README.md"), "not a manifest")
	writeFile(t, filepath.Join(dir, "empty", "notes.txt"), "")
	writeFile(t, filepath.Join(dir, "svc.yaml"), "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")

	m, err := Read([]string{dir, "-"}, strings.NewReader(strings.Replace(podYAML, "%s", "stdin", 1)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range m.Pods {
		names = append(names, p.Name)
	}
	if want := []string{"b", "c", "stdin"}; !reflect.DeepEqual(names, want) {
		t.Errorf("pods %v, want %v: without -R, as kubectl, subdirectories are not read", names, want)
	}
	m, err = Input{Filenames: []string{dir}, Recursive: true}.Read(nil)
	if err != nil {
		t.Fatal(err)
	}
	names = nil
	for _, p := range m.Pods {
		names = append(names, p.Name)
	}
	if want := []string{"z", "b", "c"}; !reflect.DeepEqual(names, want) {
		t.Errorf("pods %v, want %v with -R", names, want)
	}

	errTests := []struct {
		name  string
		paths []string
		stdin string
		want  string
	}{
		{"missing file", []string{filepath.Join(dir, "nope.yaml")}, "", "nope.yaml: no such file or directory"},
		{"directory without manifests", []string{filepath.Join(dir, "empty")}, "", "empty: no *.yaml, *.yml or *.json files (-R reads its subdirectories too)"},
		{"empty stdin", []string{"-"}, "", "no pods or workloads found in <stdin>: the input is empty"},
		{"comments only", []string{"-"}, "# nothing\n---\n", "no pods or workloads found in <stdin>: the input is empty"},
		{"nothing usable", []string{filepath.Join(dir, "svc.yaml")}, "", "no pods or workloads found in " + filepath.Join(dir, "svc.yaml")},
		{"no paths", nil, "", "no input files"},
		{"error in a file", []string{"-"}, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {cpu: x}}}]}\n", "<stdin>: document 1 (line 1): "},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(tt.paths, strings.NewReader(tt.stdin))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestDecodeManyDocumentsInOrder: documents are decoded ahead of the one
// being read, in parallel, yet pods come out in input order, warnings in
// document order, and the first bad document is the one reported, even
// far past the window decoded ahead.
func TestDecodeManyDocumentsInOrder(t *testing.T) {
	const n = 5*predecodeWindow + 3
	pod := func(i int, field string) string {
		return fmt.Sprintf("---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p%d\nspec:\n  containers:\n  - name: c\n    resources: {requests: {cpu: %dm}}\n%s", i, i+1, field)
	}
	tests := []struct {
		name     string
		bad      map[int]string // document index (0-based) → an extra spec field
		strict   bool
		wantErr  string
		warnings []string
	}{
		{name: "every pod, in order"},
		{name: "unknown fields warn in document order", bad: map[int]string{7: "  foo: 1\n", 2*predecodeWindow + 1: "  bar: 1\n"},
			warnings: []string{`in.yaml: document 8: Pod "p7": unknown field "spec.foo" ignored (--strict rejects it)`,
				`in.yaml: document 130: Pod "p129": unknown field "spec.bar" ignored (--strict rejects it)`}},
		{name: "the first bad document stops reading", strict: true, bad: map[int]string{3*predecodeWindow + 5: "  foo: 1\n", n - 1: "  bar: 1\n"},
			wantErr: `in.yaml: document 198 (line 1775): Pod "p197": unknown field "spec.foo"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in strings.Builder
			for i := range n {
				in.WriteString(pod(i, tt.bad[i]))
			}
			m := &Manifests{Strict: tt.strict}
			err := Decode("in.yaml", []byte(in.String()), m)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Pods) != n {
				t.Fatalf("%d pods, want %d", len(m.Pods), n)
			}
			for i, p := range m.Pods {
				if p.Name != fmt.Sprintf("p%d", i) || p.Requests[solver.CPU] != int64(i+1) {
					t.Fatalf("pod %d is %s requesting %dm CPU, want p%d requesting %dm", i, p.Name, p.Requests[solver.CPU], i, i+1)
				}
			}
			if !slices.Equal(m.Warnings, tt.warnings) {
				t.Errorf("warnings %q\nwant %q", m.Warnings, tt.warnings)
			}
		})
	}
}

// TestDecodeAcceptsWhatTheAPIServerAccepts: the API server's rules refuse
// no more than it does.
func TestDecodeAcceptsWhatTheAPIServerAccepts(t *testing.T) {
	pod := func(name, ns, resources string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: " + ns + "}\nspec:\n  containers:\n  - name: c\n    resources: " + resources + "\n---\n"
	}
	const ref = "  template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: c}}}\n"
	tests := []struct {
		name, in string
		pods     int
	}{
		{"one name in two namespaces", pod("p", "a", "{}") + pod("p", "b", "{}"), 2},
		{"one name for two kinds", pod("web", "a", "{}") + "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: a}\nspec: {replicas: 1, template: {spec: {containers: [{name: c}]}}}\n", 2},
		{"one NodePool name in two groups", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec:\n" + ref +
			"---\napiVersion: rightsize.dev/v1alpha1\nkind: NodePool\nmetadata: {name: np}\nspec:\n  template: {spec: {nodeClassRef: {group: rightsize.dev, kind: EC2NodeClass, name: c}}}\n", 0},
		{"a GPU as a limit", pod("p", "a", "{limits: {nvidia.com/gpu: 2}}"), 1},
		{"a GPU requested at its limit", pod("p", "a", "{requests: {nvidia.com/gpu: \"1\"}, limits: {nvidia.com/gpu: 1}}"), 1},
		{"half a core", pod("p", "a", "{requests: {cpu: 500m}}"), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Manifests{Strict: true}
			if err := Decode("in.yaml", []byte(tt.in), m); err != nil {
				t.Fatal(err)
			}
			if len(m.Pods) != tt.pods {
				t.Errorf("%d pods, want %d", len(m.Pods), tt.pods)
			}
		})
	}
}
