// Command krewmanifest writes the krew plugin manifest (krew/rightsize.yaml)
// for a goreleaser release in dist/: one platform per archive, with the
// archive's download URL and the sha256 from dist/checksums.txt, checked
// against the archive itself.
//
//	go run ./hack/krewmanifest [-dist dist] [-out krew/rightsize.yaml]
//
// Only a tagged release (goreleaser run on a tag vX.Y.Z) has archives at
// the download URL, so a snapshot release (make dist) is refused: a
// manifest committed from one would send every `kubectl krew install` to
// a release that does not exist. With -snapshot the manifest of a local
// build is written anyway, for
//
//	kubectl krew install --manifest=dist/krew/rightsize.yaml --archive=dist/kubectl-rightsize_<version>_<os>_<arch>.tar.gz
//
// (krew checks the archive against the manifest's sha256 and downloads
// nothing).
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template"
)

func main() {
	dist := flag.String("dist", "dist", "goreleaser's dist directory")
	out := flag.String("out", filepath.Join("krew", "rightsize.yaml"), "manifest to write")
	base := flag.String("download-url", "https://github.com/rightsize-dev/kubectl-rightsize/releases/download/{{ .Tag }}",
		"where the release's archives are downloaded from (a template of .Tag and .Version)")
	snapshot := flag.Bool("snapshot", false, "write the manifest of a snapshot release too, for krew install --archive of a local build (never commit it)")
	flag.Parse()
	if err := run(*dist, *out, *base, *snapshot); err != nil {
		fmt.Fprintf(os.Stderr, "krewmanifest: %v\n", err)
		os.Exit(1)
	}
}

func run(dist, out, base string, snapshot bool) error {
	m, err := Read(dist, base)
	if err != nil {
		return err
	}
	if !m.Tagged && !snapshot {
		return fmt.Errorf("%s holds a snapshot release (version %s, not built from a tag), whose archives are at no download URL; "+
			"tag a release (git tag vX.Y.Z, goreleaser release) or pass -snapshot for a manifest of this local build, to use with kubectl krew install --archive", dist, m.Version)
	}
	var buf bytes.Buffer
	if err := manifest.Execute(&buf, m); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// Manifest is what the krew manifest is made of.
type Manifest struct {
	// Version is the plugin's version with a leading v, as krew requires.
	Version string
	// Tagged is set for a release built from its tag (vVersion), whose
	// archives the download URL serves; a snapshot's are local only.
	Tagged    bool
	Platforms []Platform
}

// Platform is one archive of the release.
type Platform struct {
	OS, Arch, URI, SHA256, Bin string
}

// metadata is the part of goreleaser's dist/metadata.json used here.
type metadata struct {
	ProjectName string `json:"project_name"`
	Tag         string `json:"tag"`
	Version     string `json:"version"`
}

// artifact is an entry of goreleaser's dist/artifacts.json.
type artifact struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Goos   string `json:"goos"`
	Goarch string `json:"goarch"`
	Type   string `json:"type"`
	Extra  struct {
		Binaries []string `json:"Binaries"`
	} `json:"extra"`
}

