package tui

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/watch"
)

// screen is the plain text of the model's screen.
func screen(m *Model) string { return ansi.Strip(m.Render()) }

func mustContain(t *testing.T, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("screen lacks %q:\n%s", w, s)
		}
	}
}

func TestPendingViewShowsOwnersReasonsAndTheNodeThatWouldTakeThem(t *testing.T) {
	m := liveModel(t, Options{Launcher: &recordingLauncher{}})
	s := screen(m)
	mustContain(t, s, "test-ctx", "2 nodes", "4 pending", "StatefulSet/web", "Pod/huge", "2 Insufficient cpu", m.rep.Plan.NewNodes[0].InstanceType, "0 of ")
	if g := m.rep.Pending; len(g) != 2 {
		t.Fatalf("pending groups: %+v", g)
	}
	for _, g := range m.rep.Pending {
		switch g.Owner {
		case "StatefulSet/web":
			if g.Outcome != "new" || len(g.Pods) != 3 || g.Requests != "1 CPU, 2Gi" {
				t.Errorf("web: %+v", g)
			}
		case "Pod/huge":
			if g.Outcome != "unschedulable" || !strings.Contains(g.Reason, "room for") {
				t.Errorf("huge: %+v", g)
			}
		}
	}
}

func TestNumberKeysTabAndMovementSwitchViewsAndRows(t *testing.T) {
	m := liveModel(t, Options{})
	for _, tc := range []struct {
		keys []string
		view int
		want string
	}{
		{[]string{"2"}, viewProposed, "lower bound"},
		{[]string{"3"}, viewNodes, "node-a"},
		{[]string{"4"}, viewConsolidation, "Saving available"},
		{[]string{"tab"}, viewPending, "StatefulSet/web"},
		{[]string{"tab", "tab"}, viewNodes, "NodeClaim(s) in flight"},
		{[]string{"1"}, viewPending, "pending pod(s)"},
	} {
		drive(t, m, keys(tc.keys...)...)
		if m.view != tc.view {
			t.Errorf("after %v: view %d, want %d", tc.keys, m.view, tc.view)
		}
		mustContain(t, screen(m), tc.want)
	}
	drive(t, m, keys("3")...)
	tb := m.tables[viewNodes]
	drive(t, m, keys("j")...)
	if tb.cursor != 1 {
		t.Errorf("j: cursor %d, want 1", tb.cursor)
	}
	drive(t, m, keys("k", "k")...)
	if tb.cursor != 0 {
		t.Errorf("k k: cursor %d, want 0", tb.cursor)
	}
	drive(t, m, keys("G")...)
	if tb.cursor != len(tb.visible)-1 {
		t.Errorf("G: cursor %d of %d", tb.cursor, len(tb.visible))
	}
	drive(t, m, keys("g")...)
	if tb.cursor != 0 {
		t.Errorf("g: cursor %d", tb.cursor)
	}
	// The cursor row is marked on screen.
	if !strings.Contains(screen(m), "> node-a") {
		t.Errorf("cursor not on node-a:\n%s", screen(m))
	}
	// s sorts by the next column; S reverses.
	drive(t, m, keys("s")...)
	first := tb.current().key
	drive(t, m, keys("S")...)
	if tb.desc == false || tb.sortCol != 0 {
		t.Errorf("S: sortCol %d desc %v", tb.sortCol, tb.desc)
	}
	drive(t, m, keys("g")...)
	if tb.current().key == first {
		t.Errorf("S did not reverse the order (first row still %s)", first)
	}
	if q := drive(t, m, keys("q")...); !q {
		t.Error("q did not quit")
	}
}

func TestFilterNarrowsRowsAndEscClearsIt(t *testing.T) {
	m := liveModel(t, Options{})
	drive(t, m, keys("/", "huge")...)
	if m.mode != modeFilter {
		t.Fatalf("mode %d, want filter", m.mode)
	}
	s := screen(m)
	mustContain(t, s, "/huge", "Pod/huge", `filter "huge": 1 of 2`)
	if strings.Contains(s, "StatefulSet/web") {
		t.Errorf("filter kept web:\n%s", s)
	}
	drive(t, m, keys("enter")...) // keep the filter, back to keys
	if m.mode != modeNormal || m.tables[viewPending].filter != "huge" {
		t.Fatalf("enter: mode %d filter %q", m.mode, m.tables[viewPending].filter)
	}
	drive(t, m, keys("esc")...)
	if f := m.tables[viewPending].filter; f != "" {
		t.Errorf("esc left filter %q", f)
	}
	mustContain(t, screen(m), "StatefulSet/web", "Pod/huge")
}

