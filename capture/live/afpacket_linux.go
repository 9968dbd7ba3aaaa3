//go:build linux

package live

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/wiretap-dev/wiretap/capture"
	"golang.org/x/net/bpf"
)

// runAFPacket captures with gopacket's pure-Go AF_PACKET handle.
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
	eh, err := pcapgo.NewEthernetHandle(cfg.Interface)
	if err != nil {
		return nil, fmt.Errorf("capture: %s: %w", cfg.Interface, err)
	}
	if ifi, err := net.InterfaceByName(cfg.Interface); err == nil && ifi.Flags&net.FlagLoopback != 0 {
		// A packet socket sees each loopback packet twice, going out and
		// coming in; keep one, as libpcap does.
		if prog, err = dropOutgoing(prog, snaplen(cfg)); err != nil {
			eh.Close()
			return nil, fmt.Errorf("capture: %s: %w", cfg.Interface, err)
		}
	}
	if err := eh.SetCaptureLength(snaplen(cfg)); err != nil {
		eh.Close()
		return nil, fmt.Errorf("capture: %s: %w", cfg.Interface, err)
	}
	if prog != nil {
		if err := eh.SetBPF(prog); err != nil {
			eh.Close()
			return nil, fmt.Errorf("capture: %s: setting the filter: %w", cfg.Interface, err)
		}
	}
	stop := context.AfterFunc(ctx, func() { eh.Close() })
	defer stop()
	if cfg.Ready != nil {
		cfg.Ready()
	}
	stats := new(capture.Stats)
	asm := capture.NewAssembler(h, opt, stats)
	var p capture.Packet
	for {
		data, ci, err := eh.ZeroCopyReadPacketData()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, os.ErrClosed) {
				stats.Warnings = append(stats.Warnings, "capture: "+cfg.Interface+": "+err.Error())
			}
			break
		}
		p = capture.Packet{Link: layers.LinkTypeEthernet, Time: ci.Timestamp, Data: data, Length: ci.Length}
		if opt.Tap != nil {
			opt.Tap(&p)
		}
		asm.Packet(&p)
	}
	eh.Close()
	asm.Flush()
	return stats, nil
}
