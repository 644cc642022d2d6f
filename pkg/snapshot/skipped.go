package snapshot

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// inertKinds are kinds that cannot change where pods go or how many there
// are: skipping them needs no warning of its own, only a count.
var inertKinds = setOf(
	"APIService", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "CustomResourceDefinition",
	"Endpoints", "EndpointSlice", "Ingress", "IngressClass", "MutatingWebhookConfiguration",
	"Namespace", "NetworkPolicy", "PodDisruptionBudget", "PodMonitor", "PriorityClass",
	"PrometheusRule", "Probe", "Role", "RoleBinding", "Secret", "Service", "ServiceAccount",
	"ServiceMonitor", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
	"ValidatingWebhookConfiguration", "VolumeSnapshotClass",
)

// operatorKinds are custom resources from which an operator creates pods;
// those pods are not in the input, so they are not planned.
var operatorKinds = setOf(
	"Alertmanager", "Prometheus", "PrometheusAgent", "ThanosRuler", // prometheus-operator
	"ArgoCD", "Rollout", "Workflow", "CronWorkflow", // argo
	"Kafka", "Elasticsearch", "Kibana", "Cluster", "Postgresql", "RedisFailover", "Flink", "SparkApplication",
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// skipped records the objects Read does not plan, to report them in a few
// lines rather than one each.
type skipped struct {
	inert    map[string]int // kind -> objects
	operated []string       // `Kind "name"` of each custom resource that runs pods
	kinds    map[string]int // kind -> objects, of every skipped kind
}

// list names the skipped objects by kind, "3 CustomResourceDefinition,
// 1 Service", for an input that holds nothing to plan.
func (s *skipped) list() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s.kinds)) {
		parts = append(parts, fmt.Sprintf("%d %s", s.kinds[k], k))
	}
	return strings.Join(parts, ", ")
}

// skip records an object of a kind that is not read: inert kinds are
// counted, custom resources that run pods through an operator are named
// later in one line, and any other kind is warned about now, since it
// might have scheduled pods.
func (m *Manifests) skip(where, kind, label string) {
	if m.skipped.kinds == nil {
		m.skipped.kinds = map[string]int{}
	}
	m.skipped.kinds[kind]++
	switch {
	case inertKinds[kind]:
		if m.skipped.inert == nil {
			m.skipped.inert = map[string]int{}
		}
		m.skipped.inert[kind]++
	case operatorKinds[kind]:
		m.skipped.operated = append(m.skipped.operated, label)
	case kind == "NodeClaim":
		m.warnf(where, "%s skipped: a NodeClaim is a node launched or launching, and explain -f plans on manifests alone, with no existing nodes", label)
	default:
		m.warnf(where, "kind %s skipped: not supported", kind)
	}
}

// summary returns the warnings that sum the skipped objects up.
func (s *skipped) summary() []string {
	var out []string
	if len(s.inert) > 0 {
		n := 0
		for _, c := range s.inert {
			n += c
		}
		out = append(out, fmt.Sprintf("skipped %d object(s) of %d kind(s) that do not schedule pods (%s)",
			n, len(s.inert), strings.Join(slices.Sorted(maps.Keys(s.inert)), ", ")))
	}
	if len(s.operated) > 0 {
		out = append(out, fmt.Sprintf("not planned: %s run pods through an operator; their pods are not in the input (render or list them to plan them)",
			strings.Join(s.operated, ", ")))
	}
	return out
}
