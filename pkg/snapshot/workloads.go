package snapshot

import (
	"errors"
	"fmt"
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// MaxPods bounds the number of pods read, so that a typo in replicas cannot
// exhaust memory.
const MaxPods = 100_000

// workload is what every pod-making kind has in common.
type workload struct {
	meta     *metav1.ObjectMeta
	replicas int32 // pods to make
	spec     *corev1.PodSpec
	specPath string // field path of spec, for errors
}

// decodeWorkload reads a Pod, a workload or a DaemonSet and adds its pods or
// its DaemonSet to m.
func (m *Manifests) decodeWorkload(where, kind string, j []byte, generic any, pre *predecoded) error {
	obj, w, err := newWorkload(kind)
	if err != nil {
		return err
	}
	if pre != nil && pre.pod != nil && kind == "Pod" {
		// Decoded already, in parallel with the other documents.
		o := pre.pod
		obj, w = o, workload{meta: &o.ObjectMeta, replicas: 1, spec: &o.Spec, specPath: "spec"}
		if err := m.fieldsDecoded(pre.podFields, pre.podErr, generic); err != nil {
			return err
		}
	} else if err := m.decodeFields(j, obj, generic); err != nil {
		return err
	}
	if w.meta.Name == "" {
		return errors.New("metadata.name is required")
	}
	label := fmt.Sprintf("%s %q", kind, w.meta.Name)
	m.workloads++

	if skip, err := m.countPods(where, label, obj, &w); err != nil || skip {
		return err
	}
	// Even with no replicas: the API server refuses the object itself.
	if err := checkPodSpec(w.specPath, w.spec); err != nil {
		return err
	}
	if w.replicas == 0 {
		return nil
	}
	if n := len(m.Pods) + int(w.replicas); n > MaxPods {
		return fmt.Errorf("%d pods would make %d in all, more than the %d supported", w.replicas, n, MaxPods)
	}
	if w.spec.NodeName != "" {
		m.warnf(where, "%s skipped: already bound to node %q by %s.nodeName", label, w.spec.NodeName, w.specPath)
		return nil
	}
	return m.addWorkload(where, kind, label, obj, &w)
}

// newWorkload returns an empty object of the workload kind to decode into,
// and the workload view of it: where its metadata and pod spec are, and the
// replicas of the kinds that make one pod.
func newWorkload(kind string) (any, workload, error) {
	switch kind {
	case "Pod":
		o := &corev1.Pod{}
		return o, workload{meta: &o.ObjectMeta, replicas: 1, spec: &o.Spec, specPath: "spec"}, nil
	case "ReplicationController":
		o := &corev1.ReplicationController{}
		// The template is a pointer here; spec is set after decoding.
		return o, workload{meta: &o.ObjectMeta, specPath: "spec.template.spec"}, nil
	case "Deployment":
		o := &appsv1.Deployment{}
		return o, workload{meta: &o.ObjectMeta, spec: &o.Spec.Template.Spec, specPath: "spec.template.spec"}, nil
	case "StatefulSet":
		o := &appsv1.StatefulSet{}
		return o, workload{meta: &o.ObjectMeta, spec: &o.Spec.Template.Spec, specPath: "spec.template.spec"}, nil
	case "ReplicaSet":
		o := &appsv1.ReplicaSet{}
		return o, workload{meta: &o.ObjectMeta, spec: &o.Spec.Template.Spec, specPath: "spec.template.spec"}, nil
	case "DaemonSet":
		o := &appsv1.DaemonSet{}
		return o, workload{meta: &o.ObjectMeta, replicas: 1, spec: &o.Spec.Template.Spec, specPath: "spec.template.spec"}, nil
	case "Job":
		o := &batchv1.Job{}
		return o, workload{meta: &o.ObjectMeta, spec: &o.Spec.Template.Spec, specPath: "spec.template.spec"}, nil
	case "CronJob":
		o := &batchv1.CronJob{}
		return o, workload{meta: &o.ObjectMeta, spec: &o.Spec.JobTemplate.Spec.Template.Spec, specPath: "spec.jobTemplate.spec.template.spec"}, nil
	default:
		return nil, workload{}, fmt.Errorf("kind %s is not a workload", kind)
	}
}

// countPods sets w.replicas to how many pods the decoded obj makes (and
// w.spec for a ReplicationController, whose template is a pointer), warning
// about selectors that miss the template's labels. It reports skip when
// the object's pods would not be pending at all: a finished Pod or a
// suspended CronJob.
func (m *Manifests) countPods(where, label string, obj any, w *workload) (skip bool, err error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		if p := o.Status.Phase; p == corev1.PodSucceeded || p == corev1.PodFailed {
			m.warnf(where, "%s skipped: phase %s", label, p)
			return true, nil
		}
	case *corev1.ReplicationController:
		if o.Spec.Template == nil {
			return false, errors.New("spec.template is required")
		}
		w.spec = &o.Spec.Template.Spec
		if w.replicas, err = count(o.Spec.Replicas, "spec.replicas"); err != nil {
			return false, err
		}
	case *appsv1.Deployment:
		if err := podSelector(o.Spec.Selector, o.Spec.Template.Labels); err != nil {
			m.warnf(where, "%s: %v", label, err)
		}
		if w.replicas, err = count(o.Spec.Replicas, "spec.replicas"); err != nil {
			return false, err
		}
	case *appsv1.StatefulSet:
		if err := podSelector(o.Spec.Selector, o.Spec.Template.Labels); err != nil {
			m.warnf(where, "%s: %v", label, err)
		}
		if w.replicas, err = count(o.Spec.Replicas, "spec.replicas"); err != nil {
			return false, err
		}
	case *appsv1.ReplicaSet:
		if err := podSelector(o.Spec.Selector, o.Spec.Template.Labels); err != nil {
			m.warnf(where, "%s: %v", label, err)
		}
		if w.replicas, err = count(o.Spec.Replicas, "spec.replicas"); err != nil {
			return false, err
		}
	case *appsv1.DaemonSet:
		if err := podSelector(o.Spec.Selector, o.Spec.Template.Labels); err != nil {
			m.warnf(where, "%s: %v", label, err)
		}
	case *batchv1.Job:
		if w.replicas, err = jobPods(&o.Spec, "spec"); err != nil {
			return false, err
		}
		if o.Spec.Suspend != nil && *o.Spec.Suspend {
			m.warnf(where, "%s skipped: suspended", label)
		}
	case *batchv1.CronJob:
		if o.Spec.Suspend != nil && *o.Spec.Suspend {
			m.warnf(where, "%s skipped: suspended", label)
			return true, nil
		}
		if w.replicas, err = jobPods(&o.Spec.JobTemplate.Spec, "spec.jobTemplate.spec"); err != nil {
			return false, err
		}
	}
	return false, nil
}

