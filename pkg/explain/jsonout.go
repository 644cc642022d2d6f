package explain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// writeJSON writes r as cli-runtime's JSON printer does (encoding/json's
// MarshalIndent with four spaces, then a newline), byte for byte, but
// streams the proposed nodes and the unplaced pods (nearly all of a large
// plan: 33 MB for DLRM's 23,871 pods) straight to w instead of building
// the whole document, then indenting it into a second copy. The rest of
// r is small and marshalled by encoding/json, so that a field added to
// Result prints as it always would; a field added to ResultNode or
// ResultUnscheduled must be added here (TestWriteJSONFields says so).
func writeJSON(w io.Writer, r *Result) error {
	for i := range r.Nodes {
		if f := r.Nodes[i].PricePerHour; math.IsNaN(f) || math.IsInf(f, 0) {
			// encoding/json refuses it before printing anything: so does this
			return &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 64)}
		}
	}
	shadow := *r
	type splice struct {
		key   string
		write func(*jsonWriter)
	}
	var splices []splice
	// A nil slice prints null, as MarshalIndent prints it: left to it.
	if r.Nodes != nil {
		shadow.Nodes = []ResultNode{}
		splices = append(splices, splice{"nodes", func(j *jsonWriter) { j.nodes(r.Nodes) }})
	}
	if r.Unschedulable != nil {
		shadow.Unschedulable = []ResultUnscheduled{}
		splices = append(splices, splice{"unschedulable", func(j *jsonWriter) { j.unscheduled(r.Unschedulable) }})
	}
	rest, err := json.MarshalIndent(&shadow, "", "    ")
	if err != nil {
		return err
	}
	j := &jsonWriter{w: w, b: make([]byte, 0, jsonFlushAt+4096)}
	for _, s := range splices {
		// A top-level key is the only place a newline and four spaces
		// can precede `"nodes": []`: a string's newlines are escaped.
		mark := []byte("\n    \"" + s.key + "\": []")
		at := bytes.Index(rest, mark)
		if at < 0 {
			return fmt.Errorf("writing JSON: no top-level %q", s.key)
		}
		j.raw(rest[:at+len(mark)-len("[]")])
		s.write(j)
		rest = rest[at+len(mark):]
	}
	j.raw(rest)
	j.b = append(j.b, '\n')
	return j.flush()
}

// jsonFlushAt is how much jsonWriter buffers before writing.
const jsonFlushAt = 256 << 10

// jsonWriter appends indented JSON as encoding/json writes it (HTML
// characters escaped, floats as its float64 encoder formats them) and
// writes it out in chunks.
type jsonWriter struct {
	w   io.Writer
	b   []byte
	err error
}

func (j *jsonWriter) flush() error {
	if j.err == nil && len(j.b) > 0 {
		_, j.err = j.w.Write(j.b)
	}
	j.b = j.b[:0]
	return j.err
}

func (j *jsonWriter) raw(p []byte) {
	j.b = append(j.b, p...)
	if len(j.b) >= jsonFlushAt {
		_ = j.flush()
	}
}

// line starts a new line indented depth levels.
func (j *jsonWriter) line(depth int) {
	j.b = append(j.b, '\n')
	for range depth {
		j.b = append(j.b, "    "...)
	}
}

// key starts member name of an object at depth, after first one or not.
func (j *jsonWriter) key(depth int, name string, first bool) {
	if !first {
		j.b = append(j.b, ',')
	}
	j.line(depth)
	j.b = append(j.b, '"')
	j.b = append(j.b, name...)
	j.b = append(j.b, `": `...)
}

func (j *jsonWriter) str(s string) { j.b = appendJSONString(j.b, s) }

// float writes f, finite (writeJSON checks).
func (j *jsonWriter) float(f float64) { j.b = appendJSONFloat(j.b, f) }

// strings writes a []string whose elements are at depth+1.
func (j *jsonWriter) strings(depth int, ss []string) {
	switch {
	case ss == nil:
		j.b = append(j.b, "null"...)
		return
	case len(ss) == 0:
		j.b = append(j.b, "[]"...)
		return
	}
	j.b = append(j.b, '[')
	for i, s := range ss {
		if i > 0 {
			j.b = append(j.b, ',')
		}
		j.line(depth + 1)
		j.str(s)
	}
	j.line(depth)
	j.b = append(j.b, ']')
}

