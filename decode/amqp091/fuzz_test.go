package amqp091

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/output"
	"github.com/wiretap-dev/wiretap/internal/findcheck"
	"github.com/wiretap-dev/wiretap/internal/stablecheck"
)

// FuzzParseFrame checks that any input either parses into a frame whose
// method or content header survives a round trip, or fails cleanly.
func FuzzParseFrame(f *testing.F) {
	for _, s := range [][]byte{publishFrame, ackFrame, channelCloseFrame, headerFrame, AppendHeartbeatFrame(nil)} {
		f.Add(s)
	}
	for _, m := range sampleMethods {
		f.Add(AppendMethodFrame(nil, 1, m))
	}
	var md MethodDecoder
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, n, err := ParseFrame(data, 1<<20)
		if err != nil {
			return
		}
		if n > len(data) || string(AppendFrame(nil, fr.Type, fr.Channel, fr.Payload)) != string(data[:n]) {
			t.Fatalf("frame of %d bytes does not re-encode", n)
		}
		switch fr.Type {
		case FrameMethod:
			m, err := md.Decode(fr.Payload)
			if err != nil {
				return
			}
			enc := m.AppendTo(nil)
			again, err := ParseMethod(enc)
			if err != nil {
				t.Fatalf("%s: re-encoded method does not decode: %v", m.Name(), err)
			}
			if !reflect.DeepEqual(normalize(again), normalize(m)) {
				t.Fatalf("%s: round trip\n%#v\n%#v", m.Name(), again, m)
			}
		case FrameHeader:
			var h, h2 ContentHeader
			if err := h.DecodeFromBytes(fr.Payload); err != nil {
				return
			}
			if err := h2.DecodeFromBytes(h.AppendTo(nil)); err != nil {
				t.Fatalf("re-encoded content header does not decode: %v", err)
			}
			h.Properties.Flags &^= 1
			if !reflect.DeepEqual(normalize(&h), normalize(&h2)) {
				t.Fatalf("content header round trip\n%#v\n%#v", h, h2)
			}
		}
	})
}

// normalize maps empty slices to nil so a round trip through the encoder
// compares equal.
func normalize(v any) any {
	rv := reflect.ValueOf(v).Elem()
	var walk func(reflect.Value)
	walk = func(rv reflect.Value) {
		switch rv.Kind() {
		case reflect.Struct:
			for i := 0; i < rv.NumField(); i++ {
				if rv.Field(i).CanSet() {
					walk(rv.Field(i))
				}
			}
		case reflect.Slice:
			if rv.Len() == 0 {
				rv.Set(reflect.Zero(rv.Type()))
			}
		}
	}
	walk(rv)
	return v
}

// FuzzDecoder feeds arbitrary bytes, split at arbitrary points and with a
// gap, through the per-connection decoder: it must not panic, must account
// for its units' bytes, and must build every field tree.
func FuzzDecoder(f *testing.F) {
	client, server := conversation(2, 300, 256)
	f.Add(client, uint16(1460), uint16(0))
	f.Add(server, uint16(100), uint16(3000))
	f.Add(append([]byte("AMQP\x00\x00\x09\x01garbage"), publishFrame...), uint16(3), uint16(0))
	f.Add([]byte{3, 0, 1, 0xff, 0xff, 0xff, 0xff, 1, 2}, uint16(1), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, chunk, gapAt uint16) {
		if chunk == 0 {
			chunk = 1
		}
		opt := decode.DefaultOptions()
		opt.MaxFrame = 1 << 16
		opt.MaxMessage = 1 << 12
		var units []*decode.Unit
		d := New(&decode.Conn{ID: 1}, opt, func(u *decode.Unit) { units = append(units, u) })
		var calls []stablecheck.Call
		for _, dir := range []decode.Dir{decode.DirF, decode.DirB} {
			for off := 0; off < len(data); off += int(chunk) {
				end := min(off+int(chunk), len(data))
				if gapAt != 0 && off <= int(gapAt) && int(gapAt) < end {
					d.Feed(dir, data[off:gapAt], t0)
					d.Gap(dir, 5, t0)
					calls = append(calls, stablecheck.Call{Dir: dir, Data: data[off:gapAt]}, stablecheck.Call{Dir: dir, N: 5, IsGap: true})
					continue
				}
				d.Feed(dir, data[off:end], t0)
				calls = append(calls, stablecheck.Call{Dir: dir, Data: data[off:end]})
			}
			d.End(dir, t0)
			calls = append(calls, stablecheck.Call{Dir: dir, End: true})
		}
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
		// Summaries left to the Summarizer come out as the decoder makes them.
		late := *opt
		late.LateSummaries = true
		var lates []*decode.Unit
		stablecheck.Replay(New(&decode.Conn{ID: 1}, &late, func(u *decode.Unit) { lates = append(lates, u) }), calls)
		if len(lates) != len(units) {
			t.Fatalf("%d units with late summaries, %d without", len(lates), len(units))
		}
		var z Summarizer
		for i, u := range lates {
			z.Summarize(u)
			if u.Summary != units[i].Summary {
				t.Fatalf("unit %d: summarised %q, the decoder made %q", i+1, u.Summary, units[i].Summary)
			}
		}
		for _, u := range units {
			if u.Len < len(u.Raw) || u.Offset < 0 || u.Offset+int64(u.Len) > int64(len(data))+5 {
				t.Fatalf("%s: offset %d len %d raw %d of %d bytes", u.Type, u.Offset, u.Len, len(u.Raw), len(data))
			}
			decode.Walk(u.Fields(), func(fl *decode.Field) bool {
				if fl.Offset < 0 || fl.Offset+fl.Length > len(u.Raw) {
					t.Fatalf("%s: field %s range %d+%d outside %d bytes", u.Type, fl.Key, fl.Offset, fl.Length, len(u.Raw))
				}
				return true
			})
			if err := findcheck.Check(u); err != nil {
				t.Fatal(err)
			}
			// The direct JSON (a body in pieces among others) is the tree's.
			if fast, tree := output.AppendJSON(nil, u, output.JSONOptions{}), output.AppendJSON(nil, u, output.JSONOptions{TreeOnly: true}); !bytes.Equal(fast, tree) {
				t.Fatalf("%s: direct JSON differs from the tree's:\n%s\n%s", u.Type, fast, tree)
			}
		}
	})
}
