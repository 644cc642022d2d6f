package config

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

func TestRenderedManifestsPassLint(t *testing.T) {
	for _, o := range []Options{
		{},
		{Cloud: "aws", ClusterName: "prod", Region: "eu-west-1", Image: "v1.2.3", IAMRoleARN: "arn:aws:iam::111122223333:role/rightsize"},
		{Cloud: "sim", Namespace: "ops", Image: "registry.local:5000/rightsize:dev"},
	} {
		b, err := Render(o)
		if err != nil {
			t.Fatalf("Render(%+v): %v", o, err)
		}
		if err := Lint(b); err != nil {
			t.Errorf("Render(%+v) fails the lint:\n%v", o, err)
		}
	}
}

// TestRenderAppliesOptions checks each option lands where the operator reads it.
func TestRenderAppliesOptions(t *testing.T) {
	o := Options{Namespace: "ops", Image: "v1.2.3", Cloud: "aws", ClusterName: "c1", Region: "us-east-1",
		ClusterEndpoint: "https://ABC.gr7.us-east-1.eks.amazonaws.com", KubernetesVersion: "1.33", IAMRoleARN: "arn:aws:iam::1:role/x",
		InterruptionQueue: "c1-interruptions"}
	objs := render(t, o)
	var (
		dep *appsv1.Deployment
		cm  *corev1.ConfigMap
		sa  *corev1.ServiceAccount
	)
	for _, obj := range objs {
		switch x := obj.(type) {
		case *appsv1.Deployment:
			dep = x
		case *corev1.ConfigMap:
			cm = x
		case *corev1.ServiceAccount:
			sa = x
		case *corev1.Namespace:
			if x.Name != "ops" {
				t.Errorf("namespace %s, want ops", x.Name)
			}
		case *rbacv1.ClusterRoleBinding:
			if x.Subjects[0].Namespace != "ops" {
				t.Errorf("ClusterRoleBinding subject in %s, want ops", x.Subjects[0].Namespace)
			}
		}
	}
	if dep == nil || cm == nil || sa == nil {
		t.Fatalf("missing Deployment, ConfigMap or ServiceAccount in %d objects", len(objs))
	}
	if dep.Namespace != "ops" || cm.Namespace != "ops" || sa.Namespace != "ops" {
		t.Errorf("namespaces %s %s %s, want ops", dep.Namespace, cm.Namespace, sa.Namespace)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if want := ImageRepository + ":v1.2.3"; c.Image != want {
		t.Errorf("image %s, want %s", c.Image, want)
	}
	if want := map[string]string{"cloud": "aws", "cluster-name": "c1"}; !maps.Equal(cm.Data, want) {
		t.Errorf("config %v, want %v", cm.Data, want)
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil && e.ValueFrom.ConfigMapKeyRef.Name != cm.Name {
			t.Errorf("env %s reads ConfigMap %s, rendered as %s", e.Name, e.ValueFrom.ConfigMapKeyRef.Name, cm.Name)
		}
	}
	for _, flag := range []string{"--leader-elect", "--cloud=$(RIGHTSIZE_CLOUD)", "--cluster-name=$(RIGHTSIZE_CLUSTER_NAME)",
		"--region=us-east-1", "--cluster-endpoint=https://ABC.gr7.us-east-1.eks.amazonaws.com", "--kubernetes-version=1.33",
		"--interruption-queue=c1-interruptions"} {
		if !slices.Contains(c.Args, flag) {
			t.Errorf("args %v lack %s", c.Args, flag)
		}
	}
	if unset := render(t, Options{Cloud: "sim"}); slices.ContainsFunc(container(unset).Args, func(a string) bool {
		return strings.HasPrefix(a, "--region") || strings.HasPrefix(a, "--cluster-endpoint")
	}) {
		t.Errorf("unset options still pass flags: %v", container(unset).Args)
	}
	if sa.Annotations["eks.amazonaws.com/role-arn"] != "arn:aws:iam::1:role/x" {
		t.Errorf("ServiceAccount annotations %v lack the IAM role", sa.Annotations)
	}
}

func TestRenderOrdersNamespaceAndCRDsFirst(t *testing.T) {
	b, err := Render(Options{})
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(b), "\n---\n")
	if !strings.Contains(docs[0], "kind: Namespace") {
		t.Errorf("first object is not the Namespace:\n%.200s", docs[0])
	}
	lastCRD, firstOther := -1, len(docs)
	for i, d := range docs[1:] {
		if strings.Contains(d, "\nkind: CustomResourceDefinition\n") {
			lastCRD = i
		} else if firstOther == len(docs) {
			firstOther = i
		}
	}
	if lastCRD > firstOther {
		t.Errorf("a CRD (object %d) comes after other objects (from %d)", lastCRD+1, firstOther+1)
	}
}

