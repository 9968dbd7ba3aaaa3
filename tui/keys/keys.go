package keys

import "charm.land/bubbles/v2/key"

// KeyMap is every binding of the TUI.
type KeyMap struct {
	Quit, Help, NextPane, PrevPane, Maximise key.Binding

	Up, Down, PageUp, PageDown, HalfUp, HalfDown, Top, Bottom key.Binding
	Expand, Collapse, Toggle, ExpandAll                       key.Binding

	Filter, ClearFilter, Search, SearchNext, SearchPrev, Command key.Binding
	Follow, Pause, Answer, Request, Back, Mark, GotoMark         key.Binding
	Stats, SavePcapng, ExportJSON                                key.Binding

	// Broker panel (the embedded broker's sources only).
	Broker, BrokerNext, BrokerPrev, BrokerSection, BrokerLatency, BrokerJump key.Binding

	// Prompt (filter bar, command line) editing.
	Accept, Cancel, Complete key.Binding
}

// Section is a titled group of bindings for the help screen.
type Section struct {
	Title    string
	Bindings []key.Binding
}

// DefaultKeyMap returns the default bindings: vim motions, termshark and
// k9s habits ("/" filter, ":" commands, "?" help, tab between panes).
func DefaultKeyMap() *KeyMap {
	b := func(help, desc string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	return &KeyMap{
		Quit:     b("q", "quit", "q", "ctrl+c"),
		Help:     b("?", "help (this screen)", "?"),
		NextPane: b("tab", "next pane", "tab"),
		PrevPane: b("shift+tab", "previous pane", "shift+tab"),
		Maximise: b("z", "maximise / restore pane", "z"),

		Up:        b("k ↑", "up", "k", "up"),
		Down:      b("j ↓", "down", "j", "down"),
		PageUp:    b("pgup ctrl+b", "page up", "pgup", "ctrl+b"),
		PageDown:  b("pgdn ctrl+f", "page down", "pgdown", "ctrl+f"),
		HalfUp:    b("ctrl+u", "half page up", "ctrl+u"),
		HalfDown:  b("ctrl+d", "half page down", "ctrl+d"),
		Top:       b("g home", "first row", "g", "home"),
		Bottom:    b("G end", "last row (NG: go to unit N)", "G", "end"),
		Expand:    b("l →", "expand", "l", "right"),
		Collapse:  b("h ←", "collapse (or go to parent)", "h", "left"),
		Toggle:    b("enter space", "toggle / choose", "enter", "space"),
		ExpandAll: b("e", "expand / collapse all", "e"),

		Filter:      b("/", "display filter", "/"),
		ClearFilter: b("esc", "clear filter, search, selection", "esc"),
		Search:      b("s", "search text", "s"),
		SearchNext:  b("n", "next match", "n"),
		SearchPrev:  b("N", "previous match", "N"),
		Command:     b(":", "command line", ":"),

		Follow:   b("F", "follow new units (tail)", "F"),
		Pause:    b("p", "pause / resume the view", "p"),
		Answer:   b("a", "jump to the answer of a request", "a"),
		Request:  b("A", "jump to the request of an answer", "A"),
		Back:     b("ctrl+o backspace", "jump back", "ctrl+o", "backspace"),
		Mark:     b("m<letter>", "set mark", "m"),
		GotoMark: b("'<letter>", "go to mark", "'"),

		Stats:      b("S", "statistics view", "S"),
		SavePcapng: b("w", "save units to pcapng (:save)", "w"),
		ExportJSON: b("x", "export units to JSON (:export)", "x"),

		Broker:        b("b", "broker panel (b again or esc: back)", "b"),
		BrokerNext:    b("tab", "broker panel: next section", "tab"),
		BrokerPrev:    b("shift+tab", "broker panel: previous section", "shift+tab"),
		BrokerSection: b("1-9 0", "broker panel: section (0: route explain)", "1", "2", "3", "4", "5", "6", "7", "8", "9", "0"),
		BrokerLatency: b("L", "broker panel: latency histograms", "L"),
		BrokerJump:    b("enter", "broker panel: show the units of a connection, queue or exchange", "enter"),

		Accept:   b("enter", "apply", "enter"),
		Cancel:   b("esc", "cancel", "esc"),
		Complete: b("tab", "complete field name", "tab"),
	}
}

// Sections groups the bindings for the help screen.
func (k *KeyMap) Sections() []Section {
	return []Section{
		{"General", []key.Binding{k.Help, k.Quit, k.NextPane, k.PrevPane, k.Maximise, k.Stats}},
		{"Motion", []key.Binding{k.Up, k.Down, k.HalfDown, k.HalfUp, k.PageDown, k.PageUp, k.Top, k.Bottom}},
		{"Tree and groups", []key.Binding{k.Expand, k.Collapse, k.Toggle, k.ExpandAll}},
		{"Filter and search", []key.Binding{k.Filter, k.Search, k.SearchNext, k.SearchPrev, k.ClearFilter, k.Complete}},
		{"Navigation", []key.Binding{k.Follow, k.Pause, k.Answer, k.Request, k.Back, k.Mark, k.GotoMark}},
		{"Commands and export", []key.Binding{k.Command, k.SavePcapng, k.ExportJSON}},
		{"Broker panel", []key.Binding{k.Broker, k.BrokerNext, k.BrokerPrev, k.BrokerSection, k.BrokerLatency, k.BrokerJump}},
	}
}
