package importer

import (
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
)

// PrintYAML writes objs as a multi-document YAML stream, without the empty
// fields (creationTimestamp: null, status: {}) a typed object would print.
func PrintYAML(w io.Writer, objs []runtime.Object) error {
	p := &printers.YAMLPrinter{}
	for _, obj := range objs {
		u, err := clean(obj)
		if err != nil {
			return err
		}
		if err := p.PrintObj(u, w); err != nil {
			return err
		}
	}
	return nil
}

// PrintJSON writes objs as one JSON object, or as a v1 List when there are
// several, as kubectl get -o json does.
func PrintJSON(w io.Writer, objs []runtime.Object) error {
	items := make([]unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		u, err := clean(obj)
		if err != nil {
			return err
		}
		items = append(items, *u)
	}
	var out runtime.Object
	if len(items) == 1 {
		out = &items[0]
	} else {
		list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{}}}
		list.Items = items
		out = list
	}
	return (&printers.JSONPrinter{}).PrintObj(out, w)
}

// clean converts obj to an Unstructured without empty maps, empty lists and
// nulls.
func clean(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	prune(m)
	return &unstructured.Unstructured{Object: m}, nil
}

// prune removes nulls, empty maps and empty lists from m, recursively.
func prune(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			prune(v)
			if len(v) == 0 {
				delete(m, k)
			}
		case []any:
			for _, e := range v {
				if em, ok := e.(map[string]any); ok {
					prune(em)
				}
			}
			if len(v) == 0 {
				delete(m, k)
			}
		}
	}
}
