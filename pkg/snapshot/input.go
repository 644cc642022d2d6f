package snapshot

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
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
}

// Given reports whether any manifests were named.
func (in Input) Given() bool { return len(in.Filenames) > 0 || len(in.Kustomizations) > 0 }

// Read reads every file and kustomization of the input as Read does.
func (in Input) Read(stdin io.Reader) (*Manifests, error) {
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
			return Decode(name, data, m)
		}
		if err := readInputs(in.Filenames, stdin, in.Recursive, read); err != nil {
			return nil, err
		}
	}
	for _, dir := range in.Kustomizations {
		data, err := kustomize(dir)
		if err != nil {
			return nil, err
		}
		if err := Decode(dir, data, m); err != nil {
			return nil, err
		}
		names = append(names, dir)
	}
	return m.finish(names)
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
// kubectl's defaults (no plugins, load restrictions on).
func kustomize(dir string) ([]byte, error) {
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	out, err := res.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	return out, nil
}
