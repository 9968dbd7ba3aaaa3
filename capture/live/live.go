package live

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"golang.org/x/net/bpf"
)

// Engines.
const (
	EngineAuto     = ""         // dumpcap when installed, else afpacket
	EngineDumpcap  = "dumpcap"  // run Wireshark's dumpcap
	EngineAFPacket = "afpacket" // a pure-Go AF_PACKET socket
)

// DefaultIdleTimeout closes connections silent for this long, when
// Options.IdleTimeout is zero.
const DefaultIdleTimeout = 10 * time.Minute

// Config says what to capture.
type Config struct {
	// Interface is the interface name, or "any" (dumpcap only).
	Interface string
	// Filter is a capture filter in libpcap's language ("tcp port 5672").
	Filter string
	// Engine is EngineAuto, EngineDumpcap or EngineAFPacket.
	Engine string
	// Snaplen is the most bytes kept per packet (default 262144).
	Snaplen int
	// Options tune reassembly; Options.Tap sees every packet (for -w).
	// IdleTimeout defaults to DefaultIdleTimeout.
	Options *capture.Options
	// Ready, when set, is called once the capture has started.
	Ready func()
	// Buffer is the capture buffer in bytes (dumpcap's -B, in whole MiB
	// there; the packet socket's SO_RCVBUF for afpacket); 0 leaves each
	// engine's default (2 MiB for dumpcap, the system's for afpacket).
	// A larger buffer is what keeps a burst from being dropped while the
	// decoders catch up.
	Buffer int
	// Dropped, when set, holds the packets the kernel dropped so far,
	// updated about once a second while the capture runs (afpacket; dumpcap
	// says its drops only as it ends, in Stats.Dropped).
	Dropped *atomic.Int64
}

// Capture captures iface with filter until ctx is done and feeds h; it is
// Run with a Config of its arguments.
func Capture(ctx context.Context, iface, filter string, h capture.Handler, opt *capture.Options) (*capture.Stats, error) {
	return Run(ctx, &Config{Interface: iface, Filter: filter, Options: opt}, h)
}

// Run captures until ctx is done or the engine stops, then flushes
// reassembly. It returns an error, with the engine's own words, when the
// capture cannot start (no such interface, no permission, a bad filter).
func Run(ctx context.Context, cfg *Config, h capture.Handler) (*capture.Stats, error) {
	if cfg.Interface == "" {
		return nil, errors.New("capture: no interface given")
	}
	opt := capture.Options{}
	if cfg.Options != nil {
		opt = *cfg.Options
	}
	if opt.IdleTimeout == 0 {
		opt.IdleTimeout = DefaultIdleTimeout
	}
	engine := cfg.Engine
	if engine == EngineAuto {
		engine = EngineAFPacket
		if _, err := exec.LookPath("dumpcap"); err == nil {
			engine = EngineDumpcap
		}
	}
	var run func(context.Context, *Config, *capture.Options, capture.Handler) (*capture.Stats, error)
	switch engine {
	case EngineDumpcap:
		run = runDumpcap
	case EngineAFPacket:
		run = runAFPacket
	default:
		return nil, fmt.Errorf("capture: unknown engine %q (want %q or %q)", cfg.Engine, EngineDumpcap, EngineAFPacket)
	}
	stats, err := run(ctx, cfg, &opt, h)
	if stats != nil && cfg.Dropped != nil {
		// The final count, whichever engine counted it.
		cfg.Dropped.Store(stats.Dropped)
	}
	return stats, err
}

// DroppedWarning says that the kernel dropped n packets on iface: the
// warning an AF_PACKET capture ends with, and what a TUI shows meanwhile.
func DroppedWarning(iface string, n int64) string {
	return "capture: " + iface + ": the kernel dropped " + strconv.FormatInt(n, 10) +
		" packets that wiretap did not read in time (a larger --buffer-size helps with bursts); the connections they belonged to have gaps"
}

func snaplen(cfg *Config) int {
	if cfg.Snaplen > 0 {
		return cfg.Snaplen
	}
	return 262144
}

