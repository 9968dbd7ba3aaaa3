package redact_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/pcapng"
	"github.com/wiretap-dev/wiretap/capture/redact"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/pipeline"
)

// captures holds sessions with credentials of every kind redact knows:
// AMQP 0-9-1 PLAIN, AMQP 1.0 SASL PLAIN, PostgreSQL SCRAM-SHA-256 and a
// PostgreSQL password message.
var captures = []string{
	"amqp091-pika.pcapng", "amqp091-go.pcapng", "amqp10-goamqp.pcapng",
	"amqp10-proton.pcapng", "pgsql-libpq.pcapng", "pgsql-pgx.pcapng",
}

// units decodes a capture with secrets shown.
func units(t *testing.T, name string, data []byte) []*decode.Unit {
	t.Helper()
	var us []*decode.Unit
	opt := decode.DefaultOptions()
	opt.ShowSecrets = true
	pl := pipeline.New(pipeline.Config{Options: opt, Sink: func(u *decode.Unit) { us = append(us, u) }})
	if _, err := capture.Read(bytes.NewReader(data), name, pl, nil); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	pl.Finish()
	return us
}

// compare checks that redacted decodes to the same units as orig, that
// every unit carrying a secret has it overwritten with asterisks of the
// same length, and that nothing else changed. It returns how many secret
// units it saw.
func compare(t *testing.T, name string, orig, redacted []*decode.Unit) int {
	t.Helper()
	if len(orig) != len(redacted) {
		t.Fatalf("%s: %d units redacted, %d before", name, len(redacted), len(orig))
	}
	secrets := 0
	for i, u := range orig {
		r := redacted[i]
		if u.Type != r.Type || u.Len != r.Len || u.Err() != r.Err() || u.Dir != r.Dir {
			t.Fatalf("%s: unit %d is %s (%d bytes, error %q) redacted, %s (%d bytes, error %q) before",
				name, u.N, r.Type, r.Len, r.Err(), u.Type, u.Len, u.Err())
		}
		// The AMQP 0-9-1 decoder marks only what it overwrites itself.
		secret := u.Secret || u.Type == "connection.start-ok" || u.Type == "connection.secure-ok"
		if !secret {
			if !bytes.Equal(u.Raw, r.Raw) {
				t.Fatalf("%s: unit %d (%s) changed, and it holds no secret", name, u.N, u.Type)
			}
			continue
		}
		if u.Dir != decode.DirF {
			continue // the server's side of an exchange is left as it was
		}
		secrets++
		stars := 0
		for j := range u.Raw {
			switch {
			case r.Raw[j] == u.Raw[j]:
			case r.Raw[j] == redact.Mask:
				stars++
			default:
				t.Fatalf("%s: unit %d (%s): byte %d is %q, want it unchanged or '*'", name, u.N, u.Type, j, r.Raw[j])
			}
		}
		if stars < 4 {
			t.Fatalf("%s: unit %d (%s): %d bytes overwritten, want the secret's:\n%q\n%q", name, u.N, u.Type, stars, u.Raw, r.Raw)
		}
	}
	return secrets
}

// streamRedactor redacts each flow of a capture as a [redact.Conn] and
// writes the result with a Synth.
type streamRedactor struct {
	conns map[*capture.Flow]*redact.Conn
	out   capture.Handler
}

func (s *streamRedactor) conn(f *capture.Flow) *redact.Conn {
	c := s.conns[f]
	if c == nil {
		c = redact.NewConn()
		s.conns[f] = c
	}
	return c
}

func (s *streamRedactor) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	s.out.Data(f, fromA, s.conn(f).Redact(fromA == f.SYN || fromA, data), t)
}

func (s *streamRedactor) Gap(f *capture.Flow, fromA bool, n int, t time.Time) {
	s.conn(f).Lost(fromA)
	s.out.Gap(f, fromA, n, t)
}

func (s *streamRedactor) Close(f *capture.Flow, t time.Time) { s.out.Close(f, t) }

