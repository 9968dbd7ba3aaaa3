package mgmt

import (
	"sync"
	"time"
)

// The snapshots carry totals; the management API also shows how fast each
// changes ("publish_details": {"rate": 12.4}). RabbitMQ samples every five
// seconds and reports the change over the last interval. Here the samples
// are the management requests themselves: each object keeps its last few
// readings, and a rate is the change from the newest reading at least
// rateWindow old (or the oldest one there is) to now.
const (
	rateWindow = 5 * time.Second
	// sampleEvery spaces the kept readings, so a client polling many
	// times a second still has a reading a window back.
	sampleEvery = time.Second
	// historyTTL drops objects not asked about for this long (deleted
	// queues, closed connections).
	historyTTL   = 10 * time.Minute
	sweepEvery   = time.Minute
	maxSamples   = 8
	maxRateCount = 8
)

// rateKind tells apart objects whose names may collide.
type rateKind byte

const (
	kindOverview rateKind = 'o'
	kindConn     rateKind = 'c'
	kindQueue    rateKind = 'q'
	kindExchange rateKind = 'x'
	kindVHost    rateKind = 'v'
)

type history struct {
	n      int // readings kept, newest last
	at     [maxSamples]int64
	vals   [maxSamples][maxRateCount]uint64
	seen   int64
	counts int
}

// rateTable is the sample history of every object asked about.
type rateTable struct {
	mu        sync.Mutex
	m         map[string]*history
	key       []byte
	lastSweep int64
}

// rates writes into out the per-second rate of each of vals (at most
// maxRateCount) for the object (kind, vhost, name), given its readings
// now. Gauges (message counts) may fall: their rates are negative then.
// A counter that falls means the object was deleted and made again, and
// its history restarts.
func (t *rateTable) rates(now time.Time, kind rateKind, vhost, name string, vals []uint64, counters uint, out []float64) {
	for i := range out {
		out[i] = 0
	}
	if len(vals) > maxRateCount {
		vals = vals[:maxRateCount]
	}
	ns := now.UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[string]*history)
	}
	t.key = append(t.key[:0], byte(kind))
	t.key = append(t.key, vhost...)
	t.key = append(t.key, 0)
	t.key = append(t.key, name...)
	h := t.m[string(t.key)]
	if h == nil {
		h = &history{}
		t.m[string(t.key)] = h
	}
	h.seen = ns
	if h.n > 0 && h.counts == len(vals) {
		last := &h.vals[h.n-1]
		for i, v := range vals {
			if counters&(1<<i) != 0 && v < last[i] {
				h.n = 0
				break
			}
		}
		if h.n > 0 && h.at[h.n-1] > ns {
			h.n = 0 // the clock went back
		}
	} else {
		h.n = 0
	}
	h.counts = len(vals)
	if h.n > 0 {
		// The newest reading at least a window old, else the oldest.
		base := 0
		for i := h.n - 1; i >= 0; i-- {
			if ns-h.at[i] >= int64(rateWindow) {
				base = i
				break
			}
		}
		// Readings closer than sampleEvery say more about scheduling
		// than about traffic.
		if d := ns - h.at[base]; d >= int64(sampleEvery) {
			dt := float64(d) / 1e9
			for i, v := range vals {
				if i < len(out) {
					out[i] = float64(int64(v-h.vals[base][i])) / dt
				}
			}
		}
	}
	if h.n == 0 || ns-h.at[h.n-1] >= int64(sampleEvery) {
		if h.n == maxSamples {
			copy(h.at[:], h.at[1:])
			copy(h.vals[:], h.vals[1:])
			h.n--
		}
		h.at[h.n] = ns
		copy(h.vals[h.n][:], vals)
		h.n++
	}
	if ns-t.lastSweep >= int64(sweepEvery) {
		t.lastSweep = ns
		for k, h := range t.m {
			if ns-h.seen > int64(historyTTL) {
				delete(t.m, k)
			}
		}
	}
}

func (t *rateTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}
