// Package solver decides which nodes to launch for pending pods and explains
// why. It is pure: it takes plain data (millicores, bytes, label requirements,
// taints) and returns plain data, with no Kubernetes client, no cloud SDK and
// no I/O, so that explain, the TUI and the operator all get the same answer
// and so that it can be benchmarked and fuzzed on its own.
package solver

import "time"

// Resource indices into Resources. The first NumFixedResources are always
// present; a Problem may name up to MaxResources-NumFixedResources extended
// resources (e.g. "vendor.com/fpga") after them in Problem.ExtendedResources.
const (
	CPU              = iota // millicores
	Memory                  // bytes
	EphemeralStorage        // bytes
	Pods                    // count
	GPU                     // nvidia.com/gpu, count
	NumFixedResources
)

// MaxResources bounds the resource vector so that it stays a value type.
const MaxResources = 8

// Resources is a vector of quantities indexed by the resource constants.
type Resources [MaxResources]int64

// FixedResourceNames are the Kubernetes names of the fixed resource indices.
var FixedResourceNames = [NumFixedResources]string{"cpu", "memory", "ephemeral-storage", "pods", "nvidia.com/gpu"}

// Add returns r + o.
func (r Resources) Add(o Resources) Resources {
	for i := range r {
		r[i] += o[i]
	}
	return r
}

// Sub returns r - o.
func (r Resources) Sub(o Resources) Resources {
	for i := range r {
		r[i] -= o[i]
	}
	return r
}

// Fits reports whether every quantity in r is at most the one in capacity.
func (r Resources) Fits(capacity Resources) bool {
	for i := range r {
		if r[i] > capacity[i] {
			return false
		}
	}
	return true
}

// Scale returns r multiplied by n.
func (r Resources) Scale(n int64) Resources {
	for i := range r {
		r[i] *= n
	}
	return r
}

// Operators for Requirement, as in Kubernetes node selector requirements.
const (
	OpIn           = "In"
	OpNotIn        = "NotIn"
	OpExists       = "Exists"
	OpDoesNotExist = "DoesNotExist"
	OpGt           = "Gt"
	OpLt           = "Lt"
)

// Requirement is one node selector requirement: Key Operator Values.
type Requirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// Term is a conjunction of requirements; a pod's required node affinity is a
// disjunction of terms.
type Term []Requirement

// Taint effects.
const (
	EffectNoSchedule       = "NoSchedule"
	EffectPreferNoSchedule = "PreferNoSchedule"
	EffectNoExecute        = "NoExecute"
)

// Taint is a node taint.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// Toleration is a pod toleration; Operator is "Exists" or "Equal" (default).
type Toleration struct {
	Key      string `json:"key,omitempty"`
	Operator string `json:"operator,omitempty"`
	Value    string `json:"value,omitempty"`
	Effect   string `json:"effect,omitempty"`
}

// Pod is one pod to place.
type Pod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Owner groups pods for display, e.g. "Deployment/web".
	Owner string `json:"owner,omitempty"`
	// Requests are the pod's effective requests (init containers and overhead
	// included); Requests[Pods] is 1.
	Requests Resources `json:"requests"`
	// NodeSelector must match the node's labels exactly.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Affinity is the required node affinity: the node must match one term.
	// Empty means any node.
	Affinity    []Term       `json:"affinity,omitempty"`
	Tolerations []Toleration `json:"tolerations,omitempty"`
	// Labels are the pod's labels, matched by other pods' affinity,
	// anti-affinity and topology spread selectors.
	Labels map[string]string `json:"labels,omitempty"`
	// Spread are the pod's topology spread constraints.
	Spread []TopologySpread `json:"spread,omitempty"`
	// PodAffinity and PodAntiAffinity are required inter-pod (anti-)affinity terms.
	PodAffinity     []PodAffinityTerm `json:"podAffinity,omitempty"`
	PodAntiAffinity []PodAffinityTerm `json:"podAntiAffinity,omitempty"`
	// Preferences are soft constraints: honoured when they can be, relaxed
	// one at a time (see Preference) when they block placement.
	Preferences []Preference `json:"preferences,omitempty"`
	// HostPorts are the host ports the pod's containers bind: two pods
	// whose host ports overlap never share a node (kube-scheduler's
	// NodePorts filter).
	HostPorts []HostPort `json:"hostPorts,omitempty"`
	// DoNotDisrupt marks a running pod that consolidation must not evict.
	DoNotDisrupt bool `json:"doNotDisrupt,omitempty"`
	// Controller is false for a bare pod that nothing would recreate.
	Controller bool `json:"controller,omitempty"`
	// Unschedulable, when set, is why no node may take the pod, decided
	// before planning (a volume claim that is not bound yet, say): the
	// pod is left pending with this sentence.
	Unschedulable string `json:"unschedulable,omitempty"`
}

