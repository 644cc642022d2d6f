package main

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Push uploads the OCI image tarball tarPath (as WriteTarball writes it: one
// image, or a multi-platform index) to the registry under the tag ref, and
// returns the reference that pins it: repository@sha256:… with the digest
// the registry reports for the tag after the upload. Credentials come from
// the Docker config (authn.DefaultKeychain: `docker login`, `crane auth
// login`, credential helpers), unless opts give others.
func Push(ctx context.Context, tarPath, ref string, opts ...remote.Option) (name.Digest, error) {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return name.Digest{}, fmt.Errorf("push %q: want a tagged reference, e.g. ghcr.io/rightsize-dev/kubectl-rightsize:v1.2.3: %w", ref, err)
	}
	dir, err := os.MkdirTemp("", "rightsize-push-")
	if err != nil {
		return name.Digest{}, err
	}
	defer os.RemoveAll(dir)
	if err := untarLayout(tarPath, dir); err != nil {
		return name.Digest{}, fmt.Errorf("%s: %w", tarPath, err)
	}
	lp, err := layout.FromPath(dir)
	if err != nil {
		return name.Digest{}, fmt.Errorf("%s is not an OCI image layout tarball: %w", tarPath, err)
	}
	outer, err := lp.ImageIndex()
	if err != nil {
		return name.Digest{}, fmt.Errorf("%s: %w", tarPath, err)
	}
	im, err := outer.IndexManifest()
	if err != nil {
		return name.Digest{}, fmt.Errorf("%s: index.json: %w", tarPath, err)
	}
	if len(im.Manifests) != 1 {
		return name.Digest{}, fmt.Errorf("%s: index.json names %d manifests, want 1 (an image or a multi-platform index)", tarPath, len(im.Manifests))
	}
	opts = append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	desc := im.Manifests[0]
	var want v1.Hash
	if desc.MediaType.IsIndex() {
		idx, err := outer.ImageIndex(desc.Digest)
		if err != nil {
			return name.Digest{}, fmt.Errorf("%s: %w", tarPath, err)
		}
		if want, err = idx.Digest(); err != nil {
			return name.Digest{}, err
		}
		if err := remote.WriteIndex(tag, idx, opts...); err != nil {
			return name.Digest{}, fmt.Errorf("push %s: %w", tag, err)
		}
	} else {
		img, err := outer.Image(desc.Digest)
		if err != nil {
			return name.Digest{}, fmt.Errorf("%s: %w", tarPath, err)
		}
		if want, err = img.Digest(); err != nil {
			return name.Digest{}, err
		}
		if err := remote.Write(tag, img, opts...); err != nil {
			return name.Digest{}, fmt.Errorf("push %s: %w", tag, err)
		}
	}
	// What the registry now serves under the tag is what gets pinned; it
	// must be what was pushed (another push to the same tag in between
	// would make the release pin someone else's image).
	got, err := remote.Head(tag, opts...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("after pushing %s: %w", tag, err)
	}
	if got.Digest != want {
		return name.Digest{}, fmt.Errorf("after pushing %s (%s), the registry serves %s under that tag", tag, want, got.Digest)
	}
	return tag.Context().Digest(got.Digest.String()), nil
}

// untarLayout unpacks the OCI layout tarball tarPath into dir, refusing
// entries that are not plain files or directories inside dir.
func untarLayout(tarPath, dir string) error {
	f, err := os.Open(tarPath)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		rel := filepath.Clean(filepath.FromSlash(h.Name))
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("entry %q leaves the layout", h.Name)
		}
		p := filepath.Join(dir, rel)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := writeFile(p, tr); err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %q is neither a file nor a directory", h.Name)
		}
	}
}

func writeFile(p string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	out, err := os.Create(p)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// pushMain is the -push mode: push in to ref, print the pinned reference
// (repository@sha256:…) on stdout, the rest on stderr.
func pushMain(ctx context.Context, in, ref string, stdout io.Writer) error {
	if in == "" {
		return errors.New("-push needs -in, the OCI image tarball to push (make image writes one)")
	}
	d, err := Push(ctx, in, ref)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "image: pushed %s as %s\n", in, d)
	_, err = fmt.Fprintln(stdout, d.String())
	return err
}
