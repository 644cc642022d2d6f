package snapshot

import (
	"context"
	"errors"
	"fmt"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/interrupt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Input is where manifests come from, as kubectl takes them: files,
// directories or stdin (-f, with -R to read directories recursively) and
// kustomizations (-k, rendered in-process as kubectl apply -k does). Strict
// makes unknown fields errors instead of warnings.
type Input struct {
	Filenames      []string
	Kustomizations []string
	Recursive      bool
	Strict         bool
	// MaxInputSize bounds each file, stdin and each rendered kustomization
	// (--max-input-size); 0 is DefaultMaxInputSize.
	MaxInputSize int64
	// AllowRemoteBases lets -k fetch remote bases and resources (git
	// repositories, http URLs), as kustomize does; without it a
	// kustomization that names one is refused and nothing leaves the
	// machine (--allow-remote-bases).
	AllowRemoteBases bool
	// RemoteTimeout bounds the rendering of a kustomization that fetches
	// remote bases; 0 is DefaultRemoteTimeout.
	RemoteTimeout time.Duration
}

// DefaultRemoteTimeout bounds fetching a kustomization's remote bases
// when Input.RemoteTimeout is 0.
const DefaultRemoteTimeout = 2 * time.Minute

// Given reports whether any manifests were named.
func (in Input) Given() bool { return len(in.Filenames) > 0 || len(in.Kustomizations) > 0 }

// Read reads every file and kustomization of the input as ReadContext
// does, without a way to stop it.
func (in Input) Read(stdin io.Reader) (*Manifests, error) {
	return in.ReadContext(context.Background(), stdin)
}

// ReadContext reads every file and kustomization of the input, each
// through the size limit, and stops with ctx's error once ctx ends.
func (in Input) ReadContext(ctx context.Context, stdin io.Reader) (*Manifests, error) {
	if !in.Given() {
		return nil, errors.New("no input files")
	}
	m := &Manifests{Strict: in.Strict}
	names := append([]string(nil), in.Filenames...)
	if len(in.Filenames) > 0 {
		read := func(name string, data []byte) error {
			if isKustomization(name) {
				m.warnf(name, "a kustomization: plan what it renders with -k %s", filepath.Dir(name))
				return nil
			}
			if err := interrupt.Err(ctx); err != nil {
				return fmt.Errorf("parsing %s: %w", name, err)
			}
			interrupt.Doing(ctx, "parsing %s", name)
			return Decode(name, data, m)
		}
		if err := readInputs(ctx, in.Filenames, stdin, in.Recursive, in.MaxInputSize, read); err != nil {
			return nil, err
		}
	}
	for _, dir := range in.Kustomizations {
		data, err := in.kustomize(ctx, dir)
		if err != nil {
			return nil, err
		}
		if err := interrupt.Err(ctx); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", dir, err)
		}
		interrupt.Doing(ctx, "parsing the rendered kustomization %s", dir)
		if err := Decode(dir, data, m); err != nil {
			return nil, err
		}
		names = append(names, dir)
	}
	if err := interrupt.Err(ctx); err != nil {
		return nil, fmt.Errorf("reading the manifests: %w", err)
	}
	return m.finish(names)
}

// Documents reads the input's files (-f, -R) as ReadDocuments does, each
// through the size limit, stopping once ctx ends.
func (in Input) Documents(ctx context.Context, stdin io.Reader) ([]Document, error) {
	return readDocuments(ctx, in.Filenames, stdin, in.Recursive, in.MaxInputSize)
}

// isKustomization reports whether the file is a kustomization, by the
// names kustomize looks for.
func isKustomization(name string) bool {
	switch filepath.Base(name) {
	case "kustomization.yaml", "kustomization.yml", "Kustomization":
		return true
	}
	return false
}

// kustomize renders the kustomization in dir with kustomize's own API and
// kubectl's defaults (no plugins, load restrictions on). Files are read
// through the size limit; remote bases are refused unless allowed, and
// then the rendering is bounded by RemoteTimeout and ctx.
func (in Input) kustomize(ctx context.Context, dir string) ([]byte, error) {
	remote, err := remoteBases(dir, in.MaxInputSize)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	interrupt.Doing(ctx, "rendering kustomization %s", dir)
	if len(remote) > 0 && !in.AllowRemoteBases {
		return nil, fmt.Errorf("kustomize %s: %s names the remote base %s; -k works offline, so it is not fetched (pass --allow-remote-bases to fetch it, or vendor it locally)", dir, remote[0].where, remote[0].ref)
	}
	limit := limitOrDefault(in.MaxInputSize)
	fs := limitedFS{FileSystem: filesys.MakeFsOnDisk(), ctx: ctx, limit: limit}
	if len(remote) > 0 {
		timeout := in.RemoteTimeout
		if timeout <= 0 {
			timeout = DefaultRemoteTimeout
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	type rendered struct {
		data []byte
		err  error
	}
	done := make(chan rendered, 1)
	go func() {
		// kustomize takes no context: when ctx ends first the rendering is
		// left behind (the command is exiting) and its result dropped.
		res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, dir)
		if err != nil {
			done <- rendered{err: err}
			return
		}
		out, err := res.AsYaml()
		done <- rendered{out, err}
	}()
	select {
	case <-ctx.Done():
		if len(remote) > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("kustomize %s: fetching the remote base %s did not finish within %s", dir, remote[0].ref, in.remoteTimeout())
		}
		return nil, fmt.Errorf("rendering kustomization %s: %w", dir, interrupt.Err(ctx))
	case r := <-done:
		if r.err != nil {
			return nil, kustomizeError(dir, remote, r.err)
		}
		if int64(len(r.data)) > limit {
			return nil, &SizeError{Name: "kustomization " + dir, Limit: limit}
		}
		return r.data, nil
	}
}

