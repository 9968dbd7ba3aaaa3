package pipeline

import (
	"bytes"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
	a "github.com/wiretap-dev/wiretap/decode/amqp10"
)

// TestStageCountsWarnings: a connection's count of units with warnings
// (decode.Conn.Warnings) takes in the warning the immutability check
// raises on a delivery whose bare message the broker changed, the
// delivery's only warning here (no checksum footer to fail as well),
// with the stage inline and with it on the caller's goroutine.
func TestStageCountsWarnings(t *testing.T) {
	hdr := []byte("AMQP\x00\x01\x00\x00")
	open := a.AppendFrame(nil, a.FrameTypeAMQP, 0, a.AppendComposite(nil, a.DescriptorOpen, a.AppendString(nil, "c"), a.AppendString(nil, "h")))
	begin := a.AppendFrame(nil, a.FrameTypeAMQP, 0, a.AppendComposite(nil, a.DescriptorBegin, a.AppendNull(nil), a.AppendUint(nil, 0), a.AppendUint(nil, 100), a.AppendUint(nil, 100)))
	transfer := func(body string) []byte {
		tr := a.AppendComposite(nil, a.DescriptorTransfer, a.AppendUint(nil, 0), a.AppendUint(nil, 0), a.AppendBinary(nil, []byte{1}), a.AppendUint(nil, 0), a.AppendBool(nil, true))
		msg := a.AppendDescribed(nil, a.DescriptorProperties, a.AppendList(nil, a.AppendString(nil, "m-1")))
		msg = a.AppendDescribed(msg, a.DescriptorData, a.AppendBinary(nil, []byte(body)))
		return a.AppendFrame(nil, a.FrameTypeAMQP, 0, tr, msg)
	}
	feed := func(p *Pipeline) {
		start := append(append(bytes.Clone(hdr), open...), begin...)
		pub := flow(1, "10.0.0.2:40001", "10.0.0.1:5672", true)
		p.Data(pub, true, start, t0)
		p.Data(pub, false, start, t0)
		p.Data(pub, true, transfer("hello"), t0)
		sub := flow(2, "10.0.0.3:40002", "10.0.0.1:5672", true)
		p.Data(sub, true, start, t0)
		p.Data(sub, false, start, t0)
		p.Data(sub, false, transfer("hellp"), t0)
		p.Finish()
	}
	check := func(how string, p *Pipeline, units []*decode.Unit) {
		t.Helper()
		warned := map[int]int{}
		modified := 0
		for _, u := range units {
			ws := u.Warnings()
			if len(ws) > 0 {
				warned[u.Conn.ID]++
			}
			if len(ws) == 1 && strings.HasPrefix(ws[0], "bare message modified by the broker") {
				modified++
			}
		}
		if modified != 1 || warned[2] != 1 {
			t.Fatalf("%s: %d deliveries warned of a modified bare message alone, conn 2 has %d units with warnings; want 1 and 1", how, modified, warned[2])
		}
		for _, c := range p.Conns() {
			if c.Warnings != warned[c.ID] {
				t.Errorf("%s: conn %d counts %d units with warnings, has %d", how, c.ID, c.Warnings, warned[c.ID])
			}
		}
	}

	var units []*decode.Unit
	p := New(Config{Sink: func(u *decode.Unit) { units = append(units, u) }})
	feed(p)
	check("inline", p, units)

	// Staged, as read stages: only the units NeedsStage names go to the
	// stage, the others' warnings are counted by emit (a PostgreSQL
	// connection caught mid-stream: its first unit warns so).
	units = nil
	var some *Pipeline
	some = New(Config{Staged: true, Sink: func(u *decode.Unit) {
		if NeedsStage(u) {
			some.Stage(u)
		}
		units = append(units, u)
	}})
	pg := flow(3, "10.0.0.4:40003", "10.0.0.5:5432", false)
	query := []byte("Q\x00\x00\x00\x0dselect 1\x00")
	some.Data(pg, true, append(append([]byte(nil), query...), query...), t0)
	feed(some)
	check("staged as read stages", some, units)
	if u := units[0]; u.Conn.ID != 3 || len(u.Warnings()) == 0 || u.Conn.Warnings != 1 {
		t.Errorf("the PostgreSQL connection's first unit: conn %d, warnings %q; its count %d, want 1", u.Conn.ID, u.Warnings(), u.Conn.Warnings)
	}

	units = nil
	var staged *Pipeline
	staged = New(Config{Staged: true, Sink: func(u *decode.Unit) {
		staged.Stage(u)
		units = append(units, u)
	}})
	feed(staged)
	check("staged", staged, units)
}
