package main

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/explain"
)

// modulePath is this repository's Go module; packages under it are read
// for their doc comments.
const modulePath = "github.com/rightsize-dev/kubectl-rightsize"

// foreignDocs describe fields of types outside the module, whose source
// the generator does not read.
var foreignDocs = map[reflect.Type]map[string]string{
	reflect.TypeFor[metav1.TypeMeta](): {
		"APIVersion": "Always rightsize.dev/v1alpha1.",
		"Kind":       "Always Plan.",
	},
}

// fieldNotes describe the fields whose Go declaration has no doc comment,
// by JSON path, or by the end of one after a dot (replacements[] appears
// under both actions[] and next). A doc comment, once written, wins.
var fieldNotes = map[string]string{
	"nodes":                          "The proposed nodes.",
	"nodes[].instanceType":           "The node's instance type.",
	"nodes[].capacityType":           "`on-demand` or `spot`.",
	"nodes[].zone":                   "The node's zone.",
	"nodes[].nodePool":               "The NodePool the node would belong to.",
	"nodes[].pricePerHour":           "The offering's price, $/h.",
	"nodes[].pods":                   "The pods planned onto the node, as `namespace/name`.",
	"nodes[].allocatable":            "What pods may use of the node (DaemonSets already subtracted): resource name → quantity.",
	"nodes[].requested":              "What the node's planned pods request: resource name → quantity.",
	"unschedulable":                  "The pods the plan leaves pending, with the reason.",
	"unschedulable[].pod":            "The pod, as `namespace/name`.",
	"unschedulable[].owner":          "The pod's top-level controller, as `Kind/name`.",
	"unschedulable[].reason":         "Why, in one sentence: the constraint that ruled out the instance types, and the cheapest type that would fit.",
	"totalPricePerHour":              "The proposed nodes' summed price, $/h.",
	"totalPricePerMonth":             "totalPricePerHour × 730.",
	"lowerBoundPricePerHour":         "A lower bound no plan can beat, $/h.",
	"scope":                          "What the live report covers.",
	"pending[].pod":                  "The pod, as `namespace/name`.",
	"pending[].owner":                "The pod's top-level controller, as `Kind/name` (`Pod/name` for a bare pod).",
	"pending[].schedulerReason":      "The reason of the pod's PodScheduled condition when it is False (`Unschedulable`, `SchedulingGated`, …).",
	"pending[].schedulerMessage":     "The scheduler's message on the pod's PodScheduled condition; empty when the scheduler has not looked at the pod yet.",
	"pending[].newNode":              "Set when node is a proposed node.",
	"pending[].instanceType":         "The instance type of the node that takes the pod.",
	"pending[].capacityType":         "The capacity type of the node that takes the pod.",
	"pending[].zone":                 "The zone of the node that takes the pod.",
	"pending[].pricePerHour":         "The price of the node that takes the pod, $/h.",
	"pending[].note":                 "A remark on the placement, e.g. that the plan finds room on an existing node the scheduler has not used.",
	"existingNodes[].name":           "The Node's name.",
	"existingNodes[].instanceType":   "From the node's `node.kubernetes.io/instance-type` label (or the beta one).",
	"existingNodes[].capacityType":   "From `karpenter.sh/capacity-type` or `eks.amazonaws.com/capacityType`; on-demand when neither is set.",
	"existingNodes[].zone":           "From the node's `topology.kubernetes.io/zone` label (or the beta one).",
	"existingNodes[].nodePool":       "From the node's NodePool, Provisioner or EKS node group label; empty for none.",
	"existingNodes[].allocatable":    "The node's allocatable: resource name → quantity.",
	"existingNodes[].requested":      "What the node's pods request: resource name → quantity.",
	"existingNodes[].pods":           "The number of pods on the node.",
	"existingNodes[].cordoned":       "Set when the node is cordoned.",
	"clusterPricePerMonth":           "clusterPricePerHour × 730.",
	"clusterNodes":                   "The number of existing nodes.",
	"pricedNodes":                    "The number of existing nodes whose price the catalog knows.",
	"replacements[].nodePool":        "The NodePool of the replacement.",
	"replacements[].instanceType":    "The replacement's instance type.",
	"replacements[].zone":            "The replacement's zone.",
	"replacements[].capacityType":    "`on-demand` or `spot`.",
	"replacements[].pricePerHour":    "The replacement's price, $/h.",
	"replacements[].requested":       "What the plan's pods request of it, as the solver's resource vector.",
	"moves[].to":                     "Where the pod is expected to land: an existing node's name, or `new-<i>` for replacements[i].",
	"blocked[].node":                 "The node left alone.",
	"blocked[].reason":               "Why, in one sentence.",
	"consolidation.nodes[].node":     "The existing node.",
	"consolidation.nodes[].nodePool": "Its NodePool, if any.",
	"consolidation.nodes[].reason":   "The verdict's reason, in one sentence.",
}

