package solver

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// mixedProblem is a small heterogeneous input in the spirit of Karpenter's
// benchmark mix (kubernetes-sigs/karpenter,
// pkg/controllers/provisioning/scheduling/scheduling_benchmark_test.go,
// makeDiversePods): plain pods, zonal and hostname spread whose selectors
// read another label value than the pod's own, and hostname anti-affinity
// (some plain pods carry the label it selects, so classes conflict),
// on types of four sizes in three zones.
func mixedProblem(rng *rand.Rand, n int) *Problem {
	value := func() string { return string(rune('a' + rng.IntN(5))) }
	var pods []Pod
	for i := range n {
		p := Pod{Namespace: "default", Name: fmt.Sprintf("p%d", i), Labels: map[string]string{"l": value()}}
		p.Requests[CPU] = []int64{100, 250, 500, 1000, 1500}[rng.IntN(5)]
		p.Requests[Memory] = []int64{100, 256, 512, 1024, 4096}[rng.IntN(5)] << 20
		p.Requests[Pods] = 1
		sel := Selector{MatchLabels: map[string]string{"l": value()}}
		switch i % 4 {
		case 0:
			if i%8 == 0 { // selected by the anti-affinity, without it
				p.Labels["app"] = "anti"
			}
		case 1:
			p.Spread = []TopologySpread{{MaxSkew: 1, TopologyKey: LabelZone, WhenUnsatisfiable: DoNotSchedule, Selector: sel}}
		case 2:
			p.Spread = []TopologySpread{{MaxSkew: 1, TopologyKey: LabelHostname, WhenUnsatisfiable: DoNotSchedule, Selector: sel}}
		case 3:
			p.Labels = map[string]string{"app": "anti"}
			p.PodAntiAffinity = []PodAffinityTerm{{TopologyKey: LabelHostname, Selector: Selector{MatchLabels: p.Labels}}}
		}
		pods = append(pods, p)
	}
	return &Problem{Pods: pods, Pools: []Pool{{Name: "default"}}, InstanceTypes: mixedTypes()}
}

// mixedTypes are four sizes of instance type in three zones, the first
// zone cheapest.
func mixedTypes() []InstanceType {
	var types []InstanceType
	for i, size := range []int64{2, 4, 8, 16} {
		it := InstanceType{Name: fmt.Sprintf("t%d", i), Labels: map[string]string{"size": fmt.Sprint(size)}}
		it.Capacity[CPU], it.Capacity[Memory], it.Capacity[Pods] = size*1000, size*4<<30, 110
		for _, z := range []string{"z1", "z2", "z3"} {
			it.Offerings = append(it.Offerings, Offering{Zone: z, CapacityType: "on-demand", Price: float64(size) * (0.05 + 0.001*float64(len(it.Offerings)))})
		}
		types = append(types, it)
	}
	return types
}

// packingState prepares a state as Solve does up to packing.
func packingState(p *Problem) *state {
	s := &state{p: resolveNamespaces(p.normalized())}
	s.buildClasses()
	s.buildKinds()
	s.placeOnExisting()
	s.explainInfeasible()
	return s
}

