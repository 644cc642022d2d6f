package snapshot

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// checkContainers validates the containers' resources and applies the API
// server's defaulting: a resource with a limit but no request is requested
// at its limit.
func checkContainers(path string, cs []corev1.Container) error {
	for i := range cs {
		if err := checkResources(fmt.Sprintf("%s[%d].resources", path, i), &cs[i].Resources, containerResource); err != nil {
			return err
		}
	}
	return nil
}

// checkResources validates requests and limits with valid and defaults
// missing requests to limits.
func checkResources(path string, rr *corev1.ResourceRequirements, valid func(string) bool) error {
	if err := checkList(path+".limits", rr.Limits, valid); err != nil {
		return err
	}
	if err := checkList(path+".requests", rr.Requests, valid); err != nil {
		return err
	}
	// As the API server validates it: a pod whose request is above its
	// limit is refused, so it would never be scheduled.
	for _, name := range sortedNames(rr.Limits) {
		limit := rr.Limits[corev1.ResourceName(name)]
		if request, ok := rr.Requests[corev1.ResourceName(name)]; ok && request.Cmp(limit) > 0 {
			return fmt.Errorf("%s.requests.%s: %s is above the limit of %s; the API server refuses such a pod", path, name, request.String(), limit.String())
		}
	}
	for name, q := range rr.Limits {
		if _, ok := rr.Requests[name]; !ok {
			if rr.Requests == nil {
				rr.Requests = corev1.ResourceList{}
			}
			rr.Requests[name] = q.DeepCopy()
		}
	}
	return nil
}

// checkPodSpec applies the API server's rules of a pod spec that planning
// would otherwise pass over: containers are required, and extended
// resources and hugepages are not overcommitted. Only manifests are
// checked: what a cluster returns has passed them.
func checkPodSpec(path string, spec *corev1.PodSpec) error {
	if len(spec.Containers) == 0 {
		return fmt.Errorf("%s.containers: required; the API server refuses a pod without containers", path)
	}
	for _, cs := range []struct {
		field string
		list  []corev1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		for i := range cs.list {
			if err := checkNotOvercommitted(fmt.Sprintf("%s.%s[%d].resources", path, cs.field, i), &cs.list[i].Resources); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkNotOvercommitted applies the API server's rules for the resources
// a node cannot overcommit, before requests are defaulted to limits: an
// extended resource (a name with a domain other than kubernetes.io, such
// as nvidia.com/gpu) is a whole number, and it and hugepages have a limit
// and a request, if given, equal to it.
func checkNotOvercommitted(path string, rr *corev1.ResourceRequirements) error {
	for _, list := range []struct {
		field string
		list  corev1.ResourceList
	}{{"limits", rr.Limits}, {"requests", rr.Requests}} {
		for _, name := range sortedNames(list.list) {
			if q := list.list[corev1.ResourceName(name)]; extendedResource(name) && q.MilliValue()%1000 != 0 {
				return fmt.Errorf("%s.%s.%s: %s is not a whole number; the API server refuses a fraction of an extended resource", path, list.field, name, q.String())
			}
		}
	}
	for _, name := range sortedNames(rr.Requests) {
		if !extendedResource(name) && !strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) {
			continue
		}
		request := rr.Requests[corev1.ResourceName(name)]
		limit, ok := rr.Limits[corev1.ResourceName(name)]
		switch {
		case !ok:
			return fmt.Errorf("%s.limits.%s: required, equal to the request of %s; the API server refuses %s requested without a limit", path, name, request.String(), name)
		case request.Cmp(limit) != 0:
			return fmt.Errorf("%s.requests.%s: %s differs from the limit of %s; the API server refuses %s whose request is not its limit", path, name, request.String(), limit.String(), name)
		}
	}
	return nil
}

// extendedResource reports whether the API server takes name for an
// extended resource: a name with a domain, not kubernetes.io's.
func extendedResource(name string) bool {
	return extended(name) && !strings.Contains(name, corev1.ResourceDefaultNamespacePrefix)
}

// checkList checks that every name in list is valid and every quantity is
// not negative.
func checkList(path string, list corev1.ResourceList, valid func(string) bool) error {
	for _, name := range sortedNames(list) {
		if !valid(name) {
			return fmt.Errorf("%s: unsupported resource %q", path, name)
		}
		q := list[corev1.ResourceName(name)]
		if _, err := value(&q, name == string(corev1.ResourceCPU)); err != nil {
			return fmt.Errorf("%s.%s: %w", path, name, err)
		}
	}
	return nil
}

// containerResource reports whether a container may request name.
func containerResource(name string) bool {
	switch name {
	case "cpu", "memory", "ephemeral-storage":
		return true
	}
	return strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) || extended(name)
}

// podLevelResource reports whether spec.resources may name name.
func podLevelResource(name string) bool {
	return name == "cpu" || name == "memory" || strings.HasPrefix(name, corev1.ResourceHugePagesPrefix)
}

// poolResource reports whether a pool limit may name name.
func poolResource(name string) bool {
	return name == "pods" || containerResource(name)
}

// extended reports whether name looks like an extended resource: a domain
// prefix, a slash and a name.
func extended(name string) bool {
	prefix, rest, ok := strings.Cut(name, "/")
	return ok && prefix != "" && rest != "" && !strings.Contains(rest, "/")
}

func sortedNames(list corev1.ResourceList) []string {
	names := make([]string, 0, len(list))
	for n := range list {
		names = append(names, string(n))
	}
	slices.Sort(names)
	return names
}

// index returns the solver index of resource name, allocating one for a new
// extended resource; ok is false for resources the solver ignores (hugepages).
func (m *Manifests) index(name string) (i int, ok bool, err error) {
	for i, n := range solver.FixedResourceNames {
		if n == name {
			return i, true, nil
		}
	}
	if strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) {
		return 0, false, nil
	}
	if !extended(name) {
		return 0, false, fmt.Errorf("unsupported resource %q", name)
	}
	if j := slices.Index(m.ExtendedResources, name); j >= 0 {
		return solver.NumFixedResources + j, true, nil
	}
	if limit := solver.MaxResources - solver.NumFixedResources; len(m.ExtendedResources) >= limit {
		return 0, false, fmt.Errorf("extended resource %q: at most %d extended resources are supported (already have %s)",
			name, limit, strings.Join(m.ExtendedResources, ", "))
	}
	m.ExtendedResources = append(m.ExtendedResources, name)
	return solver.NumFixedResources + len(m.ExtendedResources) - 1, true, nil
}

