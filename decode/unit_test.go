package decode_test

import (
	"testing"
	"unsafe"

	"github.com/wiretap-dev/wiretap/decode"
)

// TestUnitSize guards the memory a capture of millions of units costs: the
// rarely set annotations must stay out of line.
func TestUnitSize(t *testing.T) {
	if got := unsafe.Sizeof(decode.Unit{}); got > 152 {
		t.Errorf("unsafe.Sizeof(decode.Unit{}) = %d, want <= 152", got)
	}
}

func TestUnitNotesZero(t *testing.T) {
	var u decode.Unit
	if got := u.Err(); got != "" {
		t.Errorf("Err() = %q, want empty", got)
	}
	if got := u.Warnings(); got != nil {
		t.Errorf("Warnings() = %q, want nil", got)
	}
	if got := u.MessageID(); got != "" {
		t.Errorf("MessageID() = %q, want empty", got)
	}
	if got := u.Checksum(); got != nil {
		t.Errorf("Checksum() = %+v, want nil", got)
	}
	if got := u.Ext(); got != nil {
		t.Errorf("Ext() = %v, want nil", got)
	}
}

// Setting zero values on a unit without notes must not allocate them.
func TestUnitSetZeroDoesNotAllocate(t *testing.T) {
	u := new(decode.Unit)
	allocs := testing.AllocsPerRun(100, func() {
		u.SetErr("")
		u.SetWarnings(nil)
		u.SetMessageID("")
		u.SetChecksum(nil)
		u.SetExt(nil)
	})
	if allocs != 0 {
		t.Errorf("setting zero values allocated %v times per run, want 0", allocs)
	}
}

func TestUnitNotesRoundTrip(t *testing.T) {
	var u decode.Unit
	cs := &decode.Checksum{Algorithm: "crc-32", Status: decode.ChecksumMismatch, Expected: 1, Actual: 2}
	type ext struct{ n int }
	u.SetErr("amqp10: bad frame at offset 8")
	u.SetMessageID("msg-1")
	u.SetChecksum(cs)
	u.SetExt(&ext{n: 7})
	u.Warn("first")
	u.Warn("second")

	if got := u.Err(); got != "amqp10: bad frame at offset 8" {
		t.Errorf("Err() = %q", got)
	}
	if got := u.MessageID(); got != "msg-1" {
		t.Errorf("MessageID() = %q", got)
	}
	if got := u.Checksum(); got != cs {
		t.Errorf("Checksum() = %p, want %p", got, cs)
	}
	if got, ok := u.Ext().(*ext); !ok || got.n != 7 {
		t.Errorf("Ext() = %v", u.Ext())
	}
	if got := u.Warnings(); len(got) != 2 || got[0] != "first" || got[1] != "second" {
		t.Errorf("Warnings() = %q", got)
	}

	u.SetWarnings([]string{"only"})
	if got := u.Warnings(); len(got) != 1 || got[0] != "only" {
		t.Errorf("after SetWarnings: Warnings() = %q", got)
	}
	u.SetErr("")
	u.SetMessageID("")
	u.SetChecksum(nil)
	u.SetExt(nil)
	u.SetWarnings(nil)
	if u.Err() != "" || u.MessageID() != "" || u.Checksum() != nil || u.Ext() != nil || u.Warnings() != nil {
		t.Errorf("cleared unit still carries notes: err %q id %q checksum %v ext %v warnings %q",
			u.Err(), u.MessageID(), u.Checksum(), u.Ext(), u.Warnings())
	}
}
