//go:build dist

// The Helm chart published as an OCI artifact, as the release does it:
// .goreleaser.yaml's publisher (`make chart-push`, the pinned helm's push)
// run against an OCI registry served in this process, then the chart pulled
// back with helm and compared with what was packaged.

package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"sigs.k8s.io/yaml"
)

// packageChartAsTheRelease runs .goreleaser.yaml's before hook that
// packages the chart, as for a release of version, into a temporary
// directory, and returns the package's path.
func packageChartAsTheRelease(t *testing.T, version string) string {
	t.Helper()
	root := repoRoot(t)
	var cfg struct {
		Before struct{ Hooks []string } `json:"before"`
	}
	readGoreleaserConfig(t, &cfg)
	var hook []string
	for _, h := range cfg.Before.Hooks {
		if strings.HasPrefix(h, "hack/tools/helm.sh package ") {
			hook = strings.Fields(strings.ReplaceAll(h, "{{ .Version }}", version))
		}
	}
	if hook == nil {
		t.Fatalf(".goreleaser.yaml has no before hook running hack/tools/helm.sh package: %v", cfg.Before.Hooks)
	}
	dest := t.TempDir()
	i := slices.Index(hook, "--destination")
	if i < 0 || i+1 >= len(hook) {
		t.Fatalf("the hook %v has no --destination", hook)
	}
	hook[i+1] = dest
	releaseTool(t, "helm")
	cmd := exec.Command(filepath.Join(root, hook[0]), hook[1:]...)
	if r := runCmd(cmd); r.err != nil {
		t.Fatalf("%s: %v\n%s%s", strings.Join(hook, " "), r.err, r.stdout, r.stderr)
	}
	return filepath.Join(dest, "kubectl-rightsize-"+version+".tgz")
}

// readGoreleaserConfig decodes the repository's .goreleaser.yaml into cfg.
func readGoreleaserConfig(t *testing.T, cfg any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, cfg); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
}

// TestHelmChartPushedAsTheReleaseDoes packages the chart as the release
// does, runs the release's publisher command (make chart-push) in the
// environment goreleaser gives a publisher, against an OCI registry served
// over TLS on loopback by this test (go-containerregistry's in-memory
// registry; the test's CA reaches helm through SSL_CERT_FILE, so the
// command runs as written, without --plain-http), and pulls the chart back:
// the same bytes, the same Chart.yaml, stored with Helm's OCI media types.
func TestHelmChartPushedAsTheReleaseDoes(t *testing.T) {
	root := repoRoot(t)
	var cfg struct {
		Publishers []struct {
			Name     string
			IDs      []string `json:"ids"`
			Checksum bool
			Cmd      string
		}
	}
	readGoreleaserConfig(t, &cfg)
	var cmdline string
	for _, p := range cfg.Publishers {
		if !strings.HasPrefix(p.Cmd, "make chart-push ") {
			continue
		}
		// Any id that is a build's would hand the publisher its archives
		// too, and checksum the checksums file: helm push refuses both.
		if slices.Contains(p.IDs, "kubectl-rightsize") || len(p.IDs) == 0 || p.Checksum {
			t.Errorf("publisher %q takes more than the chart: ids %v, checksum %v", p.Name, p.IDs, p.Checksum)
		}
		cmdline = p.Cmd
	}
	if cmdline == "" {
		t.Fatalf(".goreleaser.yaml has no publisher running make chart-push: %+v", cfg.Publishers)
	}

	const version = "1.2.3"
	pkg := packageChartAsTheRelease(t, version)
	want, err := os.ReadFile(pkg)
	if err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewTLSServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(srv.URL, "https://")
	repo := "oci://" + host + "/charts"

	// As goreleaser runs a publisher (internal/exec): from the project's
	// directory, with only these variables of its environment.
	args := strings.Fields(strings.ReplaceAll(cmdline, "{{ .ArtifactPath }}", pkg))
	push := exec.Command(args[0], args[1:]...)
	push.Dir = root
	for _, k := range []string{"HOME", "USER", "TMPDIR", "PATH"} {
		if v := os.Getenv(k); v != "" {
			push.Env = append(push.Env, k+"="+v)
		}
	}
	helmHome := t.TempDir()
	push.Env = append(push.Env, "CHART_REGISTRY="+repo, "SSL_CERT_FILE="+ca,
		"HELM_CACHE_HOME="+filepath.Join(helmHome, "cache"), "HELM_CONFIG_HOME="+filepath.Join(helmHome, "config"),
		"HELM_DATA_HOME="+filepath.Join(helmHome, "data"))
	r := runCmd(push)
	if r.err != nil {
		t.Fatalf("%s: %v\n%s%s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
	}
	out := r.stdout + r.stderr
	if !strings.Contains(out, "Pushed: "+host+"/charts/kubectl-rightsize:"+version) {
		t.Errorf("%s does not say where it pushed:\n%s", cmdline, out)
	}
	t.Logf("pushed in %s:\n%s", r.took.Round(time.Millisecond), out)

	// helm pulls back the bytes that were packaged.
	ref := repo + "/kubectl-rightsize"
	dest := t.TempDir()
	if r := helm(t, "", "pull", ref, "--version", version, "--ca-file", ca, "-d", dest); r.err != nil {
		t.Fatalf("helm pull %s: %v\n%s%s", ref, r.err, r.stdout, r.stderr)
	}
	got, err := os.ReadFile(filepath.Join(dest, filepath.Base(pkg)))
	if err != nil {
		t.Fatalf("helm pull wrote no %s: %v", filepath.Base(pkg), err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the pulled chart (%d bytes, %s) is not the packaged one (%d bytes, %s)", len(got), sha(got), len(want), sha(want))
	}
	fromRegistry := helm(t, "", "show", "chart", ref, "--version", version, "--ca-file", ca)
	fromPackage := helm(t, "", "show", "chart", pkg)
	if fromRegistry.err != nil || fromPackage.err != nil {
		t.Fatalf("helm show chart: %v, %v\n%s%s", fromRegistry.err, fromPackage.err, fromRegistry.stderr, fromPackage.stderr)
	}
	if fromRegistry.stdout != fromPackage.stdout || !strings.Contains(fromRegistry.stdout, "\nversion: "+version+"\n") {
		t.Errorf("helm show chart of %s:\n%s\nof the package:\n%s", ref, fromRegistry.stdout, fromPackage.stdout)
	}

	// The registry holds it as a Helm chart: Helm's config and layer
	// media types, the layer being the package.
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/v2/charts/kubectl-rightsize/manifests/"+version, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var manifest struct {
		Config struct{ MediaType string }
		Layers []struct{ MediaType, Digest string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&manifest); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the manifest: %s, %v", resp.Status, err)
	}
	if manifest.Config.MediaType != "application/vnd.cncf.helm.config.v1+json" || len(manifest.Layers) != 1 ||
		manifest.Layers[0].MediaType != "application/vnd.cncf.helm.chart.content.v1.tar+gzip" || manifest.Layers[0].Digest != "sha256:"+sha(want) {
		t.Errorf("the manifest %+v is not the package %s as a Helm chart", manifest, sha(want))
	}

	// Without a package, chart-push says what to set.
	bare := exec.Command("make", "-s", "chart-push")
	bare.Dir = root
	if r := runCmd(bare); r.err == nil || !strings.Contains(r.stdout+r.stderr, "set CHART to the packaged chart") {
		t.Errorf("make chart-push without CHART: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
