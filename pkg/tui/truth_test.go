package tui

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/catalog"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/watch"
)

// apiDeployment is a Deployment "api" of n pods of 1 CPU and 4Gi in
// namespace ns ("" for none).
func apiDeployment(ns string, n int) string {
	meta := "{name: api}"
	if ns != "" {
		meta = "{name: api, namespace: " + ns + "}"
	}
	return `apiVersion: apps/v1
kind: Deployment
metadata: ` + meta + `
spec:
  replicas: ` + strconv.Itoa(n) + `
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
      - name: api
        image: api
        resources: {requests: {cpu: "1", memory: 4Gi}}
`
}

// offlineModel is the program on one Deployment of manifests, planned.
func offlineModel(t *testing.T) *Model { return offlineModelOf(t, apiDeployment("", 4), 140) }

// offlineModelOf is the program planning the manifest offline, on a
// terminal width columns wide.
func offlineModelOf(t *testing.T, manifest string, width int) *Model {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "api.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	ms, err := snapshot.Read([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := New(Options{Manifests: ms, Catalog: plan.Catalog{Region: "us-east-1"}, Context: "offline", Now: func() time.Time { return now }})
	drive(t, m, tea.WindowSizeMsg{Width: width, Height: 30}, m.Init()())
	if m.rep == nil {
		t.Fatalf("no offline report: %v", m.planErr)
	}
	return m
}

func TestAFailedWhatIfShowsTheErrorAndKeepsTheHeaderTrue(t *testing.T) {
	m := offlineModel(t)
	base := m.rep.Plan.TotalPrice
	drive(t, m, keys("c")...) // spot on: a what-if that works
	spot := m.rep.Plan.TotalPrice
	drive(t, m, keys("r", "ctrl+u")...)
	drive(t, m, keys("xx-nowhere-1", "enter")...)
	s := screen(m)
	mustContain(t, s, "re-planning failed, showing the last plan: ", "xx-nowhere-1", "what-if: spot on Δ")
	if strings.Contains(s, "region xx-nowhere-1") || strings.Contains(s, "region=xx-nowhere-1") {
		t.Errorf("the header names the region whose plan failed:\n%s", s)
	}
	// The whole error is on an 80-column screen, wrapped (at blanks and
	// hyphens, so compared without blanks), not cut.
	narrow := offlineModelOf(t, apiDeployment("", 4), 80)
	drive(t, narrow, keys("r", "ctrl+u")...)
	drive(t, narrow, keys("xx-nowhere-1", "enter")...)
	if narrow.planErr == nil {
		t.Fatal("the xx-nowhere-1 what-if did not fail")
	}
	flat := strings.Join(strings.Fields(screen(narrow)), "")
	if want := strings.Join(strings.Fields("re-planning failed, showing the last plan: "+narrow.planErr.Error()), ""); !strings.Contains(flat, want) {
		t.Errorf("the 80-column screen lacks the whole error %q:\n%s", want, screen(narrow))
	}
	if m.whatIf.Region != "" || m.rep.Plan.TotalPrice != spot || spot >= base {
		t.Errorf("after the failure: what-if %+v, plan $%.4f/h; want the spot plan $%.4f/h kept", m.whatIf, m.rep.Plan.TotalPrice, spot)
	}
	// The next what-if starts from the plan on screen, and clears the error.
	drive(t, m, keys("x")...)
	if s := screen(m); strings.Contains(s, "re-planning failed") || m.rep.Plan.TotalPrice != base {
		t.Errorf("x: plan $%.4f/h, want $%.4f/h and no error:\n%s", m.rep.Plan.TotalPrice, base, s)
	}
}

func TestRePlanningIsMarkedWhileAPlanIsInFlight(t *testing.T) {
	m := offlineModel(t)
	drive(t, m, keys("c")...)
	// A toggle whose plan has not come back yet.
	_, cmd := m.Update(keys("c")[0])
	if cmd == nil || !m.planning {
		t.Fatal("c started no plan")
	}
	mustContain(t, screen(m), "what-if: spot on Δ", "re-planning…")
	drive(t, m, cmd())
	if strings.Contains(screen(m), "re-planning…") {
		t.Errorf("still re-planning after the plan came back:\n%s", screen(m))
	}
}