// vector converts a resource list to solver units: millicores for cpu,
// bytes or counts for the rest. path names the list in errors.
func (m *Manifests) vector(path string, list corev1.ResourceList) (solver.Resources, error) {
	var r solver.Resources
	for _, name := range sortedNames(list) {
		i, ok, err := m.index(name)
		if err != nil {
			return r, fmt.Errorf("%s: %w", path, err)
		}
		if !ok {
			continue
		}
		q := list[corev1.ResourceName(name)]
		if r[i], err = value(&q, i == solver.CPU); err != nil {
			return r, fmt.Errorf("%s: %s: %w", path, name, err)
		}
	}
	return r, nil
}

// value converts a quantity to an int64, in thousandths when milli, rounding
// up. It fails on negative quantities and ones too large for an int64.
func value(q *resource.Quantity, milli bool) (int64, error) {
	if q.Sign() < 0 {
		return 0, fmt.Errorf("must not be negative (%s)", q.String())
	}
	f := q.AsApproximateFloat64()
	if milli {
		f *= 1000
	}
	if f > math.MaxInt64/2 {
		if q.CmpInt64(math.MaxInt64) >= 0 {
			// Parsing stopped at the largest quantity; the value
			// written was larger still.
			return 0, errors.New("too large: a quantity stops at 8Ei (9223372036854775807), and planning needs less than half of that")
		}
		return 0, fmt.Errorf("%s is too large: planning needs less than 4Ei (4611686018427387903)", q.String())
	}
	if milli {
		return q.MilliValue(), nil
	}
	return q.Value(), nil
}

// quantityKeys are the object keys whose values are resource lists.
var quantityKeys = []string{"requests", "limits", "overhead", "capacity", "allocatable", "resources"}

// findBadQuantity finds, for an error message, the first value in a resource
// list (or a sizeLimit) of v that is not a valid quantity.
func findBadQuantity(v any, path string) (where, bad string, found bool) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if k == "sizeLimit" || k == "volumeSize" {
				if !validQuantity(v[k]) {
					return p, fmt.Sprint(v[k]), true
				}
				continue
			}
			if list, ok := v[k].(map[string]any); ok && slices.Contains(quantityKeys, k) {
				for _, name := range slices.Sorted(maps.Keys(list)) {
					if _, isObj := list[name].(map[string]any); isObj {
						continue
					}
					if !validQuantity(list[name]) {
						return p + "." + name, strconv.Quote(fmt.Sprint(list[name])), true
					}
				}
			}
			if where, bad, found = findBadQuantity(v[k], p); found {
				return where, bad, true
			}
		}
	case []any:
		for i, e := range v {
			if where, bad, found = findBadQuantity(e, fmt.Sprintf("%s[%d]", path, i)); found {
				return where, bad, true
			}
		}
	}
	return "", "", false
}

func validQuantity(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		_, err := resource.ParseQuantity(strings.TrimSpace(v))
		return err == nil
	case map[string]any, []any, bool:
		return false
	default:
		_, err := resource.ParseQuantity(fmt.Sprint(v))
		return err == nil
	}
}

// hostPorts lists the host ports a pod binds, as kube-scheduler's NodePorts
// filter counts them: every container's ports with a hostPort, and those
// of sidecars (init containers with restartPolicy Always), which run as
// long as the pod does.
func hostPorts(spec *corev1.PodSpec) []solver.HostPort {
	var out []solver.HostPort
	add := func(c *corev1.Container) {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				out = append(out, solver.HostPort{Port: p.HostPort, Protocol: string(p.Protocol), HostIP: p.HostIP})
			}
		}
	}
	for i := range spec.InitContainers {
		if c := &spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range spec.Containers {
		add(&spec.Containers[i])
	}
	return out
}
