package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	_ "github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
)

const repoRoot = "../.."

// TestReferencePagesUpToDate fails when a page under docs/reference
// differs from what the generator makes of today's sources, or when a
// page it once generated is no longer generated.
func TestReferencePagesUpToDate(t *testing.T) {
	pages, err := Generate(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"crds.md", "metrics.md", "rbac.md", "json.md", "cli/kubectl_rightsize.md", "cli/kubectl_rightsize_explain.md", "cli/kubectl_rightsize_completion.md"} {
		if _, ok := pages[referenceDir+"/"+want]; !ok {
			t.Errorf("the generator makes no %s", want)
		}
	}
	for _, p := range sortedKeys(pages) {
		got, err := os.ReadFile(filepath.Join(repoRoot, p))
		if err != nil {
			t.Errorf("%s is not checked in (run make generate): %v", p, err)
			continue
		}
		if string(got) != string(pages[p]) {
			t.Errorf("%s differs from what hack/gendocs generates now; run make generate and commit it\n%s", p, firstDifference(string(got), string(pages[p])))
		}
	}
	stale, err := Stale(repoRoot, pages)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) > 0 {
		t.Errorf("generated pages the generator no longer makes (run make generate): %v", stale)
	}
}

func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n  checked in: " + gl + "\n  generated:  " + wl
		}
	}
	return ""
}

// TestLinksResolve follows every relative link of README.md,
// CONTRIBUTING.md and docs/: each must reach a file or directory of the
// repository, and a #fragment a heading of the page.
func TestLinksResolve(t *testing.T) {
	files, err := DocFiles(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("found only %v", files)
	}
	broken, err := CheckLinks(repoRoot, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Error(b)
	}
}

