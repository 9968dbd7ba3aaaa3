package amqp10

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// TestLateMessages checks Options.LateSummaries and the Completer: a
// message that came whole in its transfer's bytes is attached unparsed,
// (joined first when several transfers carried it), and Complete gives
// its unit the summary, message-id, warnings,
// checksum verdict and message the decoder gives without the option,
// with field trees seldom wanted or not, the input stable or copied; a
// message left in pieces (stable input, fields seldom wanted) is
// finished by the decoder as before. The messages are those FuzzPieces starts from: checksums
// right and wrong, every kind of message-id, corrupt and cut ones.
func TestLateMessages(t *testing.T) {
	msgs, _ := piecedMessages(t)
	stream := []byte("AMQP\x00\x01\x00\x00")
	for i, m := range msgs {
		if len(m) == 0 {
			continue
		}
		if i%7 == 3 && len(m) > 10 {
			// In two transfers: reassembled, not left to the stage.
			h := len(m) / 2
			stream = append(stream, transferFrame(0, 0, uint32(i), true, m[:h])...)
			stream = append(stream, transferFrame(0, 0, uint32(i), false, m[h:])...)
			continue
		}
		stream = append(stream, transferFrame(0, 0, uint32(i), false, m)...)
	}
	run := func(late, seldom, stable bool) []*decode.Unit {
		opt := decode.DefaultOptions()
		opt.LateSummaries, opt.FieldsSeldom, opt.StableInput = late, seldom, stable
		opt.MaxFrame = 1 << 20
		var units []*decode.Unit
		d := New(&decode.Conn{ID: 1, Proto: decode.ProtoAMQP10}, opt, func(u *decode.Unit) { units = append(units, u) })
		if stable {
			d.Feed(decode.DirF, stream, time.Unix(0, 0))
		} else {
			for off := 0; off < len(stream); off += 3000 {
				d.Feed(decode.DirF, append([]byte(nil), stream[off:min(off+3000, len(stream))]...), time.Unix(0, 0))
			}
		}
		d.End(decode.DirF, time.Unix(0, 0))
		return units
	}
	// Reassembled messages finished by the stage (joined at once) and
	// by the decoder (left in pieces, read in place).
	joinedLate, pieces := 0, 0
	for _, seldom := range []bool{true, false} {
		for _, stable := range []bool{true, false} {
			want, got := run(false, seldom, stable), run(true, seldom, stable)
			if len(got) != len(want) {
				t.Fatalf("seldom=%v stable=%v: %d units late, %d at once", seldom, stable, len(got), len(want))
			}
			opt := decode.DefaultOptions()
			opt.FieldsSeldom = seldom
			z := NewCompleter(opt)
			left := 0
			for k, u := range got {
				if cm, _ := u.Ext().(*CompletedMessage); cm != nil {
					switch {
					case cm.late && cm.Frames > 1:
						joinedLate++
						left++
					case cm.late:
						left++
					case cm.Frames > 1:
						pieces++
					}
				}
				z.Complete(u)
				w := want[k]
				if u.Summary != w.Summary || u.MessageID() != w.MessageID() || !reflect.DeepEqual(u.Warnings(), w.Warnings()) ||
					!reflect.DeepEqual(u.Checksum(), w.Checksum()) {
					t.Fatalf("seldom=%v stable=%v unit %d:\nlate    %q %q %q %+v\nat once %q %q %q %+v", seldom, stable, k+1,
						u.Summary, u.MessageID(), u.Warnings(), u.Checksum(), w.Summary, w.MessageID(), w.Warnings(), w.Checksum())
				}
				um, wm := MessageOf(u), MessageOf(w)
				if (um == nil) != (wm == nil) {
					t.Fatalf("seldom=%v stable=%v unit %d: a message late %v, at once %v", seldom, stable, k+1, um != nil, wm != nil)
				}
				if um != nil && (!bytes.Equal(um.Bytes, wm.Bytes) || um.late || !reflect.DeepEqual(um.WithSections().Message, wm.WithSections().Message)) {
					t.Fatalf("seldom=%v stable=%v unit %d: the messages differ:\nlate    %+v\nat once %+v", seldom, stable, k+1, um.Message, wm.Message)
				}
				z.Complete(u) // once finished, left as it is
				if u.Summary != w.Summary || len(u.Warnings()) != len(w.Warnings()) {
					t.Fatalf("seldom=%v stable=%v unit %d: finished twice", seldom, stable, k+1)
				}
			}
			if left < len(msgs)/2 {
				t.Fatalf("seldom=%v stable=%v: %d messages left to the stage: the test no longer tells", seldom, stable, left)
			}
		}
	}
	if joinedLate == 0 || pieces == 0 {
		t.Fatalf("%d reassembled messages left to the stage, %d finished in pieces: the test no longer tells", joinedLate, pieces)
	}
}
