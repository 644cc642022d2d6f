// Package bench generates the problems the solver is benchmarked on, the
// same input for the solver and for the baselines in pkg/solver/baseline:
//
//	a  Karpenter's own scheduling benchmark recreated (Karpenter)
//	b  the real AWS catalog with microservice-shaped pods (Catalog)
//	c  memory-heavy and CPU-heavy pods mixed (Bimodal)
//	d  GPU pods on a tainted GPU pool beside a general pool (GPU)
//	e  tiny problems whose optimum can be found exactly (Tiny)
//
// Every generator is deterministic for its seed. It is test support: the
// product does not import it.
package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/catalog"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

const (
	mi = int64(1) << 20
	gi = int64(1) << 30
)

// LabelHostname is the hostname topology key.
const LabelHostname = "kubernetes.io/hostname"

func resources(cpu, mem int64) solver.Resources {
	var r solver.Resources
	r[solver.CPU], r[solver.Memory], r[solver.Pods] = cpu, mem, 1
	return r
}

// KarpenterZones are the zones of the synthetic catalog: spot is offered in
// the first two, on-demand in all three.
var KarpenterZones = []string{"test-zone-1", "test-zone-2", "test-zone-3"}

// KarpenterInstanceTypes is the synthetic catalog of Karpenter's scheduling
// benchmark: type i has i+1 vCPU, 2(i+1) GiB, 10(i+1) pods, 100m/10Mi
// reserved, and costs 0.1 per vCPU plus 0.1 per 10⁹ bytes of memory per
// hour, on-demand and spot alike.
func KarpenterInstanceTypes() []cloud.InstanceType {
	out := make([]cloud.InstanceType, 400)
	for i := range out {
		cpu, mem := int64(i+1), 2*int64(i+1)*gi
		price := 0.1*float64(cpu) + 0.1*float64(mem)/1e9
		it := cloud.InstanceType{Name: fmt.Sprintf("synthetic-%d", i+1), CPU: cpu * 1000, Memory: mem, Pods: 10 * int64(i+1),
			Architecture: "amd64", Overhead: &cloud.Overhead{CPU: 100, Memory: 10 * mi}}
		for zi, z := range KarpenterZones {
			if zi < 2 {
				it.Offerings = append(it.Offerings, cloud.Offering{Zone: z, CapacityType: cloud.CapacityTypeSpot, Price: price})
			}
			it.Offerings = append(it.Offerings, cloud.Offering{Zone: z, CapacityType: cloud.CapacityTypeOnDemand, Price: price})
		}
		out[i] = it
	}
	return out
}

// solverTypes converts cloud instance types for the solver.
func solverTypes(types []cloud.InstanceType, region string) []solver.InstanceType {
	out := make([]solver.InstanceType, len(types))
	for i := range types {
		out[i] = cloud.NodeModel{}.SolverType(&types[i], region)
	}
	return out
}

