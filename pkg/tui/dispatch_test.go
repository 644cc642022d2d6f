package tui

import (
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/launch"
)

// onKey gives the keys to the part the mode names.
func TestOnKeyDispatchesByMode(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     mode
		key      string
		wantMode mode
		wantQuit bool
		check    func(t *testing.T, m *Model)
	}{
		{"ctrl+c quits in any mode", modePrompt, "ctrl+c", modePrompt, true, nil},
		{"help: ? closes it", modeHelp, "?", modeNormal, false, nil},
		{"help: other keys wait", modeHelp, "j", modeHelp, false, nil},
		{"detail: j scrolls it", modeDetail, "j", modeDetail, false, func(t *testing.T, m *Model) {
			if m.detailOffset != 1 {
				t.Errorf("detail offset %d, want 1", m.detailOffset)
			}
		}},
		{"detail: esc goes back", modeDetail, "esc", modeNormal, false, nil},
		{"confirm: n cancels it", modeConfirm, "n", modeNormal, false, func(t *testing.T, m *Model) {
			if m.flash != "launch cancelled; nothing was created" {
				t.Errorf("flash %q", m.flash)
			}
		}},
		{"confirm: j waits for an answer", modeConfirm, "j", modeConfirm, false, nil},
		{"filter: typed keys filter", modeFilter, "x", modeFilter, false, func(t *testing.T, m *Model) {
			if m.tables[m.view].filter != "x" {
				t.Errorf("filter %q, want x", m.tables[m.view].filter)
			}
		}},
		{"normal: j moves, not the detail", modeNormal, "j", modeNormal, false, func(t *testing.T, m *Model) {
			if m.detailOffset != 0 {
				t.Errorf("detail offset %d", m.detailOffset)
			}
		}},
		{"normal: tab changes the view", modeNormal, "tab", modeNormal, false, func(t *testing.T, m *Model) {
			if m.view != viewProposed {
				t.Errorf("view %d", m.view)
			}
		}},
		{"normal: / starts the filter", modeNormal, "/", modeFilter, false, nil},
		{"normal: f asks for families", modeNormal, "f", modePrompt, false, func(t *testing.T, m *Model) {
			if m.prompt.question == "" || m.prompt.apply == nil {
				t.Errorf("prompt %+v", m.prompt)
			}
		}},
		{"normal: q quits with nothing launched", modeNormal, "q", modeNormal, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(Options{Now: func() time.Time { return now }, Launcher: &recordingLauncher{}})
			m.detailView.open("t", fiftyLines())
			m.launchFlow.confirm = []launch.Request{{Name: "new-1"}}
			m.mode = tc.mode
			cmd := m.onKey(keys(tc.key)[0].(tea.KeyPressMsg))
			if m.mode != tc.wantMode {
				t.Errorf("mode %d, want %d", m.mode, tc.wantMode)
			}
			quit := false
			if cmd != nil {
				_, quit = cmd().(tea.QuitMsg)
			}
			if quit != tc.wantQuit {
				t.Errorf("quit %v, want %v", quit, tc.wantQuit)
			}
			if tc.check != nil {
				tc.check(t, m)
			}
		})
	}
}
