package v1alpha1

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// vocabularyName matches the names of the constants that make the
// NodeClaim vocabulary: labels, annotations, taint keys and finalizers.
var vocabularyName = regexp.MustCompile(`^(Karpenter)?(Label|Annotation|TaintKey)|Finalizer$`)

// vocabularyExceptions are the files outside this package that may spell
// a value of the vocabulary or define a key under Group, each with why;
// the list may only shrink (a file listed that no longer needs it fails).
var vocabularyExceptions = map[string]string{
	// The pure solver imports no Kubernetes package, this one included;
	// TestNodeClaimVocabularyIsDefinedOnce checks its values agree.
	"pkg/solver/labels.go": "the solver's own names of the well-known labels",
	// The conformance judge imports nothing of the project, so that it
	// judges plans independently of the code that made them.
	"test/conformance/judge.go": "its own names of the well-known labels",
	// The operator's annotation for claims launched short of a minValues,
	// to move here with the operator's next change (not this helper's
	// package to edit).
	"pkg/operator/provisioning/flexible.go": "AnnotationMinValuesRelaxed",
}

// TestNodeClaimVocabularyIsDefinedOnce checks issue 15's rule: each label,
// annotation, taint key and finalizer of NodeClaims and their nodes is
// defined once, in this package. No other non-test Go file of the module
// spells one's value as a string literal (it uses the constant), and none
// defines a constant Group + "/…" of its own.
func TestNodeClaimVocabularyIsDefinedOnce(t *testing.T) {
	vocab := vocabulary(t)
	if len(vocab) < 15 {
		t.Fatalf("read %d vocabulary constants from this package, want every label and annotation: %v", len(vocab), vocab)
	}
	for _, tc := range []struct{ solver, ours string }{
		{solver.LabelNodePool, KarpenterLabelNodePool},
		{solver.LabelCapacityType, LabelCapacityType},
	} {
		if tc.solver != tc.ours {
			t.Errorf("the solver spells %q, this package %q", tc.solver, tc.ours)
		}
	}
	root := filepath.Join("..", "..", "..")
	needed := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == "pkg/apis/v1alpha1") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && rel != "." {
				return filepath.SkipDir // another module (hack/image, hack/karpenterbench)
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		for _, v := range respellings(t, path, vocab) {
			if _, ok := vocabularyExceptions[rel]; ok {
				needed[rel] = true
				continue
			}
			t.Errorf("%s:%s", rel, v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for f := range vocabularyExceptions {
		if !needed[f] {
			t.Errorf("%s no longer spells the vocabulary: drop it from vocabularyExceptions", f)
		}
	}
}

// vocabulary reads this package's vocabulary constants: value → name.
func vocabulary(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range constSpecs(af) {
			for i, name := range spec.Names {
				if i >= len(spec.Values) || !vocabularyName.MatchString(name.Name) {
					continue
				}
				if v, ok := keyValue(spec.Values[i], "Group"); ok {
					out[v] = name.Name
				}
			}
		}
	}
	return out
}

// respellings returns " line N: …" for each place file spells a value of
// vocab, or defines a constant of Group + "/…".
func respellings(t *testing.T, file string, vocab map[string]string) []string {
	t.Helper()
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	at := func(n ast.Node) string {
		return " line " + strings.TrimPrefix(fset.Position(n.Pos()).String(), file+":") + ": "
	}
	ast.Inspect(af, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if name, ok := vocab[constant.StringVal(constant.MakeFromLiteral(lit.Value, lit.Kind, 0))]; ok {
				out = append(out, at(lit)+lit.Value+" is v1alpha1."+name)
			}
		}
		return true
	})
	for _, spec := range constSpecs(af) {
		for i, name := range spec.Names {
			if i >= len(spec.Values) {
				continue
			}
			if v, ok := keyValue(spec.Values[i], "v1alpha1.Group"); ok {
				out = append(out, at(name)+name.Name+" = "+v+" defines a key under v1alpha1.Group outside v1alpha1")
			}
		}
	}
	return out
}

// constSpecs are the constant declarations of a file.
func constSpecs(f *ast.File) []*ast.ValueSpec {
	var out []*ast.ValueSpec
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, s := range g.Specs {
				out = append(out, s.(*ast.ValueSpec))
			}
		}
	}
	return out
}

// keyValue evaluates a string literal, or group + "/literal" where group
// is the expression of this package's Group ("Group", "v1alpha1.Group").
func keyValue(e ast.Expr, group string) (string, bool) {
	switch v := e.(type) {
	case *ast.BasicLit:
		if v.Kind == token.STRING {
			s := constant.StringVal(constant.MakeFromLiteral(v.Value, v.Kind, 0))
			return s, group == "Group" // a literal defines a key only here
		}
	case *ast.BinaryExpr:
		lit, ok := v.Y.(*ast.BasicLit)
		if v.Op != token.ADD || !ok || lit.Kind != token.STRING || exprString(v.X) != group {
			return "", false
		}
		suffix := constant.StringVal(constant.MakeFromLiteral(lit.Value, lit.Kind, 0))
		if len(suffix) < 2 || suffix[0] != '/' {
			return "", false
		}
		return Group + suffix, true
	}
	return "", false
}

func exprString(e ast.Expr) string {
	switch v := e.(type) {
	case *ast.Ident:
		return v.Name
	case *ast.SelectorExpr:
		return exprString(v.X) + "." + v.Sel.Name
	}
	return ""
}
