package tshark

import (
	"bufio"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.tsv from the captures in ../../testdata with tshark")

// row builds one line of tshark output from the columns that are set.
func row(set map[int]string) string {
	cols := make([]string, numCols)
	for i, v := range set {
		cols[i] = v
	}
	return strings.Join(cols, "\t")
}

func types(frames []Frame) []string {
	var s []string
	for _, f := range frames {
		s = append(s, f.Type)
	}
	return s
}

func TestParseAlignsRepeatedFields(t *testing.T) {
	tcp := func(n, sport, dport string, extra map[int]string) string {
		m := map[int]string{colNumber: n, colProtocolColumn: "AMQP", colStream: "0",
			colIPSrc: "127.0.0.1", colIPDst: "127.0.0.2", colSrcPort: sport, colDstPort: dport,
			colSYN: "0", colACK: "1", colTCPLen: "100"}
		if sport == "5672" {
			m[colIPSrc], m[colIPDst] = "127.0.0.2", "127.0.0.1"
		}
		for k, v := range extra {
			m[k] = v
		}
		return row(m)
	}
	in := strings.Join([]string{
		// A packet with no AMQP at all is skipped.
		tcp("1", "40000", "5672", map[int]string{colProtocolColumn: "TCP", colTCPLen: "0"}),
		// The client's 0-9-1 protocol header, which tshark leaves undissected.
		tcp("2", "40000", "5672", map[int]string{colTCPLen: "8"}),
		// Deliver + header + body + heartbeat: one class/method for four frames.
		tcp("3", "5672", "40000", map[int]string{colAMQPType: "1|2|3|8", colChannel: "1|1|1|0",
			colAMQPLength: "30|14|5|0", colMethodClass: "60", colMethodMethod: "60"}),
		// Two methods in one packet, the second unknown to tshark.
		tcp("4", "40000", "5672", map[int]string{colAMQPType: "1|1", colChannel: "1|1",
			colAMQPLength: "13|5", colMethodClass: "60|40", colMethodMethod: "80|51"}),
	}, "\n")
	frames, err := Parse(strings.NewReader(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Frame{
		{Packet: 2, Dir: FromClient, Proto: AMQP091, Type: "protocol-header", Len: 8, Inferred: true},
		{Packet: 3, Dir: FromServer, Proto: AMQP091, Channel: 1, Type: "basic.deliver", Len: 38},
		{Packet: 3, Dir: FromServer, Proto: AMQP091, Channel: 1, Type: "content-header", Len: 22},
		{Packet: 3, Dir: FromServer, Proto: AMQP091, Channel: 1, Type: "content-body", Len: 13},
		{Packet: 3, Dir: FromServer, Proto: AMQP091, Channel: 0, Type: "heartbeat", Len: 8},
		{Packet: 4, Dir: FromClient, Proto: AMQP091, Channel: 1, Type: "basic.ack", Len: 21},
		{Packet: 4, Dir: FromClient, Proto: AMQP091, Channel: 1, Type: "exchange.unbind-ok", Len: 13},
	}
	if !slices.Equal(frames, want) {
		t.Errorf("got\n%v\nwant\n%v", frames, want)
	}
}

func TestParseAMQP10(t *testing.T) {
	base := map[int]string{colProtocolColumn: "AMQP", colStream: "3",
		colIPv6Src: "::1", colIPv6Dst: "::1", colSrcPort: "5672", colDstPort: "41000", colSYN: "0", colACK: "1"}
	with := func(m map[int]string) string {
		for k, v := range base {
			if _, ok := m[k]; !ok {
				m[k] = v
			}
		}
		return row(m)
	}
	in := with(map[int]string{colNumber: "7", colInitProtocol: "AMQP", colInitID: "0", colInitVersionMajor: "1",
		colAMQPType: "0|0|1", colChannel: "0|2|0", colAMQPLength: "8|300|20", colDoff: "2|2|2",
		colPerformative: "20", colSASLMethod: "68"}) + "\n"
	frames, err := Parse(strings.NewReader(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Frame{
		{Packet: 7, Stream: 3, Dir: FromServer, Proto: AMQP10, Type: "protocol-header", Len: 8},
		{Packet: 7, Stream: 3, Dir: FromServer, Proto: AMQP10, Type: "empty", Len: 8},
		{Packet: 7, Stream: 3, Dir: FromServer, Proto: AMQP10, Channel: 2, Type: "transfer", Len: 300},
		{Packet: 7, Stream: 3, Dir: FromServer, Proto: AMQP10, Type: "sasl.outcome", Len: 20},
	}
	if !slices.Equal(frames, want) {
		t.Errorf("got\n%v\nwant\n%v", frames, want)
	}
}

func TestParseRejectsMisalignedOutput(t *testing.T) {
	bad := []string{
		"1\t2\t3",
		row(map[int]string{colNumber: "1", colStream: "0", colSrcPort: "1", colDstPort: "5672",
			colAMQPType: "1|1", colChannel: "0|0", colAMQPLength: "4|4", colMethodClass: "10", colMethodMethod: "10"}),
		row(map[int]string{colNumber: "1", colStream: "0", colSrcPort: "x", colDstPort: "5672", colAMQPType: "1"}),
	}
	for _, in := range bad {
		if _, err := Parse(strings.NewReader(in), nil); err == nil {
			t.Errorf("Parse(%q): no error", in)
		}
	}
}

func TestDirectionFromSYN(t *testing.T) {
	// Neither port is well known: the SYN decides, and pgsql.frontend is
	// not needed.
	in := strings.Join([]string{
		row(map[int]string{colNumber: "1", colStream: "0", colIPSrc: "10.0.0.1", colIPDst: "10.0.0.2",
			colSrcPort: "50000", colDstPort: "6000", colSYN: "1", colACK: "0"}),
		row(map[int]string{colNumber: "2", colStream: "0", colIPSrc: "10.0.0.2", colIPDst: "10.0.0.1",
			colSrcPort: "6000", colDstPort: "50000", colSYN: "0", colACK: "1", colPGType: "Ready for query"}),
	}, "\n")
	frames, err := Parse(strings.NewReader(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 1 || frames[0].Dir != FromServer || frames[0].Type != "ReadyForQuery" {
		t.Errorf("got %v", frames)
	}
}

// requireTshark skips when tshark is missing, or fails under CI=true.
func requireTshark(t *testing.T) {
	t.Helper()
	if _, err := Lookup(nil); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
}

const captures = "../../testdata"

// saved lists the captures whose tshark output is kept in testdata/*.tsv.
var saved = []string{"amqp091-pika.pcapng", "amqp10-proton.pcapng", "pgsql-libpq.pcapng"}

func TestUpdateSaved(t *testing.T) {
	if !*update {
		t.Skip("run with -update to rewrite testdata/*.tsv")
	}
	requireTshark(t)
	for _, name := range saved {
		out, err := exec.Command("tshark", Args(filepath.Join(captures, name), nil)...).Output()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", strings.TrimSuffix(name, ".pcapng")+".tsv"), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func parseSaved(t *testing.T, name string) []Frame {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", strings.TrimSuffix(name, ".pcapng")+".tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	frames, err := Parse(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	return frames
}

// protonTrace reads proton's PN_TRACE_FRM log into per-direction frame
// names: "-> SASL"/"-> AMQP" are protocol headers, "@open(16) [...]" a
// performative, a line with nothing after the arrow an empty frame.
func protonTrace(t *testing.T, path string) map[Dir][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	re := regexp.MustCompile(`^\[0x[0-9a-f]+\]: (AMQP|SASL):FRAME:(\d*) +(->|<-) ?(.*)$`)
	out := map[Dir][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := re.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		dir := FromClient
		if m[3] == "<-" {
			dir = FromServer
		}
		var name string
		switch rest := m[4]; {
		case m[2] == "":
			name = "protocol-header"
		case rest == "" || rest == "(EMPTY FRAME)":
			name = "empty"
		case strings.HasPrefix(rest, "@"):
			name = rest[1:strings.IndexByte(rest, '(')]
			name = strings.Replace(name, "sasl-", "sasl.", 1)
		default:
			t.Fatalf("unexpected trace line %q", sc.Text())
		}
		out[dir] = append(out[dir], name)
	}
	return out
}

// libpqTrace reads a PQtrace log (suppressed timestamps) into per-direction
// message names.
func libpqTrace(t *testing.T, path string) map[Dir][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[Dir][]string{}
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		cols := strings.SplitN(line, "\t", 4)
		if len(cols) == 3 && cols[0] == "F" && cols[2] == "" {
			// libpq 15 traces the CopyData it sends with no name.
			cols[2] = "CopyData"
		}
		if len(cols) < 3 {
			// libpq 15 complains in its own trace about the CopyData it
			// sent ("mismatched message length: consumed 4, expected 27"):
			// not a message.
			continue
		}
		out[Dir(cols[0][0])] = append(out[Dir(cols[0][0])], cols[2])
	}
	return out
}

func byDir(frames []Frame) map[Dir][]string {
	out := map[Dir][]string{}
	for _, f := range frames {
		out[f.Dir] = append(out[f.Dir], f.Type)
	}
	return out
}

// TestSavedProtonAgreesWithTrace checks the parser, on tshark's saved
// output, against proton's own log of the frames it sent and received.
func TestSavedProtonAgreesWithTrace(t *testing.T) {
	got := byDir(parseSaved(t, "amqp10-proton.pcapng"))
	want := protonTrace(t, filepath.Join(captures, "amqp10-proton.trace"))
	// RabbitMQ sends end after its close; proton stops reading at close
	// (as section 2.4.3 allows), so its log ends there.
	for d, s := range got {
		if i := slices.Index(s, "close"); i >= 0 {
			got[d] = s[:i+1]
		}
	}
	for _, d := range []Dir{FromClient, FromServer} {
		if !slices.Equal(got[d], want[d]) {
			t.Errorf("direction %c:\ntshark %v\nproton %v", d, got[d], want[d])
		}
	}
}

// TestSavedLibpqAgreesWithTrace does the same with libpq's PQtrace, which
// starts after authentication: compare from the first Query on.
func TestSavedLibpqAgreesWithTrace(t *testing.T) {
	got := byDir(parseSaved(t, "pgsql-libpq.pcapng"))
	want := libpqTrace(t, filepath.Join(captures, "pgsql-libpq.trace"))
	// Before the trace starts: the startup exchange, ending with the
	// server's first ReadyForQuery.
	cut := func(s []string, first string) []string {
		i := slices.Index(s, first)
		if i < 0 {
			t.Fatalf("%s not found in %v", first, s)
		}
		return s[i:]
	}
	f, b := cut(got[FromClient], "Query"), got[FromServer]
	b = b[slices.Index(b, "ReadyForQuery")+1:]
	// libpq 15 does not trace the CopyData messages it receives.
	b = slices.DeleteFunc(b, func(s string) bool { return s == "CopyData" })
	if !slices.Equal(f, want[FromClient]) {
		t.Errorf("frontend:\ntshark %v\nlibpq  %v", f, want[FromClient])
	}
	if !slices.Equal(b, want[FromServer]) {
		t.Errorf("backend:\ntshark %v\nlibpq  %v", b, want[FromServer])
	}
}

func TestSavedPikaFrameStructure(t *testing.T) {
	frames := parseSaved(t, "amqp091-pika.pcapng")
	seq := Sequences(frames)
	client := seq[Key{0, FromClient}]
	if len(client) == 0 || client[0].Type != "protocol-header" {
		t.Fatalf("client stream does not start with a protocol header: %v", client)
	}
	// Every publish is followed, on its channel, by a content header and
	// then only body frames until the next method.
	for i, f := range client {
		if f.Type != "basic.publish" {
			continue
		}
		if i+1 >= len(client) || client[i+1].Type != "content-header" || client[i+1].Channel != f.Channel {
			t.Errorf("publish at packet %d not followed by its content header", f.Packet)
		}
	}
	for _, f := range frames {
		if strings.HasPrefix(f.Type, "unknown") || strings.HasPrefix(f.Type, "[") {
			t.Errorf("unnamed frame %v", f)
		}
	}
	var heartbeats int
	for _, f := range frames {
		if f.Type == "heartbeat" {
			heartbeats++
		}
	}
	if heartbeats == 0 {
		t.Error("no heartbeat frames")
	}
}

// TestCapturesWithTshark runs tshark on the committed captures.
func TestCapturesWithTshark(t *testing.T) {
	requireTshark(t)
	ctx := context.Background()
	run := func(name string) []Frame {
		t.Helper()
		frames, err := Run(ctx, filepath.Join(captures, name), nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(frames) == 0 {
			t.Fatalf("%s: no frames", name)
		}
		return frames
	}
	strip := func(frames []Frame) map[Key][]string {
		out := map[Key][]string{}
		for k, fs := range Sequences(frames) {
			for _, f := range fs {
				out[k] = append(out[k], f.Type+"@"+strconv.Itoa(f.Channel))
			}
		}
		return out
	}
	// The same traffic in other containers and link types: same frames.
	variants := map[string][]string{
		"amqp091-pika": {".pcap", "-any.pcapng"},
		"amqp091-go":   {".pcap", "-any.pcapng", "-rawip.pcap", "-null.pcap", "-vlan.pcap"},
	}
	for base, others := range variants {
		ng := strip(run(base + ".pcapng"))
		for _, other := range others {
			if got := strip(run(base + other)); !mapsEqual(got, ng) {
				t.Errorf("%s%s and %s.pcapng disagree", base, other, base)
			}
		}
	}
	// Three conversations merged into one file with three interfaces hold
	// the frames of the three, stream numbers aside.
	var want, got []string
	for _, name := range []string{"amqp091-pika.pcapng", "amqp091-go-any.pcapng", "amqp091-ipv6.pcapng"} {
		want = append(want, flatten(strip(run(name)))...)
	}
	got = flatten(strip(run("amqp091-multi-iface.pcapng")))
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("amqp091-multi-iface.pcapng: %d stream directions, want %d as in its three sources", len(got), len(want))
	}
	// Saved output is still what tshark says.
	for _, name := range saved {
		if got, want := run(name), parseSaved(t, name); !slices.Equal(got, want) {
			t.Errorf("%s: tshark output changed since testdata/*.tsv was saved (rerun with -update)", name)
		}
	}
	for _, name := range []string{"amqp091-ipv6.pcapng", "amqp10-goamqp.pcapng", "pgsql-pgx.pcapng", "garbage-amqp.pcapng",
		"damaged-midstream.pcapng", "damaged-lost-segment.pcapng", "damaged-snap200.pcapng"} {
		run(name)
	}
	// A file cut short: tshark reports it and what it read before the cut.
	frames, err := Run(ctx, filepath.Join(captures, "cut-short.pcapng"), nil)
	if err == nil || len(frames) == 0 {
		t.Errorf("cut-short.pcapng: %d frames, err %v; want frames and an error", len(frames), err)
	}
	if _, err := Run(ctx, filepath.Join(captures, "not-a-capture.txt"), nil); err == nil {
		t.Error("not-a-capture.txt: no error")
	}
}

// flatten turns each stream direction into one string, dropping the
// stream number.
func flatten(m map[Key][]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, string(k.Dir)+" "+strings.Join(v, " "))
	}
	return out
}

func mapsEqual(a, b map[Key][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func TestParsePgsqlAuthentication(t *testing.T) {
	in := row(map[int]string{colNumber: "11", colStream: "0", colIPSrc: "127.0.0.2", colIPDst: "127.0.0.1",
		colSrcPort: "5432", colDstPort: "47982", colSYN: "0", colACK: "1",
		colPGType:     "Authentication request|Authentication request|Parameter status|Ready for query",
		colPGFrontend: "0|0|0|0", colPGAuthType: "12|0"})
	frames, err := Parse(strings.NewReader(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"AuthenticationSASLFinal", "AuthenticationOk", "ParameterStatus", "ReadyForQuery"}
	if got := types(frames); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, f := range frames {
		if f.Dir != FromServer || f.Proto != PGSQL {
			t.Errorf("frame %v: want B pgsql", f)
		}
	}
}
