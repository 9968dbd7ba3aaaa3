package amqp10

import (
	"bytes"
	"hash/adler32"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// RabbitMQ 3.10's sasl-mechanisms, as recorded:
//
//	00000000  00 00 00 34 02 01 00 00  00 53 40 c0 27 01 e0 24  |...4.....S@.'..$|
//	00000010  03 b3 00 00 00 09 41 4e  4f 4e 59 4d 4f 55 53 00  |......ANONYMOUS.|
//	00000020  00 00 05 50 4c 41 49 4e  00 00 00 08 41 4d 51 50  |...PLAIN....AMQP|
//	00000030  4c 41 49 4e                                       |LAIN|
var rabbitSASLMechanisms = []byte{
	0x00, 0x00, 0x00, 0x34, 0x02, 0x01, 0x00, 0x00, 0x00, 0x53, 0x40, 0xc0, 0x27, 0x01, 0xe0, 0x24,
	0x03, 0xb3, 0x00, 0x00, 0x00, 0x09, 0x41, 0x4e, 0x4f, 0x4e, 0x59, 0x4d, 0x4f, 0x55, 0x53, 0x00,
	0x00, 0x00, 0x05, 0x50, 0x4c, 0x41, 0x49, 0x4e, 0x00, 0x00, 0x00, 0x08, 0x41, 0x4d, 0x51, 0x50,
	0x4c, 0x41, 0x49, 0x4e,
}

// Proton's sasl-init PLAIN for guest/guest:
//
//	00000000  00 00 00 23 02 01 00 00  00 53 41 c0 16 02 a3 05  |...#.....SA.....|
//	00000010  50 4c 41 49 4e a0 0c 00  67 75 65 73 74 00 67 75  |PLAIN...guest.gu|
//	00000020  65 73 74                                          |est|
var protonSASLInit = []byte{
	0x00, 0x00, 0x00, 0x23, 0x02, 0x01, 0x00, 0x00, 0x00, 0x53, 0x41, 0xc0, 0x16, 0x02, 0xa3, 0x05,
	0x50, 0x4c, 0x41, 0x49, 0x4e, 0xa0, 0x0c, 0x00, 0x67, 0x75, 0x65, 0x73, 0x74, 0x00, 0x67, 0x75,
	0x65, 0x73, 0x74,
}

func TestSASLMechanismsArrayOfSym32(t *testing.T) {
	us := collect(t, nil, 0, bw(append([]byte("AMQP\x03\x01\x00\x00"), rabbitSASLMechanisms...)))
	if len(us) != 2 || us[0].Type != "protocol-header" || us[1].Type != "sasl.mechanisms" {
		t.Fatalf("units: %+v", us)
	}
	if got := us[1].Summary; got != "sasl.mechanisms ANONYMOUS,PLAIN,AMQPLAIN" {
		t.Errorf("summary %q", got)
	}
	f := decode.Find(us[1].Fields(), "amqp.sasl.mechanisms")
	if f == nil || len(f.Kids) != 3 || f.Encoding != "array8 0xe0 of sym32 0xb3" || f.Kids[1].Value != "PLAIN" {
		t.Fatalf("mechanisms field:\n%s", dumpFields(us[1].Fields()))
	}
	// The second element's data starts after the first's 4-byte size and 9
	// bytes: offset 17 (element constructor) + 1 + 4 + 9.
	if k := f.Kids[1]; k.Offset != 31 || k.Length != 9 {
		t.Errorf("PLAIN at %d+%d, want 31+9", k.Offset, k.Length)
	}
}

func TestSASLInitRedaction(t *testing.T) {
	for _, show := range []bool{false, true} {
		opt := decode.DefaultOptions()
		opt.ShowSecrets = show
		us := collect(t, opt, 0, fw(append([]byte("AMQP\x03\x01\x00\x00"), protonSASLInit...)))
		u := us[1]
		if u.Type != "sasl.init" || !u.Secret {
			t.Fatalf("unit %s secret=%v", u.Type, u.Secret)
		}
		if !strings.Contains(u.Summary, `user="guest"`) || strings.Contains(u.Summary, "\\x00guest") {
			t.Errorf("summary %q", u.Summary)
		}
		hasPw := bytes.HasSuffix(u.Raw, []byte("\x00guest"))
		if hasPw == !show {
			t.Errorf("show=%v: raw %q", show, u.Raw)
		}
		f := decode.Find(u.Fields(), "amqp.sasl.initResponse")
		if f == nil {
			t.Fatalf("no initResponse:\n%s", dumpFields(u.Fields()))
		}
		if (f.Text() == decode.Redacted) == show {
			t.Errorf("show=%v: initResponse %q", show, f.Text())
		}
		if !show && (len(u.Raw) != len(protonSASLInit) || !bytes.HasSuffix(u.Raw, []byte("\x00*****"))) {
			t.Errorf("redacted raw %q", u.Raw)
		}
	}
	if !bytes.HasSuffix(protonSASLInit, []byte("guest")) {
		t.Fatal("the decoder wrote into its caller's bytes")
	}
}

// testMessage builds a message from sections and returns it with the
// bytes of its bare message, built separately.
type section struct {
	code uint64
	body []byte
}

func buildMessage(alg string, wrong bool, secs ...section) (msg, bare []byte) {
	for _, s := range secs {
		enc := AppendDescribed(nil, s.code, s.body)
		msg = append(msg, enc...)
		if s.code >= DescriptorProperties && s.code <= DescriptorAMQPValue {
			bare = append(bare, enc...)
		}
	}
	if alg != "" {
		footer := AppendChecksumFooter(nil, alg, bare)
		if wrong {
			footer[len(footer)-1] ^= 0x80
		}
		msg = append(msg, footer...)
	}
	return msg, bare
}

func transferFrame(channel uint16, handle, id uint32, more bool, payload []byte, extra ...[]byte) []byte {
	fields := [][]byte{AppendUint(nil, handle), AppendUint(nil, id), AppendBinary(nil, []byte{byte(id)}), AppendUint(nil, 0), AppendBool(nil, false), AppendBool(nil, more)}
	fields = append(fields, extra...)
	return AppendFrame(nil, FrameTypeAMQP, channel, AppendComposite(nil, DescriptorTransfer, fields...), payload)
}

func TestChecksumVerdicts(t *testing.T) {
	props := AppendList(nil, AppendString(nil, "id-1"), AppendNull(nil), AppendString(nil, "/queue/q"))
	app := AppendMap(nil, AppendString(nil, "flag"), AppendBoolean(nil, true), AppendString(nil, "n"), AppendLong(nil, -5))
	header := AppendList(nil, AppendBool(nil, true))
	data := func(s string) section { return section{DescriptorData, AppendBinary(nil, []byte(s))} }
	cases := []struct {
		name  string
		alg   string
		wrong bool
		secs  []section
		want  decode.ChecksumStatus
		body  string
	}{
		{"crc-32", CRC32, false, []section{{DescriptorProperties, props}, data("hello")}, decode.ChecksumOK, "data"},
		{"adler-32", Adler32, false, []section{{DescriptorProperties, props}, {DescriptorApplicationProperties, app}, data("x")}, decode.ChecksumOK, "data"},
		{"wrong crc-32", CRC32, true, []section{{DescriptorProperties, props}, data("hello")}, decode.ChecksumMismatch, "data"},
		{"wrong adler-32", Adler32, true, []section{data("hello")}, decode.ChecksumMismatch, "data"},
		{"no footer", "", false, []section{{DescriptorProperties, props}, data("hello")}, decode.ChecksumAbsent, "data"},
		{"header before bare", CRC32, false, []section{{DescriptorHeader, header}, {DescriptorMessageAnnotations, AppendMap(nil, AppendSymbol(nil, "x-opt-a"), AppendString(nil, "b"))}, {DescriptorProperties, props}, data("hello")}, decode.ChecksumOK, "data"},
		{"several data sections", CRC32, false, []section{{DescriptorProperties, props}, data("one"), data(strings.Repeat("two", 200)), data("three")}, decode.ChecksumOK, "data"},
		{"amqp-value", Adler32, false, []section{{DescriptorApplicationProperties, app}, {DescriptorAMQPValue, AppendString(nil, "value")}}, decode.ChecksumOK, "amqp-value"},
		{"amqp-sequence", CRC32, false, []section{{DescriptorAMQPSequence, AppendList(nil, AppendInt(nil, 1))}, {DescriptorAMQPSequence, AppendList(nil, AppendInt(nil, 2))}}, decode.ChecksumOK, "amqp-sequence"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg, bare := buildMessage(tc.alg, tc.wrong, tc.secs...)
			for _, chunk := range []int{0, 1, 5} {
				us := collect(t, nil, chunk, fw(transferFrame(0, 0, 1, false, msg)))
				if len(us) != 1 {
					t.Fatalf("%d units", len(us))
				}
				u := us[0]
				ck := u.Checksum()
				if ck == nil || ck.Status != tc.want {
					t.Fatalf("checksum %+v, want %s (%s)", ck, tc.want, u.Summary)
				}
				cm := MessageOf(u)
				if !bytes.Equal(cm.Bare(), bare) {
					t.Fatalf("bare message %x, want %x", cm.Bare(), bare)
				}
				if cm.Message.BodyKind != tc.body {
					t.Errorf("body %q, want %q", cm.Message.BodyKind, tc.body)
				}
				var sum uint32
				switch tc.alg {
				case CRC32:
					sum = crc32.ChecksumIEEE(bare)
				case Adler32:
					sum = adler32.Checksum(bare)
				}
				if tc.alg != "" && ck.Actual != sum {
					t.Errorf("actual %08x, want %08x", ck.Actual, sum)
				}
				if tc.alg != "" && (ck.Expected == ck.Actual) != !tc.wrong {
					t.Errorf("expected %08x actual %08x wrong=%v", ck.Expected, ck.Actual, tc.wrong)
				}
				if f := decode.Find(u.Fields(), "amqp.checksum"); f == nil || f.Value != tc.want.String() {
					t.Errorf("amqp.checksum field: %v", f)
				}
				if f := decode.Find(u.Fields(), "amqp.bare_message"); f == nil || f.Length != len(bare) || !bytes.Equal(u.Raw[f.Offset:f.Offset+f.Length], bare) {
					t.Errorf("amqp.bare_message field does not point at the bare message: %+v", f)
				}
			}
		})
	}
}

