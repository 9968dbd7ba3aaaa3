package amqp10

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// piecedMessages returns messages to split: those of the shipped AMQP 1.0
// captures, encoded ones of every section kind (checksums right and
// wrong, message-ids of every type, large bodies), ones the pieces do not
// answer alone (a descriptor other than a smallulong, an array), and
// corruptions and truncations of them all. well says how many at the
// front are well formed.
func piecedMessages(t testing.TB) (msgs [][]byte, well int) {
	t.Helper()
	files, _ := filepath.Glob("../../testdata/amqp10-*.pcapng")
	for _, f := range files {
		for _, u := range captureUnits(t, f) {
			if cm := MessageOf(u); cm != nil {
				msgs = append(msgs, append([]byte(nil), cm.Bytes...))
			}
		}
	}
	if len(msgs) == 0 {
		t.Fatal("no AMQP 1.0 message in the shipped captures")
	}
	header := AppendList(nil, AppendBool(nil, true), AppendUbyte(nil, 4))
	ann := AppendMap(nil, AppendSymbol(nil, "x-opt-a"), AppendString(nil, "v"))
	app := AppendMap(nil, AppendString(nil, "k"), AppendLong(nil, -5), AppendString(nil, "s"), AppendString(nil, strings.Repeat("x", 300)))
	big := bytes.Repeat([]byte("0123456789abcdef"), 5000)
	ids := [][]byte{AppendString(nil, "m-1"), AppendUlong(nil, 1<<40), AppendUUID(nil, [16]byte{1, 2, 3}),
		AppendBinary(nil, []byte{9, 8, 7}), AppendSymbol(nil, "sym-id"), AppendNull(nil)}
	for i, id := range ids {
		props := AppendList(nil, id, AppendNull(nil), AppendString(nil, "/queue/q"))
		if i%2 == 1 {
			props = AppendList32(nil, id, AppendNull(nil), AppendString(nil, "/queue/q"))
		}
		for _, alg := range []string{"", CRC32, Adler32} {
			for _, wrong := range []bool{false, true} {
				m, _ := buildMessage(alg, wrong, section{DescriptorHeader, header}, section{DescriptorDeliveryAnnotations, ann},
					section{DescriptorMessageAnnotations, ann}, section{DescriptorProperties, props},
					section{DescriptorApplicationProperties, app}, section{DescriptorData, AppendBinary(nil, big[:100*(i+1)])},
					section{DescriptorData, AppendBinary(nil, big)})
				msgs = append(msgs, m)
			}
		}
	}
	for _, body := range [][]byte{AppendString(nil, string(big)), AppendUlong(nil, 7), AppendNull(nil), AppendList(nil, AppendUint(nil, 1))} {
		m, _ := buildMessage(CRC32, false, section{DescriptorProperties, AppendList(nil, AppendString(nil, "v"))}, section{DescriptorAMQPValue, body})
		msgs = append(msgs, m)
	}
	seq, _ := buildMessage(Adler32, false, section{DescriptorAMQPSequence, AppendList(nil, AppendUint(nil, 1))},
		section{DescriptorAMQPSequence, AppendList(nil, AppendString(nil, "two"))})
	msgs = append(msgs, seq)
	// Out of order: a header after the body (reported, not refused).
	late, _ := buildMessage("", false, section{DescriptorData, AppendBinary(nil, big[:5000])}, section{DescriptorHeader, header})
	msgs = append(msgs, late, nil)
	well = len(msgs)
	// What the pieces leave to the joined bytes: a section described by a
	// ulong, an amqp-value that is an array.
	ulongDesc := append(AppendUlong(append([]byte(nil), byte(CodeDescribed)), DescriptorData), AppendBinary(nil, big[:3000])...)
	msgs = append(msgs, ulongDesc,
		AppendDescribed(nil, DescriptorAMQPValue, AppendSymbolArray(nil, "a", "b")),
		append(AppendDescribed(nil, DescriptorData, AppendBinary(nil, []byte("x"))), 0x77, 0x77))
	rng := rand.New(rand.NewPCG(3, 4))
	n := len(msgs)
	for _, m := range msgs[:n] {
		if len(m) == 0 {
			continue
		}
		for range 40 {
			c := append([]byte(nil), m...)
			for range 1 + rng.IntN(3) {
				c[rng.IntN(len(c))] = byte(rng.IntN(256))
			}
			msgs = append(msgs, c, m[:rng.IntN(len(m))])
		}
	}
	return msgs, well
}