// Karpenter is suite (a): n pods in five equal classes (plain; zonal spread
// maxSkew 1; hostname spread maxSkew 1; zonal self-affinity; hostname
// anti-affinity among all pods of that class), CPU drawn from {100m, 250m,
// 500m, 1, 1.5} and memory from {100Mi, 256Mi, 512Mi, 1Gi, 2Gi, 4Gi}, on the
// 400 synthetic types with one pool allowing spot and on-demand. Pods carry
// one of seven label values per class, and spread and affinity select the
// pod's own label (Karpenter draws the selector's value independently of
// the pod's; the self-selecting form is the one the issue describes). With
// topology false the pods keep their shapes and labels but lose their
// constraints, so the two variants compare directly.
func Karpenter(n int, seed uint64, topology bool) *solver.Problem {
	rng := rand.New(rand.NewPCG(seed, 0x6b61))
	cpus := []int64{100, 250, 500, 1000, 1500}
	mems := []int64{100 * mi, 256 * mi, 512 * mi, 1 * gi, 2 * gi, 4 * gi}
	values := []string{"a", "b", "c", "d", "e", "f", "g"}
	classes := []string{"plain", "zone-spread", "host-spread", "zone-affinity", "anti-affinity"}
	pods := make([]solver.Pod, 0, n)
	for i := 0; i < n; i++ {
		class := 0
		if i < n/5*5 {
			class = i / (n / 5)
		}
		name := classes[class]
		app := name + "-" + values[rng.IntN(len(values))]
		if class == 4 {
			app = name
		}
		pod := solver.Pod{Namespace: "default", Name: fmt.Sprintf("%s-%d", name, i), Owner: "Deployment/" + app,
			Labels: map[string]string{"app": app}, Requests: resources(cpus[rng.IntN(len(cpus))], mems[rng.IntN(len(mems))]), Controller: true}
		self := solver.Selector{MatchLabels: map[string]string{"app": app}}
		if topology {
			switch class {
			case 1:
				pod.Spread = []solver.TopologySpread{{MaxSkew: 1, TopologyKey: solver.LabelZone, WhenUnsatisfiable: solver.DoNotSchedule, Selector: self}}
			case 2:
				pod.Spread = []solver.TopologySpread{{MaxSkew: 1, TopologyKey: LabelHostname, WhenUnsatisfiable: solver.DoNotSchedule, Selector: self}}
			case 3:
				pod.PodAffinity = []solver.PodAffinityTerm{{TopologyKey: solver.LabelZone, Selector: self}}
			case 4:
				pod.PodAntiAffinity = []solver.PodAffinityTerm{{TopologyKey: LabelHostname, Selector: self}}
			}
		}
		pods = append(pods, pod)
	}
	return &solver.Problem{Pods: pods, Pools: []solver.Pool{{Name: "default"}}, InstanceTypes: solverTypes(KarpenterInstanceTypes(), "")}
}

// Region and Zones are where the real-catalog suites buy: three zones of one
// region, spot and on-demand.
const Region = "us-east-1"

// Zones are the zones of Region the real-catalog suites use.
var Zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

var awsTypes = sync.OnceValues(func() ([]solver.InstanceType, error) {
	c, err := catalog.Load()
	if err != nil {
		return nil, err
	}
	types, err := c.InstanceTypes(Region)
	if err != nil {
		return nil, err
	}
	kept := types[:0]
	for _, it := range types {
		it.Offerings = slices.DeleteFunc(it.Offerings, func(o cloud.Offering) bool { return !slices.Contains(Zones, o.Zone) })
		if len(it.Offerings) > 0 {
			kept = append(kept, it)
		}
	}
	return solverTypes(kept, Region), nil
})

// AWSInstanceTypes is the embedded catalog of Region, offered in Zones,
// with the EKS allocatable model. The slice is the caller's; the types'
// maps are shared and must not be modified.
func AWSInstanceTypes() ([]solver.InstanceType, error) {
	types, err := awsTypes()
	return slices.Clone(types), err
}

// GeneralPurpose are the requirements of Karpenter's getting-started
// NodePool: the c, m and r families of generation 3 and later. Without
// them a greedy packer grows nodes into the largest types of the catalog
// (u-6tb1 at $55 an hour), which tells more about the catalog than the packer.
var GeneralPurpose = []solver.Requirement{
	{Key: cloud.LabelInstanceCategory, Operator: solver.OpIn, Values: []string{"c", "m", "r"}},
	{Key: cloud.LabelInstanceGen, Operator: solver.OpGt, Values: []string{"2"}},
}

func anyCapacityPool(name string, reqs ...solver.Requirement) solver.Pool {
	reqs = append(reqs, solver.Requirement{Key: solver.LabelCapacityType, Operator: solver.OpIn, Values: []string{cloud.CapacityTypeSpot, cloud.CapacityTypeOnDemand}})
	return solver.Pool{Name: name, Requirements: reqs}
}