func TestReassemblyInterleavedAndAborted(t *testing.T) {
	big, bare := buildMessage(CRC32, false, section{DescriptorProperties, AppendList(nil, AppendString(nil, "big"))},
		section{DescriptorData, AppendBinary(nil, bytes.Repeat([]byte("0123456789"), 300))})
	small, _ := buildMessage(Adler32, false, section{DescriptorProperties, AppendList(nil, AppendString(nil, "small"))},
		section{DescriptorAMQPValue, AppendString(nil, "hi")})
	var s []byte
	// Link 0 (channel 1) carries big in 500-byte pieces; link 1 (channel 1)
	// interleaves small in two pieces; link 0 on channel 2 is aborted.
	s = append(s, transferFrame(1, 0, 10, true, big[:500])...)
	s = append(s, transferFrame(1, 1, 11, true, small[:7])...)
	s = append(s, transferFrame(2, 0, 12, true, []byte("partial"))...)
	s = append(s, transferFrame(1, 0, 10, true, big[500:1000])...)
	s = append(s, AppendFrame(nil, 0, 2, AppendComposite(nil, DescriptorTransfer, AppendUint(nil, 0), AppendNull(nil), AppendNull(nil), AppendNull(nil), AppendNull(nil), AppendNull(nil), AppendNull(nil), AppendNull(nil), AppendNull(nil), AppendBool(nil, true)))...)
	s = append(s, transferFrame(1, 1, 11, false, small[7:])...)
	s = append(s, AppendFrame(nil, 0, 1, AppendComposite(nil, DescriptorTransfer, AppendUint(nil, 0)), big[1000:])...)
	for _, chunk := range []int{0, 1, 13, 4096} {
		us := collect(t, nil, chunk, fw(s))
		if len(us) != 7 {
			t.Fatalf("chunk %d: %d units", chunk, len(us))
		}
		var done []string
		for _, u := range us {
			if u.Err() != "" {
				t.Errorf("unit error %s", u.Err())
			}
			if cm := MessageOf(u); cm != nil {
				done = append(done, u.MessageID())
				if u.Checksum().Status != decode.ChecksumOK {
					t.Errorf("%s: %+v", u.MessageID(), u.Checksum())
				}
				if u.MessageID() == "big" {
					if cm.Frames != 3 || !bytes.Equal(cm.Bytes, big) || !bytes.Equal(cm.Bare(), bare) || cm.DeliveryID != 10 {
						t.Errorf("big: frames %d, %d bytes, id %d", cm.Frames, len(cm.Bytes), cm.DeliveryID)
					}
					// Fields of the last piece point into Raw; earlier ones have no range.
					fs := u.Fields()
					foot := decode.Find(fs, "amqp.footer")
					if foot == nil || foot.Length == 0 || !bytes.Equal(u.Raw[foot.Offset:foot.Offset+foot.Length], big[len(big)-foot.Length:]) {
						t.Errorf("footer field %+v", foot)
					}
					if p := decode.Find(fs, "amqp.properties"); p == nil || p.Length != 0 {
						t.Errorf("properties (in the first frame) should have no range: %+v", p)
					}
				}
			}
		}
		if strings.Join(done, ",") != "small,big" {
			t.Errorf("completed %v", done)
		}
		if !strings.Contains(us[4].Summary, "aborted") || MessageOf(us[4]) != nil {
			t.Errorf("abort: %q", us[4].Summary)
		}
	}
}

