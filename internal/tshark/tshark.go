package tshark

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
)

// Dir is the direction of a frame, in wiretap's letters.
type Dir byte

const (
	// FromClient is client to server ("F", frontend).
	FromClient Dir = 'F'
	// FromServer is server to client ("B", backend).
	FromServer Dir = 'B'
)

func (d Dir) String() string { return string(d) }

// Protocol names, as wiretap's JSON "proto" key spells them.
const (
	AMQP091 = "amqp0-9-1"
	AMQP10  = "amqp1.0"
	PGSQL   = "pgsql"
)

// Frame is one protocol frame or message as tshark dissected it.
type Frame struct {
	// Packet is the frame.number of the packet whose dissection reported
	// the frame: the packet that completed it.
	Packet int
	// Stream is tshark's tcp.stream index (from 0, in order of first packet).
	Stream int
	Dir    Dir
	Proto  string
	// Channel is the AMQP channel; 0 for PostgreSQL.
	Channel int
	// Type is the frame's name in wiretap's words: "basic.publish",
	// "content-header", "heartbeat", "protocol-header", "transfer",
	// "sasl.init", "empty", "RowDescription". Names tshark gives that this
	// package cannot map come out in brackets, or as "unknown-...".
	Type string
	// Len is the frame's size on the wire, headers included, when tshark
	// reports it (AMQP); 0 otherwise.
	Len int
	// Inferred is set when tshark recognised the bytes as the protocol but
	// dissected no fields, and the frame was inferred (see the package
	// documentation).
	Inferred bool
}

func (f Frame) String() string {
	s := fmt.Sprintf("#%d stream %d %c %s ch%d %s", f.Packet, f.Stream, f.Dir, f.Proto, f.Channel, f.Type)
	if f.Inferred {
		s += " (inferred)"
	}
	return s
}

// Options tune how tshark is run and how its output is read.
type Options struct {
	// Path is the tshark binary; empty means "tshark" from $PATH.
	Path string
	// DecodeAs holds extra tshark -d arguments, such as
	// "tcp.port==5673,amqp", for servers on other ports.
	DecodeAs []string
	// ServerPorts tell client from server in a stream that began before the
	// capture (no SYN seen). Nil means 5672, 5671 and 5432.
	ServerPorts []int
}

// fields are the tshark fields asked for, in the column order Parse reads.
var fields = []string{
	"frame.number",
	"_ws.col.Protocol",
	"tcp.stream",
	"ip.src",
	"ipv6.src",
	"ip.dst",
	"ipv6.dst",
	"tcp.srcport",
	"tcp.dstport",
	"tcp.flags.syn",
	"tcp.flags.ack",
	"tcp.len",
	"amqp.init.protocol",
	"amqp.init.id",
	"amqp.init.version_major",
	"amqp.type",
	"amqp.channel",
	"amqp.method.class",
	"amqp.method.method",
	"amqp.length",
	"amqp.doff",
	"amqp.performative",
	"amqp.sasl.method",
	"pgsql.type",
	"pgsql.frontend",
	"pgsql.authtype",
}

const (
	colNumber = iota
	colProtocolColumn
	colStream
	colIPSrc
	colIPv6Src
	colIPDst
	colIPv6Dst
	colSrcPort
	colDstPort
	colSYN
	colACK
	colTCPLen
	colInitProtocol
	colInitID
	colInitVersionMajor
	colAMQPType
	colChannel
	colMethodClass
	colMethodMethod
	colAMQPLength
	colDoff
	colPerformative
	colSASLMethod
	colPGType
	colPGFrontend
	colPGAuthType
	numCols
)

// aggregator joins the occurrences of one field within a packet. None of
// the string fields read (amqp.init.protocol, pgsql.type) can contain it.
const aggregator = "|"

// Args returns tshark's command line (without the program name) for file.
func Args(file string, opts *Options) []string {
	args := []string{"-r", file, "-n", "-T", "fields",
		"-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=" + aggregator,
		// Reassemble frames that span TCP segments (the default, made explicit).
		"-o", "tcp.desegment_tcp_streams:TRUE"}
	if opts != nil {
		for _, d := range opts.DecodeAs {
			args = append(args, "-d", d)
		}
	}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	return args
}

// ErrNotInstalled is returned by [Lookup] and [Run] when tshark cannot be found.
var ErrNotInstalled = errors.New("tshark: not installed")

// Lookup returns the path of the tshark binary opts asks for.
func Lookup(opts *Options) (string, error) {
	name := "tshark"
	if opts != nil && opts.Path != "" {
		name = opts.Path
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNotInstalled, err)
	}
	return p, nil
}

// Run runs tshark on file and returns the frames it dissected, in packet
// order (frames of one packet in wire order).
func Run(ctx context.Context, file string, opts *Options) ([]Frame, error) {
	path, err := Lookup(opts)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, path, Args(file, opts)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("tshark: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("tshark: %w", err)
	}
	frames, perr := Parse(out, opts)
	// Drain what Parse left so tshark is not blocked writing.
	_, _ = io.Copy(io.Discard, out)
	werr := cmd.Wait()
	if werr != nil {
		// tshark exits 2 on a file cut short, after printing every packet
		// it could read: keep them, and say why it stopped.
		return frames, fmt.Errorf("tshark -r %s: %w: %s", file, werr, firstLine(stderr.String()))
	}
	return frames, perr
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		// tshark warns about running as root before anything useful.
		if l != "" && !strings.HasPrefix(l, "Running as user") {
			return l
		}
	}
	return ""
}

