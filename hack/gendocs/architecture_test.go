package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// architecturePage is docs/architecture.md, from this package's directory.
var architecturePage = filepath.Join("..", "..", "docs", "architecture.md")

var (
	// tableRow is a row of the package table: "| [`path`](link) | ...".
	tableRow = regexp.MustCompile("^\\| \\[`([^`]+)`\\]\\(")
	// arrowLine is a forbidden arrow: "- `from` must not import `a`, `b`: why".
	arrowLine = regexp.MustCompile("^- `([^`]+)` must not import ([^:]+):")
	quoted    = regexp.MustCompile("`([^`]+)`")
)

// architecture reads the package table and the forbidden arrows of page.
func architecture(page string) (packages []string, arrows map[string][]string) {
	arrows = map[string][]string{}
	for _, line := range strings.Split(page, "\n") {
		if m := tableRow.FindStringSubmatch(line); m != nil {
			packages = append(packages, m[1])
		}
		if m := arrowLine.FindStringSubmatch(line); m != nil {
			for _, q := range quoted.FindAllStringSubmatch(m[2], -1) {
				arrows[m[1]] = append(arrows[m[1]], q[1])
			}
		}
	}
	return packages, arrows
}

// violations returns "from -> to" for every import of deps (a package's
// import path, relative to the module, to the module's packages it imports
// directly or not) that an arrow forbids. An arrow's source written p/...
// is p and every package under it; its targets are always.
func violations(deps map[string][]string, arrows map[string][]string) []string {
	under := func(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }
	var out []string
	for from, targets := range arrows {
		root, tree := strings.CutSuffix(from, "/...")
		for pkg, imports := range deps {
			if pkg != root && !(tree && under(pkg, root)) {
				continue
			}
			for _, imp := range imports {
				for _, t := range targets {
					if under(imp, t) {
						out = append(out, pkg+" -> "+imp)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// moduleDeps lists the module's packages (go list ./...) with the module's
// packages each depends on, paths relative to the module.
func moduleDeps(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	rel := func(p string) (string, bool) {
		if p == modulePath {
			return ".", true
		}
		r, ok := strings.CutPrefix(p, modulePath+"/")
		return r, ok
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, ok := rel(fields[0])
		if !ok {
			continue
		}
		deps[pkg] = []string{}
		for _, d := range fields[1:] {
			if r, ok := rel(d); ok {
				deps[pkg] = append(deps[pkg], r)
			}
		}
	}
	return deps
}

// TestArchitecture: docs/architecture.md's package table lists exactly
// the packages of `go list ./...`, and no package imports what a forbidden
// arrow of the page forbids.
func TestArchitecture(t *testing.T) {
	page, err := os.ReadFile(architecturePage)
	if err != nil {
		t.Fatal(err)
	}
	listed, arrows := architecture(string(page))
	if len(arrows) == 0 {
		t.Fatal("no forbidden arrows found in the page")
	}
	deps := moduleDeps(t)
	var have []string
	for pkg := range deps {
		have = append(have, pkg)
	}
	slices.Sort(have)
	slices.Sort(listed)
	for _, p := range have {
		if _, ok := slices.BinarySearch(listed, p); !ok {
			t.Errorf("package %s is not in %s's table", p, architecturePage)
		}
	}
	for _, p := range listed {
		if _, ok := slices.BinarySearch(have, p); !ok {
			t.Errorf("%s's table lists %s, which go list ./... does not", architecturePage, p)
		}
	}
	for _, v := range violations(deps, arrows) {
		t.Errorf("forbidden arrow (%s): %s", architecturePage, v)
	}
}

// TestArchitectureArrows: the checker finds a forbidden import, direct or
// in a subtree, and leaves allowed ones alone.
func TestArchitectureArrows(t *testing.T) {
	page := "- `pkg/a` must not import `pkg/b`: why.\n- `pkg/c/...` must not import `pkg/d`, `pkg/e`: why.\n"
	_, arrows := architecture(page)
	tests := []struct {
		name string
		deps map[string][]string
		want []string
	}{
		{"allowed", map[string][]string{"pkg/a": {"pkg/x"}, "pkg/c/y": {"pkg/x"}}, nil},
		{"direct", map[string][]string{"pkg/a": {"pkg/b"}}, []string{"pkg/a -> pkg/b"}},
		{"a target's subpackage", map[string][]string{"pkg/a": {"pkg/b/z"}}, []string{"pkg/a -> pkg/b/z"}},
		{"a source's subpackage, arrow without /...", map[string][]string{"pkg/a/z": {"pkg/b"}}, nil},
		{"a source's subpackage, arrow with /...", map[string][]string{"pkg/c/y": {"pkg/e"}}, []string{"pkg/c/y -> pkg/e"}},
		{"a name that only starts alike", map[string][]string{"pkg/a": {"pkg/bb"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := violations(tt.deps, arrows); !slices.Equal(got, tt.want) {
				t.Errorf("violations = %v, want %v", got, tt.want)
			}
		})
	}
}
