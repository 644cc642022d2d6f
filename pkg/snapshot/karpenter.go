package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/karpenter"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Labels Karpenter puts on the nodes of a pool.
const (
	LabelNodePool        = karpenter.LabelNodePool
	LabelProvisionerName = karpenter.LabelProvisionerName
)

// NodeCountResource is the resource a pool's limits.nodes (Karpenter
// v1.15: at most that many nodes in the pool) is planned as. The solver
// limits a pool's summed capacity per resource, so every instance type a
// pool may launch gets one of it (pkg/plan gives it) and the limit is the
// node count; pods never request it. It is a name no node reports, so the
// pool's existing nodes are counted by pkg/plan, not read from capacity.
const NodeCountResource = "rightsize.dev/nodes"

// The Karpenter types, defined in pkg/karpenter, accept the union of the
// layouts read: the karpenter.sh/v1alpha5 Provisioner (flat
// spec.requirements, spec.labels, spec.limits.resources, ...), the
// karpenter.sh/v1beta1 and v1 NodePool (spec.template, spec.limits as a
// resource list, spec.disruption), and the seed article's hybrid Provisioner
// that mixes the two. They are decoded strictly, so a misspelt field is an
// error.
type (
	karpenterPool      = karpenter.Pool
	poolSpec           = karpenter.PoolSpec
	requirement        = karpenter.Requirement
	poolDisruptionSpec = karpenter.Disruption
	ec2NodeClass       = karpenter.EC2NodeClass
)

// decodePool reads a Provisioner or a NodePool into a solver.Pool.
func (m *Manifests) decodePool(where, kind string, j []byte, generic any) error {
	var o karpenterPool
	if err := m.decodeFields(j, &o, generic); err != nil {
		return err
	}
	return m.addPool(where, kind, &o)
}

// addPool converts a decoded Provisioner or NodePool into a solver.Pool and
// adds it to m.
func (m *Manifests) addPool(where, kind string, o *karpenterPool) error {
	name := o.Metadata.Name
	if name == "" {
		return errors.New("metadata.name is required")
	}
	label := fmt.Sprintf("%s %q", kind, name)
	s := &o.Spec
	provisioner := kind == "Provisioner"
	if !provisioner {
		if err := noProvisionerFields(s); err != nil {
			return err
		}
	}
	pool := solver.Pool{Name: name, Labels: map[string]string{}}
	if s.Weight != nil {
		if err := v1alpha1.CheckWeight(*s.Weight); err != nil {
			return fmt.Errorf("spec.weight: %w", err)
		}
		pool.Weight = *s.Weight
	}

	sources, err := m.poolSources(where, label, s)
	if err != nil {
		return err
	}
	if err := addSources(&pool, sources); err != nil {
		return err
	}
	if provisioner {
		if err := m.addProvisionerDefaults(where, label, &pool, sources); err != nil {
			return err
		}
	}
	if err := m.setPoolKubelet(where, name, s); err != nil {
		return err
	}
	pool.Labels[LabelNodePool] = name
	if provisioner {
		pool.Labels[LabelProvisionerName] = name
	}

	if err := m.limits(&pool, s.Limits, provisioner); err != nil {
		return err
	}
	if err := m.checkDisruption(where+": "+label, s.Disruption); err != nil {
		return err
	}
	if s.Replicas != nil {
		if err := karpenter.CheckStatic(s); err != nil {
			return err
		}
		// Karpenter's provisioner leaves static pools out, and its
		// consolidation leaves their nodes alone; so does the planner.
		// The count is kept by the operator (Karpenter's from v1.15,
		// rightsize's static controller), not by the plan.
		m.warnf(where, "%s: spec.replicas: %d makes a static NodePool: its operator keeps %d nodes, which pods may use as kept capacity, but the plan launches no node for it and consolidates none of its nodes", label, *s.Replicas, *s.Replicas)
		return nil
	}
	if pool.Consolidation, err = poolDisruption(s); err != nil {
		return err
	}
	if s.Disruption != nil && len(s.Disruption.Budgets) > 0 {
		if m.Budgets == nil {
			m.Budgets = map[string][]karpenter.Budget{}
		}
		m.Budgets[name] = s.Disruption.Budgets
	}
	m.Pools = append(m.Pools, pool)
	return nil
}

