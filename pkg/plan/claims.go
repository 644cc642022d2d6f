package plan

import (
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Claim is a NodeClaim (rightsize.dev/v1alpha1) as planning needs it:
// one the cluster holds, or one a front end launched and has not seen in
// the cluster yet. The ones without a registered node are in-flight
// capacity the plan uses before proposing new nodes.
type Claim struct {
	Name, Pool, InstanceType, Zone, CapacityType string
	// NodeName is status.nodeName, set once a Node registered for the claim.
	NodeName string
	// ProviderID is status.providerID, set once the instance launched.
	ProviderID string
	// Price is status.pricePerHour, 0 when not set.
	Price float64
	// Conditions are the True condition types (Launched, Registered, ...).
	Conditions []string
	// Requests are spec.resources.requests.
	Requests corev1.ResourceList
	// Allocatable is status.allocatable, nil until launched.
	Allocatable corev1.ResourceList
	// Labels are the claim's own labels, which its node gets.
	Labels map[string]string
	// Taints are spec.taints, which its node gets.
	Taints   []corev1.Taint
	Created  time.Time
	Deleting bool
}

// ClaimOf reads a NodeClaim. Instance type, zone and capacity type come
// from its status once launched, else from the first value of its last In
// requirement on the key (NewNodeClaim appends the launch's after the
// pool's): the only one of a pinned claim, the planned one of a flexible
// launch (v1alpha1.NodeClaimOptions lists it first).
func ClaimOf(nc *v1alpha1.NodeClaim) Claim {
	c := Claim{
		Name: nc.Name, Pool: nc.Labels[v1alpha1.LabelNodePool],
		InstanceType: nc.Status.InstanceType, Zone: nc.Status.Zone, CapacityType: nc.Status.CapacityType,
		NodeName: nc.Status.NodeName, ProviderID: nc.Status.ProviderID,
		Requests: nc.Spec.Resources.Requests, Allocatable: nc.Status.Allocatable,
		Labels: nc.Labels, Taints: nc.Spec.Taints,
		Created: nc.CreationTimestamp.Time, Deleting: nc.DeletionTimestamp != nil,
	}
	if p, err := strconv.ParseFloat(nc.Status.PricePerHour, 64); err == nil && p > 0 {
		c.Price = p
	}
	pinned := func(key string) string {
		for _, r := range slices.Backward(nc.Spec.Requirements) {
			if r.Key == key && r.Operator == v1alpha1.NodeSelectorOpIn && len(r.Values) > 0 {
				return r.Values[0]
			}
		}
		return ""
	}
	c.InstanceType = cmpOr(c.InstanceType, pinned(solver.LabelInstanceType))
	c.Zone = cmpOr(c.Zone, pinned(solver.LabelZone))
	c.CapacityType = cmpOr(c.CapacityType, pinned(solver.LabelCapacityType))
	c.Pool = cmpOr(c.Pool, pinned(v1alpha1.LabelNodePool))
	for _, cond := range nc.Status.Conditions {
		if cond.Status == metav1.ConditionTrue {
			c.Conditions = append(c.Conditions, cond.Type)
		}
	}
	return c
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// InFlightNode is the solver's node for a claim no registered Node stands
// for yet, named after the claim: the instance type's labels, the claim's
// own, and its zone, capacity type, pool and hostname; its taints; as
// allocatable, status.allocatable once launched, else the instance type's
// (typ, nil when the catalog does not know it), else the claim's requests;
// as requested, the DaemonSets that would run on it. It reports false when
// nothing says how large the node is.
func InFlightNode(c *Claim, typ *solver.InstanceType, extended []string, daemonSets []solver.DaemonSet) (solver.Node, bool) {
	labels := map[string]string{}
	if typ != nil {
		maps.Copy(labels, typ.Labels)
	}
	maps.Copy(labels, c.Labels)
	if c.InstanceType != "" {
		labels[solver.LabelInstanceType] = c.InstanceType
	}
	labels[solver.LabelZone], labels[solver.LabelCapacityType] = c.Zone, c.CapacityType
	if c.Pool != "" {
		labels[solver.LabelNodePool], labels[v1alpha1.LabelNodePool] = c.Pool, c.Pool
	}
	labels[corev1.LabelHostname] = c.Name
	n := solver.Node{
		Name: c.Name, Pool: c.Pool, InstanceType: labels[solver.LabelInstanceType], Zone: c.Zone, CapacityType: c.CapacityType,
		Price: c.Price, Labels: labels, InFlight: true, Created: c.Created,
	}
	switch {
	case c.Allocatable != nil:
		n.Allocatable = Resources(c.Allocatable, extended)
	case typ != nil:
		n.Allocatable = typ.Allocatable()
	case c.Requests != nil:
		n.Allocatable = Resources(c.Requests, extended)
	default:
		return solver.Node{}, false
	}
	for _, t := range c.Taints {
		n.Taints = append(n.Taints, solver.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	n.Requested = DaemonOverhead(daemonSets, n.Labels, n.Taints)
	return n, true
}

// Resources converts a resource list to solver units; names the solver
// has no index for are left out.
func Resources(list corev1.ResourceList, extended []string) solver.Resources {
	var r solver.Resources
	for name, q := range list {
		i := slices.Index(solver.FixedResourceNames[:], string(name))
		if i < 0 {
			j := slices.Index(extended, string(name))
			if j < 0 {
				continue
			}
			i = solver.NumFixedResources + j
		}
		if i == solver.CPU {
			r[i] = q.MilliValue()
		} else {
			r[i] = q.Value()
		}
	}
	return r
}

// DaemonOverhead sums the requests of the DaemonSets that would run on a
// node with these labels and taints.
func DaemonOverhead(dss []solver.DaemonSet, labels map[string]string, taints []solver.Taint) solver.Resources {
	var r solver.Resources
	ml := solver.MapLabels(labels)
	for _, d := range dss {
		ok := true
		for k, v := range d.NodeSelector {
			if labels[k] != v {
				ok = false
			}
		}
		if ok && len(d.Affinity) > 0 {
			ok = slices.ContainsFunc(d.Affinity, func(t solver.Term) bool { return t.Matches(ml) })
		}
		for ti := range taints {
			t := &taints[ti]
			if t.Effect == solver.EffectPreferNoSchedule {
				continue
			}
			if !slices.ContainsFunc(d.Tolerations, func(tol solver.Toleration) bool { return tol.Tolerates(t) }) {
				ok = false
			}
		}
		if ok {
			r = r.Add(d.Requests)
		}
	}
	return r
}