// TestCheckLinksFindsBrokenOnes: the checker itself reports a missing file,
// a missing anchor and a link out of the repository, and ignores code,
// URLs and good links.
func TestCheckLinksFindsBrokenOnes(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/a.md", "# A page\n\n## Offline: `explain -f`\n\n## Twice\n\n## Twice\n")
	write("README.md", strings.Join([]string{
		"[ok](docs/a.md) [ok anchor](docs/a.md#offline-explain--f) [second twice](docs/a.md#twice-1)",
		"[dir](docs/) [self](#readme) [url](https://example.com/x.md)",
		"`[in code](missing.md)`",
		"```",
		"[in a fence](missing.md)",
		"```",
		"[missing](docs/b.md)",
		"[bad anchor](docs/a.md#nope)",
		"[outside](../x.md)",
		"# README",
	}, "\n"))
	broken, err := CheckLinks(root, []string{"README.md", "docs/a.md"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md:7: docs/b.md: no such file or directory",
		"README.md:8: docs/a.md#nope: docs/a.md has no heading #nope",
		"README.md:9: ../x.md points outside the repository",
	}
	if !slices.Equal(broken, want) {
		t.Errorf("broken links:\n got %q\nwant %q", broken, want)
	}
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Offline: `explain -f`", "offline-explain--f"},
		{"The consolidation report: `explain --consolidation`", "the-consolidation-report-explain---consolidation"},
		{"No CRDs (or a pool that is not ours): adoption", "no-crds-or-a-pool-that-is-not-ours-adoption"},
		{"Interruption handling: `--interruption-queue`", "interruption-handling---interruption-queue"},
		{"1. Offline, in a minute", "1-offline-in-a-minute"},
		{"See [Planning](x.md) now", "see-planning-now"},
		{"snake_case stays", "snake_case-stays"},
	} {
		if got := Slug(tc.heading); got != tc.want {
			t.Errorf("Slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

func TestCell(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"one\nline", "one line"},
		{"para one\n\npara two", "para one<br><br>para two"},
		{"list:\n- a\n- b", "list:<br>- a<br>- b"},
		{"a | b", `a \| b`},
		{"x <key> `<kept>` y > z", "x &lt;key&gt; `<kept>` y &gt; z"},
		{"`a|b`", "`a\\|b`"},
	} {
		if got := cell(tc.in); got != tc.want {
			t.Errorf("cell(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestReadMetrics: names are joined from Namespace and Name through the
// package's constants, help texts concatenated, label constants resolved,
// and only registered collectors listed, with those declared as rows of a
// table (typed by their variable's declaration).
func TestReadMetrics(t *testing.T) {
	dir := t.TempDir()
	src := `package m

import "github.com/prometheus/client_golang/prometheus"

const namespace = "rs"
const LabelPool = "nodepool"

var (
	A = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "a_total",
		Help: "Counts " + "a.",
	}, []string{LabelPool, "reason"})
	B = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "sub", Name: "b_seconds",
		Help: "B.", Buckets: prometheus.ExponentialBuckets(0.5, 2, 4),
	})
	Unregistered = prometheus.NewGauge(prometheus.GaugeOpts{Name: "c", Help: "C."})
)

var (
	D *prometheus.GaugeVec
	E prometheus.Summary
	shared = []string{"zone", LabelPool}
)

var table = []struct {
	c      any
	name   string
	labels []string
	help   string
}{
	{&D, "k_d", shared, "D " + "gauge."},
	{&E, "k_e_seconds", nil, "E."},
}

func init() { registry.MustRegister(B, A) }
`
	if err := os.WriteFile(filepath.Join(dir, "m.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []metric{
		{Var: "D", Name: "k_d", Type: "gauge", Help: "D gauge.", Labels: []string{"zone", "nodepool"}},
		{Var: "E", Name: "k_e_seconds", Type: "summary", Help: "E."},
		{Var: "A", Name: "rs_a_total", Type: "counter", Help: "Counts a.", Labels: []string{"nodepool", "reason"}},
		{Var: "B", Name: "rs_sub_b_seconds", Type: "histogram", Help: "B.", Buckets: "4 buckets from 0.5, each ×2"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Var != w.Var || g.Name != w.Name || g.Type != w.Type || g.Help != w.Help || g.Buckets != w.Buckets || !slices.Equal(g.Labels, w.Labels) {
			t.Errorf("metric %d: got %+v, want %+v", i, g, w)
		}
	}
}

// TestMetricsMatchRegistry checks the source reading against the live
// registry: every rightsize_ family the registry can list (those without
// labels are always listed) is in the reference with the same help and
// type.
func TestMetricsMatchRegistry(t *testing.T) {
	metrics, err := readMetrics(filepath.Join(repoRoot, metricsDir))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]metric{}
	for _, m := range metrics {
		byName[m.Name] = m
	}
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "rightsize_") && !strings.HasPrefix(f.GetName(), "karpenter_") {
			continue
		}
		checked++
		m, ok := byName[f.GetName()]
		if !ok {
			t.Errorf("the registry has %s, the reference does not", f.GetName())
			continue
		}
		if m.Help != f.GetHelp() {
			t.Errorf("%s: help %q, the registry says %q", m.Name, m.Help, f.GetHelp())
		}
		if want := strings.ToLower(f.GetType().String()); m.Type != want {
			t.Errorf("%s: type %s, the registry says %s", m.Name, m.Type, want)
		}
	}
	if checked == 0 {
		t.Error("the registry lists no rightsize_ metric: is pkg/operator/metrics registering with controller-runtime's registry?")
	}
}

// TestCRDFields renders a small CRD and checks the rows: nested paths,
// arrays, maps, required fields and what the schema enforces.
func TestCRDFields(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, crdDir), 0o755); err != nil {
		t.Fatal(err)
	}
	crdYAML := `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.dev
spec:
  group: example.dev
  names: {kind: Widget, plural: widgets, shortNames: [wd]}
  scope: Cluster
  versions:
  - name: v1
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        description: Widget is a test.
        type: object
        properties:
          apiVersion: {type: string}
          spec:
            type: object
            required: [size]
            properties:
              size:
                description: |-
                  Size of the widget.
                  In units.
                type: integer
                format: int32
                minimum: 1
                default: 3
              mode: {type: string, enum: [a, b]}
              labels: {type: object, additionalProperties: {type: string}}
              items:
                type: array
                items:
                  type: object
                  properties:
                    name: {type: string, maxLength: 63}
              quantity: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
`
	if err := os.WriteFile(filepath.Join(root, crdDir, "example.dev_widgets.yaml"), []byte(crdYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	pages, err := crdPages(root)
	if err != nil {
		t.Fatal(err)
	}
	page := string(pages[referenceDir+"/crds.md"])
	for _, want := range []string{
		"## Widget\n",
		"`apiVersion: example.dev/v1`, `kind: Widget`; cluster-scoped; plural `widgets`, short names `wd`; status subresource.",
		"| `spec.size` | integer (int32) | Size of the widget. In units.<br><br>Required. Default: `3`. Value at least 1. |",
		"| `spec.mode` | string | One of `\"a\"`, `\"b\"`. |",
		"| `spec.labels` | map[string]string |  |",
		"| `spec.items` | []object |  |",
		"| `spec.items[].name` | string | Length at most 63. |",
		"| `spec.quantity` | int or string |  |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "`apiVersion` |") {
		t.Error("apiVersion is listed as a field")
	}
}

// TestJSONReferenceInlines: fields of inlined structs (the live result,
// the consolidation plan) appear at the level encoding/json puts them,
// with their doc comments and string constants resolved.
func TestJSONReferenceInlines(t *testing.T) {
	pages, err := jsonPages(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	page := string(pages[referenceDir+"/json.md"])
	for _, want := range []string{
		"| `kind` | string | Always Plan. *Omitted when empty.* |",
		"| `nodes[].instanceType` | string |",
		"| `existingNodes[].pricePerHour` | number or null | PricePerHour is null when the catalog does not know the type. |",
		"| `consolidation.actions[].kind` | string |",
		"| `consolidation.nodes[].verdict` | string | Verdict is `next`, `planned` or `kept`. |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, absent := range []string{"`LiveResult`", "`ConsolidationPlan`", "`TypeMeta`"} {
		if strings.Contains(page, absent) {
			t.Errorf("the page lists the inlined struct %s as a field", absent)
		}
	}
}

// TestCLIPagesAreStable: one page per available command, no generation
// date, and no home directory of the machine that generated them.
func TestCLIPagesAreStable(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	root := &cobra.Command{Use: "kubectl-rightsize", Short: "Root."}
	root.PersistentFlags().String("cache-dir", filepath.Join(home, ".kube", "cache"), "cache")
	sub := &cobra.Command{Use: "explain", Short: "Explain.", Run: func(*cobra.Command, []string) {}}
	sub.Flags().String("config", filepath.Join(home, "x.yaml"), "a file")
	hidden := &cobra.Command{Use: "secret", Hidden: true, Run: func(*cobra.Command, []string) {}}
	root.AddCommand(sub, hidden)
	pages, err := cliPagesOf(root)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeys(pages), []string{cliDir + "/kubectl-rightsize.md", cliDir + "/kubectl-rightsize_explain.md"}; !slices.Equal(got, want) {
		t.Fatalf("pages %v, want %v", got, want)
	}
	for name, b := range pages {
		page := string(b)
		if strings.Contains(page, "Auto generated") {
			t.Errorf("%s carries cobra's generation date", name)
		}
		if strings.Contains(page, home) {
			t.Errorf("%s carries the home directory:\n%s", name, page)
		}
		if !strings.HasPrefix(page, "<!-- Generated by hack/gendocs") {
			t.Errorf("%s lacks the generated header", name)
		}
	}
	if page := string(pages[cliDir+"/kubectl-rightsize_explain.md"]); !strings.Contains(page, `"$HOME/x.yaml"`) || !strings.Contains(page, `"$HOME/.kube/cache"`) {
		t.Errorf("defaults not written with $HOME:\n%s", page)
	}
}

// TestREADMEStaysShort: the README is a front page that points into docs/
// (at most 150 lines), and keeps the test command CI runs.
func TestREADMEStaysShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if n := strings.Count(readme, "\n"); n > 150 {
		t.Errorf("README.md has %d lines; move detail into docs/ (at most 150)", n)
	}
	for _, want := range []string{"make test", "Go 1.26", "tmux", "docs/getting-started.md"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md no longer mentions %q", want)
		}
	}
}
