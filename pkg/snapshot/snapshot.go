// Package snapshot builds the solver's input from a description of a
// cluster. Today that description is a set of Kubernetes manifests read from
// files or stdin (kubectl rightsize explain -f): workloads become the pods
// that would be pending, DaemonSets become per-node overhead and Karpenter-
// shaped NodePools and Provisioners become pools. A later source reads the
// same things from a live cluster.
//
// Manifests are not defaulted or validated by an API server, so the reader
// applies the API server's defaulting where it changes the answer (requests
// default to limits) and rejects input it cannot read faithfully: malformed
// YAML, bad quantities. Unknown fields of known kinds are warnings, as
// kubectl's warn field validation (errors with Strict). Kinds it does not
// use (Service, ConfigMap, ...) are skipped with a warning.
package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/karpenter"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/strictjson"
	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Manifests is what Read and Decode found.
type Manifests struct {
	Pods       []solver.Pod
	DaemonSets []solver.DaemonSet
	// Pools come from Karpenter-shaped NodePool and Provisioner documents.
	Pools []solver.Pool
	// Overlays come from Karpenter's NodeOverlay documents, in input order;
	// pkg/plan applies them to the instance types.
	Overlays []Overlay
	// Budgets are each pool's disruption budgets as written (counts,
	// percentages and durations checked, schedules not), by pool name;
	// pkg/disruption reads and counts them (disruption.ReadBudgets).
	Budgets map[string][]karpenter.Budget
	// NodeClasses are the names of the EC2NodeClass documents seen.
	NodeClasses []string
	// Kubelets are the kubelet settings of the pools that have any, by pool
	// name: the pool's own (v1beta1 spec.template.spec.kubelet, v1alpha5
	// spec.kubeletConfiguration), else its node class's spec.kubelet. They
	// change what the pool's nodes can give to pods.
	Kubelets map[string]*v1alpha1.KubeletConfiguration
	// Storage is the ephemeral storage of the pools whose node class sets
	// it (instanceStorePolicy, a root volume), by pool name.
	Storage map[string]NodeStorage
	// Buffers are the CapacityBuffers read (autoscaling.x-k8s.io), each
	// resolved to its chunk's shape and count; pkg/plan plans their room.
	Buffers []Buffer
	// Commitments are the Commitment objects read (Reserved Instances and
	// Savings Plans), checked as the API server checks them; pkg/plan
	// spends them (plan.CommitmentsOf, plan.BillOf).
	Commitments []v1alpha1.Commitment
	// ExtendedResources names the solver's resource indices
	// solver.NumFixedResources and above, in order.
	ExtendedResources []string
	// Warnings are one line each, e.g.
	// "deploy.yaml: document 3: kind Service skipped: not supported".
	Warnings []string
	// Strict makes unknown, duplicate and miscased fields of known kinds
	// errors (--strict); by default each is a warning and the rest of the
	// object is read, as kubectl's warn field validation applies it.
	Strict bool

	object        string       // "file: document N: Kind "name"" of the object being decoded, for field warnings
	skipped       skipped      // objects not planned, summed up at the end of Read
	autoscalers   []autoscaler // HorizontalPodAutoscalers, applied at the end of Read
	documents     int          // non-empty documents seen
	workloads     int          // pod and workload documents seen, even with 0 replicas
	classRefs     []classRef   // nodeClassRefs to check once everything is read
	kubelets      kubeletSources
	volumes       volumeObjects                          // claims, volumes and classes pods' volumes are resolved against
	volumeUsers   []volumeUser                           // pods with volumes, resolved at the end of Read
	seen          map[objectKey]string                   // where each object read was, to refuse a second of the same name
	bufferSources []bufferSource                         // CapacityBuffers, resolved at the end of Read
	podTemplates  map[podTemplateKey]*corev1.PodTemplate // PodTemplates buffers refer to
}

// objectKey identifies an object as the API server stores it: one per
// group, kind, namespace and name.
type objectKey struct{ group, kind, namespace, name string }

// classRef is a pool's reference to a node class, checked by Read.
type classRef struct {
	where, pool, class string
}