// addWorkload adds the checked workload to m: a DaemonSet as one
// solver.DaemonSet, a Pod as itself, and any other kind as w.replicas
// pods named after it, with the volumes they use.
func (m *Manifests) addWorkload(where, kind, label string, obj any, w *workload) error {
	shape, err := m.podShape(where+": "+label, w.specPath, w.spec)
	if err != nil {
		return err
	}
	shape.Labels, shape.Controller = podLabels(obj), true
	resolveMatchLabelKeys(w.spec, &shape)
	ns := w.meta.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	switch kind {
	case "DaemonSet":
		m.DaemonSets = append(m.DaemonSets, solver.DaemonSet{
			Namespace: ns, Name: w.meta.Name, Requests: shape.Requests,
			NodeSelector: shape.NodeSelector, Affinity: shape.Affinity, Tolerations: shape.Tolerations, HostPorts: shape.HostPorts,
		})
	case "Pod":
		shape.Namespace, shape.Name, shape.Owner = ns, w.meta.Name, "Pod/"+w.meta.Name
		shape.Controller = metav1.GetControllerOf(w.meta) != nil
		m.Pods = append(m.Pods, shape)
		m.useVolumes(len(m.Pods)-1, len(m.Pods), w.spec, nil)
	default:
		first := len(m.Pods)
		for i := range w.replicas {
			p := shape
			if i > 0 { // the pods must not share maps and slices
				p = copyPod(shape)
			}
			p.Namespace, p.Name, p.Owner = ns, w.meta.Name+"-"+strconv.Itoa(int(i)), kind+"/"+w.meta.Name
			m.Pods = append(m.Pods, p)
		}
		var templates []corev1.PersistentVolumeClaim
		if sts, ok := obj.(*appsv1.StatefulSet); ok {
			templates = sts.Spec.VolumeClaimTemplates
		}
		m.useVolumes(first, len(m.Pods), w.spec, templates)
	}
	return nil
}