// splits cuts b into pieces in several ways: whole, halves, pieces of one
// to a few thousand bytes at random points, and with empty pieces among
// them.
func splits(rng *rand.Rand, b []byte) [][][]byte {
	out := [][][]byte{{b}}
	for range 6 {
		var ps [][]byte
		rest := b
		for len(rest) > 0 {
			k := 1 + rng.IntN(min(len(rest), []int{3, 40, 700, 5000}[rng.IntN(4)]))
			ps = append(ps, rest[:k:k])
			if rng.IntN(8) == 0 {
				ps = append(ps, []byte{})
			}
			rest = rest[k:]
		}
		out = append(out, ps)
	}
	return out
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestPiecesAgreeWithJoined holds what the decoder reads from a message
// in pieces (its sections, message-id and checksum) to what it reads from
// the joined bytes: equal, or, where the pieces do not say, a refusal
// that sends it to the joined bytes. Every well-formed message of the
// set is answered from its pieces, however cut.
func TestPiecesAgreeWithJoined(t *testing.T) {
	msgs, well := piecedMessages(t)
	rng := rand.New(rand.NewPCG(5, 6))
	var d Decoder
	var st direction
	answered, refused := 0, 0
	for i, b := range msgs {
		var want Message
		werr := ParseMessage(b, &want)
		wantID := want.messageID(b, &Composite{}, func(s []byte) string { return string(s) })
		wantCk := want.VerifyChecksum(b)
		for _, ps := range splits(rng, b) {
			var p pieced
			p.reset(ps)
			var got Message
			ok, gerr := parseMessagePieces(&p, &got)
			if !ok {
				if i < well {
					t.Fatalf("message %d (%d bytes, %d pieces): well formed, but not answered from its pieces", i, len(b), len(ps))
				}
				refused++
				continue
			}
			answered++
			if errText(gerr) != errText(werr) {
				t.Fatalf("message %d: error %q from pieces, %q joined", i, errText(gerr), errText(werr))
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("message %d (%d pieces):\npieces %+v\njoined %+v", i, len(ps), got, want)
			}
			if id := d.messageIDPieces(&st, &p, &got); id != wantID {
				t.Fatalf("message %d: message-id %q from pieces, %q joined", i, id, wantID)
			}
			if ck := verifyChecksumPieces(&p, &got); ck != wantCk {
				t.Fatalf("message %d: checksum %+v from pieces, %+v joined", i, ck, wantCk)
			}
		}
	}
	t.Logf("%d messages (%d well formed), cut %d times: %d answered from the pieces, %d refused", len(msgs), well, len(msgs)*7, answered, refused)
	if refused == 0 || answered < 10*well {
		t.Errorf("%d answered, %d refused: the set does not reach both ways", answered, refused)
	}
}

// TestBareInPieces holds the immutability tracker's reading of a bare
// message in pieces (its hash, its first difference from another, either
// joined or in pieces) to its reading of the joined bytes.
func TestBareInPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	im := NewImmutability()
	for range 300 {
		a := make([]byte, rng.IntN(9000))
		for i := range a {
			a[i] = byte(rng.IntN(4))
		}
		b := append([]byte(nil), a...)
		switch rng.IntN(4) {
		case 0: // the same
		case 1:
			if len(b) > 0 {
				b[rng.IntN(len(b))]++
			}
		case 2:
			b = b[:rng.IntN(len(b)+1)]
		case 3:
			b = append(b, byte(rng.IntN(4)))
		}
		want := firstDiff(a, b)
		for _, pa := range splits(rng, a)[:3] {
			for _, pb := range splits(rng, b)[:3] {
				ma := bareMsg{pieces: slicePieces(pa, 0, len(a)), n: len(a)}
				mb := bareMsg{pieces: slicePieces(pb, 0, len(b)), n: len(b)}
				jb := bareMsg{b: b, n: len(b)}
				if got := firstDiffBare(&ma, &mb); got != want {
					t.Fatalf("first difference %d in pieces, %d joined", got, want)
				}
				if got := firstDiffBare(&ma, &jb); got != want {
					t.Fatalf("first difference %d against joined, %d joined", got, want)
				}
				if im.sum("", &mb) != im.sum("", &jb) {
					t.Fatal("the hash of the pieces is not the hash of the bytes")
				}
			}
		}
	}
	// A range of the pieces, as a bare message is of its message.
	ps := [][]byte{[]byte("abc"), {}, []byte("defgh"), []byte("ij")}
	for from := 0; from <= 10; from++ {
		for to := from; to <= 10; to++ {
			if got := bytes.Join(slicePieces(ps, from, to), nil); string(got) != "abcdefghij"[from:to] {
				t.Fatalf("slicePieces %d..%d: %q", from, to, got)
			}
		}
	}
}

