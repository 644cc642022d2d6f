package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// repoRoot is the repository's root, two levels above hack/image.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// tlsRegistry serves go-containerregistry's in-memory registry over TLS on
// loopback, and returns its host and a PEM file of its certificate.
func tlsRegistry(t *testing.T) (host, ca string, srv *httptest.Server) {
	t.Helper()
	srv = httptest.NewTLSServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	ca = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(srv.URL, "https://"), ca, srv
}

// imageTarball builds the image for plats (each a tiny static program) as
// `make image` does, and returns the tarball and the digest of what its
// index.json names: the image, or the multi-platform index.
func imageTarball(t *testing.T, plats ...string) (string, v1.Hash) {
	t.Helper()
	bins := map[string]string{}
	for _, p := range plats {
		bins[p] = staticBinaryFor(t, strings.TrimPrefix(p, "linux/"))
	}
	out := filepath.Join(t.TempDir(), "image.tar")
	if err := run(out, "example.com/rightsize:test", Options{Binaries: bins, Created: time.Unix(1700000000, 0).UTC()}); err != nil {
		t.Fatal(err)
	}
	lp, err := layout.FromPath(untar(t, out))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	return out, im.Manifests[0].Digest
}

// TestReleasePinsTheChartToThePushedDigest runs what a tagged release runs
// after building the image (make release-pin, the second half of .goreleaser.yaml's
// hook make release-image) against a registry served over TLS by this test:
// the tarball is pushed, and the chart packaged for the release has in its
// values.yaml the repository and the digest the registry reports for the
// release's tag, which is the digest of what the tarball holds; helm
// template of the package runs repository@sha256:<that digest>.
func TestReleasePinsTheChartToThePushedDigest(t *testing.T) {
	helmBin := releaseTool(t, "helm")
	tests := []struct {
		name  string
		plats []string
	}{
		{"one platform: the image", []string{"linux/" + runtime.GOARCH}},
		{"two platforms: the index", []string{"linux/amd64", "linux/arm64"}},
	}
	const version = "1.2.3"
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tarPath, built := imageTarball(t, tc.plats...)
			host, ca, srv := tlsRegistry(t)
			repo := host + "/rightsize-dev/kubectl-rightsize"
			chartDir, work := t.TempDir(), t.TempDir()
			pinnedRef := filepath.Join(work, "pinned-ref")

			cmd := exec.Command("make", "-s", "release-pin", "RELEASE_VERSION="+version, "IMAGE_TAR="+tarPath,
				"IMAGE_REPOSITORY="+repo, "CHART_DIR="+chartDir, "PINNED_CHART_ROOT="+filepath.Join(work, "pinned"), "PINNED_REF="+pinnedRef)
			cmd.Dir = repoRoot(t)
			// The registry's CA as the release's would be trusted; an empty
			// Docker config, so the push is anonymous.
			cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+ca, "DOCKER_CONFIG="+t.TempDir())
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			if err := cmd.Run(); err != nil {
				t.Fatalf("make release-pin: %v\n%s%s", err, stdout.String(), stderr.String())
			}
			t.Logf("make release-pin in %s:\n%s", time.Since(start).Round(time.Millisecond), stdout.String())

			// What the registry holds under the release's tag.
			tag, err := name.NewTag(repo + ":v" + version)
			if err != nil {
				t.Fatal(err)
			}
			desc, err := remote.Head(tag, remote.WithTransport(srv.Client().Transport))
			if err != nil {
				t.Fatalf("the registry has no %s: %v", tag, err)
			}
			if desc.Digest != built {
				t.Errorf("the registry serves %s as %s, the tarball holds %s", tag, desc.Digest, built)
			}
			pinned := repo + "@" + desc.Digest.String()
			if !strings.Contains(stdout.String(), "runs "+pinned) {
				t.Errorf("make release-pin does not say it pinned %s:\n%s", pinned, stdout.String())
			}
			// The release notes' `operator install --image` reads it.
			if b, err := os.ReadFile(pinnedRef); err != nil || string(b) != pinned+"\n" {
				t.Errorf("PINNED_REF holds %q (%v), want %s", b, err, pinned)
			}

			pkg := filepath.Join(chartDir, "kubectl-rightsize-"+version+".tgz")
			image := imageValues(t, chartFile(t, pkg, "kubectl-rightsize/values.yaml"))
			if image["repository"] != repo || image["digest"] != desc.Digest.String() || image["tag"] != "" {
				t.Errorf("the packaged values.yaml has image %v, want repository %s, digest %s, no tag", image, repo, desc.Digest)
			}
			if c := string(chartFile(t, pkg, "kubectl-rightsize/Chart.yaml")); !strings.Contains(c, "\nversion: "+version+"\n") || !strings.Contains(c, "appVersion: v"+version) {
				t.Errorf("the packaged Chart.yaml is not version %s:\n%s", version, c)
			}

			// helm renders the Deployment with the pinned image.
			home := t.TempDir()
			tmpl := exec.Command(helmBin, "template", "rightsize", pkg, "-n", "rightsize-system", "--set", "clusterName=prod")
			tmpl.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "HELM_CACHE_HOME=" + filepath.Join(home, "cache"),
				"HELM_CONFIG_HOME=" + filepath.Join(home, "config"), "HELM_DATA_HOME=" + filepath.Join(home, "data")}
			rendered, err := tmpl.Output()
			if err != nil {
				t.Fatalf("helm template %s: %v", pkg, err)
			}
			if !strings.Contains(string(rendered), "image: "+strconv.Quote(pinned)+"\n") {
				t.Errorf("helm template of the packaged chart does not run %s:\n%s", pinned, grepLines(string(rendered), "image:"))
			}
		})
	}
}

