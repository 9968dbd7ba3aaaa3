package amqp10

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/internal/findcheck"
)

const deliveryID = "amqp.performative.arguments.deliveryId"

var registerOnce sync.Once

// registerKnownNames registers every name an AMQP 1.0 tree can hold (in
// this test binary only), so that findcheck.Check also looks up on each
// unit the names other units' trees hold: deliveryId on a flow, a
// section's name on a frame without a message.
func registerKnownNames() {
	registerOnce.Do(func() {
		loadTables()
		have := map[string]bool{}
		for _, n := range decode.FieldNames() {
			have[n.Name] = true
		}
		var fs []decode.FieldName
		for n := range knownNames {
			if !have[n] { // keep the package's own registrations (docs, Open)
				fs = append(fs, decode.FieldName{Name: n, Proto: decode.ProtoAMQP10, Doc: "test"})
			}
		}
		decode.RegisterFieldNames(fs...)
	})
}

// checkFinder checks every lookup the finder answers on us against the
// units' trees.
func checkFinder(t testing.TB, us []*decode.Unit) {
	t.Helper()
	registerKnownNames()
	for _, u := range us {
		if err := findcheck.Check(u); err != nil {
			t.Errorf("%s: %v", u.Summary, err)
		}
	}
}

// captureUnits decodes a pcap or pcapng file's connections as AMQP 1.0,
// running an Immutability over them as the pipeline does.
func captureUnits(t testing.TB, path string) []*decode.Unit {
	return captureUnitsWith(t, path, nil)
}

// captureUnitsWith is captureUnits with decoder options opt (nil: the
// defaults).
func captureUnitsWith(t testing.TB, path string, opt *decode.Options) []*decode.Unit {
	t.Helper()
	h := &captureSink{decoders: map[int]decode.Decoder{}, imm: NewImmutability(), opt: opt}
	if _, err := capture.ReadFile(path, h, nil); err != nil {
		t.Fatal(err)
	}
	return h.units
}

type captureSink struct {
	decoders map[int]decode.Decoder
	units    []*decode.Unit
	imm      *Immutability
	opt      *decode.Options
}

func (h *captureSink) decoder(f *capture.Flow) decode.Decoder {
	d := h.decoders[f.ID]
	if d == nil {
		d = New(&decode.Conn{ID: f.ID, Proto: decode.ProtoAMQP10}, h.opt, func(u *decode.Unit) {
			u.N = len(h.units) + 1
			h.imm.Observe(u)
			h.units = append(h.units, u)
		})
		h.decoders[f.ID] = d
	}
	return d
}

func (h *captureSink) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	dir := decode.DirB
	if fromA {
		dir = decode.DirF
	}
	h.decoder(f).Feed(dir, data, t)
}

func (h *captureSink) Gap(f *capture.Flow, fromA bool, n int, t time.Time) {
	dir := decode.DirB
	if fromA {
		dir = decode.DirF
	}
	h.decoder(f).Gap(dir, n, t)
}

func (h *captureSink) Close(f *capture.Flow, t time.Time) {
	h.decoder(f).End(decode.DirF, t)
	h.decoder(f).End(decode.DirB, t)
}

func shippedCaptures(t testing.TB) []string {
	t.Helper()
	paths, _ := filepath.Glob("../../testdata/amqp10-*.pcap*")
	if len(paths) == 0 {
		t.Fatal("no AMQP 1.0 captures in ../../testdata")
	}
	return paths
}

// TestFinderAgreesWithCaptures checks the finder on every unit of the
// shipped captures and of the proton recordings, and that it answers
// deliveryId on every transfer without the tree (so the agreement is not
// vacuous) and rules it out on every flow.
func TestFinderAgreesWithCaptures(t *testing.T) {
	var all [][]*decode.Unit
	for _, p := range shippedCaptures(t) {
		all = append(all, captureUnits(t, p))
	}
	for _, rec := range loadProtonRecordings(t) {
		var feeds []feed
		for _, c := range rec.chunks {
			feeds = append(feeds, feed{c.dir, c.data})
		}
		all = append(all, collect(t, nil, 0, feeds...))
	}
	transfers, flows := 0, 0
	for _, us := range all {
		checkFinder(t, us)
		for _, u := range us {
			f, ok, handled := u.FindField(deliveryID, 0)
			want := decode.Find(u.Fields(), deliveryID)
			switch u.Type {
			case "transfer":
				if want == nil {
					break
				}
				transfers++
				if !handled || !ok || f.Value != want.Value {
					t.Errorf("%s: deliveryId: %v ok %v handled %v, tree %v", u.Summary, f.Value, ok, handled, want.Value)
				}
			case "flow":
				flows++
				if !handled || ok {
					t.Errorf("%s: deliveryId on a flow: ok %v handled %v", u.Summary, ok, handled)
				}
			}
		}
	}
	if transfers == 0 || flows == 0 {
		t.Fatalf("%d transfers, %d flows with a delivery-id: the captures test nothing", transfers, flows)
	}
}

