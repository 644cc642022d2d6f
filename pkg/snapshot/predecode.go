package snapshot

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/strictjson"
	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"
)

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
