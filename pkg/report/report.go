// Package report is what the screens show of a plan, owned by no front
// end. FromPlan builds it once from a solved plan: the proposed nodes
// (launch options, labels, taints, quantities exact and as the tables
// write them) and what the plan does with every pod; Consolidate adds what
// consolidation would do. explain prints it as tables, JSON and YAML, and
// the TUI draws it.
//
// It is also the TUI's model of the cluster, in the spirit of
// eks-node-viewer's model package: from the objects a watcher holds (or
// manifests read offline) and the catalog, Planner builds the solver's
// problem, asks the solver for the plan and for consolidation, and turns
// the answers into the rows the screens show. It does no I/O beyond
// loading the catalog and draws nothing; the bubbletea program in pkg/tui
// only renders a Report.
package report

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/disruption"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Input is what a report is built from: a live cluster's objects, or
// manifests read offline.
type Input struct {
	// Objects are the live cluster's objects; nil when Manifests is set.
	Objects *snapshot.Objects
	// Claims are the NodeClaims, those of Objects and those launched but
	// not seen yet; the ones without a registered node are in-flight
	// capacity the plan uses first (plan.Build).
	Claims []plan.Claim
	// Manifests are read offline (-f).
	Manifests *snapshot.Manifests

	Catalog plan.Catalog
	Default plan.DefaultPool
	WhatIf  plan.WhatIf
	// Timeout bounds each solve; the best plan found by then is kept.
	Timeout time.Duration
	Now     time.Time
}

// Report is everything the screens show, built at one moment.
type Report struct {
	Live   bool
	Source string
	// Region is the region the plan priced its nodes in.
	Region  string
	WhatIf  plan.WhatIf
	Problem *solver.Problem
	Plan    *solver.Plan
	// Spending is what the plan spent of the input's Commitments
	// (plan.Spend, as explain and the operator spend them): Plan is its
	// plan, and it holds the bill, the blind plan's bill and the share of
	// each new node the commitments cover. Nil when the input holds none.
	Spending *plan.Spending
	// Baseline is the plan's Cost without the what-if overrides (equal to
	// Cost when none is active).
	Baseline float64

	Pending  []PendingGroup
	Proposed []ProposedNode
	Nodes    []NodeRow
	// Consolidation is what consolidation would do now (Consolidate); nil
	// offline.
	Consolidation *disruption.Report
	Actions       []ActionRow

	// Cluster totals for the header.
	ClusterPrice float64
	ClusterNodes int
	PendingPods  int
	Warnings     []string
	// DefaultPool and EKSDaemonSets are what the input lacked and was
	// planned for (plan.Result.Defaults); Notices says it as explain does.
	DefaultPool   string
	EKSDaemonSets []string
	// UnreadNodePools are the NodePool resources the user may not list,
	// why the default pool was planned (snapshot.Cluster.UnreadNodePools).
	UnreadNodePools []string
	// Existing are the existing and in-flight nodes as the solver sees them.
	Existing []solver.Node
	// Outcomes are what the plan does with each pod of Problem, by index.
	Outcomes []Outcome
	Took     time.Duration
	BuiltAt  time.Time
}

// PendingGroup is the pending pods of one owner with the same scheduler
// message and the same outcome in the plan.
type PendingGroup struct {
	Owner, Namespace string
	Pods             []string
	// Requests are one pod's requests, e.g. "0.5 CPU, 1Gi".
	Requests  string
	Scheduler string
	// Outcome is "new", "existing", "unschedulable" or "not planned".
	Outcome string
	// Node names what would take them: "new-1 m7i.large" or an existing node.
	Node string
	// Reason is our one sentence: why no node can take them, or why this node.
	Reason string
	// PodIndex is the first pod's index in Problem.Pods, -1 when not planned.
	PodIndex int
	// NewNodes are the indices of the proposed nodes that take them.
	NewNodes []int
}

// NodeRow is an existing node, or an in-flight NodeClaim.
type NodeRow struct {
	Name, InstanceType, Capacity, Zone, Pool string
	// Price is nil when the catalog does not know the type.
	Price            *float64
	CPUReq, CPUAlloc int64
	MemReq, MemAlloc int64
	// Usage is the CPU and memory requested and allocatable as the views
	// show them.
	Usage         Usage
	Pods, MaxPods int64
	Created       time.Time
	Status        string
	Claim         bool
}