// workloads draws pods workload by workload until there are n: each has a
// shape from shape and a Zipf-distributed replica count.
func workloads(rng *rand.Rand, n int, prefix string, shape func() solver.Resources) []solver.Pod {
	zipf := rand.NewZipf(rng, 1.3, 1, uint64(max(n/20, 2)))
	var pods []solver.Pod
	for w := 0; len(pods) < n; w++ {
		req := shape()
		replicas := min(int(zipf.Uint64())+1, n-len(pods))
		app := fmt.Sprintf("%s%d", prefix, w)
		for i := 0; i < replicas; i++ {
			pods = append(pods, solver.Pod{Namespace: "default", Name: fmt.Sprintf("%s-%d", app, i), Owner: "Deployment/" + app,
				Labels: map[string]string{"app": app}, Requests: req, Controller: true})
		}
	}
	return pods
}

// logNormal draws exp(N(ln median, sigma)) clamped to [lo, hi].
func logNormal(rng *rand.Rand, median, sigma, lo, hi float64) float64 {
	return min(max(median*math.Exp(rng.NormFloat64()*sigma), lo), hi)
}

// microservice draws a typical service's requests: CPU log-normal around
// 200m, memory log-normal around 2 GiB per vCPU, rounded as people write them.
func microservice(rng *rand.Rand) solver.Resources {
	cpu := int64(logNormal(rng, 200, 0.9, 10, 8000)/10) * 10
	mem := int64(float64(cpu)/1000*logNormal(rng, 2, 0.6, 0.25, 16)*float64(gi)) / mi * mi
	return resources(cpu, max(mem, 32*mi))
}

// Catalog is suite (b): n microservice pods (log-normal shapes, Zipf
// replica counts) on the real catalog of Region, in Zones, spot and
// on-demand, through one pool with the GeneralPurpose requirements.
func Catalog(n int, seed uint64) (*solver.Problem, error) {
	types, err := AWSInstanceTypes()
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x62))
	pods := workloads(rng, n, "svc", func() solver.Resources { return microservice(rng) })
	return &solver.Problem{Pods: pods, Pools: []solver.Pool{anyCapacityPool("default", GeneralPurpose...)}, InstanceTypes: types}, nil
}

// Bimodal is suite (c): half the workloads memory-heavy (0.25–1 vCPU with
// 6–16 GiB per vCPU), half CPU-heavy (1–4 vCPU with 0.5–1 GiB per vCPU),
// on the real catalog through the same pool as Catalog.
func Bimodal(n int, seed uint64) (*solver.Problem, error) {
	types, err := AWSInstanceTypes()
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x63))
	pods := workloads(rng, n, "job", func() solver.Resources {
		if rng.IntN(2) == 0 {
			cpu := []int64{250, 500, 750, 1000}[rng.IntN(4)]
			return resources(cpu, int64(float64(cpu)/1000*(6+10*rng.Float64())*float64(gi))/mi*mi)
		}
		cpu := []int64{1000, 1500, 2000, 3000, 4000}[rng.IntN(5)]
		return resources(cpu, int64(float64(cpu)/1000*(0.5+0.5*rng.Float64())*float64(gi))/mi*mi)
	})
	return &solver.Problem{Pods: pods, Pools: []solver.Pool{anyCapacityPool("default", GeneralPurpose...)}, InstanceTypes: types}, nil
}

// GPUTaint keeps pods that do not ask for GPUs off GPU nodes.
var GPUTaint = solver.Taint{Key: "nvidia.com/gpu", Value: "true", Effect: solver.EffectNoSchedule}

