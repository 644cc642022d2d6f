// Package e2e tests kubectl-rightsize end to end on a real local control
// plane (test/testenv): the built plugin binary, run directly and through
// the built kubectl, against a real API server, scheduler, controller-manager
// and kwok nodes.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

// pluginDir holds the kubectl-rightsize binary built by TestMain.
var pluginDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "rightsize-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-rightsize"), "github.com/rightsize-dev/kubectl-rightsize/cmd/kubectl-rightsize")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building the plugin: %v\n", err)
		return 1
	}
	pluginDir = dir
	return m.Run()
}

// result is what a run of the plugin printed.
type result struct {
	stdout, stderr string
	err            error
	took           time.Duration
}

// plugin runs the built kubectl-rightsize with KUBECONFIG set to kubeconfig.
func plugin(t testing.TB, kubeconfig string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(pluginDir, "kubectl-rightsize"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "HOME="+t.TempDir())
	return runCmd(cmd)
}

// kubectl runs `kubectl ARGS` with the built kubectl of env and the plugin
// on PATH.
func kubectl(t testing.TB, env *testenv.Env, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := env.Kubectl(ctx, args...)
	cmd.Env = append(cmd.Env, "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return runCmd(cmd)
}

func runCmd(cmd *exec.Cmd) result {
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	return result{stdout: out.String(), stderr: errOut.String(), err: err, took: time.Since(start)}
}
