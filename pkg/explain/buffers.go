package explain

import (
	"fmt"
	"io"
	"slices"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// ResultBuffer is a CapacityBuffer's room in the plan: its virtual pods,
// never created, and what keeping them costs.
type ResultBuffer struct {
	// Namespace and Name are the CapacityBuffer's.
	Namespace string `json:"namespace"`
	// Name is the CapacityBuffer's name.
	Name string `json:"name"`
	// Replicas is the number of chunks the buffer asks for (what the
	// operator writes to status.replicas).
	Replicas int `json:"replicas"`
	// Placed is how many of them the plan keeps room for.
	Placed int `json:"placed"`
	// PricePerHour is the buffer's share of the prices of the nodes that
	// hold its room: on a new node, the node's price split among its pods
	// by their larger share of its CPU and memory; on an existing node's
	// free room, that share of its price.
	PricePerHour float64 `json:"pricePerHour"`
	// Nodes are the nodes holding its room: new ones named as in nodes[]
	// (new-1, ...), existing ones by name.
	Nodes []string `json:"nodes"`
}

// newBuffers renders the buffers' room in a plan.
func newBuffers(p *solver.Problem, solved *solver.Plan, rooms []plan.BufferRoom) []ResultBuffer {
	if len(rooms) == 0 {
		return nil
	}
	share := podCosts(p, solved)
	where := make(map[int]string, len(p.Pods))
	for i, n := range solved.NewNodes {
		for _, pod := range n.Pods {
			where[pod] = plan.NewNodeName(i)
		}
	}
	for _, e := range solved.Existing {
		where[e.Pod] = e.Node
	}
	out := make([]ResultBuffer, 0, len(rooms))
	for _, r := range rooms {
		b := ResultBuffer{Namespace: r.Namespace, Name: r.Name, Replicas: r.Count, Nodes: []string{}}
		cost := 0.0
		for pod := r.First; pod < r.First+r.Count; pod++ {
			node, ok := where[pod]
			if !ok {
				continue
			}
			b.Placed++
			cost += share[pod]
			if !slices.Contains(b.Nodes, node) {
				b.Nodes = append(b.Nodes, node)
			}
		}
		b.PricePerHour = round4(cost)
		out = append(out, b)
	}
	return out
}

// podCosts is each placed pod's share of its node's price, by pod index. A
// pod's weight on a node is its dominant share of the node's allocatable
// CPU and memory. A new node's price is split among its pods by weight (the
// plan launched it for them, idle room included); a pod on an existing
// node's free room costs its weight times the node's price (the pods
// already there pay the rest).
func podCosts(p *solver.Problem, solved *solver.Plan) map[int]float64 {
	out := map[int]float64{}
	for _, n := range solved.NewNodes {
		total := 0.0
		for _, pod := range n.Pods {
			total += weight(&p.Pods[pod].Requests, &n.Allocatable)
		}
		for _, pod := range n.Pods {
			if total > 0 {
				out[pod] = n.Price * weight(&p.Pods[pod].Requests, &n.Allocatable) / total
			} else {
				out[pod] = n.Price / float64(len(n.Pods))
			}
		}
	}
	nodes := make(map[string]*solver.Node, len(p.Nodes))
	for i := range p.Nodes {
		nodes[p.Nodes[i].Name] = &p.Nodes[i]
	}
	for _, e := range solved.Existing {
		if n := nodes[e.Node]; n != nil {
			out[e.Pod] = n.Price * min(1, weight(&p.Pods[e.Pod].Requests, &n.Allocatable))
		}
	}
	return out
}

// weight is the larger of the CPU and memory share of req in alloc.
func weight(req, alloc *solver.Resources) float64 {
	w := 0.0
	for _, r := range []int{solver.CPU, solver.Memory} {
		if alloc[r] > 0 {
			w = max(w, float64(req[r])/float64(alloc[r]))
		}
	}
	return w
}

// printBuffers prints the buffers' room: one row each.
func printBuffers(w io.Writer, bs []ResultBuffer) error {
	if len(bs) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nCapacity buffers (room kept for pods never created):\n")
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "BUFFER\tREPLICAS\tPLACED\t$/HOUR\t$/MONTH\tNODES")
	for _, b := range bs {
		fmt.Fprintf(tw, "%s/%s\t%d\t%d\t%.4f\t%.2f\t%s\n", b.Namespace, b.Name, b.Replicas, b.Placed, b.PricePerHour,
			round2(b.PricePerHour*plan.HoursPerMonth), dash(shortList(b.Nodes, 6)))
	}
	return tw.Flush()
}