// GPU is suite (d): a general pool (GeneralPurpose) and a GPU pool
// (NVIDIA GPU types, tainted), with a node agent DaemonSet on every node
// and the NVIDIA device plugin on GPU nodes. One pod in ten asks for GPUs
// (1, sometimes 2 or 4), with 2–8 vCPU and 4–8 GiB per vCPU and a
// toleration for the taint; the rest are microservices.
func GPU(n int, seed uint64) (*solver.Problem, error) {
	types, err := AWSInstanceTypes()
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x64))
	nGPU := n / 10
	pods := workloads(rng, n-nGPU, "svc", func() solver.Resources { return microservice(rng) })
	gpuPods := workloads(rng, nGPU, "train", func() solver.Resources {
		cpu := []int64{2000, 4000, 8000}[rng.IntN(3)]
		r := resources(cpu, cpu/1000*[]int64{4, 8}[rng.IntN(2)]*gi)
		r[solver.GPU] = []int64{1, 1, 1, 2, 4}[rng.IntN(5)]
		return r
	})
	tolerate := []solver.Toleration{{Key: GPUTaint.Key, Operator: "Exists", Effect: solver.EffectNoSchedule}}
	for i := range gpuPods {
		gpuPods[i].Tolerations = tolerate
	}
	pods = append(pods, gpuPods...)
	return &solver.Problem{
		Pods: pods,
		Pools: []solver.Pool{
			anyCapacityPool("general", GeneralPurpose...),
			func() solver.Pool {
				p := anyCapacityPool("gpu", solver.Requirement{Key: cloud.LabelInstanceGPUMaker, Operator: solver.OpIn, Values: []string{"nvidia"}})
				p.Taints = []solver.Taint{GPUTaint}
				return p
			}(),
		},
		DaemonSets: []solver.DaemonSet{
			{Namespace: "kube-system", Name: "node-agent", Requests: resources(100, 128*mi), Tolerations: []solver.Toleration{{Operator: "Exists"}}},
			{Namespace: "kube-system", Name: "nvidia-device-plugin", Requests: resources(50, 64*mi), Tolerations: tolerate,
				Affinity: []solver.Term{{{Key: cloud.LabelInstanceGPUCount, Operator: solver.OpExists}}}},
		},
		InstanceTypes: types,
	}, nil
}

// Tiny is suite (e): 5–20 pods of two to four shapes on three to five
// synthetic types (one or two families, one zone on-demand plus a spot
// offering in a second zone for some), small enough for Optimum to solve
// exactly. Some problems add a DaemonSet.
func Tiny(seed uint64) *solver.Problem {
	rng := rand.New(rand.NewPCG(seed, 0x65))
	p := &solver.Problem{Pools: []solver.Pool{anyCapacityPool("default")}}
	nTypes := 3 + rng.IntN(3)
	seen := map[string]bool{}
	for len(p.InstanceTypes) < nTypes {
		cpu := []int64{1, 2, 4, 8}[rng.IntN(4)]
		ratio := []int64{2, 4, 8}[rng.IntN(3)]
		name := fmt.Sprintf("t%d.%dx", ratio, cpu)
		if seen[name] {
			continue
		}
		seen[name] = true
		price := math.Round((0.03*float64(cpu)+0.004*float64(cpu*ratio))*(0.9+0.2*rng.Float64())*1e4) / 1e4
		it := solver.InstanceType{Name: name, Labels: map[string]string{solver.LabelInstanceType: name},
			Capacity:  solver.Resources{solver.CPU: cpu * 1000, solver.Memory: cpu * ratio * gi, solver.Pods: 30},
			Overhead:  solver.Resources{solver.CPU: 100, solver.Memory: 256 * mi},
			Offerings: []solver.Offering{{Zone: "zone-a", CapacityType: cloud.CapacityTypeOnDemand, Price: price}}}
		if rng.IntN(2) == 0 {
			it.Offerings = append(it.Offerings, solver.Offering{Zone: "zone-b", CapacityType: cloud.CapacityTypeSpot, Price: math.Round(price*0.4*1e4) / 1e4})
		}
		p.InstanceTypes = append(p.InstanceTypes, it)
	}
	if rng.IntN(3) == 0 {
		p.DaemonSets = []solver.DaemonSet{{Namespace: "kube-system", Name: "agent", Requests: resources(100, 200*mi), Tolerations: []solver.Toleration{{Operator: "Exists"}}}}
	}
	// Shapes no bigger than the largest type can hold.
	var biggest solver.Resources
	for _, it := range p.InstanceTypes {
		for r, q := range it.Allocatable() {
			biggest[r] = max(biggest[r], q)
		}
	}
	n := 5 + rng.IntN(16)
	shapes := 2 + rng.IntN(3)
	for s := 0; s < shapes; s++ {
		cpu := min(int64(100+rng.IntN(30)*100), biggest[solver.CPU]-300)
		mem := min(int64(1+rng.IntN(24))*256*mi, biggest[solver.Memory]-512*mi)
		count := n / shapes
		if s == 0 {
			count += n % shapes
		}
		for i := 0; i < count; i++ {
			app := fmt.Sprintf("w%d", s)
			p.Pods = append(p.Pods, solver.Pod{Namespace: "default", Name: fmt.Sprintf("%s-%d", app, i), Owner: "Deployment/" + app,
				Labels: map[string]string{"app": app}, Requests: resources(cpu, mem), Controller: true})
		}
	}
	return p
}

