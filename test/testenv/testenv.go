package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Versions of the binaries the cache holds; hack/testenv/build.sh builds them.
const (
	KubernetesVersion = "v1.37.2"
	EtcdVersion       = "v3.6.10"
	KwokVersion       = "v0.8.0"
)

// Binaries that Start needs in BinDir. kubectl is built too, for tests that
// drive the plugin through it (see Env.Kubectl).
var requiredBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

// startTimeout bounds how long Start waits for the plane to become ready.
const startTimeout = 90 * time.Second

// CacheDir is the version-keyed cache directory that hack/testenv/build.sh
// fills: $RIGHTSIZE_TESTENV_DIR, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-rightsize/testenv/<KubernetesVersion>.
func CacheDir() (string, error) {
	if d := os.Getenv("RIGHTSIZE_TESTENV_DIR"); d != "" {
		return d, nil
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("testenv: cannot locate the binary cache: set RIGHTSIZE_TESTENV_DIR or HOME: %w", err)
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "kubectl-rightsize", "testenv", KubernetesVersion), nil
}

// BinDir is the directory holding the control-plane binaries (CacheDir/bin).
func BinDir() (string, error) {
	d, err := CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "bin"), nil
}

// CheckBinaries reports, as an error naming the binary and `make testenv`, the
// first required binary missing from BinDir.
func CheckBinaries() (string, error) {
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	for _, name := range append(append([]string(nil), requiredBinaries...), "kubectl") {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return dir, fmt.Errorf("testenv: control-plane binary %s is missing (%s); run `make testenv` "+
				"(hack/testenv/build.sh) to build the plane into %s — about 20 minutes cold, seconds when cached",
				name, p, dir)
		}
	}
	if _, err := os.Stat(kwokConfigPath(dir)); err != nil {
		return dir, fmt.Errorf("testenv: kwok's stage config %s is missing; run `make testenv` (hack/testenv/build.sh) to write it",
			kwokConfigPath(dir))
	}
	return dir, nil
}

// controlPlaneQPS and controlPlaneBurst are the client rate limits of
// kube-controller-manager and kube-scheduler in the test plane. The
// defaults (20/30 and 50/100) throttle a plane that one test fills with
// thousands of pods and hundreds of nodes at once: kube-scheduler binding
// 5,000 pods at 50 requests a second (a bind and an event each) is minutes
// of a test spent waiting on a client-side token bucket, not on the code
// under test. Large production control planes raise them the same way.
const (
	controlPlaneQPS   = "500"
	controlPlaneBurst = "1000"
)

// schedulerVerbosity is kube-scheduler's --v: 1, or
// RIGHTSIZE_TESTENV_SCHEDULER_V to see why pods wait (3 logs every
// scheduling attempt and every nomination the scheduler sets or clears;
// the log stays with the plane under RIGHTSIZE_TESTENV_KEEP).
func schedulerVerbosity() string {
	if v := os.Getenv("RIGHTSIZE_TESTENV_SCHEDULER_V"); v != "" {
		return v
	}
	return "1"
}

// kwokOptionsYAML raises kwok's parallelism from its defaults (4 node and 4
// pod stage workers, one pods-on-node syncer), which make a few hundred
// nodes Ready at ~5 a second; the stages themselves stay kwok's.
const kwokOptionsYAML = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  nodePlayStageParallelism: 32
  podPlayStageParallelism: 32
  nodeLeaseParallelism: 16
  podsOnNodeSyncParallelism: 8
