package styles

import "charm.land/lipgloss/v2"

// Symbols are the glyphs that say what colour also says.
type Symbols struct {
	ChecksumOK, ChecksumMismatch, ChecksumAbsent string
	Warning, Error                               string
	Collapsed, Expanded, Leaf                    string
	Nested                                       string // prefix of a B* row
	Follow, Paused                               string
	Bars                                         []string // chart levels, lowest first
}

// Styles is the TUI's theme.
type Styles struct {
	Sym Symbols

	Title, TitleInfo, Status, StatusErr lipgloss.Style
	Border, BorderFocused, PaneTitle    lipgloss.Style
	PaneTitleFocused                    lipgloss.Style
	Header                              lipgloss.Style
	Selected, SelectedBlur              lipgloss.Style
	Dim, Number, Time                   lipgloss.Style
	DirF, DirB, Nested, Type            lipgloss.Style
	ChecksumOK, ChecksumMismatch        lipgloss.Style
	ChecksumAbsent                      lipgloss.Style
	Warning, Error, Mark                lipgloss.Style
	FieldKey, FieldValue, FieldEnc      lipgloss.Style
	HexOffset, HexByte, HexHighlight    lipgloss.Style
	Prompt, Input, InputErr, ErrColumn  lipgloss.Style
	Completion, CompletionSel           lipgloss.Style
	HelpKey, HelpDesc, HelpSection      lipgloss.Style
	Bar, Axis                           lipgloss.Style
}

// DefaultStyles returns the default theme: ANSI 16-colour based, so it
// follows the terminal's palette, and degrading to attributes plus symbols
// where colour is absent.
func DefaultStyles() *Styles {
	c := lipgloss.Color
	n := lipgloss.NewStyle
	return &Styles{
		Sym: Symbols{
			ChecksumOK: "✓", ChecksumMismatch: "✗", ChecksumAbsent: "-",
			Warning: "!", Error: "E",
			Collapsed: "▸", Expanded: "▾", Leaf: " ",
			Nested: "└", Follow: "▶ follow", Paused: "⏸ paused",
			Bars: []string{" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"},
		},
		Title:            n().Bold(true).Foreground(c("15")).Background(c("4")),
		TitleInfo:        n().Foreground(c("15")).Background(c("4")),
		Status:           n().Foreground(c("7")),
		StatusErr:        n().Bold(true).Foreground(c("9")),
		Border:           n().Foreground(c("8")),
		BorderFocused:    n().Foreground(c("12")),
		PaneTitle:        n().Foreground(c("7")),
		PaneTitleFocused: n().Bold(true).Foreground(c("12")),
		Header:           n().Bold(true).Underline(true),
		Selected:         n().Reverse(true),
		SelectedBlur:     n().Underline(true),
		Dim:              n().Foreground(c("8")),
		Number:           n().Foreground(c("7")),
		Time:             n().Foreground(c("8")),
		DirF:             n().Foreground(c("6")),
		DirB:             n().Foreground(c("5")),
		Nested:           n().Foreground(c("8")),
		Type:             n().Bold(true),
		ChecksumOK:       n().Foreground(c("2")),
		ChecksumMismatch: n().Bold(true).Foreground(c("9")),
		ChecksumAbsent:   n().Foreground(c("8")),
		Warning:          n().Bold(true).Foreground(c("11")),
		Error:            n().Bold(true).Foreground(c("9")),
		Mark:             n().Bold(true).Foreground(c("13")),
		FieldKey:         n().Foreground(c("14")),
		FieldValue:       n(),
		FieldEnc:         n().Foreground(c("8")).Italic(true),
		HexOffset:        n().Foreground(c("8")),
		HexByte:          n(),
		HexHighlight:     n().Reverse(true).Bold(true),
		Prompt:           n().Bold(true).Foreground(c("12")),
		Input:            n(),
		InputErr:         n().Foreground(c("9")),
		ErrColumn:        n().Underline(true).Bold(true).Foreground(c("9")),
		Completion:       n().Foreground(c("7")),
		CompletionSel:    n().Reverse(true),
		HelpKey:          n().Bold(true).Foreground(c("14")),
		HelpDesc:         n(),
		HelpSection:      n().Bold(true).Underline(true),
		Bar:              n().Foreground(c("12")),
		Axis:             n().Foreground(c("8")),
	}
}
