package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// jsonPlan is the part of `explain -o json` these tests read.
type jsonPlan struct {
	Nodes         []jsonNode        `json:"nodes"`
	Unschedulable []json.RawMessage `json:"unschedulable"`
}

// jsonNode is a planned node of a jsonPlan.
type jsonNode struct {
	InstanceType string            `json:"instanceType"`
	CapacityType string            `json:"capacityType"`
	Zone         string            `json:"zone"`
	NodePool     string            `json:"nodePool"`
	Pods         []string          `json:"pods"`
	Allocatable  map[string]string `json:"allocatable"`
	Labels       map[string]string `json:"labels"`
	// InstanceTypeOptions are the types its NodeClaim would allow.
	InstanceTypeOptions []string `json:"instanceTypeOptions"`
}

// optionFamilies fails unless the node's instance type options span at
// least min families (an EC2 type's family is its name before the dot).
func optionFamilies(n jsonNode, min int) error {
	families := map[string]bool{}
	for _, t := range n.InstanceTypeOptions {
		family, _, _ := strings.Cut(t, ".")
		families[family] = true
	}
	if len(families) < min {
		return fmt.Errorf("%s: options %v span %d families, want %d", n.InstanceType, n.InstanceTypeOptions, len(families), min)
	}
	return nil
}

// explainJSON runs `explain ARGS -o json` through the built binary and
// returns the plan and the warnings it printed. It fails the test unless
// the plugin exits 0 and prints nothing on stderr but warnings.
func explainJSON(t *testing.T, args ...string) (jsonPlan, []string) {
	t.Helper()
	r := plugin(t, "", append(append([]string{"explain"}, args...), "-o", "json")...)
	if code := exitCode(t, r.err); code != 0 {
		t.Fatalf("exit status %d, want 0\nstderr:\n%s", code, r.stderr)
	}
	var warnings []string
	for line := range strings.Lines(r.stderr) {
		line = strings.TrimSpace(line)
		w, ok := strings.CutPrefix(line, "Warning: ")
		if !ok && line != "" {
			t.Errorf("stderr line is no warning: %q", line)
		}
		if ok {
			warnings = append(warnings, w)
		}
	}
	var plan jsonPlan
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatalf("stdout is no JSON plan: %v\n%s", err, r.stdout)
	}
	return plan, warnings
}

// plannedPods are the pods of plan's nodes.
func (p jsonPlan) plannedPods() []string {
	var out []string
	for _, n := range p.Nodes {
		out = append(out, n.Pods...)
	}
	return out
}

// workloadPods reads the manifests of files the way a reader independent
// of the plugin would and returns the pods their Deployments, StatefulSets
// and ReplicaSets run, named as the plan names them (namespace/name-i).
func workloadPods(t *testing.T, files ...string) []string {
	t.Helper()
	var out []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var obj struct {
				Kind     string
				Metadata struct{ Name, Namespace string }
				Spec     struct{ Replicas *int }
			}
			if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if !slices.Contains([]string{"Deployment", "StatefulSet", "ReplicaSet"}, obj.Kind) {
				continue
			}
			ns, replicas := obj.Metadata.Namespace, 1
			if ns == "" {
				ns = "default"
			}
			if obj.Spec.Replicas != nil {
				replicas = *obj.Spec.Replicas
			}
			for i := range replicas {
				out = append(out, fmt.Sprintf("%s/%s-%d", ns, obj.Metadata.Name, i))
			}
		}
	}
	return out
}

// kustomizationFiles are the resources a kustomization in dir lists.
func kustomizationFiles(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct{ Resources []string }
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range k.Resources {
		out = append(out, filepath.Join(dir, r))
	}
	return out
}

