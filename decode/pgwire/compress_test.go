package pgwire_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/pgwire"
	"github.com/wiretap-dev/wiretap/decode/pgwire/compsim"
)

// backendSession builds the backend messages of a plausible session:
// startup, result sets small and large (compressible and not), notices,
// notifications, COPY out, errors, transactions.
func backendSession(seed uint64, queries int) []compsim.Message {
	r := rand.New(rand.NewPCG(seed, 1))
	var msgs []compsim.Message
	add := func(b []byte) {
		m := compsim.Message{Raw: b}
		if b[0] == 'Z' && b[5] == 'I' {
			m.TxEnd = true
		}
		msgs = append(msgs, m)
	}
	add((&pgwire.Authentication{Code: pgwire.AuthOk}).Encode(nil))
	for _, kv := range [][2]string{{"server_version", "15.18"}, {"client_encoding", "UTF8"}, {"TimeZone", "UTC"}} {
		add(pgwire.AppendMessage(nil, 'S', []byte(kv[0]+"\x00"+kv[1]+"\x00")))
	}
	add((&pgwire.BackendKeyData{ProcessID: 4242, SecretKey: []byte{1, 2, 3, 4}}).Encode(nil))
	add((&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(nil))
	inTx := false
	for q := 0; q < queries; q++ {
		switch r.IntN(6) {
		case 0: // notice + small result
			add((&pgwire.ErrorResponse{Fields: []pgwire.ErrorField{{'S', []byte("NOTICE")}, {'C', []byte("00000")}, {'M', []byte("hello " + strconv.Itoa(q))}}}).Encode(nil, 'N'))
			fallthrough
		case 1, 2: // a result set
			rd := pgwire.RowDescription{Fields: []pgwire.FieldDescription{
				{Name: []byte("aid"), TypeOID: 23, TypeSize: 4, TypeModifier: -1},
				{Name: []byte("bid"), TypeOID: 23, TypeSize: 4, TypeModifier: -1},
				{Name: []byte("filler"), TypeOID: 1042, TypeSize: -1, TypeModifier: 88},
			}}
			add(rd.Encode(nil))
			rows := 1 + r.IntN(300)
			for i := 0; i < rows; i++ {
				filler := strings.Repeat(" ", 84)
				if r.IntN(10) == 0 {
					b := make([]byte, 84)
					for j := range b {
						b[j] = byte('a' + r.IntN(26))
					}
					filler = string(b)
				}
				dr := pgwire.DataRow{Values: [][]byte{[]byte(strconv.Itoa(q*1000 + i)), []byte(strconv.Itoa(i % 7)), []byte(filler)}}
				if i%50 == 49 {
					dr.Values[1] = nil
				}
				add(dr.Encode(nil))
			}
			add(pgwire.AppendMessage(nil, 'C', []byte("SELECT "+strconv.Itoa(rows)+"\x00")))
		case 3: // a large, barely compressible value split across blocks
			n := 70000 + r.IntN(200000)
			v := make([]byte, n)
			for j := range v {
				v[j] = byte(r.Uint32())
			}
			add(pgwire.AppendMessage(nil, '1', nil))
			add(pgwire.AppendMessage(nil, '2', nil))
			add((&pgwire.DataRow{Values: [][]byte{v}}).Encode(nil))
			add(pgwire.AppendMessage(nil, 'C', []byte("SELECT 1\x00")))
		case 4: // COPY out
			add(pgwire.AppendMessage(nil, 'H', []byte{0, 0, 2, 0, 0, 0, 0}))
			for i := 0; i < 20; i++ {
				add(pgwire.AppendMessage(nil, 'd', []byte(strconv.Itoa(i)+"\tvalue "+strconv.Itoa(i)+"\n")))
			}
			add(pgwire.AppendMessage(nil, 'c', nil))
			add(pgwire.AppendMessage(nil, 'C', []byte("COPY 20\x00")))
		case 5: // error, notification, empty query
			add((&pgwire.ErrorResponse{Fields: []pgwire.ErrorField{{'S', []byte("ERROR")}, {'C', []byte("42P01")}, {'M', []byte("relation does not exist")}}}).Encode(nil, 'E'))
			add(pgwire.AppendMessage(nil, 'A', []byte("\x00\x00\x10\x92ch\x00payload\x00")))
			add(pgwire.AppendMessage(nil, 'I', nil))
		}
		if r.IntN(3) == 0 {
			inTx = !inTx
		}
		st := byte('I')
		if inTx {
			st = 'T'
		}
		add((&pgwire.ReadyForQuery{TxStatus: st}).Encode(nil))
	}
	return msgs
}

func concat(msgs []compsim.Message) []byte {
	var b []byte
	for _, m := range msgs {
		b = append(b, m.Raw...)
	}
	return b
}

// decodeBackend feeds a backend stream in segments of random sizes (1 to
// max bytes) and returns the units.
func decodeBackend(stream []byte, seed uint64, max int, opt *decode.Options) ([]*decode.Unit, *decode.Conn) {
	r := rand.New(rand.NewPCG(seed, 2))
	conn := &decode.Conn{ID: 1, Proto: decode.ProtoPgSQL}
	var units []*decode.Unit
	d := pgwire.New(conn, opt, func(u *decode.Unit) { u.N = len(units) + 1; units = append(units, u) })
	// The backend stream alone: the frontend says nothing, so the decoder
	// learns everything from the backend.
	t := time.Unix(1700000000, 0)
	for len(stream) > 0 {
		n := 1 + r.IntN(max)
		if n > len(stream) {
			n = len(stream)
		}
		d.Feed(decode.DirB, stream[:n], t)
		stream = stream[n:]
	}
	d.End(decode.DirF, t)
	d.End(decode.DirB, t)
	return units, conn
}

// checkRecovered checks that the units carry exactly the original
// messages, in order, byte for byte, and that children follow their
// container.
func checkRecovered(t *testing.T, name string, units []*decode.Unit, want []compsim.Message, allowWarnings bool) (containers int) {
	t.Helper()
	i := 0
	var parent *decode.Unit
	var inner int64 // decompressed offset of the next nested message
	for _, u := range units {
		if u.Err() != "" {
			t.Errorf("%s: unit %d %s: %s", name, u.N, u.Type, u.Err())
			return
		}
		if len(u.Warnings()) > 0 && !allowWarnings {
			t.Errorf("%s: unit %d %s: warnings %q", name, u.N, u.Type, u.Warnings())
		}
		if u.Type == "CompressedMessages" {
			containers++
			parent = u
			continue
		}
		if u.Parent != nil {
			if u.Parent != parent {
				t.Errorf("%s: unit %d has parent %d, want the last container %d", name, u.N, u.Parent.N, parent.N)
			}
			if u.Offset != inner {
				t.Errorf("%s: nested unit %d at decompressed offset %d, want %d", name, u.N, u.Offset, inner)
			}
			inner += int64(len(u.Raw))
		}
		if i >= len(want) {
			t.Errorf("%s: unit %d %s beyond the %d original messages", name, u.N, u.Type, len(want))
			return
		}
		if !bytes.Equal(u.Raw, want[i].Raw) {
			t.Errorf("%s: message %d (%s) differs: got %d bytes, want %d", name, i, u.Type, len(u.Raw), len(want[i].Raw))
			return
		}
		i++
	}
	if i != len(want) {
		t.Errorf("%s: recovered %d of %d messages", name, i, len(want))
	}
	return containers
}

func TestCompressedRoundTripGo(t *testing.T) {
	msgs := backendSession(7, 40)
	for _, cfg := range compsim.StandardConfigs() {
		if cfg.Algorithm == pgwire.CompressionNone {
			continue
		}
		for _, outBuf := range []int{0, 97} {
			cfg.OutBuf = outBuf
			name := cfg.String() + " outbuf=" + strconv.Itoa(outBuf)
			stream, err := compsim.EncodeStream(msgs, cfg)
			if err != nil {
				t.Fatal(name, err)
			}
			for _, seg := range []int{1 << 16, 700, 3} {
				units, conn := decodeBackend(stream, uint64(seg), seg, decode.DefaultOptions())
				n := checkRecovered(t, name+" seg="+strconv.Itoa(seg), units, msgs, false)
				if n == 0 {
					t.Errorf("%s: no CompressedMessages decoded", name)
				}
				if len(conn.Notes) == 0 || !strings.Contains(conn.Notes[0], pgwire.AlgorithmName(cfg.Algorithm)) {
					t.Errorf("%s: no compression report in notes %q", name, conn.Notes)
				}
			}
		}
	}
}

// realEncoder compiles testdata/compress/pgcompress.c against libzstd and
// liblz4.
func realEncoder(t *testing.T) string {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		needPeer(t, "no C compiler: %v", err)
	}
	for _, h := range []string{"/usr/include/zstd.h", "/usr/include/lz4frame.h"} {
		if _, err := os.Stat(h); err != nil {
			needPeer(t, "libzstd-dev/liblz4-dev not installed: %v", err)
		}
	}
	bin := filepath.Join(t.TempDir(), "pgcompress")
	if out, err := exec.Command(cc, "-O2", "-o", bin, "testdata/compress/pgcompress.c", "-lzstd", "-llz4").CombinedOutput(); err != nil {
		t.Fatalf("compile pgcompress.c: %v\n%s", err, out)
	}
	return bin
}

