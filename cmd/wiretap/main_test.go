package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"math/rand"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/pcapng"
	"github.com/wiretap-dev/wiretap/decode/pgwire"
)

var wiretapBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wiretap-cmd-test")
	if err != nil {
		panic(err)
	}
	wiretapBin = filepath.Join(dir, "wiretap")
	args := []string{"build", "-o", wiretapBin}
	if raceBuild {
		// A race in the binary exits non-zero (66) with the report on
		// stderr: the test that ran it fails.
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// chunk is one Data call of a recorded flow.
type chunk struct {
	fromA bool
	data  []byte
}

// recorder keeps the byte streams of every flow of a capture, in order.
type recorder struct {
	flows map[*capture.Flow]*[]chunk
	order []*capture.Flow
}

func (r *recorder) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	if r.flows == nil {
		r.flows = map[*capture.Flow]*[]chunk{}
	}
	cs := r.flows[f]
	if cs == nil {
		cs = new([]chunk)
		r.flows[f] = cs
		r.order = append(r.order, f)
	}
	*cs = append(*cs, chunk{fromA, append([]byte(nil), data...)})
}
func (r *recorder) Gap(*capture.Flow, bool, int, time.Time) {}
func (r *recorder) Close(*capture.Flow, time.Time)          {}

// firstConversation returns the chunks of the first flow of a capture.
func firstConversation(t *testing.T, path string) []chunk {
	t.Helper()
	var r recorder
	if _, err := capture.ReadFile(path, &r, nil); err != nil {
		t.Fatal(err)
	}
	if len(r.order) == 0 {
		t.Fatalf("%s: no flows", path)
	}
	return *r.flows[r.order[0]]
}

// synthCapture writes flows (each a list of chunks) to a pcapng file.
type synthFlow struct {
	client, server string
	chunks         []chunk
}

func writeCapture(t *testing.T, path string, flows []synthFlow) {
	t.Helper()
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(fh)
	w := pcapng.NewWriter(bw)
	s := pcapng.NewSynth(w)
	tm := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i, fl := range flows {
		f := &capture.Flow{ID: i + 1, A: netip.MustParseAddrPort(fl.client), B: netip.MustParseAddrPort(fl.server), SYN: true, First: tm}
		for _, c := range fl.chunks {
			tm = tm.Add(time.Millisecond)
			s.Data(f, c.fromA, c.data, tm)
		}
		s.Close(f, tm)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	fh.Close()
}

type jsonUnit struct {
	N       int    `json:"n"`
	Conn    int    `json:"conn"`
	Dir     string `json:"dir"`
	Type    string `json:"type"`
	Channel *int   `json:"channel"`
	Parent  int    `json:"parent"`
	Error   string `json:"error"`
	Summary string `json:"summary"`
}

// runWiretap runs the binary and returns stdout, stderr, exit code and
// peak RSS in bytes.
func runWiretap(t *testing.T, args ...string) (string, string, int, int64) {
	t.Helper()
	cmd := exec.Command(wiretapBin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss * 1024
	}
	return stdout.String(), stderr.String(), code, rss
}

func parseJSONUnits(t *testing.T, out string) []jsonUnit {
	t.Helper()
	var us []jsonUnit
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var u jsonUnit
		if err := json.Unmarshal([]byte(line), &u); err != nil {
			t.Fatalf("bad JSON line %q: %v", line, err)
		}
		us = append(us, u)
	}
	return us
}

func typesOf(us []jsonUnit, conn int) []string {
	var out []string
	for _, u := range us {
		if u.Conn == conn {
			out = append(out, u.Dir+" "+u.Type)
		}
	}
	return out
}

