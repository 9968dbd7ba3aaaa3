package main

import (
	"bufio"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/pcapng"
)

// event is one Handler call recorded from the input.
type event struct {
	kind  byte // 'd' data, 'g' gap, 'c' close
	flow  int  // index into recorder.flows
	fromA bool
	data  []byte
	gap   int
	t     time.Time
}

// recorder is a capture.Handler that keeps every call, in order.
type recorder struct {
	flows  []capture.Flow
	index  map[int]int // capture.Flow.ID -> index into flows
	events []event
}

func (r *recorder) flowIndex(f *capture.Flow) int {
	i, ok := r.index[f.ID]
	if !ok {
		i = len(r.flows)
		r.flows = append(r.flows, *f)
		r.index[f.ID] = i
	}
	return i
}

func (r *recorder) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	r.events = append(r.events, event{kind: 'd', flow: r.flowIndex(f), fromA: fromA, data: append([]byte(nil), data...), t: t})
}

func (r *recorder) Gap(f *capture.Flow, fromA bool, n int, t time.Time) {
	if n > 0 {
		r.events = append(r.events, event{kind: 'g', flow: r.flowIndex(f), fromA: fromA, gap: n, t: t})
	}
}

func (r *recorder) Close(f *capture.Flow, t time.Time) {
	r.events = append(r.events, event{kind: 'c', flow: r.flowIndex(f), t: t})
}

// clientAddr returns the client address of copy k (k >= 1): 127.1.0.0+k
// for IPv4, the original with k in bytes 10 to 13 for IPv6.
func clientAddr(a netip.Addr, k int) netip.Addr {
	if a.Unmap().Is4() {
		v := uint32(0x7f010000) + uint32(k)
		return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	b := a.As16()
	b[10], b[11], b[12], b[13] = byte(k>>24), byte(k>>16), byte(k>>8), byte(k)
	return netip.AddrFrom16(b)
}

func main() {
	in := flag.String("in", "testdata/amqp091-pika.pcapng", "input capture (pcap or pcapng)")
	out := flag.String("out", "", "output pcapng file (required)")
	copies := flag.Int("copies", 1000, "how many times to write the input's connections")
	mss := flag.Int("mss", pcapng.DefaultMSS, "largest TCP payload per synthesised segment")
	flag.Parse()
	if *out == "" || *copies < 1 {
		fmt.Fprintln(os.Stderr, "bigcap: -out FILE and -copies >= 1 are required")
		os.Exit(2)
	}
	if err := run(*in, *out, *copies, *mss); err != nil {
		fmt.Fprintln(os.Stderr, "bigcap:", err)
		os.Exit(1)
	}
}

func run(in, out string, copies, mss int) error {
	rec := &recorder{index: make(map[int]int)}
	if _, err := capture.ReadFile(in, rec, nil); err != nil {
		return err
	}
	if len(rec.events) == 0 {
		return fmt.Errorf("%s: no TCP payload", in)
	}
	first, last := rec.events[0].t, rec.events[0].t
	for _, e := range rec.events {
		if e.t.Before(first) {
			first = e.t
		}
		if e.t.After(last) {
			last = e.t
		}
	}
	step := last.Sub(first) + time.Millisecond

	f, err := os.Create(out)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	w := pcapng.NewWriter(bw)
	s := pcapng.NewSynth(w)
	s.MSS = mss
	flows := make([]capture.Flow, len(rec.flows))
	for k := 0; k < copies && s.Err() == nil; k++ {
		for i, fl := range rec.flows {
			fl.ID = k*len(rec.flows) + i + 1
			if k > 0 {
				fl.A = netip.AddrPortFrom(clientAddr(fl.A.Addr(), k), fl.A.Port())
			}
			flows[i] = fl
		}
		shift := time.Duration(k) * step
		for i := range rec.events {
			e := &rec.events[i]
			t := e.t.Add(shift)
			switch e.kind {
			case 'd':
				s.Data(&flows[e.flow], e.fromA, e.data, t)
			case 'g':
				s.Gap(&flows[e.flow], e.fromA, e.gap, t)
			case 'c':
				s.Close(&flows[e.flow], t)
			}
		}
	}
	if err := s.Err(); err != nil {
		f.Close()
		return err
	}
	if err := w.Close(); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
