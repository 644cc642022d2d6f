package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeDist writes a dist/ as goreleaser leaves it, with two archives, for
// the release of tag v1.2.3.
func fakeDist(t *testing.T) (dir string, sums map[string]string) {
	return fakeRelease(t, "v1.2.3", "1.2.3")
}

// fakeRelease writes a dist/ as goreleaser leaves it for a release of tag
// and version (a snapshot keeps the last tag, or v0.0.0, and versions
// itself 0.0.1-snapshot-<commit>).
func fakeRelease(t *testing.T, tag, version string) (dir string, sums map[string]string) {
	t.Helper()
	dir = t.TempDir()
	sums = map[string]string{}
	type art struct {
		Name   string         `json:"name"`
		Path   string         `json:"path"`
		Goos   string         `json:"goos,omitempty"`
		Goarch string         `json:"goarch,omitempty"`
		Type   string         `json:"type"`
		Extra  map[string]any `json:"extra,omitempty"`
	}
	var arts []art
	var lines []string
	for _, a := range []struct{ os, arch, ext, bin string }{
		{"linux", "amd64", "tar.gz", "kubectl-rightsize"},
		{"windows", "amd64", "zip", "kubectl-rightsize.exe"},
	} {
		name := "kubectl-rightsize_" + version + "_" + a.os + "_" + a.arch + "." + a.ext
		data := []byte("archive " + name)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(data)
		sums[name] = hex.EncodeToString(h[:])
		lines = append(lines, sums[name]+"  "+name)
		arts = append(arts, art{Name: name, Path: "dist/" + name, Goos: a.os, Goarch: a.arch, Type: "Archive",
			Extra: map[string]any{"Binaries": []string{a.bin}}})
	}
	arts = append(arts, art{Name: "checksums.txt", Path: "dist/checksums.txt", Type: "Checksum"})
	write := func(name string, v any) {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("artifacts.json", arts)
	write("metadata.json", map[string]string{"project_name": "kubectl-rightsize", "tag": tag, "version": version})
	if err := os.WriteFile(filepath.Join(dir, "checksums.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, sums
}

func TestManifestHasOnePlatformPerArchive(t *testing.T) {
	dist, sums := fakeDist(t)
	out := filepath.Join(t.TempDir(), "rightsize.yaml")
	if err := run(dist, out, "https://example.com/download/{{ .Tag }}", false); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{
		"version: v1.2.3",
		"uri: https://example.com/download/v1.2.3/kubectl-rightsize_1.2.3_linux_amd64.tar.gz",
		"sha256: " + sums["kubectl-rightsize_1.2.3_linux_amd64.tar.gz"],
		"bin: kubectl-rightsize.exe",
		"os: windows",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("manifest lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "- selector:"); n != 2 {
		t.Errorf("%d platforms, want 2", n)
	}
}

func TestStaleChecksumIsRefused(t *testing.T) {
	dist, _ := fakeDist(t)
	if err := os.WriteFile(filepath.Join(dist, "kubectl-rightsize_1.2.3_linux_amd64.tar.gz"), []byte("rebuilt"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Read(dist, "https://example.com")
	if err == nil || !strings.Contains(err.Error(), "but checksums.txt says") {
		t.Fatalf("error %v, want a checksum mismatch", err)
	}
}

func TestMissingDistSaysWhatToRun(t *testing.T) {
	_, err := Read(t.TempDir(), "https://example.com")
	if err == nil || !strings.Contains(err.Error(), "make dist") {
		t.Fatalf("error %v, want a hint to run make dist", err)
	}
}

// TestSnapshotIsRefusedUnlessAskedFor: a manifest from a snapshot release
// points at a download URL with nothing behind it (releases/download/v0.0.0
// and snapshot archive names), so it is written only with -snapshot, for
// krew install --archive of the local build.
func TestSnapshotIsRefusedUnlessAskedFor(t *testing.T) {
	tests := []struct {
		name, tag, version string
		snapshot           bool
		wantErr            string
	}{
		{"a tagged release", "v1.2.3", "1.2.3", false, ""},
		{"a snapshot", "v0.0.0", "0.0.1-snapshot-a8672b7", false, "snapshot release (version v0.0.1-snapshot-a8672b7, not built from a tag)"},
		{"a snapshot with -snapshot", "v0.0.0", "0.0.1-snapshot-a8672b7", true, ""},
		{"a version that is not its tag's", "v1.2.2", "1.2.3", false, "pass -snapshot"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dist, _ := fakeRelease(t, tc.tag, tc.version)
			out := filepath.Join(t.TempDir(), "rightsize.yaml")
			err := run(dist, out, "https://example.com/{{ .Tag }}", tc.snapshot)
			_, statErr := os.Stat(out)
			switch {
			case tc.wantErr == "" && (err != nil || statErr != nil):
				t.Fatalf("error %v, manifest %v; want it written", err, statErr)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			case tc.wantErr != "" && statErr == nil:
				t.Errorf("a refused manifest was written")
			}
		})
	}
}
