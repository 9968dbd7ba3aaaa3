package amqp10

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// A recording holds what a relay saw on one TCP connection: each read, in
// the order it happened, tagged with its direction. Reads keep TCP's
// grouping (several frames in one read, frames split over reads), so the
// decoder is fed as a capture would feed it.
type recording struct {
	mu     sync.Mutex
	chunks []feed
}

func (r *recording) add(dir decode.Dir, b []byte) {
	r.mu.Lock()
	r.chunks = append(r.chunks, feed{dir, append([]byte(nil), b...)})
	r.mu.Unlock()
}

// marshal writes records of dir (1 byte), length (4 bytes), data.
func (r *recording) marshal() []byte {
	var out []byte
	for _, c := range r.chunks {
		out = append(out, byte(c.dir))
		out = binary.BigEndian.AppendUint32(out, uint32(len(c.data)))
		out = append(out, c.data...)
	}
	return out
}

func unmarshalRecording(b []byte) (*recording, error) {
	r := &recording{}
	for len(b) > 0 {
		if len(b) < 5 {
			return nil, errors.New("recording: truncated record header")
		}
		n := int(binary.BigEndian.Uint32(b[1:]))
		if len(b)-5 < n {
			return nil, errors.New("recording: truncated record")
		}
		r.chunks = append(r.chunks, feed{decode.Dir(b[0] & 1), b[5 : 5+n]})
		b = b[5+n:]
	}
	return r, nil
}

// relay accepts connections and forwards them to upstream, recording both
// directions.
type relay struct {
	ln       net.Listener
	upstream string
	mu       sync.Mutex
	recs     []*recording
	wg       sync.WaitGroup
}

func startRelay(t *testing.T, upstream string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("relay: %v", err)
	}
	r := &relay{ln: ln, upstream: upstream}
	r.wg.Add(1)
	go r.serve()
	return r
}

func (r *relay) addr() string { return r.ln.Addr().String() }

func (r *relay) serve() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", r.upstream)
		if err != nil {
			c.Close()
			continue
		}
		rec := &recording{}
		r.mu.Lock()
		r.recs = append(r.recs, rec)
		r.mu.Unlock()
		r.wg.Add(2)
		go r.pipe(rec, decode.DirF, up, c)
		go r.pipe(rec, decode.DirB, c, up)
	}
}

func (r *relay) pipe(rec *recording, dir decode.Dir, dst, src net.Conn) {
	defer r.wg.Done()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			rec.add(dir, buf[:n])
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	src.Close()
}

// close stops the relay and returns its recordings once every connection
// ended.
func (r *relay) close() []*recording {
	r.ln.Close()
	r.wg.Wait()
	return r.recs
}

// amqp10Broker returns the address of an AMQP 1.0 broker for live tests:
// $WIRETAP_AMQP10_ADDR, else 127.0.0.1:5672. ok is false when nothing there
// answers a SASL protocol header with one.
func amqp10Broker() (addr string, ok bool) {
	addr = os.Getenv("WIRETAP_AMQP10_ADDR")
	if addr == "" {
		addr = "127.0.0.1:5672"
	}
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return addr, false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write([]byte("AMQP\x03\x01\x00\x00")); err != nil {
		return addr, false
	}
	var h [8]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return addr, false
	}
	return addr, string(h[:]) == "AMQP\x03\x01\x00\x00"
}

// fixture paths under testdata/peers.
func fixture(name string) string { return filepath.Join("testdata", "peers", name) }

func readLines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
