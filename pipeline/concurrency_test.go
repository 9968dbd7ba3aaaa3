package pipeline

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/output"
)

// TestFieldsOnAnotherGoroutine checks the contract the TUI and the
// parallel printer rely on: once emitted, a unit's Dissect reads nothing the
// decoder goes on to change, so field trees can be built on another
// goroutine while decoding continues. Run with -race.
func TestFieldsOnAnotherGoroutine(t *testing.T) {
	files, _ := filepath.Glob("../testdata/*.pcap*")
	for _, path := range files {
		ch := make(chan *decode.Unit, 1)
		done := make(chan int)
		go func() {
			var buf []byte
			n := 0
			for u := range ch {
				buf = output.AppendJSON(buf[:0], u, output.JSONOptions{Raw: true})
				n++
			}
			done <- n
		}()
		p := New(Config{Sink: func(u *decode.Unit) { ch <- u }})
		capture.ReadFile(path, p, nil)
		p.Finish()
		close(ch)
		if n := <-done; n == 0 {
			t.Errorf("%s: no units", path)
		}
	}
}

// TestStaged checks Config.Staged: with the stage (the immutability
// check, the late summaries and messages) run by the caller on a
// goroutine of its own, after the sink, every unit renders as it does
// with the stage inline, the connections count the same units with
// warnings and with errors and the same checksum verdicts, and the
// check's report is the same. The stage is called as read calls it, only
// for the units NeedsStage names (those of AMQP connections), and for
// every other unit of the others too, which must change nothing. Run
// with -race: the stage annotates units the decoder has emitted while it
// goes on decoding, and counts them for the AMQP connections while the
// decoder counts the others'.
func TestStaged(t *testing.T) {
	files, _ := filepath.Glob("../testdata/*.pcap*")
	// DataRows whose columns disagree with their count: units with
	// errors.
	files = append(files, "../testdata/hostile/pgsql-datarow-count.pcapng")
	modified, badRows := 0, 0
	for _, path := range files {
		var inline [][]byte
		var units []*decode.Unit
		p := New(Config{Sink: func(u *decode.Unit) {
			inline = append(inline, output.AppendJSON(nil, u, output.JSONOptions{Raw: true}))
			units = append(units, u)
		}})
		capture.ReadFile(path, p, nil)
		p.Finish()
		want := p.Immutability().Summary()
		modified += p.Immutability().Report().Modified
		// Every connection counts its units with warnings, those the
		// immutability check raised among them.
		warned, erred := map[int]int{}, map[int]int{}
		verdicts := map[int][len(decode.Conn{}.Checksums)]int{}
		for _, u := range units {
			if ck := u.Checksum(); u.Conn != nil && ck != nil {
				v := verdicts[u.Conn.ID]
				v[ck.Status]++
				verdicts[u.Conn.ID] = v
			}
			if u.Conn != nil && len(u.Warnings()) > 0 {
				warned[u.Conn.ID]++
			}
			if u.Conn != nil && u.Err() != "" {
				erred[u.Conn.ID]++
			}
			if u.Type == "DataRow" && u.Err() != "" {
				badRows++
			}
		}
		checkWarned := func(how string, p *Pipeline) {
			for _, c := range p.Conns() {
				if c.Warnings != warned[c.ID] {
					t.Errorf("%s %s: conn %d counts %d units with warnings, has %d", path, how, c.ID, c.Warnings, warned[c.ID])
				}
				if c.Errors != erred[c.ID] {
					t.Errorf("%s %s: conn %d counts %d units with errors, has %d", path, how, c.ID, c.Errors, erred[c.ID])
				}
				if c.Checksums != verdicts[c.ID] {
					t.Errorf("%s %s: conn %d counts checksum verdicts %v, has %v", path, how, c.ID, c.Checksums, verdicts[c.ID])
				}
			}
		}
		checkWarned("inline", p)

		ch := make(chan *decode.Unit, 64)
		done := make(chan [][]byte)
		var staged *Pipeline
		go func() {
			var got [][]byte
			for u := range ch {
				amqp := u.Conn != nil && (u.Conn.Proto == decode.ProtoAMQP091 || u.Conn.Proto == decode.ProtoAMQP10)
				if NeedsStage(u) != amqp {
					t.Errorf("%s: unit %d of a %v connection: NeedsStage %v", path, u.N, u.Conn.Proto, !amqp)
				}
				if NeedsStage(u) || u.N%2 == 0 {
					staged.Stage(u)
				}
				got = append(got, output.AppendJSON(nil, u, output.JSONOptions{Raw: true}))
			}
			done <- got
		}()
		staged = New(Config{Staged: true, Sink: func(u *decode.Unit) { ch <- u }})
		capture.ReadFile(path, staged, nil)
		staged.Finish()
		close(ch)
		got := <-done
		if len(got) != len(inline) {
			t.Fatalf("%s: %d units staged, %d inline", path, len(got), len(inline))
		}
		for i := range got {
			if string(got[i]) != string(inline[i]) {
				t.Fatalf("%s: unit %d differs:\nstaged: %s\ninline: %s", path, i+1, got[i], inline[i])
			}
		}
		checkWarned("staged", staged)
		if g, w := strings.Join(staged.Immutability().Summary(), "\n"), strings.Join(want, "\n"); g != w {
			t.Errorf("%s: immutability summary staged:\n%s\ninline:\n%s", path, g, w)
		}
	}
	if modified == 0 {
		t.Error("no capture in testdata has a bare message the broker modified: the annotation path went untested")
	}
	if badRows == 0 {
		t.Error("no DataRow with an error: the count of errors went untested")
	}
}
