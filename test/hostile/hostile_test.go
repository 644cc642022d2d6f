// Package hostile runs hostile and careless input through the built
// kubectl-rightsize binary (issue 28): each case must end within
// caseTimeout, peak at most maxRSS of memory, exit with the code it should,
// say what went wrong on one line naming the file and the cause, and never
// panic.
package hostile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	caseTimeout = 10 * time.Second
	maxRSS      = 512 << 20 // bytes
)

// binary is the kubectl-rightsize built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hostile")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "kubectl-rightsize")
	build := exec.Command("go", "build", "-o", binary, "../../cmd/kubectl-rightsize")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building kubectl-rightsize:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is how a run of the binary ended.
type result struct {
	code   int
	stderr string
	took   time.Duration
	rss    int64 // peak resident memory, bytes
}

// run runs the binary with args and stdin, killing it after caseTimeout.
// signalAfter, when set, sends SIGTERM that long after the start.
func run(t *testing.T, stdin io.Reader, signalAfter time.Duration, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none"))
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if signalAfter > 0 {
		timer := time.AfterFunc(signalAfter, func() { _ = cmd.Process.Signal(syscall.SIGTERM) })
		defer timer.Stop()
	}
	_ = cmd.Wait()
	r := result{code: cmd.ProcessState.ExitCode(), stderr: stderr.String(), took: time.Since(start)}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.rss = ru.Maxrss << 10 // KiB on Linux
	}
	if ctx.Err() != nil {
		t.Fatalf("%v: still running after %s; stderr: %s", args, caseTimeout, r.stderr)
	}
	return r
}

// endless is a reader that never ends.
type endless struct{ b byte }

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = e.b
	}
	return len(p), nil
}