// ActionRow is a consolidation action or a node left alone.
type ActionRow struct {
	Kind        string // Delete, Replace, Merge, or "-" for a node left alone
	Nodes       string
	Replacement string
	Moves       []solver.Move
	Saving      float64
	Reason      string
}

// Planner builds reports. It caches the catalog per region, so that a
// re-plan costs only the solve. Safe for concurrent use.
type Planner struct {
	mu    sync.Mutex
	types map[string]cachedTypes
}

type cachedTypes struct {
	types  []solver.InstanceType
	source string
}

// NewPlanner returns a Planner with an empty catalog cache.
func NewPlanner() *Planner { return &Planner{types: map[string]cachedTypes{}} }

func (p *Planner) instanceTypes(c plan.Catalog) ([]solver.InstanceType, string, error) {
	key := fmt.Sprintf("%s|%s|%v", c.Region, c.InstanceTypesFile, c.Model)
	p.mu.Lock()
	defer p.mu.Unlock()
	if ct, ok := p.types[key]; ok {
		return ct.types, ct.source, nil
	}
	types, source, err := c.InstanceTypes()
	if err != nil {
		return nil, "", err
	}
	p.types[key] = cachedTypes{types, source}
	return types, source, nil
}

// Build reads the input, plans and consolidates, and renders the rows.
func (p *Planner) Build(in Input) (*Report, error) {
	start := time.Now()
	if in.Now.IsZero() {
		in.Now = start
	}
	r := &Report{WhatIf: in.WhatIf, Live: in.Objects != nil, BuiltAt: in.Now}
	var cl *snapshot.Cluster
	m := in.Manifests
	if r.Live {
		cl = snapshot.FromObjects(in.Objects)
		m = &cl.Manifests
	}
	if m == nil {
		return nil, fmt.Errorf("report: no input")
	}
	r.Warnings = slices.Clone(m.Warnings) // appended to below; m is planned again on every re-plan

	base, cat := catalogs(in, cl)
	types, source, err := p.instanceTypes(cat)
	if err != nil {
		return nil, err
	}
	r.Source, r.Region = source, cat.Region
	// A family typed in the what-if prompt, or given with --instance-family,
	// that the catalog lacks is a typo, not a plan of nothing.
	if err := plan.CheckFamilies(types, in.Default.InstanceFamilies, "--instance-family", source); err != nil {
		return nil, err
	}
	if err := plan.CheckFamilies(types, in.WhatIf.Families, "what-if family", source); err != nil {
		return nil, err
	}
	built, err := plan.Build(plan.Input{Cluster: cl, Manifests: m, InstanceTypes: types, Catalog: &cat, Default: &in.Default, Claims: in.Claims, WhatIf: in.WhatIf})
	if err != nil {
		return nil, err
	}
	prob := built.Problem
	r.Warnings = append(r.Warnings, plan.WindowsPools(prob)...)
	r.DefaultPool, r.EKSDaemonSets = built.Defaults()
	if cl != nil {
		r.UnreadNodePools = cl.UnreadNodePools
	}
	cs, warnings, err := plan.CommitmentsOf(m.Commitments, cat.Region)
	if err != nil {
		return nil, err
	}
	r.Warnings = append(r.Warnings, warnings...)
	solved, spent, err := solve(prob, cs, in.Timeout)
	if err != nil {
		return nil, err
	}
	r.Spending = spent
	r.setPlan(prob, solved, built.InFlight)
	r.Baseline = r.Cost()
	if in.WhatIf.Active() {
		r.Baseline, err = p.baseline(in, m, cl, base)
		if err != nil {
			return nil, err
		}
	}
	r.buildRows(in, cl, built)
	r.Took = time.Since(start)
	return r, nil
}

// FromPlan is the report of a solved plan as every front end shows it:
// the proposed nodes and what the plan does with each pod. inFlight are
// the nodes of NodeClaims launched but not registered (plan.Result.InFlight).
func FromPlan(p *solver.Problem, solved *solver.Plan, inFlight []string) *Report {
	r := &Report{}
	r.setPlan(p, solved, inFlight)
	return r
}

// setPlan sets the solved plan and the rows built from it alone.
func (r *Report) setPlan(p *solver.Problem, solved *solver.Plan, inFlight []string) {
	r.Problem, r.Plan, r.Existing = p, solved, p.Nodes
	r.Proposed = ProposedNodes(p, solved)
	r.Outcomes = Outcomes(p, solved, inFlight)
}

