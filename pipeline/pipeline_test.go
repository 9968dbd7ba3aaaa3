package pipeline

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"github.com/wiretap-dev/wiretap/internal/findcheck"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/output"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func collect(cfg Config) (*Pipeline, *[]*decode.Unit) {
	var us []*decode.Unit
	cfg.Sink = func(u *decode.Unit) { us = append(us, u) }
	return New(cfg), &us
}

func flow(id int, a, b string, syn bool) *capture.Flow {
	return &capture.Flow{ID: id, A: netip.MustParseAddrPort(a), B: netip.MustParseAddrPort(b), SYN: syn, First: t0}
}

// amqpHeader then connection.start-ok-less traffic is enough to test who is
// the client: the side that sent the protocol header.
var amqp091Header = []byte("AMQP\x00\x00\x09\x01")

// heartbeat frame (AMQP 0-9-1 §4.2.7): type 8, channel 0, size 0, frame-end.
var heartbeat = []byte{8, 0, 0, 0, 0, 0, 0, 0xce}

func TestClientByHeaderWithoutSYN(t *testing.T) {
	// Ports say nothing (both high); B sends the protocol header first.
	p, us := collect(Config{})
	f := flow(1, "10.0.0.1:6000", "10.0.0.2:7000", false)
	p.Gap(f, true, -1, t0)
	p.Gap(f, false, -1, t0)
	p.Data(f, false, amqp091Header, t0)
	p.Data(f, true, heartbeat, t0)
	p.Finish()
	if len(*us) != 2 {
		t.Fatalf("got %d units, want 2", len(*us))
	}
	c := (*us)[0].Conn
	if c.Client != f.B || c.Server != f.A || c.Proto != decode.ProtoAMQP091 {
		t.Errorf("client %v server %v proto %v; want client %v", c.Client, c.Server, c.Proto, f.B)
	}
	if (*us)[0].Type != "protocol-header" || (*us)[0].Dir != decode.DirF {
		t.Errorf("first unit %s %v", (*us)[0].Type, (*us)[0].Dir)
	}
	if (*us)[1].Type != "heartbeat" || (*us)[1].Dir != decode.DirB {
		t.Errorf("second unit %s %v", (*us)[1].Type, (*us)[1].Dir)
	}
}

func TestClientByWellKnownPort(t *testing.T) {
	// Mid-stream, the first bytes come from the server (port 5672 on A).
	p, us := collect(Config{})
	f := flow(1, "10.0.0.9:5672", "10.0.0.1:40000", false)
	p.Gap(f, true, -1, t0)
	p.Data(f, true, heartbeat, t0)
	p.Finish()
	if len(*us) != 1 {
		t.Fatalf("got %d units", len(*us))
	}
	u := (*us)[0]
	if u.Conn.Server != f.A || u.Dir != decode.DirB || u.Type != "heartbeat" {
		t.Errorf("server %v dir %v type %s", u.Conn.Server, u.Dir, u.Type)
	}
}

func TestSYNDecidesClient(t *testing.T) {
	// With the handshake seen, A is the client even on odd ports.
	p, us := collect(Config{DecodeAs: map[uint16]decode.Proto{9999: decode.ProtoAMQP091}})
	f := flow(1, "10.0.0.1:40000", "10.0.0.2:9999", true)
	p.Data(f, false, heartbeat, t0)
	p.Finish()
	if len(*us) != 1 || (*us)[0].Dir != decode.DirB || (*us)[0].Conn.Proto != decode.ProtoAMQP091 {
		t.Fatalf("units %v", *us)
	}
}

func TestDecodeAsOverridesPort(t *testing.T) {
	// Port 5672 would say AMQP; --decode-as 5672=pgsql wins.
	p, us := collect(Config{DecodeAs: map[uint16]decode.Proto{5672: decode.ProtoPgSQL}})
	f := flow(1, "10.0.0.1:40000", "10.0.0.2:5672", true)
	rfq := []byte{'Z', 0, 0, 0, 5, 'I'}
	p.Data(f, false, rfq, t0)
	p.Finish()
	if len(*us) == 0 || (*us)[0].Proto != decode.ProtoPgSQL || (*us)[0].Type != "ReadyForQuery" {
		t.Fatalf("units %+v", *us)
	}
}

