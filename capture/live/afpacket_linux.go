//go:build linux

package live

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"golang.org/x/net/bpf"
)

// runAFPacket captures with a packet socket of its own (packetSocket).
func runAFPacket(ctx context.Context, cfg *Config, opt *capture.Options, h capture.Handler) (*capture.Stats, error) {
	if cfg.Interface == "any" {
		return nil, errors.New(`capture: the "any" interface needs dumpcap (install Wireshark's dumpcap, Debian package wireshark-common)`)
	}
	var prog []bpf.RawInstruction
	if cfg.Filter != "" {
		var err error
		if prog, err = compileFilter(ctx, cfg.Filter, snaplen(cfg)); err != nil {
			return nil, err
		}
	}
	ifi, err := net.InterfaceByName(cfg.Interface)
	if err != nil {
		return nil, fmt.Errorf("capture: %s: %w", cfg.Interface, err)
	}
	if ifi.Flags&net.FlagLoopback != 0 {
		// A packet socket sees each loopback packet twice, going out and
		// coming in; keep one, as libpcap does.
		if prog, err = dropOutgoing(prog, snaplen(cfg)); err != nil {
			return nil, fmt.Errorf("capture: %s: %w", cfg.Interface, err)
		}
	}
	sock, err := openPacketSocket(ifi.Index, snaplen(cfg), cfg.Buffer, prog)
	if err != nil {
		return nil, fmt.Errorf("capture: %s: %w", cfg.Interface, err)
	}
	stop := context.AfterFunc(ctx, func() { sock.Close() })
	defer stop()
	if cfg.Dropped != nil {
		// The kernel's counters, read once a second: what the TUI shows
		// while the capture runs.
		done := make(chan struct{})
		defer close(done)
		go func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					if !sock.closed.Load() {
						sock.collect()
					}
					cfg.Dropped.Store(sock.dropped())
				}
			}
		}()
	}
	if cfg.Ready != nil {
		cfg.Ready()
	}
	stats := new(capture.Stats)
	asm := capture.NewAssembler(h, opt, stats)
	var p capture.Packet
	for {
		data, length, t, err := sock.read()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, os.ErrClosed) {
				stats.Warnings = append(stats.Warnings, "capture: "+cfg.Interface+": "+err.Error())
			}
			break
		}
		p = capture.Packet{Link: capture.LinkTypeEthernet, Time: t, Data: data, Length: length}
		if opt.Tap != nil {
			opt.Tap(&p)
		}
		asm.Packet(&p)
	}
	sock.Close()
	asm.Flush()
	if stats.Dropped = sock.dropped(); stats.Dropped > 0 {
		stats.Warnings = append(stats.Warnings, DroppedWarning(cfg.Interface, stats.Dropped))
	}
	return stats, nil
}
