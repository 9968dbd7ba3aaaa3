package pipeline

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
	a "github.com/wiretap-dev/wiretap/decode/amqp10"
	pg "github.com/wiretap-dev/wiretap/decode/pgwire"
)

// evictionScene feeds, under a 2 MiB budget (1 MiB a connection): an
// AMQP 1.0 delivery of 800 KiB in progress on connection 1 (the oldest
// partial state), a PostgreSQL zstd context of about 320 KiB on
// connection 2, heartbeats on connection 3 (idleTicks of them, keeping
// every other connection quiet), then a second AMQP 1.0 delivery on
// connection 4 that needs room.
func evictionScene(t *testing.T, heartbeats int) (*decode.Budget, []*decode.Unit) {
	t.Helper()
	opt := decode.DefaultOptions()
	opt.Budget = decode.NewBudget(2 << 20)
	var warnings []*decode.Unit
	p := New(Config{Options: opt, Sink: func(u *decode.Unit) {
		if u.Type == "warning" {
			warnings = append(warnings, u)
		}
	}})
	amqp10 := func(fl *capture.Flow, size int) {
		hdr := []byte("AMQP\x00\x01\x00\x00")
		open := a.AppendFrame(nil, a.FrameTypeAMQP, 0, a.AppendComposite(nil, a.DescriptorOpen, a.AppendString(nil, "c"), a.AppendString(nil, "h"), a.AppendUint(nil, 1<<20)))
		begin := a.AppendFrame(nil, a.FrameTypeAMQP, 0, a.AppendComposite(nil, a.DescriptorBegin, a.AppendNull(nil), a.AppendUint(nil, 0), a.AppendUint(nil, 100), a.AppendUint(nil, 100)))
		p.Data(fl, true, append(append(bytes.Clone(hdr), open...), begin...), t0)
		p.Data(fl, false, append(append(bytes.Clone(hdr), open...), begin...), t0)
		chunk := bytes.Repeat([]byte{'x'}, 50<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			tr := a.AppendComposite(nil, a.DescriptorTransfer, a.AppendUint(nil, 0), a.AppendUint(nil, 0), a.AppendBinary(nil, []byte{1}), a.AppendUint(nil, 0), a.AppendBool(nil, false), a.AppendBool(nil, true))
			p.Data(fl, true, a.AppendFrame(nil, a.FrameTypeAMQP, 0, tr, chunk), t0)
		}
	}
	amqp10(flow(1, "10.0.0.2:40001", "10.0.0.1:5672", true), 800<<10)

	pgFlow := flow(2, "10.0.0.2:40002", "10.0.0.1:5432", true)
	startup := []byte{0, 0, 0, 0, 0, 3, 0, 0}
	startup = append(startup, "user\x00u\x00\x00"...)
	binary.BigEndian.PutUint32(startup, uint32(len(startup)))
	p.Data(pgFlow, true, startup, t0)
	p.Data(pgFlow, false, pg.AppendMessage(pg.AppendMessage(nil, 'R', []byte{0, 0, 0, 0}), 'Z', []byte{'I'}), t0)
	var zb bytes.Buffer
	enc, _ := zstd.NewWriter(&zb, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(64<<10))
	enc.Write((&pg.DataRow{Values: [][]byte{[]byte("row")}}).Encode(nil))
	enc.Flush() // the frame goes on: its context stays
	p.Data(pgFlow, false, (&pg.CompressedMessages{Algorithm: pg.CompressionZstd, Types: []byte("D"), Data: zb.Bytes()}).Encode(nil), t0)

	hb := flow(3, "10.0.0.2:40003", "10.0.0.1:5672", true)
	p.Data(hb, true, []byte("AMQP\x00\x00\x09\x01"), t0)
	for range heartbeats {
		p.Data(hb, true, amqp091.AppendHeartbeatFrame(nil), t0)
	}
	b := opt.Budget
	if b.Evictions() != 0 {
		t.Fatalf("%d evictions before the last delivery", b.Evictions())
	}
	amqp10(flow(4, "10.0.0.2:40004", "10.0.0.1:5672", true), 1000<<10)
	if b.High() > b.Limit() {
		t.Errorf("high-water %d past the budget %d", b.High(), b.Limit())
	}
	p.Finish()
	if b.Used() != 0 {
		t.Errorf("%d bytes left charged", b.Used())
	}
	return b, warnings
}

// TestEvictionIdleWindowFirst: through the real decoders, the window of
// a connection quiet for IdleTicks goes before the older partial
// delivery of another connection; while that connection is not idle, the
// oldest partial delivery goes instead.
func TestEvictionIdleWindowFirst(t *testing.T) {
	b, ws := evictionScene(t, decode.IdleTicks+10)
	if got := b.EvictionsByKind(); got != (decode.EvictionCounts{IdleWindows: 1}) {
		t.Fatalf("evictions %+v, want the idle connection's window alone", got)
	}
	if len(ws) != 1 || ws[0].Conn.ID != 2 || !strings.Contains(ws[0].Warnings()[0], "zstd decompression context dropped: the memory budget (--max-memory 2MiB) was reached") ||
		!strings.Contains(ws[0].Warnings()[0], "the largest window of an idle connection going first") {
		t.Errorf("warning units %v, want one on conn 2 saying its idle window went first", warningTexts(ws))
	}

	b, ws = evictionScene(t, 10)
	if got := b.EvictionsByKind(); got != (decode.EvictionCounts{Partials: 1}) {
		t.Fatalf("evictions %+v, want the oldest partial delivery alone", got)
	}
	if len(ws) != 1 || ws[0].Conn.ID != 1 || !strings.Contains(ws[0].Warnings()[0], "the oldest partial state going first") {
		t.Errorf("warning units %v, want one on conn 1 saying its delivery went first", warningTexts(ws))
	}
}

func warningTexts(us []*decode.Unit) []string {
	var s []string
	for _, u := range us {
		s = append(s, "conn "+strconv.Itoa(u.Conn.ID)+": "+strings.Join(u.Warnings(), "; "))
	}
	return s
}