// TestPendingMessages decodes deliveries of many transfers with and
// without decode.Options.FieldsSeldom (where, on stable input, the
// message is left in pieces; copied into the pieces' chunks, it is
// joined at once) and they agree: every unit's summary, warnings, message-id
// and checksum, the message's bytes once asked for, and the immutability
// tracker's verdicts, a modified message's included; and the pieces are
// joined only when asked for.
func TestPendingMessages(t *testing.T) {
	big := bytes.Repeat([]byte("wiretap "), 3000)
	props := func(id string) []byte { return AppendList(nil, AppendString(nil, id)) }
	var in, out []byte
	ownFrames := 0 // messages of either side, all of whose frames are large
	in = append(in, "AMQP\x00\x01\x00\x00"...)
	out = append(out, "AMQP\x00\x01\x00\x00"...)
	for i := range 6 {
		id := "m-" + string(rune('a'+i))
		alg := []string{"", CRC32, Adler32}[i%3]
		msg, _ := buildMessage(alg, i == 4, section{DescriptorProperties, props(id)}, section{DescriptorData, AppendBinary(nil, big[:len(big)-i*100])})
		sent := msg
		if i == 2 || i == 5 {
			// The broker changes a byte of the body (and, the second
			// time, one of the message-id's).
			sent = append([]byte(nil), msg...)
			sent[len(sent)/2] ^= 1
			if i == 5 {
				sent[bytes.Index(sent, []byte(id))+1] = 'z'
			}
		}
		for _, side := range []struct {
			dst *[]byte
			m   []byte
		}{{&in, msg}, {&out, sent}} {
			step := 1000 + 997*i
			own := true // every frame a unit's own bytes when copied
			for off := 0; off < len(side.m); off += step {
				end := min(off+step, len(side.m))
				f := transferFrame(0, 0, uint32(i), end < len(side.m), side.m[off:end])
				own = own && len(f) > rawCarved
				*side.dst = append(*side.dst, f...)
			}
			if own {
				ownFrames++
			}
		}
	}
	// As `read` decodes a mapped capture: stable input, fields seldom
	// wanted, whole streams; and the same fields-seldom decoder fed in
	// chunks of a copy, where frames are copied into the pieces' chunks
	// and the message is joined at once; and the plain decoder.
	run := func(seldom, stable bool) ([]*decode.Unit, []*decode.Unit) {
		opt := decode.DefaultOptions()
		opt.FieldsSeldom, opt.Transient, opt.StableInput = seldom, seldom, stable
		var units [2][]*decode.Unit
		for i, b := range [][]byte{in, out} {
			conn := &decode.Conn{ID: i + 1, Proto: decode.ProtoAMQP10}
			d := New(conn, opt, func(u *decode.Unit) { units[i] = append(units[i], u) })
			dir := []decode.Dir{decode.DirF, decode.DirB}[i]
			if stable {
				d.Feed(dir, b, time.Unix(0, 0))
				continue
			}
			for off := 0; off < len(b); off += 4096 {
				d.Feed(dir, append([]byte(nil), b[off:min(off+4096, len(b))]...), time.Unix(0, 0))
			}
		}
		return units[0], units[1]
	}
	left := func(sets ...[]*decode.Unit) int {
		n := 0
		for _, set := range sets {
			for _, u := range set {
				if cm, _ := u.Ext().(*CompletedMessage); cm != nil && cm.pending != nil && cm.Bytes == nil {
					n++
				}
			}
		}
		return n
	}
	pin, pout := run(true, true)
	cin, cout := run(true, false)
	if pending := left(pin, pout); pending != 12 {
		t.Fatalf("%d messages left in pieces, want all 12", pending)
	}
	// Copied, a frame of a unit's own bytes (larger than rawCarved) is
	// kept as them, a smaller one goes into a chunk: only messages of
	// large frames alone are left in pieces.
	if ownFrames == 0 || ownFrames == 12 {
		t.Fatalf("%d messages of large frames alone: the set does not reach both ways", ownFrames)
	}
	if copied := left(cin, cout); copied != ownFrames {
		t.Fatalf("%d messages of a copied stream left in pieces, want the %d of large frames alone", copied, ownFrames)
	}
	for _, c := range []struct {
		name      string
		pin, pout []*decode.Unit
	}{{"in pieces", pin, pout}, {"copied", cin, cout}} {
		jin, jout := run(false, false)
		pim, jim := NewImmutability(), NewImmutability()
		for _, set := range []struct{ p, j []*decode.Unit }{{c.pin, jin}, {c.pout, jout}} {
			if len(set.p) != len(set.j) {
				t.Fatalf("%d units %s, %d joined", len(set.p), c.name, len(set.j))
			}
			for k := range set.p {
				p, j := set.p[k], set.j[k]
				p.N, j.N = k+1, k+1
				pv, pok := pim.Observe(p)
				jv, jok := jim.Observe(j)
				if pok != jok || !reflect.DeepEqual(pv, jv) {
					t.Fatalf("unit %d: verdict %+v %s, %+v joined", k, pv, c.name, jv)
				}
				if p.Summary != j.Summary || p.MessageID() != j.MessageID() || !reflect.DeepEqual(p.Warnings(), j.Warnings()) ||
					!reflect.DeepEqual(p.Checksum(), j.Checksum()) {
					t.Fatalf("unit %d:\n%s %q %q %v %+v\njoined %q %q %v %+v", k, c.name, p.Summary, p.MessageID(), p.Warnings(), p.Checksum(),
						j.Summary, j.MessageID(), j.Warnings(), j.Checksum())
				}
				pm, jm := MessageOf(p), MessageOf(j)
				if (pm == nil) != (jm == nil) || pm != nil && (!bytes.Equal(pm.Bytes, jm.Bytes) || pm.Bare() == nil) {
					t.Fatalf("unit %d: message bytes differ once joined", k)
				}
			}
		}
		// The message whose message-id the broker changed pairs with none.
		if r := pim.Report(); r != jim.Report() || r.Paired != 5 || r.Modified != 1 || r.Identical != 4 {
			t.Fatalf("report %+v %s, %+v joined", r, c.name, jim.Report())
		}
		if !reflect.DeepEqual(pim.Summary(), jim.Summary()) {
			t.Fatalf("summary %q %s, %q joined", pim.Summary(), c.name, jim.Summary())
		}
	}
}

