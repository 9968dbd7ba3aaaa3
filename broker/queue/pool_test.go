package queue

import (
	"strconv"
	"strings"
	"testing"
)

func TestSizeClasses(t *testing.T) {
	prev := 0
	for n := 0; n <= maxPooled; n++ {
		class, size := sizeClass(n)
		if size < n {
			t.Fatalf("%d bytes: class %d of %d bytes is too small", n, class, size)
		}
		if n > minClass && size > n+n/4 {
			t.Fatalf("%d bytes: class of %d bytes wastes more than a quarter", n, size)
		}
		if class < prev || class > prev+1 || class >= len(bufPools) {
			t.Fatalf("%d bytes: class %d after %d (of %d)", n, class, prev, len(bufPools))
		}
		prev = class
	}
	for _, c := range []struct{ n, size int }{{0, 64}, {64, 64}, {65, 80}, {128, 128}, {129, 160}, {4096, 4096}, {4097 + 10, 5120}} {
		if _, size := sizeClass(c.n); size != c.size {
			t.Errorf("%d bytes: class of %d, want %d", c.n, size, c.size)
		}
	}
}

// TestPoolRoundTripAllocatesNothing: a message taken from the pool, held,
// released and freed comes back on the next allocation of its class.
func TestPoolRoundTripAllocatesNothing(t *testing.T) {
	was := SetPoisoning(false)
	defer SetPoisoning(was)
	for _, size := range []int{30, 4116, 1 << 20} {
		if n := testing.AllocsPerRun(1000, func() {
			m := AllocMessage(size)
			m.Body = append(m.Buffer(), 'x')
			m.Hold()
			m.Hold()
			m.Release()
			if m.Release() {
				m.Free()
			}
		}); n != 0 {
			t.Errorf("%d bytes: %v allocations per message", size, n)
		}
	}
	m := AllocMessage(100)
	if cap(m.Buffer()) < 100 || m.Expiration != -1 || m.Exchange != "" {
		t.Fatalf("a reused message is not as new: cap %d, %+v", cap(m.Buffer()), m)
	}
	m.Free()
	big := AllocMessage(maxPooled + 1)
	if cap(big.Buffer()) != maxPooled+1 {
		t.Fatalf("a message past the largest class has %d bytes", cap(big.Buffer()))
	}
	big.Free()
}

func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if s, _ := r.(string); !strings.Contains(s, want) {
			t.Fatalf("panic %v, want one saying %q", r, want)
		}
	}()
	f()
}

// TestPoisoning: in poisoning mode a freed message's bytes and names are
// overwritten, and reading, holding, releasing or writing it afterwards is
// found.
func TestPoisoning(t *testing.T) {
	was := SetPoisoning(true)
	defer SetPoisoning(was)
	FlushQuarantine()
	before := LiveMessages()
	m := AllocMessage(64)
	buf := append(m.Buffer(), "header+body"...)
	m.Header, m.Body, m.Exchange, m.RoutingKey = buf[:6], buf[6:], "x", "k"
	m.Hold()
	if LiveMessages() != before+1 {
		t.Fatal("the ledger did not count the message")
	}
	if !m.Held() {
		t.Fatal("a held message is not Held")
	}
	if !m.Release() {
		t.Fatal("the only release was not the last")
	}
	m.Free()
	if LiveMessages() != before {
		t.Fatal("the ledger did not count the message freed")
	}
	if string(buf) == "header+body" || strings.Contains(string(m.Body), "body") || m.Exchange == "x" {
		t.Fatalf("freed message not poisoned: %q %q %q", buf, m.Body, m.Exchange)
	}
	mustPanic(t, "read after its release", func() { m.Held() })
	mustPanic(t, "held after its release", func() { m.Hold() })
	mustPanic(t, "released more often", func() { m.Release() })
	m.refs.Store(poisonRefs) // as the quarantine left it

	// A write into a released buffer is found when it leaves quarantine.
	w := AllocMessage(64)
	wb := append(w.Buffer(), "abc"...)
	w.Hold()
	w.Release()
	w.Free()
	wb[1] = 'B'
	mustPanic(t, "written after its release", FlushQuarantine)

	mustPanic(t, "freed while held", func() {
		h := AllocMessage(10)
		h.Hold()
		h.Free()
	})
}

// BenchmarkPoolRoundTrip measures a message's allocation from its class,
// one hold and its last release, and the buffer's return to the pool;
// "parallel" allocates on some goroutines what others free, as a
// publisher's connection and a consumer's do.
func BenchmarkPoolRoundTrip(b *testing.B) {
	was := SetPoisoning(false)
	defer SetPoisoning(was)
	for _, size := range []int{40, 4116} {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m := AllocMessage(size)
				m.Hold()
				if m.Release() {
					m.Free()
				}
			}
		})
	}
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		ms := make(chan *Message, 1024)
		done := make(chan struct{})
		go func() {
			for m := range ms {
				if m.Release() {
					m.Free()
				}
			}
			close(done)
		}()
		for b.Loop() {
			m := AllocMessage(40)
			m.Hold()
			ms <- m
		}
		close(ms)
		<-done
	})
}
