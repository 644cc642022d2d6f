package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/karpenter"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
)

// operatorLabels are set by the operator on every node; a template may
// neither set nor require them.
var operatorLabels = []string{v1alpha1.LabelNodePool, v1alpha1.KarpenterLabelNodePool, corev1.LabelHostname}

// pool converts a Provisioner or NodePool.
func (c *converter) pool(where, kind, apiVersion string, j []byte) error {
	var o karpenter.Pool
	if err := snapshot.DecodeStrict(j, &o); err != nil {
		return err
	}
	name := o.Metadata.Name
	if name == "" {
		return errors.New("metadata.name is required")
	}
	where = fmt.Sprintf("%s: %s %q", where, kind, name)
	s := &o.Spec
	if err := karpenter.CheckStatic(s); err != nil {
		return err
	}
	provisioner := kind == karpenter.KindProvisioner
	np := &v1alpha1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "NodePool"},
		ObjectMeta: objectMeta(o.Metadata),
	}
	if provisioner && (s.Template != nil || s.Disruption != nil) {
		c.warnf(where, "mixes the v1alpha5 Provisioner layout with NodePool fields (spec.template, spec.disruption); both are read")
	}
	tmpl := &np.Spec.Template
	spec := &tmpl.Spec

	sources := poolSources(s)
	minValues, err := c.addSources(where, tmpl, sources)
	if err != nil {
		return err
	}
	if provisioner {
		c.addProvisionerDefaults(where, spec, sources)
	}
	if minValues {
		c.warnf(where, "requirements: minValues kept, but the planner does not enforce it yet")
	}
	if provisioner {
		if v, ok := tmpl.Labels[v1alpha1.KarpenterLabelProvisionerName]; ok && v != name {
			c.warnf(where, "label %s: %s replaced by %s, the value Karpenter puts on the Provisioner's nodes", v1alpha1.KarpenterLabelProvisionerName, v, name)
		}
		if tmpl.Labels == nil {
			tmpl.Labels = map[string]string{}
		}
		// Karpenter labels a Provisioner's nodes with its name; workloads
		// select it (the seed's memory-hog does).
		tmpl.Labels[v1alpha1.KarpenterLabelProvisionerName] = name
	}

	if err := c.nodeClassRef(where, name, s, np); err != nil {
		return err
	}
	if err := c.poolTemplateSpec(where, provisioner, s, spec); err != nil {
		return err
	}
	if err := c.poolKubelet(where, s, np); err != nil {
		return err
	}
	limits, err := limits(s.Limits)
	if err != nil {
		return err
	}
	np.Spec.Limits = limits
	np.Spec.Weight = s.Weight
	// A static pool (Karpenter v1.15) stays static: the operator keeps
	// its count (pkg/operator/static); CheckStatic refused what Karpenter
	// refuses beside replicas.
	np.Spec.Replicas = s.Replicas
	if err := c.disruption(where, apiVersion, provisioner, s, &np.Spec.Disruption); err != nil {
		return err
	}
	// Nothing is printed that the API server would refuse (or the
	// operator could not read); budget fields were checked above with
	// their source paths, this catches the rest (spec.weight).
	if err := np.Validate(); err != nil {
		return err
	}
	return c.add(where, np, "NodePool", name)
}

// poolSource is one layout's labels, annotations, requirements and taints
// in a pool: the flat v1alpha5 spec or a NodePool's spec.template.
type poolSource struct {
	path                  string
	labels, annotations   map[string]string
	reqs                  []karpenter.Requirement
	taints, startupTaints []corev1.Taint
}

// poolSources lists the layouts of s: spec always, then spec.template when
// there is one.
func poolSources(s *karpenter.PoolSpec) []poolSource {
	sources := []poolSource{{"spec", s.Labels, s.Annotations, s.Requirements, s.Taints, s.StartupTaints}}
	if t := s.Template; t != nil {
		sources = append(sources, poolSource{"spec.template", t.Metadata.Labels, t.Metadata.Annotations, t.Spec.Requirements, t.Spec.Taints, t.Spec.StartupTaints})
	}
	return sources
}

