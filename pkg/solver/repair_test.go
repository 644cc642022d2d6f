package solver

import (
	"slices"
	"testing"
)

const gib = int64(1) << 30

// req is a pod's or node's CPU (millicores) and memory (bytes), one pod.
func req(cpu, mem int64) Resources {
	var r Resources
	r[CPU], r[Memory], r[Pods] = cpu, mem, 1
	return r
}

// TestAdmit judges placePending's filters one at a time on a small final
// cluster: two zones, a node in each (and a second in zone-a), as
// kube-scheduler's filter plugins would on the same nodes.
func TestAdmit(t *testing.T) {
	web := map[string]string{"app": "web"}
	zoneSpread := TopologySpread{MaxSkew: 1, TopologyKey: LabelZone, WhenUnsatisfiable: DoNotSchedule, Selector: Selector{MatchLabels: web}}
	runningWeb := func(ns string) Pod {
		return Pod{Namespace: ns, Name: "running", Labels: web, Requests: req(100, gib/4)}
	}
	tests := []struct {
		name string
		// pods per node (node 0 and 1 in zone-a, node 2 in zone-b)
		onNode [3][]Pod
		pod    Pod
		taint  bool // node 0 and 1 are tainted
		// launchable are the domains a node could still be launched into
		launchable []string
		want       int // the node admitted, -1 for none
	}{
		{name: "room decides: the first node with room", pod: Pod{Namespace: "d", Name: "p", Requests: req(500, gib)}, want: 0},
		{name: "too big for any node", pod: Pod{Namespace: "d", Name: "p", Requests: req(5000, gib)}, want: -1},
		{name: "node selector", pod: Pod{Namespace: "d", Name: "p", Requests: req(100, gib/4), NodeSelector: map[string]string{LabelZone: "zone-b"}}, want: 2},
		{name: "an untolerated taint", taint: true, pod: Pod{Namespace: "d", Name: "p", Requests: req(100, gib/4)}, want: 2},
		{
			name:   "host ports: the port is taken on node 0",
			onNode: [3][]Pod{{{Namespace: "d", Name: "x", HostPorts: []HostPort{{Port: 80}}}}},
			pod:    Pod{Namespace: "d", Name: "p", Requests: req(100, gib/4), HostPorts: []HostPort{{Port: 80}}},
			want:   1,
		},
		{
			name:   "own spread: zone-a holds one more already, so zone-b",
			onNode: [3][]Pod{{runningWeb("d")}},
			pod:    Pod{Namespace: "d", Name: "p", Labels: web, Requests: req(100, gib/4), Spread: []TopologySpread{zoneSpread}},
			want:   2,
		},
		{
			name:       "own spread: a zone a node could launch into counts as empty",
			onNode:     [3][]Pod{{runningWeb("d")}, nil, {runningWeb("d")}},
			launchable: []string{"zone-a", "zone-b", "zone-c"},
			pod:        Pod{Namespace: "d", Name: "p", Labels: web, Requests: req(100, gib/4), Spread: []TopologySpread{zoneSpread}},
			want:       -1,
		},
		{
			name:   "own spread counts only the pod's namespace",
			onNode: [3][]Pod{{runningWeb("other")}},
			pod:    Pod{Namespace: "d", Name: "p", Labels: web, Requests: req(100, gib/4), Spread: []TopologySpread{zoneSpread}},
			want:   0,
		},
		{
			name:   "own spread with minDomains 3: only two zones, so the emptiest counts as 0",
			onNode: [3][]Pod{{runningWeb("d")}, nil, {runningWeb("d")}},
			pod: Pod{Namespace: "d", Name: "p", Labels: web, Requests: req(100, gib/4),
				Spread: []TopologySpread{{MaxSkew: 1, TopologyKey: LabelZone, WhenUnsatisfiable: DoNotSchedule, Selector: Selector{MatchLabels: web}, MinDomains: 3}}},
			want: -1,
		},
		{
			name:   "ScheduleAnyway spread is a preference",
			onNode: [3][]Pod{{runningWeb("d"), runningWeb("d")}},
			pod: Pod{Namespace: "d", Name: "p", Labels: web, Requests: req(100, gib/4),
				Spread: []TopologySpread{{MaxSkew: 1, TopologyKey: LabelZone, WhenUnsatisfiable: ScheduleAnyway, Selector: Selector{MatchLabels: web}}}},
			want: 0,
		},
		{
			name:   "own anti-affinity on the zone",
			onNode: [3][]Pod{{runningWeb("d")}},
			pod: Pod{Namespace: "d", Name: "p", Requests: req(100, gib/4),
				PodAntiAffinity: []PodAffinityTerm{{Selector: Selector{MatchLabels: web}, TopologyKey: LabelZone}}},
			want: 2,
		},
		{
			name: "symmetry: a running pod's anti-affinity keeps the pod off its node",
			onNode: [3][]Pod{{{Namespace: "d", Name: "x", Requests: req(100, gib/4),
				PodAntiAffinity: []PodAffinityTerm{{Selector: Selector{MatchLabels: web}, TopologyKey: LabelHostname}}}}},
			pod:  Pod{Namespace: "d", Name: "p", Labels: web, Requests: req(100, gib/4)},
			want: 1,
		},
		{
			name:   "required affinity: the zone of a selected pod",
			onNode: [3][]Pod{nil, nil, {runningWeb("d")}},
			pod: Pod{Namespace: "d", Name: "p", Requests: req(100, gib/4),
				PodAffinity: []PodAffinityTerm{{Selector: Selector{MatchLabels: web}, TopologyKey: LabelZone}}},
			want: 2,
		},
		{
			name: "required affinity with no selected pod anywhere",
			pod: Pod{Namespace: "d", Name: "p", Requests: req(100, gib/4),
				PodAffinity: []PodAffinityTerm{{Selector: Selector{MatchLabels: web}, TopologyKey: LabelZone}}},
			want: -1,
		},
		{
			name: "required affinity its own labels satisfy: the first of its group goes anywhere",
			pod: Pod{Namespace: "d", Name: "p", Labels: web, Requests: req(100, gib/4),
				PodAffinity: []PodAffinityTerm{{Selector: Selector{MatchLabels: web}, TopologyKey: LabelZone}}},
			want: 0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Problem{Pods: []Pod{tc.pod}}
			c := newSchedCluster(p, func(*Pod, string) []string { return tc.launchable })
			for j, zone := range []string{"zone-a", "zone-a", "zone-b"} {
				n := schedNode{labels: MapLabels{LabelZone: zone}, free: req(2000, 4*gib), planned: j}
				if tc.taint && j < 2 {
					n.taints = []Taint{{Key: "dedicated", Value: "x", Effect: "NoSchedule"}}
				}
				for k := range tc.onNode[j] {
					n.pods = append(n.pods, &tc.onNode[j][k])
				}
				c.nodes = append(c.nodes, n)
			}
			if got := c.admit(0); got != tc.want {
				t.Errorf("admit = node %d, want %d", got, tc.want)
			}
		})
	}
}