// FuzzPieces: a message cut anywhere reads from its pieces as it does
// joined, or is refused to the joined bytes.
func FuzzPieces(f *testing.F) {
	msgs, _ := piecedMessages(f)
	for i, m := range msgs {
		if i%50 == 0 || i < 80 {
			f.Add(m, uint64(i))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, cuts uint64) {
		rng := rand.New(rand.NewPCG(cuts, 0))
		var want Message
		werr := ParseMessage(b, &want)
		var d Decoder
		var st direction
		for _, ps := range splits(rng, b)[:3] {
			var p pieced
			p.reset(ps)
			var got Message
			ok, gerr := parseMessagePieces(&p, &got)
			if !ok {
				continue
			}
			if errText(gerr) != errText(werr) || !reflect.DeepEqual(got, want) {
				t.Fatalf("pieces %+v %v, joined %+v %v", got, gerr, want, werr)
			}
			if id, wid := d.messageIDPieces(&st, &p, &got), want.messageID(b, &Composite{}, func(s []byte) string { return string(s) }); id != wid {
				t.Fatalf("message-id %q from pieces, %q joined", id, wid)
			}
			if ck, wck := verifyChecksumPieces(&p, &got), want.VerifyChecksum(b); ck != wck {
				t.Fatalf("checksum %+v from pieces, %+v joined", ck, wck)
			}
		}
	})
}