// fillBalancedPerClass is fillBalanced as it was before buckets: it scores
// every class of the fill order in every batch. The bucketed fill must
// take exactly what it takes.
func (s *state) fillBalancedPerClass(k *kind, weights []int32, weighted bool) ([]take, float64) {
	var takes []take
	free := k.alloc
	value := 0.0
	poolWeight := s.p.Pools[k.pool].Weight
	taken := make([]int, len(s.classes))
	for {
		var f Resources64
		fn := 0.0
		for r := range free {
			if k.alloc[r] > 0 {
				f[r] = float64(free[r]) / float64(k.alloc[r])
				fn += f[r] * f[r]
			}
		}
		fn = math.Sqrt(fn)
		if fn == 0 {
			break
		}
		bestClass, bestScore, bestLeft := -1, 0.0, 0
		for _, ci := range k.order {
			c := s.classes[ci]
			shape := k.shapeOf(&c.req)
			sh := &shape
			if weights[ci] != poolWeight || sh.max == 0 || !c.req.Fits(free) || s.conflictsWith(ci, takes) {
				continue
			}
			left := min(s.rem[ci]-taken[ci], s.capRoom(ci))
			if left <= 0 {
				continue
			}
			dot := 0.0
			for r := range f {
				dot += sh.norm[r] * f[r]
			}
			score := dot / (sh.length * fn)
			if weighted {
				score *= c.value / sh.max
			}
			if score > bestScore {
				bestClass, bestScore, bestLeft = ci, score, left
			}
		}
		if bestClass < 0 {
			break
		}
		c := s.classes[bestClass]
		n := (min(fitCount(free, c.req), bestLeft) + 1) / 2
		free = free.Sub(c.req.Scale(int64(n)))
		value += float64(n) * c.value
		s.countCap(bestClass, n)
		taken[bestClass] += n
		if i := slices.IndexFunc(takes, func(t take) bool { return t.class == bestClass }); i >= 0 {
			takes[i].n += n
		} else {
			takes = append(takes, take{bestClass, n})
		}
	}
	s.resetCaps(takes)
	return takes, value
}

func TestFillBalancedTakesWhatThePerClassScanTakes(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		rng := rand.New(rand.NewPCG(seed, 7))
		s := packingState(mixedProblem(rng, 600))
		kinds := s.efficientKinds()
		w := s.fork()
		w.valueClasses(nil, kinds)
		weights := w.topWeight()
		// Rounds of pods running out, as during a greedy run: buckets
		// forget exhausted classes between fills.
		for round := range 4 {
			for ci := range w.rem {
				w.rem[ci] = rng.IntN(w.rem[ci] + 1)
			}
			for _, ki := range kinds {
				k := w.kinds[ki]
				for _, weighted := range []bool{false, true} {
					got, gotValue := w.fillBalanced(k, weights, nil, weighted)
					want, wantValue := w.fillBalancedPerClass(k, weights, weighted)
					if !slices.Equal(got, want) || gotValue != wantValue {
						t.Fatalf("seed %d round %d kind %d weighted %v: took %v (value %v), the per-class scan %v (value %v)",
							seed, round, ki, weighted, got, gotValue, want, wantValue)
					}
				}
			}
		}
	}
}

func TestGreedyPastTheDeadlineStopsComparingKinds(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 7))
	p := mixedProblem(rng, 2000)
	run := func(deadline time.Time) (*state, int) {
		p.Options.Deadline = deadline
		s := packingState(p)
		kinds := s.efficientKinds()
		w := s.fork()
		w.valueClasses(nil, kinds)
		w.greedy(kinds, fillShape)
		return w, len(kinds)
	}
	full, kinds := run(time.Time{})
	quick, _ := run(time.Now())
	if kinds < 2 {
		t.Fatalf("%d kinds to compare, want several", kinds)
	}
	for name, w := range map[string]*state{"full": full, "past the deadline": quick} {
		for ci, r := range w.rem {
			if r > 0 && len(w.classes[ci].kinds) > 0 {
				t.Errorf("%s: %d pods of class %d left", name, r, ci)
			}
		}
	}
	if quick.fills >= full.fills/2 {
		t.Errorf("past the deadline the greedy filled %d nodes, %d without one; want far fewer", quick.fills, full.fills)
	}
}

// distinctShapes gives every tenth pod of p requests of its own, so
// that most buckets hold one class (as on suite h), beside the shared
// shapes of the others.
func distinctShapes(rng *rand.Rand, p *Problem) *Problem {
	for i := range p.Pods {
		if i%10 == 0 {
			p.Pods[i].Requests[CPU] = 50 + rng.Int64N(3000)
			p.Pods[i].Requests[Memory] = (64 + rng.Int64N(8192)) << 20
		}
	}
	return p
}

// withReplicas repeats every pod of p up to max times (its copies are
// one class), so that fills take several pods of a class and pods run out
// a few at a time.
func withReplicas(rng *rand.Rand, p *Problem, max int) *Problem {
	var pods []Pod
	for _, pod := range p.Pods {
		for i := range 1 + rng.IntN(max) {
			c := pod
			c.Name = fmt.Sprintf("%s-%d", pod.Name, i)
			pods = append(pods, c)
		}
	}
	p.Pods = pods
	return p
}

