package output_test

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/output"
)

// thawed rebuilds u as a store does from its frozen form: the plain fields
// copied (its bytes into a buffer of their own), the rest from what
// AppendFrozen wrote.
func thawed(t *testing.T, u *decode.Unit, frozen []byte) *decode.Unit {
	t.Helper()
	v := &decode.Unit{N: u.N, Conn: u.Conn, Offset: u.Offset, Len: u.Len, Raw: slices.Clone(u.Raw),
		Type: u.Type, Summary: u.Summary, Parent: u.Parent, Channel: u.Channel, Dir: u.Dir,
		Proto: u.Proto, HasChannel: u.HasChannel, Secret: u.Secret}
	v.SetUnixNano(u.UnixNano())
	if err := v.Thaw(slices.Clone(frozen)); err != nil {
		t.Fatalf("unit %d (%s): thaw: %v", u.N, u.Type, err)
	}
	return v
}

// TestFrozenUnitsRenderTheSame: every unit of every real capture (the
// decoders register all their dissectors) freezes, and the unit rebuilt
// from its frozen form renders the same JSON (fields, raw bytes, notes)
// and the same text line, so a store that keeps units on disk shows what
// the decoder emitted.
func TestFrozenUnitsRenderTheSame(t *testing.T) {
	for _, path := range captures(t) {
		if strings.Contains(path, "/hostile/") {
			continue // their units are few kinds, and slow to decode; TestFastFieldsMatchTree reads them
		}
		limit := 0
		if strings.Contains(path, "/corpus/") {
			limit = 50000
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			us := units(t, path, limit)
			opt := output.JSONOptions{Raw: true, TreeOnly: true}
			var a, b []byte
			for _, u := range us {
				if !u.Frozen() {
					t.Fatalf("unit %d (%s) does not freeze", u.N, u.Type)
				}
				frozen, ok := u.AppendFrozen(nil)
				if !ok {
					t.Fatalf("unit %d (%s): AppendFrozen refused what Frozen accepted", u.N, u.Type)
				}
				v := thawed(t, u, frozen)
				a = output.AppendJSON(a[:0], u, opt)
				b = output.AppendJSON(b[:0], v, opt)
				if !bytes.Equal(a, b) {
					t.Fatalf("unit %d (%s):\nemitted %s\nthawed  %s", u.N, u.Type, a, b)
				}
				fa, oka := u.AppendFieldsJSON(nil, -1)
				if fb, okb := v.AppendFieldsJSON(nil, -1); oka != okb || !bytes.Equal(fa, fb) {
					t.Fatalf("unit %d (%s): fast JSON differs after thawing", u.N, u.Type)
				}
				a = output.AppendText(a[:0], u, us[0].Time())
				b = output.AppendText(b[:0], v, us[0].Time())
				if !bytes.Equal(a, b) {
					t.Fatalf("unit %d (%s): text\n%s\n%s", u.N, u.Type, a, b)
				}
			}
		})
	}
}

// TestThawRejectsGarbage: Thaw meets truncated and corrupted frozen forms
// with an error or a unit, never a panic.
func TestThawRejectsGarbage(t *testing.T) {
	us := units(t, filepath.Join("..", "..", "testdata", "amqp10-goamqp.pcapng"), 300)
	us = append(us, units(t, filepath.Join("..", "..", "testdata", "amqp091-pika.pcapng"), 300)...)
	for _, u := range us {
		frozen, _ := u.AppendFrozen(nil)
		for cut := range len(frozen) {
			v := &decode.Unit{Raw: u.Raw}
			_ = v.Thaw(frozen[:cut])
		}
		for i := range frozen {
			bad := slices.Clone(frozen)
			bad[i] ^= 0xff
			v := &decode.Unit{Raw: u.Raw}
			if v.Thaw(bad) == nil {
				v.Fields()
			}
		}
	}
}