func TestMaxMessage(t *testing.T) {
	msg, _ := buildMessage(CRC32, false, section{DescriptorData, AppendBinary(nil, make([]byte, 3000))})
	opt := decode.DefaultOptions()
	opt.MaxMessage = 1000
	var s []byte
	for off := 0; off < len(msg); off += 400 {
		end := min(off+400, len(msg))
		s = append(s, transferFrame(0, 0, 1, end < len(msg), msg[off:end])...)
	}
	us := collect(t, opt, 0, fw(s))
	last := us[len(us)-1]
	if MessageOf(last) != nil || !strings.Contains(last.Summary, "not reassembled") {
		t.Errorf("last: %q", last.Summary)
	}
	warned := false
	for _, u := range us {
		warned = warned || len(u.Warnings()) > 0
	}
	if !warned {
		t.Error("no warning about the limit")
	}
}

func TestFramingEdgeCases(t *testing.T) {
	ext := []byte{0, 0, 0, 12, 3, 0, 0, 5, 0xde, 0xad, 0xbe, 0xef} // doff 3: 4-byte extended header, empty
	cases := []struct {
		name, typ, err string
		in             []byte
	}{
		{"tls header", "protocol-header", "", []byte("AMQP\x02\x01\x00\x00\x16\x03\x01")},
		{"empty frame with extended header", "empty", "", ext},
		{"size below 8", "error", "smaller than the frame header", []byte{0, 0, 0, 4, 2, 0, 0, 0}},
		{"doff below 2", "error", "doff 1", []byte{0, 0, 0, 8, 1, 0, 0, 0}},
		{"doff past size", "error", "points past", []byte{0, 0, 0, 8, 3, 0, 0, 0}},
		{"truncated", "error", "stream ended inside a frame: 9 bytes of 16", []byte{0, 0, 0, 16, 2, 0, 0, 0, 0}},
		{"not a performative", "unknown-performative", "", AppendFrame(nil, 0, 0, AppendComposite(nil, DescriptorHeader))},
		{"body not described", "error", "expected a described type", AppendFrame(nil, 0, 0, AppendUint(nil, 3))},
	}
	for _, tc := range cases {
		us := collect(t, nil, 0, fw(tc.in))
		if len(us) == 0 {
			t.Errorf("%s: no unit", tc.name)
			continue
		}
		u := us[0]
		if u.Type != tc.typ || !strings.Contains(u.Err(), tc.err) || (tc.err == "") != (u.Err() == "") {
			t.Errorf("%s: type %q err %q", tc.name, u.Type, u.Err())
		}
		u.Fields()
	}
	us := collect(t, nil, 0, fw(ext))
	if f := decode.Find(us[0].Fields(), "amqp.extended_header"); f == nil || f.Length != 4 || us[0].Channel != 5 {
		t.Errorf("extended header:\n%s", dumpFields(us[0].Fields()))
	}
}

