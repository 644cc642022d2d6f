package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// cliRun is our whole command line on the mix, as a user runs it:
// `kubectl-rightsize explain -f pods.yaml -f nodepool.json
// --instance-types types.json -o json`, timed from start to exit.
type cliRun struct {
	// Wall is the process's run time; MaxRSS its peak resident memory,
	// bytes.
	Wall   time.Duration
	MaxRSS int64
	// Nodes and Cost are the plan it printed.
	Nodes int
	Cost  float64
}

// buildCLI builds our binary from the repository this module sits in
// (hack/karpenterbench) into dir.
func buildCLI(dir string) (string, error) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "kubectl-rightsize")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/kubectl-rightsize")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building kubectl-rightsize in %s: %w\n%s", root, err, out)
	}
	return bin, nil
}

// runCLI writes the pods as one YAML file of Pod documents beside the
// NodePool (JSON) and the types file of in, runs bin's explain on them
// and reads its plan.
func runCLI(bin string, in ourInput, pods []*corev1.Pod, dir string) (cliRun, error) {
	var docs bytes.Buffer
	for _, p := range pods {
		pod := p.DeepCopy()
		pod.APIVersion, pod.Kind = "v1", "Pod"
		b, err := yaml.Marshal(pod)
		if err != nil {
			return cliRun{}, fmt.Errorf("writing pod %s: %w", pod.Name, err)
		}
		docs.WriteString("---\n")
		docs.Write(b)
	}
	podsFile, poolFile := filepath.Join(dir, "pods.yaml"), filepath.Join(dir, "nodepool.json")
	if err := os.WriteFile(podsFile, docs.Bytes(), 0o600); err != nil {
		return cliRun{}, err
	}
	if err := os.WriteFile(poolFile, in.pool, 0o600); err != nil {
		return cliRun{}, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "explain", "-f", podsFile, "-f", poolFile, "--instance-types", in.typesFile, "-o", "json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	out := cliRun{Wall: time.Since(start)}
	if err != nil {
		return out, fmt.Errorf("%s: %w\n%s", cmd, err, stderr.String())
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		out.MaxRSS = ru.Maxrss << 10 // KiB on Linux
	}
	var plan struct {
		Nodes []json.RawMessage `json:"nodes"`
		Total float64           `json:"totalPricePerHour"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &plan); err != nil {
		return out, fmt.Errorf("reading the plan %s printed: %w", bin, err)
	}
	out.Nodes, out.Cost = len(plan.Nodes), plan.Total
	return out, nil
}
