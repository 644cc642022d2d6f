//go:build dist

// Distribution: the krew install round trip from a goreleaser release, the
// operator's manifests on the real control plane, the operator doing its job
// as its own ServiceAccount with only their RBAC, and the OCI image tarball.
// These tests need goreleaser and krew (hack/tools/build.sh: about 9 minutes
// cold, cached outside the repository) and a static binary, so a plain
// `go test ./...` leaves them out; `make test` runs them with the dist tag
// (after `make tools`), compiling static and -trimpath throughout so that the
// release builds here only link. `make test-dist` runs just these.

package e2e

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rightsize-dev/kubectl-rightsize/config"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

// repoRoot is the repository's top directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// releaseTool returns the path of a release tool (goreleaser, krew, helm,
// validate-krew-manifest), building it once with hack/tools/build.sh into
// ~/.cache/kubectl-rightsize/tools (cold: minutes; `make tools` does it ahead).
func releaseTool(t *testing.T, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot(t), "hack", "tools", "build.sh"), name)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/tools/build.sh %s: %v", name, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Logf("built %s in %s", name, d.Round(time.Second))
	}
	return strings.TrimSpace(string(out))
}

// cachedKubectl is the kubectl of the test control plane's cache.
func cachedKubectl(t *testing.T) string {
	t.Helper()
	dir, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "kubectl")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("kubectl is missing from %s: run `make testenv`", dir)
	}
	return p
}