// DocumentError is a problem with one document of an input stream.
type DocumentError struct {
	File     string // file name, or "<stdin>"
	Document int    // 1-based index among the stream's non-empty documents
	Line     int    // 1-based line where the document's content starts
	Err      error
}

func (e *DocumentError) Error() string {
	return oneLine(fmt.Sprintf("%s: document %d (line %d): %v", e.File, e.Document, e.Line, e.Err))
}

func (e *DocumentError) Unwrap() error { return e.Err }

// oneLine joins the lines of a message so that every error is one line.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	var parts []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

const stdinName = "<stdin>"

// readInputs calls read with the name and contents of every input: each
// file of each path (a file, a directory's *.yaml, *.yml and *.json files in
// lexical order, its subdirectories' too when recursive), or stdin for "-".
// Each input is read through limit (DefaultMaxInputSize when 0) and stops
// when ctx ends.
func readInputs(ctx context.Context, paths []string, stdin io.Reader, recursive bool, limit int64, read func(name string, data []byte) error) error {
	if len(paths) == 0 {
		return errors.New("no input files")
	}
	for _, p := range paths {
		files, err := expand(p, recursive)
		if err != nil {
			return err
		}
		for _, f := range files {
			var data []byte
			name := f
			if f == "-" {
				name = stdinName
				if stdin == nil {
					return errors.New("cannot read -: no stdin")
				}
				data, err = ReadAll(ctx, name, stdin, limit)
			} else {
				data, err = ReadFile(ctx, f, limit)
			}
			if err != nil {
				return err
			}
			if err := read(name, data); err != nil {
				return err
			}
		}
	}
	return nil
}

// Read reads every path: a file, a directory (its *.yaml, *.yml and *.json
// files in lexical order; not its subdirectories, as kubectl without -R)
// or "-" for stdin. It fails if the input holds no pod or workload, and
// warns about pools whose nodeClassRef names a node class that is not in
// the input, and about unknown fields. Input.Read takes kubectl's other
// ways to name manifests.
func Read(paths []string, stdin io.Reader) (*Manifests, error) {
	return Input{Filenames: paths}.Read(stdin)
}

// finish checks what the whole input holds and applies what spans
// documents; names are the inputs, for errors.
func (m *Manifests) finish(names []string) (*Manifests, error) {
	if m.workloads == 0 {
		shown := make([]string, len(names))
		for i, p := range names {
			shown[i] = p
			if p == "-" {
				shown[i] = stdinName
			}
		}
		msg := "no pods or workloads found in " + strings.Join(shown, ", ")
		if m.documents == 0 {
			msg += ": the input is empty"
		} else if len(m.skipped.kinds) > 0 {
			msg += "; skipped: " + m.skipped.list()
		}
		return nil, errors.New(msg)
	}
	classes := make(map[string]bool, len(m.NodeClasses))
	for _, c := range m.NodeClasses {
		classes[c] = true
	}
	for _, r := range m.classRefs {
		if !classes[r.class] {
			m.warnf(r.where, "%s: nodeClassRef %q is not in the input; it must exist in the cluster", r.pool, r.class)
		}
	}
	m.classRefs = nil
	if err := m.resolveVolumes(); err != nil {
		return nil, err
	}
	m.resolveKubelets()
	m.applyAutoscalers()
	if err := m.resolveBuffers(); err != nil {
		return nil, err
	}
	m.Warnings = append(m.Warnings, m.skipped.summary()...)
	return m, nil
}

