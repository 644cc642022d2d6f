package solver_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func TestPlaceableAgreesWithDiagnose(t *testing.T) {
	// Placeable is Diagnose's "fits" verdict in some pool, without the
	// sentences: explain asks it of wider pools when there is no time to
	// plan them.
	tainted := onDemandPool("gpu")
	tainted.Taints = []Taint{{Key: "gpu", Value: "true", Effect: "NoSchedule"}}
	spotOnly := Pool{Name: "spot", Requirements: []Requirement{{Key: LabelCapacityType, Operator: OpIn, Values: []string{"spot"}}}}
	manyFamilies := onDemandPool("flexible")
	manyFamilies.Requirements = append(manyFamilies.Requirements, Requirement{Key: "karpenter.k8s.aws/instance-family", Operator: OpExists})
	manyFamilies.MinValues = map[string]int{"karpenter.k8s.aws/instance-family": 3}
	pod := func(cpu, mem int64, edit func(*Pod)) Pod {
		p := Pod{Namespace: "default", Name: "p", Requests: res(cpu, mem)}
		if edit != nil {
			edit(&p)
		}
		return p
	}
	selects := func(k, v string) func(*Pod) {
		return func(p *Pod) { p.NodeSelector = map[string]string{k: v} }
	}
	tests := []struct {
		name  string
		pools []Pool
		pod   Pod
		want  bool
	}{
		{"fits the only pool", []Pool{onDemandPool("default")}, pod(2000, 4*gi, nil), true},
		{"larger than every type", []Pool{onDemandPool("default")}, pod(64000, 4*gi, nil), false},
		{"no pool", nil, pod(1000, gi, nil), false},
		{"a taint it does not tolerate", []Pool{tainted}, pod(1000, gi, nil), false},
		{"a taint it tolerates", []Pool{tainted}, pod(1000, gi, func(p *Pod) {
			p.Tolerations = []Toleration{{Key: "gpu", Operator: "Exists"}}
		}), true},
		{"selects what the pool rules out", []Pool{spotOnly}, pod(1000, gi, selects(LabelCapacityType, "on-demand")), false},
		{"a second pool allows what it selects", []Pool{spotOnly, onDemandPool("default")}, pod(1000, gi, selects(LabelCapacityType, "on-demand")), true},
		{"selects an architecture no type has", []Pool{onDemandPool("default")}, pod(1000, gi, selects(LabelArch, "arm64")), false},
		{"selects a label no node carries", []Pool{onDemandPool("default")}, pod(1000, gi, selects("team", "a")), false},
		{"minValues met", []Pool{manyFamilies}, pod(1000, gi, nil), true},
		{"minValues short: only one family has room", []Pool{manyFamilies}, pod(2000, 200*gi, nil), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Problem{Pods: []Pod{tc.pod}, Pools: tc.pools, InstanceTypes: testTypes()}
			d := Diagnose(p, 0)
			fits := slices.ContainsFunc(d.Pools, func(pd PoolDiagnosis) bool { return pd.Verdict() == "fits" })
			if got := Placeable(p, 0); got != tc.want || got != fits {
				t.Errorf("Placeable = %v, want %v (Diagnose: fits %v, %q)", got, tc.want, fits, d.Reason())
			}
		})
	}
}

func TestUnplaceablePodsPastTheDeadlineAreNotDiagnosed(t *testing.T) {
	// Diagnosing thousands of unplaceable pods must not outlast --timeout:
	// past the deadline a pod's reason says it was not diagnosed, and the
	// pods still placeable are planned.
	tests := []struct {
		name     string
		deadline time.Time
		want     string // a part of the reason of every unplaced pod
	}{
		{"no deadline", time.Time{}, "no instance type in the catalog has room"},
		{"deadline ahead", time.Now().Add(time.Hour), "no instance type in the catalog has room"},
		{"deadline passed", time.Now().Add(-time.Second), NotDiagnosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			huge := append(pods("huge", 30, res(64000, 4*gi)), pods("vast", 30, res(1000, 900*gi))...)
			p := &Problem{Pods: append(pods("web", 10, res(1000, gi)), huge...), Pools: []Pool{onDemandPool("default")}, InstanceTypes: testTypes()}
			p.Options.Deadline = tc.deadline
			plan, err := Solve(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Unschedulable) != len(huge) {
				t.Fatalf("%d pods unplaced, want %d", len(plan.Unschedulable), len(huge))
			}
			for _, u := range plan.Unschedulable {
				if !strings.Contains(u.Reason, tc.want) {
					t.Fatalf("pod %s: reason %q, want it to say %q", p.Pods[u.Pod].Key(), u.Reason, tc.want)
				}
			}
		})
	}
}
