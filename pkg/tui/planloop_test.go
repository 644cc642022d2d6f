package tui

import (
	"errors"
	"testing"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/report"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
)

// idleLoop returns a synced plan loop at the fixed clock; reads counts the
// times a plan read the cluster.
func idleLoop(clock *time.Time, reads *int) *planLoop {
	opts := &Options{Debounce: time.Second, Now: func() time.Time { return *clock }}
	return &planLoop{opts: opts, planner: report.NewPlanner(), synced: true,
		cluster: func() (*snapshot.Objects, []plan.Claim) { *reads++; return nil, nil }}
}

func TestPlanLoopDebounce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		setup     func(p *planLoop, clock *time.Time) debounceMsg
		wantStart bool
	}{
		{"the last change's wait is over: plan", func(p *planLoop, _ *time.Time) debounceMsg {
			p.markDirty()
			return debounceMsg{p.gen}
		}, true},
		{"a newer change restarted the wait", func(p *planLoop, _ *time.Time) debounceMsg {
			p.markDirty()
			old := p.gen
			p.markDirty()
			return debounceMsg{old}
		}, false},
		{"changes for longer than MaxDebounce: plan anyway", func(p *planLoop, clock *time.Time) debounceMsg {
			p.markDirty()
			old := p.gen
			*clock = clock.Add(MaxDebounce)
			p.markDirty()
			return debounceMsg{old}
		}, true},
		{"a plan is running: wait for it", func(p *planLoop, _ *time.Time) debounceMsg {
			p.markDirty()
			p.planning = true
			return debounceMsg{p.gen}
		}, false},
		{"nothing changed", func(p *planLoop, _ *time.Time) debounceMsg { return debounceMsg{p.gen} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock, reads := now, 0
			p := idleLoop(&clock, &reads)
			msg := tc.setup(p, &clock)
			rep, cmd := p.update(msg)
			if rep != nil {
				t.Errorf("a debounce returned a report")
			}
			if started := cmd != nil; started != tc.wantStart {
				t.Errorf("started %v, want %v", started, tc.wantStart)
			}
			if tc.wantStart && (!p.planning || reads != 1 || p.dirty) {
				t.Errorf("a started plan: planning %v, read the cluster %d times, dirty %v", p.planning, reads, p.dirty)
			}
			if !tc.wantStart && reads != 0 {
				t.Errorf("no plan started, but the cluster was read %d times", reads)
			}
		})
	}
}

func TestPlanLoopKeepsTheLastGoodReport(t *testing.T) {
	on := true
	good := &report.Report{WhatIf: plan.WhatIf{Spot: &on}}
	for _, tc := range []struct {
		name       string
		last       *report.Report
		msg        planMsg
		dirty      bool
		wantRep    *report.Report
		wantWhatIf plan.WhatIf
		wantErr    bool
		wantWait   bool
	}{
		{"a plan arrives", nil, planMsg{rep: good}, false, good, plan.WhatIf{Region: "asked"}, false, false},
		{"a plan arrives after a change: plan again", nil, planMsg{rep: good}, true, good, plan.WhatIf{Region: "asked"}, false, true},
		{"a re-plan fails: the what-if is the one on screen", good, planMsg{err: errors.New("no region")}, false, nil, good.WhatIf, true, false},
		{"the first plan fails", nil, planMsg{err: errors.New("no region")}, false, nil, plan.WhatIf{Region: "asked"}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock, reads := now, 0
			p := idleLoop(&clock, &reads)
			p.rep, p.planning, p.dirty, p.whatIf = tc.last, true, tc.dirty, plan.WhatIf{Region: "asked"}
			gen := p.gen
			rep, cmd := p.update(tc.msg)
			if rep != tc.wantRep {
				t.Errorf("report %p, want %p", rep, tc.wantRep)
			}
			if p.planning || (p.planErr != nil) != tc.wantErr {
				t.Errorf("planning %v, error %v", p.planning, p.planErr)
			}
			if p.whatIf.String() != tc.wantWhatIf.String() {
				t.Errorf("what-if %q, want %q", p.whatIf.String(), tc.wantWhatIf.String())
			}
			if wait := cmd != nil; wait != tc.wantWait || (p.gen != gen) != tc.wantWait {
				t.Errorf("waits to plan again %v (gen %d → %d), want %v", wait, gen, p.gen, tc.wantWait)
			}
		})
	}
}

func TestPlanLoopReplanNow(t *testing.T) {
	for _, tc := range []struct {
		name      string
		planning  bool
		synced    bool
		wantStart bool
	}{
		{"idle and synced: plan at once", false, true, true},
		{"a plan is running: after it", true, true, false},
		{"not synced yet: after the sync", false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock, reads := now, 0
			p := idleLoop(&clock, &reads)
			p.planning, p.synced = tc.planning, tc.synced
			cmd := p.replanNow()
			if started := cmd != nil; started != tc.wantStart {
				t.Errorf("started %v, want %v", started, tc.wantStart)
			}
			if p.dirty == tc.wantStart || !p.dirtySince.Equal(now) {
				t.Errorf("dirty %v since %v: a plan not started now must stay owed", p.dirty, p.dirtySince)
			}
		})
	}
}