func TestEnterShowsEveryConstraintAndTheTypesRuledOut(t *testing.T) {
	m := liveModel(t, Options{})
	drive(t, m, keys("/", "huge", "enter", "enter")...)
	if m.mode != modeDetail {
		t.Fatalf("mode %d, want detail", m.mode)
	}
	d := strings.Join(m.detailLines, "\n")
	for _, want := range []string{"Pod/huge", "Constraints of the pod", "requests 5000 CPU, 4Ti", "NodePool default", "too small", "no instance type of this pool fits", "Existing and launching nodes (2)", "not enough free"} {
		if !strings.Contains(d, want) {
			t.Errorf("detail lacks %q:\n%s", want, d)
		}
	}
	drive(t, m, keys("j", "j", "G")...)
	if m.detailOffset == 0 && len(m.wrappedDetail()) > m.height {
		t.Error("G did not scroll the detail")
	}
	drive(t, m, keys("esc")...)
	if m.mode != modeNormal {
		t.Errorf("esc: mode %d", m.mode)
	}
	// The web pods' detail names the proposed node and the cheapest fits.
	drive(t, m, keys("esc", "/", "web", "enter", "enter")...)
	d = strings.Join(m.detailLines, "\n")
	for _, want := range []string{"Plan:      new node", "type(s) fit; cheapest", "Insufficient cpu"} {
		if !strings.Contains(d, want) {
			t.Errorf("web detail lacks %q:\n%s", want, d)
		}
	}
}

func TestLaunchAsksFirstAndCancelCreatesNothing(t *testing.T) {
	l := &recordingLauncher{}
	m := liveModel(t, Options{Launcher: l})
	drive(t, m, keys("2", "space", "L")...)
	if m.mode != modeConfirm {
		t.Fatalf("mode %d, want confirm; flash %q", m.mode, m.flash)
	}
	p := m.rep.Proposed[0]
	s := screen(m)
	mustContain(t, s, "Launch 1 node(s)?", p.InstanceType, "Total: $", "[y] launch", "[n/esc] cancel")
	drive(t, m, keys("n")...)
	if len(l.requests()) != 0 {
		t.Fatalf("cancel launched %v", l.requests())
	}
	mustContain(t, screen(m), "launch cancelled")
	drive(t, m, keys("L")...)
	drive(t, m, keys("esc")...)
	if m.mode != modeNormal || len(l.requests()) != 0 {
		t.Fatalf("esc: mode %d, launched %v", m.mode, l.requests())
	}
}

func TestLaunchAcceptedCreatesOneClaimPerSelectedNodeAndShowsProgress(t *testing.T) {
	l := &recordingLauncher{}
	m := liveModel(t, Options{Launcher: l})
	drive(t, m, keys("2", "a", "L", "y")...)
	reqs := l.requests()
	if len(reqs) != len(m.rep.Proposed) || len(reqs) == 0 {
		t.Fatalf("launched %d, want %d", len(reqs), len(m.rep.Proposed))
	}
	want := m.rep.Plan.NewNodes[0]
	if got := reqs[0].Node; got.InstanceType != want.InstanceType || got.Zone != want.Zone || got.CapacityType != want.CapacityType || len(reqs[0].Pods) != len(want.Pods) {
		t.Errorf("launched %+v, want %+v", got, want)
	}
	s := screen(m)
	mustContain(t, s, "created NodeClaim default-", "default-1", "NodeClaim default-1 created")
	// The status line names the proposal launched; no row may offer it.
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, "new-1") && !strings.HasPrefix(strings.TrimSpace(line), "created NodeClaim") {
			t.Errorf("a launched node is still offered:\n%s", s)
		}
	}
	if len(m.selected) != 0 {
		t.Errorf("selection kept after launch: %v", m.selected)
	}
}

func TestReadOnlyRemovesSelectingAndLaunching(t *testing.T) {
	l := &recordingLauncher{}
	m := liveModel(t, Options{Launcher: l, ReadOnly: true})
	drive(t, m, keys("2", "space", "a", "L")...)
	mustContain(t, screen(m), "read-only: launching is off")
	drive(t, m, keys("y")...)
	if len(l.requests()) != 0 || m.mode == modeConfirm || len(m.selected) != 0 {
		t.Fatalf("read-only launched %v, mode %d, selected %v", l.requests(), m.mode, m.selected)
	}
	s := screen(m)
	mustContain(t, s, "READ-ONLY")
	if strings.Contains(s, "L:launch") {
		t.Errorf("read-only footer offers launching:\n%s", s)
	}
	drive(t, m, keys("?")...)
	s = screen(m)
	mustContain(t, s, "Read-only: selecting and launching are off.")
	if strings.Contains(s, "launch selected") {
		t.Errorf("read-only help lists launching:\n%s", s)
	}
}