// session is a small connection: headers, open, begin, attach, flow, a
// transfer completing a message, and its disposition.
func session(id uint32) []byte {
	source := AppendComposite(nil, DescriptorSource, AppendString(nil, "/queue/q"), AppendUint(nil, 0), AppendSymbol(nil, "link-detach"),
		AppendUint(nil, 0), AppendBool(nil, false), AppendNull(nil), AppendNull(nil),
		AppendMap(nil, AppendSymbol(nil, "rabbitmq:stream-offset-spec"), AppendDescribed(nil, 0x0000468c00000001, AppendString(nil, "first"))))
	msg, _ := buildMessage(CRC32, false,
		section{DescriptorHeader, AppendList(nil, AppendBool(nil, true))},
		section{DescriptorProperties, AppendList(nil, AppendString(nil, "m-1"), AppendNull(nil), AppendString(nil, "/queue/q"), AppendString(nil, "subj"))},
		section{DescriptorApplicationProperties, AppendMap(nil, AppendString(nil, "k"), AppendLong(nil, -3))},
		section{DescriptorData, AppendBinary(nil, []byte("hello"))})
	var s []byte
	s = append(s, "AMQP\x00\x01\x00\x00"...)
	s = append(s, AppendFrame(nil, 0, 0, AppendComposite(nil, DescriptorOpen, AppendString(nil, "c"), AppendString(nil, "h"), AppendUintFull(nil, 512)))...)
	s = append(s, AppendFrame(nil, 0, 0, AppendComposite(nil, DescriptorBegin, AppendNull(nil), AppendUint(nil, 0), AppendUint(nil, 100), AppendUint(nil, 100)))...)
	s = append(s, AppendFrame(nil, 0, 0, AppendComposite(nil, DescriptorAttach, AppendString(nil, "link"), AppendUint(nil, 0), AppendBool(nil, false),
		AppendUbyte(nil, 2), AppendUbyte(nil, 0), source))...)
	s = append(s, AppendFrame(nil, 0, 0, AppendComposite(nil, DescriptorFlow, AppendUint(nil, 0), AppendUint(nil, 100), AppendUint(nil, 0), AppendUint(nil, 100),
		AppendUint(nil, 0), AppendUint(nil, 0), AppendUint(nil, 50), AppendNull(nil), AppendBool(nil, false), AppendBool(nil, false),
		AppendMap(nil, AppendSymbol(nil, "k"), AppendString(nil, "v"))))...)
	s = append(s, transferFrame(0, 0, id, false, msg)...)
	s = append(s, AppendFrame(nil, 0, 0, AppendComposite(nil, DescriptorDisposition, AppendBool(nil, true), AppendUint(nil, id), AppendNull(nil),
		AppendBool(nil, true), AppendComposite(nil, DescriptorAccepted)))...)
	return s
}

func unitOfType(t *testing.T, us []*decode.Unit, typ string) *decode.Unit {
	t.Helper()
	for _, u := range us {
		if u.Type == typ {
			return u
		}
	}
	t.Fatalf("no %s unit", typ)
	return nil
}

