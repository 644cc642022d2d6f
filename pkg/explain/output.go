package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/disruption"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/report"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Result is the machine-readable answer of explain (-o json|yaml).
type Result struct {
	metav1.TypeMeta `json:",inline"`
	// Source says where the instance types and prices came from, and how
	// old the prices are.
	Source                 ResultSource        `json:"source"`
	Nodes                  []ResultNode        `json:"nodes"`
	Unschedulable          []ResultUnscheduled `json:"unschedulable"`
	TotalPricePerHour      float64             `json:"totalPricePerHour"`
	TotalPricePerMonth     float64             `json:"totalPricePerMonth"`
	LowerBoundPricePerHour float64             `json:"lowerBoundPricePerHour"`
	// LowerBoundApproximate is set when the bound's linear program stopped
	// at its budget (time, pivots, --timeout): the bound is then a weaker
	// one, still valid.
	LowerBoundApproximate bool `json:"lowerBoundApproximate,omitempty"`
	// BestEffortPods counts the planned pods that request no CPU and no
	// memory: they are planned as taking none, so the plan is a floor.
	BestEffortPods int `json:"bestEffortPods,omitempty"`
	// DefaultPool says what the default pool allows when the input defines
	// no NodePool and it was planned.
	DefaultPool string `json:"defaultPool,omitempty"`
	// EKSDaemonSets name the DaemonSets EKS runs on every node, counted on
	// every planned node because the offline input has none.
	EKSDaemonSets []string `json:"eksDaemonSets,omitempty"`
	// Advice are wider default pools that would place pods the plan cannot
	// place, or plan the pods for less.
	Advice []ResultAdvice `json:"advice,omitempty"`
	// AdviceSkipped says why no wider pool was planned, when the plan took
	// too long to plan it again, or which wider pools' plans ran past
	// their budget and gave no advice (a cut plan can cost more than the
	// pool would).
	AdviceSkipped string `json:"adviceSkipped,omitempty"`
	// StoppedEarly is set when --timeout ended the search before it
	// finished: a plan found with more time may be cheaper.
	StoppedEarly bool `json:"stoppedEarly,omitempty"`
	// OptimalPricePerHour is the price of the cheapest plan there is,
	// found by exhaustive search when at most 20 pods (ExactLimit) go onto
	// new nodes only and nothing the search does not model (topology
	// spread, pod affinity, host ports, preferences, limits, pool weights)
	// applies; 0 when not searched or the search gave up.
	OptimalPricePerHour float64 `json:"optimalPricePerHour,omitempty"`
	// Buffers are the CapacityBuffers' room: the nodes that hold it and
	// its price.
	Buffers []ResultBuffer `json:"buffers,omitempty"`
	// Commitments are the input's Commitments: each one's utilisation,
	// the plan's bill with them, and the saving against planning as if
	// there were none.
	Commitments *ResultCommitments `json:"commitments,omitempty"`
	// LiveResult is set when a live cluster was read; its fields are
	// inlined in JSON and YAML.
	*LiveResult
}

// ResultSource says where a plan's instance types and prices came from.
type ResultSource struct {
	// Origin is "embedded" (the AWS catalog built into the binary) or
	// "file" (--instance-types).
	Origin string `json:"origin"`
	// Region is the embedded catalog's region.
	Region string `json:"region,omitempty"`
	// Date is the date of the embedded catalog's on-demand prices in the
	// region, YYYY-MM-DD (spot prices may be older: Description says so).
	Date string `json:"date,omitempty"`
	// File is the --instance-types file.
	File string `json:"file,omitempty"`
	// Description says the same in one line, as the human output does:
	// "embedded AWS catalog of 2026-07-20, region us-east-1 (spot 2025-05-28)".
	Description string `json:"description"`
}