func TestImageRef(t *testing.T) {
	tests := []struct{ image, want string }{
		{"", ImageRepository + ":latest"},
		{"v0.1.0", ImageRepository + ":v0.1.0"},
		{"example.com/x/y:1", "example.com/x/y:1"},
		{"localhost:5000/y", "localhost:5000/y:latest"},
		{"example.com/y@sha256:abc", "example.com/y@sha256:abc"},
	}
	for _, tc := range tests {
		if got := (Options{Image: tc.image}).ImageRef(); got != tc.want {
			t.Errorf("ImageRef(%q) = %s, want %s", tc.image, got, tc.want)
		}
	}
}

func TestValidateRefusesBadOptions(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"unknown cloud", Options{Cloud: "gcp"}, `cloud "gcp" is not supported`},
		{"bad namespace", Options{Namespace: "Ops_1"}, "not a valid DNS label"},
		{"bad cluster name", Options{ClusterName: "a b"}, "cluster name"},
		{"bad region", Options{Region: "us east"}, "does not look like a region"},
		{"endpoint not https", Options{ClusterEndpoint: "http://x"}, "is not an https:// URL"},
		{"endpoint with a quote", Options{ClusterEndpoint: "https://x\"y"}, "is not an https:// URL"},
		{"kubernetes version not a minor", Options{KubernetesVersion: "latest"}, "want the cluster's minor version"},
		{"role not an ARN", Options{IAMRoleARN: "rightsize"}, "is not an ARN"},
		{"queue not a queue name", Options{Cloud: "aws", InterruptionQueue: "https://sqs/q"}, "is not an SQS queue name"},
		{"queue with sim", Options{Cloud: "sim", InterruptionQueue: "q"}, "an interruption queue is for --cloud aws"},
		{"YAML injection in the image", Options{Image: "x\"\nkind: Secret"}, "is not an image reference"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestLintFindsViolations proves the lint is not vacuous: each mutation of a
// good install must be reported.
func TestLintFindsViolations(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(objs []runtime.Object)
		want   string
	}{
		{"privileged container", func(o []runtime.Object) { container(o).SecurityContext.Privileged = ptr.To(true) }, "is privileged"},
		{"privilege escalation", func(o []runtime.Object) { container(o).SecurityContext.AllowPrivilegeEscalation = nil }, "may escalate"},
		{"writable root", func(o []runtime.Object) { container(o).SecurityContext.ReadOnlyRootFilesystem = ptr.To(false) }, "root filesystem"},
		{"root user", func(o []runtime.Object) {
			container(o).SecurityContext.RunAsNonRoot = ptr.To(false)
		}, "may run as root"},
		{"capability kept", func(o []runtime.Object) { container(o).SecurityContext.Capabilities.Drop = nil }, "drop ALL"},
		{"no seccomp", func(o []runtime.Object) {
			container(o).SecurityContext.SeccompProfile = nil
			deployment(o).Spec.Template.Spec.SecurityContext.SeccompProfile = nil
		}, "seccomp"},
		{"host network", func(o []runtime.Object) { deployment(o).Spec.Template.Spec.HostNetwork = true }, "host namespace"},
		{"no liveness probe", func(o []runtime.Object) { container(o).LivenessProbe = nil }, "no liveness probe"},
		{"no readiness probe", func(o []runtime.Object) { container(o).ReadinessProbe = nil }, "no readiness probe"},
		{"no memory limit", func(o []runtime.Object) { delete(container(o).Resources.Limits, corev1.ResourceMemory) }, "no memory limit"},
		{"no cpu request", func(o []runtime.Object) { delete(container(o).Resources.Requests, corev1.ResourceCPU) }, "no cpu request"},
		{"wildcard verb", func(o []runtime.Object) { clusterRole(o).Rules[0].Verbs = []string{"*"} }, "wildcard verb"},
		{"wildcard resource", func(o []runtime.Object) { clusterRole(o).Rules[0].Resources = []string{"*"} }, "wildcard resource"},
		{"wildcard group", func(o []runtime.Object) { clusterRole(o).Rules[0].APIGroups = []string{"*"} }, "wildcard API group"},
		{"secrets", func(o []runtime.Object) {
			clusterRole(o).Rules = append(clusterRole(o).Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
		}, "secrets"},
		{"cluster-admin", func(o []runtime.Object) {
			for _, x := range o {
				if b, ok := x.(*rbacv1.ClusterRoleBinding); ok {
					b.RoleRef.Name = "cluster-admin"
				}
			}
		}, "binds the built-in cluster-admin"},
		{"one replica", func(o []runtime.Object) { deployment(o).Spec.Replicas = ptr.To[int32](1) }, "fewer than 2 replicas"},
		{"no leader election", func(o []runtime.Object) { container(o).Args = container(o).Args[1:] }, "without --leader-elect"},
		{"no zone spread", func(o []runtime.Object) { deployment(o).Spec.Template.Spec.TopologySpreadConstraints = nil }, "across zones"},
		{"soft node spread", func(o []runtime.Object) {
			for i := range deployment(o).Spec.Template.Spec.TopologySpreadConstraints {
				deployment(o).Spec.Template.Spec.TopologySpreadConstraints[i].WhenUnsatisfiable = corev1.ScheduleAnyway
			}
		}, "replicas may share a node"},
		{"nodes/status", func(o []runtime.Object) {
			clusterRole(o).Rules = append(clusterRole(o).Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"patch"}})
		}, "grants nodes/status"},
		{"any Lease", func(o []runtime.Object) {
			for _, x := range o {
				if r, ok := x.(*rbacv1.Role); ok {
					r.Rules[0].ResourceNames = nil
				}
			}
		}, "may get, update, patch any Lease"},
		{"unknown priority class", func(o []runtime.Object) { deployment(o).Spec.Template.Spec.PriorityClassName = "x" }, "priority class"},
		{"no PDB", func(o []runtime.Object) { deployment(o).Spec.Template.Labels = map[string]string{"a": "b"} }, "PodDisruptionBudget"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, Options{})
			tc.mutate(objs)
			err := Lint(encode(t, objs))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("lint error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestGeneratedRoleIsCurrent fails when role.yaml (or sim/role.yaml, for
// the markers of the simulated cloud) lacks a permission that a
// +kubebuilder:rbac marker under pkg/ asks for: run `make generate`.
func TestGeneratedRoleIsCurrent(t *testing.T) {
	simDir := filepath.Join("..", "pkg", "cloud", "sim")
	for _, tc := range []struct {
		file string
		dirs []string
		skip string
	}{
		// Every package with markers (the operator's controllers, and
		// the AWS provider's own, such as interruption handling), as
		// controller-gen reads them; none at all means the scan is broken.
		{filepath.Join("rbac", "role.yaml"), []string{filepath.Join("..", "pkg")}, simDir},
		{filepath.Join("sim", "role.yaml"), []string{simDir}, ""},
	} {
		role := readRole(t, tc.file)
		var markers []rbacv1.PolicyRule
		for _, d := range tc.dirs {
			markers = append(markers, rbacMarkers(t, d, tc.skip)...)
		}
		if len(markers) == 0 {
			t.Fatalf("no +kubebuilder:rbac markers found for %s: the scan or the markers are broken", tc.file)
		}
		for _, m := range markers {
			for _, g := range m.APIGroups {
				for _, r := range m.Resources {
					for _, v := range m.Verbs {
						if !allows(role.Rules, g, r, v) {
							t.Errorf("config/%s does not grant %s %s in group %q, which a marker asks for: run `make generate`", tc.file, v, r, g)
						}
					}
				}
			}
		}
	}
}

// TestRBACPerCloud checks that only the simulated cloud's install may create
// Node objects, that no install may write node status, and that pods/status
// is granted only as the lifecycle controller's nominations need it.
func TestRBACPerCloud(t *testing.T) {
	for _, tc := range []struct {
		o          Options
		nodeCreate bool
	}{
		{Options{}, false},
		{Options{Cloud: "aws", ClusterName: "prod"}, false},
		{Options{Cloud: "sim", Namespace: "ops"}, true},
	} {
		objs := render(t, tc.o)
		var roles []string
		creators := 0
		for _, o := range objs {
			switch x := o.(type) {
			case *rbacv1.ClusterRole:
				roles = append(roles, x.Name)
				if allows(x.Rules, "", "nodes", "create") {
					creators++
				}
				for _, sub := range []string{"nodes/status", "nodes/proxy", "pods/exec", "pods/attach", "serviceaccounts/token"} {
					if slices.ContainsFunc(x.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, sub) }) {
						t.Errorf("cloud %q: ClusterRole %s grants %s", tc.o.Cloud, x.Name, sub)
					}
				}
				if got := grantedVerbs(x.Rules, "", "pods/status"); len(got) > 0 && !slices.Equal(got, []string{"patch"}) {
					t.Errorf("cloud %q: pods/status %v, want only patch", tc.o.Cloud, got)
				}
			case *rbacv1.ClusterRoleBinding:
				want := tc.o.Namespace
				if want == "" {
					want = DefaultNamespace
				}
				if x.Subjects[0].Namespace != want || x.Subjects[0].Name != ServiceAccount {
					t.Errorf("cloud %q: ClusterRoleBinding %s binds %s/%s, want %s/%s", tc.o.Cloud, x.Name, x.Subjects[0].Namespace, x.Subjects[0].Name, want, ServiceAccount)
				}
			}
		}
		want := 0
		if tc.nodeCreate {
			want = 1
		}
		if creators != want {
			t.Errorf("cloud %q: %d of ClusterRoles %v grant node create, want %d", tc.o.Cloud, creators, roles, want)
		}
	}
}

