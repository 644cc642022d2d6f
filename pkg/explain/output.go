package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// HoursPerMonth converts hourly prices to monthly ones, as AWS does.
const HoursPerMonth = 730

// Result is the machine-readable answer of explain (-o json|yaml).
type Result struct {
	metav1.TypeMeta        `json:",inline"`
	Source                 string              `json:"source"`
	Nodes                  []ResultNode        `json:"nodes"`
	Unschedulable          []ResultUnscheduled `json:"unschedulable"`
	TotalPricePerHour      float64             `json:"totalPricePerHour"`
	TotalPricePerMonth     float64             `json:"totalPricePerMonth"`
	LowerBoundPricePerHour float64             `json:"lowerBoundPricePerHour"`
}

// ResultNode is one proposed node.
type ResultNode struct {
	InstanceType string            `json:"instanceType"`
	CapacityType string            `json:"capacityType"`
	Zone         string            `json:"zone"`
	NodePool     string            `json:"nodePool"`
	PricePerHour float64           `json:"pricePerHour"`
	Pods         []string          `json:"pods"`
	Allocatable  map[string]string `json:"allocatable"`
	Requested    map[string]string `json:"requested"`
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

// NewResult renders a plan with pod names and readable quantities.
func NewResult(p *solver.Problem, plan *solver.Plan, source string) *Result {
	r := &Result{
		TypeMeta:               metav1.TypeMeta{APIVersion: "rightsize.dev/v1alpha1", Kind: "Plan"},
		Source:                 source,
		Nodes:                  []ResultNode{},
		Unschedulable:          []ResultUnscheduled{},
		TotalPricePerHour:      plan.TotalPrice,
		TotalPricePerMonth:     round2(plan.TotalPrice * HoursPerMonth),
		LowerBoundPricePerHour: plan.LowerBound,
	}
	for _, n := range plan.NewNodes {
		node := ResultNode{
			InstanceType: n.InstanceType, CapacityType: n.CapacityType, Zone: n.Zone, NodePool: n.Pool,
			PricePerHour: n.Price, Pods: make([]string, len(n.Pods)),
			Allocatable: quantities(p, n.Allocatable), Requested: quantities(p, n.Requested),
		}
		for i, pod := range n.Pods {
			node.Pods[i] = p.Pods[pod].Key()
		}
		r.Nodes = append(r.Nodes, node)
	}
	for _, u := range plan.Unschedulable {
		r.Unschedulable = append(r.Unschedulable, ResultUnscheduled{Pod: p.Pods[u.Pod].Key(), Owner: p.Pods[u.Pod].Owner, Reason: u.Reason})
	}
	return r
}

func quantities(p *solver.Problem, r solver.Resources) map[string]string {
	out := map[string]string{}
	for i := range r {
		if name := p.ResourceName(i); name != "" && r[i] != 0 {
			out[name] = solver.FormatQuantity(i, r[i])
		}
	}
	return out
}

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }

// PrintHuman writes the plan as kubectl-style tables: proposed nodes grouped
// by type, optionally one row per node with its pods (wide), then the pods
// that stay pending and why.
func PrintHuman(w io.Writer, r *Result, wide bool) error {
	tw := printers.GetNewTabWriter(w)
	if len(r.Nodes) == 0 {
		fmt.Fprintln(tw, "No new nodes needed.")
	} else {
		fmt.Fprintln(tw, "NODEPOOL\tINSTANCE TYPE\tCAPACITY\tZONE\tNODES\tPODS\t$/HOUR\t$/MONTH")
		for _, g := range groupNodes(r.Nodes) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%.4f\t%.2f\n", g.NodePool, g.InstanceType, g.CapacityType, g.Zone,
				g.count, g.pods, g.price, g.price*HoursPerMonth)
		}
		fmt.Fprintf(tw, "TOTAL\t\t\t\t%d\t%d\t%.4f\t%.2f\n", len(r.Nodes), countPods(r.Nodes), r.TotalPricePerHour, r.TotalPricePerMonth)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Nodes) > 0 && r.LowerBoundPricePerHour > 0 {
		fmt.Fprintf(w, "\nLower bound: $%.4f/h; this plan costs %.3f× the bound.\n", r.LowerBoundPricePerHour, r.TotalPricePerHour/r.LowerBoundPricePerHour)
	}
	if wide && len(r.Nodes) > 0 {
		fmt.Fprintln(w)
		tw = printers.GetNewTabWriter(w)
		fmt.Fprintln(tw, "NODE\tINSTANCE TYPE\tZONE\tCPU\tMEMORY\tPODS")
		for i, n := range r.Nodes {
			fmt.Fprintf(tw, "new-%d\t%s\t%s\t%s/%s\t%s/%s\t%s\n", i+1, n.InstanceType, n.Zone,
				orZero(n.Requested["cpu"]), n.Allocatable["cpu"], orZero(n.Requested["memory"]), n.Allocatable["memory"], strings.Join(n.Pods, ","))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.Unschedulable) > 0 {
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
	if r.Source != "" {
		fmt.Fprintf(w, "\nPrices: %s.\n", r.Source)
	}
	return nil
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
