package report

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/report/detailtest"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

const gib = int64(1) << 30

// detailTypes is a small AWS-like catalog: families c, m and r (2, 4 and 8
// GiB per vCPU), 2 to 8 vCPU, two zones, on-demand and spot.
func detailTypes() []solver.InstanceType {
	var out []solver.InstanceType
	for _, f := range []struct {
		name   string
		gibCPU int64
		price  float64
	}{{"c", 2, 0.0425}, {"m", 4, 0.048}, {"r", 8, 0.063}} {
		for _, sz := range []struct {
			name string
			cpu  int64
		}{{"large", 2}, {"xlarge", 4}, {"2xlarge", 8}} {
			name := f.name + "6." + sz.name
			it := solver.InstanceType{
				Name: name,
				Labels: map[string]string{
					solver.LabelInstanceType:              name,
					"karpenter.k8s.aws/instance-category": f.name,
					"karpenter.k8s.aws/instance-family":   f.name + "6",
					"karpenter.k8s.aws/instance-cpu":      strconv.FormatInt(sz.cpu, 10),
					"kubernetes.io/arch":                  "amd64",
				},
				Capacity: solver.Resources{solver.CPU: sz.cpu * 1000, solver.Memory: sz.cpu * f.gibCPU * gib, solver.Pods: 58},
				Overhead: solver.Resources{solver.CPU: 90, solver.Memory: gib},
			}
			for _, z := range []string{"zone-a", "zone-b"} {
				it.Offerings = append(it.Offerings,
					solver.Offering{Zone: z, CapacityType: "on-demand", Price: float64(sz.cpu) * f.price},
					solver.Offering{Zone: z, CapacityType: "spot", Price: float64(sz.cpu) * f.price * 0.6})
			}
			out = append(out, it)
		}
	}
	return out
}

func detailPod(name string, cpu, mem int64) solver.Pod {
	var r solver.Resources
	r[solver.CPU], r[solver.Memory] = cpu, mem
	return solver.Pod{Namespace: "default", Name: name, Owner: "Deployment/" + name, Requests: r}
}

func in(key string, values ...string) solver.Requirement {
	return solver.Requirement{Key: key, Operator: solver.OpIn, Values: values}
}

// detailProblems are constraint-rich problems: every pod is named after the
// cause the test expects of each pool ("-" for a pod that fits somewhere).
func detailProblems() map[string]*solver.Problem {
	const category = "karpenter.k8s.aws/instance-category"
	gpuTaint := solver.Taint{Key: "nvidia.com/gpu", Value: "true", Effect: solver.EffectNoSchedule}
	tolerate := []solver.Toleration{{Key: "nvidia.com/gpu", Operator: "Exists"}}

	taints := &solver.Problem{InstanceTypes: detailTypes(), Pools: []solver.Pool{
		{Name: "gpu", Weight: 10, Taints: []solver.Taint{gpuTaint}, Requirements: []solver.Requirement{in(category, "r")}},
		{Name: "general", Requirements: []solver.Requirement{in(category, "c", "m"), in(solver.LabelCapacityType, "on-demand")}},
	}}
	huge := detailPod("huge", 30000, gib)
	wantsR := detailPod("wants-r", 500, gib)
	wantsR.NodeSelector = map[string]string{category: "r"}
	hungry := detailPod("hungry", 3000, 70*gib)
	hungry.Tolerations = tolerate
	zoneC := detailPod("zone-c", 500, gib)
	zoneC.Tolerations = tolerate
	zoneC.Affinity = []solver.Term{{in(solver.LabelZone, "zone-c")}}
	taints.Pods = []solver.Pod{huge, wantsR, hungry, zoneC, detailPod("small", 1000, 2*gib)}

	reqs := &solver.Problem{InstanceTypes: detailTypes(), Pools: []solver.Pool{
		{Name: "legacy", Weight: 5, Requirements: []solver.Requirement{in("karpenter.k8s.aws/instance-family", "x1")}},
		{Name: "team", Requirements: []solver.Requirement{in("team", "a"), in(category, "m")}},
	}}
	teamB := detailPod("team-b", 500, gib)
	teamB.NodeSelector = map[string]string{"team": "b"}
	rack := detailPod("rack", 500, gib)
	rack.NodeSelector = map[string]string{"example.com/rack": "r1"}
	arm := detailPod("arm", 500, gib)
	arm.Affinity = []solver.Term{{in("kubernetes.io/arch", "arm64")}}
	reqs.Pods = []solver.Pod{teamB, rack, arm, detailPod("team-a", 1000, gib)}

	// A pool with kubelet settings: its own types keep 6Gi more memory
	// back, so a pod the catalog's m6.xlarge takes does not fit the pool's;
	// a DaemonSet takes a CPU from every node.
	kubelet := detailTypes()
	for i := range kubelet {
		kubelet[i].Overhead[solver.Memory] += 6 * gib
	}
	var ds solver.Resources
	ds[solver.CPU] = 1000
	pools := &solver.Problem{InstanceTypes: detailTypes(), DaemonSets: []solver.DaemonSet{{Namespace: "kube-system", Name: "agent", Requests: ds}},
		Pools: []solver.Pool{
			{Name: "reserved", Requirements: []solver.Requirement{in(category, "m"), in("karpenter.k8s.aws/instance-cpu", "4")}, InstanceTypes: kubelet},
		}}
	pools.Pods = []solver.Pod{detailPod("ten-gib", 500, 10*gib), detailPod("three-cpu", 3200, gib), detailPod("fits", 1000, 4*gib)}
	return map[string]*solver.Problem{"taints and selectors": taints, "requirements and keys": reqs, "kubelet pool and daemonsets": pools}
}