// Selector is a label selector: every MatchLabels entry and every
// requirement (In, NotIn, Exists, DoesNotExist) must hold.
type Selector struct {
	MatchLabels      map[string]string `json:"matchLabels,omitempty"`
	MatchExpressions []Requirement     `json:"matchExpressions,omitempty"`
}

// Topology spread policies.
const (
	DoNotSchedule  = "DoNotSchedule"
	ScheduleAnyway = "ScheduleAnyway"
)

// TopologySpread is a topology spread constraint on any node label key
// (zone, hostname, capacity type, a pool's own label...).
type TopologySpread struct {
	MaxSkew           int32    `json:"maxSkew"`
	TopologyKey       string   `json:"topologyKey"`
	WhenUnsatisfiable string   `json:"whenUnsatisfiable"`
	Selector          Selector `json:"selector"`
	MinDomains        int32    `json:"minDomains,omitempty"`
	// NodeAffinityPolicy "Ignore" counts domains of every node, not only of
	// nodes matching the pod's node affinity ("Honor", the default).
	NodeAffinityPolicy string `json:"nodeAffinityPolicy,omitempty"`
	// NodeTaintsPolicy "Honor" counts only domains of nodes whose taints
	// the pod tolerates; "Ignore" (the default) counts every node's.
	NodeTaintsPolicy string `json:"nodeTaintsPolicy,omitempty"`
}

// PodAffinityTerm is a required inter-pod (anti-)affinity term: pods
// matching Selector in Namespaces (the pod's own when empty) on the same
// TopologyKey domain.
type PodAffinityTerm struct {
	Selector    Selector `json:"selector"`
	TopologyKey string   `json:"topologyKey"`
	Namespaces  []string `json:"namespaces,omitempty"`
	// NamespaceSelector, when set, adds the namespaces whose labels it
	// matches (Problem.NamespaceLabels, and kubernetes.io/metadata.name,
	// which every namespace has); an empty one matches every namespace.
	// With it set, the pod's own namespace counts only if listed or matched.
	NamespaceSelector *Selector `json:"namespaceSelector,omitempty"`
}

// Preference kinds, in the order they are relaxed when they block placement.
const (
	PreferScheduleAnywaySpread = "ScheduleAnywaySpread"
	PreferPodAffinity          = "PodAffinity"
	PreferPodAntiAffinity      = "PodAntiAffinity"
	PreferNodeAffinity         = "NodeAffinity"
)

// Preference is one soft constraint with its weight (1–100).
type Preference struct {
	Kind   string `json:"kind"`
	Weight int32  `json:"weight"`
	// NodeTerm is set for PreferNodeAffinity.
	NodeTerm Term `json:"nodeTerm,omitempty"`
	// PodTerm is set for PreferPodAffinity and PreferPodAntiAffinity.
	PodTerm *PodAffinityTerm `json:"podTerm,omitempty"`
	// Spread is set for PreferScheduleAnywaySpread.
	Spread *TopologySpread `json:"spread,omitempty"`
}

// Key returns "namespace/name".
func (p *Pod) Key() string { return p.Namespace + "/" + p.Name }