// TestLeaderElectionRoleTouchesOnlyItsLease checks the Role: every Lease
// verb names the operator's Lease, but create, which RBAC cannot limit by
// name; no list, watch or delete of Leases at all.
func TestLeaderElectionRoleTouchesOnlyItsLease(t *testing.T) {
	var role *rbacv1.Role
	for _, o := range render(t, Options{Namespace: "ops"}) {
		if r, ok := o.(*rbacv1.Role); ok {
			role = r
		}
	}
	if role == nil || role.Namespace != "ops" {
		t.Fatalf("no leader-election Role in namespace ops: %+v", role)
	}
	var named, unnamed []string
	for _, r := range role.Rules {
		if !slices.Contains(r.Resources, "leases") {
			continue
		}
		if len(r.ResourceNames) == 0 {
			unnamed = append(unnamed, r.Verbs...)
			continue
		}
		if !slices.Equal(r.ResourceNames, []string{v1alpha1.OperatorLeaseName}) {
			t.Errorf("Lease rule names %v, want only %s", r.ResourceNames, v1alpha1.OperatorLeaseName)
		}
		named = append(named, r.Verbs...)
	}
	slices.Sort(named)
	if !slices.Equal(named, []string{"get", "patch", "update"}) || !slices.Equal(unnamed, []string{"create"}) {
		t.Errorf("Lease verbs: %v by name, %v on any, want [get patch update] and [create]", named, unnamed)
	}
}

