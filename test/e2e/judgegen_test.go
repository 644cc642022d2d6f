package e2e

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// The judge's random problems: a few workloads whose pods constrain each
// other (topology spread, pod affinity and anti-affinity whose selectors
// match other workloads' labels through shared keys), node selectors and
// affinity, pools with labels, taints and requirements, GPUs, and a handful
// of small instance types, so that the plans are a few nodes each and the
// constraints, not the packing, decide them.

const (
	gib = int64(1) << 30
	mib = int64(1) << 20

	// Label keys the generated pods and pools use. judgeKeyPrefix is the
	// domain of every custom key here; the judge's own bookkeeping labels
	// live under a different domain (judgeLabelDomain), so no generated
	// selector can see them.
	judgeKeyPrefix = "example.com/"
	labelFamily    = judgeKeyPrefix + "family"
	labelTier      = judgeKeyPrefix + "tier"
	labelTeam      = judgeKeyPrefix + "team"
	labelGroup     = judgeKeyPrefix + "group"
	labelRole      = judgeKeyPrefix + "role"
	labelArch      = "kubernetes.io/arch"
	labelHostname  = "kubernetes.io/hostname"
	taintBatch     = judgeKeyPrefix + "batch"
	taintGPU       = "nvidia.com/gpu"
)

var judgeZones = []string{"zone-a", "zone-b", "zone-c"}

// judgeShape is one instance type of the menu the problems draw from.
type judgeShape struct {
	name, family, arch string
	cpu, memGiB, pods  int64
	gpu                int64
	price              float64 // on-demand, dollars per hour
}

var judgeShapes = []judgeShape{
	{"c.large", "c", "amd64", 2, 4, 12, 0, 0.085},
	{"c.xlarge", "c", "amd64", 4, 8, 20, 0, 0.17},
	{"m.large", "m", "amd64", 2, 8, 12, 0, 0.096},
	{"m.xlarge", "m", "amd64", 4, 16, 24, 0, 0.192},
	{"r.large", "r", "amd64", 2, 16, 12, 0, 0.126},
	{"a.xlarge", "a", "arm64", 4, 16, 24, 0, 0.154},
	{"g.xlarge", "g", "amd64", 4, 16, 16, 1, 0.526},
	{"g.4xlarge", "g", "amd64", 16, 64, 30, 4, 1.624},
}

// judgeProblem generates the random problem of a seed; the same seed always
// gives the same problem.
func judgeProblem(seed uint64) *solver.Problem {
	rng := rand.New(rand.NewPCG(seed, 0x6a756467)) // "judg"
	g := &judgeGen{rng: rng}
	p := &solver.Problem{}
	g.types(p)
	g.pools(p)
	g.workloads(p)
	hostPorts(p, rand.New(rand.NewPCG(seed, 0x706f7274))) // "port"
	return p
}

// hostPorts gives some workloads host ports, from their own random stream
// so that the rest of a seed's problem stays as it was before ports were
// modelled: the same port on two workloads keeps their pods apart, and a
// port bound on one address conflicts with the wildcard but not with
// another address.
func hostPorts(p *solver.Problem, rng *rand.Rand) {
	bindings := []solver.HostPort{{Port: 8080}, {Port: 8080, Protocol: "UDP"}, {Port: 9100, HostIP: "127.0.0.1"}, {Port: 9100, HostIP: "127.0.0.2"}, {Port: 9100}}
	byOwner := map[string][]solver.HostPort{}
	for i := range p.Pods {
		owner := p.Pods[i].Owner
		ports, ok := byOwner[owner]
		if !ok {
			if rng.Float64() < 0.25 {
				ports = []solver.HostPort{bindings[rng.IntN(len(bindings))]}
			}
			byOwner[owner] = ports
		}
		p.Pods[i].HostPorts = ports
	}
}

type judgeGen struct {
	rng *rand.Rand
	// gpu is set when the problem has GPU types and a GPU pool.
	gpu bool
	// batch is set when a pool is tainted taintBatch.
	batch bool
	// teams are the values pools give labelTeam (by requirement only).
	teams []string
	// tiers are the labelTier values pools set as template labels.
	tiers []string
	// types are the instance-type names drawn.
	typeNames []string
	families  []string
}