// snapshotRelease runs goreleaser on the repository's .goreleaser.yaml,
// narrowed to the host's platform and writing into a temporary dist, and
// returns that dist.
func snapshotRelease(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	releaseTool(t, "goreleaser") // build it outside the release's timeout
	b, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	dist := filepath.Join(t.TempDir(), "dist")
	cfg["dist"] = dist
	for _, b := range cfg["builds"].([]any) {
		build := b.(map[string]any)
		build["goos"], build["goarch"] = []string{runtime.GOOS}, []string{runtime.GOARCH}
		delete(build, "ignore")
	}
	b, err = yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "goreleaser.yaml")
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "tools", "goreleaser.sh"),
		"release", "--snapshot", "--clean", "--config", cfgPath, "--parallelism", "1")
	r := runCmd(cmd)
	if r.err != nil {
		t.Fatalf("goreleaser release --snapshot: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	t.Logf("goreleaser snapshot release for %s/%s in %s", runtime.GOOS, runtime.GOARCH, r.took.Round(time.Second))
	return dist
}

// TestKrewInstallRoundTrip makes a release with goreleaser, generates the krew
// manifest from it, validates the manifest with krew's own validator, installs
// the plugin with krew from the manifest and the archive into an empty
// KREW_ROOT, runs it through kubectl, and uninstalls it.
func TestKrewInstallRoundTrip(t *testing.T) {
	t.Parallel() // no control plane: runs beside the other tests that need none
	root := repoRoot(t)
	krew, validate := releaseTool(t, "krew"), releaseTool(t, "validate-krew-manifest")
	kubectlBin := cachedKubectl(t)
	dist := snapshotRelease(t)

	var meta struct{ Version, Commit string }
	if b, err := os.ReadFile(filepath.Join(dist, "metadata.json")); err != nil || json.Unmarshal(b, &meta) != nil {
		t.Fatalf("dist/metadata.json: %v", err)
	}
	archive := filepath.Join(dist, fmt.Sprintf("kubectl-rightsize_%s_%s_%s.tar.gz", meta.Version, runtime.GOOS, runtime.GOARCH))
	if _, err := os.Stat(archive); err != nil {
		t.Fatalf("the release has no archive for this platform: %v", err)
	}
	assertArchiveHolds(t, archive, "kubectl-rightsize", "LICENSE")

	manifest := filepath.Join(t.TempDir(), "rightsize.yaml") // krew wants <plugin name>.yaml
	gen := exec.Command("go", "run", "./hack/krewmanifest", "-dist", dist, "-snapshot", "-out", manifest)
	gen.Dir = root
	if r := runCmd(gen); r.err != nil {
		t.Fatalf("hack/krewmanifest: %v\n%s", r.err, r.stderr)
	}
	if r := runCmd(exec.Command(validate, "-manifest", manifest, "-skip-install")); r.err != nil {
		t.Fatalf("validate-krew-manifest: %v\n%s%s", r.err, r.stdout, r.stderr)
	}

	// kubectl and kubectl-krew on PATH, then krew's bin; not the plugin
	// TestMain built, so the kubectl-rightsize found is the one krew installed.
	pathDir, krewRoot := t.TempDir(), t.TempDir()
	for name, target := range map[string]string{"kubectl": kubectlBin, "kubectl-krew": krew} {
		if err := os.Symlink(target, filepath.Join(pathDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{
		"PATH=" + strings.Join([]string{filepath.Join(krewRoot, "bin"), pathDir, "/usr/bin", "/bin"}, string(os.PathListSeparator)),
		"KREW_ROOT=" + krewRoot, "KREW_NO_UPGRADE_CHECK=1", "HOME=" + t.TempDir(),
		"KUBECONFIG=" + filepath.Join(t.TempDir(), "none"),
	}
	run := func(args ...string) result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectlBin, args...)
		cmd.Env = env
		return runCmd(cmd)
	}
	if r := run("rightsize", "version"); r.err == nil {
		t.Fatalf("kubectl rightsize works before the install: PATH is not isolated\n%s", r.stdout)
	}
	r := run("krew", "install", "--manifest="+manifest, "--archive="+archive)
	if r.err != nil {
		t.Fatalf("kubectl krew install: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	t.Logf("krew install in %s", r.took.Round(time.Millisecond))
	if _, err := os.Stat(filepath.Join(krewRoot, "store", "rightsize", "v"+meta.Version, "LICENSE")); err != nil {
		t.Errorf("krew did not install LICENSE: %v", err)
	}
	r = run("rightsize", "version", "-o", "json")
	if r.err != nil {
		t.Fatalf("kubectl rightsize version after the krew install: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	var v struct{ Version, Commit, Date string }
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("version -o json: %v\n%s", err, r.stdout)
	}
	t.Logf("kubectl rightsize version: %+v", v)
	if v.Version != meta.Version || v.Commit != meta.Commit || len(v.Commit) != 40 || !strings.HasPrefix(v.Date, "20") {
		t.Errorf("version %+v, want version %s, commit %s and a date stamped by the release", v, meta.Version, meta.Commit)
	}
	// list and uninstall want a local plugin index, which krew clones from
	// GitHub; an empty git repository stands in for it (no network here).
	index := filepath.Join(krewRoot, "index", "default")
	if err := os.MkdirAll(filepath.Join(index, "plugins"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := runCmd(exec.Command("git", "init", "-q", index)); r.err != nil {
		t.Fatalf("git init: %v\n%s", r.err, r.stderr)
	}
	if r := run("krew", "list"); r.err != nil || !strings.Contains(r.stdout, "rightsize") {
		t.Errorf("kubectl krew list: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	if r := run("krew", "uninstall", "rightsize"); r.err != nil {
		t.Fatalf("kubectl krew uninstall: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	if r := run("rightsize", "version"); r.err == nil {
		t.Errorf("kubectl rightsize still works after the uninstall")
	}
}

// TestKrewManifestInTheRepositoryIsValid checks krew/rightsize.yaml, which
// only a tagged release writes (hack/krewmanifest refuses a snapshot):
// absent, the repository must say how to install a local build; present,
// it must pass krew's validator and download from its own version's
// release, with that version's archives, for every platform.
func TestKrewManifestInTheRepositoryIsValid(t *testing.T) {
	t.Parallel() // no control plane: runs beside the other tests that need none
	manifest := filepath.Join(repoRoot(t), "krew", "rightsize.yaml")
	b, err := os.ReadFile(manifest)
	if errors.Is(err, os.ErrNotExist) {
		readme, err := os.ReadFile(filepath.Join(repoRoot(t), "krew", "README.md"))
		if err != nil || !strings.Contains(string(readme), "kubectl krew install --manifest=dist/krew/rightsize.yaml") {
			t.Fatalf("no krew/rightsize.yaml and no krew/README.md saying how to install a local build: %v", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if r := runCmd(exec.Command(releaseTool(t, "validate-krew-manifest"), "-manifest", manifest, "-skip-install")); r.err != nil {
		t.Fatalf("validate-krew-manifest: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	var plugin struct {
		Spec struct {
			Version   string
			Platforms []struct {
				Selector struct{ MatchLabels map[string]string } `json:"selector"`
				URI      string                                  `json:"uri"`
				SHA256   string                                  `json:"sha256"`
			}
		}
	}
	if err := yaml.Unmarshal(b, &plugin); err != nil {
		t.Fatal(err)
	}
	if v := plugin.Spec.Version; strings.Contains(v, "snapshot") {
		t.Errorf("krew/rightsize.yaml is of snapshot %s, whose archives are at no download URL", v)
	}
	var got []string
	for _, p := range plugin.Spec.Platforms {
		got = append(got, p.Selector.MatchLabels["os"]+"/"+p.Selector.MatchLabels["arch"])
		release := "/releases/download/" + plugin.Spec.Version + "/kubectl-rightsize_" + strings.TrimPrefix(plugin.Spec.Version, "v") + "_"
		if len(p.SHA256) != 64 || !strings.Contains(p.URI, release) {
			t.Errorf("platform %s: uri %s, sha256 %q; want the archive of release %s", got[len(got)-1], p.URI, p.SHA256, plugin.Spec.Version)
		}
	}
	slices.Sort(got)
	if want := []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64", "windows/amd64"}; !slices.Equal(got, want) {
		t.Errorf("platforms %v, want %v", got, want)
	}
}

// assertArchiveHolds checks a .tar.gz holds the named files at its root.
func assertArchiveHolds(t *testing.T, archive string, names ...string) {
	t.Helper()
	out, err := exec.Command("tar", "-tzf", archive).Output()
	if err != nil {
		t.Fatalf("tar -tzf %s: %v", archive, err)
	}
	entries := strings.Fields(string(out))
	for _, n := range names {
		if !slices.Contains(entries, n) {
			t.Errorf("%s lacks %s: %v", filepath.Base(archive), n, entries)
		}
	}
}

// TestOperatorManifestsOnTheControlPlane prints the operator's manifests with
// the plugin, lints them, applies them to the real API server (server dry
// run, then for real, then again with the plugin's own --apply), and waits
// for the Deployment to roll out on kwok nodes across two zones: the API
// server's admission — Pod Security "restricted" on the namespace, the
// PriorityClass, the ServiceAccount — accepts the pods.
func TestOperatorManifestsOnTheControlPlane(t *testing.T) {
	env := sharedEnv(t).Env
	ctx := context.Background()
	r := kubectl(t, env, "rightsize", "operator", "install", "--cloud", "sim", "--cluster-name", "e2e", "--image", "v0.0.0-e2e")
	if r.err != nil {
		t.Fatalf("kubectl rightsize operator install: %v\n%s", r.err, r.stderr)
	}
	if err := config.Lint([]byte(r.stdout)); err != nil {
		t.Errorf("the printed manifests fail the lint:\n%v", err)
	}
	manifests := filepath.Join(t.TempDir(), "operator.yaml")
	if err := os.WriteFile(manifests, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}

	// A server dry run cannot create the namespace its namespaced objects
	// need, so the namespace goes first; everything else is only dry-run.
	ns := config.DefaultNamespace
	if r := kubectl(t, env, "create", "namespace", ns); r.err != nil {
		t.Fatalf("kubectl create namespace: %v\n%s", r.err, r.stderr)
	}
	r = kubectl(t, env, "apply", "--server-side", "--dry-run=server", "-f", manifests)
	if r.err != nil {
		t.Fatalf("kubectl apply --dry-run=server: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, "Warning") {
		t.Errorf("the dry run warns:\n%s", r.stderr)
	}
	if _, err := env.Client().AppsV1().Deployments(ns).Get(ctx, config.Deployment, metav1.GetOptions{}); err == nil {
		t.Fatalf("the dry run created the Deployment")
	}

	r = kubectl(t, env, "apply", "--server-side", "-f", manifests)
	if r.err != nil {
		t.Fatalf("kubectl apply: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	t.Logf("kubectl apply: %d objects in %s", strings.Count(r.stdout, "\n"), r.took.Round(time.Millisecond))
	if strings.Contains(r.stderr, "Warning") {
		t.Errorf("the apply warns:\n%s", r.stderr)
	}

	// The EKS sample in the docs is valid against the installed CRDs.
	if r := kubectl(t, env, "wait", "--for", "condition=Established", "--timeout", "60s", "crd", "--all"); r.err != nil {
		t.Fatalf("kubectl wait: %v\n%s", r.err, r.stderr)
	}
	sample := filepath.Join(repoRoot(t), "config", "samples", "eks.yaml")
	if r := kubectl(t, env, "apply", "--dry-run=server", "-f", sample); r.err != nil {
		t.Errorf("config/samples/eks.yaml: %v\n%s%s", r.err, r.stdout, r.stderr)
	}

	for i, zone := range []string{"zone-a", "zone-b"} {
		name := fmt.Sprintf("system-%d", i)
		if _, err := env.AddNode(ctx, testenv.Node{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: zone}}); err != nil {
			t.Fatal(err)
		}
		if err := env.WaitNodeReady(ctx, name, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	// A node the operator launched must not take the operator.
	if _, err := env.AddNode(ctx, testenv.Node{Name: "provisioned", Labels: map[string]string{v1alpha1.LabelNodePool: "default"}}); err != nil {
		t.Fatal(err)
	}
	r = kubectl(t, env, "-n", ns, "rollout", "status", "deployment/"+config.Deployment, "--timeout", "90s")
	if r.err != nil {
		events := kubectl(t, env, "-n", ns, "get", "events", "--sort-by", ".lastTimestamp")
		t.Fatalf("rollout status: %v\n%s%s\nevents:\n%s", r.err, r.stdout, r.stderr, events.stdout)
	}
	pods, err := env.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=operator"})
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for _, p := range pods.Items {
		nodes[p.Spec.NodeName] = true
		if p.Spec.PriorityClassName != "system-cluster-critical" || p.Spec.Priority == nil || *p.Spec.Priority < 2000000000 {
			t.Errorf("pod %s has priority class %q, priority %v; want system-cluster-critical", p.Name, p.Spec.PriorityClassName, p.Spec.Priority)
		}
		if p.Spec.NodeName == "provisioned" {
			t.Errorf("pod %s runs on a node the operator provisioned", p.Name)
		}
	}
	t.Logf("operator pods: %d on nodes %v", len(pods.Items), slices.Sorted(maps.Keys(nodes)))
	// Two eligible nodes: the hard spread puts one replica on each.
	if len(pods.Items) != 2 || len(nodes) != 2 {
		t.Errorf("%d operator pods on %d nodes, want 2 on 2 (DoNotSchedule across kubernetes.io/hostname)", len(pods.Items), len(nodes))
	}

	// A namespace the install does not own is refused before anything is
	// applied: a shared one outright, an existing one with --apply.
	foreign := "e2e-foreign"
	if r := kubectl(t, env, "create", "namespace", foreign); r.err != nil {
		t.Fatalf("kubectl create namespace: %v\n%s", r.err, r.stderr)
	}
	t.Cleanup(func() { kubectl(t, env, "delete", "namespace", foreign, "--wait=false") })
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "kube-system", "--apply"}, "namespace kube-system is shared with the cluster's own workloads"},
		{[]string{"-n", foreign, "--apply"}, "namespace " + foreign + " exists and was not created by operator install"},
		{[]string{"-n", "e2e-missing", "--create-namespace=false", "--apply"}, "namespace e2e-missing does not exist"},
	} {
		args := append([]string{"rightsize", "operator", "install", "--cloud", "sim", "--image", "v0.0.0-e2e"}, tc.args...)
		r := kubectl(t, env, args...)
		if r.err == nil || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stdout, "serverside-applied") {
			t.Errorf("kubectl %s: %v, want a refusal with %q before anything is applied\n%s%s", strings.Join(args, " "), r.err, tc.want, r.stdout, r.stderr)
		}
	}
	for _, name := range []string{"kube-system", foreign} {
		got, err := env.Client().CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for k := range got.Labels {
			if strings.HasPrefix(k, "pod-security.kubernetes.io/") {
				t.Errorf("namespace %s got label %s=%s", name, k, got.Labels[k])
			}
		}
	}

	// Re-applying changes nothing, and the plugin's own --apply takes over.
	if r := kubectl(t, env, "apply", "--server-side", "-f", manifests); r.err != nil || strings.Contains(r.stdout, "configured") {
		t.Errorf("a second apply: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	r = kubectl(t, env, "rightsize", "operator", "install", "--cloud", "sim", "--cluster-name", "e2e", "--image", "v0.0.0-e2e", "--apply")
	if r.err != nil || !strings.Contains(r.stdout, "deployment.apps/"+config.Deployment+" serverside-applied") {
		t.Fatalf("operator install --apply: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
}

// TestOperatorRBAC applies the manifests and checks, as the operator's own
// ServiceAccount (a token kubeconfig), that it may do what every
// +kubebuilder:rbac marker asks for and nothing beyond: no secrets, no
// workloads, no leases outside its namespace.
func TestOperatorRBAC(t *testing.T) {
	env := sharedEnv(t).Env
	// kubectl auth can-i resolves a resource through discovery: without
	// its CRD, "nodeoverlays.karpenter.sh" is asked as a resource of the
	// core group and denied whatever the role grants. The shared plane's
	// reset deletes the CRD again.
	installNodeOverlayCRD(t, env)
	kc := operatorIdentity(t, env)
	canI := func(args ...string) bool {
		t.Helper()
		r := kubectlAs(t, env, kc, append([]string{"auth", "can-i"}, args...)...)
		return strings.TrimSpace(r.stdout) == "yes"
	}
	var rules []struct{ APIGroups, Resources, Verbs []string }
	for _, file := range []string{"rbac", "sim"} { // the identity is a --cloud sim install's
		role, err := os.ReadFile(filepath.Join(repoRoot(t), "config", file, "role.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var cr struct {
			Rules []struct{ APIGroups, Resources, Verbs []string } `json:"rules"`
		}
		if err := yaml.Unmarshal(role, &cr); err != nil {
			t.Fatal(err)
		}
		rules = append(rules, cr.Rules...)
	}
	checks := 0
	for _, rule := range rules {
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				for _, v := range rule.Verbs {
					resource, sub, _ := strings.Cut(res, "/")
					if g != "" {
						resource += "." + g
					}
					args := []string{v, resource}
					if sub != "" {
						args = append(args, "--subresource", sub)
					}
					if !canI(append(args, "-A")...) {
						t.Errorf("the operator may not %s %s", v, res)
					}
					checks++
				}
			}
		}
	}
	ns := config.DefaultNamespace
	for _, allowed := range [][]string{
		{"create", "leases.coordination.k8s.io", "-n", ns},
		{"update", "leases.coordination.k8s.io/" + v1alpha1.OperatorLeaseName, "-n", ns},
		{"get", "leases.coordination.k8s.io/" + v1alpha1.OperatorLeaseName, "-n", ns},
		{"create", "events", "-n", ns},
	} {
		if !canI(allowed...) {
			t.Errorf("the operator may not %v", allowed)
		}
	}
	for _, denied := range [][]string{
		{"get", "secrets", "-A"},
		{"list", "secrets", "-n", ns},
		{"create", "pods", "-A"},
		{"update", "deployments.apps", "-A"},
		{"delete", "namespaces"},
		{"create", "leases.coordination.k8s.io", "-n", "kube-system"},
		// Only its own Lease, by name (the Role's resourceNames).
		{"update", "leases.coordination.k8s.io", "-n", ns},
		{"update", "leases.coordination.k8s.io/kube-scheduler", "-n", ns},
		{"get", "leases.coordination.k8s.io/other", "-n", ns},
		{"delete", "leases.coordination.k8s.io/" + v1alpha1.OperatorLeaseName, "-n", ns},
		{"list", "leases.coordination.k8s.io", "-n", ns},
		{"patch", "nodes", "--subresource", "status"},
		{"create", "clusterrolebindings.rbac.authorization.k8s.io"},
		{"impersonate", "serviceaccounts", "-A"},
		{"*", "*", "-A"},
	} {
		if canI(denied...) {
			t.Errorf("the operator may %v", denied)
		}
	}
	t.Logf("%d permissions from role.yaml granted, the rest denied", checks)

	// What the server says it grants is what docs/reference/rbac.md says,
	// and a Lease other than its own cannot be touched
	// (rbac_least_test.go).
	checkGrantsAsDocumented(t, env, kc, ns)

	// The token works for real: it lists nodes and is refused secrets.
	if r := kubectlAs(t, env, kc, "get", "nodes"); r.err != nil {
		t.Errorf("get nodes as the operator: %v\n%s", r.err, r.stderr)
	}
	if r := kubectlAs(t, env, kc, "get", "secrets", "-A"); r.err == nil || !strings.Contains(r.stderr, "forbidden") {
		t.Errorf("get secrets as the operator: %v\n%s", r.err, r.stderr)
	}
}

// TestOperatorAsItsServiceAccount runs the operator process with a token
// kubeconfig of the ServiceAccount the manifests create, holding only the
// RBAC they grant, and has it do its job on the simulated cloud: a pending
// pod gets a NodeClaim, the claim a kwok node, the pod runs there (leader
// Lease, NodePool status and the pod's Nominated event written on the way),
// and deleting the claim cordons and drains the node through the Eviction
// API and removes it. A permission the operator needs and lacks shows up as
// "forbidden" in its log or as work not done, and fails the test. Then the
// same job with `create nodeclaims` revoked from the ClusterRole must fail:
// the test can tell.
func TestOperatorAsItsServiceAccount(t *testing.T) {
	t.Parallel() // a plane of its own: the manifests install the CRDs and RBAC their own way
	env := testenv.Start(t)
	e := newOpEnv(t, env)
	kc := operatorIdentity(t, env)

	t.Run("with the manifests' RBAC it provisions, drains and terminates", func(t *testing.T) {
		if err := e.jobAs(t, kc, "granted"); err != nil {
			t.Fatal(err)
		}
	})
	if t.Failed() {
		return
	}
	t.Run("without create nodeclaims it fails, and the test notices", func(t *testing.T) {
		kc := operatorIdentity(t, env, revocation{Group: v1alpha1.Group, Resource: "nodeclaims", Verb: "create"})
		err := e.jobAs(t, kc, "revoked")
		if err == nil {
			t.Fatal("the operator did its job without permission to create NodeClaims: this test cannot detect a missing permission")
		}
		if !strings.Contains(err.Error(), `cannot create resource \"nodeclaims\"`) && !strings.Contains(err.Error(), `cannot create resource "nodeclaims"`) {
			t.Errorf("the job failed, but not for the revoked permission: %v", err)
		}
		t.Logf("as expected: %v", err)
	})
}

// jobAs runs the operator as kc (leader Lease in config.DefaultNamespace) on
// a pool and a namespace of its own named after name, and returns what went
// wrong with its job: a "forbidden" line in its log, or a step not done in
// time. Failures of the test's own setup end the test instead.
func (e *opEnv) jobAs(t *testing.T, kc, name string) error {
	ctx := context.Background()
	pool := "sa-" + name
	e.nodePool(t, pool, 0, nil)
	ns := e.namespace(t, "sa-"+name)
	// The Role names one Lease: the operator's default id, which each job
	// takes in turn (a stopped operator releases it).
	leaseID := v1alpha1.OperatorLeaseName
	op := e.startOperator(t, "operator-"+name, nil, "--kubeconfig", kc,
		"--leader-election-namespace", config.DefaultNamespace, "--leader-election-id", leaseID)
	t.Cleanup(func() {
		op.stop()
		e.forceCleanup(t, ns, pool)
	})
	// forbidden returns the operator's log lines that report a refused
	// request, client-go's reflectors included.
	forbidden := func() error {
		var lines []string
		for _, l := range op.logs() {
			if strings.Contains(l, "forbidden") {
				lines = append(lines, l)
			}
		}
		if len(lines) == 0 {
			return nil
		}
		return fmt.Errorf("the operator was refused %d requests; first: %s", len(lines), lines[0])
	}
	// until polls done, failing fast on a refused request.
	until := func(what string, timeout time.Duration, done func(context.Context) bool) error {
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			if err := forbidden(); err != nil {
				return false, err
			}
			return done(ctx), nil
		})
		if err != nil && forbidden() == nil {
			return fmt.Errorf("%s: not within %s (%v)", what, timeout, err)
		}
		return err
	}

	pod := opPod(ns, "app", "1500m", "3Gi", map[string]string{v1alpha1.LabelNodePool: pool})
	e.createPods(t, []*corev1.Pod{pod})
	var running corev1.Pod
	err := until("the pending pod runs on a provisioned node", 90*time.Second, func(ctx context.Context) bool {
		return e.c.Get(ctx, client.ObjectKeyFromObject(pod), &running) == nil && running.Status.Phase == corev1.PodRunning
	})
	if err != nil {
		return err
	}
	claims := e.claims(t, pool)
	if len(claims) != 1 {
		return fmt.Errorf("%d NodeClaims for pool %s, want 1", len(claims), pool)
	}
	claim := claims[0]
	if claim.Status.NodeName == "" || running.Spec.NodeName != claim.Status.NodeName {
		return fmt.Errorf("the pod runs on %q, the NodeClaim's node is %q", running.Spec.NodeName, claim.Status.NodeName)
	}
	t.Logf("%s: pod on %s (NodeClaim %s, %s)", name, running.Spec.NodeName, claim.Name, claim.Status.InstanceType)
	if ev := e.podEvents(t, ns, pod.Name, "Nominated"); len(ev) == 0 {
		return errors.New("no Nominated event on the pod")
	}
	err = until("the NodePool's status counts the node", 30*time.Second, func(ctx context.Context) bool {
		var np v1alpha1.NodePool
		return e.c.Get(ctx, client.ObjectKey{Name: pool}, &np) == nil && np.Status.Nodes == 1
	})
	if err != nil {
		return err
	}
	lease, err := e.Client().CoordinationV1().Leases(config.DefaultNamespace).Get(ctx, leaseID, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return fmt.Errorf("no leader Lease %s/%s held: %v", config.DefaultNamespace, leaseID, err)
	}

	// Watch the node and the pod while the claim goes: the drain cordons
	// the node and evicts the pod through the Eviction API, which marks it
	// DisruptionTarget. (The two watches' events are not ordered against
	// each other, so the order of the deletions is not checked here.)
	nodeName := claim.Status.NodeName
	nodeWatch, err := e.Client().CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + nodeName})
	if err != nil {
		t.Fatal(err)
	}
	defer nodeWatch.Stop()
	podWatch, err := e.Client().CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + pod.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer podWatch.Stop()
	if err := e.c.Delete(ctx, &claim); err != nil {
		t.Fatal(err)
	}
	var cordoned, evicted, podGone, nodeGone bool
	timeout := time.After(90 * time.Second)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for !podGone || !nodeGone {
		select {
		case <-tick.C:
			if err := forbidden(); err != nil {
				return err
			}
		case ev := <-nodeWatch.ResultChan():
			if n, ok := ev.Object.(*corev1.Node); ok {
				cordoned = cordoned || n.Spec.Unschedulable
				nodeGone = nodeGone || ev.Type == watch.Deleted
			}
		case ev := <-podWatch.ResultChan():
			if p, ok := ev.Object.(*corev1.Pod); ok {
				for _, c := range p.Status.Conditions {
					evicted = evicted || (c.Type == corev1.DisruptionTarget && c.Reason == "EvictionByEvictionAPI")
				}
				podGone = podGone || ev.Type == watch.Deleted
			}
		case <-timeout:
			if err := forbidden(); err != nil {
				return err
			}
			return fmt.Errorf("after deleting NodeClaim %s: pod deleted %t, node deleted %t within 90 s", claim.Name, podGone, nodeGone)
		}
	}
	if !cordoned || !evicted {
		return fmt.Errorf("node %s cordoned %t, pod evicted through the Eviction API %t: not a drain", nodeName, cordoned, evicted)
	}
	err = until("the NodeClaim is gone", 30*time.Second, func(context.Context) bool { return len(e.claims(t, pool)) == 0 })
	if err != nil {
		return err
	}
	// The lifecycle logs "terminated" right after the finalizer goes, so
	// the line may trail the claim's deletion by a moment.
	_ = until("the operator logs 'terminated'", 10*time.Second, func(context.Context) bool { return len(op.records("terminated")) > 0 })
	if rec := op.records("terminated"); len(rec) != 1 {
		return fmt.Errorf("%d 'terminated' logs, want 1", len(rec))
	}
	return forbidden()
}

// operatorIdentity installs the operator's namespace, CRDs, ServiceAccount and
// RBAC from the rendered manifests — not its Deployment, so a test can run the
// operator as a process — and returns a kubeconfig for that ServiceAccount.
// Run the operator with it and --leader-election-namespace
// config.DefaultNamespace, and a permission the manifests lack fails the test.
// Each revocation takes one verb on one resource out of the ClusterRole
// before it is applied (again, if it already was), to prove that a missing
// permission is noticed.
func operatorIdentity(t *testing.T, env *testenv.Env, revoke ...revocation) string {
	t.Helper()
	all, err := config.Render(config.Options{Cloud: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	keep := []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
	var docs []string
	revoked := make([]bool, len(revoke)) // by some ClusterRole (the main one or the sim one)
	for _, doc := range strings.Split(string(all), "\n---\n") {
		var obj struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(keep, obj.Kind) {
			continue
		}
		if obj.Kind == "ClusterRole" && len(revoke) > 0 {
			var cr rbacv1.ClusterRole
			if err := yaml.Unmarshal([]byte(doc), &cr); err != nil {
				t.Fatal(err)
			}
			for i, r := range revoke {
				rules, ok := r.from(cr.Rules)
				revoked[i] = revoked[i] || ok
				cr.Rules = rules
			}
			b, err := yaml.Marshal(&cr)
			if err != nil {
				t.Fatal(err)
			}
			doc = string(b)
		}
		docs = append(docs, doc)
	}
	for i, r := range revoke {
		if !revoked[i] {
			t.Fatalf("no ClusterRole grants %s, so it cannot be revoked", r)
		}
	}
	path := filepath.Join(t.TempDir(), "identity.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := kubectl(t, env, "apply", "--server-side", "-f", path); r.err != nil {
		t.Fatalf("applying the operator's RBAC: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	if r := kubectl(t, env, "wait", "--for", "condition=Established", "--timeout", "60s", "crd", "--all"); r.err != nil {
		t.Fatalf("kubectl wait: %v\n%s", r.err, r.stderr)
	}
	kc := operatorKubeconfig(t, env, config.DefaultNamespace)
	// RBAC is enforced from the authorizer's informer: wait until it agrees.
	for _, r := range revoke {
		err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			res := kubectlAs(t, env, kc, "auth", "can-i", r.Verb, r.resource())
			return strings.TrimSpace(res.stdout) == "no", nil
		})
		if err != nil {
			t.Fatalf("the operator may still %s after its revocation", r)
		}
	}
	return kc
}

// revocation is one verb on one resource taken out of the operator's
// ClusterRole.
type revocation struct{ Group, Resource, Verb string }

func (r revocation) String() string { return r.Verb + " " + r.resource() }

// resource is the resource as kubectl auth can-i names it.
func (r revocation) resource() string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

// from returns rules without r: a rule that grants r to several resources
// is split so that the others keep every verb. It reports whether any rule
// granted r.
func (r revocation) from(rules []rbacv1.PolicyRule) ([]rbacv1.PolicyRule, bool) {
	var out []rbacv1.PolicyRule
	found := false
	for _, rule := range rules {
		if !slices.Contains(rule.APIGroups, r.Group) || !slices.Contains(rule.Resources, r.Resource) || !slices.Contains(rule.Verbs, r.Verb) {
			out = append(out, rule)
			continue
		}
		found = true
		without := func(list []string, s string) []string {
			return slices.DeleteFunc(slices.Clone(list), func(x string) bool { return x == s })
		}
		if groups := without(rule.APIGroups, r.Group); len(groups) > 0 {
			o := *rule.DeepCopy()
			o.APIGroups = groups
			out = append(out, o)
		}
		if resources := without(rule.Resources, r.Resource); len(resources) > 0 {
			o := *rule.DeepCopy()
			o.APIGroups, o.Resources = []string{r.Group}, resources
			out = append(out, o)
		}
		if verbs := without(rule.Verbs, r.Verb); len(verbs) > 0 {
			o := *rule.DeepCopy()
			o.APIGroups, o.Resources, o.Verbs = []string{r.Group}, []string{r.Resource}, verbs
			out = append(out, o)
		}
	}
	return out, found
}

// operatorKubeconfig returns a kubeconfig that authenticates as the
// operator's ServiceAccount in namespace (from the installed manifests) with
// a token from the TokenRequest API, so a test can run the operator with
// exactly the permissions the manifests grant.
func operatorKubeconfig(t *testing.T, env *testenv.Env, namespace string) string {
	t.Helper()
	var token string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		r := kubectl(t, env, "-n", namespace, "create", "token", config.ServiceAccount, "--duration", "1h")
		token = strings.TrimSpace(r.stdout)
		return r.err == nil && token != "", nil
	})
	if err != nil {
		t.Fatalf("kubectl create token %s: %v", config.ServiceAccount, err)
	}
	admin, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var ca []byte
	for _, c := range admin.Clusters {
		ca = c.CertificateAuthorityData
		if ca == nil && c.CertificateAuthority != "" {
			if ca, err = os.ReadFile(c.CertificateAuthority); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ca == nil {
		t.Fatal(errors.New("the admin kubeconfig has no CA"))
	}
	return kubeconfig(t, env.Host, ca, token)
}

// kubectlAs runs the cached kubectl with another kubeconfig.
func kubectlAs(t *testing.T, env *testenv.Env, kc string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(env.BinDir, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kc, "KUBECACHEDIR="+env.KubectlCacheDir())
	return runCmd(cmd)
}

// TestOperatorImage builds the image as `make image` does — a static linux
// binary for this machine's architecture, then hack/image — and checks the
// OCI tarball: under 60 MB, one linux image whose config runs the operator
// entrypoint as a non-root user.
func TestOperatorImage(t *testing.T) {
	t.Parallel() // no control plane: runs beside the other tests that need none
	root := repoRoot(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "kubectl-rightsize")
	start := time.Now()
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=v0.0.0-e2e", "-o", bin, "./cmd/kubectl-rightsize")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if r := runCmd(build); r.err != nil {
		t.Fatalf("go build: %v\n%s", r.err, r.stderr)
	}
	buildTook := time.Since(start)
	tarPath := filepath.Join(dir, "kubectl-rightsize-image.tar")
	img := exec.Command("go", "-C", filepath.Join(root, "hack", "image"), "run", ".",
		"-out", tarPath, "-tag", config.ImageRepository+":v0.0.0-e2e", "-version", "v0.0.0-e2e",
		"-docs", filepath.Join(root, "LICENSE")+","+filepath.Join(root, "NOTICE"),
		"-binary", "linux/"+runtime.GOARCH+"="+bin)
	img.Env = append(os.Environ(), "GOWORK=off")
	r := runCmd(img)
	if r.err != nil {
		t.Fatalf("hack/image: %v\n%s", r.err, r.stderr)
	}
	fi, err := os.Stat(tarPath)
	if err != nil {
		t.Fatalf("no OCI tarball: %v", err)
	}
	binInfo, _ := os.Stat(bin)
	t.Logf("image tarball %.1f MB (binary %.1f MB uncompressed); binary built in %s, image in %s",
		float64(fi.Size())/1e6, float64(binInfo.Size())/1e6, buildTook.Round(time.Second), r.took.Round(time.Second))
	if fi.Size() >= 60e6 {
		t.Errorf("the image tarball is %.1f MB, over 60 MB", float64(fi.Size())/1e6)
	}

	cfg := readOCIConfig(t, tarPath)
	if u := strings.Split(cfg.Config.User, ":")[0]; u == "" || u == "0" || u == "root" {
		t.Errorf("the image runs as user %q, want a non-root UID", cfg.Config.User)
	}
	if want := []string{"/kubectl-rightsize", "operator"}; !slices.Equal(cfg.Config.Entrypoint, want) {
		t.Errorf("entrypoint %v, want %v", cfg.Config.Entrypoint, want)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s", cfg.OS, cfg.Architecture)
	}
	// The Deployment's runAsUser is the image's user.
	if !strings.HasPrefix(cfg.Config.User, "65532") {
		t.Errorf("user %q differs from the Deployment's runAsUser 65532", cfg.Config.User)
	}
}

// ociConfig is the part of an OCI image config checked here.
type ociConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User       string   `json:"User"`
		Entrypoint []string `json:"Entrypoint"`
	} `json:"config"`
}

// readOCIConfig follows an OCI layout tarball from index.json through any
// nested index to the one image manifest and its config, with the standard
// library only.
func readOCIConfig(t *testing.T, tarPath string) ociConfig {
	t.Helper()
	f, err := os.Open(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg && !strings.HasSuffix(h.Name, "/") {
			if h.Size > 1<<20 { // layers: only their presence matters here
				files[h.Name] = nil
				continue
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = b
		}
	}
	if _, ok := files["oci-layout"]; !ok {
		t.Fatalf("not an OCI layout: no oci-layout file among %d", len(files))
	}
	type descriptor struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
	}
	var doc struct {
		MediaType string       `json:"mediaType"`
		Manifests []descriptor `json:"manifests"`
		Config    descriptor   `json:"config"`
		Layers    []descriptor `json:"layers"`
	}
	blob := func(d descriptor) []byte {
		algo, hex, _ := strings.Cut(d.Digest, ":")
		b, ok := files["blobs/"+algo+"/"+hex]
		if !ok {
			t.Fatalf("blob %s missing", d.Digest)
		}
		return b
	}
	b := files["index.json"]
	for range 3 {
		doc.Manifests = nil
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Manifests) == 0 {
			break
		}
		if len(doc.Manifests) != 1 {
			t.Fatalf("%d manifests, want one image", len(doc.Manifests))
		}
		b = blob(doc.Manifests[0])
	}
	if doc.Config.Digest == "" || len(doc.Layers) == 0 {
		t.Fatalf("no image manifest at the end of index.json")
	}
	for _, l := range doc.Layers {
		if _, ok := files["blobs/"+strings.Replace(l.Digest, ":", "/", 1)]; !ok {
			t.Errorf("layer %s missing", l.Digest)
		}
	}
	var cfg ociConfig
	if err := json.Unmarshal(blob(doc.Config), &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestKubectlKustomizeRendersWhatThePluginPrints: `kubectl apply -k
// config/default` from a checkout and `kubectl rightsize operator install`
// install the same objects.
func TestKubectlKustomizeRendersWhatThePluginPrints(t *testing.T) {
	t.Parallel() // no control plane: runs beside the other tests that need none
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, cachedKubectl(t), "kustomize", filepath.Join(repoRoot(t), "config", "default")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize config/default: %v", err)
	}
	rendered, err := config.Render(config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(rendered) {
		t.Errorf("kubectl kustomize and config.Render differ (%d and %d bytes)", len(out), len(rendered))
	}
}