func (in Input) remoteTimeout() time.Duration {
	if in.RemoteTimeout <= 0 {
		return DefaultRemoteTimeout
	}
	return in.RemoteTimeout
}

// kustomizeError phrases kustomize's error. A remote base that cannot be
// fetched makes kustomize fall back to reading it as a local path, whose
// "evalsymlink failure" hides the fetch's failure (a DNS error, a refused
// connection): that is said plainly instead.
func kustomizeError(dir string, remote []remoteRef, err error) error {
	msg := err.Error()
	if len(remote) > 0 && strings.Contains(msg, "evalsymlink failure") {
		for _, r := range remote {
			if strings.Contains(msg, r.ref) {
				return fmt.Errorf("kustomize %s: cannot fetch the remote base %s (named in %s): the network, the host name or the repository failed", dir, r.ref, r.where)
			}
		}
		return fmt.Errorf("kustomize %s: cannot fetch the remote base %s (named in %s): the network, the host name or the repository failed", dir, remote[0].ref, remote[0].where)
	}
	return fmt.Errorf("kustomize %s: %w", dir, err)
}

// limitedFS is the disk as kustomize sees it, with every file read
// through the size limit: a resource that is a symlink to /dev/zero
// stops at the limit instead of filling memory.
type limitedFS struct {
	filesys.FileSystem
	ctx   context.Context
	limit int64
}

// ReadFile reads path through the limit.
func (f limitedFS) ReadFile(path string) ([]byte, error) {
	return ReadFile(f.ctx, path, f.limit)
}

// remoteRef is a reference to a remote base or resource in a
// kustomization.
type remoteRef struct {
	where string // the kustomization file
	ref   string
}

// scpStyle is git's user@host:path form.
var scpStyle = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*@[^/:]+:`)

// isRemote reports whether kustomize would fetch ref over the network
// (or run git on it): a URL, a git:: reference, git's user@host:path form
// or a GitHub repository (as kustomize's git.NewRepoSpecFromURL takes
// them).
func isRemote(ref string) bool {
	l := strings.ToLower(strings.TrimSpace(ref))
	return strings.Contains(l, "://") || strings.HasPrefix(l, "git::") || scpStyle.MatchString(l) ||
		strings.HasPrefix(l, "github.com/") || strings.HasPrefix(l, "github.com:")
}

// remoteBases finds the remote references of the kustomization in dir and
// of the local kustomizations it names, without touching the network.
func remoteBases(dir string, limit int64) ([]remoteRef, error) {
	var out []remoteRef
	seen := map[string]bool{}
	var visit func(dir string, depth int) error
	visit = func(dir string, depth int) error {
		abs, err := filepath.Abs(dir)
		if err != nil || seen[abs] || depth > 100 {
			return nil // kustomize reports cycles and bad paths itself
		}
		seen[abs] = true
		file := ""
		for _, n := range konfig.RecognizedKustomizationFileNames() {
			if info, err := os.Stat(filepath.Join(dir, n)); err == nil && info.Mode().IsRegular() {
				file = filepath.Join(dir, n)
				break
			}
		}
		if file == "" {
			return nil
		}
		data, err := ReadFile(context.Background(), file, limit)
		if err != nil {
			return err
		}
		var k map[string]any
		if yaml.Unmarshal(data, &k) != nil {
			return nil // kustomize phrases the syntax error
		}
		for _, ref := range kustomizationPaths(k) {
			if isRemote(ref) {
				out = append(out, remoteRef{where: file, ref: ref})
				continue
			}
			if p := filepath.Join(dir, ref); !filepath.IsAbs(ref) {
				if info, err := os.Stat(p); err == nil && info.IsDir() {
					if err := visit(p, depth+1); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	if err := visit(dir, 0); err != nil {
		return nil, err
	}
	return out, nil
}

// kustomizationPaths are the strings of a kustomization that name files,
// directories or repositories to load.
func kustomizationPaths(k map[string]any) []string {
	var out []string
	strs := func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case []any:
			for _, s := range v {
				if s, ok := s.(string); ok {
					out = append(out, s)
				}
			}
		}
	}
	for _, f := range []string{"resources", "bases", "components", "crds", "configurations", "generators", "transformers", "validators", "patchesStrategicMerge"} {
		strs(k[f])
	}
	if o, ok := k["openapi"].(map[string]any); ok {
		strs(o["path"])
	}
	for _, f := range []string{"patches", "patchesJson6902", "replacements"} {
		if list, ok := k[f].([]any); ok {
			for _, e := range list {
				if e, ok := e.(map[string]any); ok {
					strs(e["path"])
				}
			}
		}
	}
	for _, f := range []string{"configMapGenerator", "secretGenerator"} {
		if list, ok := k[f].([]any); ok {
			for _, e := range list {
				if e, ok := e.(map[string]any); ok {
					strs(e["files"])
					strs(e["envs"])
					strs(e["env"])
				}
			}
		}
	}
	return out
}