func TestPerformativeSummaries(t *testing.T) {
	errVal := AppendComposite(nil, DescriptorError, AppendSymbol(nil, "amqp:not-found"), AppendString(nil, "no queue 'q'"))
	source := AppendComposite(nil, DescriptorSource, AppendString(nil, "/queue/q"), AppendUint(nil, 0), AppendSymbol(nil, "link-detach"),
		AppendUint(nil, 0), AppendBool(nil, false), AppendNull(nil), AppendNull(nil),
		AppendMap(nil, AppendSymbol(nil, "rabbitmq:stream-offset-spec"), AppendDescribed(nil, 0x0000468c00000001, AppendString(nil, "first"))))
	cases := []struct {
		frame []byte
		want  string
		field string
		value any
	}{
		{AppendFrame(nil, 0, 0, AppendComposite(nil, DescriptorOpen, AppendString(nil, "c"), AppendString(nil, "h"), AppendUintFull(nil, 512), AppendUshort(nil, 7), AppendUint(nil, 60000))),
			`open ch=0 container-id="c" hostname="h" max-frame-size=512 channel-max=7 idle-time-out=60000`, "amqp.performative.arguments.idleTimeout", uint64(60000)},
		{AppendFrame(nil, 0, 3, AppendComposite(nil, DescriptorAttach, AppendString(nil, "l"), AppendUint(nil, 2), AppendBool(nil, true), AppendUbyte(nil, 2), AppendUbyte(nil, 0), source)),
			`attach ch=3 name="l" handle=2 role=receiver source="/queue/q"`, "amqp.performative.arguments.address", "/queue/q"},
		{AppendFrame(nil, 0, 0, AppendComposite(nil, DescriptorDisposition, AppendBool(nil, true), AppendUint(nil, 4), AppendUint(nil, 9), AppendBool(nil, true),
			AppendComposite(nil, DescriptorRejected, errVal))),
			`disposition ch=0 role=receiver first=4 last=9 settled rejected error=amqp:not-found description="no queue 'q'"`, "amqp.error.condition", "amqp:not-found"},
		{AppendFrame(nil, 0, 0, AppendComposite(nil, DescriptorDisposition, AppendBool(nil, false), AppendUint(nil, 1), AppendNull(nil), AppendBool(nil, false),
			AppendComposite(nil, DescriptorModified, AppendBool(nil, true), AppendBool(nil, true)))),
			`disposition ch=0 role=sender first=1 modified delivery-failed undeliverable-here`, "amqp.modified.deliveryFailed", true},
		{AppendFrame(nil, 0, 0, AppendComposite(nil, DescriptorDisposition, AppendBool(nil, true), AppendUint(nil, 1), AppendNull(nil), AppendNull(nil),
			AppendComposite(nil, DescriptorReceived, AppendUint(nil, 2), AppendUlong(nil, 77)))),
			`disposition ch=0 role=receiver first=1 received section-number=2 section-offset=77`, "amqp.received.sectionOffset", uint64(77)},
		{AppendFrame(nil, 0, 0, AppendComposite(nil, DescriptorDisposition, AppendBool(nil, true), AppendUint(nil, 1), AppendNull(nil), AppendNull(nil), AppendComposite(nil, DescriptorReleased))),
			`disposition ch=0 role=receiver first=1 released`, "", nil},
		{AppendFrame(nil, 0, 1, AppendComposite(nil, DescriptorDetach, AppendUint(nil, 0), AppendBool(nil, true), errVal)),
			`detach ch=1 handle=0 closed error=amqp:not-found description="no queue 'q'"`, "amqp.error.description", "no queue 'q'"},
		{AppendFrame(nil, 0, 0, AppendComposite(nil, DescriptorClose, AppendComposite(nil, DescriptorError, AppendSymbol(nil, "amqp:connection:forced")))),
			`close ch=0 error=amqp:connection:forced`, "", nil},
		{AppendFrame(nil, 0, 0, AppendComposite(nil, DescriptorEnd)), `end ch=0`, "", nil},
		{AppendFrame(nil, 1, 0, AppendComposite(nil, DescriptorSASLOutcome, AppendUbyte(nil, 1))), `sasl.outcome code=auth`, "amqp.sasl.saslCode", uint64(1)},
	}
	for _, tc := range cases {
		us := collect(t, nil, 0, fw(tc.frame))
		if len(us) != 1 || us[0].Summary != tc.want {
			t.Errorf("summary\n got %q\nwant %q", us[0].Summary, tc.want)
			continue
		}
		if tc.field != "" {
			f := decode.Find(us[0].Fields(), tc.field)
			if f == nil || f.Value != tc.value {
				t.Errorf("%s: field %s = %v, want %v\n%s", tc.want, tc.field, f, tc.value, dumpFields(us[0].Fields()))
			}
		}
	}
}

