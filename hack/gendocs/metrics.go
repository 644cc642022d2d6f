package main

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
)

// metricsDir is the package that defines and registers the operator's
// metrics.
const metricsDir = "pkg/operator/metrics"

// metric is one collector as its source declares it.
type metric struct {
	Var, Name, Type, Help string
	Labels                []string
	Buckets               string
}

// metricsPages renders docs/reference/metrics.md from the collectors
// pkg/operator/metrics registers. It reads them from the package's source
// rather than from a running registry: a registry lists a vector only once
// it has a child, so most of them would be missing before the operator has
// done anything. The test checks the result against the live registry.
func metricsPages(root string) (map[string][]byte, error) {
	metrics, err := readMetrics(filepath.Join(root, metricsDir))
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, generatedHeader, "the collectors pkg/operator/metrics registers")
	b.WriteString("# Metrics reference\n\n")
	b.WriteString("The operator serves these Prometheus metrics on its manager's `/metrics` endpoint\n")
	b.WriteString("(the `rightsize-operator-metrics` Service of the manifests), beside controller-runtime's and\n")
	b.WriteString("the Go runtime's own.\n\n")
	table := func(prefix string) {
		b.WriteString("| metric | type | labels | help |\n|---|---|---|---|\n")
		for _, m := range metrics {
			if !strings.HasPrefix(m.Name, prefix) {
				continue
			}
			labels := "—"
			if len(m.Labels) > 0 {
				labels = "`" + strings.Join(m.Labels, "`, `") + "`"
			}
			help := m.Help
			if m.Buckets != "" {
				help += " Buckets: " + m.Buckets + "."
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", m.Name, m.Type, labels, cell(help))
		}
	}
	table("rightsize_")
	b.WriteString("\n## Karpenter's names\n\n")
	b.WriteString("Beside its own, the operator serves the metrics of Karpenter (kubernetes-sigs/karpenter) that measure\n")
	b.WriteString("the same things, under Karpenter's names, labels and units, so that dashboards and alerts written for\n")
	b.WriteString("Karpenter keep working. Each one's help names the `rightsize_` metric it mirrors, where there is one;\n")
	b.WriteString("the counters count the same events as those, with Karpenter's label values (snake case reasons such as\n")
	b.WriteString("`underutilized`, `provisioned`). Karpenter metrics not listed here (scheduling-simulation internals,\n")
	b.WriteString("the per-pod unbound and unstarted gauges) are not served.\n\n")
	table("karpenter_")
	return map[string][]byte{referenceDir + "/metrics.md": []byte(b.String())}, nil
}