// expand turns a path into the files to read.
func expand(p string, recursive bool) ([]string, error) {
	if p == "-" {
		return []string{p}, nil
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != p && !recursive {
			return fs.SkipDir
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			if d.IsDir() {
				return nil
			}
			// A FIFO would block the read forever and a device (or a
			// symlink to /dev/zero) never end: only regular files are
			// read from a directory; named on their own they are read
			// through the size limit.
			info, err := os.Stat(path)
			if err != nil {
				return fmt.Errorf("%s: %w", path, unwrapPath(err))
			}
			if info.IsDir() {
				return nil // a symlink to a directory
			}
			if !info.Mode().IsRegular() {
				return fmt.Errorf("%s: %s, not a regular file: only regular files are read from a directory (name it with -f on its own to read it)", path, fileKind(info.Mode()))
			}
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		if !recursive {
			return nil, fmt.Errorf("%s: no *.yaml, *.yml or *.json files (-R reads its subdirectories too)", p)
		}
		return nil, fmt.Errorf("%s: no *.yaml, *.yml or *.json files", p)
	}
	return files, nil
}

// document is one document of a stream.
type document struct {
	index int    // 1-based among non-empty documents
	line  int    // line where content starts
	first int    // line of data's first line, to make parser line numbers absolute
	data  []byte // YAML or JSON
	json  bool
}

// Decode parses one stream of multi-document YAML or JSON (concatenated
// objects) and adds what it finds to m. name is used in errors and warnings.
// Empty input and empty documents are not errors; Read checks that something
// was found and that the node classes pools refer to are in the input.
func Decode(name string, data []byte, m *Manifests) error {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	docs, err := splitJSON(data)
	if err != nil {
		docs = splitYAML(data)
	}
	m.documents += len(docs)
	pre := predecodeAll(docs)
	defer pre.stop()
	for i, doc := range docs {
		where := fmt.Sprintf("%s: document %d", name, doc.index)
		if err := m.decodeDocument(where, doc, pre.next(i)); err != nil {
			return &DocumentError{File: name, Document: doc.index, Line: doc.line, Err: err}
		}
	}
	return nil
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

// predecoded is a document converted to JSON (or the conversion's
// error) and decoded as far as it can be without m: into an any and, for
// a Pod, into its type. Decode does this for all documents at once, in
// parallel (see predecodeAll), then adds them to m in order.
type predecoded struct {
	json []byte
	err  error
	// generic is json decoded into an any, or genericErr.
	generic    any
	genericErr error
	// pod, when the document is a v1 Pod, is it decoded as
	// strictjson.DecodeFields does: podFields are the strict-field
	// problems, podErr the error that stopped decoding.
	pod       *corev1.Pod
	podFields []error
	podErr    error
	// cleanPod is set when pod decoded with neither an error nor a
	// strict-field problem as kind Pod, apiVersion v1: then generic is
	// not decoded (nothing reads it for such a pod).
	cleanPod bool
}

// predecode converts and decodes one document (see predecoded).
func predecode(doc document) predecoded {
	var d predecoded
	var fast bool
	if !doc.json {
		d.json, fast = fastYAMLToJSON(doc.data)
	}
	if !fast {
		if d.json, d.err = doc.toJSON(); d.err != nil {
			return d
		}
	}
	// Most documents of a large input are Pods: one that decodes into its
	// type without a problem needs no generic decoding (cleanPod), a
	// fifth of reading DLRM's 23,871 pods. The hint only picks the
	// documents to try; the decoded kind and apiVersion decide.
	var pod *corev1.Pod
	var podFields []error
	var podErr error
	if bytes.Contains(d.json, []byte(`"kind":"Pod"`)) {
		pod = &corev1.Pod{}
		podFields, podErr = strictjson.DecodeFields(d.json, pod)
		if podErr == nil && len(podFields) == 0 && pod.Kind == "Pod" && pod.APIVersion == "v1" {
			d.pod, d.cleanPod = pod, true
			return d
		}
	}
	d.generic, d.genericErr = decodeGeneric(d.json)
	obj, ok := d.generic.(map[string]any)
	if d.genericErr != nil || !ok || obj["kind"] != "Pod" || obj["apiVersion"] != "v1" {
		return d
	}
	if pod == nil {
		pod = &corev1.Pod{}
		podFields, podErr = strictjson.DecodeFields(d.json, pod)
	}
	d.pod, d.podFields, d.podErr = pod, podFields, podErr
	return d
}

// predecodeWindow is how many documents predecodeAll decodes ahead of
// the one being added to the manifests: enough to keep the CPUs busy,
// few enough that the decoded documents do not pile up in memory.
const predecodeWindow = 64

// predecodeAll starts predecoding the documents in parallel on the CPUs
// there are (parsing YAML and decoding JSON is most of reading a large
// manifest), a window ahead of the reader, who takes them in order with
// next and ends with stop.
func predecodeAll(docs []document) *predecoding {
	p := &predecoding{
		docs:  docs,
		out:   make([]predecoded, len(docs)),
		ready: make([]chan struct{}, len(docs)),
		slots: make(chan struct{}, predecodeWindow),
		done:  make(chan struct{}),
	}
	for i := range p.ready {
		p.ready[i] = make(chan struct{})
	}
	for range min(runtime.GOMAXPROCS(0), len(docs)) {
		p.wg.Go(p.work)
	}
	return p
}

// predecoding is predecodeAll under way.
type predecoding struct {
	docs  []document
	out   []predecoded
	ready []chan struct{} // closed once out[i] is set
	// slots holds a token for each document taken and not yet read:
	// documents are taken in order, so the next one to read always holds
	// one.
	slots chan struct{}
	taken atomic.Int64
	done  chan struct{}
	wg    sync.WaitGroup
}

func (p *predecoding) work() {
	for {
		select {
		case p.slots <- struct{}{}:
		case <-p.done:
			return
		}
		i := int(p.taken.Add(1)) - 1
		if i >= len(p.docs) {
			return
		}
		p.out[i] = predecode(p.docs[i])
		close(p.ready[i])
	}
}

// next waits for document i, hands it over and forgets it. The reader
// takes the documents in order.
func (p *predecoding) next(i int) *predecoded {
	<-p.ready[i]
	d := p.out[i]
	p.out[i] = predecoded{}
	<-p.slots
	return &d
}

// stop ends the work, done or not, and waits for it.
func (p *predecoding) stop() {
	close(p.done)
	p.wg.Wait()
}

// decodeGeneric decodes JSON into an any as decodeObject reads it.
func decodeGeneric(j []byte) (any, error) {
	var generic any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(j, &generic); err != nil {
		if isDepthError(err) {
			return nil, errTooDeep
		}
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	return generic, nil
}

// maxDepth is how deep the JSON and YAML decoders (encoding/json,
// go.yaml.in/yaml) let a document nest, as the API server's do.
const maxDepth = 10000

// errTooDeep is a document nested deeper than maxDepth, named the same
// whether it was written as YAML or JSON.
var errTooDeep = fmt.Errorf("nested deeper than %d levels, the most the Kubernetes decoders accept", maxDepth)

// isDepthError reports whether err is a decoder's nesting limit.
func isDepthError(err error) bool {
	return err != nil && strings.Contains(err.Error(), "exceeded max depth")
}

// decodeDocument decodes one document, given as predecoded, and adds what
// it holds to m. A document that fails and holds "{{" is taken for a Helm
// template.
func (m *Manifests) decodeDocument(where string, doc document, pre *predecoded) error {
	err := pre.err
	if err == nil {
		err = m.decodeObject(where, pre.json, false, pre)
	}
	if err != nil && bytes.Contains(doc.data, []byte("{{")) {
		return fmt.Errorf("%w; this looks like a Helm template: render it first: helm template RELEASE CHART | kubectl rightsize explain -f -", err)
	}
	return err
}

// decodeObject dispatches one JSON object (a document or, when inList, a
// List item) on its kind and apiVersion. pre, when not nil, is j
// predecoded.
func (m *Manifests) decodeObject(where string, j []byte, inList bool, pre *predecoded) error {
	if pre != nil && pre.cleanPod {
		o := &pre.pod.ObjectMeta
		label := fmt.Sprintf("%s %q", "Pod", o.Name)
		if o.Name == "" {
			label = "Pod"
		}
		return m.decodeNamed(where, "Pod", "v1", o.Name, o.Namespace, label, j, nil, pre)
	}
	var generic any
	var err error
	if pre != nil {
		generic, err = pre.generic, pre.genericErr
	} else {
		generic, err = decodeGeneric(j)
	}
	if err != nil {
		return err
	}
	if generic == nil {
		return nil // an empty document such as "~"
	}
	obj, ok := generic.(map[string]any)
	if !ok {
		return fmt.Errorf("expected a Kubernetes object, got %s", describe(generic))
	}
	apiVersion, err := stringField(obj, "apiVersion")
	if err != nil {
		return err
	}
	kind, err := stringField(obj, "kind")
	if err != nil {
		return err
	}
	name, namespace := "", ""
	if md, ok := obj["metadata"].(map[string]any); ok {
		name, _ = md["name"].(string)
		namespace, _ = md["namespace"].(string)
	}
	label := kind
	if name != "" {
		label = fmt.Sprintf("%s %q", kind, name)
	}
	if kind == "" {
		return errors.New("kind is missing")
	}
	if apiVersion == "" {
		return fmt.Errorf("%s: apiVersion is missing", label)
	}
	if isList(kind, obj) {
		if inList {
			return fmt.Errorf("a %s in a List is not supported", kind)
		}
		// kubectl reads any object with items whose kind ends in List (a
		// RoleList of rbac.authorization.k8s.io/v1, as kube-prometheus
		// ships) as a list of its items, whatever its apiVersion.
		return m.decodeList(where, label, j, generic)
	}
	want, known := kinds[kind]
	if !known {
		m.skip(where, kind, label)
		return nil
	}
	if !slices.Contains(want, apiVersion) {
		m.warnf(where, "%s skipped: apiVersion %s is not supported (want %s)", label, apiVersion, strings.Join(want, " or "))
		return nil
	}
	return m.decodeNamed(where, kind, apiVersion, name, namespace, label, j, generic, pre)
}

// decodeNamed decodes an object of a known kind and apiVersion, named
// name in namespace (either may be empty), once per kind, namespace and
// name. generic is j decoded into an any; nil for a clean Pod (pre).
func (m *Manifests) decodeNamed(where, kind, apiVersion, name, namespace, label string, j []byte, generic any, pre *predecoded) error {
	if name != "" {
		// The API server keeps one object per kind, namespace and name:
		// a second would replace the first (apply) or be refused
		// (create), never be added, so planning both would be wrong.
		group := "" // the core group of apiVersion v1
		if g, _, ok := strings.Cut(apiVersion, "/"); ok {
			group = g
		}
		key := objectKey{group, kind, namespace, name}
		if prev, ok := m.seen[key]; ok {
			shown := name
			if namespace != "" {
				shown = namespace + "/" + name
			}
			return fmt.Errorf("%s %s is also in %s; the API server keeps one object per kind, namespace and name: rename or remove one", kind, shown, prev)
		}
		if m.seen == nil {
			m.seen = map[objectKey]string{}
		}
		m.seen[key] = where
	}
	outer := m.object
	m.object = where + ": " + label
	defer func() { m.object = outer }()
	if err := m.decodeKind(where, kind, apiVersion, j, generic, pre); err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	return nil
}

// isList reports whether an object of kind is a list of objects, as
// kubectl's resource builder sees it: kind List, or a kind ending in List
// with an items array (apimachinery's meta.IsListType looks for the same
// Items field).
func isList(kind string, obj map[string]any) bool {
	if kind == "List" {
		return true
	}
	_, items := obj["items"].([]any)
	return items && strings.HasSuffix(kind, "List")
}

// decodeList reads each item of a list as a document of its own.
func (m *Manifests) decodeList(where, label string, j []byte, generic any) error {
	var list struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   json.RawMessage   `json:"metadata,omitempty"`
		Items      []json.RawMessage `json:"items"`
	}
	outer := m.object
	m.object = where + ": " + label
	err := m.decodeFields(j, &list, generic)
	m.object = outer
	if err != nil {
		return err
	}
	for i, item := range list.Items {
		if err := m.decodeObject(fmt.Sprintf("%s: items[%d]", where, i), item, true, nil); err != nil {
			return fmt.Errorf("items[%d]: %w", i, err)
		}
	}
	return nil
}

// kinds maps each kind read to the apiVersions it is read from.
var kinds = map[string][]string{
	"Pod":                     {"v1"},
	"ReplicationController":   {"v1"},
	"Deployment":              {"apps/v1"},
	"StatefulSet":             {"apps/v1"},
	"ReplicaSet":              {"apps/v1"},
	"DaemonSet":               {"apps/v1"},
	"Job":                     {"batch/v1"},
	"CronJob":                 {"batch/v1"},
	"Provisioner":             {"karpenter.sh/v1alpha5"},
	"NodePool":                {"karpenter.sh/v1", "karpenter.sh/v1beta1", rightsizeAPIVersion},
	"EC2NodeClass":            {"karpenter.k8s.aws/v1", "karpenter.k8s.aws/v1beta1", "karpenter.sh/v1alpha5", rightsizeAPIVersion},
	"SimNodeClass":            {rightsizeAPIVersion},
	"Commitment":              {rightsizeAPIVersion},
	"NodeOverlay":             {"karpenter.sh/v1alpha1"},
	"HorizontalPodAutoscaler": {"autoscaling/v2", "autoscaling/v1"},
	"PersistentVolumeClaim":   {"v1"},
	"PersistentVolume":        {"v1"},
	"StorageClass":            {"storage.k8s.io/v1"},
	"PodTemplate":             {"v1"},
	"CapacityBuffer":          {"autoscaling.x-k8s.io/v1beta1", "autoscaling.x-k8s.io/v1alpha1"},
}

// rightsizeAPIVersion is this project's own API: its NodePools and node
// classes plan offline as they do live.
var rightsizeAPIVersion = v1alpha1.SchemeGroupVersion.String()

func (m *Manifests) decodeKind(where, kind, apiVersion string, j []byte, generic any, pre *predecoded) error {
	switch kind {
	case "NodePool", "EC2NodeClass", "SimNodeClass":
		if apiVersion == rightsizeAPIVersion {
			return m.decodeRightsize(where, kind, j, generic)
		}
		if kind == "EC2NodeClass" {
			return m.decodeNodeClass(where, apiVersion, j, generic)
		}
		return m.decodePool(where, kind, j, generic)
	case "Provisioner":
		return m.decodePool(where, kind, j, generic)
	case "NodeOverlay":
		return m.decodeOverlay(where, apiVersion, j, generic)
	case "HorizontalPodAutoscaler":
		return m.decodeAutoscaler(where, j, generic)
	case "CapacityBuffer":
		return m.decodeCapacityBuffer(where, j, generic)
	case "Commitment":
		return m.decodeCommitment(j, generic)
	case "PodTemplate":
		return m.decodePodTemplate(j, generic)
	case "PersistentVolumeClaim", "PersistentVolume", "StorageClass":
		return m.decodeVolumeObject(kind, j, generic)
	default:
		return m.decodeWorkload(where, kind, j, generic, pre)
	}
}

// decodeStrict decodes j into v, failing on unknown and duplicate fields,
// case mismatches and bad quantities. generic is j decoded into an any, used
// to say where a bad quantity is.
func decodeStrict(j []byte, v any, generic any) error {
	return explainValueError(strictjson.Decode(j, v), generic)
}

// explainValueError names the path of a bad quantity when err is a
// *strictjson.ValueError caused by one.
func explainValueError(err error, generic any) error {
	var ve *strictjson.ValueError
	if errors.As(err, &ve) {
		if path, value, ok := findBadQuantity(generic, ""); ok {
			return fmt.Errorf("%s: invalid quantity %s", path, value)
		}
		return ve.Err
	}
	return err
}

// warnf adds a warning.
func (m *Manifests) warnf(where, format string, args ...any) {
	m.Warnings = append(m.Warnings, oneLine(where+": "+fmt.Sprintf(format, args...)))
}

func stringField(obj map[string]any, key string) (string, error) {
	v, ok := obj[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s: expected a string, got %s", key, describe(v))
	}
	return s, nil
}

// describe names the JSON type of v for errors.
func describe(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	default:
		return "a number"
	}
}