// addSources copies each source's labels, annotations, requirements and
// taints into tmpl in order, dropping (with a warning) the labels and
// requirements the operator sets itself and turning Gte and Lte into Gt
// and Lt. It reports whether any requirement has minValues.
func (c *converter) addSources(where string, tmpl *v1alpha1.NodeClaimTemplate, sources []poolSource) (minValues bool, err error) {
	spec := &tmpl.Spec
	for _, src := range sources {
		for _, k := range slices.Sorted(maps.Keys(src.labels)) {
			if slices.Contains(operatorLabels, k) {
				c.warnf(where, "%s: label %s dropped: the operator sets it on every node", labelsPath(src.path), k)
				continue
			}
			if tmpl.Labels == nil {
				tmpl.Labels = map[string]string{}
			}
			tmpl.Labels[k] = src.labels[k]
		}
		if len(src.annotations) > 0 {
			if tmpl.Annotations == nil {
				tmpl.Annotations = map[string]string{}
			}
			maps.Copy(tmpl.Annotations, src.annotations)
		}
		reqPath := "spec.requirements"
		if src.path != "spec" {
			reqPath = src.path + ".spec.requirements"
		}
		for i, r := range src.reqs {
			if slices.Contains(operatorLabels, r.Key) {
				c.warnf(where, "%s[%d]: requirement on %s dropped: the operator sets that label itself", reqPath, i, r.Key)
				continue
			}
			r, changed, err := r.WithoutInclusiveOperators()
			if err != nil {
				return false, fmt.Errorf("%s[%d]: %w", reqPath, i, err)
			}
			if changed {
				c.warnf(where, "%s[%d]: %s %s became %s %s, the same bound on an integer label (rightsize.dev has no %s)", reqPath, i, src.reqs[i].Operator, src.reqs[i].Values[0], r.Operator, r.Values[0], src.reqs[i].Operator)
			}
			minValues = minValues || r.MinValues != nil
			spec.Requirements = append(spec.Requirements, v1alpha1.NodeSelectorRequirement{
				Key:       r.Key,
				Operator:  v1alpha1.NodeSelectorOperator(r.Operator),
				Values:    slices.Clone(r.Values),
				MinValues: r.MinValues,
			})
		}
		spec.Taints = append(spec.Taints, src.taints...)
		spec.StartupTaints = append(spec.StartupTaints, src.startupTaints...)
	}
	return minValues, nil
}

// addProvisionerDefaults adds to spec the requirements a v1alpha5
// Provisioner gets by default where its sources leave them out, warning
// with Karpenter's note when there is one.
func (c *converter) addProvisionerDefaults(where string, spec *v1alpha1.NodeClaimTemplateSpec, sources []poolSource) {
	var given [][]karpenter.Requirement
	for _, src := range sources {
		given = append(given, src.reqs)
	}
	defaults, note := karpenter.ProvisionerDefaults(given...)
	for _, r := range defaults {
		spec.Requirements = append(spec.Requirements, v1alpha1.NodeSelectorRequirement{
			Key: r.Key, Operator: v1alpha1.NodeSelectorOperator(r.Operator), Values: r.Values,
		})
	}
	if note != "" {
		c.warnf(where, "%s", strings.Replace(note, "planned with", "given", 1))
	}
}

func labelsPath(src string) string {
	if src == "spec" {
		return "spec.labels"
	}
	return src + ".metadata.labels"
}

