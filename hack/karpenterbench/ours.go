package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/karpenter/pkg/apis"
	v1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// ourInput is Karpenter's input as our front ends read it: the NodePool as
// the JSON a cluster serves, and the instance types as an --instance-types
// file.
type ourInput struct {
	pool  json.RawMessage
	types []solver.InstanceType
	// typesFile is the --instance-types file the types were read from.
	typesFile string
}

// newOurInput converts Karpenter's NodePool to JSON and its instance types
// to our --instance-types file (written in dir), then reads that file the
// way `explain --instance-types` does (plan.Catalog). The file has no room
// for the fake types' own labels (size, special, integer): no pod of the
// mix selects them.
func newOurInput(in karpenterInput, dir string) (ourInput, error) {
	np := in.pool.DeepCopy()
	np.APIVersion, np.Kind = apis.Group+"/v1", "NodePool"
	pool, err := json.Marshal(np)
	if err != nil {
		return ourInput{}, fmt.Errorf("encoding NodePool %s: %w", np.Name, err)
	}
	data, err := json.Marshal(map[string]any{"instanceTypes": typesFile(in.types)})
	if err != nil {
		return ourInput{}, fmt.Errorf("encoding the instance types: %w", err)
	}
	path := filepath.Join(dir, "karpenter-fake-types.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return ourInput{}, fmt.Errorf("writing the instance types: %w", err)
	}
	cat := plan.Catalog{InstanceTypesFile: path}
	types, _, err := cat.InstanceTypes()
	if err != nil {
		return ourInput{}, fmt.Errorf("reading Karpenter's instance types as ours: %w", err)
	}
	return ourInput{pool: pool, types: types, typesFile: path}, nil
}

// fileType is an entry of our --instance-types file, as
// cloud.ReadInstanceTypes reads it.
type fileType struct {
	Name         string            `json:"name"`
	CPU          string            `json:"cpu"`
	Memory       string            `json:"memory"`
	Pods         int64             `json:"pods"`
	Architecture string            `json:"architecture"`
	Overhead     map[string]string `json:"overhead"`
	Offerings    []fileOffering    `json:"offerings"`
}

type fileOffering struct {
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
}

// typesFile writes Karpenter's instance types as our file's entries: their
// capacity, their overhead (kube-reserved, system-reserved and eviction
// threshold, all Karpenter subtracts) and their available offerings.
func typesFile(types []*cloudprovider.InstanceType) []fileType {
	out := make([]fileType, len(types))
	for i, it := range types {
		over := it.Overhead.Total()
		out[i] = fileType{
			Name:         it.Name,
			CPU:          it.Capacity.Cpu().String(),
			Memory:       it.Capacity.Memory().String(),
			Pods:         it.Capacity.Pods().Value(),
			Architecture: it.Requirements.Get(corev1.LabelArchStable).Any(),
			Overhead:     map[string]string{"cpu": over.Cpu().String(), "memory": over.Memory().String()},
		}
		for _, o := range it.Offerings.Available() {
			out[i].Offerings = append(out[i].Offerings, fileOffering{
				Zone:         o.Requirements.Get(corev1.LabelTopologyZone).Any(),
				CapacityType: o.Requirements.Get(v1.CapacityTypeLabelKey).Any(),
				Price:        o.Price,
			})
		}
	}
	return out
}

// ours is our side's answer, with the lower bound of its plan.
type ours struct {
	side
	// Bound is the solver's lower bound for the pods it placed ($/h).
	Bound float64
	// Warnings are what the snapshot said of the input.
	Warnings []string
}

// runOurs plans the pods the way a live front end does: the corev1 objects
// through snapshot.FromObjects (our parsing of pods and the NodePool),
// plan.Build and solver.Solve.
func runOurs(in ourInput, pods []*corev1.Pod) (ours, error) {
	var out ours
	var err error
	out.PeakHeap = heapPeak(func() { err = oursSolve(in, pods, &out) })
	return out, err
}

func oursSolve(in ourInput, pods []*corev1.Pod, out *ours) error {
	start := time.Now()
	cl := snapshot.FromObjects(&snapshot.Objects{Pods: pods, NodePools: []json.RawMessage{in.pool}, KarpenterInstalled: true})
	res, err := plan.Build(plan.Input{Cluster: cl, InstanceTypes: in.types})
	if err != nil {
		return fmt.Errorf("ours: building the problem: %w", err)
	}
	out.Setup = time.Since(start)
	start, cpu := time.Now(), cpuTime()
	p, err := solver.Solve(res.Problem)
	out.Solve, out.SolveCPU = time.Since(start), cpuTime()-cpu
	if err != nil {
		return fmt.Errorf("ours: solve: %w", err)
	}
	out.Nodes, out.Cost, out.Bound = len(p.NewNodes), p.TotalPrice, p.LowerBound
	out.Unplaced = len(p.Unschedulable)
	for _, pp := range cl.Pending {
		if pp.Index < 0 {
			out.Unplaced++
		}
	}
	out.Unplaced += len(pods) - len(cl.Pending)
	out.Warnings = cl.Warnings
	return nil
}
