package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

// Names of the two systems, as rows of the table.
const (
	systemOurs      = "ours"
	systemKarpenter = "karpenter"
)

// poolSpec is one NodePool, written the same for both systems: the same
// instance types, zones, capacity types and taints, and Karpenter's
// default disruption (WhenEmptyOrUnderutilized after 0s, 10% of nodes at
// a time), spelled out for ours.
type poolSpec struct {
	Name          string
	Types         []string
	CapacityTypes []string
	Taint         string // "key=value:Effect" or ""
}

// benchPools are the two pools of every workload: a general pool of the
// CPU families (spot and on-demand, amd64 and arm64) and an on-demand g5
// pool tainted nvidia.com/gpu, as TestLiveEqualsPlan's ramp has them.
func benchPools(sc *sharedCatalog) []poolSpec {
	return []poolSpec{
		{Name: "general", Types: sc.names(false), CapacityTypes: []string{"spot", "on-demand"}},
		{Name: "gpu", Types: sc.names(true), CapacityTypes: []string{"on-demand"}, Taint: "nvidia.com/gpu=true:NoSchedule"},
	}
}

// poolYAML renders a NodePool of group (karpenter.sh/v1 or
// rightsize.dev/v1alpha1) on the node class ref.
func poolYAML(apiVersion, classGroup, classKind, className string, p poolSpec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: %s\nkind: NodePool\nmetadata:\n  name: %s\nspec:\n  template:\n    spec:\n", apiVersion, p.Name)
	fmt.Fprintf(&b, "      nodeClassRef: {group: %s, kind: %s, name: %s}\n", classGroup, classKind, className)
	fmt.Fprintf(&b, "      expireAfter: Never\n")
	if p.Taint != "" {
		kv, effect, _ := strings.Cut(p.Taint, ":")
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "      taints:\n      - {key: %s, value: %q, effect: %s}\n", k, v, effect)
	}
	b.WriteString("      requirements:\n")
	req := func(key string, values []string) {
		fmt.Fprintf(&b, "      - key: %s\n        operator: In\n        values: [%s]\n", key, strings.Join(values, ", "))
	}
	req("node.kubernetes.io/instance-type", p.Types)
	req("karpenter.sh/capacity-type", p.CapacityTypes)
	req("topology.kubernetes.io/zone", benchZones)
	req("kubernetes.io/arch", []string{"amd64", "arm64"})
	b.WriteString("  disruption:\n    consolidationPolicy: WhenEmptyOrUnderutilized\n    consolidateAfter: 0s\n    budgets:\n    - nodes: \"10%\"\n")
	return b.String()
}

// system is one side of the bench: how to install its API on a fresh
// plane, its pools and class, and how to start its controller.
type system struct {
	name string
	// bin is the controller binary; typesFile the shared catalog as it
	// reads it.
	bin, typesFile string
	// crds returns the CRD manifests (files or a kustomization directory,
	// as kubectl apply arguments) and the CRD names to wait for.
	crdArgs  []string
	crdNames []string
	objects  func(pools []poolSpec) string
	start    func(env *testenv.Env, logPath string) (*controller, error)
	// ready waits until the controller acts on the pools.
	ready func(ctx context.Context, env *testenv.Env, c *controller) error
}

// karpenterSystem is Karpenter's kwok provider: CRDs from the Karpenter
// module (pkg/apis/crds, kwok/apis/crds), a KWOKNodeClass and NodePools.
func karpenterSystem(bin, typesFile, moduleDir string) system {
	return system{
		name: systemKarpenter, bin: bin, typesFile: typesFile,
		crdArgs: []string{
			"-f", filepath.Join(moduleDir, "pkg", "apis", "crds", "karpenter.sh_nodepools.yaml"),
			"-f", filepath.Join(moduleDir, "pkg", "apis", "crds", "karpenter.sh_nodeclaims.yaml"),
			"-f", filepath.Join(moduleDir, "pkg", "apis", "crds", "karpenter.sh_nodeoverlays.yaml"),
			"-f", filepath.Join(moduleDir, "kwok", "apis", "crds", "karpenter.kwok.sh_kwoknodeclasses.yaml"),
		},
		crdNames: []string{"nodepools.karpenter.sh", "nodeclaims.karpenter.sh", "nodeoverlays.karpenter.sh", "kwoknodeclasses.karpenter.kwok.sh"},
		objects: func(pools []poolSpec) string {
			docs := []string{"apiVersion: karpenter.kwok.sh/v1alpha1\nkind: KWOKNodeClass\nmetadata:\n  name: default\n"}
			for _, p := range pools {
				docs = append(docs, poolYAML("karpenter.sh/v1", "karpenter.kwok.sh", "KWOKNodeClass", "default", p))
			}
			return strings.Join(docs, "---\n")
		},
		start: func(env *testenv.Env, logPath string) (*controller, error) {
			metrics, err := freePort()
			if err != nil {
				return nil, err
			}
			health, err := freePort()
			if err != nil {
				return nil, err
			}
			return startController(systemKarpenter, bin, logPath, []string{
				"KUBECONFIG=" + env.Kubeconfig,
				"INSTANCE_TYPES_FILE_PATH=" + typesFile,
				"DISABLE_LEADER_ELECTION=true",
				"METRICS_PORT=" + strconv.Itoa(metrics),
				"HEALTH_PROBE_PORT=" + strconv.Itoa(health),
				"SYSTEM_NAMESPACE=kube-system",
				"LOG_LEVEL=info",
			})
		},
		// Karpenter's NodePool readiness controller marks a pool Ready
		// once it has seen its (Ready) KWOKNodeClass.
		ready: func(ctx context.Context, env *testenv.Env, c *controller) error {
			return waitFor(ctx, c, 3*time.Minute, "NodePools Ready", func() bool {
				return kubectl(ctx, env, nil, "wait", "--for", "condition=Ready", "--timeout", "5s",
					"nodepools.karpenter.sh/general", "nodepools.karpenter.sh/gpu") == nil
			})
		},
	}
}