func TestGapResynchronises(t *testing.T) {
	msg, _ := buildMessage(CRC32, false, section{DescriptorProperties, AppendList(nil, AppendString(nil, "after-gap"))}, section{DescriptorData, AppendBinary(nil, []byte("x"))})
	first := transferFrame(0, 0, 1, true, bytes.Repeat([]byte{0, 0, 0, 9, 2}, 40)) // payload full of near-headers
	second := transferFrame(0, 0, 2, false, msg)
	var units []*decode.Unit
	d := New(&decode.Conn{ID: 1}, nil, func(u *decode.Unit) { units = append(units, u) })
	d.Feed(decode.DirF, first[:30], time.Time{})
	d.Gap(decode.DirF, 50, time.Time{})
	d.Feed(decode.DirF, first[80:], time.Time{})
	d.Feed(decode.DirF, second[:5], time.Time{})
	d.Feed(decode.DirF, second[5:], time.Time{})
	d.End(decode.DirF, time.Time{})
	if len(units) != 2 || units[0].Type != "error" || !strings.Contains(units[0].Err(), "lost 50 bytes") {
		t.Fatalf("units: %d, first %+v", len(units), units[0])
	}
	u := units[1]
	if u.MessageID() != "after-gap" || u.Checksum().Status != decode.ChecksumOK || len(u.Warnings()) != 1 ||
		!strings.Contains(u.Warnings()[0], "skipped "+strconv.Itoa(len(first)-80)+" bytes") {
		t.Errorf("after the gap: %q %v", u.Summary, u.Warnings())
	}
	// The 50 lost bytes count in stream offsets: second starts where it
	// would have without the gap.
	if u.Offset != int64(len(first)) {
		t.Errorf("offset %d, want %d", u.Offset, len(first))
	}
}

