package main

import (
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/output"
)

// decodeFlags are the flags shared by read, capture --headless, proxy
// --headless and broker --headless (INTERFACES.md).
type decodeFlags struct {
	format      string
	raw         bool
	filter      string
	conn        int
	decodeAs    []string
	showSecrets bool
	timestamps  bool
	libpq15     bool

	maxFrame        int
	maxBuffered     int
	maxMessage      int
	maxDecompressed int
	// maxMemory is --max-memory as given (512MiB, 64KiB, 0: no budget).
	maxMemory string
	// maxRender elides the JSON fields of units longer than it.
	maxRender int

	// changed says whether a flag was given (the flag set's Changed).
	changed func(name string) bool

	// stage, when set, sits between the pipeline and the sink (the
	// broker's route annotator); see unitstage.go.
	stage func(next func(*decode.Unit)) unitStage
}

func (f *decodeFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.format, "format", "text", "output format: text, json or pqtrace")
	fs.BoolVar(&f.raw, "raw", false, "add each unit's exact bytes (lowercase hex) to JSON")
	fs.StringVar(&f.filter, "filter", "", "display filter, e.g. 'amqp.method == \"basic.publish\"'")
	fs.BoolVar(&f.showSecrets, "show-secrets", false, "show passwords and SASL exchanges instead of redacting them")
	fs.BoolVar(&f.timestamps, "timestamps", false, "pqtrace: add libpq's timestamp column")
	fs.BoolVar(&f.libpq15, "libpq15", false, "pqtrace: reproduce libpq 15's known mistakes (CopyData lines) byte for byte")
	fs.IntVar(&f.maxRender, "max-render", output.DefaultMaxFieldBytes, "JSON: units longer than this many bytes are printed without their fields (fields_elided says so); -1: no limit")
	f.registerInput(cmd)
}

// registerInput registers the flags that choose and bound what is decoded,
// without those of the output: all that compress-sim, which prints its own
// table, takes.
func (f *decodeFlags) registerInput(cmd *cobra.Command) {
	fs := cmd.Flags()
	f.changed = fs.Changed
	if f.format == "" {
		f.format = "text"
	}
	if f.maxRender == 0 {
		f.maxRender = output.DefaultMaxFieldBytes
	}
	fs.IntVar(&f.conn, "conn", 0, "only connection `N` (numbered from 1 in order of first packet)")
	fs.StringArrayVar(&f.decodeAs, "decode-as", nil, "decode `PORT=PROTO` (amqp0-9-1, amqp1.0, pgsql); repeatable")
	fs.IntVar(&f.maxFrame, "max-frame", decode.DefaultMaxFrame, "largest frame or message accepted, in bytes")
	fs.IntVar(&f.maxBuffered, "max-buffered", decode.DefaultMaxBuffered, "bytes buffered per direction while waiting for a unit")
	fs.IntVar(&f.maxMessage, "max-message", decode.DefaultMaxMessage, "largest reassembled message kept, in bytes")
	fs.IntVar(&f.maxDecompressed, "max-decompressed", decode.DefaultMaxDecompressed, "bytes one compressed PostgreSQL container may inflate to")
	fs.StringVar(&f.maxMemory, "max-memory", decode.FormatSize(decode.DefaultMaxMemory), "memory budget for all decoders' buffered state (`SIZE`: bytes, KiB, MiB or GiB; 0: none); each connection may hold a quarter")
}

func (f *decodeFlags) options() *decode.Options {
	o := decode.DefaultOptions()
	o.ShowSecrets = f.showSecrets
	o.MaxFrame = f.maxFrame
	o.MaxBuffered = f.maxBuffered
	o.MaxMessage = f.maxMessage
	o.MaxDecompressed = f.maxDecompressed
	if n, err := decode.ParseSize(f.maxMemory); err == nil && n > 0 {
		o.Budget = decode.NewBudget(n) // one per pipeline: options is called once for each
	}
	return o
}

func (f *decodeFlags) check() error {
	switch f.format {
	case "text", "json", "pqtrace":
	default:
		return usageErr("--format %q: want text, json or pqtrace", f.format)
	}
	if f.conn < 0 || f.conn == 0 && f.changed != nil && f.changed("conn") {
		return usageErr("--conn %d: connections are numbered from 1 (leave --conn out for all of them)", f.conn)
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"--max-frame", f.maxFrame}, {"--max-buffered", f.maxBuffered}, {"--max-message", f.maxMessage}, {"--max-decompressed", f.maxDecompressed}} {
		if n.v <= 0 {
			return usageErr("%s %d: must be positive", n.name, n.v)
		}
	}
	if f.maxMemory != "" {
		if _, err := decode.ParseSize(f.maxMemory); err != nil {
			return usageErr("--max-memory %q: want a size such as 512MiB, 64KiB or 2GiB (0: no budget)", f.maxMemory)
		}
	}
	if f.maxRender == 0 || f.maxRender < -1 {
		return usageErr("--max-render %d: must be positive, or -1 for no limit", f.maxRender)
	}
	_, err := f.decodeAsMap()
	return err
}

func (f *decodeFlags) decodeAsMap() (map[uint16]decode.Proto, error) {
	if len(f.decodeAs) == 0 {
		return nil, nil
	}
	m := make(map[uint16]decode.Proto, len(f.decodeAs))
	for _, s := range f.decodeAs {
		port, proto, ok := strings.Cut(s, "=")
		if !ok {
			return nil, usageErr("--decode-as %q: want PORT=PROTO", s)
		}
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return nil, usageErr("--decode-as %q: bad port %q", s, port)
		}
		p, ok := decode.ParseProto(proto)
		if !ok {
			return nil, usageErr("--decode-as %q: unknown protocol %q (want amqp0-9-1, amqp1.0 or pgsql)", s, proto)
		}
		m[uint16(n)] = p
	}
	return m, nil
}
