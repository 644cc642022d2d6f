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
	"slices"
	"strings"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/karpenter"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/strictjson"
	corev1 "k8s.io/api/core/v1"
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