// TestLinkStateBounded: a peer attaching ever new handles (or starting ever
// new deliveries) cannot grow the decoder's per-connection state past
// maxLinks entries, and long link names are kept cut.
func TestLinkStateBounded(t *testing.T) {
	var units int
	d := New(&decode.Conn{ID: 1}, nil, func(*decode.Unit) { units++ }).(*Decoder)
	long := strings.Repeat("n", 4*maxLinkName)
	var buf []byte
	for h := 0; h < maxLinks+100; h++ {
		buf = AppendFrame(buf[:0], 0, 0, AppendComposite(nil, DescriptorAttach, AppendString(nil, long), AppendUint(nil, uint32(h)), AppendBool(nil, false)))
		d.Feed(decode.DirF, buf, time.Time{})
		buf = transferFrame(0, uint32(h), uint32(h), true, []byte("x"))
		d.Feed(decode.DirF, buf, time.Time{})
	}
	st := &d.dirs[decode.DirF]
	if len(st.links) > maxLinks || len(st.deliveries) > maxLinks {
		t.Fatalf("%d links, %d deliveries kept; limit %d", len(st.links), len(st.deliveries), maxLinks)
	}
	for _, name := range st.links {
		if len(name) > maxLinkName {
			t.Fatalf("link name of %d bytes kept", len(name))
		}
	}
	if units != 2*(maxLinks+100) {
		t.Errorf("%d units, want one per frame", units)
	}
}
