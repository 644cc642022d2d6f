// Command genchart writes the Helm chart charts/kubectl-rightsize from the
// operator's manifests: it renders config/ exactly as `kubectl rightsize
// operator install` does (config.Render), copies the CRDs into crds/, and
// turns every other object into a template in which the fields users set
// (namespace, image, replicas, resources, cloud, cluster name, region and the
// other operator flags, nodeSelector, tolerations, affinity, ServiceAccount
// annotations, extra args) read from values.yaml, whose defaults are the
// rendered values. So there is one source for what gets installed, and the
// chart's defaults render what `operator install` prints.
//
// `make generate` runs it; its test fails when the checked-in chart differs
// from what it generates.
//
//	go run ./hack/genchart [-root .]
//
// A release writes a copy pinned to the image it pushed (make
// release-image), values.yaml's image.repository and image.digest set, and
// packages that copy:
//
//	go run ./hack/genchart -root bin/chart-pinned -image ghcr.io/…@sha256:<digest>
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// chartDir is where the chart goes, relative to the repository root.
const chartDir = "charts/kubectl-rightsize"

func main() {
	root := flag.String("root", ".", "the repository's root")
	image := flag.String("image", "", "pin the chart's image: repository@sha256:<digest> as values.yaml's image.repository and image.digest")
	flag.Parse()
	if err := run(*root, *image); err != nil {
		fmt.Fprintf(os.Stderr, "genchart: %v\n", err)
		os.Exit(1)
	}
}

// run writes the generated chart under root and removes files the chart no
// longer has.
func run(root, image string) error {
	files, err := GenerateFor(image)
	if err != nil {
		return err
	}
	dir := filepath.Join(root, chartDir)
	stale, err := chartFiles(dir)
	if err != nil {
		return err
	}
	for _, name := range stale {
		if _, ok := files[name]; !ok {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return err
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// chartFiles lists the files under dir as slash-separated relative paths;
// a missing dir has none.
func chartFiles(dir string) ([]string, error) {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && p == dir {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	return names, err
}