// poolSource is one layout's requirements, labels and taints in a pool:
// the flat v1alpha5 spec or a NodePool's spec.template.
type poolSource struct {
	path                  string
	labels                map[string]string
	reqs                  []requirement
	taints, startupTaints []corev1.Taint
}

// poolSources lists the layouts of s that carry requirements, labels and
// taints: spec always, then spec.template.spec when there is a template,
// whose durations and nodeClassRef it checks, recording the class
// reference for the later node class check.
func (m *Manifests) poolSources(where, label string, s *poolSpec) ([]poolSource, error) {
	sources := []poolSource{{"spec", s.Labels, s.Requirements, s.Taints, s.StartupTaints}}
	if t := s.Template; t != nil {
		sources = append(sources, poolSource{"spec.template.spec", t.Metadata.Labels, t.Spec.Requirements, t.Spec.Taints, t.Spec.StartupTaints})
		if err := checkDuration("spec.template.spec.expireAfter", t.Spec.ExpireAfter); err != nil {
			return nil, err
		}
		if err := checkDuration("spec.template.spec.terminationGracePeriod", t.Spec.TerminationGracePeriod); err != nil {
			return nil, err
		}
		if ref := t.Spec.NodeClassRef; ref != nil {
			if ref.Name == "" {
				return nil, errors.New("spec.template.spec.nodeClassRef.name: required")
			}
			m.classRefs = append(m.classRefs, classRef{where: where, pool: label, class: ref.Name})
		}
	}
	return sources, nil
}

// addSources adds the labels, requirements (with their minValues) and
// taints of each source to pool, in order.
func addSources(pool *solver.Pool, sources []poolSource) error {
	for _, src := range sources {
		maps.Copy(pool.Labels, src.labels)
		for i, r := range src.reqs {
			p := fmt.Sprintf("%s.requirements[%d]", src.path, i)
			req, err := poolRequirement(p, r)
			if err != nil {
				return err
			}
			if r.MinValues != nil {
				if *r.MinValues < 1 {
					return fmt.Errorf("%s.minValues: must be at least 1 (%d)", p, *r.MinValues)
				}
				// Karpenter takes the largest where several
				// requirements name one key.
				if pool.MinValues == nil {
					pool.MinValues = map[string]int{}
				}
				pool.MinValues[req.Key] = max(pool.MinValues[req.Key], *r.MinValues)
			}
			pool.Requirements = append(pool.Requirements, req)
		}
		var err error
		if pool.Taints, err = taints(src.path+".taints", pool.Taints, src.taints); err != nil {
			return err
		}
		if pool.StartupTaints, err = taints(src.path+".startupTaints", pool.StartupTaints, src.startupTaints); err != nil {
			return err
		}
	}
	return nil
}

// addProvisionerDefaults adds the requirements a v1alpha5 Provisioner gets
// by default where its sources leave them out, warning with Karpenter's
// note when there is one.
func (m *Manifests) addProvisionerDefaults(where, label string, pool *solver.Pool, sources []poolSource) error {
	var given [][]karpenter.Requirement
	for _, src := range sources {
		given = append(given, src.reqs)
	}
	defaults, note := karpenter.ProvisionerDefaults(given...)
	for i, r := range defaults {
		req, err := nodeRequirement(fmt.Sprintf("default requirement %d", i), r.Key, r.Operator, r.Values)
		if err != nil {
			return err
		}
		pool.Requirements = append(pool.Requirements, req)
	}
	if note != "" {
		m.warnf(where, "%s: %s", label, note)
	}
	return nil
}

