package tui

import tea "charm.land/bubbletea/v2"

// promptLine is the line typed at the foot of the screen: the filter (/),
// applied as it is typed, or the answer to a question (a what-if's
// instance families or region), applied on enter.
type promptLine struct {
	text     []rune
	question string // what the prompt asks; "" for the filter
	// apply takes the answer on enter; nil for the filter.
	apply func(answer string) tea.Cmd
}

// promptState is where an edit left the line.
type promptState int

const (
	promptEditing   promptState = iota
	promptCancelled             // esc
	promptEntered               // enter
)

// ask starts a question with value as the answer to edit.
func (p *promptLine) ask(question, value string, apply func(string) tea.Cmd) {
	p.question, p.text, p.apply = question, []rune(value), apply
}

// filter starts editing the filter, from its current value.
func (p *promptLine) filter(value string) {
	p.question, p.text, p.apply = "", []rune(value), nil
}

// onKey edits the line: backspace (ctrl+h) deletes, ctrl+u clears,
// printable keys type; esc and enter end it.
func (p *promptLine) onKey(msg tea.KeyPressMsg) promptState {
	switch msg.String() {
	case "esc":
		return promptCancelled
	case "enter":
		return promptEntered
	case "backspace", "ctrl+h":
		if len(p.text) > 0 {
			p.text = p.text[:len(p.text)-1]
		}
	case "ctrl+u":
		p.text = p.text[:0]
	default:
		if msg.Text != "" && msg.Mod&^tea.ModShift == 0 {
			p.text = append(p.text, []rune(msg.Text)...)
		} else if msg.String() == "space" {
			p.text = append(p.text, ' ')
		}
	}
	return promptEditing
}

// value is the text typed.
func (p *promptLine) value() string { return string(p.text) }

// view is the footer while the line is edited, with a block cursor.
func (p *promptLine) view() string {
	if p.question == "" {
		return "/" + p.value() + "█"
	}
	return p.question + ": " + p.value() + "█"
}

// onInputKey edits the filter or prompt line. The filter applies as it is
// typed; an answer when it is entered.
func (m *Model) onInputKey(msg tea.KeyPressMsg) tea.Cmd {
	filtering := m.mode == modeFilter
	switch m.prompt.onKey(msg) {
	case promptCancelled:
		if filtering {
			m.tables[m.view].setFilter("")
		}
		m.mode = modeNormal
		return nil
	case promptEntered:
		m.mode = modeNormal
		if !filtering && m.prompt.apply != nil {
			return m.prompt.apply(m.prompt.value())
		}
		return nil
	}
	if filtering {
		m.tables[m.view].setFilter(m.prompt.value())
	}
	return nil
}