// TestFinderFieldsSeldom: where a message keeps no copy of its sections
// (decode.Options.FieldsSeldom, `read` in text, where filters run), the
// finder parses them again and answers as the tree does, on every unit
// of the shipped captures; and a lookup, by the finder or else the tree
// as a filter makes it, gives for every name of the default decode's
// tree what it gives there.
func TestFinderFieldsSeldom(t *testing.T) {
	opt := decode.DefaultOptions()
	opt.Transient, opt.FieldsSeldom = true, true
	lookup := func(u *decode.Unit, name string) string {
		f, ok, handled := u.FindField(name, 0)
		if !handled {
			g := decode.Find(u.Fields(), name)
			if g == nil {
				return "(none)"
			}
			f, ok = *g, true
		}
		if !ok {
			return "(none)"
		}
		return fmt.Sprintf("%v %q", f.Value, f.Display)
	}
	sections := 0
	for _, p := range shippedCaptures(t) {
		lazy, plain := captureUnitsWith(t, p, opt), captureUnits(t, p)
		if len(lazy) != len(plain) {
			t.Fatalf("%s: %d units with FieldsSeldom, %d without", p, len(lazy), len(plain))
		}
		checkFinder(t, lazy)
		for i, u := range lazy {
			cm := MessageOf(u)
			if cm == nil {
				continue
			}
			if cm.Message.Sections != nil {
				t.Fatalf("%s: unit %d keeps its sections with FieldsSeldom", p, u.N)
			}
			for _, name := range findcheck.Names(plain[i].Fields()) {
				if got, want := lookup(u, name), lookup(plain[i], name); got != want {
					t.Fatalf("%s: unit %d: %s is %s with FieldsSeldom, %s without", p, u.N, name, got, want)
				}
				if strings.HasPrefix(name, "amqp.properties") || strings.HasPrefix(name, "amqp.applicationProperties") {
					sections++
				}
			}
		}
	}
	if sections == 0 {
		t.Fatal("no section fields in the shipped captures' messages: the parse again went untested")
	}
}

// TestFinderAnswers checks what the finder answers without a tree, and
// that it allocates nothing beyond the value it returns.
func TestFinderAnswers(t *testing.T) {
	us := collect(t, nil, 0, fw(session(300)))
	checkFinder(t, us)
	transfer, flow, disp := unitOfType(t, us, "transfer"), unitOfType(t, us, "flow"), unitOfType(t, us, "disposition")
	cases := []struct {
		u       *decode.Unit
		name    string
		ok      bool
		value   any
		display string
		allocs  float64
	}{
		{transfer, deliveryID, true, uint64(300), "", 1}, // boxing a uint64 over 255
		{transfer, "amqp.performative.arguments.handle", true, uint64(0), "", 0},
		{transfer, "amqp.performative.arguments.more", true, false, "", 0},
		{transfer, "amqp.message.subject", true, "subj", "", 1},
		{transfer, "amqp.message.durable", true, true, "", 0},
		{transfer, "amqp.message_id", true, "m-1", "", 1},
		{transfer, "amqp.checksum", true, "ok", "crc-32 ok", 1},
		{transfer, "amqp.checksum.algorithm", true, "crc-32", "", 1},
		{transfer, "amqp.performative", true, "transfer", "", 1},
		{transfer, "amqp.channel", true, uint64(0), "", 0},
		{transfer, "amqp.performative.arguments.first", false, nil, "", 0},
		{flow, deliveryID, false, nil, "", 0},
		{flow, "amqp.message.subject", false, nil, "", 0},
		{flow, "amqp.performative.arguments.linkCredit", true, uint64(50), "", 0},
		{flow, "amqp.payload", false, nil, "", 0},
		{flow, "amqp.data", false, nil, "", 0},
		{disp, "amqp.performative.arguments.role", true, true, "receiver (true)", 0},
		{disp, "amqp.performative.arguments.state", true, "accepted", "accepted", 1},
		{disp, "amqp.method.arguments.routing_key", false, nil, "", 0},
		{disp, "nope", false, nil, "", 0},
	}
	for _, tc := range cases {
		f, ok, handled := tc.u.FindField(tc.name, 0)
		if !handled || ok != tc.ok || (ok && (f.Value != tc.value || f.Display != tc.display)) {
			t.Errorf("%s: %s: %+v ok %v handled %v; want ok %v value %v display %q", tc.u.Type, tc.name, f, ok, handled, tc.ok, tc.value, tc.display)
		}
		if n := testing.AllocsPerRun(100, func() { tc.u.FindField(tc.name, 0) }); n > tc.allocs {
			t.Errorf("%s: %s: %v allocations, want at most %v", tc.u.Type, tc.name, n, tc.allocs)
		}
	}
	// Containers are left to the tree.
	for _, name := range []string{"amqp.performative.arguments", "amqp.properties", "amqp.data", "amqp.applicationProperties"} {
		if _, _, handled := transfer.FindField(name, 0); handled {
			t.Errorf("%s answered without the tree", name)
		}
	}
}

