// Command image builds the operator's container image without a container
// engine and writes it as an OCI image tarball (a tar of an OCI image layout,
// as `docker buildx --output type=oci` writes; load it with `podman load`,
// `skopeo copy oci-archive:…`, `crane push` after untarring, or
// `docker load` ≥ 25).
//
// There is no base image to pull: the image is built from scratch with
//   - /etc/passwd and /etc/group with root and nonroot (65532), /home/nonroot,
//     /tmp (1777);
//   - the CA bundle of the build machine (Debian's ca-certificates), which the
//     AWS SDK needs for TLS;
//   - LICENSE and NOTICE under /usr/share/doc/kubectl-rightsize;
//   - the static kubectl-rightsize binary, one per platform;
//
// and a config that runs `/kubectl-rightsize operator` as 65532:65532.
//
//	go -C hack/image run . -out dist/image.tar -tag ghcr.io/…:v1 \
//	    -binary linux/amd64=/abs/path/kubectl-rightsize [-binary linux/arm64=…]
//
// With -push it builds nothing: it pushes such a tarball to a registry under
// a tag (credentials from the Docker config, as `docker login` or `crane
// auth login` leave them) and prints the reference that pins what was
// pushed, repository@sha256:<digest>, which the release writes into the
// Helm chart's values (make release-image):
//
//	go -C hack/image run . -in dist/image.tar -push ghcr.io/…:v1
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user; 65532 is "nonroot" in distroless and Chainguard images,
// so volume permissions written for those work here too.
const (
	uid      = 65532
	userName = "nonroot"
)

// Entrypoint is what the image runs: the operator.
var Entrypoint = []string{"/kubectl-rightsize", "operator"}

type platformBinaries map[string]string // "linux/amd64" -> path

func (p platformBinaries) String() string { return fmt.Sprint(map[string]string(p)) }

func (p platformBinaries) Set(v string) error {
	plat, path, ok := strings.Cut(v, "=")
	if !ok || !strings.Contains(plat, "/") {
		return fmt.Errorf("want OS/ARCH=PATH, got %q", v)
	}
	p[plat] = path
	return nil
}

// Options are the inputs of Build.
type Options struct {
	// Binaries maps "os/arch" to the static kubectl-rightsize built for it.
	Binaries map[string]string
	// CACertificates is the PEM bundle installed as
	// /etc/ssl/certs/ca-certificates.crt; empty leaves it out.
	CACertificates string
	// Docs are files installed under /usr/share/doc/kubectl-rightsize.
	Docs []string
	// Created is the time recorded in the image and on its files; a fixed
	// time (the commit's) makes the image reproducible.
	Created time.Time
	// Labels are OCI annotations for the image config
	// (org.opencontainers.image.version, .revision, .source).
	Labels map[string]string
}