// nodeClassRef sets the pool's node class reference from
// spec.template.spec.nodeClassRef, spec.providerRef or an inline
// spec.provider (converted to an EC2NodeClass named after the pool).
func (c *converter) nodeClassRef(where, name string, s *karpenter.PoolSpec, np *v1alpha1.NodePool) error {
	ref := &np.Spec.Template.Spec.NodeClassRef
	ref.Group = v1alpha1.Group
	ref.Kind = "EC2NodeClass"
	var from *karpenter.NodeClassRef
	path := "spec.template.spec.nodeClassRef"
	switch {
	case s.Template != nil && s.Template.Spec.NodeClassRef != nil:
		from = s.Template.Spec.NodeClassRef
		if s.ProviderRef != nil || s.Provider != nil {
			return errors.New("spec.template.spec.nodeClassRef and spec.providerRef or spec.provider are both set; keep one")
		}
	case s.ProviderRef != nil:
		from, path = s.ProviderRef, "spec.providerRef"
		if s.Provider != nil {
			return errors.New("spec.providerRef and spec.provider are both set; keep one")
		}
		c.warnf(where, "spec.providerRef became spec.template.spec.nodeClassRef")
	case s.Provider != nil:
		var p karpenter.AWSProvider
		if err := snapshot.DecodeStrict(s.Provider, &p); err != nil {
			return fmt.Errorf("spec.provider: %w", err)
		}
		class, err := c.fromAWSProvider(where, "spec.provider", name, p)
		if err != nil {
			return fmt.Errorf("spec.provider: %w", err)
		}
		if err := c.add(where, class, "EC2NodeClass", name); err != nil {
			return err
		}
		c.warnf(where, "spec.provider became EC2NodeClass %q, which spec.template.spec.nodeClassRef names", name)
		ref.Name = name
		return nil
	default:
		ref.Name = "default"
		c.warnf(where, "no nodeClassRef, providerRef or provider: spec.template.spec.nodeClassRef names EC2NodeClass \"default\"; change it if that is not the one")
		return nil
	}
	if from.Name == "" {
		return fmt.Errorf("%s.name: required", path)
	}
	ref.Name = from.Name
	group := from.Group
	if g, version, ok := strings.Cut(group, "/"); ok && g == "karpenter.k8s.aws" {
		// karpenter-provider-aws's own examples/v1/windows-custom-userdata.yaml
		// has group: karpenter.k8s.aws/v1.
		c.warnf(where, "%s.group: %s read as %s: a group has no version (%s), and Karpenter's API server rejects a group with a slash", path, group, g, version)
		group = g
	}
	if group == "" && from.APIVersion != "" {
		group, _, _ = strings.Cut(from.APIVersion, "/")
	}
	switch from.Kind {
	case "":
		if from == s.ProviderRef {
			break // a providerRef's kind defaults to AWSNodeTemplate
		}
		c.warnf(where, "%s has no kind: EC2NodeClass %q assumed", path, from.Name)
	case "EC2NodeClass", "AWSNodeTemplate":
		if from.Kind == "AWSNodeTemplate" {
			c.warnf(where, "%s: AWSNodeTemplate %q is imported as EC2NodeClass %q", path, from.Name, from.Name)
		}
	default:
		return fmt.Errorf("%s.kind: %s cannot be imported; only AWS node classes (EC2NodeClass, AWSNodeTemplate) can", path, from.Kind)
	}
	if group != "" && group != "karpenter.k8s.aws" {
		return fmt.Errorf("%s: group %s cannot be imported; only karpenter.k8s.aws node classes can", path, group)
	}
	return nil
}

