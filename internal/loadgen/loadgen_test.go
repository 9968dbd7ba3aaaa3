package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/broker"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

func TestBucketsAreMonotonicAndTight(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 1023, 1024, 1025, 2047, 2048, 4095, 4096, 1 << 20, 1<<20 + 1, 1 << 40, 1<<63 - 1} {
		b := bucketOf(v)
		if b < prev {
			t.Errorf("bucketOf(%d) = %d, below the previous value's %d", v, b, prev)
		}
		if b >= histBuckets {
			t.Fatalf("bucketOf(%d) = %d, out of range", v, b)
		}
		lo := lowerBound(b)
		if lo > v || (v-lo) > v/500 {
			t.Errorf("value %d in bucket %d with lower bound %d: error over 0.2%%", v, b, lo)
		}
		prev = b
	}
}

// TestPercentilesMatchSorting checks the histogram against exact
// nearest-rank percentiles of the same samples.
func TestPercentilesMatchSorting(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 7, 100, 10000} {
		var h histogram
		samples := make([]int64, n)
		for i := range samples {
			samples[i] = int64(r.ExpFloat64() * 3000) // microseconds, long tail
			h.record(time.Duration(samples[i]) * time.Microsecond)
		}
		slices.Sort(samples)
		exact := func(q float64) int64 { return samples[int(rank(q, uint64(n)))-1] }
		p := h.percentiles()
		for _, c := range []struct {
			name string
			q    float64
			got  time.Duration
		}{{"min", 0, p.Min}, {"median", .5, p.Median}, {"p75", .75, p.P75}, {"p95", .95, p.P95}, {"p99", .99, p.P99}, {"max", 1, p.Max}} {
			want := exact(c.q)
			got := c.got.Microseconds()
			if got > want || want-got > want/500 {
				t.Errorf("n=%d %s: got %d µs, exact %d µs", n, c.name, got, want)
			}
		}
		if p.Count != uint64(n) {
			t.Errorf("count %d, want %d", p.Count, n)
		}
	}
}

func TestRecordAllocatesNothing(t *testing.T) {
	var h histogram
	if n := testing.AllocsPerRun(100, func() { h.record(1234 * time.Microsecond) }); n != 0 {
		t.Errorf("record allocates %v times", n)
	}
}

