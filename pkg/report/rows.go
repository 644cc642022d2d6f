package report

import (
	"maps"
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// The rows a plan is shown as, built here once for every screen: explain
// prints them (table, JSON, YAML) and the TUI draws them, so that the two
// cannot say different things of the same plan.

// ProposedNode is one node of the plan.
type ProposedNode struct {
	Index                              int
	Name                               string
	Pool, InstanceType, Zone, Capacity string
	Price                              float64
	Pods                               []string
	CPU, Memory                        float64 // utilisation it would reach, 0–1
	Requested, Allocatable             solver.Resources
	// RequestedQuantities and AllocatableQuantities are Requested and
	// Allocatable as Kubernetes quantities by resource name (Quantities).
	RequestedQuantities, AllocatableQuantities map[string]string
	// Usage is Requested and Allocatable as the tables show them.
	Usage  Usage
	Reason string
	// InstanceTypeOptions are the instance types its NodeClaim would
	// allow, the planned one first, then by price: every type that holds
	// the same pods (solver.LaunchOptions), at most 60, as the operator
	// launches it and `explain -o json` lists it.
	InstanceTypeOptions []string
	// Labels are the labels the node would carry: its instance type's, its
	// pool's (template labels, the values the plan chose for requirements
	// that allow several, and requirements that allow one value), then the
	// pool name, zone and capacity type.
	Labels map[string]string
	// Taints are its pool's taints (startup taints left out: they are gone
	// once the node is ready).
	Taints []v1.Taint
}

// ProposedNodes returns the rows of the plan's new nodes, named new-1,
// new-2, … in the plan's order.
func ProposedNodes(p *solver.Problem, solved *solver.Plan) []ProposedNode {
	out := make([]ProposedNode, len(solved.NewNodes))
	options := solver.LaunchInstanceTypes(p, solved, -1)
	labeler := newNodeLabeler(p)
	for i := range solved.NewNodes {
		n := &solved.NewNodes[i]
		pn := ProposedNode{
			Index: i, Name: plan.NewNodeName(i), Pool: n.Pool, InstanceType: n.InstanceType, Zone: n.Zone, Capacity: n.CapacityType,
			Price: n.Price, Pods: make([]string, len(n.Pods)), Requested: n.Requested, Allocatable: n.Allocatable, Reason: n.Reason,
			RequestedQuantities: Quantities(p, n.Requested), AllocatableQuantities: Quantities(p, n.Allocatable), Usage: NewUsage(n.Requested, n.Allocatable),
			CPU: ratio(n.Requested[solver.CPU], n.Allocatable[solver.CPU]), Memory: ratio(n.Requested[solver.Memory], n.Allocatable[solver.Memory]),
			InstanceTypeOptions: options[i],
		}
		pn.Labels, pn.Taints = labeler.labelsAndTaints(n)
		for k, pod := range n.Pods {
			pn.Pods[k] = p.Pods[pod].Key()
		}
		out[i] = pn
	}
	return out
}

func ratio(a, b int64) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Outcome kinds: what a plan does with a pod.
const (
	OutcomeNew           = "new"
	OutcomeLaunching     = "launching"
	OutcomeExisting      = "existing"
	OutcomeUnschedulable = "unschedulable"
	// OutcomeNotPlanned is a pending pod of a live cluster the plan
	// leaves out (snapshot.Pending.NotPlanned says why).
	OutcomeNotPlanned = "not planned"
)

// Outcome is what the plan does with one pod, in the words every front end
// gives it (pkg/plan's outcomes).
type Outcome struct {
	// Kind is OutcomeNew, OutcomeLaunching, OutcomeExisting or
	// OutcomeUnschedulable.
	Kind string
	// NewNode is the index of the proposed node that takes the pod, -1
	// when none does.
	NewNode int
	// Node is the existing or in-flight node that takes the pod.
	Node string
	// Reason is the proposed node's reason, the note on an existing or
	// in-flight node, or why no node can take the pod.
	Reason string
}

// Outcomes returns the outcome of every pod of p, by index. inFlight are
// the nodes of NodeClaims launched but not registered yet
// (plan.Result.InFlight): a pod placed on one is launching, on any other
// node of p existing.
func Outcomes(p *solver.Problem, solved *solver.Plan, inFlight []string) []Outcome {
	placed := solved.Outcomes(len(p.Pods))
	out := make([]Outcome, len(placed))
	for i, o := range placed {
		switch {
		case o.NewNode >= 0:
			out[i] = Outcome{Kind: OutcomeNew, NewNode: o.NewNode, Reason: solved.NewNodes[o.NewNode].Reason}
		case o.Node != "" && slices.Contains(inFlight, o.Node):
			out[i] = Outcome{Kind: OutcomeLaunching, NewNode: -1, Node: o.Node, Reason: plan.InFlightNote(o.Node)}
		case o.Node != "":
			out[i] = Outcome{Kind: OutcomeExisting, NewNode: -1, Node: o.Node, Reason: plan.ExistingNodeNote}
		default:
			// explain's sentence, which names an OS no catalog has where
			// the solver's names the types it searched.
			out[i] = Outcome{Kind: OutcomeUnschedulable, NewNode: -1, Reason: plan.UnplacedReason(&p.Pods[i], o.Reason)}
		}
	}
	return out
}

// nodeLabeler gives planned nodes their labels and taints
// (labelsAndTaints), finding each pool's instance types by name once.
type nodeLabeler struct {
	p     *solver.Problem
	types []map[string]*solver.InstanceType // by pool index, built when first needed
}

func newNodeLabeler(p *solver.Problem) *nodeLabeler {
	return &nodeLabeler{p: p, types: make([]map[string]*solver.InstanceType, len(p.Pools))}
}

// poolType returns the instance type of pool pi named name (the last of
// that name, as the labels of each were copied in turn), or nil.
func (l *nodeLabeler) poolType(pi int, name string) *solver.InstanceType {
	if l.types[pi] == nil {
		types := l.p.PoolTypes(pi)
		l.types[pi] = make(map[string]*solver.InstanceType, len(types))
		for i := range types {
			l.types[pi][types[i].Name] = &types[i]
		}
	}
	return l.types[pi][name]
}

// labelsAndTaints returns the labels and taints of a planned node, as
// the pool and instance type it is made from give them: a pool requirement
// that allows one value only labels the node with it, as Karpenter's
// NodeClaims do.
func (l *nodeLabeler) labelsAndTaints(n *solver.NewNode) (map[string]string, []v1.Taint) {
	p := l.p
	labels := make(map[string]string, len(n.Labels)+3)
	var taints []v1.Taint
	for pi := range p.Pools {
		pool := &p.Pools[pi]
		if pool.Name != n.Pool {
			continue
		}
		if it := l.poolType(pi, n.InstanceType); it != nil {
			maps.Copy(labels, it.Labels)
		}
		maps.Copy(labels, pool.Labels)
		// The values the solver chose for the pool's multi-valued or
		// Exists requirements (the ones the node's pods select).
		maps.Copy(labels, n.Labels)
		for _, r := range pool.Requirements {
			if _, set := labels[r.Key]; !set && r.Operator == solver.OpIn && len(r.Values) == 1 {
				labels[r.Key] = r.Values[0]
			}
		}
		for _, t := range pool.Taints {
			taints = append(taints, v1.Taint{Key: t.Key, Value: t.Value, Effect: v1.TaintEffect(t.Effect)})
		}
	}
	labels[solver.LabelNodePool] = n.Pool
	labels[solver.LabelZone] = n.Zone
	labels[solver.LabelCapacityType] = n.CapacityType
	return labels, taints
}

// Quantities renders r as Kubernetes quantities in canonical form (CPU in
// millicores when not whole, memory and storage in the largest binary unit
// that is exact), by resource name, so that a program reading the JSON can
// check a fit exactly; the tables round them for people (Usage).
func Quantities(p *solver.Problem, r solver.Resources) map[string]string {
	out := map[string]string{}
	for i := range r {
		if name := p.ResourceName(i); name != "" && r[i] != 0 {
			out[name] = canonicalQuantity(i, r[i])
		}
	}
	return out
}

func canonicalQuantity(i int, v int64) string {
	switch i {
	case solver.CPU:
		return resource.NewMilliQuantity(v, resource.DecimalSI).String()
	case solver.Memory, solver.EphemeralStorage:
		return resource.NewQuantity(v, resource.BinarySI).String()
	}
	return strconv.FormatInt(v, 10)
}

// Usage is a node's CPU and memory, requested and allocatable, as the
// tables and views show them ("3.92", "14.1Gi"; "0" for none).
type Usage struct {
	CPURequested, CPUAllocatable       string
	MemoryRequested, MemoryAllocatable string
}

// NewUsage formats the CPU and memory of requested and allocatable.
func NewUsage(requested, allocatable solver.Resources) Usage {
	return Usage{
		CPURequested: solver.FormatQuantity(solver.CPU, requested[solver.CPU]), CPUAllocatable: solver.FormatQuantity(solver.CPU, allocatable[solver.CPU]),
		MemoryRequested: solver.FormatQuantity(solver.Memory, requested[solver.Memory]), MemoryAllocatable: solver.FormatQuantity(solver.Memory, allocatable[solver.Memory]),
	}
}
