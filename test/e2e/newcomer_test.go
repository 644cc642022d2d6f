package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOneNodeRowAndTotalCostTheSamePerMonth runs explain -f on the
// guestbook (one node) and checks that the node's row and the TOTAL row
// print the same monthly price: $0.0765/h is $55.845 a month, and the row
// once printed 55.84 above a TOTAL of 55.85.
func TestOneNodeRowAndTotalCostTheSamePerMonth(t *testing.T) {
	r := plugin(t, "/nonexistent", "explain", "-f", filepath.Join("testdata", "public", "guestbook"))
	if r.err != nil {
		t.Fatalf("explain: %v\n%s", r.err, r.stderr)
	}
	var rows [][]string
	for _, line := range strings.Split(r.stdout, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && (f[0] == "default" || f[0] == "TOTAL") {
			rows = append(rows, f)
		}
	}
	if len(rows) != 2 || rows[0][len(rows[0])-4] != "1" {
		t.Fatalf("want one node's row and the TOTAL:\n%s", r.stdout)
	}
	node, total := rows[0], rows[1]
	if node[len(node)-1] != total[len(total)-1] || node[len(node)-2] != total[len(total)-2] {
		t.Errorf("one node at %s $/h %s $/month, TOTAL %s $/h %s $/month:\n%s",
			node[len(node)-2], node[len(node)-1], total[len(total)-2], total[len(total)-1], r.stdout)
	}
}

// TestARequestAboveItsLimitIsRefused feeds explain a Deployment whose
// container requests more CPU than its limit, which the API server
// refuses: explain once planned a node for its pods; now it names the
// field, as for a negative request, and exits 1.
func TestARequestAboveItsLimitIsRefused(t *testing.T) {
	dir := t.TempDir()
	manifest := webDeployment(3, `{requests: {cpu: "1"}, limits: {cpu: 500m}}`)
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	r := plugin(t, "/nonexistent", "explain", "-f", filepath.Join(dir, "web.yaml"))
	want := `Deployment "web": spec.template.spec.containers[0].resources.requests.cpu: 1 is above the limit of 500m; the API server refuses such a pod`
	if r.err == nil || !strings.Contains(r.stderr, want) || strings.Contains(r.stdout, "TOTAL") {
		t.Errorf("explain: %v, want exit 1 with %q and no plan\nstdout:\n%s\nstderr:\n%s", r.err, want, r.stdout, r.stderr)
	}
}

