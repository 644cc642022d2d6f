package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// fiftyLines is a detail of 50 short lines.
func fiftyLines() []string {
	lines := make([]string, 50)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d", i+1)
	}
	return lines
}

func TestDetailViewScrollsWithinItsLines(t *testing.T) {
	// 80×13: 10 lines a page; 50 lines scroll to offset 40 at most.
	const width, height = 80, 13
	keyMap := newKeyMap(false)
	for _, tc := range []struct {
		name       string
		from       int
		key        string
		wantOffset int
		wantMode   mode
		wantQuit   bool
	}{
		{"j scrolls down one", 0, "j", 1, modeDetail, false},
		{"down scrolls down one", 3, "down", 4, modeDetail, false},
		{"k scrolls up one", 5, "k", 4, modeDetail, false},
		{"k stops at the top", 0, "k", 0, modeDetail, false},
		{"page down scrolls a page", 0, "ctrl+f", 10, modeDetail, false},
		{"space scrolls a page", 0, "space", 10, modeDetail, false},
		{"page up scrolls a page back", 15, "ctrl+b", 5, modeDetail, false},
		{"page down stops at the last page", 35, "ctrl+f", 40, modeDetail, false},
		{"G goes to the last page", 0, "G", 40, modeDetail, false},
		{"g goes to the top", 20, "g", 0, modeDetail, false},
		{"esc goes back", 20, "esc", 20, modeNormal, false},
		{"enter goes back", 20, "enter", 20, modeNormal, false},
		{"? opens the help", 20, "?", 20, modeHelp, false},
		{"q quits", 20, "q", 20, modeDetail, true},
		{"another key does nothing", 20, "x", 20, modeDetail, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d detailView
			d.open("Pending: web", fiftyLines())
			d.detailOffset = tc.from
			var msg tea.KeyPressMsg
			switch tc.key {
			case "ctrl+f", "ctrl+b":
				msg = tea.KeyPressMsg{Code: rune(tc.key[5]), Mod: tea.ModCtrl}
			default:
				msg = keys(tc.key)[0].(tea.KeyPressMsg)
			}
			next, cmd := d.onKey(msg, &keyMap, width, height)
			if d.detailOffset != tc.wantOffset {
				t.Errorf("offset %d, want %d", d.detailOffset, tc.wantOffset)
			}
			if next != tc.wantMode {
				t.Errorf("mode %d, want %d", next, tc.wantMode)
			}
			quit := false
			if cmd != nil {
				_, quit = cmd().(tea.QuitMsg)
			}
			if quit != tc.wantQuit {
				t.Errorf("quit %v, want %v", quit, tc.wantQuit)
			}
		})
	}
}

func TestDetailViewDrawsTheTitleAndOnePage(t *testing.T) {
	var d detailView
	d.open("Pending: web", fiftyLines())
	d.detailOffset = 5
	st := newStyles(true)
	got := d.view(&st, 80, 10)
	if len(got) != 10 {
		t.Fatalf("%d lines, want the title and 9 lines", len(got))
	}
	if want := "Pending: web  (6-14 of 50)"; !strings.Contains(got[0], want) {
		t.Errorf("title %q, want it to say %q", got[0], want)
	}
	if got[1] != "line 6" || got[9] != "line 14" {
		t.Errorf("page %q … %q, want line 6 … line 14", got[1], got[9])
	}
	// An offset past the end (a narrower screen before) comes back.
	d.detailOffset = 100
	if got := d.view(&st, 80, 10); got[len(got)-1] != "line 50" || d.detailOffset != 41 {
		t.Errorf("past the end: last %q at offset %d, want line 50 at 41", got[len(got)-1], d.detailOffset)
	}
}

func TestDetailViewWrapsUnderTheText(t *testing.T) {
	var d detailView
	d.open("t", []string{"  • " + strings.Repeat("word ", 20)})
	got := d.wrapped(40)
	if len(got) < 2 {
		t.Fatalf("not wrapped: %q", got)
	}
	for _, l := range got[1:] {
		if !strings.HasPrefix(l, "    word") {
			t.Errorf("continuation %q, want it indented under the text", l)
		}
	}
}
