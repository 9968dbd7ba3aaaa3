package main

import (
	"bytes"

	"github.com/klauspost/compress/zstd"
	"github.com/wiretap-dev/wiretap/capture"
	pg "github.com/wiretap-dev/wiretap/decode/pgwire"
)

// zstdStream compresses each of parts as one flushed piece of a single
// zstd frame with a window of window bytes: the payloads of successive
// CompressedMessages of one connection.
func zstdStream(window int, parts ...[]byte) [][]byte {
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(window), zstd.WithEncoderCRC(false))
	if err != nil {
		panic("hostilegen: " + err.Error())
	}
	var out [][]byte
	for _, p := range parts {
		if _, err := enc.Write(p); err != nil {
			panic("hostilegen: " + err.Error())
		}
		if err := enc.Flush(); err != nil {
			panic("hostilegen: " + err.Error())
		}
		out = append(out, append([]byte(nil), buf.Bytes()...))
		buf.Reset()
	}
	return out
}

func pgCompressed(types string, payload []byte) []byte {
	return (&pg.CompressedMessages{Algorithm: pg.CompressionZstd, Types: []byte(types), Data: payload}).Encode(nil)
}

// pgCompressedSession is pgSession with the query's result sent as
// CompressedMessages: the startup offers compression, the server answers
// the query with one container per payload (their inflated messages
// declared by types), then CommandComplete and ReadyForQuery. send is
// called for each container, so that callers can interleave connections.
type pgCompressedSession struct {
	c *capw
	f *capture.Flow
}

func (s *pgCompressedSession) open() {
	body := []byte{0, 3, 0, 0}
	body = append(body, "user\x00postgres\x00database\x00postgres\x00_pq_.compression\x00zstd\x00\x00"...)
	st := append([]byte{0, 0, 0, byte(4 + len(body))}, body...)
	s.c.send(s.f, true, st)
	srv := pgMsg('R', []byte{0, 0, 0, 0})
	srv = append(srv, pgMsg('Z', []byte{'I'})...)
	s.c.send(s.f, false, srv)
	s.c.send(s.f, true, pgMsg('Q', []byte("select x from t\x00")))
}

func (s *pgCompressedSession) container(types string, payload []byte) {
	s.c.send(s.f, false, pgCompressed(types, payload))
}

func (s *pgCompressedSession) close(rows int) {
	res := pgMsg('C', []byte("SELECT "+itoa(rows)+"\x00"))
	res = append(res, pgMsg('Z', []byte{'I'})...)
	s.c.send(s.f, false, res)
	s.c.send(s.f, true, pgMsg('X', nil))
	s.c.close(s.f)
}

func init() {
	// One CompressedMessages that inflates to 60 MiB of NoData messages
	// (5 bytes each: 12.6M messages) from 10 KB (issue 14: every inner
	// unit was held until the container ended, 2 GB).
	register("pgsql-zstd-tiny-60m.pcapng", false, func(scale float64) []byte {
		c := newCapw()
		pgSession(c, c.flow(1, 43001, 5432), pgDataRow(1, "1"))
		n := int(60 << 20 * scale / 5)
		inner := bytes.Repeat(pgMsg('n', nil), n)
		s := &pgCompressedSession{c: c, f: c.flow(2, 43002, 5432)}
		s.open()
		s.container("n", zstdStream(1<<20, inner)[0])
		s.close(0)
		pgSession(c, c.flow(3, 43003, 5432), pgDataRow(1, "1"))
		return c.bytes()
	})
	// 20 connections whose zstd frames each ask for a 64 MiB window and
	// fill most of it, all open at once (issue 14: 1.4-3.1 GB).
	register("pgsql-zstd-windows-20.pcapng", false, func(scale float64) []byte {
		c := newCapw()
		pgSession(c, c.flow(1, 43001, 5432), pgDataRow(1, "1"))
		row := pgDataRow(1, string(bytes.Repeat([]byte("wiretap "), 4<<10-2))) // 32 KiB
		perPart := int(24 << 20 * scale / float64(len(row)))
		part := bytes.Repeat(row, perPart)
		types := string(bytes.Repeat([]byte{'D'}, perPart))
		var ss []*pgCompressedSession
		var payloads [][][]byte
		for i := 0; i < 20; i++ {
			s := &pgCompressedSession{c: c, f: c.flow(2+i, uint16(43002+i), 5432)}
			s.open()
			ss = append(ss, s)
			// Each connection's rows differ in one byte, so that no two
			// payloads are the same.
			p := bytes.Clone(part)
			p[len(p)-2] = byte('a' + i)
			payloads = append(payloads, zstdStream(64<<20, p, p))
		}
		for k := 0; k < 2; k++ {
			for i, s := range ss {
				s.container(types, payloads[i][k])
			}
		}
		for _, s := range ss {
			s.close(2 * perPart)
		}
		pgSession(c, c.flow(22, 43022, 5432), pgDataRow(1, "1"))
		return c.bytes()
	})
}