// Heterogeneous is suite (f): n bare pods of n/80 workloads (Zipf replica
// counts, at least 500 for 50,000 pods), each with its own microservice
// shape, on the full catalog of Region (no requirements, spot and
// on-demand). Every pod carries its workload's app label and a tier (a–g)
// and team (t0–t9) label shared across workloads; one workload in ten
// spreads over zones by tier (maxSkew 1, DoNotSchedule), so its selector
// matches pods of other workloads, and one in twenty keeps its pods apart
// by hostname (required anti-affinity on its app label).
func Heterogeneous(n int, seed uint64) (*solver.Problem, error) {
	types, err := AWSInstanceTypes()
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x66))
	workloadCount := max(n/80, 1)
	zipf := rand.NewZipf(rng, 1.1, 4, uint64(max(n/20, 2)))
	sizes := make([]int, workloadCount)
	total := 0
	for w := range sizes {
		sizes[w] = int(zipf.Uint64()) + 1
		total += sizes[w]
	}
	pods := make([]solver.Pod, 0, n)
	for w := 0; len(pods) < n; w++ {
		req := microservice(rng)
		// Scale the drawn sizes to n pods in all; workloads past the
		// drawn ones (rounding) take one pod each.
		replicas := 1
		if w < workloadCount {
			replicas = max(sizes[w]*n/total, 1)
		}
		replicas = min(replicas, n-len(pods))
		app := fmt.Sprintf("w%d", w)
		labels := map[string]string{"app": app, "tier": string(rune('a' + rng.IntN(7))), "team": fmt.Sprintf("t%d", rng.IntN(10))}
		var spread []solver.TopologySpread
		var anti []solver.PodAffinityTerm
		switch rng.IntN(20) {
		case 0, 1:
			spread = []solver.TopologySpread{{MaxSkew: 1, TopologyKey: solver.LabelZone, WhenUnsatisfiable: solver.DoNotSchedule,
				Selector: solver.Selector{MatchLabels: map[string]string{"tier": labels["tier"]}}}}
		case 2:
			anti = []solver.PodAffinityTerm{{TopologyKey: LabelHostname, Selector: solver.Selector{MatchLabels: map[string]string{"app": app}}}}
		}
		for i := range replicas {
			pods = append(pods, solver.Pod{Namespace: "default", Name: fmt.Sprintf("%s-%d", app, i), Owner: "Deployment/" + app,
				Labels: labels, Requests: req, Controller: true, Spread: spread, PodAntiAffinity: anti})
		}
	}
	return &solver.Problem{Pods: pods, Pools: []solver.Pool{anyCapacityPool("default")}, InstanceTypes: types}, nil
}