// runDumpcap reads the pcapng dumpcap writes to its standard output.
func runDumpcap(ctx context.Context, cfg *Config, opt *capture.Options, h capture.Handler) (*capture.Stats, error) {
	args := []string{"-q", "-i", cfg.Interface, "-s", strconv.Itoa(snaplen(cfg)), "-w", "-"}
	if cfg.Buffer > 0 {
		args = append(args, "-B", strconv.Itoa(max(1, (cfg.Buffer+(1<<20)-1)>>20)))
	}
	if cfg.Filter != "" {
		args = append(args, "-f", cfg.Filter)
	}
	cmd := exec.CommandContext(ctx, "dumpcap", args...)
	// Stop dumpcap as a user would, so it ends its file cleanly.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("capture: dumpcap: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("capture: starting dumpcap: %w", err)
	}
	br := bufio.NewReaderSize(out, 1<<16)
	// dumpcap writes the section header once the capture runs; nothing
	// means it could not start.
	if _, err := br.Peek(4); err != nil {
		cmd.Wait()
		return nil, fmt.Errorf("capture: %s: %s", cfg.Interface, dumpcapError(stderr.String()))
	}
	if cfg.Ready != nil {
		cfg.Ready()
	}
	stats, rerr := capture.Read(br, "dumpcap -i "+cfg.Interface, h, opt)
	io.Copy(io.Discard, out)
	werr := cmd.Wait()
	if rerr != nil {
		return nil, rerr
	}
	if werr != nil && ctx.Err() == nil {
		stats.Warnings = append(stats.Warnings, "capture: dumpcap stopped: "+dumpcapError(stderr.String()))
	}
	return stats, nil
}

// dumpcapError picks dumpcap's complaint out of what it printed.
func dumpcapError(stderr string) string {
	var lines []string
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "Capturing on") || strings.HasPrefix(l, "File:") ||
			strings.HasPrefix(l, "Running as user") {
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return "dumpcap ended without capturing"
	}
	return strings.Join(lines, " ")
}

// dropOutgoing prefixes prog (nil: accept all) with a test of the packet
// type that drops outgoing packets (PACKET_OUTGOING, 4, in linux/if_packet.h).
func dropOutgoing(prog []bpf.RawInstruction, snaplen int) ([]bpf.RawInstruction, error) {
	head, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadExtension{Num: bpf.ExtType},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 4, SkipTrue: 0, SkipFalse: 1},
		bpf.RetConstant{Val: 0},
	})
	if err != nil {
		return nil, err
	}
	if prog == nil {
		prog = []bpf.RawInstruction{{Op: 0x06, K: uint32(snaplen)}} // ret #snaplen
	}
	return append(head, prog...), nil
}

// compileFilter compiles a libpcap filter for Ethernet to classic BPF with
// `tcpdump -dd`, whose output is one instruction per line as
// "{ code, jt, jf, k },".
func compileFilter(ctx context.Context, filter string, snaplen int) ([]bpf.RawInstruction, error) {
	path, err := exec.LookPath("tcpdump")
	if err != nil {
		return nil, errors.New("capture: a filter needs dumpcap or tcpdump to compile it; install one, or capture without -f")
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "-y", "EN10MB", "-s", strconv.Itoa(snaplen), "-dd", filter)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("capture: filter %q: %s", filter, strings.TrimSpace(stderr.String()))
	}
	return parseDD(out)
}

// parseDD parses `tcpdump -dd` output.
func parseDD(out []byte) ([]bpf.RawInstruction, error) {
	var prog []bpf.RawInstruction
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, ","), "}")
		line = strings.TrimPrefix(line, "{")
		f := strings.Split(line, ",")
		if len(f) != 4 {
			return nil, fmt.Errorf("capture: unexpected tcpdump -dd line %q", line)
		}
		var v [4]uint64
		for i := range f {
			n, err := strconv.ParseUint(strings.TrimSpace(f[i]), 0, 32)
			if err != nil {
				return nil, fmt.Errorf("capture: unexpected tcpdump -dd line %q", line)
			}
			v[i] = n
		}
		prog = append(prog, bpf.RawInstruction{Op: uint16(v[0]), Jt: uint8(v[1]), Jf: uint8(v[2]), K: uint32(v[3])})
	}
	if len(prog) == 0 {
		return nil, errors.New("capture: tcpdump -dd printed no program")
	}
	return prog, nil
}