// Parse reads tshark output made with [Args] and returns the frames.
func Parse(r io.Reader, opts *Options) ([]Frame, error) {
	p := parser{opts: opts, clients: map[int]string{}, protos: map[int]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) != numCols {
			return p.frames, fmt.Errorf("tshark: line %d: %d columns, want %d", line, len(cols), numCols)
		}
		if err := p.packet(cols); err != nil {
			return p.frames, fmt.Errorf("tshark: line %d (packet %s): %w", line, cols[colNumber], err)
		}
	}
	if err := sc.Err(); err != nil {
		return p.frames, fmt.Errorf("tshark: reading output: %w", err)
	}
	return p.frames, nil
}

type parser struct {
	opts    *Options
	clients map[int]string // stream -> client "addr:port"
	protos  map[int]string // stream -> protocol seen in its protocol header
	frames  []Frame
}

func (p *parser) serverPort(port int) bool {
	ports := []int{5672, 5671, 5432}
	if p.opts != nil && p.opts.ServerPorts != nil {
		ports = p.opts.ServerPorts
	}
	for _, sp := range ports {
		if sp == port {
			return true
		}
	}
	return false
}

// list splits one column into its occurrences.
func list(col string) []string {
	if col == "" {
		return nil
	}
	return strings.Split(col, aggregator)
}

func num(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("not a number: %q", s)
	}
	return n, nil
}

// direction returns the packet's direction, learning the stream's client
// from a SYN, then from well-known server ports, then from pgsql.frontend,
// and last from who spoke first.
func (p *parser) direction(stream int, cols []string) (Dir, error) {
	src := cols[colIPSrc] + cols[colIPv6Src] + ":" + cols[colSrcPort]
	client, ok := p.clients[stream]
	if !ok {
		dst := cols[colIPDst] + cols[colIPv6Dst] + ":" + cols[colDstPort]
		sport, err := num(cols[colSrcPort])
		if err != nil {
			return 0, err
		}
		dport, err := num(cols[colDstPort])
		if err != nil {
			return 0, err
		}
		switch {
		case cols[colSYN] == "1" && cols[colACK] == "0":
			client = src
		case cols[colSYN] == "1": // SYN-ACK goes to the client
			client = dst
		case p.serverPort(dport):
			client = src
		case p.serverPort(sport):
			client = dst
		case cols[colPGFrontend] != "" && list(cols[colPGFrontend])[0] == "0":
			client = dst
		default:
			client = src
		}
		p.clients[stream] = client
	}
	if src == client {
		return FromClient, nil
	}
	return FromServer, nil
}

func (p *parser) packet(cols []string) error {
	hasAMQP := cols[colInitProtocol] != "" || cols[colAMQPType] != "" || cols[colAMQPLength] != ""
	hasPG := cols[colPGType] != ""
	// tshark names the 0-9-1 client's protocol header AMQP in the Protocol
	// column but dissects nothing in it.
	inferred := !hasAMQP && cols[colTCPLen] == "8" && cols[colProtocolColumn] == "AMQP"
	if !hasAMQP && !hasPG && !inferred {
		// Keep learning directions from SYNs even in packets with no frames.
		if cols[colSYN] == "1" {
			stream, err := num(cols[colStream])
			if err != nil {
				return err
			}
			_, err = p.direction(stream, cols)
			return err
		}
		return nil
	}
	number, err := num(cols[colNumber])
	if err != nil {
		return err
	}
	stream, err := num(cols[colStream])
	if err != nil {
		return err
	}
	dir, err := p.direction(stream, cols)
	if err != nil {
		return err
	}
	base := Frame{Packet: number, Stream: stream, Dir: dir}
	switch {
	case inferred:
		f := base
		f.Proto, f.Type, f.Len, f.Inferred = AMQP091, "protocol-header", 8, true
		p.protos[stream] = AMQP091
		p.frames = append(p.frames, f)
		return nil
	case hasPG:
		return p.pgsql(base, cols)
	}
	if cols[colInitProtocol] != "" {
		f := base
		f.Type, f.Len = "protocol-header", 8
		f.Proto = AMQP091
		if cols[colInitID] != "" || cols[colInitVersionMajor] == "1" {
			f.Proto = AMQP10
		}
		p.protos[stream] = f.Proto
		p.frames = append(p.frames, f)
	}
	if cols[colDoff] != "" || p.protos[stream] == AMQP10 {
		return p.amqp10(base, cols)
	}
	return p.amqp091(base, cols)
}

