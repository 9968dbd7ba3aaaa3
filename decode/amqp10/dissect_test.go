package amqp10

import (
	"bytes"
	"fmt"
	"hash/adler32"
	"hash/crc32"
	"strconv"
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
)

// footerEntry is one annotation of a test message's footer.
type footerEntry struct {
	key string
	// str encodes the key as a string, not a symbol (checksum
	// verification ignores such keys).
	str bool
	// sum (CRC32 or Adler32) makes the value that checksum of the bare
	// message, as a four-byte uint; wrong flips its lowest bit.
	sum   string
	wrong bool
	// val is the encoded value when sum is empty.
	val []byte
}

// encode returns the entry's encoded key and value for bare message bare.
func (e footerEntry) encode(bare []byte) (key, val []byte) {
	if e.str {
		key = AppendString(nil, e.key)
	} else {
		key = AppendSymbol(nil, e.key)
	}
	if e.sum == "" {
		return key, e.val
	}
	v := sumOf(e.sum, bare)
	if e.wrong {
		v ^= 1
	}
	return key, AppendUintFull(nil, v)
}

func sumOf(alg string, b []byte) uint32 {
	if alg == Adler32 {
		return adler32.Checksum(b)
	}
	return crc32.ChecksumIEEE(b)
}

// cut is where a transfer ends, as an offset from a landmark of the
// message: "bare" (its start), "footer", "key" or "value" (the start of
// the checksum annotation's key or value).
type cut struct {
	at string
	d  int
}

