package v1alpha1

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedFilesAreUpToDate regenerates the deepcopy functions and the
// CRD manifests into a temporary directory with the controller-gen pinned
// in go.mod and compares them with the committed ones.
func TestGeneratedFilesAreUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs controller-gen")
	}
	tmp := t.TempDir()
	cmd := exec.Command("go", "tool", "controller-gen", "object", "paths=.", "crd:crdVersions=v1",
		"output:object:dir="+filepath.Join(tmp, "object"), "output:crd:dir="+filepath.Join(tmp, "crd"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen: %v\n%s", err, out)
	}
	compare := func(generated, committed string) {
		t.Helper()
		want, err := os.ReadFile(generated)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(committed)
		if err != nil {
			t.Fatalf("%v; run `make generate`", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is out of date; run `make generate`", committed)
		}
	}
	compare(filepath.Join(tmp, "object", "zz_generated.deepcopy.go"), "zz_generated.deepcopy.go")
	crdDir := filepath.Join("..", "..", "..", "config", "crd")
	generated, err := filepath.Glob(filepath.Join(tmp, "crd", "*.yaml"))
	if err != nil || len(generated) == 0 {
		t.Fatalf("controller-gen wrote no CRDs: %v", err)
	}
	for _, g := range generated {
		compare(g, filepath.Join(crdDir, filepath.Base(g)))
	}
	committed, _ := filepath.Glob(filepath.Join(crdDir, Group+"_*.yaml"))
	if len(committed) != len(generated) {
		t.Errorf("config/crd holds %d CRDs, controller-gen makes %d; run `make generate` and remove stale ones", len(committed), len(generated))
	}
}
