package tui

import (
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/report"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/launch"
)

// fakeHost records what the launch flow asks of the program.
type fakeHost struct {
	flash    string
	flashErr bool
	refresh  int
	replans  int
}

func (h *fakeHost) setFlash(s string, isErr bool) { h.flash, h.flashErr = s, isErr }
func (h *fakeHost) refreshProposed()              { h.refresh++ }
func (h *fakeHost) replanNow() tea.Cmd            { h.replans++; return nil }

// confirming returns a flow asking to launch two nodes, one of them selected.
func confirming(l launch.Launcher) (*launchFlow, *fakeHost) {
	h := &fakeHost{}
	opts := &Options{Launcher: l, Now: func() time.Time { return now }}
	f := newLaunchFlow(h, opts, newStore())
	f.selected["k1"] = true
	f.confirm = []launch.Request{{Name: "new-1"}, {Name: "new-2"}}
	f.confirmKeys = []string{"k1", "k2"}
	return &f, h
}

func TestLaunchFlowConfirmKeys(t *testing.T) {
	for _, tc := range []struct {
		key          string
		wantClosed   bool
		wantLaunches int
		wantFlash    string
	}{
		{"y", true, 2, "launching 2 node(s)…"},
		{"Y", true, 2, "launching 2 node(s)…"},
		{"n", true, 0, "launch cancelled; nothing was created"},
		{"N", true, 0, "launch cancelled; nothing was created"},
		{"esc", true, 0, "launch cancelled; nothing was created"},
		{"q", true, 0, "launch cancelled; nothing was created"},
		{"j", false, 0, ""},
		{"enter", false, 0, ""},
	} {
		t.Run(tc.key, func(t *testing.T) {
			l := &recordingLauncher{}
			f, h := confirming(l)
			cmd, closed := f.onConfirmKey(keys(tc.key)[0].(tea.KeyPressMsg))
			if closed != tc.wantClosed {
				t.Errorf("closed %v, want %v", closed, tc.wantClosed)
			}
			if len(f.launches) != tc.wantLaunches {
				t.Errorf("%d launches, want %d", len(f.launches), tc.wantLaunches)
			}
			if h.flash != tc.wantFlash {
				t.Errorf("flash %q, want %q", h.flash, tc.wantFlash)
			}
			switch {
			case tc.wantLaunches > 0:
				if !f.launched["k1"] || !f.launched["k2"] || len(f.selected) != 0 || f.confirm != nil || h.refresh == 0 {
					t.Errorf("after y: launched %v, selected %v, confirm %v, %d refreshes", f.launched, f.selected, f.confirm, h.refresh)
				}
				// Each launch runs in its own command.
				batch, _ := cmd().(tea.BatchMsg)
				for _, c := range batch {
					c()
				}
				if got := len(l.requests()); got != 2 {
					t.Errorf("the commands launched %d nodes, want 2", got)
				}
			case tc.wantClosed:
				if f.confirm != nil || len(f.launched) != 0 || !f.selected["k1"] {
					t.Errorf("after cancel: confirm %v, launched %v, selected %v", f.confirm, f.launched, f.selected)
				}
			default:
				if len(f.confirm) != 2 {
					t.Errorf("another key changed the confirmation: %v", f.confirm)
				}
			}
		})
	}
}

func TestLaunchFlowOnLaunchedSaysWhatCameOfIt(t *testing.T) {
	direct := &v1alpha1.NodeClaim{}
	direct.Status.ProviderID, direct.Status.InstanceType = "fake://us-east-1a/i-1", "m5.large"
	for _, tc := range []struct {
		name         string
		launched     launch.Launched
		err          error
		wantFlash    string
		wantErr      bool
		wantOffered  bool // offered again: no longer marked launched
		wantReplans  int
		wantRegErr   bool
		wantStateErr bool
	}{
		{"a NodeClaim is created", launch.Launched{Claim: "default-1", ClaimInCluster: true}, nil,
			"created NodeClaim default-1 for new-1 (m5.large)", false, false, 0, false, false},
		{"a launch fails", launch.Launched{}, errors.New("no\ncapacity"), "no capacity", true, true, 0, false, true},
		{"a direct launch is in flight: re-plan", launch.Launched{Claim: "default-1", Direct: direct}, nil,
			"launched fake://us-east-1a/i-1 (m5.large) for new-1; no NodeClaim CRD or NodePool to record it in", false, false, 1, false, false},
		{"a direct launch whose claim could not be written goes on", launch.Launched{Claim: "default-1", Direct: direct}, errors.New("status not written"),
			"status not written", true, false, 0, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, h := confirming(&recordingLauncher{})
			st := &launchState{req: launch.Request{Name: "new-1"}, key: "k1"}
			st.req.Node.InstanceType = "m5.large"
			f.launches, f.launched["k1"] = []*launchState{st}, true
			f.update(launchMsg{st, tc.launched, tc.err})
			if h.flash != tc.wantFlash || h.flashErr != tc.wantErr {
				t.Errorf("flash %q (error %v), want %q (error %v)", h.flash, h.flashErr, tc.wantFlash, tc.wantErr)
			}
			if offered := !f.launched["k1"]; offered != tc.wantOffered {
				t.Errorf("offered again %v, want %v", offered, tc.wantOffered)
			}
			if h.replans != tc.wantReplans || h.refresh != 1 {
				t.Errorf("%d re-plans, %d refreshes; want %d and 1", h.replans, h.refresh, tc.wantReplans)
			}
			if (st.regErr != nil) != tc.wantRegErr || (st.err != nil) != tc.wantStateErr {
				t.Errorf("state errors %v / %v", st.err, st.regErr)
			}
		})
	}
}

