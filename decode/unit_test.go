package decode_test

import (
	"testing"
	"time"
	"unsafe"

	"github.com/wiretap-dev/wiretap/decode"
)

// TestUnitSize guards the memory a capture of millions of units costs: the
// rarely set annotations must stay out of line and the time must take eight
// bytes, not time.Time's 24.
func TestUnitSize(t *testing.T) {
	if got := unsafe.Sizeof(decode.Unit{}); got > 128 {
		t.Errorf("unsafe.Sizeof(decode.Unit{}) = %d, want <= 128", got)
	}
}

func TestUnitTimeZero(t *testing.T) {
	var u decode.Unit
	if got := u.Time(); !got.IsZero() {
		t.Errorf("zero Unit: Time() = %v, want the zero Time", got)
	}
	if got := u.UnixNano(); got != decode.NoTime {
		t.Errorf("zero Unit: UnixNano() = %d, want NoTime", got)
	}
	u.SetTime(time.Unix(1, 0))
	u.SetTime(time.Time{})
	if got := u.Time(); !got.IsZero() {
		t.Errorf("after SetTime(time.Time{}): Time() = %v, want the zero Time", got)
	}
	if got := u.UnixNano(); got != decode.NoTime {
		t.Errorf("after SetTime(time.Time{}): UnixNano() = %d, want NoTime", got)
	}
}

func TestUnitTimeRoundTrip(t *testing.T) {
	for _, in := range []time.Time{
		time.Unix(1_767_323_045, 123_456_789),       // nanoseconds kept
		time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), // another location
		time.Unix(0, 0),            // the epoch itself is a time, not unknown
		time.Unix(-5, 0),           // before 1970
		time.Unix(-1, 999_999_999), // one nanosecond before 1970
		time.Date(1900, 6, 15, 12, 30, 0, 987_654_321, time.Local), // long before 1970
	} {
		var u decode.Unit
		u.SetTime(in)
		got := u.Time()
		if !got.Equal(in) {
			t.Errorf("SetTime(%v): Time() = %v, want an equal time", in, got)
		}
		if got.Location() != time.Local {
			t.Errorf("SetTime(%v): Time().Location() = %v, want Local as capture times are", in, got.Location())
		}
		if got.IsZero() {
			t.Errorf("SetTime(%v): Time() is zero", in)
		}
		if n := u.UnixNano(); n != in.UnixNano() {
			t.Errorf("SetTime(%v): UnixNano() = %d, want %d", in, n, in.UnixNano())
		}
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