func write(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: x\n    resources:\n      requests:\n        cpu: 100m\n"

func TestHostileInputThroughTheBinary(t *testing.T) {
	dir := t.TempDir()
	fifoDir := filepath.Join(dir, "fifo")
	if err := os.MkdirAll(fifoDir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, fifoDir, "a.yaml", pod)
	if err := syscall.Mkfifo(filepath.Join(fifoDir, "b.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	zeroDir := filepath.Join(dir, "zero")
	write(t, zeroDir, "a.yaml", pod)
	if err := os.Symlink("/dev/zero", filepath.Join(zeroDir, "z.yaml")); err != nil {
		t.Fatal(err)
	}
	var keys strings.Builder
	keys.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n")
	for i := range 1_000_000 {
		fmt.Fprintf(&keys, "  k%07d: v\n", i)
	}
	keysFile := write(t, dir, "keys.yaml", keys.String()+"---\n"+pod)
	deepYAML := write(t, dir, "deep.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: "+strings.Repeat("[", 100_000)+strings.Repeat("]", 100_000)+"\n")
	deepJSON := write(t, dir, "deep.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":`+strings.Repeat("[", 100_000)+strings.Repeat("]", 100_000)+`}}`)
	good := write(t, dir, "good.yaml", pod)
	crds := write(t, dir, "crds.yaml", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: a\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: b\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: s\n")
	big := write(t, dir, "big.yaml", pod+"---\n"+strings.Repeat("# padding\n", 200_000))
	// What the API server or the CRDs refuse (issue 28, items 5 and 6).
	const np = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec:\n  template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: c}}}\n"
	weight101 := write(t, dir, "weight.yaml", np+"  weight: 101\n")
	nodesABC := write(t, dir, "nodes.yaml", np+"  disruption: {budgets: [{nodes: 'abc%'}]}\n")
	cron6 := write(t, dir, "cron6.yaml", np+"  disruption: {budgets: [{nodes: '0', schedule: '0 0 9 * * *', duration: 1h}]}\n")
	every := write(t, dir, "every.yaml", np+"  disruption: {budgets: [{nodes: '0', schedule: '@every 5m', duration: 1h}]}\n")
	gpuFraction := write(t, dir, "gpu.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: g}\nspec:\n  containers:\n  - name: c\n    resources: {limits: {nvidia.com/gpu: \"1.5\"}}\n")
	gpuNoLimit := write(t, dir, "gpu-request.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: g}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {nvidia.com/gpu: 1}}\n")
	noContainers := write(t, dir, "empty-pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: e}\nspec: {containers: []}\n")
	twoPods := write(t, dir, "two.yaml", pod+"---\n"+pod)
	replicas := write(t, dir, "replicas.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 2147483648\n  template: {spec: {containers: [{name: c}]}}\n")
	hugeMemory := write(t, dir, "memory.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: m}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {memory: 999999999999Ei}}\n")
	nanPrice := write(t, dir, "nan-types.yaml", "instanceTypes:\n- name: a.large\n  cpu: \"2\"\n  memory: 8Gi\n  offerings:\n  - {zone: z1, capacityType: on-demand, price: .nan}\n")
	infCPU := write(t, dir, "inf.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: i}\nspec:\n  containers: [{name: c, resources: {requests: {cpu: .inf}}}]\n")

	// A server that accepts and never answers, for remote -k.
	stop := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(silent.Close)
	t.Cleanup(func() { close(stop) })
	remote := filepath.Join(dir, "remote")
	write(t, remote, "kustomization.yaml", "resources:\n- pod.yaml\n- "+silent.URL+"/deploy.yaml\n")
	write(t, remote, "pod.yaml", pod)
	gitRemote := filepath.Join(dir, "gitremote")
	write(t, gitRemote, "kustomization.yaml", "resources:\n- ../remote-overlay\n")
	write(t, filepath.Join(dir, "remote-overlay"), "kustomization.yaml", "resources:\n- github.com/example/app//deploy?ref=v1\n")
	zeroKust := filepath.Join(dir, "zerokust")
	write(t, zeroKust, "kustomization.yaml", "resources:\n- z.yaml\n")
	if err := os.Symlink("/dev/zero", filepath.Join(zeroKust, "z.yaml")); err != nil {
		t.Fatal(err)
	}

	// A stdin that sends nothing and never ends: a pipe whose writer
	// stays open.
	silentStdin, silentWriter, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silentStdin.Close(); silentWriter.Close() })

	tests := []struct {
		name   string
		args   []string
		stdin  io.Reader
		signal time.Duration
		code   int
		want   string // in stderr; "" for a valid input
	}{
		{"explain /dev/zero", []string{"explain", "-f", "/dev/zero"}, nil, 0, 1, "/dev/zero: larger than the 256 MiB limit (--max-input-size)"},
		{"import /dev/zero", []string{"import", "-f", "/dev/zero"}, nil, 0, 1, "/dev/zero: larger than the 256 MiB limit (--max-input-size)"},
		{"explain /dev/urandom", []string{"explain", "-f", "/dev/urandom", "--max-input-size", "8Mi"}, nil, 0, 1, "/dev/urandom: larger than the 8 MiB limit (--max-input-size)"},
		{"import /dev/urandom", []string{"import", "-f", "/dev/urandom", "--max-input-size", "8Mi"}, nil, 0, 1, "/dev/urandom: larger than the 8 MiB limit"},
		{"--instance-types /dev/zero", []string{"explain", "-f", good, "--instance-types", "/dev/zero"}, nil, 0, 1, "--instance-types: /dev/zero: larger than the 256 MiB limit"},
		{"endless stdin", []string{"explain", "-f", "-"}, endless{'a'}, 0, 1, "<stdin>: larger than the 256 MiB limit"},
		{"endless stdin to import", []string{"import", "-f", "-"}, endless{'\n'}, 0, 1, "<stdin>: larger than the 256 MiB limit"},
		{"a FIFO in a directory", []string{"explain", "-f", fifoDir}, nil, 0, 1, "b.yaml: a named pipe (FIFO), not a regular file"},
		{"a FIFO in a directory, import", []string{"import", "-f", fifoDir}, nil, 0, 1, "b.yaml: a named pipe (FIFO), not a regular file"},
		{"a symlink to /dev/zero in a directory", []string{"explain", "-f", zeroDir}, nil, 0, 1, "z.yaml: a character device, not a regular file"},
		{"a symlink to /dev/zero named", []string{"explain", "-f", filepath.Join(zeroDir, "z.yaml"), "--max-input-size", "1Mi"}, nil, 0, 1, "z.yaml: larger than the 1 MiB limit"},
		{"a kustomization resource linked to /dev/zero", []string{"explain", "-k", zeroKust, "--max-input-size", "4Mi"}, nil, 0, 1, "security; file"},
		{"a regular file over the limit", []string{"explain", "-f", big, "--max-input-size", "1Mi"}, nil, 0, 1, "big.yaml: larger than the 1 MiB limit"},
		{"a regular file within a raised limit", []string{"explain", "-f", big, "--max-input-size", "4Mi"}, nil, 0, 0, ""},
		{"a bad --max-input-size", []string{"explain", "-f", good, "--max-input-size", "lots"}, nil, 0, 1, "--max-input-size"},
		{"1M keys", []string{"explain", "-f", keysFile}, nil, 0, 0, ""},
		{"1M keys, import", []string{"import", "-f", keysFile}, nil, 0, 1, "no Karpenter"},
		{"100k-deep YAML", []string{"explain", "-f", deepYAML}, nil, 0, 1, "deep.yaml: document 1 (line 1): nested deeper than 10000 levels"},
		{"100k-deep JSON", []string{"explain", "-f", deepJSON}, nil, 0, 1, "deep.json: document 1 (line 1): nested deeper than 10000 levels"},
		{"100k-deep, import", []string{"import", "-f", deepYAML}, nil, 0, 1, "nested deeper than 10000 levels"},
		{"remote -k refused offline", []string{"explain", "-k", remote}, nil, 0, 1, "names the remote base " + silent.URL + "/deploy.yaml; -k works offline"},
		{"remote git base in a local base refused", []string{"explain", "-k", gitRemote}, nil, 0, 1, "names the remote base github.com/example/app//deploy?ref=v1"},
		{"remote -k allowed, bounded by --timeout", []string{"explain", "-k", remote, "--allow-remote-bases", "--timeout", "2s"}, nil, 0, 1, "did not finish within 2s"},
		// timeout -s TERM 2 explain -f /dev/zero: the limit ends it first
		// (1), or on a loaded machine the signal (143); either way within
		// 3 s with a message naming /dev/zero.
		{"SIGTERM 2 s into explain -f /dev/zero", []string{"explain", "-f", "/dev/zero"}, nil, 2 * time.Second, 1, "/dev/zero"},
		{"SIGTERM while reading a FIFO", []string{"explain", "-f", filepath.Join(fifoDir, "b.yaml")}, nil, time.Second, 143, "error: interrupted by SIGTERM while reading " + filepath.Join(fifoDir, "b.yaml")},
		{"SIGTERM while stdin is silent", []string{"import", "-f", "-"}, silentStdin, time.Second, 143, "interrupted by SIGTERM while reading <stdin>"},
		{"SIGTERM while fetching a remote base", []string{"explain", "-k", remote, "--allow-remote-bases"}, nil, time.Second, 143, "interrupted by SIGTERM"},
		{"a directory without manifests", []string{"explain", "-f", filepath.Join(dir, "fifo", "..", "remote-overlay")}, nil, 0, 1, "no pods or workloads found"},
		{"only CRDs and a Service", []string{"explain", "-f", crds}, nil, 0, 1, "crds.yaml; skipped: 2 CustomResourceDefinition, 1 Service"},
		{"import weight 101", []string{"import", "-f", weight101}, nil, 0, 1, `weight.yaml: document 1 (line 1): NodePool "np": spec.weight: must be between 1 and 100 (101)`},
		{"import nodes abc%", []string{"import", "-f", nodesABC}, nil, 0, 1, `NodePool "np": spec.disruption.budgets[0].nodes: "abc%" is not a count`},
		{"import a six-field cron", []string{"import", "-f", cron6}, nil, 0, 1, `NodePool "np": spec.disruption.budgets[0].schedule: "0 0 9 * * *" has 6 fields`},
		{"explain a six-field cron", []string{"explain", "-f", cron6, "-f", good}, nil, 0, 1, `spec.disruption.budgets[0].schedule: "0 0 9 * * *" has 6 fields`},
		{"import @every", []string{"import", "-f", every}, nil, 0, 1, `spec.disruption.budgets[0].schedule: "@every 5m" is not a cron expression of five fields`},
		{"explain weight 101", []string{"explain", "-f", weight101, "-f", good}, nil, 0, 1, `NodePool "np": spec.weight: must be between 1 and 100 (101)`},
		{"1.5 GPUs", []string{"explain", "-f", gpuFraction}, nil, 0, 1, `gpu.yaml: document 1 (line 1): Pod "g": spec.containers[0].resources.limits.nvidia.com/gpu: 1500m is not a whole number`},
		{"a GPU requested without a limit", []string{"explain", "-f", gpuNoLimit}, nil, 0, 1, `Pod "g": spec.containers[0].resources.limits.nvidia.com/gpu: required, equal to the request of 1`},
		{"a pod without containers", []string{"explain", "-f", noContainers}, nil, 0, 1, `Pod "e": spec.containers: required`},
		{"two pods of one name, --strict", []string{"explain", "-f", twoPods, "--strict"}, nil, 0, 1, "two.yaml: document 2 (line 13): Pod p is also in " + twoPods + ": document 1"},
		{"replicas 2147483648", []string{"explain", "-f", replicas}, nil, 0, 1, `Deployment "d": spec.replicas: 2147483648 is out of range: an int32 holds -2147483648 to 2147483647`},
		{"memory 999999999999Ei", []string{"explain", "-f", hugeMemory}, nil, 0, 1, `Pod "m": spec.containers[0].resources.requests.memory: too large`},
		{"a NaN price", []string{"explain", "-f", good, "--instance-types", nanPrice}, nil, 0, 1, "nan-types.yaml: invalid YAML: NaN is not a finite number"},
		{"an infinite CPU request", []string{"explain", "-f", infCPU}, nil, 0, 1, "inf.yaml: document 1 (line 1): invalid YAML: +Inf is not a finite number"},
		{"a valid file", []string{"explain", "-f", good}, nil, 0, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.stdin, tc.signal, tc.args...)
			t.Logf("exit %d in %s, peak RSS %d MB", r.code, r.took.Round(time.Millisecond), r.rss>>20)
			if r.code != tc.code && !(tc.signal > 0 && r.code == 143) {
				t.Errorf("exit code %d, want %d; stderr: %s", r.code, tc.code, r.stderr)
			}
			if r.rss > maxRSS {
				t.Errorf("peak RSS %d MB, over %d MB", r.rss>>20, maxRSS>>20)
			}
			if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine ") {
				t.Errorf("stderr has a panic: %s", r.stderr)
			}
			if tc.signal > 0 && r.took > tc.signal+time.Second {
				t.Errorf("took %s, more than 1 s after the signal at %s", r.took, tc.signal)
			}
			if tc.want == "" {
				return
			}
			var errs []string
			for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
				if strings.HasPrefix(l, "error: ") {
					errs = append(errs, l)
				}
			}
			if len(errs) != 1 || !strings.Contains(errs[0], tc.want) {
				t.Errorf("stderr %q, want one error line containing %q", r.stderr, tc.want)
			}
		})
	}
}