// TestFinderMultiFrame checks the finder on messages reassembled from two
// and three transfers cut at every offset, continuation transfers with
// and without their delivery-id, with fields in earlier frames (which have
// no range) and in the completing one.
func TestFinderMultiFrame(t *testing.T) {
	nested := AppendComposite(nil, DescriptorError, AppendSymbol(nil, "amqp:not-found"), AppendString(nil, "inside"))
	msg, _ := buildMessage(Adler32, false,
		section{DescriptorHeader, AppendList(nil, AppendBool(nil, true), AppendUbyte(nil, 4))},
		section{DescriptorMessageAnnotations, AppendMap(nil, AppendSymbol(nil, "x-opt-a"), AppendString(nil, "b"))},
		section{DescriptorProperties, AppendList(nil, AppendUUID(nil, [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}),
			AppendBinary(nil, []byte("user")), AppendString(nil, "/queue/q"), AppendNull(nil), AppendNull(nil), AppendUlong(nil, 77),
			AppendSymbol(nil, "text/plain"), AppendNull(nil), AppendTimestamp(nil, 1700000000000), AppendTimestamp(nil, -5))},
		section{DescriptorApplicationProperties, AppendMap(nil, AppendString(nil, "err"), nested, AppendString(nil, "n"), AppendDouble(nil, 2.5))},
		section{DescriptorData, AppendBinary(nil, []byte("first"))},
		section{DescriptorData, AppendBinary(nil, []byte("second"))})
	cont := func(handle uint32, more bool, payload []byte) []byte {
		fields := [][]byte{AppendUint(nil, handle)}
		if more {
			fields = append(fields, AppendNull(nil), AppendNull(nil), AppendNull(nil), AppendNull(nil), AppendBool(nil, true))
		}
		return AppendFrame(nil, FrameTypeAMQP, 0, AppendComposite(nil, DescriptorTransfer, fields...), payload)
	}
	answered := 0
	for cut := 1; cut < len(msg); cut++ {
		two := append(transferFrame(0, 0, 1, true, msg[:cut]), transferFrame(0, 0, 1, false, msg[cut:])...)
		cut2 := cut + (len(msg)-cut)/2
		three := append(transferFrame(0, 1, 2, true, msg[:cut]), cont(1, true, msg[cut:cut2])...)
		three = append(three, cont(1, false, msg[cut2:])...)
		us := collect(t, nil, 0, fw(two), fw(three))
		checkFinder(t, us)
		for _, u := range us {
			if MessageOf(u) == nil {
				continue
			}
			if _, ok, handled := u.FindField("amqp.message.to", 0); handled && ok {
				answered++
			}
			if _, _, handled := u.FindField("amqp.error.description", 0); !handled {
				t.Errorf("cut %d: amqp.error.description inside application-properties not answered", cut)
			}
		}
	}
	if answered != 2*(len(msg)-1) {
		t.Errorf("amqp.message.to answered on %d of %d completed messages", answered, 2*(len(msg)-1))
	}
}