func TestUnknownProtocolIsNumberedButSilent(t *testing.T) {
	p, us := collect(Config{})
	f1 := flow(1, "10.0.0.1:40000", "10.0.0.2:80", true)
	f2 := flow(2, "10.0.0.1:40001", "10.0.0.2:5672", true)
	p.Data(f1, true, []byte("GET / HTTP/1.1\r\n\r\n"), t0)
	p.Data(f2, true, amqp091Header, t0)
	p.Finish()
	if len(*us) != 1 || (*us)[0].Conn.ID != 2 {
		t.Fatalf("units %+v", *us)
	}
	if n := len(p.Conns()); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

func TestSplitHeaderWaits(t *testing.T) {
	// The protocol header arrives one byte at a time.
	p, us := collect(Config{})
	f := flow(1, "10.0.0.1:6000", "10.0.0.2:7000", true)
	for _, b := range amqp091Header {
		p.Data(f, true, []byte{b}, t0)
	}
	p.Finish()
	if len(*us) != 1 || (*us)[0].Type != "protocol-header" {
		t.Fatalf("units %+v", *us)
	}
}

func TestTLSFromFirstByte(t *testing.T) {
	p, us := collect(Config{})
	f := flow(1, "10.0.0.1:40000", "10.0.0.2:5671", true)
	hello := append([]byte{0x16, 0x03, 0x01, 0x00, 0x10}, make([]byte, 16)...)
	p.Data(f, true, hello, t0)
	p.Data(f, false, hello, t0)
	p.Finish()
	if len(*us) != 2 || (*us)[0].Type != "tls" {
		t.Fatalf("units %+v", *us)
	}
	if n := (*us)[0].Conn.Notes; len(n) != 1 {
		t.Errorf("notes %v", n)
	}
}

// TestCaptures decodes every shipped capture: units numbered 1.. in order,
// per-connection counters matching the units, and every unit rendering as
// JSON (which builds its field tree).
func TestCaptures(t *testing.T) {
	files, _ := filepath.Glob("../testdata/*.pcap*")
	if len(files) == 0 {
		t.Fatal("no captures in testdata")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			p, us := collect(Config{})
			if _, err := capture.ReadFile(path, p, nil); err != nil {
				t.Fatal(err)
			}
			p.Finish()
			if len(*us) == 0 {
				t.Fatal("no units")
			}
			count := map[*decode.Conn][2]int{}
			var buf []byte
			for i, u := range *us {
				if u.N != i+1 {
					t.Fatalf("unit %d numbered %d", i+1, u.N)
				}
				if u.Len < len(u.Raw) {
					t.Errorf("unit %d: len %d < raw %d", u.N, u.Len, len(u.Raw))
				}
				if u.Parent == nil {
					c := count[u.Conn]
					c[u.Dir]++
					count[u.Conn] = c
				}
				buf = output.AppendJSON(buf[:0], u, output.JSONOptions{Raw: true})
				if !bytes.HasPrefix(buf, []byte(`{"n":`)) {
					t.Fatalf("unit %d: bad JSON %q", u.N, buf)
				}
			}
			for c, n := range count {
				if c.Units != n {
					t.Errorf("conn %d: counters %v, units %v", c.ID, c.Units, n)
				}
			}
		})
	}
}