// Consolidate sets Consolidation: what the consolidation planner would do
// now with the cluster the plan was built from, under the operator's own
// guards for its pools' nodes and the planner's for Karpenter's. Nothing
// is changed.
func (r *Report) Consolidate(cl *snapshot.Cluster, built *plan.Result, now time.Time) error {
	// The operator's nodes are priced beyond the cluster's Commitments,
	// as its controller prices them.
	cs, _, err := plan.CommitmentsOf(cl.Manifests.Commitments, cl.Region())
	if err != nil {
		return fmt.Errorf("consolidation: %w", err)
	}
	c, err := disruption.Consolidation(cl, r.Problem, built.Repriced, now, plan.CoveredPricer(cs))
	if err != nil {
		return fmt.Errorf("consolidation: %w", err)
	}
	r.Consolidation = c
	return nil
}

// catalogs returns the catalog the cluster is planned in (the region
// given, else the cluster's, else plan.DefaultRegion) and the one the
// what-if asks for (its region, when it names one).
func catalogs(in Input, cl *snapshot.Cluster) (base, cat plan.Catalog) {
	base = in.Catalog
	if base.Region == "" {
		if cl != nil {
			base.Region = cl.Region()
		}
		if base.Region == "" {
			base.Region = plan.DefaultRegion
		}
	}
	cat = base
	if in.WhatIf.Region != "" {
		cat.Region = in.WhatIf.Region
	}
	return base, cat
}

// buildRows renders the rows of every view from the solved plan, and live
// consolidates.
func (r *Report) buildRows(in Input, cl *snapshot.Cluster, built *plan.Result) {
	if cl == nil {
		r.buildOfflinePending()
		return
	}
	r.buildPending(cl)
	r.buildNodes(cl, in.Objects, in.Claims, built.Prices)
	// The operator's own guards for its pools' nodes, the planner's
	// for Karpenter's: the verdicts explain --consolidation prints.
	if err := r.Consolidate(cl, built, in.Now); err == nil {
		r.buildActions()
	} else {
		r.Warnings = append(r.Warnings, err.Error())
	}
}

// baseline solves again without the overrides, for the cost difference.
func (p *Planner) baseline(in Input, m *snapshot.Manifests, cl *snapshot.Cluster, cat plan.Catalog) (float64, error) {
	types, _, err := p.instanceTypes(cat)
	if err != nil {
		return 0, err
	}
	built, err := plan.Build(plan.Input{Cluster: cl, Manifests: m, InstanceTypes: types, Catalog: &cat, Default: &in.Default, Claims: in.Claims})
	if err != nil {
		return 0, err
	}
	cs, _, err := plan.CommitmentsOf(m.Commitments, cat.Region)
	if err != nil {
		return 0, err
	}
	solved, spent, err := solve(built.Problem, cs, in.Timeout)
	if err != nil {
		return 0, fmt.Errorf("without the what-if: %w", err)
	}
	return (&Report{Plan: solved, Spending: spent}).Cost(), nil
}

// solve plans prob, then spends cs on it as explain and the operator do
// (plan.Spend: the plan with the lowest bill, the blind one included);
// every plan ends by timeout (none when 0) and none is started after it.
// The Spending is nil without commitments.
func solve(prob *solver.Problem, cs []plan.Commitment, timeout time.Duration) (*solver.Plan, *plan.Spending, error) {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
		prob.Options.Deadline = deadline
	}
	solved, err := solver.Solve(prob)
	if err != nil {
		return nil, nil, fmt.Errorf("planning: %w", err)
	}
	if len(cs) == 0 {
		return solved, nil, nil
	}
	spent, err := plan.SpendBy(context.Background(), prob, solved, cs, deadline)
	if err != nil {
		return nil, nil, fmt.Errorf("planning with the commitments: %w", err)
	}
	return spent.Plan, spent, nil
}

// outcomes returns the outcome of each pod by index, a new node's named
// with its type ("new-1 m7i.large").
func (r *Report) outcomes() func(index int) Outcome {
	return func(index int) Outcome {
		o := r.Outcomes[index]
		if o.Kind == OutcomeNew {
			o.Node = plan.NewNodeName(o.NewNode) + " " + r.Plan.NewNodes[o.NewNode].InstanceType
		}
		return o
	}
}

