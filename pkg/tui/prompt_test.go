package tui

import (
	"slices"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

func TestPromptLineEditsAndEnds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		text      string
		key       tea.KeyPressMsg
		wantText  string
		wantState promptState
	}{
		{"a letter is typed", "ab", tea.KeyPressMsg{Code: 'c', Text: "c"}, "abc", promptEditing},
		{"a shifted letter is typed", "ab", tea.KeyPressMsg{Code: 'C', Text: "C", Mod: tea.ModShift}, "abC", promptEditing},
		{"a control key is not typed", "ab", tea.KeyPressMsg{Code: 'a', Mod: tea.ModCtrl}, "ab", promptEditing},
		{"an alt key is not typed", "ab", tea.KeyPressMsg{Code: 'x', Text: "x", Mod: tea.ModAlt}, "ab", promptEditing},
		{"space is typed", "ab", tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}, "ab ", promptEditing},
		{"space without text is typed", "ab", tea.KeyPressMsg{Code: tea.KeySpace}, "ab ", promptEditing},
		{"a multi-byte letter is one rune", "ab", tea.KeyPressMsg{Code: 'é', Text: "é"}, "abé", promptEditing},
		{"backspace deletes the last rune", "abé", tea.KeyPressMsg{Code: tea.KeyBackspace}, "ab", promptEditing},
		{"backspace on nothing stays empty", "", tea.KeyPressMsg{Code: tea.KeyBackspace}, "", promptEditing},
		{"ctrl+h deletes", "ab", tea.KeyPressMsg{Code: 'h', Mod: tea.ModCtrl}, "a", promptEditing},
		{"ctrl+u clears", "abc", tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl}, "", promptEditing},
		{"esc cancels and keeps the text", "ab", tea.KeyPressMsg{Code: tea.KeyEscape}, "ab", promptCancelled},
		{"enter ends and keeps the text", "ab", tea.KeyPressMsg{Code: tea.KeyEnter}, "ab", promptEntered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p promptLine
			p.filter(tc.text)
			if got := p.onKey(tc.key); got != tc.wantState {
				t.Errorf("state %d, want %d", got, tc.wantState)
			}
			if got := p.value(); got != tc.wantText {
				t.Errorf("text %q, want %q", got, tc.wantText)
			}
		})
	}
}

func TestPromptLineViewSaysWhatIsTyped(t *testing.T) {
	var p promptLine
	p.ask("region (empty: the cluster's)", "eu-west-1", nil)
	if got, want := p.view(), "region (empty: the cluster's): eu-west-1█"; got != want {
		t.Errorf("question: %q, want %q", got, want)
	}
	p.filter("web")
	if got, want := p.view(), "/web█"; got != want {
		t.Errorf("filter: %q, want %q", got, want)
	}
}

// The model applies the filter as it is typed and clears it on esc; an
// answer applies on enter only.
func TestModelPromptAppliesFilterLiveAndAnswersOnEnter(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mode       mode
		keys       []string
		wantFilter string
		wantAnswer []string // the answers applied
		wantMode   mode
	}{
		{"filter typed", modeFilter, []string{"we"}, "we", nil, modeFilter},
		{"filter entered stays", modeFilter, []string{"we", "enter"}, "we", nil, modeNormal},
		{"filter cancelled clears", modeFilter, []string{"we", "esc"}, "", nil, modeNormal},
		{"answer typed is not applied", modePrompt, []string{"eu"}, "", nil, modePrompt},
		{"answer entered is applied once", modePrompt, []string{"eu", "backspace", "s", "enter"}, "", []string{"es"}, modeNormal},
		{"answer cancelled is not applied", modePrompt, []string{"eu", "esc"}, "", nil, modeNormal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(Options{Now: func() time.Time { return now }})
			var answers []string
			m.mode = tc.mode
			if tc.mode == modePrompt {
				m.prompt.ask("q", "", func(v string) tea.Cmd { answers = append(answers, v); return nil })
			} else {
				m.prompt.filter("")
			}
			for _, k := range keys(tc.keys...) {
				m.onKey(k.(tea.KeyPressMsg))
			}
			if got := m.tables[m.view].filter; got != tc.wantFilter {
				t.Errorf("filter %q, want %q", got, tc.wantFilter)
			}
			if !slices.Equal(answers, tc.wantAnswer) {
				t.Errorf("answers %q, want %q", answers, tc.wantAnswer)
			}
			if m.mode != tc.wantMode {
				t.Errorf("mode %d, want %d", m.mode, tc.wantMode)
			}
		})
	}
}