// TestSharedNamespaces checks one rule for the namespace: a shared one
// (default, kube-*) is refused unless the Namespace is left out, and then
// nothing in the output labels it.
func TestSharedNamespaces(t *testing.T) {
	for _, tc := range []struct {
		o       Options
		wantErr string
	}{
		{Options{Namespace: "kube-system"}, "namespace kube-system is shared with the cluster's own workloads"},
		{Options{Namespace: "default", Cloud: "sim"}, "namespace default is shared"},
		{Options{Namespace: "kube-public"}, "--create-namespace=false"},
		{Options{Namespace: "kube-node-lease"}, "namespace.create=false"},
		{Options{Namespace: "kube-system", ExistingNamespace: true}, ""},
		{Options{Namespace: "default", ExistingNamespace: true, Cloud: "sim"}, ""},
		{Options{Namespace: "ops", ExistingNamespace: true}, ""},
		{Options{Namespace: "kubeflow"}, ""},
	} {
		b, err := Render(tc.o)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Render(%+v): error %v, want one line with %q", tc.o, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Render(%+v): %v", tc.o, err)
			continue
		}
		if err := Lint(b); err != nil {
			t.Errorf("Render(%+v) fails the lint: %v", tc.o, err)
		}
		hasNS := strings.Contains(string(b), "\nkind: Namespace\n")
		hasPSS := strings.Contains(string(b), "pod-security.kubernetes.io")
		if tc.o.ExistingNamespace && (hasNS || hasPSS) {
			t.Errorf("Render(%+v): Namespace %t, Pod Security labels %t; want neither", tc.o, hasNS, hasPSS)
		}
		if !tc.o.ExistingNamespace && (!hasNS || !hasPSS) {
			t.Errorf("Render(%+v): Namespace %t, Pod Security labels %t; want both", tc.o, hasNS, hasPSS)
		}
		if ns := "namespace: " + tc.o.Namespace + "\n"; !strings.Contains(string(b), ns) {
			t.Errorf("Render(%+v): nothing in namespace %s", tc.o, tc.o.Namespace)
		}
	}
}