// oursSystem is our operator with the sim cloud on the shared types file:
// CRDs from config/crd, a SimNodeClass and NodePools. It runs with its
// defaults (batching, consolidation interval, validation delay) but
// generous leader-election timings, which only keep it from exiting when
// a loaded machine's API server answers a renewal late.
func oursSystem(bin, typesFile, repoRoot string, extra []string) system {
	return system{
		name: systemOurs, bin: bin, typesFile: typesFile,
		crdArgs:  []string{"-k", filepath.Join(repoRoot, "config", "crd")},
		crdNames: []string{"nodepools.rightsize.dev", "nodeclaims.rightsize.dev", "simnodeclasses.rightsize.dev"},
		objects: func(pools []poolSpec) string {
			docs := []string{"apiVersion: rightsize.dev/v1alpha1\nkind: SimNodeClass\nmetadata:\n  name: sim\n"}
			for _, p := range pools {
				docs = append(docs, poolYAML("rightsize.dev/v1alpha1", "rightsize.dev", "SimNodeClass", "sim", p))
			}
			return strings.Join(docs, "---\n")
		},
		start: func(env *testenv.Env, logPath string) (*controller, error) {
			args := append([]string{"operator", "--cloud", "sim",
				"--kubeconfig", env.Kubeconfig, "--instance-types", typesFile, "--cluster-name", "bench",
				"--metrics-bind-address", "0", "--health-probe-bind-address", "0",
				"--leader-elect-lease-duration", "150s", "--leader-elect-renew-deadline", "120s", "--leader-elect-retry-period", "10s"}, extra...)
			return startController(systemOurs, bin, logPath, nil, args...)
		},
		// The operator logs "provisioner started" once it leads and its
		// caches have synced.
		ready: func(ctx context.Context, env *testenv.Env, c *controller) error {
			return waitFor(ctx, c, 3*time.Minute, `"provisioner started" in its log`, func() bool {
				data, _ := os.ReadFile(c.logPath)
				return bytes.Contains(data, []byte("provisioner started"))
			})
		},
	}
}

// waitFor polls cond every second until it holds, the controller exits,
// or timeout.
func waitFor(ctx context.Context, c *controller, timeout time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return nil
		}
		if err := c.exited(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: no %s within %s", c.name, what, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// install applies the system's CRDs, waits until they are established,
// then applies its node class and pools.
func (s system) install(ctx context.Context, env *testenv.Env, pools []poolSpec) error {
	if err := kubectl(ctx, env, nil, append([]string{"apply", "--server-side"}, s.crdArgs...)...); err != nil {
		return fmt.Errorf("%s CRDs: %w", s.name, err)
	}
	wait := []string{"wait", "--for", "condition=Established", "--timeout", "120s"}
	for _, n := range s.crdNames {
		wait = append(wait, "crd/"+n)
	}
	if err := kubectl(ctx, env, nil, wait...); err != nil {
		return fmt.Errorf("%s CRDs: %w", s.name, err)
	}
	if err := kubectl(ctx, env, []byte(s.objects(pools)), "apply", "-f", "-"); err != nil {
		return fmt.Errorf("%s node class and pools: %w", s.name, err)
	}
	return nil
}

// kubectl runs the plane's kubectl with stdin.
func kubectl(ctx context.Context, env *testenv.Env, stdin []byte, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := env.Kubectl(ctx, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// freePort is a free TCP port on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// buildBinaries builds Karpenter's controller (./karpenter; unless
// withKarpenter is false) and our binary from the repository into dir, and
// reports how long each took.
func buildBinaries(dir string, withKarpenter bool, logf func(string, ...any)) (karpenter, ours string, builds []buildInfo, err error) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", "", nil, err
	}
	karpenter, ours = filepath.Join(dir, "karpenter-kwok"), filepath.Join(dir, "kubectl-rightsize")
	for _, b := range []struct{ name, out, pkg, dir string }{
		{"Karpenter's kwok controller", karpenter, "./karpenter", "."},
		{"kubectl-rightsize", ours, "./cmd/kubectl-rightsize", root},
	} {
		if b.out == karpenter && !withKarpenter {
			continue
		}
		began := time.Now()
		cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
		cmd.Dir = b.dir
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", nil, fmt.Errorf("building %s: %w\n%s", b.name, err, out)
		}
		cpu := time.Duration(0)
		// The go command's rusage includes the compilers it waited for.
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
		wall := time.Since(began)
		logf("built %s in %s (%s CPU)", b.name, wall.Round(100*time.Millisecond), cpu.Round(100*time.Millisecond))
		builds = append(builds, buildInfo{Name: b.name, WallSeconds: wall.Seconds(), CPUSeconds: cpu.Seconds()})
	}
	return karpenter, ours, builds, nil
}

// buildInfo is how long a binary took to build (warm or cold, as the
// build cache was).
type buildInfo struct {
	Name        string  `json:"name"`
	WallSeconds float64 `json:"wallSeconds"`
	CPUSeconds  float64 `json:"cpuSeconds"`
}

// karpenterModuleDir is the module cache directory of sigs.k8s.io/karpenter
// (its CRDs are applied from there).
func karpenterModuleDir() (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/karpenter")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating sigs.k8s.io/karpenter in the module cache: %w", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("sigs.k8s.io/karpenter is not downloaded; run go mod download in hack/karpenterlive")
	}
	return dir, nil
}
