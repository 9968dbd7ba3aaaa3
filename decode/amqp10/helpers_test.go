package amqp10

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// collect decodes the two directions' byte streams, each fed in chunks of
// at most chunk bytes (0: whole), F first, and returns the units.
func collect(t testing.TB, opt *decode.Options, chunk int, feeds ...feed) []*decode.Unit {
	t.Helper()
	var units []*decode.Unit
	conn := &decode.Conn{ID: 1, Proto: decode.ProtoAMQP10}
	d := New(conn, opt, func(u *decode.Unit) { units = append(units, u) })
	now := time.Unix(0, 0)
	for _, f := range feeds {
		b := f.data
		for len(b) > 0 {
			n := len(b)
			if chunk > 0 && n > chunk {
				n = chunk
			}
			d.Feed(f.dir, b[:n], now)
			b = b[n:]
		}
	}
	d.End(decode.DirF, now)
	d.End(decode.DirB, now)
	return units
}

type feed struct {
	dir  decode.Dir
	data []byte
}

func fw(b []byte) feed { return feed{decode.DirF, b} }
func bw(b []byte) feed { return feed{decode.DirB, b} }

// dumpFields renders a field tree as indented JSON for failure messages.
func dumpFields(fs []*decode.Field) string {
	type node struct {
		Key, Name, Text, Enc string
		Off, Len             int
		Kids                 []any `json:",omitempty"`
	}
	var conv func(f *decode.Field) any
	conv = func(f *decode.Field) any {
		n := node{Key: f.Key, Name: f.Name, Text: f.Text(), Enc: f.Encoding, Off: f.Offset, Len: f.Length}
		for _, k := range f.Kids {
			n.Kids = append(n.Kids, conv(k))
		}
		return n
	}
	var out []any
	for _, f := range fs {
		out = append(out, conv(f))
	}
	b, _ := json.MarshalIndent(out, "", " ")
	return string(b)
}

// needPeer skips a test that needs a real peer, or fails it under CI=true.
func needPeer(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but %s", why)
	}
	t.Skip(why)
}