// Read gathers the manifest of the release in dist.
func Read(dist, baseURL string) (*Manifest, error) {
	var meta metadata
	if err := readJSON(filepath.Join(dist, "metadata.json"), &meta); err != nil {
		return nil, err
	}
	var artifacts []artifact
	if err := readJSON(filepath.Join(dist, "artifacts.json"), &artifacts); err != nil {
		return nil, err
	}
	sums, err := readChecksums(filepath.Join(dist, "checksums.txt"))
	if err != nil {
		return nil, err
	}
	version := "v" + strings.TrimPrefix(meta.Version, "v")
	tag := meta.Tag
	if tag == "" {
		tag = version
	}
	urlTmpl, err := template.New("url").Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("-download-url: %w", err)
	}
	var url bytes.Buffer
	if err := urlTmpl.Execute(&url, map[string]string{"Tag": tag, "Version": meta.Version}); err != nil {
		return nil, fmt.Errorf("-download-url: %w", err)
	}
	m := &Manifest{Version: version, Tagged: meta.Tag == version && !strings.Contains(meta.Version, "snapshot")}
	for _, a := range artifacts {
		if a.Type != "Archive" {
			continue
		}
		sum, ok := sums[a.Name]
		if !ok {
			return nil, fmt.Errorf("%s is not in checksums.txt: is dist/ from one release run?", a.Name)
		}
		actual, err := fileSHA256(resolve(dist, a.Path))
		if err != nil {
			return nil, err
		}
		if actual != sum {
			return nil, fmt.Errorf("%s: sha256 %s, but checksums.txt says %s", a.Path, actual, sum)
		}
		bin := "kubectl-rightsize"
		if len(a.Extra.Binaries) == 1 {
			bin = a.Extra.Binaries[0]
		} else if a.Goos == "windows" {
			bin += ".exe"
		}
		m.Platforms = append(m.Platforms, Platform{
			OS: a.Goos, Arch: a.Goarch, SHA256: sum, Bin: bin,
			URI: strings.TrimSuffix(url.String(), "/") + "/" + a.Name,
		})
	}
	if len(m.Platforms) == 0 {
		return nil, errors.New("no archives in artifacts.json: run `make dist` first")
	}
	slices.SortFunc(m.Platforms, func(a, b Platform) int {
		return strings.Compare(a.OS+"/"+a.Arch, b.OS+"/"+b.Arch)
	})
	return m, nil
}

// resolve finds an artifact's file: goreleaser records paths relative to the
// directory it ran in (dist/x.tar.gz); dist may have moved since.
func resolve(dist, p string) string {
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return filepath.Join(dist, filepath.Base(p))
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: run `make dist` first", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// readChecksums reads "<sha256>  <file>" lines.
func readChecksums(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: run `make dist` first", err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 || len(fields[0]) != 64 {
			return nil, fmt.Errorf("%s: not a sha256 checksums line: %q", path, sc.Text())
		}
		sums[strings.TrimPrefix(fields[1], "*")] = fields[0]
	}
	return sums, sc.Err()
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// manifest is krew's plugin manifest (krew.sigs.k8s.io/docs/developer-guide/plugin-manifest).
var manifest = template.Must(template.New("krew").Parse(`# Generated by hack/krewmanifest from the release in dist/ (make krew); do not edit.
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: rightsize
spec:
  version: {{ .Version }}
  homepage: https://github.com/rightsize-dev/kubectl-rightsize
  shortDescription: Right-sized nodes for pending pods, with cost
  description: |
    Plans the cheapest right-sized nodes for your workloads and explains why
    pods are pending, which nodes would fix it and what they cost, in the
    spirit of Karpenter.

      kubectl rightsize explain        pending pods, proposed nodes, their cost
      kubectl rightsize explain -f .   the same offline, from manifests alone
      kubectl rightsize tui            the same, interactive
      kubectl rightsize import -f      convert Karpenter NodePools

    The same planner runs in-cluster as an operator that provisions nodes and
    consolidates them within disruption budgets.
  caveats: |
    explain and tui only read the cluster. To let rightsize provision nodes,
    install the operator (CRDs, RBAC and a Deployment) into the cluster:

      kubectl rightsize operator install --cluster-name <name> --apply

    It needs an IAM role to launch EC2 instances; see
    https://github.com/rightsize-dev/kubectl-rightsize#installing-the-operator-on-eks
  platforms:
{{- range .Platforms }}
  - selector:
      matchLabels:
        os: {{ .OS }}
        arch: {{ .Arch }}
    uri: {{ .URI }}
    sha256: {{ .SHA256 }}
    bin: {{ .Bin }}
{{- end }}
`))