// LiveResult is what explain adds when it reads a live cluster.
type LiveResult struct {
	Scope ResultScope `json:"scope"`
	// Pending are the pending pods in scope, with what the plan does for
	// them.
	Pending []ResultPending `json:"pending"`
	// ExistingNodes are the cluster's nodes (with a workload named: the
	// nodes it runs on or would run on).
	ExistingNodes []ResultExistingNode `json:"existingNodes"`
	// ClusterPricePerHour sums the catalog prices of the PricedNodes of the
	// ClusterNodes existing nodes.
	ClusterPricePerHour  float64 `json:"clusterPricePerHour"`
	ClusterPricePerMonth float64 `json:"clusterPricePerMonth"`
	ClusterNodes         int     `json:"clusterNodes"`
	PricedNodes          int     `json:"pricedNodes"`
	// Consolidation is what the consolidation planner would do now
	// (--consolidation); nothing is changed.
	Consolidation *disruption.Report `json:"consolidation,omitempty"`
}

// ResultScope says what the live report covers.
type ResultScope struct {
	// Namespace of the pending pods shown; "" for all namespaces.
	Namespace string `json:"namespace"`
	// Workload, when named, is "Kind/name"; Running counts its pods on nodes.
	Workload string `json:"workload,omitempty"`
	Running  int    `json:"running,omitempty"`
	// PendingInCluster is the number of pending pods read, all of which the
	// plan considers.
	PendingInCluster int `json:"pendingInCluster"`
	// PodNamespace is set when pods could be read in this namespace only.
	PodNamespace string `json:"podNamespace,omitempty"`
	// NodePoolsUnread are the NodePool resources the user may not list
	// ("nodepools.rightsize.dev"): their pools are not planned, and when
	// no pool could be read the plan is the default pool's (defaultPool).
	NodePoolsUnread []string `json:"nodePoolsUnread,omitempty"`
}

// ResultPending is a pending pod: what the scheduler says and what the
// plan would do. Exactly one of Reason and Node is set.
type ResultPending struct {
	Pod              string `json:"pod"`
	Owner            string `json:"owner"`
	SchedulerReason  string `json:"schedulerReason,omitempty"`
	SchedulerMessage string `json:"schedulerMessage"`
	// Reason says, in one sentence, why no allowed node can take the pod
	// (or why it is not planned).
	Reason string `json:"reason,omitempty"`
	// Node takes the pod: a proposed node (NewNode, named as in nodes[]:
	// new-1, new-2, ...) or an existing node.
	Node         string  `json:"node,omitempty"`
	NewNode      bool    `json:"newNode,omitempty"`
	InstanceType string  `json:"instanceType,omitempty"`
	CapacityType string  `json:"capacityType,omitempty"`
	Zone         string  `json:"zone,omitempty"`
	PricePerHour float64 `json:"pricePerHour,omitempty"`
	Note         string  `json:"note,omitempty"`
}

// ResultExistingNode is a node of the cluster.
type ResultExistingNode struct {
	Name         string `json:"name"`
	InstanceType string `json:"instanceType"`
	CapacityType string `json:"capacityType"`
	Zone         string `json:"zone"`
	NodePool     string `json:"nodePool"`
	// PricePerHour is null when the catalog does not know the type.
	PricePerHour *float64          `json:"pricePerHour"`
	Allocatable  map[string]string `json:"allocatable"`
	Requested    map[string]string `json:"requested"`
	Pods         int               `json:"pods"`
	Cordoned     bool              `json:"cordoned,omitempty"`
	// Initializing is set for the node of a rightsize NodeClaim that has
	// not initialized yet.
	Initializing bool `json:"initializing,omitempty"`
	// Usage is Requested and Allocatable as the tables show them; not
	// written by -o json or yaml, where the quantities are exact.
	Usage report.Usage `json:"-"`
}