// TestFinderOddEncodings checks the finder on frames a decoder rarely
// sees: composites nested where maps and arrays allow any value, symbolic
// and ulong descriptors, extra fields, choices in unusual encodings,
// values it leaves to the tree, extended headers, payloads after
// performatives that carry none, and nesting deeper than the materializer
// follows.
func TestFinderOddEncodings(t *testing.T) {
	nestedTransfer := AppendComposite(nil, DescriptorTransfer, AppendUint(nil, 9), AppendUint(nil, 1234), AppendBinary(nil, nil))
	keyTransfer := AppendComposite(nil, DescriptorTransfer, AppendUint(nil, 9), AppendUint(nil, 1111))
	symbolic := func(sym string, list []byte) []byte {
		return append(AppendSymbol([]byte{byte(CodeDescribed)}, sym), list...)
	}
	ulongDesc := func(code uint64, list []byte) []byte {
		return append(AppendFixed([]byte{byte(CodeDescribed)}, CodeUlong, []byte{0, 0, 0, 0, 0, 0, 0, byte(code)}), list...)
	}
	deep := AppendString(nil, "bottom")
	for range maxDepth + 4 {
		deep = AppendList(nil, AppendComposite(nil, DescriptorError, AppendSymbol(nil, "c"), deep))
	}
	extra := [][]byte{AppendUint(nil, 0), AppendUint(nil, 7), AppendBinary(nil, nil), AppendUint(nil, 0), AppendBoolean(nil, true), AppendBool(nil, false),
		AppendSmallInt(1), AppendComposite(nil, DescriptorReceived, AppendUint(nil, 0), AppendUlong(nil, 0)), AppendBool(nil, false), AppendBool(nil, false),
		AppendBool(nil, false), AppendString(nil, "eleven"), AppendUint(nil, 12)}
	var wide [][]byte // more fields than a Composite holds
	for i := range maxCompositeFields + 2 {
		wide = append(wide, AppendUint(nil, uint32(i)))
	}
	perf := func(code uint64, fields ...[]byte) []byte {
		return AppendFrame(nil, FrameTypeAMQP, 0, AppendComposite(nil, code, fields...))
	}
	extHeader := AppendFrame(nil, FrameTypeAMQP, 4, AppendComposite(nil, DescriptorEnd))
	extHeader = append(extHeader[:8], append([]byte{1, 2, 3, 4}, extHeader[8:]...)...)
	extHeader[3] += 4
	extHeader[4] = 3
	frames := [][]byte{
		[]byte("AMQP\x00\x01\x00\x00"),
		[]byte("AMQP\x00\x02\x03\x04"),
		perf(DescriptorFlow, AppendNull(nil), AppendUint(nil, 1), AppendUint(nil, 2), AppendUint(nil, 3), AppendUint(nil, 4), AppendNull(nil),
			AppendNull(nil), AppendNull(nil), AppendNull(nil), AppendNull(nil),
			AppendMap(nil, AppendSymbol(nil, "t"), nestedTransfer, AppendUlong(nil, 5), nestedTransfer, keyTransfer, nestedTransfer,
				AppendSymbol(nil, "wide"), AppendComposite(nil, DescriptorError, wide...),
				AppendSymbol(nil, "sym"), symbolic("amqp:transfer:list", AppendList(nil, AppendUint(nil, 9), AppendUint(nil, 4321))))),
		perf(DescriptorAttach, AppendString(nil, "n"), AppendUint(nil, 1), AppendString(nil, "true"), AppendSmallInt(2), AppendFloat(nil, 1),
			AppendComposite(nil, DescriptorSource, AppendNull(nil), AppendLong(nil, 2), AppendSymbol(nil, "never")),
			AppendComposite(nil, DescriptorTarget, AppendString(nil, "a"), AppendUintFull(nil, 1)),
			AppendMap(nil, AppendBinary(nil, []byte{1}), AppendNull(nil)),
			AppendNull(nil), AppendNull(nil), AppendNull(nil),
			AppendArray(nil, AppendUlong(nil, DescriptorError), CodeList8, []byte{2, 1, 0x40}, []byte{2, 1, 0x40}),
			AppendArray(nil, nil, CodeSym8, []byte{1, 'a'}, []byte{1, 'b'})),
		perf(DescriptorDisposition, AppendBool(nil, false), AppendUint(nil, 1), AppendUint(nil, 2), AppendNull(nil),
			symbolic("amqp:accepted:list", AppendList(nil))),
		perf(DescriptorDisposition, AppendBool(nil, true), AppendUint(nil, 1), AppendNull(nil), AppendNull(nil),
			symbolic("vendor:state:list", AppendList(nil))),
		perf(DescriptorDisposition, AppendBool(nil, true), AppendUint(nil, 1), AppendNull(nil), AppendNull(nil),
			ulongDesc(DescriptorReleased, AppendList32(nil))),
		ulongFrame(ulongDesc(DescriptorBegin, AppendList(nil, AppendNull(nil), AppendUint(nil, 0), AppendUint(nil, 1), AppendUint(nil, 1)))),
		perf(DescriptorOpen, AppendString(nil, "bad \xff utf-8"), AppendChar(nil, 'x'), AppendFixed(nil, CodeDecimal32, []byte{1, 2, 3, 4}),
			AppendShort(nil, -1), AppendTimestamp(nil, 42), AppendList(nil), AppendMap(nil),
			AppendSymbolArray(nil, "a", "b"), AppendSymbol(nil, "single"), AppendMap(nil, AppendSymbol(nil, "deep"), deep)),
		perf(DescriptorTransfer, extra...),
		perf(DescriptorSASLOutcome, AppendUbyte(nil, 9)),
		perf(DescriptorDetach, wide...),
		AppendFrame(nil, FrameTypeAMQP, 0, AppendComposite(nil, DescriptorFlow, AppendUint(nil, 0)), []byte("trailing")),
		extHeader,
		AppendFrame(nil, FrameTypeAMQP, 3, nil),
		AppendFrame(nil, 7, 0, []byte{0, 0x53, 0x10}),
		AppendFrame(nil, FrameTypeAMQP, 0, AppendComposite(nil, DescriptorHeader)),
		AppendFrame(nil, FrameTypeAMQP, 0, AppendComposite(nil, 0x99, AppendUint(nil, 1))),
		AppendFrame(nil, FrameTypeAMQP, 0, AppendUint(nil, 3)),
	}
	var stream []byte
	for _, f := range frames {
		stream = append(stream, f...)
	}
	us := collect(t, nil, 0, fw(stream))
	if len(us) != len(frames) {
		t.Fatalf("%d units from %d frames", len(us), len(frames))
	}
	checkFinder(t, us)
	// Transfers nested in a flow's properties, one of them as a key (which
	// the tree shows before its value), one with a symbolic descriptor,
	// are in the flow's tree; the finder finds each, in the tree's order.
	flow := unitOfType(t, us, "flow")
	for k, want := range []uint64{1234, 1234, 1111, 1234, 4321} {
		if f, ok, handled := flow.FindField(deliveryID, k); !handled || !ok || f.Value != want {
			t.Errorf("nested deliveryId %d: %+v ok %v handled %v, want %d", k, f, ok, handled, want)
		}
	}
	if _, ok, handled := flow.FindField(deliveryID, 5); !handled || ok {
		t.Errorf("a fourth nested deliveryId: ok %v handled %v", ok, handled)
	}
	attach := unitOfType(t, us, "attach")
	if f, ok, handled := attach.FindField("amqp.performative.arguments.role", 0); !handled || !ok || f.Display != "receiver (true)" {
		t.Errorf("role as a string: %+v ok %v handled %v", f, ok, handled)
	}
	if f, ok, handled := attach.FindField("amqp.performative.arguments.rcvSettleMode", 0); !handled || !ok || f.Display != "second (1)" {
		t.Errorf("rcv-settle-mode as a float: %+v ok %v handled %v", f, ok, handled)
	}
}

