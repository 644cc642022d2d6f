package main

import (
	"archive/tar"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// staticBinary builds a tiny static linux program for the host architecture.
func staticBinary(t *testing.T) string {
	t.Helper()
	return staticBinaryFor(t, runtime.GOARCH)
}

// staticBinaryFor builds a tiny static linux program for arch.
func staticBinaryFor(t *testing.T, arch string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "kubectl-rightsize")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOWORK=off", "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestImageRunsTheOperatorAsNonRoot(t *testing.T) {
	bin := staticBinary(t)
	out := filepath.Join(t.TempDir(), "image.tar")
	o := Options{
		Binaries:       map[string]string{"linux/" + runtime.GOARCH: bin},
		CACertificates: "/etc/ssl/certs/ca-certificates.crt",
		Created:        time.Unix(1700000000, 0).UTC(),
	}
	if _, err := os.Stat(o.CACertificates); err != nil {
		o.CACertificates = ""
	}
	if err := run(out, "example.com/rightsize:test", o); err != nil {
		t.Fatal(err)
	}
	dir := untar(t, out)
	lp, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 {
		t.Fatalf("index.json: %v, %d manifests", err, len(im.Manifests))
	}
	if got := im.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; got != "example.com/rightsize:test" {
		t.Errorf("ref name %q", got)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", cfg.Config.User)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/kubectl-rightsize", "operator"}) {
		t.Errorf("entrypoint %v", cfg.Config.Entrypoint)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s", cfg.OS, cfg.Architecture)
	}
	files := map[string]*tar.Header{}
	layers, _ := img.Layers()
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Name == "etc/passwd" {
				b, _ := io.ReadAll(tr)
				if !strings.Contains(string(b), "nonroot:x:65532:65532") {
					t.Errorf("/etc/passwd lacks nonroot:\n%s", b)
				}
			}
			files[h.Name] = h
		}
		rc.Close()
	}
	if h := files["kubectl-rightsize"]; h == nil || h.Mode&0o111 == 0 {
		t.Errorf("/kubectl-rightsize missing or not executable: %+v", h)
	}
	if h := files["tmp/"]; h == nil || h.Mode != 0o1777 {
		t.Errorf("/tmp missing or not 1777")
	}
	if o.CACertificates != "" && files["etc/ssl/certs/ca-certificates.crt"] == nil {
		t.Errorf("CA bundle missing")
	}

	// The same inputs give the same bytes.
	again := filepath.Join(t.TempDir(), "image.tar")
	if err := run(again, "example.com/rightsize:test", o); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(again)
	if string(a) != string(b) {
		t.Errorf("two builds of the same inputs differ")
	}
}

func TestRefusesABinaryOfAnotherArchitecture(t *testing.T) {
	bin := staticBinary(t)
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	_, err := Build(Options{Binaries: map[string]string{"linux/" + other: bin}})
	if err == nil || !strings.Contains(err.Error(), "GOARCH="+other) {
		t.Fatalf("error %v, want a GOARCH hint", err)
	}
}

func untar(t *testing.T, path string) string {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, h.Name)
		if h.Typeflag == tar.TypeDir {
			os.MkdirAll(p, 0o755)
			continue
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		b, _ := io.ReadAll(tr)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