// DaemonSet is a workload that runs one pod on every node it selects; its
// requests reduce what every such node has left for other pods.
type DaemonSet struct {
	Namespace    string            `json:"namespace"`
	Name         string            `json:"name"`
	Requests     Resources         `json:"requests"`
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	Affinity     []Term            `json:"affinity,omitempty"`
	Tolerations  []Toleration      `json:"tolerations,omitempty"`
	// HostPorts are bound on every node the DaemonSet runs on, so no pod
	// binding an overlapping port can run there.
	HostPorts []HostPort `json:"hostPorts,omitempty"`
}

// HostPort is a container port bound on the node: Protocol is TCP (the
// default when empty), UDP or SCTP; an empty HostIP or 0.0.0.0 means every
// address of the node.
type HostPort struct {
	Port     int32  `json:"port"`
	Protocol string `json:"protocol,omitempty"`
	HostIP   string `json:"hostIP,omitempty"`
}

// Offering is one way to buy an instance type.
type Offering struct {
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"` // dollars per hour
	// Count, when positive, is how many more nodes the offering can
	// launch: a capacity reservation's available instances (capacity type
	// "reserved", Karpenter's). The solver plans such offerings first,
	// as Karpenter does, and never more nodes of one reservation than it
	// has. Zero means no limit.
	Count int `json:"count,omitempty"`
	// Reservation names the reservation Count belongs to, shared by every
	// offering (of any pool's copy of the type) that names it; empty
	// means one reservation per instance type and zone.
	Reservation string `json:"reservation,omitempty"`
}

// InstanceType is a machine shape with the labels a node of it would carry,
// its capacity and the part of it reserved for the system.
type InstanceType struct {
	Name string `json:"name"`
	// Labels are the well-known labels of a node of this type (instance
	// type, family, size, arch, os, cpu, memory, gpu...), without zone,
	// capacity type or pool labels, which come from the offering and pool.
	Labels   map[string]string `json:"labels"`
	Capacity Resources         `json:"capacity"`
	// Extended is the capacity of named extended resources (amd.com/gpu,
	// aws.amazon.com/neuron, ...) that have no fixed index: the solver
	// puts each one the problem names (Problem.ExtendedResources) into
	// Capacity at its index, so that a type's data need not know which
	// extended resources a problem uses. An entry already non-zero in
	// Capacity is left alone.
	Extended  map[string]int64 `json:"extended,omitempty"`
	Overhead  Resources        `json:"overhead"` // kube-reserved + eviction + VM overhead
	Offerings []Offering       `json:"offerings"`
}

// Allocatable is capacity minus overhead.
func (t *InstanceType) Allocatable() Resources { return t.Capacity.Sub(t.Overhead) }

// Pool is a NodePool: a template for the nodes the solver may launch.
type Pool struct {
	Name string `json:"name"`
	// Weight orders pools: a pod goes to the highest-weight pool that can take it.
	Weight int32 `json:"weight,omitempty"`
	// Requirements restrict instance type, zone, capacity type and any label.
	Requirements []Requirement `json:"requirements,omitempty"`
	// MinValues are Karpenter's minValues of the requirements, by label
	// key (the largest where several requirements name one key): a node
	// of the pool is planned only where the instance types that could
	// take its pods carry at least that many distinct values of the key.
	MinValues map[string]int `json:"minValues,omitempty"`
	// Labels are set on every node of the pool.
	Labels map[string]string `json:"labels,omitempty"`
	Taints []Taint           `json:"taints,omitempty"`
	// StartupTaints are removed once the node is ready; ignored for placement.
	StartupTaints []Taint `json:"startupTaints,omitempty"`
	// Limits caps the summed capacity of the pool's nodes; a zero entry with
	// HasLimit false means no limit on that resource.
	Limits   Resources          `json:"limits"`
	HasLimit [MaxResources]bool `json:"hasLimit"`
	Used     Resources          `json:"used"` // capacity of the pool's existing nodes
	// Consolidation is the pool's disruption policy.
	Consolidation Consolidation `json:"consolidation"`
	// InstanceTypes, when non-nil, are the types the pool's nodes may be,
	// in place of Problem.InstanceTypes: a pool whose node class changes
	// what a node can give to pods (kubelet settings such as maxPods or
	// kubeReserved) has its own copy of the types with its allocatable.
	// The solver treats the list as it does Problem.InstanceTypes.
	InstanceTypes []InstanceType `json:"instanceTypes,omitempty"`
}

