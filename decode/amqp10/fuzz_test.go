package amqp10

import (
	"reflect"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/internal/findcheck"
	"github.com/wiretap-dev/wiretap/internal/stablecheck"
)

// FuzzScan feeds arbitrary bytes to the type decoder: Scan, item
// iteration, composites, messages and the materialiser must never panic,
// and whatever Scan accepts must lie within the input.
func FuzzScan(f *testing.F) {
	f.Add(rabbitSASLMechanisms[8:])
	f.Add(protonSASLInit[8:])
	msg, _ := buildMessage(CRC32, false, section{DescriptorProperties, AppendList(nil, AppendString(nil, "id"))}, section{DescriptorData, AppendBinary(nil, []byte("x"))})
	f.Add(msg)
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Scan(b, 0)
		if err == nil {
			if v.Start != 0 || v.End > len(b) || v.End <= v.Start || v.Data > v.End {
				t.Fatalf("value out of bounds: %+v (len %d)", v, len(b))
			}
			it := v.Items(b)
			for it.Next() {
				if it.Value.End > v.End {
					t.Fatalf("item past its container")
				}
			}
			var c Composite
			c.Set(b, v)
			Materialize(b, 0, "v")
		}
		var m Message
		ParseMessage(b, &m)
		if m.BareStart > m.BareEnd || m.BareEnd > len(b) {
			t.Fatalf("bare range %d..%d of %d", m.BareStart, m.BareEnd, len(b))
		}
		m.VerifyChecksum(b)
		m.MessageID(b)
		if len(b) > 0 {
			locate(b, len(b)/2)
		}
	})
}

// FuzzDecoder drives the frame and transfer state machine: the input is
// split between the two directions at split and fed in chunks of chunk
// bytes; every unit's field tree is built and the finder checked against
// it.
func FuzzDecoder(f *testing.F) {
	registerKnownNames()
	hdr := []byte("AMQP\x00\x01\x00\x00")
	msg, _ := buildMessage(Adler32, false, section{DescriptorProperties, AppendList(nil, AppendString(nil, "id"))}, section{DescriptorData, AppendBinary(nil, make([]byte, 40))})
	multi := append(append(append([]byte{}, hdr...), transferFrame(0, 0, 1, true, msg[:20])...), transferFrame(0, 0, 1, false, msg[20:])...)
	f.Add(multi, uint16(len(multi)), uint8(3))
	single := append(append([]byte{}, hdr...), transferFrame(0, 0, 1, false, msg)...)
	f.Add(single, uint16(len(single)), uint8(0))
	f.Add(append(append([]byte("AMQP\x03\x01\x00\x00"), protonSASLInit...), rabbitSASLMechanisms...), uint16(43), uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, split uint16, chunk uint8) {
		s := int(split)
		if s > len(b) {
			s = len(b)
		}
		opt := decode.DefaultOptions()
		opt.MaxMessage = 1 << 16
		opt.MaxFrame = 1 << 16
		opt.MaxBuffered = 1 << 17
		var units []*decode.Unit
		d := New(&decode.Conn{ID: 1}, opt, func(u *decode.Unit) { units = append(units, u) })
		imm := NewImmutability()
		var calls []stablecheck.Call
		for dir, part := range [][]byte{b[:s], b[s:]} {
			for len(part) > 0 {
				n := len(part)
				if chunk > 0 && int(chunk) < n {
					n = int(chunk)
				}
				d.Feed(decode.Dir(dir), part[:n], time.Time{})
				calls = append(calls, stablecheck.Call{Dir: decode.Dir(dir), Data: part[:n]})
				part = part[n:]
				if chunk >= 0xf0 && len(part) > 0 {
					d.Gap(decode.Dir(dir), int(chunk&0x0f), time.Time{})
					calls = append(calls, stablecheck.Call{Dir: decode.Dir(dir), N: int(chunk & 0x0f), IsGap: true})
					part = part[min(len(part), int(chunk&0x0f)):]
				}
			}
		}
		d.End(decode.DirF, time.Time{})
		d.End(decode.DirB, time.Time{})
		calls = append(calls, stablecheck.Call{Dir: decode.DirF, End: true}, stablecheck.Call{Dir: decode.DirB, End: true})
		// With stable input, the same units, the input never written.
		if err := stablecheck.Check(New, *opt, calls); err != nil {
			t.Fatal(err)
		}
		// And as `read` decodes: transient, seldom asking for fields.
		transient := *opt
		transient.Transient, transient.FieldsSeldom = true, true
		if err := stablecheck.Check(New, transient, calls); err != nil {
			t.Fatal(err)
		}
		// And with units recycled once released (decode.Arena).
		recycled := transient
		recycled.Arena = decode.NewArena(0)
		if err := stablecheck.Check(New, recycled, calls); err != nil {
			t.Fatal(err)
		}
		// And with the messages left to a Completer, as `read`'s stage
		// finishes them: the same summaries, ids, warnings and verdicts.
		late := transient
		late.LateSummaries = true
		var lunits []*decode.Unit
		stablecheck.Replay(New(&decode.Conn{ID: 1}, &late, func(u *decode.Unit) { lunits = append(lunits, u) }), calls)
		if len(lunits) != len(units) {
			t.Fatalf("%d units with late messages, %d without", len(lunits), len(units))
		}
		z := NewCompleter(&late)
		for i, u := range lunits {
			z.Complete(u)
			w := units[i]
			if u.Summary != w.Summary || u.MessageID() != w.MessageID() || !reflect.DeepEqual(u.Warnings(), w.Warnings()) ||
				!reflect.DeepEqual(u.Checksum(), w.Checksum()) {
				t.Fatalf("unit %d:\nlate    %q %q %q %+v\nat once %q %q %q %+v", i+1, u.Summary, u.MessageID(), u.Warnings(), u.Checksum(),
					w.Summary, w.MessageID(), w.Warnings(), w.Checksum())
			}
		}
		for _, u := range units {
			imm.Observe(u)
			fs := u.Fields()
			for _, fl := range fs {
				decode.Walk([]*decode.Field{fl}, func(x *decode.Field) bool {
					if x.Length > 0 && (x.Offset < 0 || x.Offset+x.Length > len(u.Raw)) {
						t.Fatalf("%s: field %s range %d+%d outside raw %d", u.Summary, x.Key, x.Offset, x.Length, len(u.Raw))
					}
					return true
				})
			}
			// A checksum verdict's range is exactly what was summed.
			if ck := u.Checksum(); ck != nil && ck.Status != decode.ChecksumAbsent {
				if f := decode.Find(fs, "amqp.checksum"); f != nil && f.Length > 0 {
					if got := sumOf(ck.Algorithm, u.Raw[f.Offset:f.Offset+f.Length]); got != ck.Actual {
						t.Fatalf("%s: amqp.checksum covers bytes summing to %#x, actual %#x", u.Summary, got, ck.Actual)
					}
				}
			}
			// Every lookup the finder answers agrees with the tree.
			if err := findcheck.Check(u); err != nil {
				t.Fatal(err)
			}
		}
		imm.Summary()
	})
}