// TestCompressedRoundTripC decodes streams made by an encoder that is not
// ours, on the real zstd and lz4 C libraries.
func TestCompressedRoundTripC(t *testing.T) {
	bin := realEncoder(t)
	msgs := backendSession(11, 40)
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.WriteFile(in, concat(msgs), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, alg := range []string{"zstd", "lz4"} {
		for _, per := range []int{1, 2, 3, 2000, 0} {
			for _, tx := range []int{0, 1} {
				for _, outBuf := range []int{131072, 61} {
					name := fmt.Sprintf("%s msgs=%d tx=%d outbuf=%d", alg, per, tx, outBuf)
					out := filepath.Join(dir, "out")
					if o, err := exec.Command(bin, alg, strconv.Itoa(per), strconv.Itoa(tx), strconv.Itoa(outBuf), in, out).CombinedOutput(); err != nil {
						t.Fatalf("%s: %v\n%s", name, err, o)
					}
					stream, err := os.ReadFile(out)
					if err != nil {
						t.Fatal(err)
					}
					units, _ := decodeBackend(stream, uint64(per*10+tx), 1+outBuf%500, decode.DefaultOptions())
					if n := checkRecovered(t, name, units, msgs, false); n == 0 {
						t.Errorf("%s: no CompressedMessages", name)
					}
				}
			}
		}
	}
}

// TestCompressedCorrupt flips bytes inside one container: that container
// is flagged, the connection's uncompressed messages keep coming, and with
// transaction frames decompression resumes at the next frame.
func TestCompressedCorrupt(t *testing.T) {
	msgs := backendSession(3, 30)
	for _, alg := range []byte{pgwire.CompressionZstd, pgwire.CompressionLZ4} {
		cfg := compsim.Config{Algorithm: alg, MessagesPer: 0, TxFrame: true}
		stream, err := compsim.EncodeStream(msgs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		// Corrupt the middle of the third sizeable container's payload.
		seen := 0
		for off := 0; off+5 < len(stream); {
			typ, l, _ := pgwire.ReadHeader(stream[off:])
			if typ == 'z' && l > 200 {
				seen++
				if seen == 3 {
					data := off + pgwire.HeaderLen + 1 + bytes.IndexByte(stream[off+6:], 0) + 1
					for i := data; i < data+16; i++ {
						stream[i] ^= 0x5a
					}
					break
				}
			}
			off += 1 + int(l)
		}
		if seen < 3 {
			t.Fatalf("%s: fewer than 3 sizeable containers", pgwire.AlgorithmName(alg))
		}
		units, conn := decodeBackend(stream, 5, 1000, decode.DefaultOptions())
		var errs, after, rfq, kidsAfter int
		for _, u := range units {
			if u.Err() != "" {
				errs++
				if !strings.Contains(u.Err(), "CompressedMessages") {
					t.Errorf("error does not name the container: %s", u.Err())
				}
				continue
			}
			if errs > 0 {
				after++
				if u.Type == "ReadyForQuery" {
					rfq++
				}
				if u.Parent != nil {
					kidsAfter++
				}
			}
		}
		if errs == 0 {
			t.Errorf("%s: corruption not reported", pgwire.AlgorithmName(alg))
		}
		if rfq == 0 || kidsAfter == 0 {
			t.Errorf("%s: after the corrupt container: %d units, %d ReadyForQuery, %d decompressed messages; want decoding to go on", pgwire.AlgorithmName(alg), after, rfq, kidsAfter)
		}
		if !strings.Contains(strings.Join(conn.Notes, "\n"), "not decoded") {
			t.Errorf("report does not mention the failure: %q", conn.Notes)
		}
	}
}

// TestCompressedBomb inflates a few kilobytes to a gigabyte of DataRows:
// decoding stops at the limit, says so, and does not take the memory.
func TestCompressedBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("compresses a gigabyte")
	}
	var payload bytes.Buffer
	enc, err := zstd.NewWriter(&payload, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false))
	if err != nil {
		t.Fatal(err)
	}
	row := (&pgwire.DataRow{Values: [][]byte{make([]byte, 1<<20-11)}}).Encode(nil)
	for i := 0; i < 1024; i++ {
		if _, err := enc.Write(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Flush(); err != nil {
		t.Fatal(err)
	}
	var stream []byte
	stream = (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(stream)
	stream = (&pgwire.CompressedMessages{Algorithm: pgwire.CompressionZstd, Types: []byte("D"), Data: payload.Bytes()}).Encode(stream)
	stream = pgwire.AppendMessage(stream, 'C', []byte("SELECT 1024\x00"))
	stream = (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(stream)
	t.Logf("bomb: %d bytes on the wire inflate to %d", len(stream), 1024*len(row))

	opt := decode.DefaultOptions()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	units, _ := decodeBackend(stream, 1, 4096, opt)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d MiB while decoding", alloc>>20)
	if alloc > 512<<20 {
		t.Errorf("decoding the bomb allocated %d MiB, want under 512", alloc>>20)
	}
	var bomb *decode.Unit
	tail := 0
	for _, u := range units {
		if u.Type == "CompressedMessages" {
			bomb = u
		} else if bomb != nil && u.Parent == nil {
			tail++
		}
	}
	if bomb == nil || !strings.Contains(bomb.Err(), "--max-decompressed") {
		t.Fatalf("bomb not stopped with a clear error: %+v", bomb)
	}
	if tail != 2 {
		t.Errorf("%d units after the bomb, want CommandComplete and ReadyForQuery", tail)
	}
}

// TestCompressedWarnings: a declared type string that disagrees with the
// payload, and a message the proposal never compresses arriving
// compressed, are both reported.
func TestCompressedWarnings(t *testing.T) {
	var payload bytes.Buffer
	enc, _ := zstd.NewWriter(&payload, zstd.WithEncoderConcurrency(1))
	enc.Write((&pgwire.DataRow{Values: [][]byte{[]byte("x")}}).Encode(nil))
	enc.Write((&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(nil))
	enc.Close()
	var s []byte
	s = (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(s)
	s = (&pgwire.CompressedMessages{Algorithm: pgwire.CompressionZstd, Types: []byte("TZ"), Data: payload.Bytes()}).Encode(s)
	units, conn := decodeBackend(s, 1, 1<<20, decode.DefaultOptions())
	var got []string
	for _, u := range units {
		got = append(got, u.Warnings()...)
	}
	all := strings.Join(got, "\n")
	if !strings.Contains(all, "declared message types") || !strings.Contains(all, "ReadyForQuery arrived compressed") {
		t.Errorf("warnings: %s", all)
	}
	if len(conn.Notes) == 0 || !strings.Contains(conn.Notes[0], "zstd, 1 CompressedMessages carrying 2 messages") {
		t.Errorf("notes: %q", conn.Notes)
	}
}

// TestCompressedCLIFrames decodes frames made by the zstd and lz4 command
// line tools, which add what the streaming encoder leaves out (content
// checksums, content sizes), carried in containers of 1000 bytes.
func TestCompressedCLIFrames(t *testing.T) {
	msgs := smallSession(4, 20)
	plain := concat(msgs[1:])
	for _, tool := range [][]string{{"zstd", "-q", "-c", "--content-size"}, {"lz4", "-q", "-c", "--content-size", "-BD"}} {
		bin, err := exec.LookPath(tool[0])
		if err != nil {
			needPeer(t, "no %s command: %v", tool[0], err)
		}
		cmd := exec.Command(bin, tool[1:]...)
		cmd.Stdin = bytes.NewReader(plain)
		frame, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", tool[0], err)
		}
		alg := byte(pgwire.CompressionZstd)
		if tool[0] == "lz4" {
			alg = pgwire.CompressionLZ4
		}
		var s []byte
		s = append(s, msgs[0].Raw...)
		var typs []byte
		for _, m := range msgs[1:] {
			typs = append(typs, m.Raw[0])
		}
		for off := 0; off < len(frame); off += 1000 {
			c := pgwire.CompressedMessages{Algorithm: alg, Data: frame[off:min(off+1000, len(frame))]}
			if off == 0 {
				c.Types = typs
			}
			s = c.Encode(s)
		}
		units, _ := decodeBackend(s, 3, 333, decode.DefaultOptions())
		checkRecovered(t, tool[0]+" CLI", units, msgs, true)
	}
}

// TestCompressedSummaryCounts: a CompressedMessages' summary counts the
// messages it carried, in the right number.
func TestCompressedSummaryCounts(t *testing.T) {
	var cfg compsim.Config
	for _, c := range compsim.StandardConfigs() {
		if c.Algorithm != pgwire.CompressionNone {
			cfg = c
			break
		}
	}
	seen := map[bool]bool{}
	for _, n := range []int{1, 40} {
		stream, err := compsim.EncodeStream(backendSession(7, n), cfg)
		if err != nil {
			t.Fatal(err)
		}
		units, _ := decodeBackend(stream, 1<<16, 1<<16, decode.DefaultOptions())
		kids := map[*decode.Unit]int{}
		for _, u := range units {
			if u.Parent != nil {
				kids[u.Parent]++
			}
		}
		for _, u := range units {
			if u.Type != "CompressedMessages" {
				continue
			}
			k := kids[u]
			want := ", " + strconv.Itoa(k) + " messages"
			if k == 1 {
				want = ", 1 message"
			}
			if !strings.HasSuffix(u.Summary, want) {
				t.Errorf("%d messages inside: summary %q", k, u.Summary)
			}
			seen[k == 1] = true
		}
	}
	if !seen[true] || !seen[false] {
		t.Fatalf("the test needs containers of one message and of several: %v", seen)
	}
}