func TestSortingPutsNoneLast(t *testing.T) {
	b := cluster()
	b.Events = append(b.Events, watch.Event{Kind: watch.Node, Key: "node-z", Obj: node("node-z", "x9.unknown", "2", "8Gi")})
	m := New(Options{Context: "test-ctx", Catalog: plan.Catalog{Region: "us-east-1"}, Debounce: time.Millisecond, Now: func() time.Time { return now }})
	drive(t, m, tea.WindowSizeMsg{Width: 160, Height: 30}, b, watch.Synced{})
	tb := m.tables[viewNodes]
	const priceCol = 3
	for _, order := range []string{"biggest first", "smallest first"} {
		tb.sortBy(priceCol)
		last := tb.rows[tb.visible[len(tb.visible)-1]]
		if last.key != "node-z" || last.cells[priceCol] != "-" {
			t.Errorf("%s (desc %v): last row %s with price %q, want node-z with none", order, tb.desc, last.key, last.cells[priceCol])
		}
	}
}

func TestTabBadgesCountWhatTheSummaryCounts(t *testing.T) {
	m := liveModel(t, Options{})
	// cluster(): 3 web pods in one group and the huge pod pending; 2 nodes.
	if got := m.badge(viewPending); got != 4 || len(m.tables[viewPending].visible) != 2 {
		t.Errorf("pending badge %d over %d rows, want 4 pods over 2 groups", got, len(m.tables[viewPending].visible))
	}
	mustContain(t, screen(m), " 1 Pending 4 ", "4 pending pod(s) in 2 group(s)")
	drive(t, m, keys("3")...)
	if got := m.badge(viewNodes); got != m.rep.ClusterNodes {
		t.Errorf("nodes badge %d, summary counts %d nodes", got, m.rep.ClusterNodes)
	}
	drive(t, m, keys("4")...)
	if got, want := m.badge(viewConsolidation), len(m.rep.Consolidation.Actions); got != want {
		t.Errorf("consolidation badge %d, summary counts %d actions", got, want)
	}
}

func TestOfflineHelpListsNoLaunchKeys(t *testing.T) {
	m := offlineModel(t)
	drive(t, m, keys("?")...)
	s := screen(m)
	mustContain(t, s, "What-if", "region", "Offline (-f): nothing to launch into")
	for _, launch := range []string{"launch selected", "select a proposed node", "Launch"} {
		if strings.Contains(s, launch) {
			t.Errorf("offline help lists %q:\n%s", launch, s)
		}
	}
	live := liveModel(t, Options{Launcher: &recordingLauncher{}})
	drive(t, live, keys("?")...)
	mustContain(t, screen(live), "launch selected")
}

func TestAWhatIfFamilyTypoIsNamed(t *testing.T) {
	m := offlineModel(t)
	base := m.rep.Plan.TotalPrice
	drive(t, m, keys("f", "m7x", "enter")...)
	mustContain(t, screen(m), `re-planning failed, showing the last plan: what-if family "m7x": no such instance family`)
	if len(m.whatIf.Families) != 0 || m.rep.Plan.TotalPrice != base {
		t.Errorf("after the typo: what-if %+v, plan $%.4f/h, want the plan before, $%.4f/h", m.whatIf, m.rep.Plan.TotalPrice, base)
	}
}

func TestTheScreenSaysWhereItsPricesComeFrom(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	embedded := func(region string) string {
		return "prices: " + plan.EmbeddedDescription(cat, region)
	}
	// The dates are the region's: us-east-1's on-demand prices are newer
	// than its spot prices, eu-west-1's are all of one date.
	if got, want := embedded("us-east-1"), "prices: embedded AWS catalog of 2026-07-20, region us-east-1 (spot 2025-05-28)"; got != want {
		t.Fatalf("embedded(us-east-1) = %q, want %q", got, want)
	}
	if got, want := embedded("eu-west-1"), "prices: embedded AWS catalog of 2025-05-28, region eu-west-1"; got != want {
		t.Fatalf("embedded(eu-west-1) = %q, want %q", got, want)
	}
	// 80 columns: the line is whole on the narrowest terminal the e2e
	// drives, in every view.
	m := offlineModelOf(t, apiDeployment("", 4), 80)
	for _, view := range []string{"1", "2", "3", "4"} {
		drive(t, m, keys(view)...)
		mustContain(t, screen(m), embedded("us-east-1"))
	}
	// A what-if region prices the plan there, and the line follows it.
	drive(t, m, keys("r", "ctrl+u")...)
	drive(t, m, keys("eu-west-1", "enter")...)
	s := screen(m)
	mustContain(t, s, embedded("eu-west-1"))
	if strings.Contains(s, "us-east-1") {
		t.Errorf("after the eu-west-1 what-if the screen still names us-east-1:\n%s", s)
	}

	// Before the first plan there is no source to name.
	if s := screen(New(Options{})); strings.Contains(s, "prices:") {
		t.Errorf("a screen without a plan names a price source:\n%s", s)
	}
}
