package capture_test

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/gopacket/gopacket/reassembly"
	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/pcapng"
)

// benchCapture synthesises a pcapng capture of about 100k packets: 50
// connections exchanging messages of 50 to 3000 bytes, interleaved.
var benchCapture = sync.OnceValues(func() ([]byte, int) {
	var buf bytes.Buffer
	w := pcapng.NewWriter(&buf)
	s := pcapng.NewSynth(w)
	rng := rand.New(rand.NewPCG(1, 2))
	payload := bytes.Repeat([]byte("wiretap!"), 400)
	flows := make([]*capture.Flow, 50)
	t0 := time.Unix(1700000000, 0)
	for i := range flows {
		flows[i] = &capture.Flow{
			ID: i + 1,
			A:  netip.MustParseAddrPort("10.0.0.1:" + strconv.Itoa(40000+i)),
			B:  netip.MustParseAddrPort("10.0.0.2:5672"),
		}
	}
	for n := 0; n < 60000; n++ {
		f := flows[rng.IntN(len(flows))]
		size := 50 + rng.IntN(2950)
		s.Data(f, n%2 == 0, payload[:size], t0.Add(time.Duration(n)*time.Microsecond))
	}
	for _, f := range flows {
		s.Close(f, t0.Add(time.Minute))
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	stats, err := capture.Read(bytes.NewReader(buf.Bytes()), "bench", nopHandler{}, nil)
	if err != nil {
		panic(err)
	}
	return buf.Bytes(), int(stats.Packets)
})

type nopHandler struct{}

func (nopHandler) Data(*capture.Flow, bool, []byte, time.Time) {}
func (nopHandler) Gap(*capture.Flow, bool, int, time.Time)     {}
func (nopHandler) Close(*capture.Flow, time.Time)              {}

// BenchmarkRead reads and reassembles the synthesised capture.
func BenchmarkRead(b *testing.B) {
	file, packets := benchCapture()
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := capture.Read(bytes.NewReader(file), "bench", nopHandler{}, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(packets)*float64(b.N)/b.Elapsed().Seconds(), "packets/s")
}

// loadPackets decodes the synthesised capture into memory; with reorder,
// every tenth packet swaps places with the next.
func loadPackets(b *testing.B, reorder bool) []capture.Packet {
	file, _ := benchCapture()
	r, err := pcapgo.NewNgReader(bytes.NewReader(file), pcapgo.DefaultNgReaderOptions)
	if err != nil {
		b.Fatal(err)
	}
	var pkts []capture.Packet
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		pkts = append(pkts, capture.Packet{Link: capture.LinkTypeEthernet, Time: ci.Timestamp, Data: data, Length: ci.Length})
	}
	if reorder {
		for i := 0; i+1 < len(pkts); i += 10 {
			pkts[i], pkts[i+1] = pkts[i+1], pkts[i]
		}
	}
	return pkts
}

// BenchmarkAssembler is reassembly alone, from packets in memory.
func BenchmarkAssembler(b *testing.B) {
	b.Run("in-order", func(b *testing.B) { benchAssembler(b, false) })
	b.Run("reordered", func(b *testing.B) { benchAssembler(b, true) })
}

func benchAssembler(b *testing.B, reorder bool) {
	pkts := loadPackets(b, reorder)
	var size int64
	for _, p := range pkts {
		size += int64(len(p.Data))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		a := capture.NewAssembler(nopHandler{}, nil, nil)
		for i := range pkts {
			a.Packet(&pkts[i])
		}
		a.Flush()
	}
	b.ReportMetric(float64(len(pkts))*float64(b.N)/b.Elapsed().Seconds(), "packets/s")
}

// BenchmarkGopacketReassembly does what BenchmarkAssembler does with
// gopacket's DecodingLayerParser and reassembly package, for comparison.
func BenchmarkGopacketReassembly(b *testing.B) {
	b.Run("in-order", func(b *testing.B) { benchGopacket(b, false) })
	b.Run("reordered", func(b *testing.B) { benchGopacket(b, true) })
}

func benchGopacket(b *testing.B, reorder bool) {
	pkts := loadPackets(b, reorder)
	var size int64
	for _, p := range pkts {
		size += int64(len(p.Data))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	var eth layers.Ethernet
	var ip4 layers.IPv4
	var ip6 layers.IPv6
	var tcp layers.TCP
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip4, &ip6, &tcp)
	parser.IgnoreUnsupported = true
	decoded := make([]gopacket.LayerType, 0, 4)
	var total int
	for b.Loop() {
		pool := reassembly.NewStreamPool(&gpFactory{n: &total})
		asm := reassembly.NewAssembler(pool)
		for i := range pkts {
			if err := parser.DecodeLayers(pkts[i].Data, &decoded); err != nil {
				continue
			}
			var flow gopacket.Flow
			for _, l := range decoded {
				switch l {
				case layers.LayerTypeIPv4:
					flow = ip4.NetworkFlow()
				case layers.LayerTypeIPv6:
					flow = ip6.NetworkFlow()
				case layers.LayerTypeTCP:
					asm.AssembleWithContext(flow, &tcp, gpContext{gopacket.CaptureInfo{Timestamp: pkts[i].Time}})
				}
			}
		}
		asm.FlushAll()
	}
	b.ReportMetric(float64(len(pkts))*float64(b.N)/b.Elapsed().Seconds(), "packets/s")
}

type gpContext struct{ ci gopacket.CaptureInfo }

func (c gpContext) GetCaptureInfo() gopacket.CaptureInfo { return c.ci }

type gpFactory struct{ n *int }

func (f *gpFactory) New(_, _ gopacket.Flow, _ *layers.TCP, _ reassembly.AssemblerContext) reassembly.Stream {
	return &gpStream{n: f.n}
}

type gpStream struct{ n *int }

func (s *gpStream) Accept(*layers.TCP, gopacket.CaptureInfo, reassembly.TCPFlowDirection, reassembly.Sequence, *bool, reassembly.AssemblerContext) bool {
	return true
}

func (s *gpStream) ReassembledSG(sg reassembly.ScatterGather, _ reassembly.AssemblerContext) {
	n, _ := sg.Lengths()
	*s.n += n
}

func (s *gpStream) ReassemblyComplete(reassembly.AssemblerContext) bool { return true }

// TestAssemblerAllocs checks that in-order segments of a known connection
// are decoded and delivered without allocating.
func TestAssemblerAllocs(t *testing.T) {
	a := capture.NewAssembler(nopHandler{}, nil, nil)
	seq := uint32(101)
	for _, s := range handshake(100, 500) {
		ip := s.ip(0)
		a.Packet(&capture.Packet{Link: capture.LinkTypeEthernet, Data: frame(1, ip, 1), Length: len(ip) + 18})
	}
	payload := string(bytes.Repeat([]byte("x"), 1000))
	pkts := make([][]byte, 2000)
	for i := range pkts {
		pkts[i] = frame(1, tcp{src: cli, dst: srv, seq: seq, flags: ack, payload: payload}.ip(0), 1)
		seq += 1000
	}
	i := 0
	p := &capture.Packet{Link: capture.LinkTypeEthernet, Time: time.Unix(1, 0)}
	allocs := testing.AllocsPerRun(1000, func() {
		p.Data, p.Length = pkts[i], len(pkts[i])
		a.Packet(p)
		i++
	})
	if allocs != 0 {
		t.Errorf("%v allocations per in-order packet, want 0", allocs)
	}
	if st := a.Stats(); st.TCP < 1000 {
		t.Errorf("stats %+v", st)
	}
}