// zstdBomb returns a CompressedMessages whose payload inflates to about
// size bytes of valid DataRows of 1 MiB each: only the decompression limit
// can stop it.
func zstdBomb(t *testing.T, size int) []byte {
	t.Helper()
	var comp bytes.Buffer
	enc, err := zstd.NewWriter(&comp, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	const col = 1 << 20
	row := make([]byte, 1+4+2+4+col)
	row[0] = 'D'
	binary.BigEndian.PutUint32(row[1:], uint32(len(row)-1))
	binary.BigEndian.PutUint16(row[5:], 1)
	binary.BigEndian.PutUint32(row[7:], col)
	types := []byte{}
	for n := 0; n < size; n += len(row) {
		enc.Write(row)
		types = append(types, 'D')
	}
	if err := enc.Flush(); err != nil {
		t.Fatal(err)
	}
	m := pgwire.CompressedMessages{Algorithm: pgwire.CompressionZstd, Types: types, Data: comp.Bytes()}
	return m.Encode(nil)
}

func pgStartup() chunk {
	m := pgwire.StartupMessage{ProtocolVersion: 196608, Params: []pgwire.Param{{Name: []byte("user"), Value: []byte("u")}, {Name: []byte("database"), Value: []byte("d")}}}
	return chunk{true, m.Encode(nil)}
}

// TestBadInput is issue 2's and 4's bad-input case end to end: garbage on
// the AMQP port, a frame header that claims gigabytes, a decompression
// bomb, with real conversations before and after them. The real ones must
// decode in full, nothing may crash, and the process must stay under
// 512 MiB.
func TestBadInput(t *testing.T) {
	real := firstConversation(t, "../../testdata/amqp091-pika.pcapng")
	rng := rand.New(rand.NewSource(1))
	garbage := make([]byte, 64<<10)
	rng.Read(garbage)
	huge := append([]byte("AMQP\x00\x00\x09\x01"), 1, 0, 1, 0x7f, 0xff, 0xff, 0xf0) // method frame claiming ~2 GiB
	huge = append(huge, bytes.Repeat([]byte{0x41}, 8192)...)
	rfq := []byte{'Z', 0, 0, 0, 5, 'I'}
	authOK := []byte{'R', 0, 0, 0, 8, 0, 0, 0, 0}
	query := append([]byte{'Q', 0, 0, 0, 13}, "SELECT 1;\x00"[:9]...)
	binary.BigEndian.PutUint32(query[1:], uint32(len(query)-1))
	bomb := zstdBomb(t, 1<<30)
	t.Logf("bomb: %d bytes inflating to 1 GiB", len(bomb))

	dir := t.TempDir()
	path := filepath.Join(dir, "bad.pcapng")
	if keep := os.Getenv("WIRETAP_KEEP_BAD"); keep != "" {
		path = keep
	}
	writeCapture(t, path, []synthFlow{
		{"10.0.0.1:40001", "10.0.0.9:5672", real},
		{"10.0.0.2:40002", "10.0.0.9:5672", []chunk{{true, garbage}, {false, []byte("AMQP\x00\x00\x09\x01")}}},
		{"10.0.0.3:40003", "10.0.0.9:5672", []chunk{{true, huge}}},
		{"10.0.0.4:40004", "10.0.0.8:5432", []chunk{pgStartup(), {false, authOK}, {false, rfq}, {true, query}, {false, bomb}, {false, rfq}}},
		{"10.0.0.5:40005", "10.0.0.9:5672", real},
	})
	out, stderr, code, rss := runWiretap(t, "read", "--format", "json", path)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	us := parseJSONUnits(t, out)
	want := typesOf(parseJSONUnits(t, mustRun(t, "read", "--format", "json", "../../testdata/amqp091-pika.pcapng")), 1)
	for _, conn := range []int{1, 5} {
		got := typesOf(us, conn)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("conn %d: %d units, want %d as in the original capture", conn, len(got), len(want))
		}
		for _, u := range us {
			if u.Conn == conn && u.Error != "" {
				t.Errorf("conn %d unit %d: unexpected error %q", conn, u.N, u.Error)
			}
		}
	}
	errorsIn := map[int]string{}
	for _, u := range us {
		if u.Error != "" && errorsIn[u.Conn] == "" {
			errorsIn[u.Conn] = u.Error
		}
	}
	for _, conn := range []int{2, 3, 4} {
		if errorsIn[conn] == "" {
			t.Errorf("conn %d: bad input decoded without an error", conn)
		} else {
			t.Logf("conn %d: %s", conn, errorsIn[conn])
		}
	}
	if !strings.Contains(errorsIn[4], "--max-decompressed") {
		t.Errorf("conn 4: bomb error does not name the limit: %q", errorsIn[4])
	}
	t.Logf("peak RSS %d MiB", rss>>20)
	if rss > 512<<20 {
		t.Errorf("peak RSS %d MiB, want under 512 MiB", rss>>20)
	}
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, code, _ := runWiretap(t, args...)
	if code != 0 {
		t.Fatalf("wiretap %v: exit %d: %s", args, code, stderr)
	}
	return out
}