`

// kwokConfigPath is the kwok configuration (its default stages) that
// hack/testenv/build.sh writes next to bin/.
func kwokConfigPath(binDir string) string {
	return filepath.Join(filepath.Dir(binDir), "etc", "kwok.yaml")
}

// Env is a running control plane. Its fields are read-only.
type Env struct {
	// Dir is the private temporary directory: certificates, kubeconfigs,
	// etcd data and one <component>.log per process.
	Dir string
	// BinDir holds the binaries the plane runs (and kubectl).
	BinDir string
	// Kubeconfig is the path of an admin (system:masters) kubeconfig.
	Kubeconfig string
	// Host is the apiserver URL, https://127.0.0.1:<port>.
	Host string
	// StartupTime is how long Start took, from the first process to ready.
	StartupTime time.Duration

	restConfig *rest.Config
	client     kubernetes.Interface
	procs      []*process
	stopOnce   sync.Once
	keep       bool
}

// Start starts a control plane for a test (or, with t from a TestMain-driven
// test, a suite), stops it in t.Cleanup and, if the test failed, logs the tail
// of each component's log. A missing binary or a plane that does not become
// ready fails the test with t.Fatal — never a skip.
func Start(t testing.TB) *Env {
	t.Helper()
	env, err := New(context.Background(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			var buf bytes.Buffer
			env.DumpLogs(&buf, 40)
			t.Log(buf.String())
		}
		env.Stop()
	})
	t.Logf("testenv: control plane %s ready in %s at %s (dir %s)", KubernetesVersion, env.StartupTime.Round(time.Millisecond), env.Host, env.Dir)
	return env
}

// New starts a control plane without a testing.TB, e.g. from TestMain. The
// caller must call Stop. logf (may be nil) receives progress messages.
func New(ctx context.Context, logf func(string, ...any)) (*Env, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	bin, err := CheckBinaries()
	if err != nil {
		return nil, err
	}
	// Ports are picked free and then released, so another process may grab
	// one first; that shows as a component exiting early, and we retry.
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		env, err := start(ctx, bin, logf)
		if err == nil {
			return env, nil
		}
		lastErr = err
		var early *exitedError
		if !errors.As(err, &early) || !early.clash {
			return nil, err
		}
		logf("testenv: attempt %d: %v; retrying with new ports", attempt, err)
	}
	return nil, lastErr
}

func start(ctx context.Context, bin string, logf func(string, ...any)) (_ *Env, err error) {
	began := time.Now()
	removeStaleDirs()
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	e := &Env{Dir: dir, BinDir: bin, keep: os.Getenv("RIGHTSIZE_TESTENV_KEEP") != ""}
	defer func() {
		if err != nil {
			markClash(err) // before Stop removes the log
			var buf bytes.Buffer
			e.DumpLogs(&buf, 30)
			e.Stop()
			err = fmt.Errorf("%w\n%s", err, buf.String())
		}
	}()

	ports, err := freePorts(3)
	if err != nil {
		return nil, fmt.Errorf("testenv: free ports: %w", err)
	}
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	e.Host = "https://127.0.0.1:" + strconv.Itoa(apiPort)

	// Certificates, keys and kubeconfigs.
	ca, err := newAuthority()
	if err != nil {
		return nil, fmt.Errorf("testenv: CA: %w", err)
	}
	serving, err := ca.issue("kube-apiserver", nil, []string{"127.0.0.1", "localhost", "10.0.0.1",
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"})
	if err != nil {
		return nil, fmt.Errorf("testenv: serving cert: %w", err)
	}
	files := map[string][]byte{"ca.crt": ca.certPEM, "apiserver.crt": serving.certPEM, "apiserver.key": serving.keyPEM}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, fmt.Errorf("testenv: %w", err)
		}
	}
	saKey, saPub, err := writeServiceAccountKeys(dir)
	if err != nil {
		return nil, fmt.Errorf("testenv: service-account keys: %w", err)
	}
	users := []struct {
		file, cn string
		orgs     []string
	}{
		{"admin", "rightsize-admin", []string{"system:masters"}},
		{"controller-manager", "system:kube-controller-manager", nil},
		{"scheduler", "system:kube-scheduler", nil},
		// kwok updates the status of nodes and pods and owns node leases; it
		// plays every kubelet, so it gets cluster-admin rather than one
		// system:node identity per node.
		{"kwok", "kwok-controller", []string{"system:masters"}},
	}
	kubeconfigs := map[string]string{}
	for _, u := range users {
		kp, err := ca.issue(u.cn, u.orgs, nil)
		if err != nil {
			return nil, fmt.Errorf("testenv: client cert %s: %w", u.file, err)
		}
		path := filepath.Join(dir, u.file+".kubeconfig")
		if err := writeKubeconfig(path, e.Host, ca.certPEM, kp, u.cn); err != nil {
			return nil, fmt.Errorf("testenv: kubeconfig %s: %w", u.file, err)
		}
		kubeconfigs[u.file] = path
	}
	e.Kubeconfig = kubeconfigs["admin"]
	e.restConfig, err = clientcmd.BuildConfigFromFlags("", e.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	e.restConfig.QPS, e.restConfig.Burst = 200, 400
	if e.client, err = kubernetes.NewForConfig(e.restConfig); err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}

	// etcd.
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	if err := e.run("etcd",
		"--name=testenv",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=testenv="+peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	); err != nil {
		return nil, err
	}

	// kube-apiserver.
	if err := e.run("kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// A loopback address cannot back the "kubernetes" Service's endpoints.
		"--endpoint-reconciler-type=none",
		"--secure-port="+strconv.Itoa(apiPort),
		"--cert-dir="+filepath.Join(dir, "apiserver-certs"),
		"--tls-cert-file="+filepath.Join(dir, "apiserver.crt"),
		"--tls-private-key-file="+filepath.Join(dir, "apiserver.key"),
		"--client-ca-file="+filepath.Join(dir, "ca.crt"),
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+saPub,
		"--service-account-signing-key-file="+saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		"--profiling=false",
		"--v=1",
	); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := e.waitReadyz(ctx); err != nil {
		return nil, err
	}
	logf("testenv: etcd and kube-apiserver ready after %s", time.Since(began).Round(time.Millisecond))

	// kube-controller-manager, kube-scheduler and kwok serve no ports of their
	// own (--secure-port=0; kwok's server address left empty).
	if err := e.run("kube-controller-manager",
		"--kubeconfig="+kubeconfigs["controller-manager"],
		"--authentication-kubeconfig="+kubeconfigs["controller-manager"],
		"--authorization-kubeconfig="+kubeconfigs["controller-manager"],
		"--secure-port=0",
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+saKey,
		"--root-ca-file="+filepath.Join(dir, "ca.crt"),
		"--cluster-name=rightsize-testenv",
		// Client rate limits sized for a test plane that creates thousands
		// of pods in seconds (the defaults, 20 QPS here and 50 in the
		// scheduler, are for a shared production API server); see
		// controlPlaneQPS.
		"--kube-api-qps="+controlPlaneQPS, "--kube-api-burst="+controlPlaneBurst,
		"--concurrent-replicaset-syncs=10",
		"--profiling=false",
		"--v=1",
	); err != nil {
		return nil, err
	}
	if err := e.run("kube-scheduler",
		"--kubeconfig="+kubeconfigs["scheduler"],
		"--authentication-kubeconfig="+kubeconfigs["scheduler"],
		"--authorization-kubeconfig="+kubeconfigs["scheduler"],
		"--secure-port=0",
		"--leader-elect=false",
		"--kube-api-qps="+controlPlaneQPS, "--kube-api-burst="+controlPlaneBurst,
		"--profiling=false",
		"--v="+schedulerVerbosity(),
	); err != nil {
		return nil, err
	}
	kwokOptions := filepath.Join(dir, "kwok-options.yaml")
	if err := os.WriteFile(kwokOptions, []byte(kwokOptionsYAML), 0o600); err != nil {
		return nil, fmt.Errorf("testenv: write kwok options: %w", err)
	}
	if err := e.run("kwok",
		"--kubeconfig="+kubeconfigs["kwok"],
		"--config="+kwokConfigPath(bin),
		"--config="+kwokOptions,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+NodeAnnotation+"=fake",
		"--node-ip=127.0.0.1",
		"--node-lease-duration-seconds=40",
		"--v=INFO",
	); err != nil {
		return nil, err
	}

	// Ready when the token and service-account controllers have run: pods in
	// "default" need its ServiceAccount.
	if err := e.waitDefaultServiceAccount(ctx); err != nil {
		return nil, err
	}
	e.StartupTime = time.Since(began)
	return e, nil
}

const dirPrefix = "rightsize-testenv-"

// removeStaleDirs removes the directories of planes whose test binary died
// without cleaning up (e.g. a `go test -timeout` panic; the components
// themselves are killed with it on Linux).
func removeStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "owner.pid"))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 && !alive(pid) {
			_ = os.RemoveAll(d)
		}
	}
}

// RESTConfig returns a copy of the admin rest.Config.
func (e *Env) RESTConfig() *rest.Config { return rest.CopyConfig(e.restConfig) }

// Client returns an admin clientset.
func (e *Env) Client() kubernetes.Interface { return e.client }

// Kubectl returns a command running the cached kubectl against this plane.
// Its discovery cache is the plane's own ([Env.KubectlCacheDir]), not the
// user's ~/.kube/cache: a plane reused by several tests, each installing
// and removing CRDs, must not resolve a resource through an earlier
// test's CRD.
func (e *Env) Kubectl(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(e.BinDir, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.Kubeconfig, "KUBECACHEDIR="+e.KubectlCacheDir())
	return cmd
}

// KubectlCacheDir is the kubectl discovery and HTTP cache of this plane's
// kubectl commands (KUBECACHEDIR); removing it makes kubectl discover the
// API again.
func (e *Env) KubectlCacheDir() string { return filepath.Join(e.Dir, "kubectl-cache") }

// Stop terminates every component (SIGTERM, then SIGKILL after a grace
// period), waits for them and removes Dir unless RIGHTSIZE_TESTENV_KEEP is
// set. It is safe to call more than once.
func (e *Env) Stop() {
	e.stopOnce.Do(func() {
		// Clients of the apiserver first, together; then the apiserver; then etcd.
		var clients, rest []*process
		for _, p := range e.procs {
			if p.name == "kube-apiserver" || p.name == "etcd" {
				rest = append([]*process{p}, rest...)
			} else {
				clients = append(clients, p)
			}
		}
		var wg sync.WaitGroup
		for _, p := range clients {
			wg.Add(1)
			go func() { defer wg.Done(); p.stop(5 * time.Second) }()
		}
		wg.Wait()
		for _, p := range rest {
			p.stop(10 * time.Second)
		}
		if e.keep {
			fmt.Fprintf(os.Stderr, "testenv: kept %s (RIGHTSIZE_TESTENV_KEEP)\n", e.Dir)
			return
		}
		_ = os.RemoveAll(e.Dir)
	})
}

// DumpLogs writes the last n lines of each component's log to w.
func (e *Env) DumpLogs(w io.Writer, n int) {
	for _, p := range e.procs {
		fmt.Fprintf(w, "----- %s (%s), last %d lines -----\n", p.name, p.state(), n)
		for _, l := range tail(p.logPath, n) {
			fmt.Fprintln(w, l)
		}
	}
}

// LogPath is the log file of a component ("etcd", "kube-apiserver",
// "kube-controller-manager", "kube-scheduler", "kwok").
func (e *Env) LogPath(component string) string {
	return filepath.Join(e.Dir, component+".log")
}

func (e *Env) run(name string, args ...string) error {
	p, err := startProcess(filepath.Join(e.BinDir, name), name, e.LogPath(name), e.Dir, args)
	if err != nil {
		return err
	}
	e.procs = append(e.procs, p)
	return nil
}

// exited reports the first component that has exited.
func (e *Env) exited() error {
	for _, p := range e.procs {
		if err := p.exitErr(); err != nil {
			return err
		}
	}
	return nil
}

func (e *Env) waitReadyz(ctx context.Context) error {
	tlsCfg, err := rest.TLSConfigFor(e.restConfig)
	if err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg.Clone()}}
	defer hc.CloseIdleConnections()
	var last string
	for {
		if err := e.exited(); err != nil {
			return err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.Host+"/readyz", nil)
		resp, err := hc.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: kube-apiserver at %s not ready within %s (last /readyz: %s)", e.Host, startTimeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (e *Env) waitDefaultServiceAccount(ctx context.Context) error {
	var last error
	for {
		if err := e.exited(); err != nil {
			return err
		}
		_, err := e.client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: ServiceAccount default/default not created within %s — is kube-controller-manager working? (last error: %v)", startTimeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func writeKubeconfig(path, host string, caPEM []byte, kp keyPair, user string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["testenv"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: kp.certPEM, ClientKeyData: kp.keyPEM}
	cfg.Contexts["testenv"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: user, Namespace: metav1.NamespaceDefault}
	cfg.CurrentContext = "testenv"
	return clientcmd.WriteToFile(*cfg, path)
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// process is one running component.
type process struct {
	name, logPath string
	cmd           *exec.Cmd
	logFile       *os.File
	done          chan struct{}
	waitErr       error
	stopping      bool
	mu            sync.Mutex
}

func startProcess(path, name, logPath, dir string, args []string) (*process, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = lf, lf
	// Never a user's kubeconfig or ~/.kwok/kwok.yaml: HOME is the Env's directory.
	cmd.Env = append(os.Environ(), "KUBECONFIG=/dev/null", "HOME="+dir)
	cmd.SysProcAttr = sysProcAttr()
	fmt.Fprintf(lf, "$ %s %s\n", path, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("testenv: start %s: %w", name, err)
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, logFile: lf, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		lf.Close()
		close(p.done)
	}()
	return p, nil
}

// exitedError is a component that exited while it should be running.
type exitedError struct {
	name, logPath string
	err           error
	// clash is set, while the log is still there, when the component
	// exited because another process took its port (portClash).
	clash bool
}

func (e *exitedError) Error() string {
	return fmt.Sprintf("testenv: %s exited during start-up (%v); log: %s", e.name, e.err, e.logPath)
}

// markClash records in an exitedError within err whether its component
// lost its port, read from its log: it must run before the Env's
// directory, which holds the log, is removed (New retries only a clash).
func markClash(err error) {
	var early *exitedError
	if errors.As(err, &early) {
		early.clash = early.portClash()
	}
}

func (e *exitedError) portClash() bool {
	for _, l := range tail(e.logPath, 50) {
		if strings.Contains(l, "address already in use") {
			return true
		}
	}
	return false
}

func (p *process) exitErr() error {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return &exitedError{name: p.name, logPath: p.logPath, err: p.waitErr}
	default:
		return nil
	}
}

func (p *process) state() string {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.stopping {
			return "stopped"
		}
		if p.waitErr != nil {
			return "exited: " + p.waitErr.Error()
		}
		return "exited"
	default:
		return "running, pid " + strconv.Itoa(p.cmd.Process.Pid)
	}
}

func (p *process) stop(grace time.Duration) {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func tail(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return []string{"(no log: " + err.Error() + ")"}
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 2*n {
			lines = append(lines[:0], lines[len(lines)-n:]...)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// CPUTime reports the CPU time (user and system) each running component
// has used so far, read as ResidentMemory reads its figure (Linux only;
// empty elsewhere): what a benchmark charges to the control plane.
func (e *Env) CPUTime() map[string]time.Duration {
	m := map[string]time.Duration{}
	for _, p := range e.procs {
		if p.exitErr() != nil {
			continue
		}
		if d, err := cpuTime(p.cmd.Process.Pid); err == nil {
			m[p.name] = d
		}
	}
	return m
}

// cpuTime is the CPU time (user and system) the process pid has used, from
// /proc/<pid>/stat, whose times are in USER_HZ (100 a second on Linux).
func cpuTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// utime and stime are fields 14 and 15, the 12th and 13th after it.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100), nil
}

// ResidentMemory reports each running component's resident set size in bytes
// (Linux only; empty elsewhere).
func (e *Env) ResidentMemory() map[string]int64 {
	m := map[string]int64{}
	for _, p := range e.procs {
		if p.exitErr() != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(data), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					m[p.name] = kb * 1024
				}
			}
		}
	}
	return m
}
