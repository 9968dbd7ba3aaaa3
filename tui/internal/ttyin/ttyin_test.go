package ttyin

import (
	"os"
	"testing"
	"time"
)

func pipe(t *testing.T, delay time.Duration) (*File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return &File{File: r, Delay: delay}, w
}

func read(t *testing.T, f *File) string {
	t.Helper()
	buf := make([]byte, 64)
	n, err := f.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

func TestLoneEscapeIsRewritten(t *testing.T) {
	f, w := pipe(t, 5*time.Millisecond)
	w.Write([]byte{0x1b})
	if got := read(t, f); got != escKey {
		t.Fatalf("lone ESC read as %q, want %q", got, escKey)
	}
}

func TestSequencesPassThrough(t *testing.T) {
	f, w := pipe(t, 5*time.Millisecond)
	for _, in := range []string{"\x1b[A", "\x1bx", "q", "\x1b[<0;10;5M", "\x1b\x1b"} {
		w.Write([]byte(in))
		if got := read(t, f); got != in {
			t.Errorf("read %q, want it unchanged", in)
		}
	}
}

// A sequence split across two writes inside the delay stays a sequence:
// the lone ESC is passed on as it is, for the parser to join with the rest.
func TestSplitSequenceWithinDelay(t *testing.T) {
	f, w := pipe(t, time.Second)
	w.Write([]byte{0x1b})
	go func() {
		time.Sleep(20 * time.Millisecond)
		w.Write([]byte("[A"))
	}()
	if got := read(t, f); got != "\x1b" {
		t.Fatalf("first read %q, want the ESC unchanged", got)
	}
	if got := read(t, f); got != "[A" {
		t.Fatalf("second read %q, want the rest of the sequence", got)
	}
}

// A buffer too small for the rewrite gets the ESC as it is.
func TestShortBuffer(t *testing.T) {
	f, w := pipe(t, time.Millisecond)
	w.Write([]byte{0x1b})
	buf := make([]byte, 2)
	n, err := f.Read(buf)
	if err != nil || string(buf[:n]) != "\x1b" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
}

func TestDelay(t *testing.T) {
	for env, want := range map[string]time.Duration{
		"": DefaultDelay, "0": 0, "25": 25 * time.Millisecond, "x": DefaultDelay,
		"-3": DefaultDelay, "99999": time.Second,
	} {
		if got := Delay(env); got != want {
			t.Errorf("Delay(%q) = %v, want %v", env, got, want)
		}
	}
}
