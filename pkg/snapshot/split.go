package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/strictjson"
	"sigs.k8s.io/yaml"
)

// document is one document of a stream.
type document struct {
	index int    // 1-based among non-empty documents
	line  int    // line where content starts
	first int    // line of data's first line, to make parser line numbers absolute
	data  []byte // YAML or JSON
	json  bool
}

// splitJSON splits a stream that starts with '{' or '[' into its JSON
// values, which may be separated by "---" lines as kubectl apply accepts. It
// fails if the stream does not look like JSON or the first value is not
// valid JSON, so that the caller can read it as YAML instead; later syntax
// errors become a document that fails to decode.
func splitJSON(data []byte) ([]document, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '[') {
		return nil, errors.New("not JSON")
	}
	var docs []document
	line, counted, start := 1, 0, 0 // line is the line of data[counted]
	for {
		start = skipSeparators(data, start)
		if start == len(data) {
			return docs, nil
		}
		line += bytes.Count(data[counted:start], []byte("\n"))
		counted = start
		dec := json.NewDecoder(bytes.NewReader(data[start:]))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if len(docs) == 0 && !isDepthError(err) {
				return nil, err
			}
			// Hand the rest to toJSON, which reports the syntax error.
			return append(docs, document{index: len(docs) + 1, line: line, first: line, data: data[start:], json: true}), nil
		}
		docs = append(docs, document{index: len(docs) + 1, line: line, first: line, data: raw, json: true})
		start += int(dec.InputOffset())
	}
}

// skipSeparators returns the offset of the first byte at or after i that is
// neither white space nor part of a "---" document separator line.
func skipSeparators(data []byte, i int) int {
	for i < len(data) {
		switch {
		case strings.IndexByte(" \t\r\n", data[i]) >= 0:
			i++
		case bytes.HasPrefix(data[i:], []byte("---")) && (i == 0 || data[i-1] == '\n'):
			rest := data[i+3:]
			end := bytes.IndexByte(rest, '\n')
			if end < 0 {
				end = len(rest)
			}
			if len(bytes.TrimSpace(rest[:end])) > 0 {
				return i // "---" followed by content on its line is not a separator
			}
			i += 3 + end
		default:
			return i
		}
	}
	return i
}

// splitYAML splits a YAML stream at "---" and "..." lines. Only documents
// with content other than comments are returned and numbered.
func splitYAML(data []byte) []document {
	var docs []document
	var cur bytes.Buffer
	first, contentLine := 1, 0
	flush := func() {
		if contentLine > 0 {
			docs = append(docs, document{index: len(docs) + 1, line: contentLine, first: first, data: bytes.Clone(cur.Bytes())})
		}
		cur.Reset()
		contentLine = 0
	}
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i+1], data[i+1:]
		} else {
			data = nil
		}
		text := strings.TrimRight(string(line), "\r\n")
		if text == "---" || text == "..." || strings.HasPrefix(text, "--- ") || strings.HasPrefix(text, "---\t") {
			flush()
			first = lineNo + 1
			rest := strings.TrimSpace(text[3:])
			if text == "..." || rest == "" || rest[0] == '#' {
				continue
			}
			// "--- value": the document starts on this line.
			first = lineNo
			line = []byte("   " + text[3:] + "\n")
		}
		if contentLine == 0 {
			if t := strings.TrimSpace(string(line)); t != "" && t[0] != '#' {
				contentLine = lineNo
			}
		}
		cur.Write(line)
	}
	flush()
	return docs
}

// yamlLine finds the parser's relative line numbers in YAML errors.
var yamlLine = regexp.MustCompile(`\bline (\d+)`)

// toJSON converts a document to JSON, reporting syntax errors with absolute
// line numbers.
func (doc document) toJSON() ([]byte, error) {
	if doc.json {
		if !json.Valid(doc.data) {
			var v any
			err := json.Unmarshal(doc.data, &v)
			var se *json.SyntaxError
			if isDepthError(err) {
				return nil, errTooDeep
			}
			if errors.As(err, &se) {
				line := doc.first + bytes.Count(doc.data[:min(int(se.Offset), len(doc.data))], []byte("\n"))
				return nil, fmt.Errorf("invalid JSON: line %d: %v", line, se)
			}
			return nil, fmt.Errorf("invalid JSON: %v", err)
		}
		return doc.data, nil
	}
	j, err := yaml.YAMLToJSONStrict(doc.data)
	if err != nil && isDepthError(err) {
		return nil, errTooDeep
	}
	if err != nil {
		msg := strings.Replace(strictjson.YAMLError(err), "unmarshal errors: ", "", 1)
		msg = yamlLine.ReplaceAllStringFunc(msg, func(s string) string {
			n, err := strconv.Atoi(s[len("line "):])
			if err != nil {
				return s
			}
			return "line " + strconv.Itoa(doc.first+n-1)
		})
		return nil, fmt.Errorf("invalid YAML: %s", msg)
	}
	return j, nil
}

// convert converts a document to JSON: YAML of the plain subset the fast
// way (fastYAMLToJSON, linear in the document's size), anything else with
// toJSON.
func (doc document) convert() ([]byte, error) {
	if !doc.json {
		if j, ok := fastYAMLToJSON(doc.data); ok {
			return j, nil
		}
	}
	return doc.toJSON()
}

// toJSONAll converts the documents to JSON (doc.convert), in parallel on
// the CPUs there are: parsing YAML is most of reading a large manifest.
// errs[i] is document i's conversion error.
func toJSONAll(docs []document) (js [][]byte, errs []error) {
	js, errs = make([][]byte, len(docs)), make([]error, len(docs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(docs)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(docs); i = int(next.Add(1)) - 1 {
				js[i], errs[i] = docs[i].convert()
			}
		})
	}
	wg.Wait()
	return js, errs
}
