package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// Lint checks rendered manifests against what a cluster administrator should
// be able to take for granted of the operator's install, and returns every
// finding joined into one error (nil when there is none):
//
//   - no container is privileged, may escalate privileges, keeps a capability,
//     writes its root filesystem, runs as root or without the RuntimeDefault
//     seccomp profile; no pod uses the host's network, PID or IPC namespaces
//     or a hostPath volume;
//   - every container has liveness and readiness probes, and CPU and memory
//     requests and limits;
//   - no RBAC rule has a wildcard verb, resource or API group, reads secrets,
//     or grants escalate, bind or impersonate; nothing is bound to the
//     built-in cluster-admin, admin or edit roles; no rule grants the status
//     of nodes, or any Lease verb but create without naming the Lease;
//   - the Deployment runs two replicas with leader election, spread across
//     zones and, hard, across nodes, under a PriorityClass (of the set, or a
//     built-in system-* one) and a PodDisruptionBudget of the same set, as a
//     ServiceAccount the set binds.
func Lint(manifests []byte) error {
	objs, err := decodeAll(manifests)
	if err != nil {
		return err
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	var (
		deployments     []*appsv1.Deployment
		priorityClasses = map[string]bool{}
		pdbs            []*policyv1.PodDisruptionBudget
		serviceAccounts = map[string]bool{}
		boundAccounts   = map[string]bool{}
	)
	for _, obj := range objs {
		switch o := obj.(type) {
		case *appsv1.Deployment:
			deployments = append(deployments, o)
		case *schedulingv1.PriorityClass:
			priorityClasses[o.Name] = true
		case *policyv1.PodDisruptionBudget:
			pdbs = append(pdbs, o)
		case *corev1.ServiceAccount:
			serviceAccounts[o.Namespace+"/"+o.Name] = true
		case *rbacv1.ClusterRole:
			lintRules("ClusterRole "+o.Name, o.Rules, fail)
		case *rbacv1.Role:
			lintRules("Role "+o.Namespace+"/"+o.Name, o.Rules, fail)
		case *rbacv1.ClusterRoleBinding:
			lintBinding("ClusterRoleBinding "+o.Name, o.RoleRef, o.Subjects, boundAccounts, fail)
		case *rbacv1.RoleBinding:
			lintBinding("RoleBinding "+o.Namespace+"/"+o.Name, o.RoleRef, o.Subjects, boundAccounts, fail)
		}
	}
	if len(deployments) == 0 {
		fail("no Deployment: the operator does not run")
	}
	for _, d := range deployments {
		name := "Deployment " + d.Namespace + "/" + d.Name
		spec := d.Spec.Template.Spec
		lintPod(name, &spec, fail)
		if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
			fail("%s: fewer than 2 replicas", name)
		}
		for _, c := range spec.Containers {
			if !slices.Contains(c.Args, "--leader-elect") && !slices.Contains(c.Args, "--leader-elect=true") {
				fail("%s: container %s runs without --leader-elect", name, c.Name)
			}
		}
		if !slices.ContainsFunc(spec.TopologySpreadConstraints, func(t corev1.TopologySpreadConstraint) bool {
			return t.TopologyKey == corev1.LabelTopologyZone
		}) {
			fail("%s: no topology spread across zones", name)
		}
		if !slices.ContainsFunc(spec.TopologySpreadConstraints, func(t corev1.TopologySpreadConstraint) bool {
			return t.TopologyKey == corev1.LabelHostname && t.WhenUnsatisfiable == corev1.DoNotSchedule && t.MaxSkew == 1
		}) {
			fail("%s: replicas may share a node (no DoNotSchedule topology spread with maxSkew 1 across %s)", name, corev1.LabelHostname)
		}
		if spec.PriorityClassName == "" || !priorityClasses[spec.PriorityClassName] && !strings.HasPrefix(spec.PriorityClassName, "system-") {
			fail("%s: priority class %q is not in the manifests", name, spec.PriorityClassName)
		}
		sa := d.Namespace + "/" + spec.ServiceAccountName
		if spec.ServiceAccountName == "" || !serviceAccounts[sa] || !boundAccounts[sa] {
			fail("%s: service account %q is missing or bound to no role", name, spec.ServiceAccountName)
		}
		podLabels := labels.Set(d.Spec.Template.Labels)
		if !slices.ContainsFunc(pdbs, func(p *policyv1.PodDisruptionBudget) bool {
			s, err := pdbSelector(p)
			return err == nil && p.Namespace == d.Namespace && s.Matches(podLabels)
		}) {
			fail("%s: no PodDisruptionBudget selects its pods", name)
		}
	}
	return errors.Join(errs...)
}