// poolRequirement converts a pool's requirement for the solver, reading
// Karpenter v1.15's Gte and Lte as the equivalent Gt and Lt on integers.
func poolRequirement(path string, r requirement) (solver.Requirement, error) {
	r, _, err := r.WithoutInclusiveOperators()
	if err != nil {
		return solver.Requirement{}, fmt.Errorf("%s: %w", path, err)
	}
	return nodeRequirement(path, r.Key, r.Operator, r.Values)
}

// noProvisionerFields rejects v1alpha5 Provisioner fields in a NodePool.
func noProvisionerFields(s *poolSpec) error {
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"labels", s.Labels != nil},
		{"annotations", s.Annotations != nil},
		{"requirements", s.Requirements != nil},
		{"taints", s.Taints != nil},
		{"startupTaints", s.StartupTaints != nil},
		{"providerRef", s.ProviderRef != nil},
		{"provider", s.Provider != nil},
		{"kubeletConfiguration", s.KubeletConfiguration != nil},
		{"consolidation", s.Consolidation != nil},
		{"ttlSecondsAfterEmpty", s.TTLSecondsAfterEmpty != nil},
		{"ttlSecondsUntilExpired", s.TTLSecondsUntilExpired != nil},
	} {
		if f.set {
			return fmt.Errorf("spec.%s: a v1alpha5 Provisioner field, not a NodePool one (NodePools use spec.template)", f.name)
		}
	}
	return nil
}

