package tui

import (
	"charm.land/bubbles/v2/key"
	"charm.land/lipgloss/v2"
)

// keyMap is every key the program answers to; the help overlay lists them
// from here, so that the two cannot disagree.
type keyMap struct {
	Up, Down, Top, Bottom, PageUp, PageDown key.Binding
	Next, Prev, View1, View2, View3, View4  key.Binding
	Filter, Enter, Back, Help, Quit         key.Binding
	Sort, Reverse                           key.Binding
	Select, SelectAll, Launch               key.Binding
	Spot, Families, Region, Reset           key.Binding
}

func newKeyMap(readOnly bool) keyMap {
	k := keyMap{
		Up:        key.NewBinding(key.WithKeys("k", "up"), key.WithHelp("k/↑", "up")),
		Down:      key.NewBinding(key.WithKeys("j", "down"), key.WithHelp("j/↓", "down")),
		Top:       key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g", "first row")),
		Bottom:    key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "last row")),
		PageUp:    key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup/ctrl+b", "page up")),
		PageDown:  key.NewBinding(key.WithKeys("pgdown", "ctrl+f"), key.WithHelp("pgdn/ctrl+f", "page down")),
		Next:      key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next view")),
		Prev:      key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous view")),
		View1:     key.NewBinding(key.WithKeys("1"), key.WithHelp("1", "pending pods")),
		View2:     key.NewBinding(key.WithKeys("2"), key.WithHelp("2", "proposed nodes")),
		View3:     key.NewBinding(key.WithKeys("3"), key.WithHelp("3", "nodes")),
		View4:     key.NewBinding(key.WithKeys("4"), key.WithHelp("4", "consolidation")),
		Filter:    key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter rows")),
		Enter:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "details")),
		Back:      key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back, clear filter")),
		Help:      key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "this help")),
		Quit:      key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q/ctrl+c", "quit")),
		Sort:      key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort by the next column")),
		Reverse:   key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "reverse the sort")),
		Select:    key.NewBinding(key.WithKeys("space"), key.WithHelp("space", "select a proposed node")),
		SelectAll: key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "select all / none")),
		Launch:    key.NewBinding(key.WithKeys("L"), key.WithHelp("L", "launch selected (asks)")),
		Spot:      key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "spot on/off/as pools say")),
		Families:  key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "instance families")),
		Region:    key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "region")),
		Reset:     key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "reset what-if")),
	}
	if readOnly {
		k.Select.SetEnabled(false)
		k.SelectAll.SetEnabled(false)
		k.Launch.SetEnabled(false)
	}
	return k
}

// helpGroup is a titled list of bindings.
type helpGroup struct {
	title    string
	bindings []key.Binding
}

// helpGroups lists the bindings by topic for the help overlay.
func (k keyMap) helpGroups() []helpGroup {
	return []helpGroup{
		{"Move", []key.Binding{k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown}},
		{"Views", []key.Binding{k.View1, k.View2, k.View3, k.View4, k.Next, k.Prev}},
		{"Rows", []key.Binding{k.Filter, k.Enter, k.Back, k.Sort, k.Reverse}},
		{"Launch", []key.Binding{k.Select, k.SelectAll, k.Launch}},
		{"What-if", []key.Binding{k.Spot, k.Families, k.Region, k.Reset}},
		{"Program", []key.Binding{k.Help, k.Quit}},
	}
}

// styles are the program's looks; with NO_COLOR only bold and reverse remain.
type styles struct {
	title, header, cursor, tab, tabActive, dim, warn, err, ok, box lipgloss.Style
}

func newStyles(noColor bool) styles {
	s := styles{
		title:     lipgloss.NewStyle().Bold(true),
		header:    lipgloss.NewStyle().Bold(true),
		cursor:    lipgloss.NewStyle().Reverse(true),
		tab:       lipgloss.NewStyle(),
		tabActive: lipgloss.NewStyle().Bold(true).Reverse(true),
		dim:       lipgloss.NewStyle(),
		warn:      lipgloss.NewStyle().Bold(true),
		err:       lipgloss.NewStyle().Bold(true),
		ok:        lipgloss.NewStyle(),
		box:       lipgloss.NewStyle().Border(lipgloss.NormalBorder()).Padding(0, 1),
	}
	if noColor {
		return s
	}
	s.title = s.title.Foreground(lipgloss.Color("12"))
	s.header = s.header.Foreground(lipgloss.Color("14"))
	s.tabActive = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("0")).Background(lipgloss.Color("14"))
	s.dim = s.dim.Foreground(lipgloss.Color("8"))
	s.warn = s.warn.Foreground(lipgloss.Color("11"))
	s.err = s.err.Foreground(lipgloss.Color("9"))
	s.ok = s.ok.Foreground(lipgloss.Color("10"))
	s.box = s.box.BorderForeground(lipgloss.Color("11"))
	return s
}