// stringMap writes a map[string]string by sorted key, its members at
// depth+1.
func (j *jsonWriter) stringMap(depth int, m map[string]string) {
	switch {
	case m == nil:
		j.b = append(j.b, "null"...)
		return
	case len(m) == 0:
		j.b = append(j.b, "{}"...)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	j.b = append(j.b, '{')
	for i, k := range keys {
		if i > 0 {
			j.b = append(j.b, ',')
		}
		j.line(depth + 1)
		j.str(k)
		j.b = append(j.b, ": "...)
		j.str(m[k])
	}
	j.line(depth)
	j.b = append(j.b, '}')
}

// value writes what encoding/json makes of v, indented from depth.
func (j *jsonWriter) value(depth int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		if j.err == nil {
			j.err = err
		}
		return
	}
	var buf bytes.Buffer
	prefix := make([]byte, 4*depth)
	for i := range prefix {
		prefix[i] = ' '
	}
	_ = json.Indent(&buf, data, string(prefix), "    ") // valid: json.Marshal wrote it
	j.b = append(j.b, buf.Bytes()...)
}

// nodes writes the proposed nodes, the value of the top-level "nodes".
func (j *jsonWriter) nodes(nodes []ResultNode) {
	if len(nodes) == 0 {
		j.b = append(j.b, "[]"...)
		return
	}
	j.b = append(j.b, '[')
	for i := range nodes {
		if i > 0 {
			j.b = append(j.b, ',')
		}
		j.line(2)
		j.node(&nodes[i])
		if len(j.b) >= jsonFlushAt {
			_ = j.flush()
		}
	}
	j.line(1)
	j.b = append(j.b, ']')
}

// node writes one ResultNode at depth 2, its fields in their order and
// with their tags.
func (j *jsonWriter) node(n *ResultNode) {
	const d = 3
	j.b = append(j.b, '{')
	j.key(d, "name", true)
	j.str(n.Name)
	j.key(d, "instanceType", false)
	j.str(n.InstanceType)
	j.key(d, "capacityType", false)
	j.str(n.CapacityType)
	j.key(d, "zone", false)
	j.str(n.Zone)
	j.key(d, "nodePool", false)
	j.str(n.NodePool)
	j.key(d, "pricePerHour", false)
	j.float(n.PricePerHour)
	j.key(d, "pods", false)
	j.strings(d, n.Pods)
	j.key(d, "allocatable", false)
	j.stringMap(d, n.Allocatable)
	j.key(d, "requested", false)
	j.stringMap(d, n.Requested)
	if len(n.Labels) > 0 {
		j.key(d, "labels", false)
		j.stringMap(d, n.Labels)
	}
	if len(n.Taints) > 0 {
		j.key(d, "taints", false)
		j.value(d, n.Taints)
	}
	j.key(d, "reason", false)
	j.str(n.Reason)
	if len(n.InstanceTypeOptions) > 0 {
		j.key(d, "instanceTypeOptions", false)
		j.strings(d, n.InstanceTypeOptions)
	}
	j.line(2)
	j.b = append(j.b, '}')
}

// unscheduled writes the unplaced pods, the value of the top-level
// "unschedulable".
func (j *jsonWriter) unscheduled(us []ResultUnscheduled) {
	if len(us) == 0 {
		j.b = append(j.b, "[]"...)
		return
	}
	const d = 3
	j.b = append(j.b, '[')
	for i := range us {
		u := &us[i]
		if i > 0 {
			j.b = append(j.b, ',')
		}
		j.line(2)
		j.b = append(j.b, '{')
		j.key(d, "pod", true)
		j.str(u.Pod)
		if u.Owner != "" {
			j.key(d, "owner", false)
			j.str(u.Owner)
		}
		j.key(d, "reason", false)
		j.str(u.Reason)
		j.line(2)
		j.b = append(j.b, '}')
		if len(j.b) >= jsonFlushAt {
			_ = j.flush()
		}
	}
	j.line(1)
	j.b = append(j.b, ']')
}

// appendJSONFloat formats f as encoding/json's float64 encoder does.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as encoding/json does with HTML escaping (its
// default): <, > and & as \u003c…, control characters escaped, invalid
// UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