func TestRememberedFillIsWhatFillingAgainTakes(t *testing.T) {
	held, changed := 0, 0
	for _, seed := range []uint64{1, 2, 3, 4} {
		rng := rand.New(rand.NewPCG(seed, 11))
		s := packingState(withReplicas(rng, distinctShapes(rng, mixedProblem(rng, 150)), 40))
		kinds := s.efficientKinds()
		w := s.fork()
		w.valueClasses(nil, kinds)
		weights := w.topWeight()
		for round := range 6 {
			for _, ki := range kinds {
				k := w.kinds[ki]
				for _, weighted := range []bool{false, true} {
					var m fillMemo
					takes, value := w.fillBalanced(k, weights, nil, weighted)
					m.remember(takes, w.needs, value)
					// Pods run out as launches take them: some classes
					// keep their pods, some lose a few, some all; a
					// class the fill took keeps, most of the time, what
					// it needs.
					before := slices.Clone(w.rem)
					for ci := range w.rem {
						switch rng.IntN(4) {
						case 0:
							w.rem[ci] = rng.IntN(w.rem[ci] + 1)
						case 1:
							w.rem[ci] = 0
						}
					}
					for i, t := range m.takes {
						switch rng.IntN(8) {
						case 0:
						case 1, 2, 3: // just enough: the edge of holding
							w.rem[t.class] = m.need[i]
						default:
							w.rem[t.class] = m.need[i] + rng.IntN(before[t.class]-m.need[i]+1)
						}
					}
					if m.holds(w.rem) {
						held++
						if !slices.Equal(before, w.rem) {
							changed++
						}
						got, gotValue := w.fillBalanced(k, weights, nil, weighted)
						if !slices.Equal(got, m.takes) || gotValue != m.value {
							t.Fatalf("seed %d round %d kind %d weighted %v: remembered %v (value %v) for %v pods left, filling again took %v (value %v) for %v",
								seed, round, ki, weighted, m.takes, m.value, before, got, gotValue, w.rem)
						}
					}
					copy(w.rem, before)
				}
			}
			// Between rounds, pods run out for good.
			for ci := range w.rem {
				w.rem[ci] = rng.IntN(w.rem[ci] + 1)
			}
		}
	}
	// The check means something only if fills held while pods ran out.
	t.Logf("%d remembered fills held, %d of them with fewer pods left", held, changed)
	if changed < 100 {
		t.Errorf("%d remembered fills held with fewer pods left (%d held in all), want at least 100", changed, held)
	}
}

func TestGreedyRememberingFillsPlansWhatRefillingPlans(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		rng := rand.New(rand.NewPCG(seed, 13))
		var p *Problem
		switch seed {
		case 1:
			p = mixedProblem(rng, 1500)
		case 2:
			p = distinctShapes(rng, mixedProblem(rng, 1500))
		default:
			p = withReplicas(rng, distinctShapes(rng, mixedProblem(rng, 200)), 30)
		}
		s := packingState(p)
		kinds := s.efficientKinds()
		for _, mode := range []fillMode{fillWeighted, fillShape} {
			var nodes [2][]plannedNode
			var fills [2]int
			for i, refill := range []bool{false, true} {
				w := s.fork()
				w.refill = refill
				w.valueClasses(nil, kinds)
				before := w.fills
				w.greedy(kinds, mode)
				nodes[i], fills[i] = w.nodes, w.fills-before
			}
			if !slices.EqualFunc(nodes[0], nodes[1], func(a, b plannedNode) bool {
				return a.kind == b.kind && a.count == b.count && slices.Equal(a.takes, b.takes)
			}) {
				t.Fatalf("seed %d mode %d: remembering fills planned %v, refilling %v", seed, mode, nodes[0], nodes[1])
			}
			if len(nodes[0]) < 10 || fills[0] != fills[1] {
				t.Fatalf("seed %d mode %d: %d nodes, %d and %d kinds compared; want several nodes, the same comparisons", seed, mode, len(nodes[0]), fills[0], fills[1])
			}
		}
	}
}