func TestEveryViewFitsTheTerminalAfterAResize(t *testing.T) {
	m := liveModel(t, Options{Launcher: &recordingLauncher{}})
	for _, size := range [][2]int{{80, 24}, {200, 50}, {60, 15}, {80, 24}} {
		drive(t, m, tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		for _, k := range []string{"1", "2", "3", "4", "?", "esc", "1", "enter"} {
			drive(t, m, keys(k)...)
			lines := strings.Split(screen(m), "\n")
			if len(lines) != size[1] {
				t.Errorf("%dx%d after %q: %d lines", size[0], size[1], k, len(lines))
			}
			for i, l := range lines {
				if w := ansi.StringWidth(l); w > size[0] {
					t.Errorf("%dx%d after %q: line %d is %d wide: %q", size[0], size[1], k, i, w, l)
				}
			}
		}
		drive(t, m, keys("esc")...)
	}
	// At 80×24 the essentials of the pending view are there.
	drive(t, m, tea.WindowSizeMsg{Width: 80, Height: 24}, keys("1")[0])
	mustContain(t, screen(m), "OWNER", "PODS", "NODE", "REASON", "StatefulSet/web")
}

func TestNoColorDrawsWithoutColours(t *testing.T) {
	m := liveModel(t, Options{NoColor: true})
	out := m.Render()
	for _, seq := range []string{"\x1b[3", "\x1b[9", "38;", "48;"} {
		if strings.Contains(out, seq) {
			t.Fatalf("NO_COLOR output has colour sequence %q: %q", seq, out)
		}
	}
	if !strings.Contains(New(Options{}).Render(), "\x1b[") {
		t.Log("note: colour styles render no escapes without a colour profile")
	}
}

func TestWhatIfOfflineRePlansAndShowsTheCostDifference(t *testing.T) {
	m := offlineModelOf(t, apiDeployment("shop", 6), 120)
	base := m.rep.Plan.TotalPrice
	mustContain(t, screen(m), "offline", "Deployment/api", "6 pods")
	drive(t, m, keys("c")...) // spot on
	if m.rep.WhatIf.Spot == nil || !*m.rep.WhatIf.Spot {
		t.Fatalf("c did not turn spot on: %+v", m.rep.WhatIf)
	}
	if m.rep.Baseline != base || m.rep.Plan.TotalPrice >= base {
		t.Errorf("spot plan $%.4f/h, baseline $%.4f/h, before $%.4f/h: spot should be cheaper", m.rep.Plan.TotalPrice, m.rep.Baseline, base)
	}
	mustContain(t, screen(m), "what-if: spot on Δ -")
	drive(t, m, keys("f", "r7i", "enter")...)
	if f := m.rep.WhatIf.Families; len(f) != 1 || f[0] != "r7i" || m.rep.Plan.NewNodes[0].InstanceType[:3] != "r7i" {
		t.Errorf("families what-if: %+v, plan %s", m.rep.WhatIf, m.rep.Plan.NewNodes[0].InstanceType)
	}
	drive(t, m, keys("r", "ctrl+u")...)
	drive(t, m, keys("eu-west-1", "enter")...)
	if m.rep.WhatIf.Region != "eu-west-1" || !strings.Contains(m.rep.Source, "eu-west-1") {
		t.Errorf("region what-if: %+v, source %s", m.rep.WhatIf, m.rep.Source)
	}
	drive(t, m, keys("x")...)
	if m.rep.WhatIf.Active() || m.rep.Plan.TotalPrice != base {
		t.Errorf("x: what-if %+v, plan $%.4f/h, want $%.4f/h", m.rep.WhatIf, m.rep.Plan.TotalPrice, base)
	}
	// Offline there is nothing to launch into.
	drive(t, m, keys("2", "L")...)
	mustContain(t, screen(m), "offline (-f): there is no cluster to launch into")
}

// TestProgramLaunchesThroughTheRealEventLoop runs the model in a real
// tea.Program with teatest: watcher messages in, keys typed, the launch
// accepted, the program quit.
func TestProgramLaunchesThroughTheRealEventLoop(t *testing.T) {
	l := &recordingLauncher{}
	m := New(Options{Launcher: l, Context: "teatest", Catalog: plan.Catalog{Region: "us-east-1"}, Debounce: time.Millisecond, Now: func() time.Time { return now }, NoColor: true})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30))
	tm.Send(cluster())
	tm.Send(watchSynced())
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("StatefulSet/web")) }, teatest.WithDuration(10*time.Second))
	tm.Type("2")
	tm.Send(tea.KeyPressMsg{Code: tea.KeySpace, Text: " "})
	tm.Type("L")
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("Total:")) }, teatest.WithDuration(5*time.Second))
	tm.Type("y")
	deadline := time.Now().Add(5 * time.Second)
	for len(l.requests()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	tm.Type("q")
	final := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*Model)
	if len(l.requests()) != 1 {
		t.Fatalf("launched %d nodes, want 1", len(l.requests()))
	}
	if len(final.launches) != 1 {
		t.Errorf("final model has %d launches", len(final.launches))
	}
	_, _ = io.ReadAll(tm.FinalOutput(t))
}

