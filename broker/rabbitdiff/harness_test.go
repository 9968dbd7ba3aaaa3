package rabbitdiff

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

func TestWorkloadsAreWellFormed(t *testing.T) {
	seen := map[string]bool{}
	valid := regexp.MustCompile(`^(go|raw|pika|pyamqp|kombu)-[a-z0-9-]+$`)
	for _, w := range append(Workloads(), AlarmWorkloads()...) {
		if seen[w.Name] {
			t.Errorf("two workloads named %s", w.Name)
		}
		seen[w.Name] = true
		if !valid.MatchString(w.Name) {
			t.Errorf("workload name %q: want client-area-case", w.Name)
		}
		if w.Run == nil {
			t.Errorf("%s has no Run", w.Name)
		}
	}
	// Every script is a workload.
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".py"); ok && !seen[name] {
			t.Errorf("testdata/%s is no workload", e.Name())
		}
	}
	if len(seen) < 100 {
		t.Errorf("only %d workloads", len(seen))
	}
}

func TestRecordReportsWorkloadErrors(t *testing.T) {
	target := fakeServer(t, func(c net.Conn) {
		buf := make([]byte, 8)
		io.ReadFull(c, buf)
		c.Write(method(0, &amqp091.ConnectionStart{VersionMinor: 9}))
		io.Copy(io.Discard, c)
	})
	w := Workload{Name: "test", Run: func(ctx context.Context, e *Env) error {
		c, err := DialRaw(e.Addr)
		if err != nil {
			return err
		}
		defer c.Close()
		c.Write([]byte(amqp091.ProtocolHeader))
		if _, err := c.Expect("connection.start"); err != nil {
			return err
		}
		e.Note("declared " + e.Queue("q"))
		return errors.New("it went\nwrong")
	}}
	tr, err := Record(context.Background(), target, w)
	if err == nil || err.Error() != "it went\nwrong" {
		t.Errorf("error %v", err)
	}
	want := []string{"c1 ch0 connection.start version=0-9 server-properties={} mechanisms=\"\" locales=\"\"",
		"client: declared <run>.q", "client: error: it went | wrong"}
	if got := tr.Lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestRecordTimesOut(t *testing.T) {
	target := fakeServer(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	w := Workload{Name: "test", Timeout: 200 * time.Millisecond, Run: func(ctx context.Context, e *Env) error {
		c, err := DialRaw(e.Addr)
		if err != nil {
			return err
		}
		defer c.Close()
		c.Timeout = time.Minute
		_, err = c.ReadFrame() // never answered: ended by the harness
		return err
	}}
	start := time.Now()
	tr, err := Record(context.Background(), target, w)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v", d)
	}
	if err == nil || !strings.Contains(err.Error(), "timed out after 200ms") {
		t.Errorf("error %v", err)
	}
	if l := tr.Lines(); len(l) == 0 || !strings.HasPrefix(l[len(l)-1], "client: error: workload timed out after 200ms") {
		t.Errorf("lines %q", l)
	}
}

func TestTargetFromURL(t *testing.T) {
	for url, want := range map[string]string{
		"amqp://guest:guest@127.0.0.1:5672/": "127.0.0.1:5672",
		"amqp://localhost":                   "localhost:5672",
		"amqps://h:1/v":                      "h:1",
	} {
		got, err := TargetFromURL(url)
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", url, got, err, want)
		}
	}
	if _, err := TargetFromURL("http://x"); err == nil {
		t.Error("http URL accepted")
	}
}