// buildPending groups the cluster's pending pods.
func (r *Report) buildPending(cl *snapshot.Cluster) {
	out := r.outcomes()
	groups := pendingGroups{r: r, index: map[string]int{}}
	r.PendingPods = len(cl.Pending)
	for i := range cl.Pending {
		pp := &cl.Pending[i]
		o := Outcome{Kind: OutcomeNotPlanned, Reason: pp.NotPlanned, NewNode: -1}
		req := ""
		if pp.Index >= 0 {
			o = out(pp.Index)
			req = formatRequests(r.Problem, r.Problem.Pods[pp.Index].Requests)
		}
		scheduler := pp.SchedulerMessage
		if scheduler == "" {
			scheduler = "(the scheduler has not tried it yet)"
		} else if pp.SchedulerReason != "" && pp.SchedulerReason != "Unschedulable" {
			scheduler = pp.SchedulerReason + ": " + scheduler
		}
		groups.add(pp.Namespace, pp.Owner, pp.Key(), scheduler, req, pp.Index, o)
	}
	sort.SliceStable(r.Pending, func(a, b int) bool {
		if r.Pending[a].Namespace != r.Pending[b].Namespace {
			return r.Pending[a].Namespace < r.Pending[b].Namespace
		}
		return r.Pending[a].Owner < r.Pending[b].Owner
	})
}

// buildOfflinePending treats every pod of the manifests as pending.
func (r *Report) buildOfflinePending() {
	out := r.outcomes()
	groups := pendingGroups{r: r, index: map[string]int{}}
	p := r.Problem
	r.PendingPods = len(p.Pods)
	for i := range p.Pods {
		pod := &p.Pods[i]
		groups.add(pod.Namespace, pod.Owner, pod.Key(), "(offline: from manifests)", formatRequests(p, pod.Requests), i, out(i))
	}
}

// pendingGroups groups a report's pending pods: those of one owner with
// the same scheduler message, outcome and requests share a PendingGroup.
type pendingGroups struct {
	r     *Report
	index map[string]int // of r.Pending, by group key
}

// add puts the pod (key, index podIndex in the problem, -1 when not
// planned) into its group, and the group's proposed nodes with it.
func (pg *pendingGroups) add(namespace, owner, key, scheduler, req string, podIndex int, o Outcome) {
	r := pg.r
	node := o.Node
	if o.Kind == OutcomeNew {
		node = r.Plan.NewNodes[o.NewNode].InstanceType // grouped over several new nodes
	}
	k := strings.Join([]string{namespace, owner, scheduler, o.Kind, node, o.Reason, req}, "\x00")
	gi, ok := pg.index[k]
	if !ok {
		gi = len(r.Pending)
		pg.index[k] = gi
		r.Pending = append(r.Pending, PendingGroup{
			Owner: owner, Namespace: namespace, Requests: req, Scheduler: scheduler,
			Outcome: o.Kind, Node: o.Node, Reason: o.Reason, PodIndex: podIndex,
		})
	}
	g := &r.Pending[gi]
	g.Pods = append(g.Pods, key)
	if o.NewNode >= 0 && !slices.Contains(g.NewNodes, o.NewNode) {
		g.NewNodes = append(g.NewNodes, o.NewNode)
		if len(g.NewNodes) > 1 {
			g.Node = fmt.Sprintf("%d× %s", len(g.NewNodes), r.Plan.NewNodes[o.NewNode].InstanceType)
		}
	}
}