// Consolidation policies.
const (
	WhenEmpty                = "WhenEmpty"
	WhenEmptyOrUnderutilized = "WhenEmptyOrUnderutilized"
)

// Consolidation is what a pool allows consolidation to do now.
type Consolidation struct {
	// Policy is WhenEmpty or WhenEmptyOrUnderutilized (the default).
	Policy string `json:"policy,omitempty"`
	// After is how long a node must go without pod changes to be a candidate.
	After time.Duration `json:"after,omitempty"`
	// NodesAllowed is how many more of the pool's nodes may be disrupted now
	// (the budgets already evaluated for this moment, minus nodes already
	// disrupting); negative means no budget applies.
	NodesAllowed int `json:"nodesAllowed"`
	// MinSaving is the smallest saving per action worth its churn, in
	// dollars per hour, and as a fraction of the nodes' price.
	MinSaving         float64 `json:"minSaving,omitempty"`
	MinSavingFraction float64 `json:"minSavingFraction,omitempty"`
	// MinSavingSet says the pool sets its minimum saving itself, so that
	// an explicit zero means no minimum rather than the default.
	MinSavingSet bool `json:"minSavingSet,omitempty"`
}

// Node is an existing (or in-flight) node whose free capacity is used before
// any new node is launched.
type Node struct {
	Name         string            `json:"name"`
	Pool         string            `json:"pool,omitempty"`
	InstanceType string            `json:"instanceType,omitempty"`
	Zone         string            `json:"zone,omitempty"`
	CapacityType string            `json:"capacityType,omitempty"`
	Price        float64           `json:"price,omitempty"`
	Labels       map[string]string `json:"labels"`
	Taints       []Taint           `json:"taints,omitempty"`
	Allocatable  Resources         `json:"allocatable"`
	// Requested is what the pods already bound to the node request.
	Requested Resources `json:"requested"`
	// Unschedulable nodes (cordoned) take no new pods.
	Unschedulable bool `json:"unschedulable,omitempty"`
	// Pods are the pods bound to the node: they count for topology spread
	// and (anti-)affinity, and consolidation moves them.
	Pods []Pod `json:"pods,omitempty"`
	// InFlight marks a node that is launching: it takes pods but
	// consolidation leaves it alone.
	InFlight bool `json:"inFlight,omitempty"`
	// DoNotDisrupt marks a node consolidation must leave alone.
	DoNotDisrupt bool `json:"doNotDisrupt,omitempty"`
	// Created is when the node was launched; LastPodChange when a pod last
	// arrived or left (consolidateAfter counts from it).
	Created       time.Time `json:"created,omitempty"`
	LastPodChange time.Time `json:"lastPodChange,omitempty"`
}

// PDB is a PodDisruptionBudget as consolidation sees it: how many more of
// the pods it selects may be evicted now.
type PDB struct {
	Namespace          string   `json:"namespace"`
	Name               string   `json:"name"`
	Selector           Selector `json:"selector"`
	DisruptionsAllowed int32    `json:"disruptionsAllowed"`
}