// webDeployment is the manifest of a Deployment "web" of replicas pods
// with one container, whose resources are resources (a YAML flow
// mapping, e.g. `{requests: {cpu: "1"}}`).
func webDeployment(replicas int, resources string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: web
        resources: %s
`, replicas, resources)
}

// buildInfo is what `go version -m` reads from a binary: the main
// module's version and the VCS settings go build stamped.
type buildInfo struct {
	module, revision, modified string
}

// goVersionM runs `go version -m bin`, Go's own reading of the build info.
func goVersionM(t *testing.T, bin string) buildInfo {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m %s: %v", bin, err)
	}
	var b buildInfo
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "mod":
			b.module = f[2]
		case len(f) == 2 && f[0] == "build":
			if v, ok := strings.CutPrefix(f[1], "vcs.revision="); ok {
				b.revision = v
			}
			if v, ok := strings.CutPrefix(f[1], "vcs.modified="); ok {
				b.modified = v
			}
		}
	}
	if b.module == "" || b.revision == "" || b.modified == "" {
		t.Fatalf("go version -m %s has no module version or VCS settings:\n%s", bin, out)
	}
	return b
}

// versionInfo is `version -o json`.
type versionInfo struct {
	Version, Commit, Date, GoVersion string
	Modified                         bool
}

// runVersion runs `bin version` and `bin version -o json`.
func runVersion(t *testing.T, bin string) (string, versionInfo) {
	t.Helper()
	line, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	js, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("%s version -o json: %v", bin, err)
	}
	var v versionInfo
	if err := json.Unmarshal(js, &v); err != nil {
		t.Fatalf("version -o json: %v\n%s", err, js)
	}
	return strings.TrimSpace(string(line)), v
}

// TestVersionSaysWhatWasBuilt builds the plugin as a newcomer does, from
// a clone of this repository's HEAD (issue 18: "version shows the module
// version and VCS revision from the build info"): go build of the clean
// tree, go build after an edit, and make build (the Makefile's -ldflags
// -X main.version=$(git describe --dirty) …). Each binary's version line
// and JSON must agree with what `go version -m` reads from the same
// binary: the module version, the revision, and vcs.modified shown as
// "-dirty" on the commit.
func TestVersionSaysWhatWasBuilt(t *testing.T) {
	t.Parallel() // no control plane
	root := repoRootDir(t)
	git := func(dir string, args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	head := git(root, "rev-parse", "HEAD")
	src := filepath.Join(t.TempDir(), "src")
	git(root, "clone", "--quiet", "--shared", "--no-checkout", root, src)
	git(src, "checkout", "--quiet", "--detach", head)
	bin := t.TempDir()
	// A user's go build stamps the VCS settings (-buildvcs=auto); this
	// machine's go env may turn that off (GOFLAGS=-buildvcs=false), which
	// the command line and the environment below override.
	env := append(os.Environ(), "GOFLAGS=-buildvcs=true -trimpath")
	gobuild := func(name string) string {
		t.Helper()
		out := filepath.Join(bin, name)
		cmd := exec.Command("go", "build", "-o", out, "./cmd/kubectl-rightsize")
		cmd.Dir, cmd.Env = src, env
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, b)
		}
		return out
	}
	// want is the version line a binary whose JSON is v prints for
	// version and commit.
	want := func(v versionInfo, version, commit string) string {
		return fmt.Sprintf("kubectl-rightsize %s (commit %s, built %s, %s)", version, commit, v.Date, v.GoVersion)
	}

	t.Run("go build of a clean tree", func(t *testing.T) {
		exe := gobuild("clean")
		b := goVersionM(t, exe)
		line, v := runVersion(t, exe)
		if b.revision != head || b.modified != "false" {
			t.Fatalf("go version -m: revision %s modified %s, want %s false", b.revision, b.modified, head)
		}
		if v.Commit != head || v.Modified || v.Version != b.module || line != want(v, b.module, head) {
			t.Errorf("version %q, JSON %+v; want module %s, commit %s, not modified", line, v, b.module, head)
		}
	})
	t.Run("go build after an edit", func(t *testing.T) {
		readme := filepath.Join(src, "README.md")
		data, err := os.ReadFile(readme)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(readme, append(data, "\nan uncommitted edit\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		exe := gobuild("edited")
		b := goVersionM(t, exe)
		line, v := runVersion(t, exe)
		if b.revision != head || b.modified != "true" {
			t.Fatalf("go version -m: revision %s modified %s, want %s true", b.revision, b.modified, head)
		}
		if v.Commit != head || !v.Modified || v.Version != b.module || line != want(v, b.module, head+"-dirty") {
			t.Errorf("version %q, JSON %+v; want module %s, commit %s-dirty, modified", line, v, b.module, head)
		}

		// make build stamps git describe --dirty, the commit and the date.
		exe = filepath.Join(bin, "make")
		cmd := exec.Command("make", "build", "BIN="+exe)
		cmd.Dir, cmd.Env = src, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make build: %v\n%s", err, out)
		}
		describe := git(src, "describe", "--tags", "--always", "--dirty")
		line, v = runVersion(t, exe)
		if _, err := time.Parse(time.RFC3339, v.Date); err != nil {
			t.Errorf("make build's date %q: %v", v.Date, err)
		}
		if !strings.HasSuffix(describe, "-dirty") || v.Version != describe || v.Commit != head || !v.Modified || line != want(v, describe, head+"-dirty") {
			t.Errorf("version %q, JSON %+v; want version %s (git describe --dirty), commit %s-dirty, modified", line, v, describe, head)
		}
	})
}

// inputManifests are the inputs of TestInputAsUsersHaveIt, as newcomers
// have them: written to a temporary directory by the test.
var inputManifests = map[string]string{
	// requests misspelt: the pods would be planned as requesting nothing.
	"typo.yaml": webDeployment(2, `{requets: {cpu: "1", memory: 2Gi}}`),
	"hpa.yaml": webDeployment(1, `{requests: {cpu: "1", memory: 2Gi}}`) + `---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 4
  maxReplicas: 10
`,
	"chart.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.replicas }}
`,
	// Two JSON documents separated by ---, as kubectl apply -f reads them.
	"pods.json": `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}
---
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b"}, "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}
`,
	// 7 pods that request nothing, beside one that does.
	"besteffort.yaml": strings.ReplaceAll(webDeployment(7, `{}`), "web", "idle") + `---
apiVersion: v1
kind: Pod
metadata: {name: busy}
spec:
  containers:
  - {name: c, image: i, resources: {requests: {cpu: "1", memory: 1Gi}}}
`,
	"spot-pod.yaml": `apiVersion: v1
kind: Pod
metadata: {name: batch}
spec:
  nodeSelector: {karpenter.sh/capacity-type: spot}
  containers:
  - {name: c, image: i, resources: {requests: {cpu: "1", memory: 1Gi}}}
`,
	// A v1alpha5 Provisioner that names no capacity type, arch or family.
	"provisioner.yaml": `apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: default}
spec:
  providerRef: {name: default}
  requirements:
  - {key: karpenter.k8s.aws/instance-size, operator: NotIn, values: [nano, micro, small]}
`,
	// Kinds that cannot schedule pods, and one that might.
	"kinds.yaml": `apiVersion: v1
kind: Service
metadata: {name: s}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
---
apiVersion: v1
kind: LimitRange
metadata: {name: l}
spec: {limits: [{type: Container, defaultRequest: {cpu: 500m}}]}
`,
}