// AppendSmallInt encodes v as a smallint (tests of unusual encodings).
func AppendSmallInt(v int8) []byte { return []byte{byte(CodeSmallInt), byte(v)} }

// ulongFrame wraps a performative whose descriptor is an 8-byte ulong.
func ulongFrame(body []byte) []byte { return AppendFrame(nil, FrameTypeAMQP, 0, body) }

// TestFinderSecretsAndImmutability checks that units with secrets are
// left to the tree, and that immutability verdicts, added to a leaving
// message after it was decoded, are found.
func TestFinderSecretsAndImmutability(t *testing.T) {
	sasl := append([]byte("AMQP\x03\x01\x00\x00"), protonSASLInit...)
	us := collect(t, nil, 0, fw(sasl))
	checkFinder(t, us)
	if _, _, handled := us[1].FindField("amqp.sasl.mechanism", 0); handled || !us[1].Secret {
		t.Errorf("a unit with secrets answered without its tree")
	}
	if _, ok, handled := us[1].FindField("nope", 0); !handled || ok {
		t.Errorf("a name no tree holds: ok %v handled %v", ok, handled)
	}

	props := func(id string) section {
		return section{DescriptorProperties, AppendList(nil, AppendString(nil, id))}
	}
	body := func(s string) section { return section{DescriptorData, AppendBinary(nil, []byte(s))} }
	same, _ := buildMessage(CRC32, false, props("same"), body("x"))
	sent, _ := buildMessage("", false, props("changed"), body("before"))
	got, _ := buildMessage("", false, props("changed"), body("after!"))
	imm := NewImmutability()
	var all []*decode.Unit
	for i, st := range [][]feed{
		{fw(append(transferFrame(0, 0, 1, false, same), transferFrame(0, 0, 2, false, sent)...))},
		{bw(append(transferFrame(0, 0, 1, false, same), transferFrame(0, 0, 2, false, got)...))},
	} {
		var us []*decode.Unit
		d := New(&decode.Conn{ID: i + 1, Proto: decode.ProtoAMQP10}, nil, func(u *decode.Unit) { imm.Observe(u); us = append(us, u) })
		for _, f := range st {
			d.Feed(f.dir, f.data, time.Time{})
		}
		all = append(all, us...)
	}
	checkFinder(t, all)
	var verdicts []string
	for _, u := range all {
		if f, ok, handled := u.FindField("amqp.immutability", 0); !handled {
			t.Errorf("%s: amqp.immutability not answered", u.Summary)
		} else if ok {
			verdicts = append(verdicts, f.Value.(string))
		}
	}
	sort.Strings(verdicts)
	if strings.Join(verdicts, ",") != "identical,modified" {
		t.Errorf("verdicts %v", verdicts)
	}
}

