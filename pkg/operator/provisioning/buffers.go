package provisioning

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cbv1beta1 "github.com/rightsize-dev/kubectl-rightsize/pkg/apis/capacitybuffer/v1beta1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/optional"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// +kubebuilder:rbac:groups=autoscaling.x-k8s.io,resources=capacitybuffers,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.x-k8s.io,resources=capacitybuffers/status,verbs=get;patch;update
// +kubebuilder:rbac:groups="",resources=podtemplates,verbs=get;list;watch

// bufferPoll is how often the provisioner lists CapacityBuffers to see one
// created or changed (a batch follows at once), and bufferResync how often
// a batch runs while buffers exist, so that room a real pod took is
// planned again without a pending pod to trigger it.
const (
	bufferPoll   = time.Second
	bufferResync = 5 * time.Second
)

// virtualUID is the UID of the stand-in corev1.Pod of a buffer's virtual
// pod in a batch (batch.pods): no such pod exists, and none is created,
// nominated or told anything.
func virtualUID(p *solver.Pod) types.UID {
	return types.UID("capacitybuffer/" + p.Namespace + "/" + p.Name)
}

// readBuffers lists the CapacityBuffers and, when there are any, the
// PodTemplates. Buffers are read from the API server, not a cache: the CRD
// may not be installed (then there are none), and an informer on a
// missing kind never syncs.
func (p *Provisioner) readBuffers(ctx context.Context) ([]*cbv1beta1.CapacityBuffer, []*corev1.PodTemplate, error) {
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(cbv1beta1.SchemeGroupVersion.WithKind("CapacityBufferList"))
	if err := p.client.List(ctx, &list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil, nil
		}
		if apierrors.IsForbidden(err) {
			if !p.buffersForbidden.Swap(true) {
				p.log.Info("CapacityBuffers are not planned: the operator may not list capacitybuffers.autoscaling.x-k8s.io (re-apply its ClusterRole)", "error", err.Error())
			}
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("reading CapacityBuffers: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, nil, nil
	}
	buffers := make([]*cbv1beta1.CapacityBuffer, 0, len(list.Items))
	for i := range list.Items {
		raw, err := json.Marshal(list.Items[i].Object)
		if err != nil {
			return nil, nil, fmt.Errorf("CapacityBuffer %s: %w", list.Items[i].GetName(), err)
		}
		b := &cbv1beta1.CapacityBuffer{}
		if err := json.Unmarshal(raw, b); err != nil {
			p.log.Info("CapacityBuffer not planned: unreadable", "capacitybuffer", list.Items[i].GetNamespace()+"/"+list.Items[i].GetName(), "error", err.Error())
			continue
		}
		if b.DeletionTimestamp == nil {
			buffers = append(buffers, b)
		}
	}
	var templates corev1.PodTemplateList
	if err := p.client.List(ctx, &templates); err != nil {
		return nil, nil, fmt.Errorf("reading PodTemplates: %w", err)
	}
	return buffers, pointersTo(templates.Items), nil
}

// addVirtualPods gives the batch's buffer pods (after the real ones in the
// problem) stand-in pods, so that every index of b.pods has one.
func (b *batch) addVirtualPods() {
	for i := len(b.pods); i < len(b.problem.Pods); i++ {
		sp := &b.problem.Pods[i]
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: sp.Namespace, Name: sp.Name, UID: virtualUID(sp)}}
		b.virtual[pod.UID] = true
		b.pods = append(b.pods, pod)
	}
}

// real reports whether the batch's pod pi is a pod to nominate and tell:
// not a buffer's virtual pod, not one running on a leaving node.
func (b *batch) real(pi int) bool {
	uid := b.pods[pi].UID
	return !b.moving[uid] && !b.virtual[uid]
}

// pollBuffers triggers a batch when a CapacityBuffer appears, changes or
// goes, and every bufferResync while any exists, until ctx ends.
func (p *Provisioner) pollBuffers(ctx context.Context) {
	tick := p.opts.Clock.NewTicker(bufferPoll)
	defer tick.Stop()
	last, lastBatch := "", time.Time{}
	var pace optional.Pacer
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		now := p.opts.Clock.Now()
		if pace.Wait(now) {
			continue
		}
		// Unstructured: read from the API server, never an informer that
		// would wait forever for a kind not installed or not allowed.
		var list unstructured.UnstructuredList
		list.SetGroupVersionKind(cbv1beta1.SchemeGroupVersion.WithKind("CapacityBufferList"))
		err := p.client.List(ctx, &list)
		pace.Saw(err, now)
		if err != nil {
			continue // no CRD, no right: readBuffers says so in a batch
		}
		keys := make([]string, 0, len(list.Items))
		for i := range list.Items {
			o := &list.Items[i]
			keys = append(keys, string(o.GetUID())+"@"+strconv.FormatInt(o.GetGeneration(), 10))
		}
		slices.Sort(keys)
		if key := strings.Join(keys, ","); key != last || len(keys) > 0 && now.Sub(lastBatch) >= bufferResync {
			last, lastBatch = key, now
			p.Trigger()
		}
	}
}

