package capture_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
)

// digest is a Handler that hashes what it is told, for comparing long
// captures cheaply.
type digest struct {
	h    hash.Hash
	n    int64
	line []byte
}

func newDigest() *digest { return &digest{h: sha256.New()} }

func (d *digest) event(kind string, f *capture.Flow, fromA bool, n int, t time.Time) {
	d.n++
	d.line = fmt.Appendf(d.line[:0], "%s %d %v %d %d %s %s %v\n", kind, f.ID, fromA, n, t.UnixNano(), f.A, f.B, f.SYN)
	d.h.Write(d.line)
}

func (d *digest) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	d.event("data", f, fromA, len(data), t)
	d.h.Write(data)
}
func (d *digest) Gap(f *capture.Flow, fromA bool, n int, t time.Time) { d.event("gap", f, fromA, n, t) }
func (d *digest) Close(f *capture.Flow, t time.Time)                  { d.event("close", f, false, 0, t) }

func (d *digest) sum() string { return fmt.Sprintf("%d events %x", d.n, d.h.Sum(nil)) }

// readBoth reads the file at path mapped (Open) and through a buffer
// (Read over a copy of its bytes) and fails when the two differ in what
// the handler is told, the counts or the warnings.
func readBoth(t *testing.T, path string) (mapped bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := newDigest()
	wantStats, wantErr := capture.Read(bytes.NewReader(b), path, want, nil)
	in, err := capture.Open(path)
	if (err != nil) != (wantErr != nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("%s: Open: %v, Read: %v", path, err, wantErr)
	}
	if err != nil {
		return false
	}
	defer in.Close()
	got := newDigest()
	gotStats, err := in.Read(got, nil)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if g, w := got.sum(), want.sum(); g != w {
		t.Fatalf("%s: mapped %v, the handler was told %s, through a buffer %s", path, in.Stable(), g, w)
	}
	if g, w := fmt.Sprintf("%+v", *gotStats), fmt.Sprintf("%+v", *wantStats); g != w {
		t.Fatalf("%s: stats\n%s\nthrough a buffer\n%s", path, g, w)
	}
	return in.Stable()
}

// TestOpenAgreesWithRead reads every shipped capture mapped and through
// a buffer: the mapped readers (pcapMem, the pcapng reader over memory)
// must say what gopacket's pcapgo and the buffered pcapng reader say.
func TestOpenAgreesWithRead(t *testing.T) {
	var files []string
	for _, glob := range []string{"testdata/*.pcap*", "../testdata/*.pcap*", "../testdata/hostile/*.pcap*"} {
		m, _ := filepath.Glob(glob)
		files = append(files, m...)
	}
	if len(files) < 20 {
		t.Fatalf("only %d captures found", len(files))
	}
	mapped := 0
	for _, f := range files {
		if testing.Short() && strings.Contains(f, "hostile") {
			continue
		}
		switch m := readBoth(t, f); {
		case m && strings.HasSuffix(f, ".gz"):
			t.Errorf("%s: a gzip file was mapped", f)
		case m:
			mapped++
		}
	}
	if mapped == 0 {
		t.Error("no capture was mapped")
	}
}

// TestOpenCutAndDamaged reads hand-made files cut at every length and
// with bytes changed at random, mapped and through a buffer: the same
// packets, the same errors (cut short, bogus lengths, bad headers).
func TestOpenCutAndDamaged(t *testing.T) {
	var recs []record
	for i, seg := range conversation(cli, srv) {
		recs = append(recs, record{t: time.Unix(int64(i), int64(i)*1000), data: frame(1, seg.ip(0), 0)})
	}
	files := map[string][]byte{
		"pcap-le":   pcapFile(binary.LittleEndian, false, 1, recs),
		"pcap-be":   pcapFile(binary.BigEndian, true, 1, recs),
		"pcapng-le": ngSection(binary.LittleEndian, []ngIface{{link: 1}}, recs),
		"pcapng-be": ngSection(binary.BigEndian, []ngIface{{link: 1, tsresol: 9}}, recs),
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	for name, whole := range files {
		path := filepath.Join(dir, name)
		try := func(b []byte) {
			t.Helper()
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			readBoth(t, path)
		}
		for n := 1; n <= len(whole); n++ {
			try(whole[:n])
		}
		for range 300 {
			b := bytes.Clone(whole)
			for range 1 + rng.IntN(3) {
				b[rng.IntN(len(b))] = byte(rng.Uint32())
			}
			try(b)
		}
	}
}

// bigCapture writes a pcapng file of at least size bytes: one connection
// whose client sends numbered lines in segments of 1400 bytes. It returns
// the path and the bytes the client sent.
func bigCapture(t testing.TB, size int) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "big.pcapng")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.Write(ngSection(binary.LittleEndian, []ngIface{{link: 1}}, nil))
	var sent bytes.Buffer
	seq := uint32(100)
	head := []tcp{
		{src: cli, dst: srv, seq: seq - 1, flags: syn},
		{src: srv, dst: cli, seq: 500, ack: seq, flags: syn | ack},
	}
	var recs []record
	for _, s := range head {
		recs = append(recs, record{t: time.Unix(1, 0), data: frame(1, s.ip(0), 0)})
	}
	w.Write(ngSection(binary.LittleEndian, []ngIface{{link: 1}}, recs)[28+20:]) // the packets, without SHB and IDB
	written := 0
	for n := 0; written < size; n++ {
		var p []byte
		for len(p) < 1400 {
			p = strconv.AppendInt(p, int64(len(p)+n*1400), 10)
			p = append(p, '\n')
		}
		p = p[:1400]
		sent.Write(p)
		s := tcp{src: cli, dst: srv, seq: seq, ack: 501, flags: ack | psh, payload: string(p)}
		seq += uint32(len(p))
		b := ngSection(binary.LittleEndian, []ngIface{{link: 1}}, []record{{t: time.Unix(2, int64(n)), data: frame(1, s.ip(0), 0)}})
		w.Write(b[28+20:])
		written += len(b) - 48
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, sent.Bytes()
}

