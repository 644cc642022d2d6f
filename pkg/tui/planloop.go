package tui

import (
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/report"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
)

// planLoop re-plans as the cluster changes: after a quiet time once a
// change is seen (bounded by MaxDebounce), at once for a what-if, and one
// plan at a time, off the UI goroutine. The report on screen is always the
// last good one: a failed re-plan is said above it, not shown instead.
type planLoop struct {
	opts    *Options
	planner *report.Planner
	// cluster returns the watched objects and the claims in flight (the
	// store's and this run's direct launches), read when a plan starts.
	cluster func() (*snapshot.Objects, []plan.Claim)

	synced     bool // the watcher listed everything once (always offline)
	rep        *report.Report
	planErr    error
	planning   bool // a plan is running
	dirty      bool // the cluster changed since the running plan started
	dirtySince time.Time
	gen        int // debounce generation: a newer change restarts the wait
	// whatIf is what the next plan asks; the report says what it answered.
	whatIf plan.WhatIf
}

// Messages of the plan loop.
type (
	debounceMsg struct{ gen int }
	planMsg     struct {
		rep *report.Report
		err error
	}
)

// update handles the loop's own messages. A finished plan's report is
// returned for the program to draw (nil when there is none new).
func (p *planLoop) update(msg tea.Msg) (*report.Report, tea.Cmd) {
	switch msg := msg.(type) {
	case debounceMsg:
		return nil, p.onDebounce(msg)
	case planMsg:
		return p.onPlan(msg)
	}
	return nil, nil
}

// onDebounce starts the plan once the wait of the last change is over.
func (p *planLoop) onDebounce(msg debounceMsg) tea.Cmd {
	if msg.gen != p.gen && p.opts.Now().Sub(p.dirtySince) < MaxDebounce {
		return nil // a newer change restarted the wait
	}
	if p.planning || !p.dirty {
		return nil
	}
	return p.start()
}

// onPlan takes a finished plan and, if the cluster changed meanwhile,
// waits to plan again.
func (p *planLoop) onPlan(msg planMsg) (*report.Report, tea.Cmd) {
	p.planning = false
	var rep *report.Report
	if msg.err != nil {
		p.planErr = msg.err
		if p.rep != nil {
			// The plan on screen is still the last good one: the
			// what-if it answers is what the header names, and the
			// next toggle starts from it.
			p.whatIf = p.rep.WhatIf
		}
	} else {
		p.planErr = nil
		rep = msg.rep
	}
	if p.dirty {
		p.gen++
		gen := p.gen
		return rep, tea.Tick(p.opts.Debounce, func(time.Time) tea.Msg { return debounceMsg{gen} })
	}
	return rep, nil
}

// markDirty notes a change and (re)starts the debounce.
func (p *planLoop) markDirty() tea.Cmd {
	if !p.dirty {
		p.dirty, p.dirtySince = true, p.opts.Now()
	}
	p.gen++
	gen := p.gen
	return tea.Tick(p.opts.Debounce, func(time.Time) tea.Msg { return debounceMsg{gen} })
}

// replanNow re-plans at once (what-if toggles), or as soon as the running
// plan finishes.
func (p *planLoop) replanNow() tea.Cmd {
	p.dirty, p.dirtySince = true, p.opts.Now()
	if p.planning || !p.synced {
		return nil
	}
	return p.start()
}

// start takes the cluster as it is now (or the manifests) and plans in a
// command.
func (p *planLoop) start() tea.Cmd {
	p.planning, p.dirty = true, false
	in := report.Input{
		Catalog: p.opts.Catalog, Default: p.opts.Default, WhatIf: p.whatIf, Timeout: p.opts.Timeout, Now: p.opts.Now(),
	}
	if p.opts.Manifests != nil {
		in.Manifests = p.opts.Manifests
	} else {
		in.Objects, in.Claims = p.cluster()
	}
	planner := p.planner
	return func() tea.Msg {
		rep, err := planner.Build(in)
		return planMsg{rep, err}
	}
}
