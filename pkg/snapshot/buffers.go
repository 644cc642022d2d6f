package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cbv1beta1 "github.com/rightsize-dev/kubectl-rightsize/pkg/apis/capacitybuffer/v1beta1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// BufferOwnerPrefix starts the Owner of every pod made for a buffer's room:
// "CapacityBuffer/name". Such a pod is never created; pkg/plan adds it to
// the problem as pending (see plan.IsBuffer).
const BufferOwnerPrefix = "CapacityBuffer/"

// Buffer is a CapacityBuffer read and resolved: how many chunks of room
// it asks for and the shape of one.
type Buffer struct {
	Namespace, Name string
	// Replicas is the number of chunks: spec.replicas, or spec.percentage
	// of the scalable's replicas rounded up (the larger when both are
	// set), capped by spec.limits; 0 when the buffer could not be read
	// (Reason says why).
	Replicas int32
	// Pod is one chunk's shape, named and owned by no one; Pods names them.
	Pod solver.Pod
	// PodTemplate is the PodTemplate the shape came from ("" for a
	// scalableRef), and TemplateGeneration its generation.
	PodTemplate        string
	TemplateGeneration int64
	// Reason, when set, says in one sentence why no room is kept.
	Reason string
}

// Pods returns the buffer's virtual pods: Replicas copies of Pod named
// "<buffer>-buffer-<i>" and owned by "CapacityBuffer/<buffer>".
func (b *Buffer) Pods() []solver.Pod {
	out := make([]solver.Pod, b.Replicas)
	for i := range out {
		p := copyPod(b.Pod)
		p.Namespace, p.Name, p.Owner = b.Namespace, b.Name+"-buffer-"+strconv.Itoa(i), BufferOwnerPrefix+b.Name
		p.Controller = true
		out[i] = p
	}
	return out
}

// bufferSource is a buffer as decoded, resolved once every document is read.
type bufferSource struct {
	where string
	obj   cbv1beta1.CapacityBuffer
}

// podTemplateKey names a PodTemplate by namespace and name.
type podTemplateKey struct{ namespace, name string }

// decodeCapacityBuffer reads a CapacityBuffer (v1beta1, or v1alpha1 whose
// fields read here are the same); Read resolves it at the end.
func (m *Manifests) decodeCapacityBuffer(where string, j []byte, generic any) error {
	var b bufferSource
	b.where = where
	if err := m.decodeFields(j, &b.obj, generic); err != nil {
		return err
	}
	if b.obj.Name == "" {
		return fmt.Errorf("metadata.name is required")
	}
	if b.obj.Namespace == "" {
		b.obj.Namespace = metav1.NamespaceDefault
	}
	s := &b.obj.Spec
	if (s.PodTemplateRef == nil) == (s.ScalableRef == nil) {
		return fmt.Errorf("spec: set exactly one of podTemplateRef and scalableRef")
	}
	if s.PodTemplateRef != nil && s.Replicas == nil && s.Limits == nil {
		return fmt.Errorf("spec: a buffer with podTemplateRef needs replicas or limits")
	}
	for path, v := range map[string]*int32{"spec.replicas": s.Replicas, "spec.percentage": s.Percentage} {
		if v != nil && *v < 0 {
			return fmt.Errorf("%s: %d must not be negative", path, *v)
		}
	}
	m.workloads++
	m.bufferSources = append(m.bufferSources, b)
	return nil
}

// decodePodTemplate reads a v1 PodTemplate, which buffers refer to.
func (m *Manifests) decodePodTemplate(j []byte, generic any) error {
	var t corev1.PodTemplate
	if err := m.decodeFields(j, &t, generic); err != nil {
		return err
	}
	if t.Name == "" {
		return fmt.Errorf("metadata.name is required")
	}
	if t.Namespace == "" {
		t.Namespace = metav1.NamespaceDefault
	}
	if m.podTemplates == nil {
		m.podTemplates = map[podTemplateKey]*corev1.PodTemplate{}
	}
	m.podTemplates[podTemplateKey{t.Namespace, t.Name}] = &t
	return nil
}