func TestLaunchFlowQuitAsksAgainWhileNodesAreClosed(t *testing.T) {
	closed := &launchState{launched: launch.Launched{Direct: &v1alpha1.NodeClaim{}}}
	open := &launchState{launched: launch.Launched{Direct: &v1alpha1.NodeClaim{}}, open: true}
	for _, tc := range []struct {
		name      string
		launches  []*launchState
		armed     bool
		wantQuit  bool
		wantArmed bool
	}{
		{"nothing launched", nil, false, true, false},
		{"every node open", []*launchState{open}, false, true, false},
		{"a node closed: the first q warns", []*launchState{open, closed}, false, false, true},
		{"a node closed: the second q quits", []*launchState{closed}, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, h := confirming(&recordingLauncher{})
			f.opts.DirectCloud = "fake"
			f.launches = tc.launches
			if got := f.mayQuit(tc.armed); got != tc.wantQuit {
				t.Errorf("quits %v, want %v", got, tc.wantQuit)
			}
			if f.quitArmed != tc.wantArmed {
				t.Errorf("armed %v, want %v", f.quitArmed, tc.wantArmed)
			}
			if tc.wantArmed && !strings.Contains(h.flash, "1 launched node(s) not open to pods yet") {
				t.Errorf("flash %q, want the count of closed nodes", h.flash)
			}
			if armed := f.disarm(); armed != tc.wantArmed || f.quitArmed {
				t.Errorf("disarm returned %v and left %v", armed, f.quitArmed)
			}
		})
	}
}

func TestLaunchFlowSelection(t *testing.T) {
	rep := &report.Report{Proposed: []report.ProposedNode{
		{Name: "new-1", Pool: "p", Pods: []string{"a"}},
		{Name: "new-2", Pool: "p", Pods: []string{"b"}},
		{Name: "new-3", Pool: "p", Pods: []string{"c"}},
	}}
	k := func(i int) string { return proposedKey(&rep.Proposed[i]) }
	for _, tc := range []struct {
		name     string
		selected []int
		launched []int
		do       func(f *launchFlow)
		want     []int
	}{
		{"toggle selects", nil, nil, func(f *launchFlow) { f.toggle(k(1)) }, []int{1}},
		{"toggle unselects", []int{1}, nil, func(f *launchFlow) { f.toggle(k(1)) }, nil},
		{"select all leaves the launched out", []int{0}, []int{2}, func(f *launchFlow) { f.selectAll(rep) }, []int{0, 1}},
		{"select all when all are selected selects none", []int{0, 1, 2}, nil, func(f *launchFlow) { f.selectAll(rep) }, nil},
		{"a new plan keeps what it still proposes", []int{0, 2}, nil, func(f *launchFlow) {
			f.keepSelected(&report.Report{Proposed: rep.Proposed[1:]})
		}, []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := confirming(&recordingLauncher{})
			f.selected = map[string]bool{}
			for _, i := range tc.selected {
				f.selected[k(i)] = true
			}
			for _, i := range tc.launched {
				f.launched[k(i)] = true
			}
			tc.do(f)
			want := map[string]bool{}
			for _, i := range tc.want {
				want[k(i)] = true
			}
			if len(f.selected) != len(want) {
				t.Fatalf("selected %v, want %v", f.selected, want)
			}
			for key := range want {
				if !f.selected[key] {
					t.Errorf("selected %v, want %v", f.selected, want)
				}
			}
		})
	}
}