// podLabels returns the labels the object's pods carry.
func podLabels(obj any) map[string]string {
	switch o := obj.(type) {
	case *corev1.Pod:
		return o.Labels
	case *corev1.ReplicationController:
		return o.Spec.Template.Labels
	case *appsv1.Deployment:
		return o.Spec.Template.Labels
	case *appsv1.StatefulSet:
		return o.Spec.Template.Labels
	case *appsv1.ReplicaSet:
		return o.Spec.Template.Labels
	case *appsv1.DaemonSet:
		return o.Spec.Template.Labels
	case *batchv1.Job:
		return o.Spec.Template.Labels
	case *batchv1.CronJob:
		return o.Spec.JobTemplate.Spec.Template.Labels
	}
	return nil
}

// podSelector checks an apps/v1 workload's spec.selector as the API server
// does: required, non-empty, valid and matching the template's labels. The
// API server refuses such a workload; offline it is still planned (a
// snippet often leaves the selector out), with a warning.
func podSelector(sel *metav1.LabelSelector, template map[string]string) error {
	if sel == nil {
		return errors.New("spec.selector is missing: the API server refuses an apps/v1 workload without one (planned anyway); add matchLabels with the template's labels")
	}
	if len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
		return errors.New("spec.selector is empty: the API server refuses it (planned anyway); select the template's labels")
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return fmt.Errorf("spec.selector: %w", err)
	}
	if !s.Matches(labels.Set(template)) {
		return fmt.Errorf("spec.selector %s does not match spec.template.metadata.labels %v: the API server refuses it (planned anyway)", s, labels.Set(template))
	}
	return nil
}

// count is a replica count, 1 when unset.
func count(n *int32, path string) (int32, error) {
	if n == nil {
		return 1, nil
	}
	if *n < 0 {
		return 0, fmt.Errorf("%s: must not be negative (%d)", path, *n)
	}
	return *n, nil
}

// jobPods is the number of pods a Job runs at once: parallelism (default 1),
// capped by completions; 0 when suspended.
func jobPods(spec *batchv1.JobSpec, path string) (int32, error) {
	n, err := count(spec.Parallelism, path+".parallelism")
	if err != nil {
		return 0, err
	}
	if c := spec.Completions; c != nil {
		if *c < 0 {
			return 0, fmt.Errorf("%s.completions: must not be negative (%d)", path, *c)
		}
		n = min(n, *c)
	}
	if spec.Suspend != nil && *spec.Suspend {
		return 0, nil
	}
	return n, nil
}

// podShape turns a pod spec into a solver.Pod without name and owner. where
// prefixes warnings; path is the field path of spec.
func (m *Manifests) podShape(where, path string, spec *corev1.PodSpec) (solver.Pod, error) {
	var p solver.Pod
	if err := checkContainers(path+".initContainers", spec.InitContainers); err != nil {
		return p, err
	}
	if err := checkContainers(path+".containers", spec.Containers); err != nil {
		return p, err
	}
	if spec.Resources != nil {
		if err := checkResources(path+".resources", spec.Resources, podLevelResource); err != nil {
			return p, err
		}
	}
	if err := checkList(path+".overhead", spec.Overhead, containerResource); err != nil {
		return p, err
	}
	reqs := resourcehelper.PodRequests(&corev1.Pod{Spec: *spec}, resourcehelper.PodResourcesOptions{})
	var err error
	if p.Requests, err = m.vector("the pod's requests", reqs); err != nil {
		return p, err
	}
	p.Requests[solver.Pods] = 1
	p.HostPorts = hostPorts(spec)

	if len(spec.NodeSelector) > 0 {
		p.NodeSelector = maps.Clone(spec.NodeSelector)
	}
	if p.Affinity, err = m.affinity(where, path+".affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", spec.Affinity); err != nil {
		return p, err
	}
	for i, t := range spec.Tolerations {
		tp := fmt.Sprintf("%s.tolerations[%d]", path, i)
		switch t.Operator {
		case "", corev1.TolerationOpEqual:
			if t.Key == "" {
				return p, fmt.Errorf("%s.operator: must be Exists when key is empty", tp)
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				return p, fmt.Errorf("%s.value: must be empty when operator is Exists", tp)
			}
		default:
			return p, fmt.Errorf("%s.operator: unsupported value %q (want Equal or Exists)", tp, t.Operator)
		}
		if t.Effect != "" {
			if err := checkEffect(tp+".effect", t.Effect); err != nil {
				return p, err
			}
		}
		p.Tolerations = append(p.Tolerations, solver.Toleration{
			Key: t.Key, Operator: string(t.Operator), Value: t.Value, Effect: string(t.Effect),
		})
	}

	if err := m.podTopology(where, path, spec, &p); err != nil {
		return p, err
	}
	return p, nil
}