// FuzzPipeline feeds capture bytes through reading, reassembly, detection,
// every decoder and the JSON renderer.
//
// Seeds are small: the first 2 KiB of each shipped capture (its file
// header, handshakes and first frames) and the small files of the hostile
// corpus. Whole captures of 20-35 KB made it run about 150 inputs in 45 s:
// the fuzzer minimises every input that finds new coverage, running it
// again and again for up to a minute, and the cost of each run grows with
// the input. Inputs over fuzzMaxInput are skipped for the same reason, and
// the time to minimise one is cut to fuzzMinimizeTime (unless
// -fuzzminimizetime is given).
func FuzzPipeline(f *testing.F) {
	files, _ := filepath.Glob("../testdata/*.pcap*")
	small, _ := filepath.Glob("../testdata/hostile/*.pcap*")
	files = append(files, small...)
	for _, path := range files {
		if strings.HasSuffix(path, ".gz") {
			continue // a prefix of a gzip stream is only a bad gzip stream
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if strings.Contains(path, "/hostile/") && len(b) > fuzzSeedSize*2 {
			continue
		}
		f.Add(b[:min(len(b), fuzzSeedSize)])
	}
	// Minimising an input costs one run per candidate, thousands for a
	// few KiB, and the default allows a minute for each new input: unless
	// told otherwise, give it a few seconds.
	minimizeSet := false
	flag.Visit(func(fl *flag.Flag) { minimizeSet = minimizeSet || fl.Name == "test.fuzzminimizetime" })
	if !minimizeSet {
		flag.Set("test.fuzzminimizetime", fuzzMinimizeTime)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzMaxInput {
			t.Skip("input over fuzzMaxInput")
		}
		var buf []byte
		n := 0
		sum := sha256.New()
		p := New(Config{Sink: func(u *decode.Unit) {
			buf = output.AppendJSON(buf[:0], u, output.JSONOptions{Raw: true})
			sum.Write(buf)
			// Finder agreement on a spread of units: every one would make
			// an input of thousands of units take seconds, and each check
			// looks up every registered field name (FuzzFinder and
			// TestFindersAgreeWithTrees check them all).
			if n++; n <= 4 || n%256 == 0 {
				if err := findcheck.Check(u); err != nil {
					t.Fatal(err)
				}
			}
		}})
		capture.Read(bytes.NewReader(data), "fuzz", p, nil)
		p.Finish()
		// As `read` decodes (decode.Options.Defer): the same units, in
		// the same order.
		opt := decode.DefaultOptions()
		opt.Defer = new(decode.Deferred)
		deferred, m := sha256.New(), 0
		p = New(Config{Options: opt, Sink: func(u *decode.Unit) {
			buf = output.AppendJSON(buf[:0], u, output.JSONOptions{Raw: true})
			deferred.Write(buf)
			m++
		}})
		capture.Read(bytes.NewReader(data), "fuzz", p, nil)
		p.Finish()
		if m != n || !bytes.Equal(deferred.Sum(nil), sum.Sum(nil)) {
			t.Fatalf("with Options.Defer: %d units, not the %d decoded without it, or not the same", m, n)
		}
	})
}

// Sizes of FuzzPipeline's seeds and of the largest input it runs.
const (
	fuzzSeedSize     = 2 << 10
	fuzzMaxInput     = 64 << 10
	fuzzMinimizeTime = "3s"
)

// TestFindersAgreeWithTrees looks up every field name on every unit of
// every shipped capture through the protocols' finders and checks that
// each lookup a finder answers gives what the unit's tree holds.
func TestFindersAgreeWithTrees(t *testing.T) {
	files, _ := filepath.Glob("../testdata/*.pcap*")
	if len(files) == 0 {
		t.Fatal("no captures in ../testdata")
	}
	// A field each protocol's finder must answer (found, without the tree)
	// on some unit, or the agreement would be checked on nothing.
	probe := map[decode.Proto]string{
		decode.ProtoAMQP091: "amqp.method.arguments.routing_key",
		decode.ProtoAMQP10:  "amqp.performative.arguments.deliveryId",
		decode.ProtoPgSQL:   "pgsql.query",
	}
	answered := map[decode.Proto]int{}
	for _, path := range files {
		p := New(Config{Sink: func(u *decode.Unit) {
			if err := findcheck.Check(u); err != nil {
				t.Errorf("%s: %v", filepath.Base(path), err)
			}
			if _, ok, h := u.FindField(probe[u.Proto], 0); ok && h {
				answered[u.Proto]++
			}
		}})
		if _, err := capture.ReadFile(path, p, nil); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		p.Finish()
	}
	// The finders must actually answer, or the test checks nothing.
	for proto, name := range probe {
		if answered[proto] == 0 {
			t.Errorf("no %s unit had %s answered by its finder", proto, name)
		} else {
			t.Logf("%s: %s answered on %d units", proto, name, answered[proto])
		}
	}
}