// keeper keeps every byte slice it is given, as a handler may when the
// input is stable, and notes the most of the mapping resident at once.
type keeper struct {
	kept    [][]byte
	copies  bytes.Buffer
	n       int
	rssFile int64
}

func (k *keeper) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	k.kept = append(k.kept, data)
	k.copies.Write(data)
	if k.n++; k.n%512 == 0 {
		k.rssFile = max(k.rssFile, rssFile())
	}
}

func (k *keeper) Gap(f *capture.Flow, fromA bool, n int, t time.Time) {}
func (k *keeper) Close(f *capture.Flow, t time.Time)                  {}

// rssFile is the process's resident file-backed memory (the mapping's
// pages among it), in bytes; 0 where /proc does not say.
func rssFile() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "RssFile:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n << 10
		}
	}
	return 0
}

// TestOpenStable reads a capture larger than what the mapping keeps
// resident: the bytes handed to the handler stay valid and unchanged
// until Close, though the pages behind the read position were given back
// and are read again from the file, and the mapping's resident part stays
// bounded. Read again, the input gives the same bytes.
func TestOpenStable(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("files are mapped on Linux only")
	}
	size := 96 << 20
	if testing.Short() {
		size = 40 << 20
	}
	path, sent := bigCapture(t, size)
	in, err := capture.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if !in.Stable() {
		t.Fatal("not mapped")
	}
	before := rssFile()
	for round := range 2 {
		k := new(keeper)
		if _, err := in.Read(k, nil); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(k.copies.Bytes(), sent) {
			t.Fatalf("round %d: the handler was given %d bytes, not the %d sent", round, k.copies.Len(), len(sent))
		}
		if got := bytes.Join(k.kept, nil); !bytes.Equal(got, sent) {
			t.Fatalf("round %d: the bytes kept changed after they were handed on", round)
		}
		// What the mapping keeps resident: behind the read position,
		// ahead of it and between two releases (see mmap_linux.go), with
		// room for the test's own pages. (The second round starts with
		// every page resident: the first one's check read them all.)
		t.Logf("round %d: resident file pages grew by at most %d MiB", round, (k.rssFile-before)>>20)
		if grew := k.rssFile - before; round == 0 && before > 0 && grew > 40<<20 {
			t.Errorf("round %d: resident file pages grew by %d MiB reading %d MiB", round, grew>>20, size>>20)
		}
	}
}

// TestOpenGzipNotStable: a compressed file is read through a buffer,
// and may be read again from its start.
func TestOpenGzipNotStable(t *testing.T) {
	in, err := capture.Open("../testdata/hostile/amqp091-headers-200k.pcapng.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if in.Stable() {
		t.Error("a gzip file is stable")
	}
	a, b := newRecorder(), newRecorder()
	if _, err := in.Read(a, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Read(b, nil); err != nil {
		t.Fatal(err)
	}
	if a.log.String() != b.log.String() || a.log.Len() == 0 {
		t.Error("read twice, the file said different things")
	}
	r, err := capture.NewInput(bytes.NewReader(nil), "empty")
	if err == nil || r != nil {
		t.Errorf("an empty reader: %v", err)
	}
}

// toucher is a handler that reads every 64th byte it is given, as a
// decoder reads them all.
type toucher struct{ sum byte }

func (k *toucher) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	for i := 0; i < len(data); i += 64 {
		k.sum += data[i]
	}
}
func (k *toucher) Gap(f *capture.Flow, fromA bool, n int, t time.Time) {}
func (k *toucher) Close(f *capture.Flow, t time.Time)                  {}

// BenchmarkOpenRead reads a 64 MiB capture mapped, and through a buffer
// as a pipe is read, each time from the file's start.
func BenchmarkOpenRead(b *testing.B) {
	path, _ := bigCapture(b, 64<<20)
	for _, mapped := range []bool{true, false} {
		b.Run("mapped="+strconv.FormatBool(mapped), func(b *testing.B) {
			b.SetBytes(64 << 20)
			for b.Loop() {
				k := new(toucher)
				if mapped {
					in, err := capture.Open(path)
					if err != nil {
						b.Fatal(err)
					}
					in.Read(k, nil)
					in.Close()
					continue
				}
				f, _ := os.Open(path)
				capture.Read(struct{ *os.File }{f}, path, k, nil)
				f.Close()
			}
		})
	}
}
