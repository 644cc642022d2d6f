package snapshot

import (
	"fmt"
	"maps"
	"strconv"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/strictjson"
)

// autoscaler is a HorizontalPodAutoscaler's hold on its target's replicas.
type autoscaler struct {
	where, name, namespace string
	target                 string // "Kind/name", as solver.Pod.Owner
	min, max               int32
}

// decodeAutoscaler reads a HorizontalPodAutoscaler (autoscaling/v1 and v2
// share the fields read here); Read applies it once every workload is read.
func (m *Manifests) decodeAutoscaler(where string, j []byte, generic any) error {
	var o struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Spec              struct {
			ScaleTargetRef autoscalingv2.CrossVersionObjectReference `json:"scaleTargetRef"`
			MinReplicas    *int32                                    `json:"minReplicas,omitempty"`
			MaxReplicas    int32                                     `json:"maxReplicas"`
		} `json:"spec"`
	}
	// The rest of v1's and v2's specs (metrics, behavior, target
	// utilisation) does not change how many pods there are at least, so
	// the fields not read here are not reported.
	if _, err := strictjson.DecodeFields(j, &o); err != nil {
		return explainValueError(err, generic)
	}
	ns := o.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	a := autoscaler{where: where, name: o.Name, namespace: ns, min: 1, max: o.Spec.MaxReplicas,
		target: o.Spec.ScaleTargetRef.Kind + "/" + o.Spec.ScaleTargetRef.Name}
	if o.Spec.MinReplicas != nil {
		a.min = *o.Spec.MinReplicas
	}
	if a.min < 1 || (a.max > 0 && a.max < a.min) {
		return fmt.Errorf("spec.minReplicas %d must be at least 1 and at most spec.maxReplicas %d", a.min, a.max)
	}
	m.autoscalers = append(m.autoscalers, a)
	return nil
}

// applyAutoscalers raises each autoscaled workload to its autoscaler's
// minReplicas, as the HorizontalPodAutoscaler controller would right after
// the workload is created, and lowers it to maxReplicas; each change is a
// warning. A workload with 0 replicas is left alone: autoscaling is off
// for it, as in Kubernetes.
func (m *Manifests) applyAutoscalers() {
	for _, a := range m.autoscalers {
		var pods []int
		for i := range m.Pods {
			if p := &m.Pods[i]; p.Owner == a.target && p.Namespace == a.namespace {
				pods = append(pods, i)
			}
		}
		n := int32(len(pods))
		switch {
		case n == 0:
			m.warnf(a.where, "HorizontalPodAutoscaler %q: its target %s has no pods in the input; nothing to scale", a.name, a.target)
		case n < a.min:
			last := m.Pods[pods[n-1]]
			base := last.Name[:len(last.Name)-len(strconv.Itoa(int(n-1)))] // "web-"
			for i := n; i < a.min; i++ {
				p := copyPod(last)
				p.Name = base + strconv.Itoa(int(i))
				m.Pods = append(m.Pods, p)
			}
			m.warnf(a.where, "HorizontalPodAutoscaler %q raises %s from %d to %d replicas (minReplicas); %d pods are planned", a.name, a.target, n, a.min, a.min)
		case a.max > 0 && n > a.max:
			drop := map[int]bool{}
			for _, i := range pods[a.max:] {
				drop[i] = true
			}
			kept := m.Pods[:0]
			for i, p := range m.Pods {
				if !drop[i] {
					kept = append(kept, p)
				}
			}
			m.Pods = kept
			m.warnf(a.where, "HorizontalPodAutoscaler %q lowers %s from %d to %d replicas (maxReplicas); %d pods are planned", a.name, a.target, n, a.max, a.max)
		}
	}
	m.autoscalers = nil
}

// copyPod returns p with maps and slices of its own, so that pods of one
// workload can be changed apart.
func copyPod(p solver.Pod) solver.Pod {
	p.NodeSelector = maps.Clone(p.NodeSelector)
	p.Affinity = cloneTerms(p.Affinity)
	p.Tolerations = append([]solver.Toleration(nil), p.Tolerations...)
	p.Labels = maps.Clone(p.Labels)
	return p
}