// detailBlocks renders the detail view of g and splits out each pool's
// block by pool name, with the pools in the order shown.
func detailBlocks(r *Report, g *PendingGroup) (lines []string, blocks map[string][]string, order []string) {
	lines = r.Detail(g)
	blocks, order = detailtest.Blocks(lines)
	return lines, blocks, order
}

// TestDetailAgreesWithExplain renders the detail view of every pod of
// constraint-rich problems and checks that it gives every pool the cause the
// plan's unschedulable sentence (what explain prints) gives it, names the
// same cheapest type, and that a pod the plan places fits some pool.
func TestDetailAgreesWithExplain(t *testing.T) {
	for name, p := range detailProblems() {
		t.Run(name, func(t *testing.T) {
			plan, err := solver.Solve(p)
			if err != nil {
				t.Fatal(err)
			}
			outcomes := plan.Outcomes(len(p.Pods))
			r := &Report{Problem: p, Plan: plan}
			for i := range p.Pods {
				reason := outcomes[i].Reason
				g := &PendingGroup{Owner: p.Pods[i].Owner, Namespace: "default", Pods: []string{p.Pods[i].Name}, Outcome: "unschedulable", Reason: reason, PodIndex: i}
				lines, blocks, order := detailBlocks(r, g)
				text := strings.Join(lines, "\n")
				pod := p.Pods[i].Name
				if reason == "" {
					fits := false
					for _, b := range blocks {
						fits = fits || detailtest.ViewVerdict(b) == "fits"
					}
					if !fits {
						t.Errorf("%s: the plan places it, the detail view fits it nowhere:\n%s", pod, text)
					}
					continue
				}
				if strings.HasPrefix(reason, "its nodeSelector") || strings.HasPrefix(reason, "its node affinity") {
					if len(blocks) != 0 || !strings.Contains(text, "✗ "+reason) {
						t.Errorf("%s: reason %q, detail view:\n%s", pod, reason, text)
					}
					continue
				}
				if len(order) != len(p.Pools) {
					t.Fatalf("%s: detail view shows pools %v, want %d", pod, order, len(p.Pools))
				}
				for _, pool := range order {
					tv, ev := detailtest.ViewVerdict(blocks[pool]), detailtest.SentenceVerdict(reason, pool)
					if tv != ev || ev == "fits" {
						t.Errorf("%s in NodePool %s: detail view says %q, explain %q (reason %q)\n%s", pod, pool, tv, ev, reason, text)
					}
				}
				if m := regexp.MustCompile(`if a NodePool allowed it, is (\S+) \((\S+),`).FindStringSubmatch(reason); m != nil {
					if !strings.Contains(text, fmt.Sprintf("allowed it: %s ", m[1])) || !strings.Contains(text, " "+m[2]+" $") {
						t.Errorf("%s: explain names %s %s as the cheapest fit, detail view:\n%s", pod, m[1], m[2], text)
					}
				} else if !strings.Contains(text, "No instance type in the catalog has room") {
					t.Errorf("%s: explain names no cheapest fit (%q), detail view:\n%s", pod, reason, text)
				}
			}
		})
	}
}

// TestDetailVerdicts pins the cause the detail view and Diagnose give each
// pool for the pods of detailProblems, so that agreement with explain cannot
// come from both being wrong the same way. The kubelet pool's pods fit the
// catalog's m6.xlarge but not the pool's own (6Gi more reserved) or not
// beside the DaemonSet: a view judging p.InstanceTypes, or forgetting
// DaemonSets, says "fits".
func TestDetailVerdicts(t *testing.T) {
	want := map[string]map[string]string{
		"huge":      {"gpu": "taint", "general": "too small"},
		"wants-r":   {"gpu": "taint", "general": "selector"},
		"hungry":    {"gpu": "too small", "general": "too small"},
		"zone-c":    {"gpu": "selector", "general": "selector"},
		"small":     {"gpu": "taint", "general": "fits"},
		"team-b":    {"legacy": "no type", "team": "selector"},
		"arm":       {"legacy": "no type", "team": "selector"},
		"team-a":    {"legacy": "no type", "team": "fits"},
		"ten-gib":   {"reserved": "too small"},
		"three-cpu": {"reserved": "too small"},
		"fits":      {"reserved": "fits"},
	}
	seen := 0
	for _, p := range detailProblems() {
		for i := range p.Pods {
			w, ok := want[p.Pods[i].Name]
			if !ok {
				continue
			}
			seen++
			d := solver.Diagnose(p, i)
			got, view := map[string]string{}, map[string]string{}
			for _, pd := range d.Pools {
				got[p.Pools[pd.Pool].Name] = pd.Verdict()
			}
			_, blocks, _ := detailBlocks(&Report{Problem: p}, &PendingGroup{Outcome: "unschedulable", PodIndex: i})
			for pool, b := range blocks {
				view[pool] = detailtest.ViewVerdict(b)
			}
			if fmt.Sprint(got) != fmt.Sprint(w) || fmt.Sprint(view) != fmt.Sprint(w) {
				t.Errorf("%s: Diagnose says %v, the detail view %v, want %v", p.Pods[i].Name, got, view, w)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("checked %d pods, want %d", seen, len(want))
	}
}