// TestInputAsUsersHaveIt runs the built plugin offline over the inputs of
// issue 18's "Input as users have it" and "Answers that tell the truth"
// that TestAnswersTellTheTruth and TestPublicManifestsPlan leave out, and
// asserts the line (and exit status) the user sees: a misspelt field
// warns and says what the plan now lacks (--strict refuses it), an HPA's
// minReplicas raises the replicas and says so, a Helm template is told to
// be rendered first, JSON documents separated by --- are read, inert kinds
// are counted in one line while a kind that might schedule pods is named,
// pods that request nothing make the plan a floor (in the table and in
// JSON), a v1alpha5 Provisioner gets the defaults Karpenter's webhook gave
// it (explain -f and import say so), and a pod the pools cannot take gets
// no "No new nodes needed" and a sentence naming the cause.
func TestInputAsUsersHaveIt(t *testing.T) {
	t.Parallel() // no control plane
	dir := t.TempDir()
	for name, data := range inputManifests {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	in := func(name string) string { return filepath.Join(dir, name) }
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string
		wantStderr []string
		notStdout  []string
	}{
		{"a misspelt field warns, with the document, the path and what the plan lacks",
			[]string{"explain", "-f", in("typo.yaml")}, 0, nil,
			[]string{`Warning: ` + in("typo.yaml") + `: document 1: Deployment "web": unknown field "spec.template.spec.containers[0].resources.requets" ignored (--strict rejects it); did you mean requests? without it the container requests no CPU or memory`}, nil},
		{"--strict refuses the misspelt field",
			[]string{"explain", "-f", in("typo.yaml"), "--strict"}, 1, nil,
			[]string{`unknown field "spec.template.spec.containers[0].resources.requets"`}, []string{"TOTAL"}},
		{"an HPA raises the replicas to minReplicas and says so",
			[]string{"explain", "-f", in("hpa.yaml")}, 0, []string{"TOTAL"},
			[]string{`Warning: ` + in("hpa.yaml") + `: document 2: HorizontalPodAutoscaler "web" raises Deployment/web from 1 to 4 replicas (minReplicas); 4 pods are planned`}, nil},
		{"a Helm template is told to be rendered first",
			[]string{"explain", "-f", in("chart.yaml")}, 1, nil,
			[]string{"this looks like a Helm template: render it first: helm template RELEASE CHART | kubectl rightsize explain -f -"}, nil},
		{"JSON documents separated by --- are read",
			[]string{"explain", "-f", in("pods.json"), "-o", "wide"}, 0, []string{"default/a", "default/b"}, nil, nil},
		{"inert kinds are counted in one line, a kind that might schedule pods is named",
			[]string{"explain", "-f", in("kinds.yaml"), "-f", in("pods.json")}, 0, nil,
			[]string{"skipped 2 object(s) of 2 kind(s) that do not schedule pods (ConfigMap, Service)", "kind LimitRange skipped"}, nil},
		{"pods that request nothing make the plan a floor",
			[]string{"explain", "-f", in("besteffort.yaml")}, 0,
			[]string{"7 pod(s) request no CPU or memory; they are planned as taking none, so this plan is a floor."}, nil, nil},
		{"a v1alpha5 Provisioner gets the defaults Karpenter's webhook gave it (explain -f)",
			[]string{"explain", "-f", in("provisioner.yaml"), "-f", in("pods.json"), "-o", "wide"}, 0, []string{"on-demand"},
			[]string{"planned with the requirements Karpenter's AWS webhook defaulted v1alpha5 Provisioners to: karpenter.sh/capacity-type In [on-demand], kubernetes.io/arch In [amd64], karpenter.k8s.aws/instance-category In [c m r], karpenter.k8s.aws/instance-generation Gt [2]"},
			// No row launches spot (the prices line names the spot price date).
			[]string{" spot us-east-1"}},
		{"a v1alpha5 Provisioner gets the defaults Karpenter's webhook gave it (import)",
			[]string{"import", "-f", in("provisioner.yaml")}, 0,
			[]string{"- key: karpenter.sh/capacity-type operator: In values: - on-demand - key: kubernetes.io/arch operator: In values: - amd64"},
			[]string{"Karpenter's AWS webhook defaulted v1alpha5 Provisioners to: karpenter.sh/capacity-type In [on-demand], kubernetes.io/arch In [amd64]"}, nil},
		{"a pod selecting spot on an on-demand pool: no \"No new nodes needed\", and the cause",
			[]string{"explain", "-f", in("spot-pod.yaml")}, 0,
			[]string{"No new node can be proposed: 1 pod(s) cannot be placed (see below).",
				"instance types allowed by NodePool default matches the pod's nodeSelector karpenter.sh/capacity-type=spot",
				"Advice: allowing spot (--capacity-type on-demand,spot) would place 1 of the pod(s) that cannot be placed, for $"}, nil,
			[]string{"No new nodes needed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := plugin(t, "/nonexistent", tc.args...)
			if code := exitCode(t, r.err); code != tc.wantCode {
				t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, r.stdout, r.stderr)
			}
			// Tables and YAML are matched with their runs of blanks as one.
			flat := strings.Join(strings.Fields(r.stdout), " ")
			for _, want := range tc.wantStdout {
				if !strings.Contains(flat, want) {
					t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
				}
			}
			for _, want := range tc.wantStderr {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			for _, not := range tc.notStdout {
				if strings.Contains(flat, not) {
					t.Errorf("stdout says %q:\n%s", not, r.stdout)
				}
			}
		})
	}

	t.Run("-o json counts the pods that request nothing", func(t *testing.T) {
		r := plugin(t, "/nonexistent", "explain", "-f", in("besteffort.yaml"), "-o", "json")
		if r.err != nil {
			t.Fatalf("%v: %s", r.err, r.stderr)
		}
		var got struct {
			BestEffortPods int        `json:"bestEffortPods"`
			Nodes          []jsonNode `json:"nodes"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatal(err)
		}
		pods := 0
		for _, n := range got.Nodes {
			pods += len(n.Pods)
		}
		if got.BestEffortPods != 7 || pods != 8 {
			t.Errorf("bestEffortPods %d over %d planned pods, want 7 over 8", got.BestEffortPods, pods)
		}
	})
}

// TestSpotPricesAPlannerCanLeanOn plans one pod onto r6in.large and one
// onto r6in.2xlarge, spot and on-demand, through the built plugin: issue
// 18 found r6in.large's embedded spot price at 13 % of on-demand while
// r6in.2xlarge's was at 46 %, so plans built fleets of the one and hints
// suggested it. The catalog now plans an outlier at the share its family
// is sold at (docs/concepts/planning.md); the large's share must be at
// least half the 2xlarge's.
func TestSpotPricesAPlannerCanLeanOn(t *testing.T) {
	t.Parallel() // no control plane
	dir := t.TempDir()
	share := func(cpu, memory, wantType string) float64 {
		t.Helper()
		f := filepath.Join(dir, wantType+".yaml")
		pod := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: m}\nspec:\n  containers:\n  - {name: c, image: i, resources: {requests: {cpu: %q, memory: %s}}}\n", cpu, memory)
		if err := os.WriteFile(f, []byte(pod), 0o600); err != nil {
			t.Fatal(err)
		}
		price := map[string]float64{}
		for _, ct := range []string{"spot", "on-demand"} {
			r := plugin(t, "/nonexistent", "explain", "-f", f, "--instance-family", "r6in", "--capacity-type", ct, "--no-eks-daemonsets", "-o", "json")
			if r.err != nil {
				t.Fatalf("explain --capacity-type %s: %v\n%s", ct, r.err, r.stderr)
			}
			var plan struct {
				Nodes []struct {
					InstanceType string  `json:"instanceType"`
					Price        float64 `json:"pricePerHour"`
				} `json:"nodes"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
				t.Fatal(err)
			}
			if len(plan.Nodes) != 1 || plan.Nodes[0].InstanceType != wantType || plan.Nodes[0].Price <= 0 {
				t.Fatalf("--capacity-type %s: nodes %+v, want one %s", ct, plan.Nodes, wantType)
			}
			price[ct] = plan.Nodes[0].Price
		}
		return price["spot"] / price["on-demand"]
	}
	large, xlarge2 := share("1", "4Gi", "r6in.large"), share("6", "24Gi", "r6in.2xlarge")
	t.Logf("spot at %.0f %% of on-demand for r6in.large, %.0f %% for r6in.2xlarge", 100*large, 100*xlarge2)
	if large < xlarge2/2 {
		t.Errorf("r6in.large's spot price is %.0f %% of on-demand, r6in.2xlarge's %.0f %%: the large is an outlier a planner would lean on", 100*large, 100*xlarge2)
	}
}