// resolveBuffers turns the buffers read into Buffers, once every
// PodTemplate and workload is read.
func (m *Manifests) resolveBuffers() error {
	for i := range m.bufferSources {
		src := &m.bufferSources[i]
		b, err := m.resolveBuffer(src.where, &src.obj)
		if err != nil {
			return fmt.Errorf("%s: CapacityBuffer %q: %w", src.where, src.obj.Name, err)
		}
		if b.Reason != "" {
			m.warnf(src.where, "CapacityBuffer %q: %s", src.obj.Name, b.Reason)
		}
		if n := len(m.Pods) + m.bufferPods() + int(b.Replicas); n > MaxPods {
			return fmt.Errorf("%s: CapacityBuffer %q: %d pods would make %d in all, more than the %d supported", src.where, b.Name, b.Replicas, n, MaxPods)
		}
		m.Buffers = append(m.Buffers, b)
	}
	m.bufferSources = nil
	return nil
}

// bufferPods counts the virtual pods of the buffers resolved so far.
func (m *Manifests) bufferPods() int {
	n := 0
	for i := range m.Buffers {
		n += int(m.Buffers[i].Replicas)
	}
	return n
}

// resolveBuffer finds a buffer's shape and counts its chunks. A buffer
// whose template or workload is missing, or whose strategy is not
// active-capacity, keeps no room and says why in Reason.
func (m *Manifests) resolveBuffer(where string, o *cbv1beta1.CapacityBuffer) (Buffer, error) {
	b := Buffer{Namespace: o.Namespace, Name: o.Name}
	s := &o.Spec
	if s.ProvisioningStrategy != nil && *s.ProvisioningStrategy != cbv1beta1.ActiveCapacity {
		b.Reason = fmt.Sprintf("provisioningStrategy %q is not planned (only %s is)", *s.ProvisioningStrategy, cbv1beta1.ActiveCapacity)
		return b, nil
	}
	scalable := int32(-1) // the scalable's replicas, when it has some
	switch {
	case s.PodTemplateRef != nil:
		t, ok := m.podTemplates[podTemplateKey{o.Namespace, s.PodTemplateRef.Name}]
		if !ok {
			b.Reason = fmt.Sprintf("PodTemplate %s/%s is not in the input; no room is kept", o.Namespace, s.PodTemplateRef.Name)
			return b, nil
		}
		shape, err := m.podShape(where+": PodTemplate "+strconv.Quote(t.Name), "template.spec", &t.Template.Spec)
		if err != nil {
			return b, fmt.Errorf("PodTemplate %q: %w", t.Name, err)
		}
		shape.Labels = t.Template.Labels
		b.Pod, b.PodTemplate, b.TemplateGeneration = shape, t.Name, t.Generation
	default:
		owner := s.ScalableRef.Kind + "/" + s.ScalableRef.Name
		first, n := -1, int32(0)
		for i := range m.Pods {
			if p := &m.Pods[i]; p.Owner == owner && p.Namespace == o.Namespace {
				if first < 0 {
					first = i
				}
				n++
			}
		}
		if first < 0 {
			b.Reason = fmt.Sprintf("scalableRef %s has no pods in the input; no room is kept", owner)
			return b, nil
		}
		b.Pod, scalable = copyPod(m.Pods[first]), n
	}
	b.Pod.Namespace, b.Pod.Name, b.Pod.Owner = "", "", ""
	n, reason := BufferReplicas(&o.Spec, scalable, b.Pod.Requests, m.ExtendedResources)
	b.Replicas, b.Reason = n, reason
	return b, nil
}