// TestFinderForeignTrees checks that units this package did not dissect
// (the TUI's fake generator builds AMQP 1.0 units with trees of its own)
// are left to their trees.
func TestFinderForeignTrees(t *testing.T) {
	u := &decode.Unit{Proto: decode.ProtoAMQP10, Type: "transfer", Raw: transferFrame(0, 0, 1, false, []byte{0}),
		Dissect: func(*decode.Unit) []*decode.Field {
			return []*decode.Field{{Key: "x", Name: "amqp.performative.arguments.delivery_id", Value: uint64(1)}}
		}}
	for _, name := range []string{"amqp.performative.arguments.delivery_id", deliveryID, "nope"} {
		if _, _, handled := u.FindField(name, 0); handled {
			t.Errorf("%s answered on a foreign tree", name)
		}
	}
}

// FuzzFinder wraps arbitrary bytes in a performative (a flow's properties,
// a transfer's payload) and checks the finder against the trees: the
// values the finder walks are the fuzzer's.
func FuzzFinder(f *testing.F) {
	f.Add(AppendMap(nil, AppendSymbol(nil, "t"), AppendComposite(nil, DescriptorTransfer, AppendUint(nil, 9), AppendUint(nil, 1234))), []byte{})
	f.Add(AppendArray(nil, AppendUlong(nil, DescriptorError), CodeList8, []byte{2, 1, 0x40}), []byte{})
	msg, _ := buildMessage(CRC32, false, section{DescriptorProperties, AppendList(nil, AppendString(nil, "id"), AppendNull(nil), AppendString(nil, "to"))},
		section{DescriptorApplicationProperties, AppendMap(nil, AppendString(nil, "e"), AppendComposite(nil, DescriptorError, AppendSymbol(nil, "c")))},
		section{DescriptorData, AppendBinary(nil, []byte("x"))})
	f.Add(AppendNull(nil), msg)
	f.Fuzz(func(t *testing.T, value, payload []byte) {
		var s []byte
		s = append(s, AppendFrame(nil, FrameTypeAMQP, 0, AppendComposite(nil, DescriptorFlow, AppendNull(nil), AppendUint(nil, 1), AppendUint(nil, 2),
			AppendUint(nil, 3), AppendUint(nil, 4), AppendNull(nil), AppendNull(nil), AppendNull(nil), AppendNull(nil), AppendNull(nil), value))...)
		s = append(s, AppendFrame(nil, FrameTypeAMQP, 0, AppendComposite(nil, DescriptorDisposition, AppendBool(nil, true), AppendUint(nil, 1), value))...)
		s = append(s, AppendFrame(nil, FrameTypeAMQP, 0, append(AppendComposite(nil, DescriptorTransfer, AppendUint(nil, 0), AppendUint(nil, 1)), value...))...)
		if len(payload) > 0 {
			s = append(s, transferFrame(0, 1, 2, false, payload)...)
			if half := len(payload) / 2; half > 0 {
				s = append(s, transferFrame(0, 2, 3, true, payload[:half])...)
				s = append(s, transferFrame(0, 2, 3, false, payload[half:])...)
			}
		}
		checkFinder(t, collect(t, nil, 0, fw(s)))
	})
}