func main() {
	bins := platformBinaries{}
	var (
		out     = flag.String("out", "", "OCI image tarball to write")
		tag     = flag.String("tag", "ghcr.io/rightsize-dev/kubectl-rightsize:latest", "image reference recorded in the layout (org.opencontainers.image.ref.name)")
		cas     = flag.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "PEM CA bundle to install (empty: none)")
		docs    = flag.String("docs", "", "comma-separated files for /usr/share/doc/kubectl-rightsize")
		version = flag.String("version", "", "org.opencontainers.image.version")
		commit  = flag.String("revision", "", "org.opencontainers.image.revision")
		epoch   = flag.String("source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "creation time, seconds since 1970 (default: 0)")
	)
	var (
		push = flag.String("push", "", "push the tarball -in to this tagged reference instead of building; print repository@sha256:<digest>")
		in   = flag.String("in", "", "with -push: the OCI image tarball to push")
	)
	flag.Var(bins, "binary", "OS/ARCH=PATH of a static kubectl-rightsize (repeatable)")
	flag.Parse()
	if *push != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := pushMain(ctx, *in, *push, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "image: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*out, *tag, Options{
		Binaries: bins, CACertificates: *cas, Docs: splitList(*docs),
		Created: epochTime(*epoch),
		Labels: map[string]string{
			"org.opencontainers.image.title":       "kubectl-rightsize",
			"org.opencontainers.image.description": "kubectl-rightsize operator: right-sized nodes for pending pods",
			"org.opencontainers.image.source":      "https://github.com/rightsize-dev/kubectl-rightsize",
			"org.opencontainers.image.licenses":    "Apache-2.0",
			"org.opencontainers.image.version":     *version,
			"org.opencontainers.image.revision":    *commit,
		},
	}); err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func run(out, tag string, o Options) error {
	if out == "" || len(o.Binaries) == 0 {
		return errors.New("-out and at least one -binary are required")
	}
	start := time.Now()
	idx, err := Build(o)
	if err != nil {
		return err
	}
	if err := WriteTarball(out, tag, idx); err != nil {
		return err
	}
	fi, err := os.Stat(out)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "image: wrote %s (%s, %.1f MB) in %s\n", out, tag, float64(fi.Size())/1e6, time.Since(start).Round(time.Millisecond))
	return nil
}

// Build makes the image index: one image per platform, sharing the base layer.
func Build(o Options) (v1.ImageIndex, error) {
	base, err := baseLayer(o)
	if err != nil {
		return nil, err
	}
	plats := make([]string, 0, len(o.Binaries))
	for p := range o.Binaries {
		plats = append(plats, p)
	}
	sort.Strings(plats)
	var idx v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range plats {
		osName, arch, _ := strings.Cut(p, "/")
		img, err := platformImage(o, base, osName, arch, o.Binaries[p])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: osName, Architecture: arch}},
		})
	}
	return idx, nil
}

func platformImage(o Options, base v1.Layer, osName, arch, binary string) (v1.Image, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	if err := checkStatic(bin, osName, arch); err != nil {
		return nil, fmt.Errorf("%s: %w", binary, err)
	}
	var files []file
	files = append(files, file{name: "kubectl-rightsize", mode: 0o755, data: bin})
	binLayer, err := layer(files, o.Created)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{CreatedBy: "kubectl-rightsize base: passwd, group, CA certificates, docs", Created: v1.Time{Time: o.Created}}},
		mutate.Addendum{Layer: binLayer, History: v1.History{CreatedBy: "kubectl-rightsize binary", Created: v1.Time{Time: o.Created}}},
	)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = osName, arch
	cfg.Created = v1.Time{Time: o.Created}
	cfg.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", uid, uid),
		Entrypoint: Entrypoint,
		WorkingDir: "/home/" + userName,
		Env: []string{
			"PATH=/",
			"HOME=/home/" + userName,
			"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
		},
		Labels: nonEmpty(o.Labels),
	}
	return mutate.ConfigFile(img, cfg)
}

