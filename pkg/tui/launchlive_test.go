package tui

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// probingLauncher says who launches only once it has looked.
type probingLauncher struct {
	recordingLauncher
	mu     sync.Mutex
	probes int
}

func (l *probingLauncher) Probe(context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.probes++
}

func (l *probingLauncher) Summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.probes == 0 {
		return "This creates NodeClaims; checking whether an operator runs to launch them…"
	}
	return "No operator is running: this creates NodeClaims, and each stays pending until one does."
}

func TestLaunchConfirmationSaysWhoLaunchesAsFoundWhenItOpens(t *testing.T) {
	for _, tc := range []struct {
		name  string
		keys  []string
		wants []string
		probe int
	}{
		{name: "opening the confirmation looks again", keys: []string{"2", "space", "L"}, probe: 1,
			wants: []string{"No operator is running", "stays pending until one does"}},
		{name: "each opening looks again", keys: []string{"2", "space", "L", "n", "L"}, probe: 2,
			wants: []string{"No operator is running"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &probingLauncher{}
			m := liveModel(t, Options{Launcher: l})
			drive(t, m, keys(tc.keys...)...)
			if m.mode != modeConfirm {
				t.Fatalf("mode %d, want confirm; flash %q", m.mode, m.flash)
			}
			s := strings.Join(strings.Fields(screen(m)), " ") // the summary wraps in the box
			for _, want := range tc.wants {
				if !strings.Contains(s, want) {
					t.Errorf("confirmation lacks %q:\n%s", want, screen(m))
				}
			}
			if strings.Contains(s, "checking whether") || l.probes != tc.probe {
				t.Errorf("%d probes, want %d; screen:\n%s", l.probes, tc.probe, screen(m))
			}
		})
	}
}

func TestNodeAgesTickWithoutAPlan(t *testing.T) {
	clock := now
	m := liveModel(t, Options{Launcher: &recordingLauncher{}})
	m.opts.Now = func() time.Time { return clock }
	plans := m.gen
	age := func() string {
		t.Helper()
		rows := m.tables[viewNodes].rows
		if len(rows) == 0 {
			t.Fatal("no node rows")
		}
		return rows[0].cells[9]
	}
	if got := age(); got != "3h" {
		t.Fatalf("AGE %q at the plan, want 3h", got)
	}
	for _, step := range []struct {
		advance time.Duration
		want    string
	}{{time.Second, "3h"}, {2 * time.Hour, "5h"}, {24 * time.Hour, "29h"}} {
		clock = clock.Add(step.advance)
		if _, cmd := m.Update(ageTickMsg{}); cmd == nil {
			t.Fatal("the tick does not tick again")
		}
		if got := age(); got != step.want {
			t.Errorf("AGE %q after %s more, want %s", got, step.advance, step.want)
		}
	}
	if m.gen != plans || m.planning {
		t.Errorf("a tick planned again (gen %d → %d, planning %v)", plans, m.gen, m.planning)
	}
}