// TestPublicManifestsPlan plans the install manifests of public projects
// (test/e2e/testdata/public, issue 18) through the built binary as a
// newcomer would: -f on a file, -R on a directory tree, -k on a
// kustomization. Each plans without error, sums the objects that cannot
// schedule pods up in one line, names the operator's custom resources as
// not planned, and places every pod of every Deployment and StatefulSet.
func TestPublicManifestsPlan(t *testing.T) {
	t.Parallel() // no control plane: runs beside the other tests that need none
	dir := filepath.Join(repoRootDir(t), "test", "e2e", "testdata", "public")
	in := func(path string) string { return filepath.Join(dir, path) }
	glob := func(pattern string) []string {
		files, err := filepath.Glob(in(pattern))
		if err != nil || len(files) == 0 {
			t.Fatalf("glob %s: %v, %d files", pattern, err, len(files))
		}
		return files
	}
	tests := []struct {
		name     string
		args     []string
		from     []string // the files whose workloads must all be planned
		warnings []string // every warning, each as a prefix
	}{
		{"microservices-demo's release manifest, -f",
			[]string{"-f", in("microservices-demo/kubernetes-manifests.yaml")},
			[]string{in("microservices-demo/kubernetes-manifests.yaml")},
			[]string{"skipped 23 object(s) of 2 kind(s) that do not schedule pods (Service, ServiceAccount)"}},
		{"microservices-demo's kustomization, -k",
			[]string{"-k", in("microservices-demo/kubernetes-manifests")},
			kustomizationFiles(t, in("microservices-demo/kubernetes-manifests")),
			[]string{"skipped 22 object(s) of 2 kind(s) that do not schedule pods (Service, ServiceAccount)"}},
		{"Argo CD's install.yaml, -f",
			[]string{"-f", in("argo-cd/install.yaml")},
			[]string{in("argo-cd/install.yaml")},
			[]string{"skipped 52 object(s) of 10 kind(s) that do not schedule pods (ClusterRole, ClusterRoleBinding, ConfigMap, CustomResourceDefinition, NetworkPolicy, Role, RoleBinding, Secret, Service, ServiceAccount)"}},
		{"kube-prometheus's manifests, -R reads setup/ too",
			[]string{"-R", "-f", in("kube-prometheus/manifests")},
			glob("kube-prometheus/manifests/*.yaml"),
			[]string{
				"skipped 67 object(s) of 13 kind(s) that do not schedule pods (APIService, ClusterRole, ClusterRoleBinding, ConfigMap, Namespace, NetworkPolicy, PodDisruptionBudget, Role, RoleBinding, Secret, Service, ServiceAccount, ServiceMonitor)",
				`not planned: Alertmanager "main", Prometheus "k8s" run pods through an operator; their pods are not in the input`,
			}},
		{"kube-prometheus's manifests without -R leave setup/ out, as kubectl does",
			[]string{"-f", in("kube-prometheus/manifests")},
			glob("kube-prometheus/manifests/*.yaml"),
			[]string{
				"skipped 66 object(s) of 12 kind(s) that do not schedule pods (APIService, ClusterRole, ClusterRoleBinding, ConfigMap, NetworkPolicy, PodDisruptionBudget, Role, RoleBinding, Secret, Service, ServiceAccount, ServiceMonitor)",
				`not planned: Alertmanager "main", Prometheus "k8s" run pods through an operator; their pods are not in the input`,
			}},
		{"kubernetes/examples guestbook, -f on a directory",
			[]string{"-f", in("guestbook")},
			glob("guestbook/*.yaml"),
			[]string{"skipped 3 object(s) of 1 kind(s) that do not schedule pods (Service)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan, warnings := explainJSON(t, tc.args...)
			if len(warnings) != len(tc.warnings) {
				t.Errorf("%d warnings, want %d:\n%s", len(warnings), len(tc.warnings), strings.Join(warnings, "\n"))
			}
			for i, want := range tc.warnings {
				if i < len(warnings) && !strings.HasPrefix(warnings[i], want) {
					t.Errorf("warning %d:\n%s\nwant it to start with\n%s", i, warnings[i], want)
				}
			}
			if len(plan.Unschedulable) != 0 {
				t.Errorf("unschedulable: %s", plan.Unschedulable)
			}
			want, got := workloadPods(t, tc.from...), plan.plannedPods()
			if len(want) == 0 {
				t.Fatal("the input has no workload: the test reads the wrong files")
			}
			for _, p := range want {
				if !slices.Contains(got, p) {
					t.Errorf("pod %s of the input is not planned; planned: %v", p, got)
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d pods planned, want %d: %v", len(got), len(want), got)
			}
		})
	}
}

// nvidiaFamilies are the EC2 families with NVIDIA GPUs; g4ad's GPUs are
// AMD's.
var nvidiaFamilies = regexp.MustCompile(`^(g3s?|g4dn|g5g?|g6[ef]?|gr6f?|p[0-9][a-z0-9-]*)\.`)

// gravitonType is a Graviton instance type: a1, or a family with a g after
// its generation (c6g, m7gd, c7gn, …).
var gravitonType = regexp.MustCompile(`^(a1|[a-z]+[0-9]+g[a-z]*)\.`)

// usEast1Zones are the zones of the embedded catalog's default region: the
// domains a zone spread counts when the pools do not restrict zones.
var usEast1Zones = []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f"}

// TestKarpenterExamplesPlanOntoWhatKarpenterLaunches plans each of
// Karpenter's example workloads (aws/karpenter-provider-aws
// examples/workloads, test/e2e/testdata/karpenter-examples, issue 13) with
// the example NodePool it is meant for, through the built binary, and
// checks the nodes are ones Karpenter would launch: NVIDIA types for
// nvidia.com/gpu, AMD for amd.com/gpu, Inferentia or Trainium for Neuron,
// Graviton for arm64, local NVMe for the instance-store pool, spot for the
// spot pool, spreads as their maxSkew asks; and that none is rejected for a
// field kubectl would only warn about.
func TestKarpenterExamplesPlanOntoWhatKarpenterLaunches(t *testing.T) {
	t.Parallel() // no control plane: runs beside the other tests that need none
	src := filepath.Join(repoRootDir(t), "test", "e2e", "testdata", "karpenter-examples")
	// The examples ship with replicas 0, to be scaled up; plan 3 of each.
	// inflate-storage is inflate asking for 100Gi of ephemeral storage,
	// which only the instance store of a RAID0 class holds.
	scaled := t.TempDir()
	zero := regexp.MustCompile(`(?m)^  replicas: 0$`)
	files, err := filepath.Glob(filepath.Join(src, "workloads", "*.yaml"))
	if err != nil || len(files) != 11 {
		t.Fatalf("the workload examples: %v, %d files, want 11", err, len(files))
	}
	workloads := map[string]string{}
	write := func(name string, data []byte) {
		workloads[name] = filepath.Join(scaled, name+".yaml")
		if err := os.WriteFile(workloads[name], data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data = zero.ReplaceAll(data, []byte("  replicas: 3"))
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		write(name, data)
		if name == "inflate" {
			storage := bytes.Replace(data, []byte("memory: 256M\n"), []byte("memory: 256M\n            ephemeral-storage: 100Gi\n"), 1)
			if bytes.Equal(storage, data) {
				t.Fatal("inflate.yaml no longer requests memory: 256M")
			}
			write("inflate-storage", storage)
		}
	}
	pool := func(name string) string { return filepath.Join(src, "v1", name+".yaml") }
	type node = jsonNode
	everyNode := func(check func(n node) error) func(t *testing.T, p jsonPlan) {
		return func(t *testing.T, p jsonPlan) {
			for _, n := range p.Nodes {
				if err := check(n); err != nil {
					t.Errorf("node %s in %s (pool %s): %v", n.InstanceType, n.Zone, n.NodePool, err)
				}
			}
		}
	}
	label := func(key, want string) func(n node) error {
		return func(n node) error {
			if got := n.Labels[key]; got != want {
				return fmt.Errorf("label %s = %q, want %q", key, got, want)
			}
			return nil
		}
	}
	all := func(checks ...func(n node) error) func(n node) error {
		return func(n node) error {
			var errs []error
			for _, c := range checks {
				errs = append(errs, c(n))
			}
			return errors.Join(errs...)
		}
	}
	typeMatches := func(re *regexp.Regexp) func(n node) error {
		return func(n node) error {
			if !re.MatchString(n.InstanceType) {
				return fmt.Errorf("type does not match %s", re)
			}
			return nil
		}
	}
	allocatable := func(resource string) func(n node) error {
		return func(n node) error {
			if q, err := strconv.Atoi(n.Allocatable[resource]); err != nil || q < 1 {
				return fmt.Errorf("allocatable %s = %q, want ≥ 1", resource, n.Allocatable[resource])
			}
			return nil
		}
	}
	// atMostPerNode checks a hostname spread: Karpenter counts a node it
	// could launch as a domain holding none, so no node gets more than
	// maxSkew of the pods.
	atMostPerNode := func(maxSkew int) func(n node) error {
		return func(n node) error {
			if len(n.Pods) > maxSkew {
				return fmt.Errorf("%d pods on one node, hostname spread maxSkew %d", len(n.Pods), maxSkew)
			}
			return nil
		}
	}
	// zoneSkew checks a zone spread over every zone the pools allow.
	zoneSkew := func(maxSkew int) func(t *testing.T, p jsonPlan) {
		return func(t *testing.T, p jsonPlan) {
			count := map[string]int{}
			for _, n := range p.Nodes {
				count[n.Zone] += len(n.Pods)
			}
			lo, hi := count[usEast1Zones[0]], 0
			for _, z := range usEast1Zones {
				lo, hi = min(lo, count[z]), max(hi, count[z])
			}
			if hi-lo > maxSkew {
				t.Errorf("pods per zone %v: skew %d > maxSkew %d", count, hi-lo, maxSkew)
			}
		}
	}
	// nodeSkew checks a hostname spread as kube-scheduler does, over the
	// nodes planned (the only nodes there are).
	nodeSkew := func(maxSkew int) func(t *testing.T, p jsonPlan) {
		return func(t *testing.T, p jsonPlan) {
			var counts []int
			for _, n := range p.Nodes {
				counts = append(counts, len(n.Pods))
			}
			if skew := slices.Max(counts) - slices.Min(counts); skew > maxSkew {
				t.Errorf("pods per node %v: skew %d > maxSkew %d", counts, skew, maxSkew)
			}
		}
	}
	tests := []struct {
		name     string
		workload string
		pool     string
		pods     int
		warnings []string // warnings, each as a substring, that must be printed
		check    []func(t *testing.T, p jsonPlan)
	}{
		{"arm64 on the arm64 pool: Graviton", "arm64", "multiple-arch", 1,
			[]string{`Deployment "arm64": unknown field "spec.template.spec.containers[0].securityContext.allowPrivilegedEscalation" ignored`},
			[]func(*testing.T, jsonPlan){everyNode(all(label("kubernetes.io/arch", "arm64"), label("karpenter.sh/nodepool", "arm64"), typeMatches(gravitonType)))}},
		// Karpenter treats a preferred node affinity as required until it
		// cannot be met, so prefer-arm lands on Graviton when it can.
		{"prefer-arm: Graviton", "prefer-arm", "multiple-arch", 3, nil,
			[]func(*testing.T, jsonPlan){everyNode(all(label("kubernetes.io/arch", "arm64"), typeMatches(gravitonType)))}},
		{"spot on the spot pool", "spot", "spot", 3, nil,
			[]func(*testing.T, jsonPlan){everyNode(func(n node) error {
				if n.CapacityType != "spot" {
					return fmt.Errorf("capacity type %s", n.CapacityType)
				}
				return nil
			})}},
		{"nvidia.com/gpu: an NVIDIA GPU type", "gpu-nvidia", "large-instances", 3,
			[]string{`Deployment "gpu-nvidia": unknown field "spec.template.spec.containers[0].securityContext.allowPrivilegedEscalation" ignored`},
			[]func(*testing.T, jsonPlan){everyNode(all(typeMatches(nvidiaFamilies), label("karpenter.k8s.aws/instance-gpu-manufacturer", "nvidia"), allocatable("nvidia.com/gpu")))}},
		{"amd.com/gpu: an AMD GPU type", "gpu-amd", "large-instances", 3,
			[]string{`Deployment "gpu-amd": unknown field "spec.template.spec.containers[0].securityContext.allowPrivilegedEscalation" ignored`},
			[]func(*testing.T, jsonPlan){everyNode(all(typeMatches(regexp.MustCompile(`^g4ad\.`)), label("karpenter.k8s.aws/instance-gpu-manufacturer", "amd"), allocatable("amd.com/gpu")))}},
		{"aws.amazon.com/neuron: Inferentia or Trainium", "neuron", "large-instances", 3, nil,
			[]func(*testing.T, jsonPlan){everyNode(all(typeMatches(regexp.MustCompile(`^(inf|trn)[0-9]`)), label("karpenter.k8s.aws/instance-accelerator-manufacturer", "aws"), allocatable("aws.amazon.com/neuron")))}},
		{"the instance-store pool: local NVMe over 300 GB", "inflate", "instance-store-ephemeral-storage", 1, nil,
			[]func(*testing.T, jsonPlan){everyNode(func(n node) error {
				if gb, err := strconv.Atoi(n.Labels["karpenter.k8s.aws/instance-local-nvme"]); err != nil || gb <= 300 {
					return fmt.Errorf("instance-local-nvme %q, want > 300", n.Labels["karpenter.k8s.aws/instance-local-nvme"])
				}
				return nil
			})}},
		{"instanceStorePolicy RAID0: the instance store is the ephemeral storage, as Karpenter counts it", "inflate-storage", "instance-store-ephemeral-storage", 1, nil,
			[]func(*testing.T, jsonPlan){everyNode(func(n node) error {
				if q, err := resource.ParseQuantity(n.Allocatable["ephemeral-storage"]); err != nil || q.Cmp(resource.MustParse("100Gi")) < 0 {
					return fmt.Errorf("ephemeral-storage allocatable %q, want ≥ 100Gi", n.Allocatable["ephemeral-storage"])
				}
				return nil
			})}},
		{"spread-zone: maxSkew 1 over the zones", "spread-zone", "general-purpose", 3, nil,
			[]func(*testing.T, jsonPlan){zoneSkew(1)}},
		{"spread-hostname: at most 2 a node", "spread-hostname", "general-purpose", 10, nil,
			[]func(*testing.T, jsonPlan){everyNode(atMostPerNode(2))}},
		{"spread-hostname-zone: at most 2 a node, zones within 5", "spread-hostname-zone", "general-purpose", 50, nil,
			[]func(*testing.T, jsonPlan){everyNode(atMostPerNode(2)), zoneSkew(5)}},
		{"disruption-budget: amd64", "disruption-budget", "general-purpose", 10,
			[]string{`Deployment "pdb": unknown field "spec.template.spec.containers[0].securityContext.allowPrivilegedEscalation" ignored`},
			[]func(*testing.T, jsonPlan){everyNode(label("kubernetes.io/arch", "amd64"))}},
		// 50 pods of 1 CPU, at most 2 a node, need about 100 CPUs: the
		// pool's limit decides. Where the limit leaves a node with 3 pods,
		// kube-scheduler still admits it (skew over the nodes ≤ 2); that is
		// the property checked, not Karpenter's greedy 2 a node.
		{"the 100-CPU pool stays within its limit and keeps the spreads", "spread-hostname-zone", "100-cpu-limit", 50, nil,
			[]func(*testing.T, jsonPlan){nodeSkew(2), zoneSkew(5), func(t *testing.T, p jsonPlan) {
				cpus := 0
				for _, n := range p.Nodes {
					c, err := strconv.Atoi(n.Labels["karpenter.k8s.aws/instance-cpu"])
					if err != nil {
						t.Fatalf("node %s: instance-cpu %q", n.InstanceType, n.Labels["karpenter.k8s.aws/instance-cpu"])
					}
					cpus += c
				}
				if cpus > 100 {
					t.Errorf("%d CPUs launched in pool limitcpu100", cpus)
				}
			}}},
		{"minValues 5 on the family: spot, and every NodeClaim allows 5 families", "spot", "min-values-family", 3, nil,
			[]func(*testing.T, jsonPlan){everyNode(func(n node) error {
				if n.CapacityType != "spot" {
					return fmt.Errorf("capacity type %s", n.CapacityType)
				}
				return optionFamilies(n, 5)
			})}},
		{"minValues on category, family and type: every NodeClaim allows 5 families", "spot", "min-values-multiple-keys", 3, nil,
			[]func(*testing.T, jsonPlan){everyNode(func(n node) error { return optionFamilies(n, 5) })}},
	}
	// Every example NodePool is read: inflate plans with each, exit 0,
	// and nothing but warnings on stderr (Windows pools say Windows is not
	// supported yet; their pods stay unplaced).
	pools, err := filepath.Glob(filepath.Join(src, "v1", "*.yaml"))
	if err != nil || len(pools) != 22 {
		t.Fatalf("the NodePool examples: %v, %d files, want 22", err, len(pools))
	}
	for _, f := range pools {
		t.Run("inflate with "+filepath.Base(f), func(t *testing.T) {
			plan, warnings := explainJSON(t, "-f", workloads["inflate"], "-f", f)
			windows := strings.HasPrefix(filepath.Base(f), "windows-")
			if placed := len(plan.plannedPods()); placed != 1 && !windows {
				t.Errorf("%d pods placed, want 1; warnings:\n%s", placed, strings.Join(warnings, "\n"))
			}
			if windows && !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, "Windows nodes are not supported yet") }) {
				t.Errorf("no Windows warning in\n%s", strings.Join(warnings, "\n"))
			}
		})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan, warnings := explainJSON(t, "-f", workloads[tc.workload], "-f", pool(tc.pool))
			for _, want := range tc.warnings {
				if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, want) }) {
					t.Errorf("no warning %q in\n%s", want, strings.Join(warnings, "\n"))
				}
			}
			if len(plan.Unschedulable) != 0 {
				t.Errorf("unschedulable: %s", plan.Unschedulable)
			}
			if got := len(plan.plannedPods()); got != tc.pods {
				t.Errorf("%d pods planned, want %d", got, tc.pods)
			}
			if len(plan.Nodes) == 0 {
				t.Fatal("no node planned")
			}
			for _, check := range tc.check {
				check(t, plan)
			}
		})
	}
}
