package solver

// Plan is the solver's answer: the nodes to launch, where each pod goes, and
// why the pods it cannot place stay pending.
type Plan struct {
	// NewNodes are the nodes to launch, cheapest plan found.
	NewNodes []NewNode `json:"nodes"`
	// Existing lists pods placed on existing nodes' free capacity.
	Existing []Placement `json:"existing,omitempty"`
	// Late lists, in order, placed pods (on new or existing nodes) that
	// kube-scheduler binds only after every other pod of the plan runs:
	// each was judged on the final cluster with its own constraints alone,
	// so it may stand where it breaks the spread of a pod placed before
	// it, which kube-scheduler, judging a pod only as it binds, allows.
	Late []int `json:"late,omitempty"`
	// Unschedulable lists pods no allowed node can take, with the reason.
	Unschedulable []Unschedulable `json:"unschedulable"`
	// TotalPrice is the summed price of NewNodes in dollars per hour.
	TotalPrice float64 `json:"totalPricePerHour"`
	// LowerBound is a price no plan for the placed pods can beat (the fluid
	// relaxation): TotalPrice / LowerBound measures how far from optimal the
	// plan can be.
	LowerBound float64 `json:"lowerBoundPricePerHour"`
	// BoundApproximate is set when the fluid relaxation's program stopped
	// before its optimum (its pivot or time budget ran out, or the
	// deadline passed): LowerBound is still a price no plan can beat, but
	// a weaker one than the relaxation's, and the gap it shows is wider
	// than the plan's true distance from optimal ("bound: approximate").
	BoundApproximate bool `json:"lowerBoundApproximate,omitempty"`
	// packing is the portfolio member the plan's packing came from.
	packing Packing
}

// Packing names a member of the planner's portfolio: how it values pods
// (at stand-alone cost or at the fluid optimum's resource prices), how
// it fills a node, and whether first-fit packings come first. The zero
// Packing names none: the whole portfolio.
type Packing struct {
	set, priced, ffd bool
	fill             fillMode
}

// Packing returns the portfolio member whose packing won the plan, for
// Options.Packing of a related problem (explain's advice re-plans the same
// pods with a wider pool).
func (p *Plan) Packing() Packing { return p.packing }

// NewNode is one node the plan launches.
type NewNode struct {
	Pool         string  `json:"nodePool"`
	InstanceType string  `json:"instanceType"`
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"pricePerHour"`
	// Pods are indices into Problem.Pods.
	Pods []int `json:"pods"`
	// Allocatable is what pods may use (DaemonSets already subtracted);
	// Requested is what the plan's pods request of it.
	Allocatable Resources `json:"allocatable"`
	Requested   Resources `json:"requested"`
	// Reason says in one sentence why this node, for this plan.
	Reason string `json:"reason"`
	// Labels are the values the node must carry for keys its pool's
	// requirements leave open (team In [a, b], team Exists) and its pods
	// select: the node takes the pods only with these.
	Labels map[string]string `json:"labels,omitempty"`
	// offering and pool (an index into Problem.Pools) are what Reason
	// names, when it is a placementReason (offering is "" otherwise);
	// moved marks a node a pass after emit put pods on or took pods off,
	// whose Reason refreshReasons rewrites.
	offering string
	pool     int
	moved    bool
	// reservation names the capacity reservation the node draws on (see
	// reservedName); "" for none. Consolidation counts what its actions
	// take of each.
	reservation string
}

// Placement puts a pod on an existing node.
type Placement struct {
	Pod  int    `json:"pod"`
	Node string `json:"node"`
}

// Unschedulable is a pod the plan leaves pending.
type Unschedulable struct {
	Pod    int    `json:"pod"`
	Reason string `json:"reason"`
}

// Outcome is what a plan does with one pod: a new node, an existing node, or
// nothing (with the reason).
type Outcome struct {
	// NewNode indexes Plan.NewNodes, or is -1.
	NewNode int
	// Node names the existing node the pod goes to, when it does.
	Node string
	// Reason says why the pod stays pending, when it does.
	Reason string
}

// Outcomes indexes the plan by pod: one Outcome per pod of a problem with
// pods pods.
func (p *Plan) Outcomes(pods int) []Outcome {
	out := make([]Outcome, pods)
	for i := range out {
		out[i].NewNode = -1
	}
	for i, n := range p.NewNodes {
		for _, pod := range n.Pods {
			out[pod].NewNode = i
		}
	}
	for _, e := range p.Existing {
		out[e.Pod].Node = e.Node
	}
	for _, u := range p.Unschedulable {
		out[u.Pod].Reason = u.Reason
	}
	return out
}
