package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
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

func TestConfigValidation(t *testing.T) {
	bad := []Config{
		{Duration: time.Second},
		{URI: "amqp://x/"},
		{URI: "amqp://x/", Duration: time.Second, Size: 4},
		{URI: "amqp://x/", Duration: time.Second, ExchangeType: "x-weird"},
		{URI: "amqp://x/", Duration: time.Second, Producers: -1, Consumers: -1},
		{URI: "amqp://x/", Duration: time.Second, Prefetch: -2},
	}
	for _, c := range bad {
		if _, err := Run(context.Background(), c, &bytes.Buffer{}); err == nil {
			t.Errorf("Run(%+v): no error", c)
		}
	}
}

func TestPercentilesJSON(t *testing.T) {
	b, err := json.Marshal(Percentiles{Min: 1500 * time.Nanosecond, Median: 2 * time.Millisecond, Max: time.Second, Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]int64
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if m["min_us"] != 1 || m["median_us"] != 2000 || m["max_us"] != 1e6 || m["count"] != 3 {
		t.Errorf("got %s", b)
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

func TestRunAgainstBroker(t *testing.T) {
	uri := brokerURI(t)
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"confirms", Config{Producers: 2, Consumers: 2, Size: 100, ConfirmBatch: 50, Prefetch: 100, JSON: true}},
		{"autoack-fanout", Config{ExchangeType: "fanout", Exchange: "wiretap.bench.fanout", AutoAck: true, Persistent: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.URI, cfg.Duration, cfg.Interval = uri, 2*time.Second, 500*time.Millisecond
			var out bytes.Buffer
			res, err := Run(context.Background(), cfg, &out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if res.Sent == 0 || res.Received == 0 {
				t.Fatalf("sent %d, received %d\n%s", res.Sent, res.Received, out.String())
			}
			if res.Received > res.Sent {
				t.Errorf("received %d more than sent %d", res.Received, res.Sent)
			}
			if res.ConsumerLatency.Count != res.Received {
				t.Errorf("%d latencies for %d messages", res.ConsumerLatency.Count, res.Received)
			}
			if cfg.ConfirmBatch > 0 {
				if res.Confirmed == 0 || res.Confirmed > res.Sent {
					t.Errorf("confirmed %d of %d", res.Confirmed, res.Sent)
				}
				if res.ConfirmLatency.Count != res.Confirmed+res.Nacked {
					t.Errorf("%d confirm latencies for %d confirms", res.ConfirmLatency.Count, res.Confirmed+res.Nacked)
				}
			}
			if cfg.JSON {
				sc := bufio.NewScanner(&out)
				var lines int
				var last map[string]any
				for sc.Scan() {
					lines++
					last = nil
					if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
						t.Fatalf("line %d not JSON: %q", lines, sc.Text())
					}
				}
				if _, ok := last["summary"]; !ok {
					t.Errorf("last line has no summary: %v", last)
				}
			} else if !strings.Contains(out.String(), "sending rate avg:") {
				t.Errorf("no PerfTest summary in:\n%s", out.String())
			}
		})
	}
}