// BufferReplicas counts a buffer's chunks as upstream defines them: the
// larger of spec.replicas and spec.percentage of scalable (the scalable's
// replicas, -1 when there is none), rounded up; with neither, as many as
// spec.limits holds; capped by spec.limits when set. chunk is one chunk's
// requests (extended names the resources past the fixed ones). reason says
// why the count is 0, when it is and that is not what was asked.
func BufferReplicas(s *cbv1beta1.CapacityBufferSpec, scalable int32, chunk solver.Resources, extended []string) (int32, string) {
	n, asked := int64(0), false
	if s.Replicas != nil {
		n, asked = int64(*s.Replicas), true
	}
	if s.Percentage != nil && scalable >= 0 {
		pct := (int64(*s.Percentage)*int64(scalable) + 99) / 100
		n, asked = max(n, pct), true
	}
	if s.Limits != nil {
		limit := int64(math.MaxInt32)
		for name, q := range *s.Limits {
			i := resourceIndex(string(name), extended)
			if i < 0 {
				continue // a resource the chunk does not request: no cap
			}
			per := chunk[i]
			if per <= 0 {
				continue
			}
			var have int64
			if i == solver.CPU {
				have = q.MilliValue()
			} else {
				have = q.Value()
			}
			limit = min(limit, have/per)
		}
		if limit == math.MaxInt32 && !asked {
			return 0, "spec.limits names no resource the pod requests, and neither replicas nor percentage is set; no room is kept"
		}
		if !asked || limit < n {
			n = limit
		}
	}
	if !asked && s.Limits == nil {
		return 0, "neither replicas, percentage nor limits is set; no room is kept"
	}
	return int32(min(n, math.MaxInt32)), ""
}

// resourceIndex is the solver's index of a resource name, -1 if none.
func resourceIndex(name string, extended []string) int {
	for i, f := range solver.FixedResourceNames {
		if f == name {
			return i
		}
	}
	for i, e := range extended {
		if e == name {
			return solver.NumFixedResources + i
		}
	}
	return -1
}

// addBuffers resolves a live cluster's CapacityBuffers against its
// PodTemplates (see Objects.CapacityBuffers). A buffer that cannot be
// read keeps no room; a warning says why.
func (cl *Cluster) addBuffers(buffers []*cbv1beta1.CapacityBuffer, templates []*corev1.PodTemplate) {
	if len(buffers) == 0 {
		return
	}
	for _, t := range templates {
		if cl.podTemplates == nil {
			cl.podTemplates = map[podTemplateKey]*corev1.PodTemplate{}
		}
		cl.podTemplates[podTemplateKey{t.Namespace, t.Name}] = t
	}
	for _, o := range buffers {
		where := "capacitybuffers/" + o.Namespace + "/" + o.Name
		var b Buffer
		var err error
		if o.Spec.ScalableRef != nil {
			// A live snapshot holds pending pods, not the workload's
			// running ones its shape and replicas come from.
			b = Buffer{Namespace: o.Namespace, Name: o.Name,
				Reason: "a scalableRef buffer is planned offline only for now (explain -f with its workload); no room is kept"}
		} else if b, err = cl.resolveBuffer(where, o); err != nil {
			b = Buffer{Namespace: o.Namespace, Name: o.Name, Reason: err.Error()}
		}
		if b.Reason != "" {
			cl.warnf(where, "%s", b.Reason)
		}
		if n := len(cl.Pods) + cl.bufferPods() + int(b.Replicas); n > MaxPods {
			b.Replicas, b.Reason = 0, fmt.Sprintf("%d pods would make %d in all, more than the %d supported; no room is kept", b.Replicas, n, MaxPods)
			cl.warnf(where, "%s", b.Reason)
		}
		cl.Buffers = append(cl.Buffers, b)
	}
	cl.podTemplates = nil
}

// CapacityBuffers is the CapacityBuffer resource the live reader lists.
var CapacityBuffers = cbv1beta1.SchemeGroupVersion.WithResource("capacitybuffers")

// liveBuffers lists a live cluster's CapacityBuffers (none when the CRD
// is not installed) and, when there are any, the PodTemplates they name.
func (r *reader) liveBuffers(ctx context.Context) ([]*cbv1beta1.CapacityBuffer, []*corev1.PodTemplate, error) {
	raws, _, err := r.custom(ctx, CapacityBuffers)
	if err != nil || len(raws) == 0 {
		return nil, nil, err
	}
	buffers := make([]*cbv1beta1.CapacityBuffer, 0, len(raws))
	for _, raw := range raws {
		b := &cbv1beta1.CapacityBuffer{}
		if err := json.Unmarshal(raw, b); err != nil {
			return nil, nil, fmt.Errorf("reading a CapacityBuffer: %w", err)
		}
		buffers = append(buffers, b)
	}
	list, err := r.Kube.CoreV1().PodTemplates(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, r.apiError("list", "podtemplates", "", err)
	}
	return buffers, pointers(list.Items), nil
}
