package main

import (
	"bytes"
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

// runMainEnv makes the test binary run main instead of the tests, so that
// the tests can signal a real process.
const runMainEnv = "KUBECTL_RIGHTSIZE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) != "" {
		main()
	}
	os.Exit(m.Run())
}

func TestASignalEndsExplainWithAClearError(t *testing.T) {
	// A cluster that accepts requests and never answers: only the signal
	// can end explain before the 30s request timeout.
	stop, asked := make(chan struct{}), make(chan struct{}, 1)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(stop) })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \""+hang.URL+"\"}\n"+
		"users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: c\n  context: {cluster: c, user: u, namespace: default}\ncurrent-context: c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			select { // a request of the previous run
			case <-asked:
			default:
			}
			cmd := exec.Command(os.Args[0], "explain", "--kubeconfig", kubeconfig)
			cmd.Env = append(os.Environ(), runMainEnv+"=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			select { // explain is reading the cluster: main's handler is in place
			case <-asked:
			case <-time.After(time.Minute):
				t.Fatal("explain sent no request within a minute")
			}
			start := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("explain took %s to end after %s", took, sig)
			}
			if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 128+int(sig) {
				t.Errorf("exit %v, want code %d; stderr:\n%s", err, 128+int(sig), stderr.String())
			}
			if want := "error: interrupted before the report was ready, nothing printed: "; !strings.HasPrefix(stderr.String(), want) {
				t.Errorf("stderr %q, want it to start with %q", stderr.String(), want)
			}
		})
	}
}