// ResultNode is one proposed node.
type ResultNode struct {
	// Name is "new-1", "new-2", ... as in -o wide and pending[].node.
	Name         string            `json:"name"`
	InstanceType string            `json:"instanceType"`
	CapacityType string            `json:"capacityType"`
	Zone         string            `json:"zone"`
	NodePool     string            `json:"nodePool"`
	PricePerHour float64           `json:"pricePerHour"`
	Pods         []string          `json:"pods"`
	Allocatable  map[string]string `json:"allocatable"`
	Requested    map[string]string `json:"requested"`
	// Labels are the labels the node would carry: its instance type's, its
	// pool's (template labels, the values the plan chose for requirements
	// that allow several, and requirements that allow one value), then the
	// pool name, zone and capacity type.
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are its pool's taints (startup taints left out: they are gone
	// once the node is ready).
	Taints []v1.Taint `json:"taints,omitempty"`
	// Reason says in one sentence why this node.
	Reason string `json:"reason"`
	// InstanceTypeOptions are the instance types its NodeClaim would
	// allow, by price, the planned one first: those of its pool that hold
	// the same pods (solver.LaunchOptions), at most 60, as the operator
	// launches it with no --launch-price-premium.
	InstanceTypeOptions []string `json:"instanceTypeOptions,omitempty"`
	// Usage is Requested and Allocatable as the tables show them; not
	// written by -o json or yaml, where the quantities are exact.
	Usage report.Usage `json:"-"`
}

// ResultUnscheduled is one pod left pending, with the reason.
type ResultUnscheduled struct {
	Pod    string `json:"pod"`
	Owner  string `json:"owner,omitempty"`
	Reason string `json:"reason"`
}

// DeepCopyObject implements runtime.Object, so cli-runtime's printers print a Result.
func (r *Result) DeepCopyObject() runtime.Object {
	data, _ := json.Marshal(r)
	out := &Result{}
	_ = json.Unmarshal(data, out)
	return out
}

// NewResult renders a plan's report (report.FromPlan) with pod names and
// readable quantities.
func NewResult(rep *report.Report, source ResultSource) *Result {
	p, solved := rep.Problem, rep.Plan
	r := &Result{
		TypeMeta:               metav1.TypeMeta{APIVersion: "rightsize.dev/v1alpha1", Kind: "Plan"},
		Source:                 source,
		Unschedulable:          []ResultUnscheduled{},
		TotalPricePerHour:      solved.TotalPrice,
		TotalPricePerMonth:     round2(solved.TotalPrice * plan.HoursPerMonth),
		LowerBoundPricePerHour: solved.LowerBound,
		LowerBoundApproximate:  solved.BoundApproximate,
	}
	r.Nodes = make([]ResultNode, len(rep.Proposed))
	for i := range rep.Proposed {
		r.Nodes[i] = resultNode(&rep.Proposed[i])
	}
	for _, u := range solved.Unschedulable {
		pod := &p.Pods[u.Pod]
		r.Unschedulable = append(r.Unschedulable, ResultUnscheduled{Pod: pod.Key(), Owner: pod.Owner, Reason: rep.Outcomes[u.Pod].Reason})
	}
	for i := range p.Pods {
		if q := &p.Pods[i].Requests; q[solver.CPU] == 0 && q[solver.Memory] == 0 {
			r.BestEffortPods++
		}
	}
	return r
}

// resultNode is a proposed node's row as -o json and -o yaml write it.
func resultNode(n *report.ProposedNode) ResultNode {
	return ResultNode{
		Name: n.Name, InstanceType: n.InstanceType, CapacityType: n.Capacity, Zone: n.Zone, NodePool: n.Pool,
		PricePerHour: n.Price, Pods: n.Pods, Allocatable: n.AllocatableQuantities, Requested: n.RequestedQuantities,
		Labels: n.Labels, Taints: n.Taints, Reason: n.Reason, InstanceTypeOptions: n.InstanceTypeOptions, Usage: n.Usage,
	}
}

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }

// PrintHuman writes the plan as kubectl-style tables: proposed nodes grouped
// by type, optionally one row per node with its pods (wide), then the pods
// that stay pending and why. For a live cluster the pending pods in scope,
// grouped by owner, come first and the current nodes with their cost last.
func PrintHuman(w io.Writer, r *Result, wide bool) error {
	if r.LiveResult != nil {
		printPending(w, r)
		fmt.Fprintln(w)
		if r.Scope.PendingInCluster > 0 {
			fmt.Fprintf(w, "Proposed new nodes (for all %d pending pods):\n", r.Scope.PendingInCluster)
		}
	}
	tw := printers.GetNewTabWriter(w)
	switch {
	case len(r.Nodes) == 0 && len(r.Unschedulable) > 0:
		// Never "no new nodes needed" while pods cannot be placed.
		fmt.Fprintf(tw, "No new node can be proposed: %d pod(s) cannot be placed (see below).\n", len(r.Unschedulable))
	case len(r.Nodes) == 0:
		fmt.Fprintln(tw, "No new nodes needed.")
	default:
		fmt.Fprintln(tw, "NODEPOOL\tINSTANCE TYPE\tCAPACITY\tZONE\tNODES\tPODS\t$/HOUR\t$/MONTH")
		for _, g := range groupNodes(r.Nodes) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%.4f\t%.2f\n", g.NodePool, g.InstanceType, g.CapacityType, g.Zone,
				g.count, g.pods, g.price, round2(g.price*plan.HoursPerMonth)) // rounded as the TOTAL is: one node's row and the total agree
		}
		fmt.Fprintf(tw, "TOTAL\t\t\t\t%d\t%d\t%.4f\t%.2f\n", len(r.Nodes), countPods(r.Nodes), r.TotalPricePerHour, r.TotalPricePerMonth)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case len(r.Nodes) == 0:
	case r.OptimalPricePerHour > 0 && r.TotalPricePerHour <= r.OptimalPricePerHour+1e-9:
		fmt.Fprintf(w, "\nThis plan is optimal: an exhaustive search finds none cheaper for these %d pods.\n", countPods(r.Nodes))
	case r.OptimalPricePerHour > 0:
		fmt.Fprintf(w, "\nThe optimum is $%.4f/h (exhaustive search); this plan costs %.3f× it.\n", r.OptimalPricePerHour, r.TotalPricePerHour/r.OptimalPricePerHour)
	case r.LowerBoundPricePerHour > 0:
		approx := ""
		if r.LowerBoundApproximate {
			approx = " (bound: approximate; its program stopped at its budget)"
		}
		fmt.Fprintf(w, "\nLower bound: $%.4f/h%s; this plan costs %.3f× the bound.\n", r.LowerBoundPricePerHour, approx, r.TotalPricePerHour/r.LowerBoundPricePerHour)
	}
	if r.StoppedEarly {
		fmt.Fprintln(w, "\nThe search reached --timeout and stopped early; the plan may be dearer than one found with more time.")
	}
	if r.BestEffortPods > 0 {
		fmt.Fprintf(w, "\n%d pod(s) request no CPU or memory; they are planned as taking none, so this plan is a floor.\n", r.BestEffortPods)
	}
	if wide && len(r.Nodes) > 0 {
		fmt.Fprintln(w)
		tw = printers.GetNewTabWriter(w)
		fmt.Fprintln(tw, "NODE\tINSTANCE TYPE\tZONE\tCPU\tMEMORY\tPODS")
		for _, n := range r.Nodes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s/%s\t%s/%s\t%s\n", n.Name, n.InstanceType, n.Zone,
				n.Usage.CPURequested, n.Usage.CPUAllocatable, n.Usage.MemoryRequested, n.Usage.MemoryAllocatable, strings.Join(n.Pods, ","))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
		tw = printers.GetNewTabWriter(w)
		fmt.Fprintln(tw, "NODE\tWHY")
		for _, n := range r.Nodes {
			fmt.Fprintf(tw, "%s\t%s\n", n.Name, n.Reason)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if err := printBuffers(w, r.Buffers); err != nil {
		return err
	}
	if err := printCommitments(w, r.Commitments); err != nil {
		return err
	}
	// Live, the pending section already gives every pod in scope its reason.
	if len(r.Unschedulable) > 0 && r.LiveResult == nil {
		fmt.Fprintf(w, "\n%d pod(s) cannot be placed on any allowed node:\n", len(r.Unschedulable))
		tw = printers.GetNewTabWriter(w)
		fmt.Fprintln(tw, "POD\tREASON")
		for _, u := range r.Unschedulable {
			fmt.Fprintf(tw, "%s\t%s\n", u.Pod, u.Reason)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if r.LiveResult != nil {
		if err := printExisting(w, r.LiveResult); err != nil {
			return err
		}
		if c := r.LiveResult.Consolidation; c != nil {
			if err := printConsolidation(w, c); err != nil {
				return err
			}
		}
	}
	printDefaults(w, r)
	if r.Source.Description != "" {
		fmt.Fprintf(w, "\nPrices: %s.\n", r.Source.Description)
	}
	return nil
}

// scopeText says whose pending pods are shown.
func scopeText(s *ResultScope) string {
	var parts []string
	if s.Workload != "" {
		parts = append(parts, "of "+strings.ToLower(s.Workload))
	}
	if s.Namespace == "" {
		parts = append(parts, "in all namespaces")
	} else {
		parts = append(parts, fmt.Sprintf("in namespace %q", s.Namespace))
	}
	return strings.Join(parts, " ")
}

// pendingGroup is the pods of one owner with the same scheduler message and
// the same outcome in the plan.
type pendingGroup struct {
	owner, scheduler, outcome string
	pods, nodes               []string
}

// printPending writes the pending pods in scope, grouped by owner.
func printPending(w io.Writer, r *Result) {
	live := r.LiveResult
	if live.Scope.PodNamespace != "" {
		fmt.Fprintf(w, "Only the pods of namespace %q could be read.\n", live.Scope.PodNamespace)
	}
	if len(live.Scope.NodePoolsUnread) > 0 && r.DefaultPool == "" {
		fmt.Fprintf(w, "NodePools of %s could not be read; only the others are planned.\n", strings.Join(live.Scope.NodePoolsUnread, " and "))
	}
	if live.Scope.Workload != "" {
		fmt.Fprintf(w, "%s: %d pod(s) running, %d pending.\n", strings.ToLower(live.Scope.Workload), live.Scope.Running, len(live.Pending))
	}
	if len(live.Pending) == 0 {
		fmt.Fprintf(w, "No pending pods %s.\n", scopeText(&live.Scope))
		return
	}
	fmt.Fprintf(w, "%d pending pod(s) %s:\n", len(live.Pending), scopeText(&live.Scope))
	index := map[[3]string]int{}
	var groups []pendingGroup
	for _, p := range live.Pending {
		var outcome, node string
		switch {
		case p.NewNode:
			outcome = fmt.Sprintf("a new %s (%s, %s, $%.4f/h):", p.InstanceType, p.CapacityType, p.Zone, p.PricePerHour)
			node = p.Node
		case p.Node != "":
			outcome = fmt.Sprintf("fits existing node %s; %s", p.Node, p.Note)
		default:
			outcome = "cannot be placed: " + p.Reason
		}
		scheduler := p.SchedulerMessage
		if scheduler == "" {
			scheduler = "(no message yet: the scheduler has not tried this pod)"
		} else if p.SchedulerReason != "" && p.SchedulerReason != "Unschedulable" {
			scheduler = p.SchedulerReason + ": " + scheduler
		}
		key := [3]string{p.Owner, scheduler, outcome}
		i, ok := index[key]
		if !ok {
			i = len(groups)
			index[key] = i
			groups = append(groups, pendingGroup{owner: p.Owner, scheduler: scheduler, outcome: outcome})
		}
		groups[i].pods = append(groups[i].pods, p.Pod)
		if node != "" && !slices.Contains(groups[i].nodes, node) {
			groups[i].nodes = append(groups[i].nodes, node)
		}
	}
	sort.SliceStable(groups, func(a, b int) bool { return groups[a].owner < groups[b].owner })
	for _, g := range groups {
		outcome := g.outcome
		if len(g.nodes) > 0 {
			outcome += " " + shortList(g.nodes, 5)
		}
		fmt.Fprintf(w, "\n%s: %d pod(s) (%s)\n", g.owner, len(g.pods), shortList(g.pods, 3))
		fmt.Fprintf(w, "  Scheduler: %s\n", g.scheduler)
		fmt.Fprintf(w, "  Plan:      %s\n", outcome)
	}
}

// shortList joins up to n items and counts the rest.
func shortList(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s, +%d more", strings.Join(items[:n], ", "), len(items)-n)
}

// printExisting writes the current nodes and the cluster's cost.
func printExisting(w io.Writer, live *LiveResult) error {
	if live.ClusterNodes == 0 {
		fmt.Fprintln(w, "\nCurrent nodes: none.")
		return nil
	}
	fmt.Fprintf(w, "\nCurrent nodes: %d, $%.4f/hour, $%.2f/month", live.ClusterNodes, live.ClusterPricePerHour, live.ClusterPricePerMonth)
	switch {
	case live.PricedNodes < live.ClusterNodes:
		fmt.Fprintf(w, " (%d of %d nodes priced; the catalog does not know the others' instance type).\n", live.PricedNodes, live.ClusterNodes)
	default:
		fmt.Fprintln(w, ".")
	}
	if live.Scope.Workload != "" {
		if len(live.ExistingNodes) == 0 {
			return nil
		}
		fmt.Fprintf(w, "Nodes %s runs or would run on:\n", strings.ToLower(live.Scope.Workload))
	}
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "NAME\tINSTANCE TYPE\tCAPACITY\tZONE\tNODEPOOL\t$/HOUR\tCPU\tMEMORY\tPODS")
	for _, n := range live.ExistingNodes {
		price := "-"
		if n.PricePerHour != nil {
			price = fmt.Sprintf("%.4f", *n.PricePerHour)
		}
		name := n.Name
		if n.Cordoned {
			name += " (cordoned)"
		}
		if n.Initializing {
			name += " (initializing)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s/%s\t%s/%s\t%d/%s\n", name, dash(n.InstanceType), dash(n.CapacityType), dash(n.Zone), dash(n.NodePool), price,
			n.Usage.CPURequested, n.Usage.CPUAllocatable, n.Usage.MemoryRequested, n.Usage.MemoryAllocatable, n.Pods, orZero(n.Allocatable["pods"]))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

type nodeGroup struct {
	ResultNode
	count, pods int
	price       float64
}

// groupNodes sums nodes with the same pool, type, capacity type and zone.
func groupNodes(nodes []ResultNode) []nodeGroup {
	index := map[[4]string]int{}
	var groups []nodeGroup
	for _, n := range nodes {
		key := [4]string{n.NodePool, n.InstanceType, n.CapacityType, n.Zone}
		i, ok := index[key]
		if !ok {
			i = len(groups)
			index[key] = i
			groups = append(groups, nodeGroup{ResultNode: n})
		}
		groups[i].count++
		groups[i].pods += len(n.Pods)
		groups[i].price += n.PricePerHour
	}
	sort.SliceStable(groups, func(a, b int) bool {
		if groups[a].NodePool != groups[b].NodePool {
			return groups[a].NodePool < groups[b].NodePool
		}
		return groups[a].price > groups[b].price
	})
	return groups
}

func countPods(nodes []ResultNode) int {
	n := 0
	for _, node := range nodes {
		n += len(node.Pods)
	}
	return n
}

// printConsolidation writes what consolidation would do now: the actions
// with their saving, the action the operator would take next, and for
// every node its verdict in one sentence.
func printConsolidation(w io.Writer, c *disruption.Report) error {
	guards := "the planner's guards, as Karpenter applies them"
	if c.Guards == disruption.GuardsOperator {
		guards = "the rightsize operator's guards"
	}
	fmt.Fprintf(w, "\nConsolidation (read-only: nothing is changed; %s): the cluster costs $%.4f/h; packed from scratch it would cost $%.4f/h.\n",
		guards, c.CurrentPrice, c.TargetPrice)
	if len(c.Actions) == 0 {
		fmt.Fprintln(w, "No consolidation action passes every guard now.")
	} else {
		tw := printers.GetNewTabWriter(w)
		fmt.Fprintln(tw, "ACTION\tNODES\tREPLACEMENT\tPODS MOVED\tSAVING $/H\tWHY")
		for _, a := range c.Actions {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.4f\t%s\n", a.Kind, shortList(a.Nodes, 3), dash(replacements(&a)), len(a.Moves), a.Saving, a.Reason)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "Saving available: $%.4f/h ($%.2f/month).\n", c.Saving, c.Saving*plan.HoursPerMonth)
	}
	if n := c.Next; n != nil {
		what := "delete " + strings.Join(n.Nodes, ", ")
		if r := replacements(&n.Action); r != "" {
			what = fmt.Sprintf("replace %s by %s", strings.Join(n.Nodes, ", "), r)
		}
		fmt.Fprintf(w, "Next: the operator would %s (%s), saving $%.4f/h: %s.\n", what, n.DisruptionReason, n.Saving, n.Reason)
		for _, t := range c.Together {
			fmt.Fprintf(w, "  and at the same time %s (%s), saving $%.4f/h.\n", disruption.Describe(&t.Action), t.DisruptionReason, t.Saving)
		}
	} else if c.Guards == disruption.GuardsOperator {
		fmt.Fprintln(w, "Next: the operator would do nothing now.")
	}
	if len(c.Launching) > 0 {
		fmt.Fprintf(w, "Launching: %s; no pod is moved onto a node that may not come.\n", shortList(c.Launching, 5))
	}
	printGap(w, c)
	if len(c.Nodes) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "NODE\tNODEPOOL\tVERDICT\tWHY")
	for _, v := range c.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s.\n", v.Node, dash(v.NodePool), v.Verdict, v.Reason)
	}
	return tw.Flush()
}

// printGap writes how far the cluster is above packed from scratch and
// which guards keep that gap: "Gap: $1.2/h above packed from scratch
// ($0.8/h in the actions above); kept: 3 nodes: PDB …".
func printGap(w io.Writer, c *disruption.Report) {
	fmt.Fprintf(w, "Gap: $%.4f/h above packed from scratch", c.Gap)
	if c.Gap > 0 && c.Saving > 0 {
		fmt.Fprintf(w, " ($%.4f/h of it in the actions above)", min(c.Saving, c.Gap))
	}
	if len(c.GapGuards) == 0 {
		fmt.Fprintln(w, ".")
		return
	}
	fmt.Fprintln(w, "; the nodes kept, by guard:")
	for i, g := range c.GapGuards {
		if i == 5 {
			fmt.Fprintf(w, "  … and %d more guards (see the nodes below).\n", len(c.GapGuards)-i)
			break
		}
		fmt.Fprintf(w, "  %s ($%.4f/h): %s.\n", disruption.Plural(len(g.Nodes), "node", "nodes"), g.PricePerHour, disruption.Clause(g.Reason))
	}
}

// replacements names an action's new nodes: "m5.large on-demand, ...".
func replacements(a *solver.Action) string {
	repl := make([]string, len(a.Replacements))
	for i, n := range a.Replacements {
		repl[i] = n.InstanceType + " " + n.CapacityType
	}
	return strings.Join(repl, ", ")
}