// noteFor is the fieldNotes entry for a JSON path.
func noteFor(path string) string {
	if n, ok := fieldNotes[path]; ok {
		return n
	}
	for k, n := range fieldNotes {
		if strings.HasSuffix(path, "."+k) {
			return n
		}
	}
	return ""
}

// jsonPages renders docs/reference/json.md: every field of explain's
// -o json|yaml output, from the Go types it is marshalled from (with
// encoding/json's rules for names, inlined structs and omitempty) and
// their doc comments.
func jsonPages(root string) (map[string][]byte, error) {
	docs := fieldDocs{root: root, byPkg: map[string]map[string]string{}}
	var rows []jsonRow
	if err := walkJSON(reflect.TypeFor[explain.Result](), "", &docs, &rows, map[reflect.Type]bool{}); err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, generatedHeader, "the Go types of pkg/explain's Result")
	b.WriteString("# JSON output reference: `explain -o json|yaml`\n\n")
	b.WriteString("`kubectl rightsize explain -o json` (and `-o yaml`, the same fields) prints one `Plan`\n")
	b.WriteString("object. Offline (`-f`) it has the top-level fields down to `lowerBoundPricePerHour`; on a\n")
	b.WriteString("live cluster also `scope` and what follows, and with `--consolidation` the\n")
	b.WriteString("`consolidation` object. A field marked *omitted when empty* is left out when it is zero,\n")
	b.WriteString("false, empty or null. Prices are US dollars; `…PerHour` per hour, `…PerMonth` per\n")
	b.WriteString("730 hours. See [Planning](../concepts/planning.md) for what the plan means.\n\n")
	b.WriteString("| field | type | description |\n|---|---|---|\n")
	for _, r := range rows {
		desc := r.doc
		if desc == "" {
			desc = noteFor(r.path)
		}
		if r.omitEmpty {
			if desc != "" {
				desc += " "
			}
			desc += "*Omitted when empty.*"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.path, r.typ, cell(desc))
	}
	return map[string][]byte{referenceDir + "/json.md": []byte(b.String())}, nil
}

type jsonRow struct {
	path, typ, doc string
	omitEmpty      bool
}