// readMetrics parses the package and returns the collectors passed to
// MustRegister and those declared as rows of a table (see tableRows),
// sorted by name, with their options resolved: string
// constants of the package are followed, so Namespace: namespace and label
// names such as LabelNodePool come out as their values.
func readMetrics(dir string) ([]metric, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var parsed []*ast.File
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", f, err)
		}
		parsed = append(parsed, af)
	}
	consts := map[string]string{}
	vars := map[string]ast.Expr{}
	varTypes := map[string]ast.Expr{}
	var registered []string
	for _, f := range parsed {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					vs, ok := spec.(*ast.ValueSpec)
					if !ok {
						continue
					}
					for i, name := range vs.Names {
						if d.Tok == token.VAR && vs.Type != nil {
							varTypes[name.Name] = vs.Type
						}
						if i >= len(vs.Values) {
							continue
						}
						switch d.Tok {
						case token.CONST:
							if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								consts[name.Name] = constant.StringVal(constant.MakeFromLiteral(lit.Value, lit.Kind, 0))
							}
						case token.VAR:
							vars[name.Name] = vs.Values[i]
						}
					}
				}
			case *ast.FuncDecl:
				ast.Inspect(d, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "MustRegister" {
						for _, arg := range call.Args {
							if id, ok := arg.(*ast.Ident); ok {
								registered = append(registered, id.Name)
							}
						}
					}
					return true
				})
			}
		}
	}
	if len(registered) == 0 {
		return nil, fmt.Errorf("%s registers no collector (no MustRegister call)", dir)
	}
	var str func(e ast.Expr) (string, error)
	str = func(e ast.Expr) (string, error) {
		switch v := e.(type) {
		case *ast.BasicLit:
			if v.Kind == token.STRING {
				return constant.StringVal(constant.MakeFromLiteral(v.Value, v.Kind, 0)), nil
			}
		case *ast.Ident:
			if s, ok := consts[v.Name]; ok {
				return s, nil
			}
		case *ast.BinaryExpr:
			// "a" + "b", as long help texts are written.
			if v.Op == token.ADD {
				x, err := str(v.X)
				if err != nil {
					return "", err
				}
				y, err := str(v.Y)
				if err != nil {
					return "", err
				}
				return x + y, nil
			}
		case *ast.ParenExpr:
			return str(v.X)
		}
		return "", fmt.Errorf("%s is not a string literal or constant of the package", fset.Position(e.Pos()))
	}
	var out []metric
	rows, err := tableRows(vars, varTypes, str)
	if err != nil {
		return nil, err
	}
	out = append(out, rows...)
	for _, name := range registered {
		expr, ok := vars[name]
		if !ok {
			return nil, fmt.Errorf("%s is registered but not a package variable", name)
		}
		call, ok := expr.(*ast.CallExpr)
		if !ok {
			return nil, fmt.Errorf("%s is not built by a prometheus.New… call", name)
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || !strings.HasPrefix(sel.Sel.Name, "New") || len(call.Args) == 0 {
			return nil, fmt.Errorf("%s is not built by a prometheus.New… call", name)
		}
		m := metric{Var: name}
		kind := strings.TrimSuffix(strings.TrimPrefix(sel.Sel.Name, "New"), "Vec")
		m.Type = strings.ToLower(kind)
		opts, ok := call.Args[0].(*ast.CompositeLit)
		if !ok {
			return nil, fmt.Errorf("%s: the options are not a composite literal", name)
		}
		var namespace, subsystem, short string
		for _, el := range opts.Elts {
			kv, ok := el.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			key := kv.Key.(*ast.Ident).Name
			switch key {
			case "Namespace", "Subsystem", "Name", "Help":
				s, err := str(kv.Value)
				if err != nil {
					return nil, fmt.Errorf("%s.%s: %w", name, key, err)
				}
				switch key {
				case "Namespace":
					namespace = s
				case "Subsystem":
					subsystem = s
				case "Name":
					short = s
				case "Help":
					m.Help = s
				}
			case "Buckets":
				m.Buckets = bucketText(kv.Value)
			}
		}
		m.Name = strings.Join(slices.DeleteFunc([]string{namespace, subsystem, short}, func(s string) bool { return s == "" }), "_")
		if len(call.Args) > 1 {
			if m.Labels, err = labelNames(call.Args[1], vars, str); err != nil {
				return nil, fmt.Errorf("%s labels: %w", name, err)
			}
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b metric) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// tableRows reads the metrics declared as rows of a table, the package
// variables whose value is a slice literal of rows {&Collector, "name",
// labels, "help"}, where Collector is a package variable of a prometheus
// collector type (*prometheus.CounterVec, prometheus.Summary, …) that the
// package builds and registers from its row.
func tableRows(vars, varTypes map[string]ast.Expr, str func(ast.Expr) (string, error)) ([]metric, error) {
	var out []metric
	for _, v := range vars {
		table, ok := v.(*ast.CompositeLit)
		if !ok {
			continue
		}
		if _, ok := table.Type.(*ast.ArrayType); !ok {
			continue
		}
		for _, el := range table.Elts {
			row, ok := el.(*ast.CompositeLit)
			if !ok || len(row.Elts) != 4 {
				continue
			}
			ref, ok := row.Elts[0].(*ast.UnaryExpr)
			if !ok || ref.Op != token.AND {
				continue
			}
			id, ok := ref.X.(*ast.Ident)
			if !ok {
				continue
			}
			typ := varTypes[id.Name]
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			sel, ok := typ.(*ast.SelectorExpr)
			if !ok {
				continue
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "prometheus" {
				continue
			}
			m := metric{Var: id.Name, Type: strings.ToLower(strings.TrimSuffix(sel.Sel.Name, "Vec"))}
			var err error
			if m.Name, err = str(row.Elts[1]); err != nil {
				return nil, fmt.Errorf("%s name: %w", id.Name, err)
			}
			if m.Help, err = str(row.Elts[3]); err != nil {
				return nil, fmt.Errorf("%s help: %w", id.Name, err)
			}
			if m.Labels, err = labelNames(row.Elts[2], vars, str); err != nil {
				return nil, fmt.Errorf("%s labels: %w", id.Name, err)
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// labelNames resolves a []string literal of label names, or a package
// variable holding one shared by several collectors; nil is no labels.
func labelNames(e ast.Expr, vars map[string]ast.Expr, str func(ast.Expr) (string, error)) ([]string, error) {
	if id, ok := e.(*ast.Ident); ok {
		if id.Name == "nil" {
			return nil, nil
		}
		if vars[id.Name] != nil {
			e = vars[id.Name]
		}
	}
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil, fmt.Errorf("the label names are not a []string literal")
	}
	var out []string
	for _, el := range lit.Elts {
		s, err := str(el)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// bucketText describes a Buckets option: prometheus.ExponentialBuckets(
// start, factor, count) and LinearBuckets in words, anything else as
// written.
func bucketText(e ast.Expr) string {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return ""
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || len(call.Args) != 3 {
		return ""
	}
	var args []string
	for _, a := range call.Args {
		lit, ok := a.(*ast.BasicLit)
		if !ok {
			return ""
		}
		args = append(args, lit.Value)
	}
	switch sel.Sel.Name {
	case "ExponentialBuckets":
		return fmt.Sprintf("%s buckets from %s, each ×%s", args[2], args[0], args[1])
	case "LinearBuckets":
		return fmt.Sprintf("%s buckets from %s, each +%s", args[2], args[0], args[1])
	}
	return ""
}