// affinity converts required node affinity to solver terms, ORed as
// kube-scheduler ORs them. A term without requirements matches no node, as
// in Kubernetes. matchFields can only name metadata.name; a node that does
// not exist yet has no name, so such a requirement is matched against the
// kubernetes.io/hostname label (a node's name on EKS and most clusters), and
// the pod can go only to the existing node it names.
func (m *Manifests) affinity(where, path string, a *corev1.Affinity) ([]solver.Term, error) {
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil, nil
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		return nil, fmt.Errorf("%s: must have at least one term", path)
	}
	out := make([]solver.Term, 0, len(terms))
	for i, t := range terms {
		tp := fmt.Sprintf("%s[%d]", path, i)
		term := make(solver.Term, 0, len(t.MatchExpressions)+len(t.MatchFields))
		for k, e := range t.MatchExpressions {
			r, err := nodeRequirement(fmt.Sprintf("%s.matchExpressions[%d]", tp, k), e.Key, string(e.Operator), e.Values)
			if err != nil {
				return nil, err
			}
			term = append(term, r)
		}
		for k, f := range t.MatchFields {
			fp := fmt.Sprintf("%s.matchFields[%d]", tp, k)
			if f.Key != "metadata.name" {
				return nil, fmt.Errorf("%s.key: %q is not a supported field (only metadata.name)", fp, f.Key)
			}
			if f.Operator != corev1.NodeSelectorOpIn && f.Operator != corev1.NodeSelectorOpNotIn {
				return nil, fmt.Errorf("%s.operator: %q is not valid for metadata.name (In or NotIn)", fp, f.Operator)
			}
			r, err := nodeRequirement(fp, solver.LabelHostname, string(f.Operator), f.Values)
			if err != nil {
				return nil, err
			}
			term = append(term, r)
		}
		out = append(out, term)
	}
	return out, nil
}

// nodeRequirement validates and converts a node selector requirement.
func nodeRequirement(path, key, op string, values []string) (solver.Requirement, error) {
	if key == "" {
		return solver.Requirement{}, fmt.Errorf("%s.key: required", path)
	}
	switch op {
	case solver.OpIn, solver.OpNotIn:
		if len(values) == 0 {
			return solver.Requirement{}, fmt.Errorf("%s.values: required for operator %s", path, op)
		}
	case solver.OpExists, solver.OpDoesNotExist:
		if len(values) > 0 {
			return solver.Requirement{}, fmt.Errorf("%s.values: must be empty for operator %s", path, op)
		}
	case solver.OpGt, solver.OpLt:
		if len(values) != 1 {
			return solver.Requirement{}, fmt.Errorf("%s.values: operator %s needs exactly one value", path, op)
		}
		if _, err := strconv.ParseInt(values[0], 10, 64); err != nil {
			return solver.Requirement{}, fmt.Errorf("%s.values[0]: operator %s needs an integer, got %q", path, op, values[0])
		}
	default:
		return solver.Requirement{}, fmt.Errorf("%s.operator: unsupported value %q (want In, NotIn, Exists, DoesNotExist, Gt or Lt)", path, op)
	}
	return solver.Requirement{Key: key, Operator: op, Values: append([]string(nil), values...)}, nil
}

func checkEffect(path string, e corev1.TaintEffect) error {
	switch e {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	}
	return fmt.Errorf("%s: unsupported value %q (want NoSchedule, PreferNoSchedule or NoExecute)", path, e)
}

func cloneTerms(ts []solver.Term) []solver.Term {
	if ts == nil {
		return nil
	}
	c := make([]solver.Term, len(ts))
	for i, t := range ts {
		c[i] = make(solver.Term, len(t))
		for k, r := range t {
			r.Values = append([]string(nil), r.Values...)
			c[i][k] = r
		}
	}
	return c
}