// TestAdmitKeepsCarriersSkew: a pending pod the placed pods' spread selects
// may not land where a carrier's domain would exceed the skew, even when
// the pending pod has no constraint of its own.
func TestAdmitKeepsCarriersSkew(t *testing.T) {
	web := map[string]string{"app": "web"}
	carrier := Pod{Namespace: "d", Name: "carrier", Labels: web, Requests: req(100, gib/4),
		Spread: []TopologySpread{{MaxSkew: 1, TopologyKey: LabelZone, WhenUnsatisfiable: DoNotSchedule, Selector: Selector{MatchLabels: web}}}}
	free := Pod{Namespace: "d", Name: "free", Labels: web, Requests: req(100, gib/4)}
	p := &Problem{Pods: []Pod{carrier, free}}
	c := newSchedCluster(p, func(*Pod, string) []string { return nil })
	for j, zone := range []string{"zone-a", "zone-b"} {
		c.nodes = append(c.nodes, schedNode{labels: MapLabels{LabelZone: zone}, free: req(2000, 4*gib), planned: j})
	}
	c.bind(0, 0)
	// zone-a: 1 (the carrier); adding the free pod there makes 2 - 0 > 1.
	if got := c.admit(1); got != 1 {
		t.Errorf("admit = node %d, want 1 (zone-b)", got)
	}
}

// TestPlacePendingKeepsRefusedPods: a pod refused before planning (an
// unbound volume claim) stays pending though a planned node has room.
func TestPlacePendingKeepsRefusedPods(t *testing.T) {
	web := Pod{Namespace: "d", Name: "web", Requests: req(100, gib/4)}
	refused := web
	refused.Name, refused.Unschedulable = "refused", "PVC data is not bound yet"
	s := &state{p: &Problem{Pods: []Pod{web, refused}}}
	s.classes = []*class{{pods: []int{0}}, {pods: []int{1}}}
	s.plan.NewNodes = []NewNode{{Pods: []int{0}, Allocatable: req(2000, 4*gib), Requested: req(100, gib/4)}}
	s.plan.Unschedulable = []Unschedulable{{Pod: 1, Reason: refused.Unschedulable}}
	if s.placePending() || len(s.plan.Unschedulable) != 1 {
		t.Errorf("the refused pod was placed: %+v", s.plan)
	}
}