// formatRequests renders a pod's CPU, memory and any other requests.
func formatRequests(p *solver.Problem, req solver.Resources) string {
	var parts []string
	for i := range req {
		if req[i] == 0 || i == solver.Pods {
			continue
		}
		v := solver.FormatQuantity(i, req[i])
		switch i {
		case solver.CPU:
			v += " CPU"
		case solver.Memory:
		default:
			v += " " + p.ResourceName(i)
		}
		parts = append(parts, v)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func (r *Report) buildNodes(cl *snapshot.Cluster, objs *snapshot.Objects, claims []plan.Claim, prices plan.Prices) {
	raw := make(map[string]*corev1.Node, len(objs.Nodes))
	for _, n := range objs.Nodes {
		raw[n.Name] = n
	}
	r.ClusterNodes = len(cl.Nodes)
	for i := range cl.Nodes {
		n := &r.Existing[i] // priced by plan.Build: what a NodeClaim pays, else the catalog
		row := NodeRow{
			Name: n.Name, InstanceType: n.InstanceType, Capacity: n.CapacityType, Zone: n.Zone, Pool: n.Pool,
			CPUReq: n.Requested[solver.CPU], CPUAlloc: n.Allocatable[solver.CPU],
			MemReq: n.Requested[solver.Memory], MemAlloc: n.Allocatable[solver.Memory],
			Pods: n.Requested[solver.Pods], MaxPods: n.Allocatable[solver.Pods], Created: n.Created,
			Status: nodeStatus(raw[n.Name]), Usage: NewUsage(n.Requested, n.Allocatable),
		}
		if price, ok := prices.Node(n); ok {
			row.Price = &price
			r.ClusterPrice += price
		}
		r.Nodes = append(r.Nodes, row)
	}
	for _, f := range r.Existing {
		if !f.InFlight {
			continue
		}
		row := NodeRow{Name: f.Name, InstanceType: f.InstanceType, Capacity: f.CapacityType, Zone: f.Zone, Pool: f.Pool,
			CPUAlloc: f.Allocatable[solver.CPU], MemAlloc: f.Allocatable[solver.Memory], MaxPods: f.Allocatable[solver.Pods],
			Created: f.Created, Claim: true, Status: "NodeClaim: pending", Usage: NewUsage(solver.Resources{}, f.Allocatable)}
		for _, c := range claims {
			if c.Name == f.Name {
				row.Status = "NodeClaim: " + claimPhase(c)
			}
		}
		if price, ok := prices.Node(&f); ok {
			row.Price = &price
		}
		r.Nodes = append(r.Nodes, row)
	}
}

// ClaimPhase says how far a NodeClaim got: Pending, Launched, Registered,
// Initialized or Ready.
func claimPhase(c plan.Claim) string {
	phase := "pending"
	for _, want := range []string{"Launched", "Registered", "Initialized", "Ready"} {
		if slices.Contains(c.Conditions, want) {
			phase = strings.ToLower(want)
		}
	}
	if c.Deleting {
		phase = "deleting"
	}
	return phase
}

// ClaimPhase says how far a NodeClaim got: pending, launched, registered,
// initialized, ready or deleting.
func ClaimPhase(c plan.Claim) string { return claimPhase(c) }

// nodeStatus is Ready, NotReady or Unknown, plus SchedulingDisabled when cordoned.
func nodeStatus(n *corev1.Node) string {
	if n == nil {
		return "Unknown"
	}
	s := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				s = "Ready"
			} else {
				s = "NotReady"
			}
		}
	}
	if n.Spec.Unschedulable {
		s += ",SchedulingDisabled"
	}
	if n.DeletionTimestamp != nil {
		s += ",Deleting"
	}
	return s
}

func (r *Report) buildActions() {
	c := r.Consolidation
	for _, a := range c.Actions {
		repl := make([]string, len(a.Replacements))
		for i, n := range a.Replacements {
			repl[i] = fmt.Sprintf("%s %s $%.4f/h", n.InstanceType, n.CapacityType, n.Price)
		}
		r.Actions = append(r.Actions, ActionRow{Kind: a.Kind, Nodes: strings.Join(a.Nodes, ", "), Replacement: strings.Join(repl, ", "),
			Moves: a.Moves, Saving: a.Saving, Reason: a.Reason})
	}
	for _, b := range c.Blocked {
		r.Actions = append(r.Actions, ActionRow{Kind: "-", Nodes: b.Node, Reason: b.Reason})
	}
}

// Notices are the lines explain prints for what the input lacked and was
// planned for: the default NodePool and the EKS DaemonSets.
func (r *Report) Notices() []string {
	return plan.DefaultsNotices(r.DefaultPool, r.EKSDaemonSets, r.UnreadNodePools...)
}

// Cost is what the plan's new nodes cost an hour, as the screens compare
// plans (a what-if against its baseline): with Commitments, what they add
// to the bill (plan.Spending.Added: the commitments' room they use costs
// nothing more); without, their list price. The two compare: a what-if
// whose region holds none of the input's commitments is not charged their
// fees, which are paid either way.
func (r *Report) Cost() float64 {
	if r.Spending != nil {
		return r.Spending.Added()
	}
	return r.Plan.TotalPrice
}

// Covered is the share of new node i the Commitments cover in the plan's
// bill: 0 for a node paid at list price, and without Commitments.
func (r *Report) Covered(i int) float64 {
	if r.Spending == nil || i < 0 || i >= len(r.Spending.Covered) {
		return 0
	}
	return r.Spending.Covered[i]
}

// Delta is the what-if plan's Cost minus the baseline's, $/h.
func (r *Report) Delta() float64 { return r.Cost() - r.Baseline }

// Saving is what consolidation would save now, $/h.
func (r *Report) Saving() float64 {
	if r.Consolidation == nil {
		return 0
	}
	return r.Consolidation.Saving
}