func (g *judgeGen) chance(p float64) bool { return g.rng.Float64() < p }

func (g *judgeGen) pick(values []string) string { return values[g.rng.IntN(len(values))] }

func (g *judgeGen) types(p *solver.Problem) {
	// Three to five general shapes, and with a chance the GPU shapes.
	general := judgeShapes[:6]
	order := g.rng.Perm(len(general))
	n := 3 + g.rng.IntN(3)
	var shapes []judgeShape
	for _, i := range order[:n] {
		shapes = append(shapes, general[i])
	}
	if g.chance(0.35) {
		g.gpu = true
		shapes = append(shapes, judgeShapes[6:]...)
	}
	for _, s := range shapes {
		it := solver.InstanceType{
			Name: s.name,
			Labels: map[string]string{
				solver.LabelInstanceType: s.name,
				labelArch:                s.arch,
				"kubernetes.io/os":       "linux",
				labelFamily:              s.family,
			},
		}
		it.Capacity[solver.CPU] = s.cpu * 1000
		it.Capacity[solver.Memory] = s.memGiB * gib
		it.Capacity[solver.EphemeralStorage] = 20 * gib
		it.Capacity[solver.Pods] = s.pods
		it.Capacity[solver.GPU] = s.gpu
		it.Overhead[solver.CPU] = 80
		it.Overhead[solver.Memory] = 256 * mib
		it.Overhead[solver.EphemeralStorage] = 1 * gib
		// Every type is offered on demand in two or three zones and, in
		// some of them, as spot for less.
		zones := slices.Clone(judgeZones)
		g.rng.Shuffle(len(zones), func(i, j int) { zones[i], zones[j] = zones[j], zones[i] })
		zones = zones[:2+g.rng.IntN(2)]
		slices.Sort(zones)
		for _, z := range zones {
			// Prices differ a little by zone so that zone choice matters.
			zf := 1 + 0.02*float64(z[len(z)-1]-'a')
			it.Offerings = append(it.Offerings, solver.Offering{Zone: z, CapacityType: "on-demand", Price: round4(s.price * zf)})
			if g.chance(0.5) {
				it.Offerings = append(it.Offerings, solver.Offering{Zone: z, CapacityType: "spot", Price: round4(s.price * zf * (0.3 + 0.3*g.rng.Float64()))})
			}
		}
		p.InstanceTypes = append(p.InstanceTypes, it)
		g.typeNames = append(g.typeNames, s.name)
		if !slices.Contains(g.families, s.family) {
			g.families = append(g.families, s.family)
		}
	}
}

func round4(x float64) float64 { return float64(int64(x*10000+0.5)) / 10000 }

func (g *judgeGen) pools(p *solver.Problem) {
	general := solver.Pool{Name: "general", Labels: map[string]string{labelTier: "general"}}
	if g.chance(0.4) {
		general.Requirements = append(general.Requirements, solver.Requirement{Key: solver.LabelCapacityType, Operator: solver.OpIn, Values: []string{"on-demand"}})
	}
	if g.chance(0.3) {
		general.Requirements = append(general.Requirements, solver.Requirement{Key: labelArch, Operator: solver.OpIn, Values: []string{"amd64"}})
	}
	if g.gpu {
		// The general pool never buys the GPU types: they are the GPU pool's.
		general.Requirements = append(general.Requirements, solver.Requirement{Key: labelFamily, Operator: solver.OpNotIn, Values: []string{"g"}})
	}
	p.Pools = append(p.Pools, general)
	g.tiers = append(g.tiers, "general")
	if g.chance(0.5) {
		batch := solver.Pool{Name: "batch", Weight: int32(g.rng.IntN(2) * 10),
			Labels: map[string]string{labelTier: "batch"},
			Taints: []solver.Taint{{Key: taintBatch, Value: "true", Effect: solver.EffectNoSchedule}}}
		if g.chance(0.5) {
			batch.Requirements = append(batch.Requirements, solver.Requirement{Key: solver.LabelZone, Operator: solver.OpIn, Values: []string{"zone-a", "zone-b"}})
		}
		if g.chance(0.5) {
			batch.Requirements = append(batch.Requirements, solver.Requirement{Key: solver.LabelCapacityType, Operator: solver.OpIn, Values: []string{"spot"}})
		}
		if g.gpu {
			batch.Requirements = append(batch.Requirements, solver.Requirement{Key: labelFamily, Operator: solver.OpNotIn, Values: []string{"g"}})
		}
		p.Pools = append(p.Pools, batch)
		g.batch = true
		g.tiers = append(g.tiers, "batch")
	}
	if g.chance(0.3) {
		// A pool whose label comes from a single-valued requirement only, as
		// Karpenter turns such requirements into node labels.
		team := solver.Pool{Name: "team-red", Requirements: []solver.Requirement{{Key: labelTeam, Operator: solver.OpIn, Values: []string{"red"}}}}
		if g.gpu {
			team.Requirements = append(team.Requirements, solver.Requirement{Key: labelFamily, Operator: solver.OpNotIn, Values: []string{"g"}})
		}
		p.Pools = append(p.Pools, team)
		g.teams = append(g.teams, "red")
	}
	if g.gpu {
		p.Pools = append(p.Pools, solver.Pool{Name: "gpu", Labels: map[string]string{labelTier: "gpu"},
			Requirements: []solver.Requirement{{Key: labelFamily, Operator: solver.OpIn, Values: []string{"g"}}},
			Taints:       []solver.Taint{{Key: taintGPU, Value: "true", Effect: solver.EffectNoSchedule}}})
		g.tiers = append(g.tiers, "gpu")
	}
}