func TestPercentilesJSON(t *testing.T) {
	b, err := json.Marshal(Percentiles{Min: 1500 * time.Nanosecond, Median: 2 * time.Millisecond, Max: time.Second, Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if m["min_us"] != 1.0 || m["median_us"] != 2000.0 || m["max_us"] != 1e6 || m["count"] != 3.0 {
		t.Errorf("got %s", b)
	}
}

// TestRangesAreExact checks each latency range's bounds to the microsecond.
func TestRangesAreExact(t *testing.T) {
	var h histogram
	for _, c := range []struct {
		us   int64
		want int
	}{{0, 0}, {1000, 0}, {1001, 1}, {5000, 1}, {5001, 2}, {50000, 2}, {50001, 3},
		{500000, 3}, {500001, 4}, {1000000, 4}, {1000001, 5}, {1 << 40, 5}} {
		if got := rangeOf(c.us); got != c.want {
			t.Errorf("rangeOf(%d µs) = %s, want %s", c.us, rangeNames[got], rangeNames[c.want])
		}
		h.record(time.Duration(c.us) * time.Microsecond)
	}
	p := h.percentiles()
	if p.Ranges != [6]uint64{2, 2, 2, 2, 2, 2} {
		t.Errorf("ranges %v, want two in each", p.Ranges)
	}
	var o histogram
	o.add(&h)
	o.add(&h)
	if got := o.percentiles().Ranges; got != [6]uint64{4, 4, 4, 4, 4, 4} {
		t.Errorf("after adding twice: %v", got)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		P50    int64            `json:"p50_us"`
		Ranges map[string]int64 `json:"ranges"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if len(m.Ranges) != 6 || m.Ranges["le_1ms"] != 2 || m.Ranges["gt_1s"] != 2 {
		t.Errorf("JSON ranges %s", b)
	}
	if m.P50 != p.Median.Microseconds() || m.P50 == 0 {
		t.Errorf("p50_us %d, median %v", m.P50, p.Median)
	}
	if s := rangesText(p); s != "<=1ms 2, <=5ms 2, <=50ms 2, <=500ms 2, <=1000ms 2, >1s 2" {
		t.Errorf("text %q", s)
	}
}

func TestValidateRejects(t *testing.T) {
	ok := func() Config { return Config{URI: "amqp://x/", Duration: time.Second} }
	for name, mod := range map[string]func(*Config){
		"no uri":                 func(c *Config) { c.URI = "" },
		"bad uri":                func(c *Config) { c.URI = "http://x/" },
		"no duration":            func(c *Config) { c.Duration = 0 },
		"negative warm-up":       func(c *Config) { c.WarmUp = -time.Second },
		"size under header":      func(c *Config) { c.Size = 5 },
		"unknown type":           func(c *Config) { c.ExchangeType = "x-weird" },
		"unknown client":         func(c *Config) { c.Client = "pika" },
		"nobody":                 func(c *Config) { c.Producers, c.Consumers = -1, -1 },
		"negative prefetch":      func(c *Config) { c.Prefetch = -2 },
		"prefetch over 65535":    func(c *Config) { c.Prefetch = 70000 },
		"negative rate":          func(c *Config) { c.Rate = -1 },
		"multi-ack with autoack": func(c *Config) { c.AutoAck, c.MultiAckEvery = true, 10 },
		"bindings on fanout":     func(c *Config) { c.ExchangeType, c.Bindings = "fanout", 10 },
		"-u with queues":         func(c *Config) { c.Queue, c.Queues = "q", 3 },
		"-u with pattern":        func(c *Config) { c.Queue, c.QueuePattern = "q", "q-%d" },
		"pattern without %d":     func(c *Config) { c.QueuePattern = "q" },
		"pattern with %s":        func(c *Config) { c.QueuePattern = "q-%d-%s" },
		"empty pattern range":    func(c *Config) { c.QueuePattern, c.QueuePatternFrom, c.QueuePatternTo = "q-%d", 5, 2 },
		"queues vs range":        func(c *Config) { c.QueuePattern, c.QueuePatternTo, c.Queues = "q-%d", 3, 4 },
		"range without pattern":  func(c *Config) { c.QueuePatternTo = 3 },
		"size dist small size":   func(c *Config) { c.SizeDist = "8:1" },
		"size dist bad weight":   func(c *Config) { c.SizeDist = "16:0,32:1" },
		"size dist garbage":      func(c *Config) { c.SizeDist = "big:1" },
		"default exchange topic": func(c *Config) { c.Exchange, c.ExchangeType = "amq.default", "topic" },
	} {
		c := ok()
		mod(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: %+v validated", name, c)
		} else if !strings.HasPrefix(err.Error(), "loadgen: ") {
			t.Errorf("%s: error %q lacks the package prefix", name, err)
		}
		if _, err := Run(context.Background(), c, &bytes.Buffer{}); err == nil {
			t.Errorf("%s: Run did not refuse it", name)
		}
	}
	c := ok()
	if err := c.Validate(); err != nil {
		t.Fatalf("minimal config: %v", err)
	}
	if c.Exchange != "wiretap.bench-direct" || c.Client != ClientWiretap || c.Size != bodyHeader || len(c.QueueNames()) != 1 {
		t.Errorf("defaults: %+v", c)
	}
}

func TestQueueNames(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want []string
	}{
		{Config{Queue: "q"}, []string{"q"}},
		{Config{Queue: "", Queues: 1}, nil},
		{Config{QueuePattern: "perf-test-%d", QueuePatternFrom: 1, QueuePatternTo: 3}, []string{"perf-test-1", "perf-test-2", "perf-test-3"}},
		{Config{QueuePattern: "p%d.q", QueuePatternFrom: 7, Queues: 2}, []string{"p7.q", "p8.q"}},
		{Config{QueuePattern: "q%d", Queues: 2}, []string{"q1", "q2"}},
	} {
		c := tc.cfg
		c.URI, c.Duration = "amqp://x/", time.Second
		if err := c.Validate(); err != nil {
			t.Fatalf("%+v: %v", tc.cfg, err)
		}
		got := c.QueueNames()
		if tc.want == nil {
			if len(got) != 1 || !strings.HasPrefix(got[0], "wiretap.bench.") {
				t.Errorf("default queue %v", got)
			}
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%+v: queues %v, want %v", tc.cfg, got, tc.want)
		}
	}
	c := Config{URI: "amqp://x/", Duration: time.Second, Queues: 3}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	q := c.QueueNames()
	if len(q) != 3 || !strings.HasSuffix(q[0], "-1") || !strings.HasSuffix(q[2], "-3") || q[0][:len(q[0])-2] != q[2][:len(q[2])-2] {
		t.Errorf("--queues 3: %v", q)
	}
	// Producer i and consumer i meet on queue i mod N.
	for i := range 5 {
		if r := routeFor(&c, i); r.key != q[i%3] || r.exchange != "wiretap.bench-direct" {
			t.Errorf("producer %d routes %+v", i, r)
		}
	}
	d := Config{URI: "amqp://x/", Duration: time.Second, Exchange: "amq.default", Queue: "q"}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if r := routeFor(&d, 0); r.exchange != "" || r.key != "q" {
		t.Errorf("default exchange routes %+v", r)
	}
}

func TestSizeDist(t *testing.T) {
	sizes, err := parseSizeDist("16:0.9,4096:0.1")
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != sizeSlots {
		t.Fatalf("%d slots", len(sizes))
	}
	n := 0
	for _, s := range sizes {
		if s == 16 {
			n++
		} else if s != 4096 {
			t.Fatalf("size %d drawn", s)
		}
	}
	if n < 915 || n > 930 { // 0.9 of 1024 is 921.6
		t.Errorf("16 B in %d of %d slots", n, sizeSlots)
	}
	// A tiny weight still gets its slot, and every slot is filled.
	sizes, err = parseSizeDist("12:1000000,100:1,200")
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != sizeSlots || !slices.Contains(sizes, 100) || !slices.Contains(sizes, 200) || sizes[0] != 12 {
		t.Errorf("tiny weights: %d slots, 100 B %v, 200 B %v", len(sizes), slices.Contains(sizes, 100), slices.Contains(sizes, 200))
	}
	c := Config{URI: "amqp://x/", Duration: time.Second, SizeDist: "16:1,65536:1"}
	if err := c.Validate(); err != nil || c.maxLen != 65536 {
		t.Errorf("maxLen %d, %v", c.maxLen, err)
	}
}

func TestWindow(t *testing.T) {
	w := newWindow(4)
	for i := range 4 {
		if !w.add(int64(100 + i)) {
			t.Fatal("add refused")
		}
	}
	if !w.full() {
		t.Fatal("window of 4 not full after 4")
	}
	var settled []int64
	rec := func(s int64) { settled = append(settled, s) }
	w.confirm(2, false, rec) // out of order: tag 1 still holds the window
	if !w.full() || !slices.Equal(settled, []int64{101}) {
		t.Fatalf("after single ack of 2: full %v, settled %v", w.full(), settled)
	}
	w.confirm(3, true, rec) // 1 and 3; 2 was settled already
	if w.full() || !slices.Equal(settled, []int64{101, 100, 102}) {
		t.Fatalf("after multiple ack of 3: full %v, settled %v", w.full(), settled)
	}
	w.confirm(3, true, rec) // a repeat settles nothing
	w.confirm(9, false, rec)
	if len(settled) != 3 {
		t.Errorf("repeated and unknown tags settled %v", settled)
	}
	done := make(chan bool)
	go func() { w.add(1); w.add(2); w.add(3); done <- w.add(4) }() // the fourth waits for room
	w.stop()
	if <-done {
		t.Error("add after stop succeeded")
	}
}

// brokerURI returns a broker to test against, skipping (or failing under
// CI=true) when none answers. WIRETAP_AMQP_URL is exported by
// .ci/services.sh.
func brokerURI(t *testing.T) string {
	t.Helper()
	uri := os.Getenv("WIRETAP_AMQP_URL")
	if uri == "" {
		uri = "amqp://guest:guest@127.0.0.1:5672/"
	}
	u, err := amqp.ParseURI(uri)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", net.JoinHostPort(u.Host, strconv.Itoa(u.Port)), 2*time.Second)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no broker at %s: %v", uri, err)
		}
		t.Skipf("skipping: no broker at %s (start one with .ci/services.sh): %v", uri, err)
	}
	c.Close()
	return uri
}

// embeddedURI starts wiretap's broker in this process.
func embeddedURI(t *testing.T) string { return embeddedWith(t, broker.Config{}) }

// embeddedWith starts wiretap's broker with cfg in this process, until
// the end of the test.
func embeddedWith(t *testing.T, cfg broker.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		b.Close()
	})
	return "amqp://guest:guest@" + ln.Addr().String() + "/"
}

// peers are the brokers the live tests run against: the embedded one
// always, RabbitMQ when it answers.
func peers(t *testing.T) map[string]func(*testing.T) string {
	return map[string]func(*testing.T) string{"embedded": embeddedURI, "rabbitmq": brokerURI}
}

// exists reports whether a queue or exchange is there, by passive declare.
func exists(t *testing.T, uri, kind, name string) bool {
	t.Helper()
	conn, err := amqp.Dial(uri)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if kind == "queue" {
		_, err = ch.QueueDeclarePassive(name, false, false, false, false, nil)
	} else {
		err = ch.ExchangeDeclarePassive(name, "direct", false, false, false, false, nil)
	}
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.NotFound {
		return false
	}
	if err != nil {
		t.Fatalf("passive declare of %s %q: %v", kind, name, err)
	}
	return true
}

// jsonRun runs cfg with --json output and returns the result and the
// progress lines.
func jsonRun(t *testing.T, cfg Config) (Result, []map[string]any) {
	t.Helper()
	cfg.JSON = true
	var out bytes.Buffer
	res, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var lines []map[string]any
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d not JSON: %q", len(lines)+1, sc.Text())
		}
		lines = append(lines, m)
	}
	if len(lines) == 0 {
		t.Fatal("no output")
	}
	sum, ok := lines[len(lines)-1]["summary"].(map[string]any)
	if !ok {
		t.Fatalf("last line has no summary: %v", lines[len(lines)-1])
	}
	if sum["client"] != res.Client || sum["receive_rate"] == nil {
		t.Errorf("summary %v", sum)
	}
	return res, lines[:len(lines)-1]
}

func TestRunAgainstBroker(t *testing.T) {
	for peer, start := range peers(t) {
		t.Run(peer, func(t *testing.T) {
			uri := start(t)
			for _, client := range []string{ClientWiretap, ClientAMQP091} {
				for _, tc := range []struct {
					name string
					cfg  Config
				}{
					{"confirms-multiack", Config{Producers: 2, Consumers: 2, Size: 100, ConfirmBatch: 50, Prefetch: 100, MultiAckEvery: 10}},
					{"fanout-3-queues", Config{ExchangeType: "fanout", Consumers: 3, Queues: 3, AutoAck: true, Rate: 2000}},
					{"topic-bindings-sizes", Config{ExchangeType: "topic", Bindings: 50, SizeDist: "16:3,20000:1", AutoAck: true, Persistent: true}},
					{"pattern-warm-up", Config{Producers: 2, Consumers: 2, QueuePattern: "wiretap.test-" + strconv.Itoa(rand.IntN(1e6)) + "-%d",
						QueuePatternTo: 2, WarmUp: 300 * time.Millisecond, Rate: 500}},
				} {
					t.Run(client+"/"+tc.name, func(t *testing.T) {
						cfg := tc.cfg
						cfg.URI, cfg.Client, cfg.Duration, cfg.Interval = uri, client, time.Second, 250*time.Millisecond
						res, progress := jsonRun(t, cfg)
						checkResult(t, cfg, res, progress)
					})
				}
			}
		})
	}
}

// TestTextOutput checks PerfTest's text: a line per second, the last at
// -z, then the summary with percentiles and ranges.
func TestTextOutput(t *testing.T) {
	var out bytes.Buffer
	cfg := Config{URI: embeddedURI(t), Duration: 2 * time.Second, AutoAck: true, Rate: 1000, ID: "text"}
	if _, err := Run(context.Background(), cfg, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"id: text, time 1.000 s, sent: ", "id: text, time 2.000 s, sent: ",
		"id: text, receiving rate avg: ", "id: text, consumer latency min/median/75th/95th/99th/max ",
		"id: text, consumer latency ranges <=1ms ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in:\n%s", want, text)
		}
	}
	if n := strings.Count(text, " s, sent: "); n != 2 {
		t.Errorf("%d progress lines for 2 s:\n%s", n, text)
	}
}

func checkResult(t *testing.T, cfg Config, res Result, progress []map[string]any) {
	t.Helper()
	// The measured time is -z, not the time it took to set up or stop
	// (which with confirms and a backlog can take longer than the run).
	// It is read from the clock, so the bound allows for a timer firing
	// late on a loaded machine.
	if d := res.Elapsed - cfg.Duration; d < -50*time.Millisecond || d > 750*time.Millisecond {
		t.Errorf("measured %v for -z %v", res.Elapsed, cfg.Duration)
	}
	if res.Sent == 0 || res.Received == 0 {
		t.Fatalf("sent %d, received %d", res.Sent, res.Received)
	}
	fanout := uint64(1)
	if cfg.ExchangeType == "fanout" {
		fanout = uint64(res.Queues)
	}
	if res.Received > res.Sent*fanout+uint64(res.Consumers*10000) && cfg.WarmUp == 0 {
		t.Errorf("received %d for %d sent to %d queues", res.Received, res.Sent, fanout)
	}
	if got := float64(res.Received) / res.Elapsed.Seconds(); got != res.ReceiveRate {
		t.Errorf("receive rate %v, want received/duration %v", res.ReceiveRate, got)
	}
	if res.ConsumerLatency.Count != res.Received {
		t.Errorf("%d latencies for %d messages", res.ConsumerLatency.Count, res.Received)
	}
	var inRanges uint64
	for _, n := range res.ConsumerLatency.Ranges {
		inRanges += n
	}
	if inRanges != res.ConsumerLatency.Count {
		t.Errorf("ranges hold %d of %d latencies", inRanges, res.ConsumerLatency.Count)
	}
	if cfg.ConfirmBatch > 0 {
		if res.Confirmed == 0 || res.Confirmed > res.Sent+uint64(cfg.ConfirmBatch*res.Producers) {
			t.Errorf("confirmed %d of %d", res.Confirmed, res.Sent)
		}
		if res.ConfirmLatency.Count != res.Confirmed+res.Nacked {
			t.Errorf("%d confirm latencies for %d confirms", res.ConfirmLatency.Count, res.Confirmed+res.Nacked)
		}
	}
	if cfg.Rate > 0 {
		// A limit is a ceiling: never more than rate × time (plus the
		// message each producer may be ahead, at each end of the measured
		// time: after a warm-up, the one whose token came during it).
		limit := uint64(cfg.Rate*res.Elapsed.Seconds()*float64(res.Producers)) + 3*uint64(res.Producers)
		if res.Sent > limit {
			t.Errorf("sent %d over the limit of %d", res.Sent, limit)
		}
	}
	// One line per interval, warm-up included, the last one at -z.
	warm := int(cfg.WarmUp / cfg.Interval)
	if cfg.WarmUp%cfg.Interval != 0 {
		warm++
	}
	want := warm + int(cfg.Duration/cfg.Interval)
	if len(progress) != want {
		t.Errorf("%d progress lines, want %d", len(progress), want)
	} else if last := progress[len(progress)-1]; last["time_s"] != cfg.Duration.Seconds() || last["warm_up"] != nil {
		t.Errorf("last progress line %v", last)
	}
	for i, l := range progress {
		if (i < warm) != (l["warm_up"] == true) {
			t.Errorf("line %d: warm_up %v", i, l["warm_up"])
		}
	}
}

// TestNamesAndCleanup checks that the run's names do not collide across
// exchange types, that it deletes what it declared, and that --keep keeps it.
func TestNamesAndCleanup(t *testing.T) {
	for peer, start := range peers(t) {
		t.Run(peer, func(t *testing.T) {
			uri := start(t)
			// A leftover direct exchange of another run.
			conn, err := amqp.Dial(uri)
			if err != nil {
				t.Fatal(err)
			}
			ch, _ := conn.Channel()
			if err := ch.ExchangeDeclare("wiretap.bench-direct", "direct", false, false, false, false, nil); err != nil {
				t.Fatal(err)
			}
			conn.Close()
			cfg := Config{URI: uri, ExchangeType: "fanout", Duration: 300 * time.Millisecond, Queues: 2, Consumers: 2, AutoAck: true, Rate: 1000}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			res, _ := jsonRun(t, cfg)
			if res.Received == 0 {
				t.Errorf("fanout beside a direct leftover received nothing")
			}
			for _, q := range cfg.QueueNames() {
				if exists(t, uri, "queue", q) {
					t.Errorf("queue %q left behind", q)
				}
			}
			if exists(t, uri, "exchange", "wiretap.bench-fanout") {
				t.Error("exchange wiretap.bench-fanout left behind")
			}

			kept := Config{URI: uri, Duration: 200 * time.Millisecond, Queue: "wiretap.test-kept-" + strconv.Itoa(rand.IntN(1e6)),
				Exchange: "wiretap.test-kept", Keep: true, Producers: -1}
			jsonRun(t, kept)
			if !exists(t, uri, "queue", kept.Queue) || !exists(t, uri, "exchange", kept.Exchange) {
				t.Error("--keep did not keep the queue and exchange")
			}
			kept.Keep = false
			if err := kept.Validate(); err != nil {
				t.Fatal(err)
			}
			teardown(&kept, &declared{exchange: true, queues: kept.QueueNames()})
			if exists(t, uri, "queue", kept.Queue) || exists(t, uri, "exchange", kept.Exchange) {
				t.Error("teardown left the kept queue or exchange")
			}

			// A run that fails to bind deletes the queue it declared.
			failing := Config{URI: uri, Duration: time.Second, Queue: "wiretap.test-unbound-" + strconv.Itoa(rand.IntN(1e6)),
				Exchange: "amq.wiretap-nosuch"}
			if _, err := Run(context.Background(), failing, io.Discard); err == nil || !strings.Contains(err.Error(), "queue.bind") {
				t.Fatalf("binding to a missing exchange: %v", err)
			}
			if exists(t, uri, "queue", failing.Queue) {
				t.Error("a failed run left its queue")
			}
			// A run that finds its exchange there with another type
			// fails and leaves that exchange alone.
			clash := Config{URI: uri, Duration: time.Second, Exchange: "wiretap.bench-direct", ExchangeType: "fanout"}
			if _, err := Run(context.Background(), clash, io.Discard); err == nil || !strings.Contains(err.Error(), "exchange.declare") {
				t.Fatalf("declaring a direct exchange as fanout: %v", err)
			}
			if !exists(t, uri, "exchange", "wiretap.bench-direct") {
				t.Error("a failed run deleted an exchange it had not declared")
			}
		})
	}
}

// TestWirePublishAllocatesNothing checks the wiretap client's publish path,
// writes included, allocates nothing per message.
func TestWirePublishAllocatesNothing(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	go io.Copy(io.Discard, server)
	p := &wirePublisher{c: &wireConn{nc: client, wbuf: make([]byte, 0, wireWriteBatch+wireFrameMax), frameMax: wireFrameMax}}
	p.props.Flags = amqp091.FlagContentType | amqp091.FlagDeliveryMode
	p.props.ContentType, p.props.DeliveryMode = []byte("application/octet-stream"), 2
	rt := newRoute("wiretap.bench-direct", "wiretap.bench.q")
	body := make([]byte, 4096)
	if n := testing.AllocsPerRun(1000, func() {
		if err := p.publish(&rt, body); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("publish allocates %v times", n)
	}
	if err := p.flush(); err != nil {
		t.Fatal(err)
	}
}

// TestWirePublishFrames checks that a publish from the encoded prefix
// writes the bytes AppendMessage writes, through changes of route and
// size, empty bodies and bodies of several frames.
func TestWirePublishFrames(t *testing.T) {
	p := &wirePublisher{c: &wireConn{frameMax: 4096}}
	p.props.Flags = amqp091.FlagContentType
	p.props.ContentType = []byte("application/octet-stream")
	a, b := newRoute("x", "k1"), newRoute("", "queue-two")
	var want []byte
	for i, tc := range []struct {
		r    *route
		size int
	}{{&a, 16}, {&a, 16}, {&a, 4000}, {&b, 4000}, {&b, 0}, {&b, 9000}, {&a, 16}, {&b, 4088}, {&b, 4089}} {
		body := bytes.Repeat([]byte{byte(i + 1)}, tc.size)
		if err := p.publish(tc.r, body); err != nil {
			t.Fatal(err)
		}
		want = amqp091.AppendMessage(want, 1, &amqp091.BasicPublish{Exchange: tc.r.exchangeB, RoutingKey: tc.r.keyB}, &p.props, body, 4096)
		if !bytes.Equal(p.c.wbuf, want) {
			t.Fatalf("publish %d (%d bytes): frames differ from AppendMessage's", i, tc.size)
		}
	}
}

// TestStopBeforeTeardown: a producer publishing as fast as it can is
// stopped, and its publishes in flight routed, before the teardown deletes
// the exchange: the broker logs no channel error (404 NOT_FOUND on a
// publish to the deleted exchange) and no connection cut under it.
func TestStopBeforeTeardown(t *testing.T) {
	var mu sync.Mutex
	var logged []string
	uri := embeddedWith(t, broker.Config{Log: func(msg string) {
		mu.Lock()
		logged = append(logged, msg)
		mu.Unlock()
	}})
	for _, client := range []string{ClientWiretap, ClientAMQP091} {
		for round := range 5 {
			cfg := Config{URI: uri, Client: client, ExchangeType: "fanout", Producers: 2, Consumers: 1, AutoAck: true,
				Duration: 200 * time.Millisecond, Interval: time.Second}
			if _, err := Run(context.Background(), cfg, io.Discard); err != nil {
				t.Fatalf("%s round %d: %v", client, round, err)
			}
		}
	}
	// The broker logs a connection's end after the client's socket closes.
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for _, l := range logged {
		t.Errorf("broker logged: %s", l)
	}
}