// amqp091 lines up AMQP 0-9-1 frames: every frame has a type, channel and
// length; each method frame, in turn, one class and one method id.
func (p *parser) amqp091(base Frame, cols []string) error {
	types, chans, lens := list(cols[colAMQPType]), list(cols[colChannel]), list(cols[colAMQPLength])
	classes, methods := list(cols[colMethodClass]), list(cols[colMethodMethod])
	if len(chans) != len(types) || len(lens) != len(types) {
		return fmt.Errorf("amqp0-9-1: %d types, %d channels, %d lengths", len(types), len(chans), len(lens))
	}
	if len(classes) != len(methods) {
		return fmt.Errorf("amqp0-9-1: %d classes, %d methods", len(classes), len(methods))
	}
	m := 0
	for i, ts := range types {
		t, err := num(ts)
		if err != nil {
			return err
		}
		ch, err := num(chans[i])
		if err != nil {
			return err
		}
		size, err := num(lens[i])
		if err != nil {
			return err
		}
		f := base
		f.Proto, f.Channel, f.Len = AMQP091, ch, size+8 // type, channel, size, frame-end
		switch t {
		case amqp091Method:
			if m >= len(classes) {
				return fmt.Errorf("amqp0-9-1: method frame %d has no class/method", i)
			}
			c, err := num(classes[m])
			if err != nil {
				return err
			}
			mm, err := num(methods[m])
			if err != nil {
				return err
			}
			m++
			f.Type = methodName(uint16(c), uint16(mm))
		case amqp091Header:
			f.Type = "content-header"
		case amqp091Body:
			f.Type = "content-body"
		case amqp091Heartbeat:
			f.Type = "heartbeat"
		default:
			f.Type = "unknown-" + ts
		}
		p.frames = append(p.frames, f)
	}
	if m != len(classes) {
		return fmt.Errorf("amqp0-9-1: %d method ids left over", len(classes)-m)
	}
	return nil
}

// amqp10 lines up AMQP 1.0 frames: every frame has a length, doff, type and
// channel; each non-empty AMQP frame one performative, each SASL frame one
// SASL method.
func (p *parser) amqp10(base Frame, cols []string) error {
	lens, doffs := list(cols[colAMQPLength]), list(cols[colDoff])
	types, chans := list(cols[colAMQPType]), list(cols[colChannel])
	perfs, sasls := list(cols[colPerformative]), list(cols[colSASLMethod])
	if len(doffs) != len(lens) || len(types) != len(lens) || len(chans) != len(lens) {
		return fmt.Errorf("amqp1.0: %d lengths, %d doffs, %d types, %d channels", len(lens), len(doffs), len(types), len(chans))
	}
	pi, si := 0, 0
	for i := range lens {
		size, err := num(lens[i])
		if err != nil {
			return err
		}
		doff, err := num(doffs[i])
		if err != nil {
			return err
		}
		ch, err := num(chans[i])
		if err != nil {
			return err
		}
		f := base
		f.Proto, f.Channel, f.Len = AMQP10, ch, size
		var code string
		switch {
		case types[i] == "1": // SASL frame (spec section 5.3.1)
			if si >= len(sasls) {
				return fmt.Errorf("amqp1.0: SASL frame %d has no code", i)
			}
			code = sasls[si]
			si++
		case size <= doff*4: // no body: an empty frame (section 2.4.5)
			f.Type = "empty"
		default:
			if pi >= len(perfs) {
				return fmt.Errorf("amqp1.0: frame %d has no performative", i)
			}
			code = perfs[pi]
			pi++
		}
		if code != "" {
			c, err := strconv.ParseUint(code, 0, 64)
			if err != nil {
				return fmt.Errorf("amqp1.0: descriptor %q: %w", code, err)
			}
			f.Type = amqp10Name(c)
		}
		p.frames = append(p.frames, f)
	}
	if pi != len(perfs) || si != len(sasls) {
		return fmt.Errorf("amqp1.0: %d performatives and %d SASL codes left over", len(perfs)-pi, len(sasls)-si)
	}
	return nil
}

// pgsql names each message; each Authentication request, in turn, takes
// one pgsql.authtype to name its kind as libpq 17's trace does
// (AuthenticationSASL, AuthenticationOk, ...).
func (p *parser) pgsql(base Frame, cols []string) error {
	auths := list(cols[colPGAuthType])
	a := 0
	for _, t := range list(cols[colPGType]) {
		f := base
		f.Proto = PGSQL
		f.Type = pgsqlName(f.Dir, t)
		if f.Type == "Authentication" && a < len(auths) {
			code, err := num(auths[a])
			if err != nil {
				return err
			}
			a++
			f.Type = authName(code)
		}
		p.frames = append(p.frames, f)
	}
	return nil
}

// Key names one direction of one TCP stream.
type Key struct {
	Stream int
	Dir    Dir
}

// Sequences groups frames by stream and direction, keeping their order:
// the unit of comparison, since the two directions of a connection
// interleave differently depending on how packets were split.
func Sequences(frames []Frame) map[Key][]Frame {
	m := map[Key][]Frame{}
	for _, f := range frames {
		k := Key{f.Stream, f.Dir}
		m[k] = append(m[k], f)
	}
	return m
}
