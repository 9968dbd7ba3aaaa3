package capture

import (
	"testing"
	"time"
)

func TestParseSchedstat(t *testing.T) {
	for _, c := range []struct {
		in        string
		run, wait time.Duration
		ok        bool
	}{
		{"70581904 79882823 146\n", 70581904, 79882823, true},
		{"0 0 0\n", 0, 0, true},
		{"", 0, 0, false},
		{"12 x 3\n", 0, 0, false},
		{"12\n", 0, 0, false},
		{"99999999999999999999 1 1\n", 0, 0, false},
	} {
		run, wait, ok := parseSchedstat([]byte(c.in))
		if run != c.run || wait != c.wait || ok != c.ok {
			t.Errorf("parseSchedstat(%q) = %v, %v, %v; want %v, %v, %v", c.in, run, wait, ok, c.run, c.wait, c.ok)
		}
	}
}

func TestParsePressureTotal(t *testing.T) {
	for _, c := range []struct {
		in    string
		total int64
		ok    bool
	}{
		{"some avg10=46.37 avg60=50.15 avg300=44.82 total=8965104320\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", 8965104320, true},
		{"some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", 0, true},
		{"full avg10=0.00 avg60=0.00 avg300=0.00 total=5\n", 0, false},
		{"some avg10=0.00\n", 0, false},
		{"some avg10=0.00 avg60=0.00 avg300=0.00 total=12x\n", 0, false},
		{"", 0, false},
	} {
		total, ok := parsePressureTotal([]byte(c.in))
		if total != c.total || ok != c.ok {
			t.Errorf("parsePressureTotal(%q) = %v, %v; want %v, %v", c.in, total, ok, c.total, c.ok)
		}
	}
}
