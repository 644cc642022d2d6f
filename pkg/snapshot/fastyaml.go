package snapshot

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// fastYAMLToJSON converts the plain subset of block YAML that tools write
// for Kubernetes objects (yaml.Marshal's output: block mappings and
// sequences, plain and simply quoted scalars, "{}" and "[]") to JSON,
// giving what sigs.k8s.io/yaml's YAMLToJSONStrict gives once decoded, with
// keys in the same (sorted) order. It reports false for anything else —
// flow collections, block scalars, anchors, tags, comments after content,
// escapes, tabs, non-ASCII bytes, duplicate keys, multi-line plain
// scalars, scalars YAML 1.1 reads as anything but a string, a decimal
// integer, a boolean or null — and the caller converts the document the
// slow way, which also phrases any error. Parsing YAML through
// go.yaml.in/yaml/v2 was most of reading Karpenter's 5,000-pod benchmark.
func fastYAMLToJSON(data []byte) ([]byte, bool) {
	// Sized once: growing by appends took three times the memory on a
	// mapping of a million keys.
	p := yamlParser{lines: make([]blockLine, 0, bytes.Count(data, []byte{'\n'})+1)}
	rest := string(data) // one copy: lines, keys and scalars are slices of it
	for len(rest) > 0 {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		indent, comment := 0, false
		for i := 0; i < len(line); i++ {
			c := line[i]
			if c == '\t' || c < 0x20 || c >= 0x7f {
				return nil, false
			}
			if c == '#' {
				comment = true
			}
		}
		for indent < len(line) && line[indent] == ' ' {
			indent++
		}
		text := strings.TrimRight(line[indent:], " ")
		if text == "" {
			continue
		}
		if comment {
			if text[0] == '#' {
				continue // a comment line
			}
			return nil, false
		}
		if text[0] == '%' || strings.HasPrefix(text, "---") || strings.HasPrefix(text, "...") {
			return nil, false
		}
		p.lines = append(p.lines, blockLine{indent, text})
	}
	if len(p.lines) == 0 || isSeqItem(p.lines[0].text) {
		return nil, false
	}
	// A line makes a node, a sequence entry holding a mapping two; the
	// document one more.
	p.nodes = make([]yamlNode, 0, len(p.lines)+8)
	p.keys, p.vals = make([]string, 0, len(p.lines)), make([]*yamlNode, 0, len(p.lines))
	n, ok := p.mapping(p.lines[0].indent)
	if !ok || p.i != len(p.lines) {
		return nil, false
	}
	return n.appendJSON(make([]byte, 0, len(data)+len(data)/4+64)), true
}

// blockLine is a line with content: its indentation and the content, with
// trailing spaces trimmed.
type blockLine struct {
	indent int
	text   string
}

type yamlParser struct {
	lines []blockLine
	i     int        // the next line
	nodes []yamlNode // where nodes are allocated
	// keys and vals are the entries of the collections being parsed,
	// innermost last; each takes its own when it ends (see own).
	keys []string
	vals []*yamlNode
}

// own gives n the keys and values pushed since key k and value v.
func (p *yamlParser) own(n *yamlNode, k, v int) {
	if len(p.keys) > k {
		n.keys = slices.Clone(p.keys[k:])
		p.keys = p.keys[:k]
	}
	n.vals = slices.Clone(p.vals[v:])
	p.vals = p.vals[:v]
}

// node returns a new node.
func (p *yamlParser) node(n yamlNode) *yamlNode {
	if len(p.nodes) == cap(p.nodes) {
		m := new(yamlNode) // not &n, which would put every n on the heap
		*m = n
		return m
	}
	p.nodes = append(p.nodes, n)
	return &p.nodes[len(p.nodes)-1]
}

// yamlNode is a parsed value: a mapping (keys and vals), a sequence
// (vals) or a scalar: JSON text, or a string to quote.
type yamlNode struct {
	kind byte // 'm', 's', or 0 for a scalar
	keys []string
	vals []*yamlNode
	text string
	str  bool // text is a string, to be quoted
	// sorted is a mapping whose keys are in order already.
	sorted bool
}

var jsonNull = &yamlNode{text: "null"}

// isSeqItem reports whether a line's content is a block sequence entry.
func isSeqItem(text string) bool {
	return text == "-" || strings.HasPrefix(text, "- ")
}