// judgeWorkload is one generated Deployment-like set of identical pods.
type judgeWorkload struct {
	app    string
	labels map[string]string
}

func (g *judgeGen) workloads(p *solver.Problem) {
	n := 2 + g.rng.IntN(4)
	groups := []string{"g1", "g2"}
	roles := []string{"front", "back"}
	var ws []judgeWorkload
	for i := range n {
		app := fmt.Sprintf("w%d", i)
		ws = append(ws, judgeWorkload{app: app, labels: map[string]string{
			"app": app, labelGroup: g.pick(groups), labelRole: g.pick(roles),
		}})
	}
	cpus := []int64{100, 250, 500, 750, 1000, 1500}
	mems := []int64{128 * mib, 256 * mib, 512 * mib, 1 * gib, 2 * gib}
	for i, w := range ws {
		tmpl := solver.Pod{Namespace: "default", Owner: "Deployment/" + w.app, Labels: w.labels, Controller: true}
		tmpl.Requests[solver.CPU] = cpus[g.rng.IntN(len(cpus))]
		tmpl.Requests[solver.Memory] = mems[g.rng.IntN(len(mems))]
		tmpl.Requests[solver.Pods] = 1
		if g.chance(0.2) {
			tmpl.Requests[solver.EphemeralStorage] = int64(1+g.rng.IntN(4)) * gib
		}
		gpu := g.gpu && g.chance(0.3)
		if gpu {
			tmpl.Requests[solver.GPU] = int64(1 + g.rng.IntN(2))
			tmpl.Tolerations = append(tmpl.Tolerations, solver.Toleration{Key: taintGPU, Operator: "Exists", Effect: solver.EffectNoSchedule})
		}
		// A selector for a constraint: the pod's own workload, or a label
		// other workloads share (cross-workload counting).
		selector := func() solver.Selector {
			switch g.rng.IntN(4) {
			case 0, 1:
				return solver.Selector{MatchLabels: map[string]string{"app": w.app}}
			case 2:
				return solver.Selector{MatchLabels: map[string]string{labelGroup: w.labels[labelGroup]}}
			default:
				return solver.Selector{MatchExpressions: []solver.Requirement{{Key: labelRole, Operator: solver.OpIn, Values: []string{w.labels[labelRole]}}}}
			}
		}
		if g.chance(0.45) {
			sc := solver.TopologySpread{MaxSkew: int32(1 + g.rng.IntN(2)), TopologyKey: solver.LabelZone, WhenUnsatisfiable: solver.DoNotSchedule, Selector: selector()}
			if g.chance(0.3) {
				sc.MinDomains = int32(2 + g.rng.IntN(2))
			}
			tmpl.Spread = append(tmpl.Spread, sc)
		}
		if g.chance(0.3) {
			sc := solver.TopologySpread{MaxSkew: int32(1 + g.rng.IntN(2)), TopologyKey: labelHostname, WhenUnsatisfiable: solver.DoNotSchedule, Selector: selector()}
			if g.chance(0.2) {
				sc.MinDomains = int32(2 + g.rng.IntN(3))
			}
			tmpl.Spread = append(tmpl.Spread, sc)
		}
		if g.chance(0.25) {
			// One per node of the workload, or apart from another workload.
			sel := solver.Selector{MatchLabels: map[string]string{"app": w.app}}
			if g.chance(0.4) {
				sel = solver.Selector{MatchLabels: map[string]string{"app": ws[g.rng.IntN(len(ws))].app}}
			}
			tmpl.PodAntiAffinity = append(tmpl.PodAntiAffinity, solver.PodAffinityTerm{TopologyKey: labelHostname, Selector: sel})
		}
		if g.chance(0.1) {
			other := ws[g.rng.IntN(len(ws))]
			tmpl.PodAntiAffinity = append(tmpl.PodAntiAffinity, solver.PodAffinityTerm{TopologyKey: solver.LabelZone,
				Selector: solver.Selector{MatchLabels: map[string]string{"app": other.app}}})
		}
		if i > 0 && g.chance(0.3) {
			// Follow an earlier workload into its zone or onto its nodes.
			leader := ws[g.rng.IntN(i)]
			key := solver.LabelZone
			if g.chance(0.4) {
				key = labelHostname
			}
			tmpl.PodAffinity = append(tmpl.PodAffinity, solver.PodAffinityTerm{TopologyKey: key,
				Selector: solver.Selector{MatchLabels: map[string]string{"app": leader.app}}})
		} else if g.chance(0.08) {
			// Zonal self-affinity: the workload stays in one zone.
			tmpl.PodAffinity = append(tmpl.PodAffinity, solver.PodAffinityTerm{TopologyKey: solver.LabelZone,
				Selector: solver.Selector{MatchLabels: map[string]string{"app": w.app}}})
		}
		switch r := g.rng.Float64(); {
		case r < 0.15:
			tmpl.NodeSelector = map[string]string{labelTier: g.pick(g.tiers)}
		case r < 0.25:
			tmpl.NodeSelector = map[string]string{solver.LabelZone: g.pick(judgeZones)}
		case r < 0.3 && len(g.teams) > 0:
			tmpl.NodeSelector = map[string]string{labelTeam: g.pick(g.teams)}
		}
		if gpu && tmpl.NodeSelector != nil && tmpl.NodeSelector[labelTier] != "" {
			tmpl.NodeSelector[labelTier] = "gpu"
		}
		switch r := g.rng.Float64(); {
		case r < 0.12:
			fams := slices.Clone(g.families)
			g.rng.Shuffle(len(fams), func(i, j int) { fams[i], fams[j] = fams[j], fams[i] })
			tmpl.Affinity = []solver.Term{{{Key: labelFamily, Operator: solver.OpIn, Values: fams[:1+g.rng.IntN(len(fams))]}}}
		case r < 0.2:
			tmpl.Affinity = []solver.Term{{{Key: solver.LabelInstanceType, Operator: solver.OpNotIn, Values: []string{g.pick(g.typeNames)}}}}
		case r < 0.25:
			// Two terms: either of two zones' spot, or on-demand anywhere.
			tmpl.Affinity = []solver.Term{
				{{Key: solver.LabelZone, Operator: solver.OpIn, Values: []string{"zone-a", "zone-c"}}, {Key: solver.LabelCapacityType, Operator: solver.OpIn, Values: []string{"spot"}}},
				{{Key: solver.LabelCapacityType, Operator: solver.OpIn, Values: []string{"on-demand"}}},
			}
		}
		if g.batch && g.chance(0.35) {
			tmpl.Tolerations = append(tmpl.Tolerations, solver.Toleration{Key: taintBatch, Operator: "Equal", Value: "true", Effect: solver.EffectNoSchedule})
		}
		replicas := 1 + g.rng.IntN(8)
		for r := range replicas {
			pod := tmpl
			pod.Name = fmt.Sprintf("%s-%d", w.app, r)
			p.Pods = append(p.Pods, pod)
		}
	}
}
