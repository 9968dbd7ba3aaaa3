package compsim_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/pgwire"
	"github.com/wiretap-dev/wiretap/decode/pgwire/compsim"
)

func session(rows int) []compsim.Message {
	var msgs []compsim.Message
	add := func(b []byte) { msgs = append(msgs, compsim.Message{Raw: b, TxEnd: b[0] == 'Z' && b[5] == 'I'}) }
	add((&pgwire.Authentication{}).Encode(nil))
	add((&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(nil))
	for q := 0; q < 5; q++ {
		add((&pgwire.RowDescription{Fields: []pgwire.FieldDescription{{Name: []byte("a"), TypeOID: 25, TypeModifier: -1}}}).Encode(nil))
		for i := 0; i < rows; i++ {
			add((&pgwire.DataRow{Values: [][]byte{[]byte("row number " + strconv.Itoa(i) + " of a compressible result")}}).Encode(nil))
		}
		add(pgwire.AppendMessage(nil, 'C', []byte("SELECT "+strconv.Itoa(rows)+"\x00")))
		add((&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(nil))
	}
	return msgs
}

func TestSimulate(t *testing.T) {
	conns := [][]compsim.Message{session(500), session(3)}
	res, err := compsim.Simulate(conns, compsim.StandardConfigs())
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 21 {
		t.Fatalf("%d results, want 21", len(res))
	}
	var plain [2]int64
	for i, c := range conns {
		for _, m := range c {
			plain[i] += int64(len(m.Raw))
		}
	}
	by := map[string]compsim.Result{}
	for _, r := range res {
		by[r.Config.String()] = r
		if r.Total != r.PerConn[0]+r.PerConn[1] {
			t.Errorf("%v: total %d != sum of connections", r.Config, r.Total)
		}
	}
	if n := by["none"]; n.PerConn[0] != plain[0] || n.PerConn[1] != plain[1] {
		t.Errorf("none: %v, want %v", n.PerConn, plain)
	}
	for _, a := range []string{"lz4", "zstd"} {
		one, batch := by[a+" msgs=1"], by[a+" msgs=2000"]
		if batch.PerConn[0] >= plain[0]/3 {
			t.Errorf("%s msgs=2000 saved too little on a compressible result: %d of %d", a, batch.PerConn[0], plain[0])
		}
		if one.PerConn[0] <= batch.PerConn[0] {
			t.Errorf("%s: one message per container (%d) should cost more than 2000 (%d)", a, one.PerConn[0], batch.PerConn[0])
		}
	}
	var b bytes.Buffer
	if err := compsim.WriteTable(&b, []int{1, 2}, res); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(b.String()), "\n"); len(lines) != 22 || !strings.Contains(lines[1], strconv.FormatInt(plain[0]+plain[1], 10)) {
		t.Errorf("table:\n%s", b.String())
	}
}

// TestEncoderRules: never-compressed messages go out as they are, after a
// flush; the startup phase is not compressed; a transaction frame ends
// with its own container before ReadyForQuery.
func TestEncoderRules(t *testing.T) {
	msgs := session(2)
	s, err := compsim.EncodeStream(msgs, compsim.Config{Algorithm: pgwire.CompressionZstd, TxFrame: true})
	if err != nil {
		t.Fatal(err)
	}
	var seq []string
	for off := 0; off < len(s); {
		typ, l, ok := pgwire.ReadHeader(s[off:])
		if !ok {
			t.Fatal("truncated stream")
		}
		e := string(typ)
		if typ == 'z' {
			var m pgwire.CompressedMessages
			if err := m.Decode(s[off+5 : off+1+int(l)]); err != nil {
				t.Fatal(err)
			}
			e = "z" + string(m.Types)
		}
		seq = append(seq, e)
		off += 1 + int(l)
	}
	got := strings.Join(seq, " ")
	if !strings.HasPrefix(got, "R Z zTDD C z Z zTDD C z Z") {
		t.Errorf("sequence: %s", got)
	}
}

func TestCollector(t *testing.T) {
	var c compsim.Collector
	c1, c2 := &decode.Conn{ID: 1}, &decode.Conn{ID: 2}
	rfq := (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(nil)
	c.Add(&decode.Unit{Conn: c2, Proto: decode.ProtoPgSQL, Dir: decode.DirB, Type: "ReadyForQuery", Raw: rfq, Len: len(rfq)})
	c.Add(&decode.Unit{Conn: c1, Proto: decode.ProtoPgSQL, Dir: decode.DirF, Type: "Query", Raw: rfq, Len: len(rfq)})
	c.Add(&decode.Unit{Conn: c1, Proto: decode.ProtoPgSQL, Dir: decode.DirB, Type: "CompressedMessages", Raw: rfq, Len: len(rfq)})
	ids, msgs := c.Conns()
	if len(ids) != 1 || ids[0] != 2 || len(msgs[0]) != 1 || !msgs[0][0].TxEnd {
		t.Errorf("ids %v msgs %v", ids, msgs)
	}
}