// poolTemplateSpec sets expireAfter and terminationGracePeriod and reports
// the fields that do not carry over.
func (c *converter) poolTemplateSpec(where string, provisioner bool, s *karpenter.PoolSpec, spec *v1alpha1.NodeClaimTemplateSpec) error {
	var expire, from string
	if t := s.Template; t != nil {
		expire, from = t.Spec.ExpireAfter, "spec.template.spec.expireAfter"
		if t.Spec.TerminationGracePeriod != "" {
			d, err := normalizeDuration("spec.template.spec.terminationGracePeriod", t.Spec.TerminationGracePeriod, false)
			if err != nil {
				return err
			}
			dd, _, _ := v1alpha1.NillableDuration(d).Duration()
			spec.TerminationGracePeriod = &metav1.Duration{Duration: dd}
		}
		if t.Spec.Resources != nil {
			c.warnf(where, "spec.template.spec.resources dropped: NodePool templates have no resources in Karpenter v1")
		}
	}
	if d := s.Disruption; d != nil && d.ExpireAfter != "" {
		if expire != "" {
			return errors.New("spec.disruption.expireAfter and spec.template.spec.expireAfter are both set; keep one")
		}
		expire, from = d.ExpireAfter, "spec.disruption.expireAfter"
		c.warnf(where, "spec.disruption.expireAfter moved to spec.template.spec.expireAfter")
	}
	if s.TTLSecondsUntilExpired != nil {
		if expire != "" {
			return fmt.Errorf("spec.ttlSecondsUntilExpired and %s are both set; keep one", from)
		}
		expire, from = seconds(*s.TTLSecondsUntilExpired), "spec.ttlSecondsUntilExpired"
		c.warnf(where, "spec.ttlSecondsUntilExpired: %d became spec.template.spec.expireAfter: %s", *s.TTLSecondsUntilExpired, mustNormalize(expire))
	}
	switch {
	case expire != "":
		d, err := normalizeDuration(from, expire, true)
		if err != nil {
			return err
		}
		spec.ExpireAfter = v1alpha1.NillableDuration(d)
	case provisioner:
		// A v1alpha5 Provisioner's nodes never expire unless
		// ttlSecondsUntilExpired is set; NodePools default to 720h.
		spec.ExpireAfter = v1alpha1.Never
		c.warnf(where, "no expiry: spec.template.spec.expireAfter: Never, as a v1alpha5 Provisioner's nodes never expire (NodePools default to 720h)")
	}
	return nil
}