// baseLayer holds what a distroless static base would: users, CA bundle,
// writable /tmp and home, and the licences.
func baseLayer(o Options) (v1.Layer, error) {
	files := []file{
		{name: "etc/", dir: true, mode: 0o755},
		{name: "etc/passwd", mode: 0o644, data: []byte(fmt.Sprintf(
			"root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:/home/%s:/sbin/nologin\n", userName, uid, uid, userName, userName))},
		{name: "etc/group", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:\n%s:x:%d:\n", userName, uid))},
		{name: "home/", dir: true, mode: 0o755},
		{name: "home/" + userName + "/", dir: true, mode: 0o700, uid: uid},
		{name: "root/", dir: true, mode: 0o700},
		{name: "tmp/", dir: true, mode: 0o1777},
	}
	if o.CACertificates != "" {
		pem, err := os.ReadFile(o.CACertificates)
		if err != nil {
			return nil, fmt.Errorf("CA certificates: %w (pass -ca-certificates '' to build without)", err)
		}
		if !bytes.Contains(pem, []byte("-----BEGIN CERTIFICATE-----")) {
			return nil, fmt.Errorf("%s holds no PEM certificate", o.CACertificates)
		}
		files = append(files,
			file{name: "etc/ssl/", dir: true, mode: 0o755},
			file{name: "etc/ssl/certs/", dir: true, mode: 0o755},
			file{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: pem})
	}
	if len(o.Docs) > 0 {
		files = append(files,
			file{name: "usr/", dir: true, mode: 0o755},
			file{name: "usr/share/", dir: true, mode: 0o755},
			file{name: "usr/share/doc/", dir: true, mode: 0o755},
			file{name: "usr/share/doc/kubectl-rightsize/", dir: true, mode: 0o755})
		for _, d := range o.Docs {
			b, err := os.ReadFile(d)
			if err != nil {
				return nil, err
			}
			files = append(files, file{name: "usr/share/doc/kubectl-rightsize/" + filepath.Base(d), mode: 0o644, data: b})
		}
	}
	return layer(files, o.Created)
}

type file struct {
	name string
	dir  bool
	mode int64
	uid  int
	data []byte
}

// layer makes a gzip-compressed OCI layer of files, in order, all with mtime.
func layer(files []file, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid,
			ModTime: mtime, Format: tar.FormatPAX,
		}
		if f.uid == uid {
			h.Uname, h.Gname = userName, userName
		} else {
			h.Uname, h.Gname = "root", "root"
		}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	// Compressed here, once: given the uncompressed tar, tarball compresses
	// it again for the digest, the size and the write (three passes of
	// level 9 over the ~50 MB binary, about 10 s of CPU). Given gzip, it
	// only decompresses for the diff ID.
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(buf.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	b := gz.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// checkStatic refuses a binary for another platform or one that needs a
// dynamic loader the image does not have.
func checkStatic(bin []byte, osName, arch string) error {
	if osName != "linux" {
		return fmt.Errorf("only linux images are built, not %s", osName)
	}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("not an ELF binary (%v): build it with GOOS=linux", err)
	}
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	want, ok := machine[arch]
	if !ok {
		return fmt.Errorf("architecture %s is not supported (amd64, arm64)", arch)
	}
	if f.Machine != want {
		return fmt.Errorf("ELF machine %s is not %s: build it with GOARCH=%s", f.Machine, arch, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked: build it with CGO_ENABLED=0")
		}
	}
	return nil
}

// WriteTarball writes idx as an OCI image layout, tagged tag, tarred into out.
// With one platform, index.json names the image itself (what single-platform
// loaders expect); with several, it names the multi-platform index.
func WriteTarball(out, tag string, idx v1.ImageIndex) error {
	dir, err := os.MkdirTemp("", "rightsize-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	ann := layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag,
		"io.containerd.image.name":          tag,
	})
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	if len(im.Manifests) == 1 {
		img, err := idx.Image(im.Manifests[0].Digest)
		if err != nil {
			return err
		}
		err = lp.AppendImage(img, ann, layout.WithPlatform(*im.Manifests[0].Platform))
		if err != nil {
			return err
		}
	} else if err := lp.AppendIndex(idx, ann); err != nil {
		return err
	}
	return tarDir(dir, out)
}

// tarDir tars dir into out, sorted and with zero times, so equal layouts give
// equal tarballs.
func tarDir(dir, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := os.Create(out + ".tmp")
	if err != nil {
		return err
	}
	defer os.Remove(out + ".tmp")
	tw := tar.NewWriter(f)
	var paths []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != dir {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if fi.IsDir() {
			h.Name += "/"
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			continue
		}
		h.Typeflag, h.Size = tar.TypeReg, fi.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, src)
		src.Close()
		if err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(out+".tmp", out)
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func epochTime(s string) time.Time {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0).UTC()
	}
	return time.Unix(0, 0).UTC()
}

func nonEmpty(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if v != "" {
			out[k] = v
		}
	}
	return out
}