// limits reads spec.limits: a resource list, or {resources: list} for a
// Provisioner.
func (m *Manifests) limits(pool *solver.Pool, raw map[string]json.RawMessage, provisioner bool) error {
	path := "spec.limits"
	if res, ok := raw["resources"]; ok {
		if !provisioner {
			return errors.New("spec.limits.resources: a v1alpha5 Provisioner field; a NodePool's spec.limits is the resource list itself")
		}
		if len(raw) > 1 {
			return errors.New("spec.limits: resources and resource names must not be mixed")
		}
		path += ".resources"
		raw = nil
		if err := json.Unmarshal(res, &raw); err != nil {
			return fmt.Errorf("%s: expected a resource list: %w", path, err)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		p, name := path+"."+key, key
		if key == "nodes" {
			name = NodeCountResource
		} else if !poolResource(key) {
			return fmt.Errorf("%s: unsupported resource %q", path, key)
		}
		var q resource.Quantity
		if err := json.Unmarshal(raw[key], &q); err != nil {
			return fmt.Errorf("%s: invalid quantity %s", p, raw[key])
		}
		i, ok, err := m.index(name)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if !ok {
			continue
		}
		if pool.Limits[i], err = value(&q, i == solver.CPU); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		pool.HasLimit[i] = true
	}
	return nil
}

// taints validates and appends taints.
func taints(path string, out []solver.Taint, in []corev1.Taint) ([]solver.Taint, error) {
	for i, t := range in {
		p := fmt.Sprintf("%s[%d]", path, i)
		if t.Key == "" {
			return nil, fmt.Errorf("%s.key: required", p)
		}
		if err := checkEffect(p+".effect", t.Effect); err != nil {
			return nil, err
		}
		out = append(out, solver.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	return out, nil
}

// checkDisruption validates spec.disruption.
func (m *Manifests) checkDisruption(where string, d *poolDisruptionSpec) error {
	if d == nil {
		return nil
	}
	switch d.ConsolidationPolicy {
	case "", "WhenEmpty", "WhenEmptyOrUnderutilized", "WhenUnderutilized", karpenter.ConsolidationPolicyBalanced:
	default:
		return fmt.Errorf("spec.disruption.consolidationPolicy: unsupported value %q (want WhenEmpty, WhenEmptyOrUnderutilized or Balanced)", d.ConsolidationPolicy)
	}
	if err := checkDuration("spec.disruption.consolidateAfter", d.ConsolidateAfter); err != nil {
		return err
	}
	if err := checkDuration("spec.disruption.expireAfter", d.ExpireAfter); err != nil {
		return err
	}
	for i, b := range d.Budgets {
		p := fmt.Sprintf("spec.disruption.budgets[%d]", i)
		if _, _, err := v1alpha1.ParseBudgetNodes(b.Nodes); err != nil {
			return fmt.Errorf("%s.nodes: %w", p, err)
		}
		if b.Schedule != nil {
			if _, err := v1alpha1.ParseBudgetSchedule(*b.Schedule); err != nil {
				return fmt.Errorf("%s.schedule: %w", p, err)
			}
		}
		if b.Duration != "" {
			if err := v1alpha1.CheckBudgetDuration(b.Duration); err != nil {
				return fmt.Errorf("%s.duration: %w", p, err)
			}
		}
		if b.Duration != "" && b.Schedule == nil {
			m.warnf(where, "%s: duration without schedule; Karpenter rejects this budget", p)
		}
	}
	return nil
}

// checkDuration accepts "", "Never" and Go durations.
func checkDuration(path, d string) error {
	if d == "" || d == "Never" {
		return nil
	}
	if v, err := time.ParseDuration(d); err != nil || v < 0 {
		return fmt.Errorf("%s: want a duration such as 720h or Never, got %q", path, d)
	}
	return nil
}

// decodeNodeClass reads an EC2NodeClass and records its name.
func (m *Manifests) decodeNodeClass(where, apiVersion string, j []byte, generic any) error {
	var o ec2NodeClass
	if err := m.decodeFields(j, &o, generic); err != nil {
		return err
	}
	if o.Metadata.Name == "" {
		return errors.New("metadata.name is required")
	}
	if apiVersion == "karpenter.sh/v1alpha5" {
		m.warnf(where, "EC2NodeClass %q: apiVersion karpenter.sh/v1alpha5 never had EC2NodeClass; karpenter.k8s.aws/v1 is right (read anyway)", o.Metadata.Name)
	}
	key := classKey{schema.FromAPIVersionAndKind(apiVersion, "EC2NodeClass").Group, "EC2NodeClass", o.Metadata.Name}
	m.setClassStorage(key, classStorage(o.Spec.InstanceStorePolicy, rootVolumeSize(o.Spec.BlockDeviceMappings)))
	if err := m.setClassKubelet(where, key, o.Spec.Kubelet); err != nil {
		return err
	}
	m.NodeClasses = append(m.NodeClasses, o.Metadata.Name)
	label := fmt.Sprintf("EC2NodeClass %q", o.Metadata.Name)
	for _, f := range []struct {
		field, why string
		set        bool
	}{
		{"capacityReservationSelectorTerms", "capacity reservations are not planned; only on-demand and spot offerings are", o.Spec.CapacityReservationSelectorTerms != nil},
		{"cpuOptions", "instance types are not filtered for nested virtualization", o.Spec.CPUOptions != nil},
	} {
		if f.set {
			m.warnf(where, "%s: spec.%s is not planned: %s", label, f.field, f.why)
		}
	}
	return nil
}

// PodDoNotDisrupt reports whether a pod's do-not-disrupt annotation keeps
// consolidation away at now: "true" always (see DoNotDisrupt), and, as
// Karpenter v1.15 reads karpenter.sh/do-not-disrupt, a duration such as
// "5m" until the pod has run that long since status.startTime (always when
// the pod has not started). Other values protect nothing, as in Karpenter.
func PodDoNotDisrupt(pod *corev1.Pod, now time.Time) bool {
	if DoNotDisrupt(pod.Annotations) {
		return true
	}
	v, ok := pod.Annotations[AnnotationDoNotDisrupt]
	if !ok {
		return false
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return false
	}
	start := pod.Status.StartTime
	return start == nil || now.Sub(start.Time) < d
}
