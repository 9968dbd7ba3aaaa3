package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/internal/tshark"
)

// TestAgreesWithTshark is issue 2's oracle: on captures of real clients
// (pika, amqp091-go) talking to a real RabbitMQ, as pcapng, as legacy pcap
// and as taken with -i any, wiretap's AMQP 0-9-1 units agree with tshark's
// AMQP dissector frame by frame: same frames, same channels, same
// class.method, in the same order per direction.
//
// WIRETAP_TSHARK_CAPTURES adds captures (a glob) to the shipped ones.
func TestAgreesWithTshark(t *testing.T) {
	if _, err := tshark.Lookup(nil); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("tshark is needed for this test: %v", err)
		}
		t.Skipf("tshark not installed: %v", err)
	}
	files, _ := filepath.Glob("../testdata/amqp091-*.pcap*")
	// A capture that starts mid-connection and one with a lost segment:
	// both sides resynchronise on the same frame boundaries. (The
	// snaplen-cut capture is left out: tshark guesses across the cut.)
	damaged, _ := filepath.Glob("../testdata/damaged-[ml]*.pcap*")
	for _, d := range damaged {
		if !strings.Contains(d, "amqp10") { // AMQP 1.0: TestMidstreamAMQP10
			files = append(files, d)
		}
	}
	if extra := os.Getenv("WIRETAP_TSHARK_CAPTURES"); extra != "" {
		more, _ := filepath.Glob(extra)
		files = append(files, more...)
	}
	if len(files) < 3 {
		t.Fatalf("want the pika and amqp091-go captures in testdata, found %v", files)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			frames, err := tshark.Run(context.Background(), path, nil)
			if err != nil {
				if errors.Is(err, tshark.ErrNotInstalled) {
					t.Skip(err)
				}
				t.Fatal(err)
			}
			theirs := map[tshark.Key][]string{}
			for k, fs := range tshark.Sequences(frames) {
				for _, f := range fs {
					if f.Proto != tshark.AMQP091 {
						continue
					}
					theirs[k] = append(theirs[k], "ch"+strconv.Itoa(f.Channel)+" "+f.Type)
				}
			}

			p, us := collect(Config{})
			if _, err := capture.ReadFile(path, p, nil); err != nil {
				t.Fatal(err)
			}
			p.Finish()
			ours := map[tshark.Key][]string{}
			for _, u := range *us {
				if u.Proto != decode.ProtoAMQP091 {
					continue
				}
				if u.Err() != "" {
					t.Errorf("unit %d: %s", u.N, u.Err())
				}
				d := tshark.FromClient
				if u.Dir == decode.DirB {
					d = tshark.FromServer
				}
				// tshark numbers TCP streams from 0 in order of first
				// packet; wiretap numbers connections from 1 the same way.
				k := tshark.Key{Stream: u.Conn.ID - 1, Dir: d}
				ours[k] = append(ours[k], "ch"+strconv.Itoa(int(u.Channel))+" "+u.Type)
			}
			if len(ours) == 0 {
				t.Fatal("wiretap decoded no AMQP 0-9-1 units")
			}
			total := 0
			for k := range union(ours, theirs) {
				a, b := ours[k], theirs[k]
				total += len(b)
				if i := firstDiff(a, b); i >= 0 {
					t.Errorf("stream %d dir %c: first difference at frame %d of %d/%d: wiretap %q, tshark %q",
						k.Stream, k.Dir, i+1, len(a), len(b), at(a, i), at(b, i))
				}
			}
			t.Logf("%d frames agree in %d stream directions", total, len(theirs))
		})
	}
}

func union(a, b map[tshark.Key][]string) map[tshark.Key]bool {
	m := map[tshark.Key]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}

func firstDiff(a, b []string) int {
	for i := 0; i < len(a) || i < len(b); i++ {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(none)"
}
