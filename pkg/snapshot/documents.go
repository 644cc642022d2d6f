package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"io"

	kjson "sigs.k8s.io/json"
)

// Document is one non-empty document of a manifest stream, converted to
// JSON.
type Document struct {
	File  string // file name, or "<stdin>"
	Index int    // 1-based among the stream's non-empty documents
	Line  int    // 1-based line where the document's content starts
	JSON  []byte
}

// Where names the document in warnings: "file: document N".
func (d *Document) Where() string { return fmt.Sprintf("%s: document %d", d.File, d.Index) }

// Errorf returns an error about the document, as a *DocumentError.
func (d *Document) Errorf(err error) error {
	return &DocumentError{File: d.File, Document: d.Index, Line: d.Line, Err: err}
}

// ReadDocuments reads every path as Read does (a file, a directory's *.yaml,
// *.yml and *.json files in lexical order, its subdirectories' too when
// recursive, or "-" for stdin) and returns their non-empty documents as
// JSON, without interpreting them. A document that is not valid YAML or JSON
// is a *DocumentError.
func ReadDocuments(paths []string, stdin io.Reader, recursive bool) ([]Document, error) {
	return readDocuments(context.Background(), paths, stdin, recursive, 0)
}

// readDocuments is ReadDocuments reading each input through limit and
// stopping once ctx ends.
func readDocuments(ctx context.Context, paths []string, stdin io.Reader, recursive bool, limit int64) ([]Document, error) {
	var out []Document
	err := readInputs(ctx, paths, stdin, recursive, limit, func(name string, data []byte) error {
		data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
		docs, err := splitJSON(data)
		if err != nil {
			docs = splitYAML(data)
		}
		js, errs := toJSONAll(docs)
		for i, doc := range docs {
			if errs[i] != nil {
				return &DocumentError{File: name, Document: doc.index, Line: doc.line, Err: errs[i]}
			}
			out = append(out, Document{File: name, Index: doc.index, Line: doc.line, JSON: js[i]})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeStrict decodes the JSON j into v as Read does: unknown, duplicate
// and miscased fields are errors, and a bad quantity is named by its path.
func DecodeStrict(j []byte, v any) error {
	var generic any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(j, &generic); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	return decodeStrict(j, v, generic)
}