// mapping parses the block mapping whose keys are at indent.
func (p *yamlParser) mapping(indent int) (*yamlNode, bool) {
	n := p.node(yamlNode{kind: 'm'})
	k, v := len(p.keys), len(p.vals)
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if l.indent < indent {
			break
		}
		if l.indent > indent || isSeqItem(l.text) {
			return nil, false
		}
		key, rest, entry := splitEntry(l.text)
		if !entry || !plainKey(key) || (len(p.keys)-k < linearKeys && slices.Contains(p.keys[k:], key)) {
			return nil, false
		}
		p.i++
		val, ok := p.value(indent, rest, true)
		if !ok {
			return nil, false
		}
		p.keys = append(p.keys, key)
		p.vals = append(p.vals, val)
	}
	if len(p.keys)-k <= linearKeys {
		p.own(n, k, v)
		return n, true
	}
	// Many keys: take them sorted, as appendJSON writes them, and decline
	// when two neighbours are equal (a duplicate key).
	keys, vals := p.keys[k:], p.vals[v:]
	order := make([]int32, len(keys))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int { return strings.Compare(keys[x], keys[y]) })
	n.keys, n.vals = make([]string, len(keys)), make([]*yamlNode, len(keys))
	for i, o := range order {
		n.keys[i], n.vals[i] = keys[o], vals[o]
		if i > 0 && n.keys[i] == n.keys[i-1] {
			return nil, false
		}
	}
	n.sorted = true
	p.keys, p.vals = p.keys[:k], p.vals[:v]
	return n, true
}

// linearKeys is how many keys a mapping has before duplicate keys are
// found by sorting rather than by a scan at each key: a scan of the few
// keys objects have is faster and allocates nothing, sorting keeps a
// mapping of a million keys from being quadratic (100k keys took 27 s).
const linearKeys = 16

// sequence parses the block sequence whose entries are at indent.
func (p *yamlParser) sequence(indent int) (*yamlNode, bool) {
	n := p.node(yamlNode{kind: 's'})
	k, v := len(p.keys), len(p.vals)
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if l.indent < indent || (l.indent == indent && !isSeqItem(l.text)) {
			break
		}
		if l.indent > indent {
			return nil, false
		}
		rest := strings.TrimLeft(l.text[1:], " ")
		var val *yamlNode
		ok := true
		if _, _, entry := splitEntry(rest); entry && rest != "" {
			// A mapping starting on the entry's line: its keys are in
			// the column of the first.
			col := indent + len(l.text) - len(rest)
			p.lines[p.i] = blockLine{col, rest}
			val, ok = p.mapping(col)
		} else {
			p.i++
			val, ok = p.value(indent, rest, false)
		}
		if !ok {
			return nil, false
		}
		p.vals = append(p.vals, val)
	}
	p.own(n, k, v)
	return n, true
}

// value parses the value of a mapping entry or sequence entry at indent
// whose line holds rest after the key or dash: a scalar, or, when rest
// is empty, the block below it (for a mapping entry, a sequence may also
// start in the key's column), or null.
func (p *yamlParser) value(indent int, rest string, inMapping bool) (*yamlNode, bool) {
	var next *blockLine
	if p.i < len(p.lines) {
		next = &p.lines[p.i]
	}
	if rest != "" {
		if next != nil && next.indent > indent {
			return nil, false // a multi-line scalar, or not YAML
		}
		s, str, ok := scalarJSON(rest)
		return p.node(yamlNode{text: s, str: str}), ok
	}
	switch {
	case next != nil && next.indent > indent:
		if isSeqItem(next.text) {
			return p.sequence(next.indent)
		}
		return p.mapping(next.indent)
	case inMapping && next != nil && next.indent == indent && isSeqItem(next.text):
		return p.sequence(indent)
	}
	return jsonNull, true
}

// splitEntry splits "key: rest" or "key:"; entry is false when the text
// has no ':' followed by a space or the end.
func splitEntry(text string) (key, rest string, entry bool) {
	i := strings.IndexByte(text, ':')
	if i < 0 || (i+1 < len(text) && text[i+1] != ' ') {
		return "", "", false
	}
	return text[:i], strings.TrimLeft(text[i+1:], " "), true
}

// plainKey reports whether key is a plain scalar that YAML 1.1 reads as
// this very string: letters, digits and ._/- starting with a letter, not
// a boolean or null word, and short enough to be a simple key (YAML's
// scanners refuse an implicit key longer than 1,024 characters: "mapping
// values are not allowed in this context").
func plainKey(key string) bool {
	if key == "" || len(key) > maxSimpleKey || !isLetter(key[0]) {
		return false
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; !isLetter(c) && !isDigit(c) && !strings.ContainsRune("._/-", rune(c)) {
			return false
		}
	}
	_, special := yamlWords[key]
	return !special
}

// maxSimpleKey is the longest key the fast path takes; longer ones are
// left to the YAML decoder (which refuses those over 1,024 characters).
const maxSimpleKey = 1000