// TestChecksumFieldRanges checks the byte ranges of amqp.checksum and its
// children in the unit that completes a message, against offsets computed
// here from the message's own construction: the verdict and
// amqp.checksum.actual cover exactly the bytes the algorithm sums, the
// algorithm the footer key, expected the footer value, and a range that
// lies (partly) in an earlier transfer has none. It also checks that the
// footer shows checksum annotations in hex.
func TestChecksumFieldRanges(t *testing.T) {
	sec := func(code uint64, body []byte) []byte { return AppendDescribed(nil, code, body) }
	props := sec(DescriptorProperties, AppendList(nil, AppendString(nil, "id-1"), AppendNull(nil), AppendString(nil, "/queue/q")))
	app := sec(DescriptorApplicationProperties, AppendMap(nil, AppendString(nil, "flag"), AppendBoolean(nil, true), AppendString(nil, "n"), AppendLong(nil, -5)))
	data := func(s string) []byte { return sec(DescriptorData, AppendBinary(nil, []byte(s))) }
	value := sec(DescriptorAMQPValue, AppendString(nil, "value"))
	header := sec(DescriptorHeader, AppendList(nil, AppendBool(nil, true)))
	annots := sec(DescriptorMessageAnnotations, AppendMap(nil, AppendSymbol(nil, "x-opt-a"), AppendString(nil, "b")))
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	crc := footerEntry{key: AnnotationCRC32, sum: CRC32}
	adler := footerEntry{key: AnnotationAdler32, sum: Adler32}
	long := bytes.Repeat([]byte("0123456789"), 60)

	cases := []struct {
		name   string
		prefix []byte // header and annotations, before the bare message
		bare   []byte // the bare message's sections
		footer []footerEntry
		use    int   // the footer entry the verdict comes from
		cuts   []cut // transfer boundaries; none: one transfer
		want   decode.ChecksumStatus
	}{
		{name: "crc-32", bare: cat(props, data("hello")), footer: []footerEntry{crc}, want: decode.ChecksumOK},
		{name: "adler-32 after header", prefix: cat(header, annots), bare: cat(props, app, value), footer: []footerEntry{adler}, want: decode.ChecksumOK},
		{name: "wrong crc-32", bare: cat(props, data("hello")), footer: []footerEntry{{key: AnnotationCRC32, sum: CRC32, wrong: true}}, want: decode.ChecksumMismatch},
		{name: "wrong adler-32", prefix: header, bare: data("hello"), footer: []footerEntry{{key: AnnotationAdler32, sum: Adler32, wrong: true}}, want: decode.ChecksumMismatch},
		{name: "no bare message", prefix: header, footer: []footerEntry{crc}, want: decode.ChecksumOK},
		{name: "several annotations", prefix: annots, bare: cat(props, data("x"), data("y")), footer: []footerEntry{
			{key: "x-opt-other", val: AppendUintFull(nil, 7)},
			{key: AnnotationCRC32, str: true, val: AppendUintFull(nil, 12345)},
			adler,
			crc,
		}, use: 2, want: decode.ChecksumOK},

		{name: "2 transfers, cut in the bare message", bare: cat(props, data(string(long))), footer: []footerEntry{crc},
			cuts: []cut{{"bare", 100}}, want: decode.ChecksumOK},
		{name: "2 transfers, cut at the bare message", prefix: cat(header, annots), bare: cat(props, app, data("hello")), footer: []footerEntry{adler},
			cuts: []cut{{"bare", 0}}, want: decode.ChecksumOK},
		{name: "2 transfers, cut just after the bare message's start", prefix: cat(header, annots), bare: cat(props, data("hello")), footer: []footerEntry{crc},
			cuts: []cut{{"bare", 1}}, want: decode.ChecksumOK},
		{name: "2 transfers, cut at the footer", bare: cat(props, value), footer: []footerEntry{adler},
			cuts: []cut{{"footer", 0}}, want: decode.ChecksumOK},
		{name: "3 transfers, cut in the key", prefix: header, bare: cat(props, data(string(long))), footer: []footerEntry{crc},
			cuts: []cut{{"bare", 2}, {"key", 1}}, want: decode.ChecksumOK},
		{name: "3 transfers, cut in the value", bare: cat(app, data(string(long))), footer: []footerEntry{{key: "x-opt-other", val: AppendString(nil, "v")}, adler},
			use: 1, cuts: []cut{{"bare", 300}, {"value", 2}}, want: decode.ChecksumOK},
		{name: "3 transfers, wrong crc-32, bare message in the last", prefix: cat(header, annots), bare: cat(props, data("hello")), footer: []footerEntry{{key: AnnotationCRC32, sum: CRC32, wrong: true}},
			cuts: []cut{{"bare", -3}, {"bare", 0}}, want: decode.ChecksumMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Build the message and note where its parts are.
			var kv [][]byte
			var keyOff, valOff int // within the footer's map body
			var keyEnc, valEnc []byte
			for i, e := range tc.footer {
				k, v := e.encode(tc.bare)
				if i == tc.use {
					keyEnc, valEnc = k, v
				}
				kv = append(kv, k, v)
			}
			footer := AppendDescribed(nil, DescriptorFooter, AppendMap(nil, kv...))
			keyOff = bytes.Index(footer, append(append([]byte(nil), keyEnc...), valEnc...))
			if keyOff < 0 {
				t.Fatal("annotation not found in the footer")
			}
			valOff = keyOff + len(keyEnc)
			msg := cat(tc.prefix, tc.bare, footer)
			bareStart, footerStart := len(tc.prefix), len(tc.prefix)+len(tc.bare)
			marks := map[string]int{"bare": bareStart, "footer": footerStart, "key": footerStart + keyOff, "value": footerStart + valOff}

			var stream []byte
			from := 0
			for _, c := range tc.cuts {
				to := marks[c.at] + c.d
				if to <= from || to >= len(msg) {
					t.Fatalf("cut %v at %d: outside %d..%d", c, to, from, len(msg))
				}
				stream = append(stream, transferFrame(0, 0, 1, true, msg[from:to])...)
				from = to
			}
			last := transferFrame(0, 0, 1, false, msg[from:])
			stream = append(stream, last...)
			// The last frame's Raw ends with the message's tail: message
			// offset x >= from is Raw offset x + shift.
			shift := len(last) - len(msg)
			wantRange := func(start, n int) (off, length int) {
				if start < from || n == 0 {
					return 0, 0
				}
				return start + shift, n
			}
			sumAlg := tc.footer[tc.use].sum
			// What the footer says: the value as built, not as decoded.
			wantExpected := sumOf(sumAlg, tc.bare)
			if tc.footer[tc.use].wrong {
				wantExpected ^= 1
			}

			for _, chunk := range []int{0, 7} {
				us := collect(t, nil, chunk, fw(stream))
				if len(us) != len(tc.cuts)+1 {
					t.Fatalf("%d units, want %d", len(us), len(tc.cuts)+1)
				}
				u := us[len(us)-1]
				ck := u.Checksum()
				if ck == nil || ck.Status != tc.want || ck.Algorithm != sumAlg || ck.Expected != wantExpected {
					t.Fatalf("checksum %+v, want %s %s expected %#x (%s)", ck, sumAlg, tc.want, wantExpected, u.Summary)
				}
				fs := u.Fields()
				verdict := decode.Find(fs, "amqp.checksum")
				alg := decode.Find(fs, "amqp.checksum.algorithm")
				exp := decode.Find(fs, "amqp.checksum.expected")
				act := decode.Find(fs, "amqp.checksum.actual")
				if verdict == nil || alg == nil || exp == nil || act == nil {
					t.Fatalf("checksum fields missing:\n%s", dumpFields(fs))
				}
				check := func(f *decode.Field, start int, enc []byte) {
					t.Helper()
					off, n := wantRange(start, len(enc))
					if f.Length != n || (n > 0 && f.Offset != off) {
						t.Errorf("%s: range %d+%d, want %d+%d", f.Name, f.Offset, f.Length, off, n)
						return
					}
					if n > 0 && !bytes.Equal(u.Raw[f.Offset:f.Offset+f.Length], enc) {
						t.Errorf("%s: covers %x, want %x", f.Name, u.Raw[f.Offset:f.Offset+f.Length], enc)
					}
				}
				check(verdict, bareStart, tc.bare)
				check(act, bareStart, tc.bare)
				check(alg, marks["key"], keyEnc)
				check(exp, marks["value"], valEnc)

				// The highlighted bytes are what was summed: summing them
				// gives the actual value, and the expected one unless the
				// footer is wrong.
				if verdict.Length > 0 {
					got := sumOf(sumAlg, u.Raw[verdict.Offset:verdict.Offset+verdict.Length])
					if got != ck.Actual || act.Value != uint64(got) {
						t.Errorf("sum of the verdict's bytes %#x, actual %#x (field %v)", got, ck.Actual, act.Value)
					}
					if (got == wantExpected) != (tc.want == decode.ChecksumOK) {
						t.Errorf("sum of the verdict's bytes %#x, footer %#x, verdict %s", got, wantExpected, tc.want)
					}
				}
				if exp.Length > 0 {
					v, err := Scan(u.Raw[:exp.Offset+exp.Length], exp.Offset)
					if n, ok := v.Uint(u.Raw); err != nil || !ok || v.End != exp.Offset+exp.Length || n != uint64(wantExpected) || exp.Value != n {
						t.Errorf("expected's bytes %x decode to %d (%v), field %v, footer %#x", u.Raw[exp.Offset:exp.Offset+exp.Length], n, err, exp.Value, wantExpected)
					}
				}
				if alg.Length > 0 && string(u.Raw[alg.Offset+alg.Length-len(tc.footer[tc.use].key):alg.Offset+alg.Length]) != tc.footer[tc.use].key {
					t.Errorf("algorithm's bytes %q", u.Raw[alg.Offset:alg.Offset+alg.Length])
				}

				// The footer shows checksum annotations in hex and keeps
				// their values numeric; other annotations are left alone.
				ft := decode.Find(fs, "amqp.footer")
				if ft == nil || len(ft.Kids) != len(tc.footer) {
					t.Fatalf("footer:\n%s", dumpFields(fs))
				}
				for i, e := range tc.footer {
					k := ft.Kids[i]
					_, enc := e.encode(tc.bare)
					v, _ := Scan(enc, 0)
					n, _ := v.Uint(enc)
					want := decode.FormatValue(k.Value)
					if e.sum != "" && !e.str {
						want = "0x" + fmt.Sprintf("%08x", n)
					}
					if k.Key != e.key || k.Text() != want {
						t.Errorf("footer entry %d: %s = %s, want %s = %s", i, k.Key, k.Text(), e.key, want)
					}
					if v.Code == CodeUint && k.Value != n {
						t.Errorf("footer entry %d: value %#v, want uint64 %d", i, k.Value, n)
					}
				}
			}
		})
	}
}