// TestTrimAffinityTakesBackOneOfTwo: of two pods a required anti-affinity
// on kubernetes.io/arch keeps apart, placed on nodes of one arch, only the
// later is taken back; a follower whose affinity on the arch finds its
// leader stays, one whose leader is elsewhere is taken back.
func TestTrimAffinityTakesBackOneOfTwo(t *testing.T) {
	db := map[string]string{"app": "db"}
	apart := []PodAffinityTerm{{Selector: Selector{MatchLabels: db}, TopologyKey: LabelArch}}
	follow := []PodAffinityTerm{{Selector: Selector{MatchLabels: db}, TopologyKey: LabelArch}}
	pods := []Pod{
		{Namespace: "d", Name: "db-0", Labels: db, PodAntiAffinity: apart},
		{Namespace: "d", Name: "db-1", Labels: db, PodAntiAffinity: apart},
		{Namespace: "d", Name: "near", PodAffinity: follow},
		{Namespace: "d", Name: "far", PodAffinity: follow},
	}
	final := []finalNode{{labels: MapLabels{LabelArch: "amd64"}}, {labels: MapLabels{LabelArch: "amd64"}}, {labels: MapLabels{LabelArch: "arm64"}}}
	nodeOf := map[int]int{0: 0, 1: 1, 2: 0, 3: 2}
	removed := map[int]string{}
	(&state{p: &Problem{Pods: pods}}).trimAffinity(final, nodeOf, removed)
	got := make([]string, 0, len(removed))
	for pod := range pods {
		if _, gone := removed[pod]; gone {
			got = append(got, pods[pod].Name)
		}
	}
	if want := []string{"db-1", "far"}; !slices.Equal(got, want) {
		t.Errorf("taken back %v, want %v", got, want)
	}
}

// TestBindLast: the pods the first pass leaves pending are bound as
// kube-scheduler binds them once every planned pod runs, judged by their
// own constraints over the final nodes' domains, and listed in Plan.Late;
// the first pass (admit) refuses each of them. From the kube-scheduler
// judge's seeds 21, 45, 85 and 210, where the plan left such pods pending
// and kube-scheduler bound them.
func TestBindLast(t *testing.T) {
	web := map[string]string{"app": "web"}
	zoneSpread := TopologySpread{MaxSkew: 1, TopologyKey: LabelZone, WhenUnsatisfiable: DoNotSchedule, Selector: Selector{MatchLabels: web}}
	room := req(2000, 4*gib)
	room[Pods] = 10
	carrier := Pod{Namespace: "d", Name: "carrier", Labels: web, Requests: req(100, gib/4), Spread: []TopologySpread{zoneSpread}}
	tests := []struct {
		name    string
		pending Pod
		// free is each node's room (node 0 in zone-a, node 1 in zone-b);
		// the carrier runs on node 0.
		free       [2]Resources
		launchable []string
		want       int // the node bound, -1 for none
	}{
		{
			name:    "a carrier's spread no longer keeps the pod off a node",
			pending: Pod{Namespace: "d", Name: "p", Labels: web, Requests: req(100, gib/4), NodeSelector: map[string]string{LabelZone: "zone-a"}},
			free:    [2]Resources{room, room},
			want:    0,
		},
		{
			name: "its own spread counts the nodes' domains, not those a new node could bring",
			pending: Pod{Namespace: "d", Name: "p", Labels: web, Requests: req(100, gib/4), Spread: []TopologySpread{zoneSpread},
				NodeSelector: map[string]string{LabelZone: "zone-a"}},
			free:       [2]Resources{room, room},
			launchable: []string{"zone-a", "zone-c"},
			want:       0,
		},
		{
			name:    "its own spread still decides: zone-b has no room and zone-a is one ahead",
			pending: Pod{Namespace: "d", Name: "p", Labels: web, Requests: req(100, gib/4), Spread: []TopologySpread{zoneSpread}},
			free:    [2]Resources{room, req(50, gib/4)},
			want:    -1,
		},
		{
			name:    "a pod refused before planning stays pending",
			pending: Pod{Namespace: "d", Name: "p", Requests: req(100, gib/4), Unschedulable: "PVC data is not bound yet"},
			free:    [2]Resources{room, room},
			want:    -1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &state{p: &Problem{Pods: []Pod{carrier, tc.pending}}}
			c := newSchedCluster(s.p, func(*Pod, string) []string { return tc.launchable })
			for j, zone := range []string{"zone-a", "zone-b"} {
				c.nodes = append(c.nodes, schedNode{labels: MapLabels{LabelZone: zone}, free: tc.free[j], planned: j})
				s.plan.NewNodes = append(s.plan.NewNodes, NewNode{Zone: zone, Allocatable: tc.free[j]})
			}
			c.bind(0, 0)
			s.plan.NewNodes[0].Pods = []int{0}
			if tc.want >= 0 && tc.pending.Unschedulable == "" {
				// Only the last word admits it.
				if j := c.admit(1); j == tc.want {
					t.Fatalf("the first pass already admits the pod on node %d", j)
				}
			}
			s.plan.Unschedulable = []Unschedulable{{Pod: 1, Reason: "left pending"}}
			placed := s.bindLast(c)
			got := -1
			for j := range s.plan.NewNodes {
				if slices.Contains(s.plan.NewNodes[j].Pods, 1) {
					got = j
				}
			}
			if got != tc.want || placed != (tc.want >= 0) {
				t.Fatalf("bound to node %d (placed %t), want %d", got, placed, tc.want)
			}
			if wantLate := tc.want >= 0; wantLate != slices.Equal(s.plan.Late, []int{1}) || wantLate == (len(s.plan.Unschedulable) == 1) {
				t.Errorf("Late = %v, Unschedulable = %v", s.plan.Late, s.plan.Unschedulable)
			}
		})
	}
}