// limits reads spec.limits: a resource list, or {resources: list} for a
// Provisioner.
func limits(raw map[string]json.RawMessage) (corev1.ResourceList, error) {
	path := "spec.limits"
	if res, ok := raw["resources"]; ok {
		if len(raw) > 1 {
			return nil, errors.New("spec.limits: resources and resource names must not be mixed")
		}
		path += ".resources"
		raw = nil
		if err := json.Unmarshal(res, &raw); err != nil {
			return nil, fmt.Errorf("%s: expected a resource list", path)
		}
	}
	if len(raw) == 0 {
		return nil, nil
	}
	out := corev1.ResourceList{}
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		var q resource.Quantity
		if err := json.Unmarshal(raw[name], &q); err != nil {
			return nil, fmt.Errorf("%s.%s: invalid quantity %s", path, name, raw[name])
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// disruption converts spec.disruption, or a v1alpha5 Provisioner's
// consolidation and ttlSecondsAfterEmpty.
func (c *converter) disruption(where, apiVersion string, provisioner bool, s *karpenter.PoolSpec, out *v1alpha1.Disruption) error {
	d := s.Disruption
	if s.Consolidation != nil || s.TTLSecondsAfterEmpty != nil {
		if d != nil {
			return errors.New("spec.disruption and spec.consolidation or spec.ttlSecondsAfterEmpty are both set; keep one")
		}
		enabled := s.Consolidation != nil && s.Consolidation.Enabled != nil && *s.Consolidation.Enabled
		switch {
		case enabled && s.TTLSecondsAfterEmpty != nil:
			return errors.New("spec.consolidation.enabled and spec.ttlSecondsAfterEmpty are both set; Karpenter rejects that, keep one")
		case enabled:
			out.ConsolidationPolicy = v1alpha1.ConsolidationPolicyWhenEmptyOrUnderutilized
			out.ConsolidateAfter = "0s"
			c.warnf(where, "spec.consolidation.enabled: true became spec.disruption.consolidationPolicy: WhenEmptyOrUnderutilized with consolidateAfter: 0s")
			return nil
		case s.TTLSecondsAfterEmpty != nil:
			out.ConsolidationPolicy = v1alpha1.ConsolidationPolicyWhenEmpty
			d, err := normalizeDuration("spec.ttlSecondsAfterEmpty", seconds(*s.TTLSecondsAfterEmpty), false)
			if err != nil {
				return err
			}
			out.ConsolidateAfter = v1alpha1.NillableDuration(d)
			c.warnf(where, "spec.ttlSecondsAfterEmpty: %d became spec.disruption.consolidationPolicy: WhenEmpty with consolidateAfter: %s", *s.TTLSecondsAfterEmpty, d)
			return nil
		}
		// consolidation.enabled: false is the same as no consolidation.
	}
	if d == nil {
		if provisioner {
			out.ConsolidationPolicy = v1alpha1.ConsolidationPolicyWhenEmpty
			out.ConsolidateAfter = v1alpha1.Never
			c.warnf(where, "no consolidation: spec.disruption.consolidateAfter: Never keeps it off, as in a v1alpha5 Provisioner (NodePools consolidate by default)")
		}
		return nil
	}
	switch d.ConsolidationPolicy {
	case "":
	case "WhenEmpty", "WhenEmptyOrUnderutilized", karpenter.ConsolidationPolicyBalanced:
		out.ConsolidationPolicy = v1alpha1.ConsolidationPolicy(d.ConsolidationPolicy)
	case "WhenUnderutilized":
		out.ConsolidationPolicy = v1alpha1.ConsolidationPolicyWhenEmptyOrUnderutilized
		c.warnf(where, "spec.disruption.consolidationPolicy: WhenUnderutilized became WhenEmptyOrUnderutilized, its Karpenter v1 name")
	default:
		return fmt.Errorf("spec.disruption.consolidationPolicy: unsupported value %q (want WhenEmpty, WhenEmptyOrUnderutilized or Balanced)", d.ConsolidationPolicy)
	}
	if d.ConsolidateAfter != "" {
		v, err := normalizeDuration("spec.disruption.consolidateAfter", d.ConsolidateAfter, true)
		if err != nil {
			return err
		}
		out.ConsolidateAfter = v1alpha1.NillableDuration(v)
	}
	for i, b := range d.Budgets {
		p := fmt.Sprintf("spec.disruption.budgets[%d]", i)
		hasSchedule, hasDuration := b.Schedule != nil && *b.Schedule != "", b.Duration != ""
		if hasSchedule != hasDuration {
			what := "a duration (" + b.Duration + ") without a schedule"
			if hasSchedule {
				what = "a schedule (" + *b.Schedule + ") without a duration"
			}
			c.warnf(where, "%s dropped: %s, which Karpenter rejects", p, what)
			continue
		}
		if _, _, err := v1alpha1.ParseBudgetNodes(b.Nodes); err != nil {
			return fmt.Errorf("%s.nodes: %w", p, err)
		}
		nb := v1alpha1.Budget{Nodes: b.Nodes}
		if hasSchedule {
			if _, err := v1alpha1.ParseBudgetSchedule(*b.Schedule); err != nil {
				return fmt.Errorf("%s.schedule: %w", p, err)
			}
			nb.Schedule = new(*b.Schedule)
			v, err := normalizeDuration(p+".duration", b.Duration, false)
			if err != nil {
				return err
			}
			dd, _, _ := v1alpha1.NillableDuration(v).Duration()
			if dd%time.Minute != 0 {
				return fmt.Errorf("%s.duration: %s is not a whole number of minutes", p, b.Duration)
			}
			nb.Duration = &metav1.Duration{Duration: dd}
		}
		for _, r := range b.Reasons {
			nb.Reasons = append(nb.Reasons, v1alpha1.DisruptionReason(r))
		}
		out.Budgets = append(out.Budgets, nb)
	}
	if len(d.Budgets) > 0 && len(out.Budgets) == 0 {
		c.warnf(where, "spec.disruption.budgets: none left, so the default budget (10%% of the nodes at a time) applies")
	}
	return nil
}

// objectMeta keeps the name, labels and annotations of a Karpenter object.
func objectMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Labels: maps.Clone(m.Labels)}
	for k, v := range m.Annotations {
		if k == corev1.LastAppliedConfigAnnotation {
			continue
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[k] = v
	}
	return out
}