// TestSnapshotReleasePushesNothing runs the hook as a snapshot (make dist)
// runs it: no image is built or pushed, and a reference left by an earlier
// release run is removed, so the snapshot's notes do not name it.
func TestSnapshotReleasePushesNothing(t *testing.T) {
	host, ca, srv := tlsRegistry(t)
	pinnedRef := filepath.Join(t.TempDir(), "pinned-ref")
	if err := os.WriteFile(pinnedRef, []byte("example.com/old@sha256:"+strings.Repeat("0", 64)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-s", "release-image", "RELEASE_VERSION=1.2.3", "SNAPSHOT=true",
		"IMAGE_REPOSITORY="+host+"/rightsize-dev/kubectl-rightsize", "PINNED_REF="+pinnedRef)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+ca, "DOCKER_CONFIG="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "a snapshot pushes no image") {
		t.Fatalf("make release-image SNAPSHOT=true: %v\n%s", err, out)
	}
	if _, err := os.Stat(pinnedRef); !os.IsNotExist(err) {
		t.Errorf("PINNED_REF is still there after a snapshot: %v", err)
	}
	reg, err := name.NewRegistry(host)
	if err != nil {
		t.Fatal(err)
	}
	repos, err := remote.Catalog(context.Background(), reg, remote.WithTransport(srv.Client().Transport))
	if err != nil || len(repos) != 0 {
		t.Errorf("the registry holds %v (%v) after a snapshot, want nothing", repos, err)
	}
}

// TestPushRefuses checks the references and tarballs Push will not push.
func TestPushRefuses(t *testing.T) {
	tarPath, _ := imageTarball(t, "linux/"+runtime.GOARCH)
	notLayout := filepath.Join(t.TempDir(), "x.tar")
	if err := os.WriteFile(notLayout, []byte("not a tar"), 0o644); err != nil {
		t.Fatal(err)
	}
	host, _, srv := tlsRegistry(t)
	tests := []struct {
		name, tar, ref, want string
	}{
		{"a digest instead of a tag", tarPath, host + "/r@sha256:" + strings.Repeat("0", 64), "want a tagged reference"},
		{"a reference that does not parse", tarPath, host + "/R:v1", "want a tagged reference"},
		{"no tarball", filepath.Join(t.TempDir(), "missing.tar"), host + "/r:v1", "missing.tar"},
		{"not a tarball", notLayout, host + "/r:v1", "x.tar"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Push(context.Background(), tc.tar, tc.ref, remote.WithTransport(srv.Client().Transport))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Push(%s, %s): %v, want an error with %q", tc.tar, tc.ref, err, tc.want)
			}
		})
	}
}

// releaseTool is the pinned release tool name (hack/tools/build.sh builds
// it once into its cache), as test/e2e finds it.
func releaseTool(t *testing.T, name string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot(t), "hack", "tools", "build.sh"), name)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/tools/build.sh %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// chartFile is the file name inside the chart package pkg (a .tgz).
func chartFile(t *testing.T, pkg, name string) []byte {
	t.Helper()
	f, err := os.Open(pkg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Fatalf("%s has no %s", pkg, name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

// imageValues reads the image block of values.yaml as genchart writes it
// (yaml.Marshal of a map of strings: "image:" then "  key: value" lines).
func imageValues(t *testing.T, values []byte) map[string]string {
	t.Helper()
	_, block, ok := strings.Cut(string(values), "\nimage:\n")
	if !ok {
		t.Fatalf("values.yaml has no image block:\n%s", values)
	}
	out := map[string]string{}
	for _, l := range strings.Split(block, "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(l, "  "), ": ")
		if !strings.HasPrefix(l, "  ") || !ok {
			break
		}
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		out[k] = v
	}
	return out
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
