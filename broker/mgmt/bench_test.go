package mgmt

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// BenchmarkRender renders each kind of list of a broker with 1000 queues
// (and consumers, bindings, exchanges) and 100 connections (200 channels).
func BenchmarkRender(b *testing.B) {
	fx := newBigFixture(1000)
	rs := renderers(fx)
	keys := make([]string, 0, len(rs))
	for k := range rs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, name := range keys {
		f := rs[name]
		b.Run(name, func(b *testing.B) {
			wr := fx.h.getWriter(nil)
			wr.node = "wiretap@vm"
			wr.loadConnections()
			wr.loadConsumers()
			f(wr)
			b.SetBytes(int64(len(wr.buf)))
			b.ReportAllocs()
			for b.Loop() {
				f(wr)
			}
			fx.h.putWriter(wr)
		})
	}
}

// BenchmarkServeHTTP serves whole requests, snapshot, authentication and
// all, over the same broker.
func BenchmarkServeHTTP(b *testing.B) {
	fx := newBigFixture(1000)
	for _, path := range []string{"/api/overview", "/api/queues", "/api/queues?columns=name,messages",
		"/api/queues?page=3&page_size=100", "/api/queues?sort=messages", "/api/connections", "/api/channels",
		"/api/exchanges", "/api/bindings", "/api/consumers", "/api/queues/%2F/q-500"} {
		b.Run(path, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.SetBasicAuth("guest", "guest")
			w := &discardWriter{h: http.Header{}}
			fx.h.ServeHTTP(w, r)
			if w.code != 200 {
				b.Fatalf("%d", w.code)
			}
			b.SetBytes(int64(w.n))
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				fx.h.ServeHTTP(w, r)
			}
		})
	}
}