// TestExitStatus checks INTERFACES.md's exit statuses and their one-line
// messages.
func TestExitStatus(t *testing.T) {
	dir := t.TempDir()
	notCap := filepath.Join(dir, "notes.txt")
	os.WriteFile(notCap, []byte("this is not a capture file\n"), 0o644)
	cut := filepath.Join(dir, "cut.pcapng")
	whole, err := os.ReadFile("../../testdata/amqp091-pika.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(cut, whole[:len(whole)*2/3], 0o644)

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"not a capture", []string{"read", notCap}, 1, "not a pcap or pcapng file"},
		{"missing file", []string{"read", filepath.Join(dir, "nope.pcap")}, 1, "no such file"},
		{"unknown flag", []string{"read", "--bogus", cut}, 2, "unknown flag"},
		{"bad format", []string{"read", "--format", "xml", cut}, 2, "--format"},
		{"bad filter", []string{"read", "--filter", "amqp.methd == 1", cut}, 2, "did you mean amqp.method"},
		{"bad decode-as", []string{"read", "--decode-as", "5672=http", cut}, 2, "unknown protocol"},
		{"no args", []string{"read"}, 2, "arg"},
		{"cut short", []string{"read", cut}, 0, "warning"},
		{"conn 0", []string{"read", "--conn", "0", cut}, 2, "--conn 0: connections are numbered from 1"},
		{"conn past the last", []string{"read", "--conn", "9", cut}, 0, "--conn 9: the input has 1 connection"},
		{"pqtrace without postgres", []string{"read", "--format", "pqtrace", cut}, 0, "no PostgreSQL connection"},
		{"replay without a terminal", []string{"replay", cut}, 2, "the terminal UI needs a terminal"},
		{"compress-sim takes no output flags", []string{"compress-sim", "--format", "json", "../../testdata/pgsql-libpq.pcapng"}, 2, "unknown flag: --format"},
		{"compress-sim on a connection that is not there", []string{"compress-sim", "--conn", "2", "../../testdata/pgsql-libpq.pcapng"}, 1, "no PostgreSQL backend messages in connection 2"},
		{"compress-sim without postgres", []string{"compress-sim", cut}, 1, "no PostgreSQL backend messages in"},
		{"capture with a bad engine", []string{"capture", "-i", "lo", "--engine", "bogus", "--headless"}, 2, "--engine \"bogus\": want auto, dumpcap or afpacket"},
		{"capture with a bad buffer size", []string{"capture", "-i", "lo", "--buffer-size", "lots", "--headless"}, 2, "--buffer-size lots: want a size such as 64MiB"},
		{"replay with a bad filter", []string{"replay", "--filter", "amqp.methd == 1", cut}, 2, "--filter: unknown field \"amqp.methd\" at column 1; did you mean amqp.method?"},
		{"replay with a bad memory size", []string{"replay", "--memory", "lots", cut}, 2, "--memory lots: want a size such as 512MiB"},
		{"broker with a bad memory size", []string{"broker", "--memory", "-1KiB"}, 2, "--memory -1KiB: want a size such as 512MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code, _ := runWiretap(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, stderr)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr %q does not say %q", stderr, tc.stderr)
			}
			if (tc.code == 1 || tc.name == "replay without a terminal") && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("want one line on stderr, got %q", stderr)
			}
			if tc.name == "cut short" && len(out) == 0 {
				t.Error("cut-short capture decoded nothing")
			}
			if strings.Contains(stderr, "filter: filter:") || strings.Contains(stderr, "--filter: filter:") {
				t.Errorf("doubled prefix: %q", stderr)
			}
		})
	}
}

// TestReadStdin: `read -` reads a capture piped in, gzip-compressed or not.
func TestReadStdin(t *testing.T) {
	data, err := os.ReadFile("../../testdata/amqp091-go.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	want, _, code, _ := runWiretap(t, "read", "../../testdata/amqp091-go.pcapng")
	if code != 0 {
		t.Fatal(code)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(data)
	zw.Close()
	for name, in := range map[string][]byte{"plain": data, "gzip": gz.Bytes()} {
		cmd := exec.Command(wiretapBin, "read", "-")
		cmd.Stdin = bytes.NewReader(in)
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(got) != want {
			t.Errorf("%s: read - differs from read FILE", name)
		}
	}
}

// TestPqtraceSaysEncrypted: a PostgreSQL session that switched to TLS has
// no pqtrace line (libpq traces none), so stderr says it is encrypted and
// how such a session can be decoded.
func TestPqtraceSaysEncrypted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tls.pcapng")
	ssl := []byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}
	hello := append([]byte{0x16, 0x03, 0x01, 0x00, 0x40}, make([]byte, 0x40)...)
	writeCapture(t, path, []synthFlow{{client: "10.0.0.1:50000", server: "10.0.0.2:5432", chunks: []chunk{
		{true, ssl}, {false, []byte("S")}, {true, hello}, {false, hello},
	}}})
	out, stderr, code, _ := runWiretap(t, "read", "--format", "pqtrace", path)
	if code != 0 || strings.Contains(out, "encrypted") {
		t.Fatalf("exit %d, trace %q", code, out)
	}
	if !strings.Contains(stderr, "TLS encrypted stream") || !strings.Contains(stderr, "without --no-intercept decodes such sessions") {
		t.Fatalf("stderr %q", stderr)
	}
}