// BenchmarkFindDeliveryID looks amqp.performative.arguments.deliveryId up
// on every unit of the shipped captures as a filter such as
// amqp.performative.arguments.deliveryId == 1000 does (every occurrence,
// since none matches): through the finder, falling back to the tree where
// it cannot answer (the unit carrying SASL credentials), and through the
// tree alone, as the filter did before. ns/unit is per unit looked at.
func BenchmarkFindDeliveryID(b *testing.B) {
	var us []*decode.Unit
	for _, p := range shippedCaptures(b) {
		us = append(us, captureUnits(b, p)...)
	}
	tree := func(u *decode.Unit) (n int) {
		decode.Walk(u.Fields(), func(f *decode.Field) bool {
			if f.Name == deliveryID {
				n++
			}
			return true
		})
		return n
	}
	run := func(b *testing.B, count func(u *decode.Unit) int) {
		b.ReportAllocs()
		found := 0
		for b.Loop() {
			for _, u := range us {
				found += count(u)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(us)), "ns/unit")
		if found == 0 {
			b.Fatal("no unit has a deliveryId")
		}
	}
	b.Run("FindField", func(b *testing.B) {
		run(b, func(u *decode.Unit) int {
			for k := 0; ; k++ {
				_, ok, handled := u.FindField(deliveryID, k)
				if !handled {
					return tree(u)
				}
				if !ok {
					return k
				}
			}
		})
	})
	b.Run("Fields", func(b *testing.B) { run(b, tree) })
}

// TestSectionEntriesNamed: entries of the map sections are named by their
// keys in the tree (amqp.applicationProperties.source), the names are
// open tables for the filter, and the finder leaves them to the tree on
// units completing a message and says absent on the others.
func TestSectionEntriesNamed(t *testing.T) {
	us := captureUnits(t, "../../testdata/amqp10-proton.pcapng")
	const name = "amqp.applicationProperties.source"
	found := 0
	for _, u := range us {
		var got *decode.Field
		decode.Walk(u.Fields(), func(f *decode.Field) bool {
			if f.Name == name {
				got = f
			}
			return got == nil
		})
		_, ok, handled := u.FindField(name, 0)
		switch {
		case got != nil:
			found++
			if got.Value != "proton" || got.Key != "source" {
				t.Errorf("unit %d: %s = %+v", u.N, name, *got)
			}
			if handled {
				t.Errorf("unit %d: the finder answered %s (ok %v) instead of leaving it to the tree", u.N, name, ok)
			}
		case MessageOf(u) == nil && (!handled || ok):
			t.Errorf("unit %d (%s) has no message, yet the finder gives handled %v ok %v", u.N, u.Type, handled, ok)
		}
	}
	if found == 0 {
		t.Fatalf("no unit of the Proton capture has %s", name)
	}
	open := false
	for _, n := range decode.FieldNames() {
		if n.Name == "amqp.applicationProperties" {
			open = n.Open
		}
	}
	if !open {
		t.Error("amqp.applicationProperties is not registered as an open table")
	}
}

// TestImmutabilityOnOneConnection: a client that publishes and consumes on
// one connection (the shipped Proton capture) has every message paired,
// and a message that entered under no capture is said unpaired with why.
func TestImmutabilityOnOneConnection(t *testing.T) {
	h := &captureSink{decoders: map[int]decode.Decoder{}, imm: NewImmutability()}
	if _, err := capture.ReadFile("../../testdata/amqp10-proton.pcapng", h, nil); err != nil {
		t.Fatal(err)
	}
	r := h.imm.Report()
	if r.Entered == 0 || r.Paired != r.Left || r.Identical+r.Modified != r.Paired {
		t.Fatalf("report %+v: every message that left should pair with the one that entered", r)
	}
	im := NewImmutability()
	for _, u := range h.units {
		if u.Dir == decode.DirB {
			im.Observe(u) // only what left: nothing to pair with
		}
	}
	if s := im.Summary(); len(s) == 0 || !strings.Contains(s[0], "left unpaired: no message with the same message-id") {
		t.Fatalf("summary %q", s)
	}
}