// TestLivePlanHonoursTheNodeClassKubeletSettings: a Karpenter NodePool
// whose EC2NodeClass caps pods per node plans more nodes for tiny pods
// once the watcher delivers the class, as explain does.
func TestLivePlanHonoursTheNodeClassKubeletSettings(t *testing.T) {
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": map[string]any{"name": "tiny"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "capped"},
			"requirements": []any{map[string]any{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": []any{"m5.large"}}},
		}}},
	}}
	class := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": map[string]any{"name": "capped"},
		"spec": map[string]any{"kubelet": map[string]any{"maxPods": int64(4)}},
	}}
	nodesFor := func(withClass bool) int {
		m := New(Options{Launcher: &recordingLauncher{}, Context: "test-ctx", Catalog: plan.Catalog{Region: "us-east-1"},
			Debounce: time.Millisecond, Now: func() time.Time { return now }})
		b := watch.Batch{Events: []watch.Event{{Kind: watch.KarpenterNodePool, Key: "tiny", Obj: pool}}}
		if withClass {
			b.Events = append(b.Events, watch.Event{Kind: watch.NodeClass, Key: "karpenter.k8s.aws/ec2nodeclasses/capped", Obj: class})
		}
		for i := range 12 {
			name := fmt.Sprintf("tiny-%d", i)
			b.Events = append(b.Events, watch.Event{Kind: watch.Pod, Key: "default/" + name, Obj: pod(name, "tiny", "", "10m", "16Mi")})
		}
		drive(t, m, tea.WindowSizeMsg{Width: 120, Height: 30}, b, watch.Synced{KarpenterNodePools: true})
		if m.rep == nil {
			t.Fatalf("no plan: %v", m.planErr)
		}
		return len(m.rep.Plan.NewNodes)
	}
	without, with := nodesFor(false), nodesFor(true)
	if with != 3 || without >= with {
		t.Errorf("12 tiny pods on m5.large: %d nodes with maxPods 4 in the class (want 3), %d without it (want fewer)", with, without)
	}
}

func TestProposedNodeDetailListsTheTypesItsNodeClaimWouldAllow(t *testing.T) {
	m := offlineModelOf(t, apiDeployment("", 4), 80)
	if len(m.rep.Proposed) == 0 {
		t.Fatal("the offline plan proposes no node")
	}
	p := m.rep.Proposed[0]
	// The default pool allows c, m and r types of recent generations:
	// many hold the API pods, as `explain -o json` lists them.
	if len(p.InstanceTypeOptions) <= allowedTypesShown || p.InstanceTypeOptions[0] != p.InstanceType {
		t.Fatalf("instanceTypeOptions %v: want more than %d, %s first", p.InstanceTypeOptions, allowedTypesShown, p.InstanceType)
	}
	drive(t, m, keys("2", "enter")...)
	if m.mode != modeDetail {
		t.Fatalf("mode %d, want detail", m.mode)
	}
	// What the screen shows, wrapped at 80 columns: the count, the first
	// few in order, and how many more; no type past the first few.
	text := strings.Join(strings.Fields(screen(m)), " ")
	want := fmt.Sprintf("Allowed types: %d, the cloud picks among them (planned first, then by price): %s, … %d more (explain -o json lists them all)",
		len(p.InstanceTypeOptions), strings.Join(p.InstanceTypeOptions[:allowedTypesShown], ", "), len(p.InstanceTypeOptions)-allowedTypesShown)
	if !strings.Contains(text, want) {
		t.Errorf("proposed node detail lacks %q:\n%s", want, screen(m))
	}
	if next := p.InstanceTypeOptions[allowedTypesShown]; strings.Contains(text, " "+next+",") {
		t.Errorf("the detail names %s, type %d of the options, past the first %d:\n%s", next, allowedTypesShown+1, allowedTypesShown, screen(m))
	}
}

func TestAllowedTypesLine(t *testing.T) {
	tests := []struct {
		name    string
		options []string
		want    string
	}{
		{"one type", []string{"m7i.large"}, "Allowed types: 1, the cloud picks among them (planned first, then by price): m7i.large"},
		{"as many as are shown", []string{"a", "b", "c", "d", "e", "f", "g", "h"}, "Allowed types: 8, the cloud picks among them (planned first, then by price): a, b, c, d, e, f, g, h"},
		{"more than are shown", []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"},
			"Allowed types: 10, the cloud picks among them (planned first, then by price): a, b, c, d, e, f, g, h, … 2 more (explain -o json lists them all)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := allowedTypesLine(tc.options); got != tc.want {
				t.Errorf("allowedTypesLine = %q, want %q", got, tc.want)
			}
		})
	}
}