// writeBufferStatus records on each buffer how many chunks were planned
// (status.replicas), the template read, and whether all have room
// (condition Provisioning); a buffer whose status says so already is not
// written.
func (p *Provisioner) writeBufferStatus(ctx context.Context, rooms []plan.BufferRoom, reasons map[string]string, placed func(pi int) bool, templates map[string]string) {
	for _, r := range rooms {
		n := 0
		for pi := r.First; pi < r.First+r.Count; pi++ {
			if placed(pi) {
				n++
			}
		}
		key := r.Namespace + "/" + r.Name
		cond := metav1.Condition{Type: cbv1beta1.ConditionProvisioning, Status: metav1.ConditionTrue, Reason: "RoomPlanned",
			Message: fmt.Sprintf("room for %d of %d chunks is on nodes or launching", n, r.Count)}
		switch {
		case reasons[key] != "":
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "NotPlanned", reasons[key]
		case n < r.Count:
			cond.Status, cond.Reason = metav1.ConditionFalse, "NoRoom"
		}
		ready := metav1.Condition{Type: cbv1beta1.ConditionReadyForProvisioning, Status: metav1.ConditionTrue, Reason: "Read", Message: "the buffer's pods are planned"}
		if reasons[key] != "" {
			ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "NotPlanned", reasons[key]
		}
		p.patchBufferStatus(ctx, r.Namespace, r.Name, int32(r.Count), templates[key], []metav1.Condition{ready, cond})
	}
}

// patchBufferStatus merges the status into the buffer unless it says the
// same already (the last written is remembered).
func (p *Provisioner) patchBufferStatus(ctx context.Context, ns, name string, replicas int32, template string, conds []metav1.Condition) {
	now := metav1.NewTime(p.opts.Clock.Now())
	sig := fmt.Sprintf("%d|%s", replicas, template)
	for i := range conds {
		conds[i].LastTransitionTime = now
		sig += "|" + string(conds[i].Status) + conds[i].Reason + conds[i].Message
	}
	key := ns + "/" + name
	p.mu.Lock()
	same := p.bufferStatus[key] == sig
	p.mu.Unlock()
	if same {
		return
	}
	status := map[string]any{"replicas": replicas, "conditions": conds, "provisioningStrategy": cbv1beta1.ActiveCapacity}
	if template != "" {
		status["podTemplateRef"] = map[string]string{"name": template}
	}
	data, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(cbv1beta1.SchemeGroupVersion.WithKind("CapacityBuffer"))
	u.SetNamespace(ns)
	u.SetName(name)
	if err := p.client.Status().Patch(ctx, u, client.RawPatch(types.MergePatchType, data)); err != nil {
		p.log.Info("CapacityBuffer status not written", "capacitybuffer", key, "error", err.Error())
		return
	}
	p.mu.Lock()
	p.bufferStatus[key] = sig
	p.mu.Unlock()
}

// bufferRoomPlanned writes each buffer's status after a batch: a chunk has
// room when the plan put it on an existing or in-flight node, or on a new
// node whose NodeClaim was created.
func (p *Provisioner) bufferRoomPlanned(ctx context.Context, b *batch, solved *solver.Plan, launches []*launch) {
	metrics.BufferReplicas.Reset() // buffers gone since the last batch leave no series
	if len(b.buffers) == 0 {
		return
	}
	placed := map[int]bool{}
	for _, e := range solved.Existing {
		placed[e.Pod] = true
	}
	for _, l := range launches {
		if l.err == nil {
			for _, pi := range l.node.Pods {
				placed[pi] = true
			}
		}
	}
	for _, r := range b.buffers {
		n := 0
		for pi := r.First; pi < r.First+r.Count; pi++ {
			if placed[pi] {
				n++
			}
		}
		metrics.BufferReplicas.WithLabelValues(r.Namespace, r.Name, "asked").Set(float64(r.Count))
		metrics.BufferReplicas.WithLabelValues(r.Namespace, r.Name, "placed").Set(float64(n))
	}
	p.writeBufferStatus(ctx, b.buffers, b.bufferReasons, func(pi int) bool { return placed[pi] }, b.bufferTemplates)
}
