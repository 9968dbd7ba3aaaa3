package tui

import (
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// FaultControl is the proxy's fault-injection rules as the :fault command
// sees them (see capture/proxy's FaultSet); nil for other sources.
type FaultControl interface {
	// List returns one line per rule: number, on or off, the rule, how
	// many faults it injected.
	List() []string
	// Set turns rule n (from 1) on or off and returns its line.
	Set(n int, on bool) (string, error)
	// Add parses a rule, adds it (on) and returns its line.
	Add(rule string) (string, error)
}

// fault runs ":fault", ":fault on N", ":fault off N", ":fault add RULE".
func (m *Model) fault(arg string) tea.Cmd {
	fc := m.opt.Faults
	if fc == nil {
		m.setStatus("fault: fault injection is for the proxy (wiretap proxy --fault RULE)", true)
		return nil
	}
	verb, rest, _ := strings.Cut(strings.TrimSpace(arg), " ")
	rest = strings.TrimSpace(rest)
	switch verb {
	case "", "list":
		rules := fc.List()
		if len(rules) == 0 {
			m.setStatus("fault: no rules (:fault add RULE, e.g. :fault add delay 50ms)", false)
			return nil
		}
		m.setStatus("faults: "+strings.Join(rules, " · "), false)
	case "on", "off":
		n, err := strconv.Atoi(strings.TrimPrefix(rest, "#"))
		if err != nil {
			m.setStatus("fault "+verb+": want a rule number (:fault lists them)", true)
			return nil
		}
		line, err := fc.Set(n, verb == "on")
		if err != nil {
			m.setStatus(err.Error(), true)
			return nil
		}
		m.setStatus("fault "+line, false)
	case "add":
		if rest == "" {
			m.setStatus("fault add: want a rule, e.g. :fault add drop when amqp.method == \"basic.ack\"", true)
			return nil
		}
		line, err := fc.Add(rest)
		if err != nil {
			m.setStatus(err.Error(), true)
			return nil
		}
		m.setStatus("fault added: "+line, false)
	default:
		m.setStatus("fault: want :fault, :fault on N, :fault off N or :fault add RULE", true)
	}
	return nil
}