// walkJSON appends a row for every JSON field of t under prefix, inlining
// embedded structs as encoding/json does.
func walkJSON(t reflect.Type, prefix string, docs *fieldDocs, rows *[]jsonRow, seen map[reflect.Type]bool) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if seen[t] {
		return nil
	}
	seen[t] = true
	defer delete(seen, t)
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			if err := walkJSON(ft, prefix, docs, rows, seen); err != nil {
				return err
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		doc, err := docs.of(t, f.Name)
		if err != nil {
			return err
		}
		path := prefix + name
		typ := jsonType(f.Type)
		*rows = append(*rows, jsonRow{path: path, typ: typ, doc: doc, omitEmpty: strings.Contains(","+opts+",", ",omitempty,")})
		elem := ft
		suffix := ""
		for elem.Kind() == reflect.Slice || elem.Kind() == reflect.Array || elem.Kind() == reflect.Pointer {
			if elem.Kind() != reflect.Pointer {
				suffix += "[]"
			}
			elem = elem.Elem()
		}
		if elem.Kind() == reflect.Struct && elem != reflect.TypeFor[metav1.Time]() {
			if err := walkJSON(elem, path+suffix+".", docs, rows, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonType names a Go type by the JSON it marshals to.
func jsonType(t reflect.Type) string {
	nullable := ""
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
		nullable = " or null"
	}
	switch t.Kind() {
	case reflect.String:
		return "string" + nullable
	case reflect.Bool:
		return "boolean" + nullable
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer" + nullable
	case reflect.Float32, reflect.Float64:
		return "number" + nullable
	case reflect.Slice, reflect.Array:
		return "[]" + jsonType(t.Elem()) + nullable
	case reflect.Map:
		return "map[string]" + jsonType(t.Elem()) + nullable
	case reflect.Struct:
		if t == reflect.TypeFor[metav1.Time]() {
			return "string (RFC 3339 time)" + nullable
		}
		return "object" + nullable
	}
	return t.Kind().String() + nullable
}

// fieldDocs reads the doc comments of struct fields from the module's
// source, one package at a time.
type fieldDocs struct {
	root string
	// byPkg maps an import path to "Type.Field" → doc comment.
	byPkg map[string]map[string]string
}

// of is the doc comment of field on the struct type t ("" when it has
// none).
func (d *fieldDocs) of(t reflect.Type, field string) (string, error) {
	if m, ok := foreignDocs[t]; ok {
		return m[field], nil
	}
	pkg := t.PkgPath()
	rel, ok := strings.CutPrefix(pkg, modulePath+"/")
	if !ok {
		return "", nil
	}
	docs, ok := d.byPkg[pkg]
	if !ok {
		var err error
		if docs, err = readFieldDocs(filepath.Join(d.root, filepath.FromSlash(rel))); err != nil {
			return "", err
		}
		d.byPkg[pkg] = docs
	}
	return docs[t.Name()+"."+field], nil
}

// readFieldDocs parses a package directory and returns "Type.Field" →
// the field's doc comment (or trailing comment), as one paragraph.
func readFieldDocs(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	fset := token.NewFileSet()
	out := map[string]string{}
	consts := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", filepath.Join(dir, name), err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if i < len(vs.Values) && id.IsExported() {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							consts[id.Name] = constant.StringVal(constant.MakeFromLiteral(lit.Value, lit.Kind, 0))
						}
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			for _, fld := range st.Fields.List {
				text := ""
				if fld.Doc != nil {
					text = fld.Doc.Text()
				} else if fld.Comment != nil {
					text = fld.Comment.Text()
				}
				text = strings.Join(strings.Fields(text), " ")
				names := fld.Names
				if len(names) == 0 {
					// An embedded field is named after its type.
					typ := fld.Type
					if star, ok := typ.(*ast.StarExpr); ok {
						typ = star.X
					}
					switch x := typ.(type) {
					case *ast.Ident:
						names = []*ast.Ident{x}
					case *ast.SelectorExpr:
						names = []*ast.Ident{x.Sel}
					}
				}
				for _, id := range names {
					out[ts.Name.Name+"."+id.Name] = text
				}
			}
			return false
		})
	}
	// A comment that names a string constant ("Kind is ActionDelete or
	// ActionMerge") names the value the JSON carries instead.
	word := regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*\b`)
	for k, text := range out {
		out[k] = word.ReplaceAllStringFunc(text, func(w string) string {
			if v, ok := consts[w]; ok {
				return "`" + v + "`"
			}
			return w
		})
	}
	return out, nil
}