// yamlWords are the plain scalars starting with a letter that
// go.yaml.in/yaml/v2 (resolve.go) reads as booleans or null, as JSON.
var yamlWords = map[string]string{
	"y": "true", "Y": "true", "yes": "true", "Yes": "true", "YES": "true",
	"true": "true", "True": "true", "TRUE": "true",
	"on": "true", "On": "true", "ON": "true",
	"n": "false", "N": "false", "no": "false", "No": "false", "NO": "false",
	"false": "false", "False": "false", "FALSE": "false",
	"off": "false", "Off": "false", "OFF": "false",
	"null": "null", "Null": "null", "NULL": "null",
}

// yamlFloat is go.yaml.in/yaml/v2's yamlStyleFloat.
var yamlFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// scalarJSON converts a scalar of the subset to JSON: the JSON text, or
// (str) a string to quote.
func scalarJSON(s string) (text string, str, ok bool) {
	switch s[0] {
	case '{', '[':
		if s == "{}" || s == "[]" {
			return s, false, true
		}
		return "", false, false
	case '"':
		inner := s[1:]
		if len(inner) == 0 || inner[len(inner)-1] != '"' {
			return "", false, false
		}
		inner = inner[:len(inner)-1]
		if strings.ContainsAny(inner, `"\`) {
			return "", false, false
		}
		return inner, true, true
	case '\'':
		inner := s[1:]
		if len(inner) == 0 || inner[len(inner)-1] != '\'' {
			return "", false, false
		}
		inner = inner[:len(inner)-1]
		if strings.ContainsRune(inner, '\'') {
			return "", false, false
		}
		return inner, true, true
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isLetter(c) && !isDigit(c) && !strings.ContainsRune("._/-:@=+, ", rune(c)) {
			return "", false, false
		}
	}
	if strings.Contains(s, ": ") || s[len(s)-1] == ':' {
		return "", false, false
	}
	switch c := s[0]; {
	case isLetter(c):
		if j, ok := yamlWords[s]; ok {
			return j, false, true
		}
		return s, true, true
	case c == '/':
		return s, true, true
	case isDigit(c) || (c == '-' && len(s) > 1 && s[1] != ' '):
		// yaml v2 tries a timestamp, an int (any base), an unsigned int,
		// a float and a binary int, in that order, after dropping every
		// underscore ("0_" is 0); only a decimal int and a string that is
		// none of them, without an underscore, are taken here.
		if strings.ContainsRune(s, '_') {
			return "", false, false
		}
		if len(s) > 4 && isDigit(s[0]) && isDigit(s[1]) && isDigit(s[2]) && isDigit(s[3]) && s[4] == '-' {
			return "", false, false
		}
		if v, err := strconv.ParseInt(s, 0, 64); err == nil {
			if strconv.FormatInt(v, 10) == s {
				return s, false, true
			}
			return "", false, false
		}
		if _, err := strconv.ParseUint(s, 0, 64); err == nil {
			return "", false, false
		}
		if yamlFloat.MatchString(s) {
			return "", false, false
		}
		if b, ok := strings.CutPrefix(s, "0b"); ok {
			_, errInt := strconv.ParseInt(b, 2, 64)
			_, errUint := strconv.ParseUint(b, 2, 64)
			if errInt == nil || errUint == nil {
				return "", false, false
			}
		} else if b, ok := strings.CutPrefix(s, "-0b"); ok {
			if _, err := strconv.ParseInt("-"+b, 2, 64); err == nil {
				return "", false, false
			}
		}
		return s, true, true
	}
	return "", false, false
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// appendJSON appends n as JSON, mapping keys sorted as encoding/json
// sorts map keys.
func (n *yamlNode) appendJSON(b []byte) []byte {
	switch n.kind {
	case 0:
		if n.str {
			return appendJSONString(b, n.text)
		}
		return append(b, n.text...)
	case 'm':
		var buf [linearKeys]int
		order := buf[:0]
		for i := range n.keys {
			order = append(order, i)
		}
		if !n.sorted {
			slices.SortFunc(order, func(x, y int) int { return strings.Compare(n.keys[x], n.keys[y]) })
		}
		b = append(b, '{')
		for j, i := range order {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, n.keys[i])
			b = append(b, ':')
			b = n.vals[i].appendJSON(b)
		}
		return append(b, '}')
	default:
		b = append(b, '[')
		for i, v := range n.vals {
			if i > 0 {
				b = append(b, ',')
			}
			b = v.appendJSON(b)
		}
		return append(b, ']')
	}
}

// appendJSONString appends s, printable ASCII, as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}
