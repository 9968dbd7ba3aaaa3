package rabbitdiff

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/broker"
)

// rabbitMQ returns RabbitMQ's host:port from $WIRETAP_AMQP_URL (default
// amqp://guest:guest@127.0.0.1:5672/, where .ci/services.sh starts it),
// skipping the test when nothing answers there, or failing it under
// CI=true.
func rabbitMQ(t *testing.T) string {
	t.Helper()
	url := os.Getenv("WIRETAP_AMQP_URL")
	if url == "" {
		url = "amqp://guest:guest@127.0.0.1:5672/"
	}
	target, err := TargetFromURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", target, 2*time.Second)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no RabbitMQ at %s: %v", url, err)
		}
		t.Skipf("skipping: no RabbitMQ at %s (start it with .ci/services.sh): %v", url, err)
	}
	c.Close()
	return target
}

// record runs w against target, skipping (or failing under CI=true) when
// its client is not installed.
func record(t *testing.T, target string, w Workload) (*Transcript, error) {
	t.Helper()
	tr, err := Record(context.Background(), target, w)
	if errors.Is(err, ErrUnavailable) {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return tr, err
}

// rabbitRuns keeps the first RabbitMQ transcript of each workload, so
// TestDifferential reuses what TestRabbitMQSelfConsistent recorded when
// both run in one process.
var rabbitRuns sync.Map // workload name -> string

func rabbitTranscript(t *testing.T, target string, w Workload) string {
	t.Helper()
	if s, ok := rabbitRuns.Load(w.Name); ok {
		return s.(string)
	}
	tr, err := record(t, target, w)
	if err != nil {
		t.Errorf("against RabbitMQ: %v", err)
	}
	rabbitRuns.Store(w.Name, tr.String())
	return tr.String()
}

// TestRabbitMQSelfConsistent runs every workload twice against RabbitMQ:
// the transcripts must be identical, which shows the workload is
// deterministic and the normalisation complete.
func TestRabbitMQSelfConsistent(t *testing.T) {
	target := rabbitMQ(t)
	for _, w := range Workloads() {
		t.Run(w.Name, func(t *testing.T) {
			t.Parallel()
			first, err := record(t, target, w)
			if err != nil {
				t.Errorf("first run against RabbitMQ: %v", err)
			}
			rabbitRuns.Store(w.Name, first.String())
			second, err := record(t, target, w)
			if err != nil {
				t.Errorf("second run against RabbitMQ: %v", err)
			}
			if d := UnifiedDiff("first run", first.String(), "second run", second.String()); d != "" {
				t.Errorf("two runs against RabbitMQ differ:\n%s", d)
			}
			if len(first.Conns) == 0 {
				t.Errorf("no connection recorded")
			}
		})
	}
}

// TestDifferential runs every workload against RabbitMQ and against the
// embedded broker (in process, or at $WIRETAP_DIFF_ADDR) and compares the
// transcripts. Run one with -run TestDifferential/NAME.
func TestDifferential(t *testing.T) {
	rabbit := rabbitMQ(t)
	for _, w := range Workloads() {
		t.Run(w.Name, func(t *testing.T) {
			t.Parallel()
			want := rabbitTranscript(t, rabbit, w)
			addr := wiretap(t)
			tr, err := record(t, addr, w)
			got := tr.String()
			if d := UnifiedDiff("rabbitmq", want, "wiretap", got); d != "" {
				t.Errorf("the embedded broker differs from RabbitMQ 3.10 (workload error: %v):\n%s", err, d)
			}
		})
	}
}

// wiretap returns the address of the broker under test: $WIRETAP_DIFF_ADDR,
// or a fresh in-process broker with RabbitMQ's defaults, stopped when the
// test ends.
func wiretap(t *testing.T) string {
	t.Helper()
	if addr := os.Getenv("WIRETAP_DIFF_ADDR"); addr != "" {
		return addr
	}
	_, addr := wiretapBroker(t)
	return addr
}

// wiretapBroker starts an in-process broker with RabbitMQ's defaults,
// stopped when the test ends.
func wiretapBroker(t *testing.T) (*broker.Broker, string) {
	t.Helper()
	b, err := broker.New(broker.Config{})
	if err != nil {
		t.Fatalf("broker.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- b.Serve(ctx, ln) }()
	// A broker that cannot serve says so at once: fail fast, not by
	// timeouts.
	select {
	case err := <-served:
		cancel()
		ln.Close()
		t.Fatalf("broker.Serve returned at once: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("broker.Serve: %v", err)
			}
			b.Close()
			if n := b.MessagesHeld(); n != 0 {
				t.Errorf("broker: %d messages still held after close", n)
			}
		case <-time.After(DefaultStepTimeout):
			t.Errorf("broker.Serve did not return within %v of its context ending", DefaultStepTimeout)
		}
		ln.Close()
	})
	return b, ln.Addr().String()
}