// Options tune a solve.
type Options struct {
	// Deadline, when non-zero, makes the solver return the best plan found by then.
	Deadline time.Time
	// Done, when not nil, cancels the solve once it is closed (pass a
	// context's Done()): Solve and Consolidate then stop within a fraction
	// of a second, checking it in every loop that can run long, and return
	// an error wrapping context.Canceled instead of a plan.
	Done <-chan struct{}
	// NoNarrowing skips the solves of the problem narrowed to each
	// architecture and capacity type that keep the plan monotone in the
	// pool's choice (see narrowerIfCheaper; they can double a solve's
	// time): for callers that ask where pods can go rather than the
	// cheapest plan, such as explain's advice.
	NoNarrowing bool
	// Packing, when set (from Plan.Packing of a related problem), makes
	// the planner run only that member of its portfolio (all of its
	// first-fit packings, for a first-fit member) instead of all of them:
	// a real plan, found in a fraction of the time, that the whole
	// portfolio could only make cheaper. A member the problem has no
	// place for (first fit where it has topology, a dense fill past its
	// size) falls back to the whole portfolio; a priced member whose
	// prices are unknown values pods at stand-alone cost. For callers that
	// price a variant of a solved problem, such as explain's advice.
	Packing Packing
	// Resume, when not nil, holds Solve once it has grouped the pods and
	// worked out the nodes they may use (the set-up every solve pays),
	// until a Resume arrives: the packing and all that follows it then
	// run with its Packing and Deadline in place of the options'. For
	// callers that learn how a related problem's solve should go only
	// when another solve ends (explain's advice re-plans the plan's pods
	// on wider pools with the member that won the plan) and prepare it
	// meanwhile. Done still cancels a held solve; Resume closed without a
	// value cancels it too.
	Resume <-chan Resume
	// Now is the time consolidation measures ages against (time.Now when zero).
	Now time.Time
	// noBound skips the fluid LP: the plan has no LowerBound and packing
	// values pods without the LP's resource prices. Consolidation's
	// what-if simulations set it; they compare plan prices only.
	noBound bool
}

// Resume is what a solve held at Options.Resume waits for: how to pack
// and by when.
type Resume struct {
	Packing  Packing
	Deadline time.Time
}

// Problem is everything the solver needs.
type Problem struct {
	// ExtendedResources names resource indices NumFixedResources and above.
	ExtendedResources []string       `json:"extendedResources,omitempty"`
	Pods              []Pod          `json:"pods"`
	DaemonSets        []DaemonSet    `json:"daemonSets,omitempty"`
	Pools             []Pool         `json:"pools"`
	InstanceTypes     []InstanceType `json:"instanceTypes"`
	Nodes             []Node         `json:"nodes,omitempty"`
	PDBs              []PDB          `json:"pdbs,omitempty"`
	// NamespaceLabels are the labels of namespaces, for pod (anti-)affinity
	// namespace selectors.
	NamespaceLabels map[string]map[string]string `json:"namespaceLabels,omitempty"`
	// UnknownLabels are label keys the instance-type data cannot answer
	// (Karpenter sets them, the catalog's sources do not give them): a pod
	// or pool needing one is explained as such, not as short of room.
	UnknownLabels []string `json:"unknownLabels,omitempty"`
	// MinValuesBestEffort plans as Karpenter's --min-values-policy
	// BestEffort does: pools' minValues are relaxed, not enforced.
	MinValuesBestEffort bool    `json:"minValuesBestEffort,omitempty"`
	Options             Options `json:"-"`
}

// PoolTypes returns the instance types the nodes of pool pi may be: the
// pool's own InstanceTypes when set, else the problem's.
func (p *Problem) PoolTypes(pi int) []InstanceType {
	if t := p.Pools[pi].InstanceTypes; t != nil {
		return t
	}
	return p.InstanceTypes
}

// typeLists returns the problem's instance types and every pool's own.
func (p *Problem) typeLists() [][]InstanceType {
	lists := [][]InstanceType{p.InstanceTypes}
	for i := range p.Pools {
		if p.Pools[i].InstanceTypes != nil {
			lists = append(lists, p.Pools[i].InstanceTypes)
		}
	}
	return lists
}

// ResourceName returns the Kubernetes name of resource index i.
func (p *Problem) ResourceName(i int) string {
	if i < NumFixedResources {
		return FixedResourceNames[i]
	}
	if j := i - NumFixedResources; j < len(p.ExtendedResources) {
		return p.ExtendedResources[j]
	}
	return ""
}