// grantedVerbs lists the verbs rules grant on resource in group.
func grantedVerbs(rules []rbacv1.PolicyRule, group, resource string) []string {
	var verbs []string
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) {
			verbs = append(verbs, r.Verbs...)
		}
	}
	slices.Sort(verbs)
	return slices.Compact(verbs)
}

func allows(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb)
	})
}

func readRole(t *testing.T, file string) *rbacv1.ClusterRole {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeAll(b)
	if err != nil || len(objs) != 1 {
		t.Fatalf("%s: %d objects, %v", file, len(objs), err)
	}
	return objs[0].(*rbacv1.ClusterRole)
}

// rbacMarkers parses the +kubebuilder:rbac markers under dir, but not
// under skip.
func rbacMarkers(t *testing.T, dir, skip string) []rbacv1.PolicyRule {
	t.Helper()
	var rules []rbacv1.PolicyRule
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && skip != "" && p == skip {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), "// +kubebuilder:rbac:")
			if !ok {
				continue
			}
			var r rbacv1.PolicyRule
			for _, kv := range strings.Split(rest, ",") {
				k, v, _ := strings.Cut(kv, "=")
				vals := strings.Split(strings.Trim(v, `"`), ";")
				switch k {
				case "groups":
					r.APIGroups = vals
				case "resources":
					r.Resources = vals
				case "verbs":
					r.Verbs = vals
				case "namespace":
					r.Verbs = nil // namespaced markers make a Role, not the ClusterRole
				}
			}
			if r.Verbs != nil {
				rules = append(rules, r)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

func render(t *testing.T, o Options) []runtime.Object {
	t.Helper()
	b, err := Render(o)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeAll(b)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func encode(t *testing.T, objs []runtime.Object) []byte {
	t.Helper()
	var parts []string
	for _, o := range objs {
		b, err := runtime.Encode(scheme.Codecs.LegacyCodec(scheme.Scheme.PrioritizedVersionsAllGroups()...), o)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, string(b))
	}
	return []byte(strings.Join(parts, "\n---\n"))
}

func deployment(objs []runtime.Object) *appsv1.Deployment {
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			return d
		}
	}
	return nil
}

func container(objs []runtime.Object) *corev1.Container {
	return &deployment(objs).Spec.Template.Spec.Containers[0]
}

func clusterRole(objs []runtime.Object) *rbacv1.ClusterRole {
	for _, o := range objs {
		if r, ok := o.(*rbacv1.ClusterRole); ok {
			return r
		}
	}
	return nil
}