func read(t *testing.T, name string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := pcapng.NewWriter(&b)
	if _, err := capture.ReadFile(filepath.Join("..", "..", "testdata", name), capture.MultiHandler(), &capture.Options{
		Tap: func(p *capture.Packet) {
			if err := w.WritePacket(p); err != nil {
				t.Fatal(err)
			}
		},
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestConnRedactsSecrets: the streams of real sessions, redacted as the
// proxy's -w --redact does, decode to the same units, secrets asterisked.
func TestConnRedactsSecrets(t *testing.T) {
	for _, name := range captures {
		t.Run(name, func(t *testing.T) {
			orig := read(t, name)
			var plain, red bytes.Buffer
			pw, rw := pcapng.NewWriter(&plain), pcapng.NewWriter(&red)
			ps, rs := pcapng.NewSynth(pw), pcapng.NewSynth(rw)
			h := capture.MultiHandler(ps, &streamRedactor{conns: map[*capture.Flow]*redact.Conn{}, out: rs})
			if _, err := capture.Read(bytes.NewReader(orig), name, h, nil); err != nil {
				t.Fatal(err)
			}
			pw.Close()
			rw.Close()
			if n := compare(t, name, units(t, name, plain.Bytes()), units(t, name, red.Bytes())); n == 0 {
				t.Fatalf("%s: no secret found to redact", name)
			}
		})
	}
}

// TestPacketsRedactSecrets: the packets of real captures, redacted as
// capture -w --redact does, decode to the same units, secrets asterisked.
func TestPacketsRedactSecrets(t *testing.T) {
	for _, name := range captures {
		t.Run(name, func(t *testing.T) {
			orig := read(t, name)
			var red bytes.Buffer
			w := pcapng.NewWriter(&red)
			r := redact.NewPackets()
			if _, err := capture.Read(bytes.NewReader(orig), name, capture.MultiHandler(), &capture.Options{
				Tap: func(p *capture.Packet) {
					if err := w.WritePacket(r.Redact(p)); err != nil {
						t.Fatal(err)
					}
				},
			}); err != nil {
				t.Fatal(err)
			}
			w.Close()
			if n := compare(t, name, units(t, name, orig), units(t, name, red.Bytes())); n == 0 {
				t.Fatalf("%s: no secret found to redact", name)
			}
		})
	}
}

// TestConnAfterGap: a gap in the client's bytes before the exchange is
// over leaves the redactor unable to find the secret, so it overwrites
// everything after.
func TestConnAfterGap(t *testing.T) {
	c := redact.NewConn()
	c.Redact(true, []byte("AMQP\x00\x00\x09\x01"))
	c.Lost(true)
	got := c.Redact(true, []byte("\x01\x00\x00secret"))
	if strings.Trim(string(got), "*") != "" {
		t.Fatalf("after a gap: %q, want all asterisks", got)
	}
	// A connection in another protocol is passed as it is.
	o := redact.NewConn()
	in := []byte("GET / HTTP/1.1\r\n\r\n")
	if got := o.Redact(true, in); !bytes.Equal(got, in) {
		t.Fatalf("HTTP: %q, want it unchanged", got)
	}
}

// TestPacketsMidstream: connections whose SYN the redactor did not see
// (a capture started mid-stream) still have the credentials of segments
// that start with them overwritten.
func TestPacketsMidstream(t *testing.T) {
	for _, name := range captures {
		t.Run(name, func(t *testing.T) {
			orig := read(t, name)
			var red bytes.Buffer
			w := pcapng.NewWriter(&red)
			r := redact.NewPackets()
			if _, err := capture.Read(bytes.NewReader(orig), name, capture.MultiHandler(), &capture.Options{
				Tap: func(p *capture.Packet) {
					if seg, ok := capture.DecodeTCP(p); ok && !seg.SYN {
						p = r.Redact(p)
					}
					if err := w.WritePacket(p); err != nil {
						t.Fatal(err)
					}
				},
			}); err != nil {
				t.Fatal(err)
			}
			w.Close()
			if n := compare(t, name, units(t, name, orig), units(t, name, red.Bytes())); n == 0 {
				t.Fatalf("%s: no secret found to redact", name)
			}
		})
	}
}