func lintPod(name string, spec *corev1.PodSpec, fail func(string, ...any)) {
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		fail("%s: uses a host namespace", name)
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			fail("%s: mounts hostPath %s", name, v.HostPath.Path)
		}
	}
	psc := spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	all := append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...)
	for i, c := range all {
		cn := fmt.Sprintf("%s: container %s", name, c.Name)
		sc := c.SecurityContext
		if sc == nil {
			sc = &corev1.SecurityContext{}
		}
		if sc.Privileged != nil && *sc.Privileged {
			fail("%s is privileged", cn)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			fail("%s may escalate privileges (set allowPrivilegeEscalation: false)", cn)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			fail("%s can write its root filesystem", cn)
		}
		if !isTrue(sc.RunAsNonRoot, psc.RunAsNonRoot) {
			fail("%s may run as root (set runAsNonRoot: true)", cn)
		}
		if u := firstInt(sc.RunAsUser, psc.RunAsUser); u != nil && *u == 0 {
			fail("%s runs as UID 0", cn)
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			fail("%s does not drop ALL capabilities", cn)
		} else if len(sc.Capabilities.Add) > 0 {
			fail("%s adds capabilities %v", cn, sc.Capabilities.Add)
		}
		seccomp := sc.SeccompProfile
		if seccomp == nil {
			seccomp = psc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			fail("%s has no RuntimeDefault seccomp profile", cn)
		}
		if i >= len(spec.InitContainers) { // init containers need no probes
			if c.LivenessProbe == nil {
				fail("%s has no liveness probe", cn)
			}
			if c.ReadinessProbe == nil {
				fail("%s has no readiness probe", cn)
			}
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := c.Resources.Requests[r]; !ok {
				fail("%s has no %s request", cn, r)
			}
			if _, ok := c.Resources.Limits[r]; !ok {
				fail("%s has no %s limit", cn, r)
			}
		}
	}
}

// Verbs that hand out more than the rule's own resources.
var escalatingVerbs = []string{"escalate", "bind", "impersonate"}

func lintRules(name string, rules []rbacv1.PolicyRule, fail func(string, ...any)) {
	for i, r := range rules {
		rn := fmt.Sprintf("%s rule %d", name, i)
		if slices.Contains(r.Verbs, "*") {
			fail("%s: wildcard verb", rn)
		}
		if slices.Contains(r.Resources, "*") || slices.ContainsFunc(r.Resources, func(s string) bool { return strings.HasSuffix(s, "/*") }) {
			fail("%s: wildcard resource", rn)
		}
		if slices.Contains(r.APIGroups, "*") {
			fail("%s: wildcard API group", rn)
		}
		if slices.Contains(r.NonResourceURLs, "*") {
			fail("%s: wildcard non-resource URL", rn)
		}
		if slices.Contains(r.Resources, "secrets") {
			fail("%s: grants access to secrets", rn)
		}
		if slices.Contains(r.Resources, "nodes/status") {
			fail("%s: grants nodes/status, which kubelets write", rn)
		}
		if slices.Contains(r.APIGroups, "coordination.k8s.io") && slices.Contains(r.Resources, "leases") && len(r.ResourceNames) == 0 &&
			slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "create" }) {
			fail("%s: may %s any Lease (name the operator's own in resourceNames; only create cannot be limited so)", rn, strings.Join(r.Verbs, ", "))
		}
		for _, v := range escalatingVerbs {
			if slices.Contains(r.Verbs, v) {
				fail("%s: grants %s", rn, v)
			}
		}
	}
}

func lintBinding(name string, ref rbacv1.RoleRef, subjects []rbacv1.Subject, bound map[string]bool, fail func(string, ...any)) {
	if ref.Kind == "ClusterRole" && slices.Contains([]string{"cluster-admin", "admin", "edit"}, ref.Name) {
		fail("%s: binds the built-in %s role", name, ref.Name)
	}
	for _, s := range subjects {
		if s.Kind == rbacv1.ServiceAccountKind {
			bound[s.Namespace+"/"+s.Name] = true
		}
	}
}

// decodeAll decodes a multi-document YAML stream into typed objects; kinds
// client-go does not know (CRDs, custom resources) are skipped.
func decodeAll(manifests []byte) ([]runtime.Object, error) {
	decoder := serializer.NewCodecFactory(scheme.Scheme).UniversalDeserializer()
	r := utilyaml.NewYAMLReader(bufioReader(manifests))
	var objs []runtime.Object
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the manifests: %w", err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if runtime.IsNotRegisteredError(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("decoding a manifest: %w", err)
		}
		objs = append(objs, obj)
	}
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// isTrue is the effective value of a container setting that falls back to
// the pod's.
func isTrue(container, pod *bool) bool {
	if container != nil {
		return *container
	}
	return pod != nil && *pod
}

func firstInt(container, pod *int64) *int64 {
	if container != nil {
		return container
	}
	return pod
}

func pdbSelector(p *policyv1.PodDisruptionBudget) (labels.Selector, error) {
	if p.Spec.Selector == nil {
		return labels.Nothing(), nil
	}
	return metav1.LabelSelectorAsSelector(p.Spec.Selector)
}