// TestChecksumFieldRangesProton checks the checksum ranges on Proton's
// real traffic: single-transfer messages have them and they cover what
// Proton summed; the multi-transfer message, whose bare message starts in
// an earlier frame, has none for the verdict.
func TestChecksumFieldRangesProton(t *testing.T) {
	recs := loadProtonRecordings(t)
	single, multi := 0, 0
	for ci, rec := range recs {
		for _, u := range collect(t, nil, 0, rec.chunks...) {
			ck, cm := u.Checksum(), MessageOf(u)
			if ck == nil || cm == nil || ck.Status == decode.ChecksumAbsent {
				continue
			}
			fs := u.Fields()
			verdict := decode.Find(fs, "amqp.checksum")
			alg := decode.Find(fs, "amqp.checksum.algorithm")
			exp := decode.Find(fs, "amqp.checksum.expected")
			act := decode.Find(fs, "amqp.checksum.actual")
			name := "conn " + strconv.Itoa(ci+1) + " " + u.MessageID()
			if act.Offset != verdict.Offset || act.Length != verdict.Length {
				t.Errorf("%s: actual %d+%d, verdict %d+%d", name, act.Offset, act.Length, verdict.Offset, verdict.Length)
			}
			if cm.Frames > 1 {
				multi++
				if verdict.Length != 0 {
					t.Errorf("%s: verdict has range %d+%d over %d transfers", name, verdict.Offset, verdict.Length, cm.Frames)
				}
				continue
			}
			single++
			if verdict.Length != len(cm.Bare()) || verdict.Length == 0 {
				t.Errorf("%s: verdict covers %d bytes, bare message has %d", name, verdict.Length, len(cm.Bare()))
				continue
			}
			if got := sumOf(ck.Algorithm, u.Raw[verdict.Offset:verdict.Offset+verdict.Length]); got != ck.Actual {
				t.Errorf("%s: verdict's bytes sum to %#x, actual %#x", name, got, ck.Actual)
			}
			if key := "x-opt-" + ck.Algorithm; alg.Length == 0 || !bytes.HasSuffix(u.Raw[alg.Offset:alg.Offset+alg.Length], []byte(key)) {
				t.Errorf("%s: algorithm covers %q, want %s", name, u.Raw[alg.Offset:alg.Offset+alg.Length], key)
			}
			v, err := Scan(u.Raw[:exp.Offset+exp.Length], exp.Offset)
			if n, ok := v.Uint(u.Raw); exp.Length == 0 || err != nil || !ok || n != uint64(ck.Expected) {
				t.Errorf("%s: expected covers %x, want the value %#x", name, u.Raw[exp.Offset:exp.Offset+exp.Length], ck.Expected)
			}
		}
	}
	if single == 0 || multi == 0 {
		t.Errorf("%d single-transfer and %d multi-transfer checksummed messages; the fixture has both", single, multi)
	}
}
