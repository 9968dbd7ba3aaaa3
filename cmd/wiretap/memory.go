package main

import (
	"github.com/spf13/cobra"

	"github.com/wiretap-dev/wiretap/tui"
)

// memoryFlag is --memory, the TUI's memory budget (replay, and capture,
// proxy and broker when they open the TUI).
type memoryFlag struct{ size, disk string }

func (m *memoryFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&m.size, "memory", "512MiB", "TUI memory budget (KiB, MiB, GiB; 0: none): the newest units are kept in memory within half of it, the older ones frozen to temporary files and rebuilt when shown, filtered or exported")
	cmd.Flags().StringVar(&m.disk, "disk", "0", "most the TUI's temporary files may take (MiB, GiB; 0: no limit but the free space always left on their filesystem, 1 GiB or 5% of it); past it new units are counted, not kept, once --memory is spent")
}

// option returns what sets the budget in the TUI's options, or a usage
// error for a size it cannot read.
func (m *memoryFlag) option() (func(*tui.Options), error) {
	budget, err := parseSize(m.size)
	if err != nil || budget < 0 {
		return nil, usageErr("--memory %s: want a size such as 512MiB, 2GiB or 0 for no bound", m.size)
	}
	disk, err := parseSize(m.disk)
	if err != nil || disk < 0 {
		return nil, usageErr("--disk %s: want a size such as 20GiB, or 0 for the free-space reserve alone", m.disk)
	}
	return func(o *tui.Options) { o.Memory, o.Disk = budget, disk }, nil
}
