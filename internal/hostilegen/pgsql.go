package main

import (
	"encoding/binary"

	"github.com/wiretap-dev/wiretap/capture"
)

func pgMsg(typ byte, body []byte) []byte {
	b := []byte{typ}
	b = binary.BigEndian.AppendUint32(b, uint32(4+len(body)))
	return append(b, body...)
}

func pgStartup() []byte {
	body := binary.BigEndian.AppendUint32(nil, 196608) // protocol 3.0
	body = append(body, "user\x00postgres\x00database\x00postgres\x00\x00"...)
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(body)))
	return append(b, body...)
}

// pgDataRow encodes a DataRow whose column count is count and whose
// columns are cols.
func pgDataRow(count int16, cols ...string) []byte {
	body := binary.BigEndian.AppendUint16(nil, uint16(count))
	for _, c := range cols {
		body = binary.BigEndian.AppendUint32(body, uint32(len(c)))
		body = append(body, c...)
	}
	return pgMsg('D', body)
}

// pgSession writes a PostgreSQL session on f: startup, trust
// authentication, one simple query whose result rows are rows, terminate.
func pgSession(c *capw, f *capture.Flow, rows ...[]byte) {
	c.send(f, true, pgStartup())
	srv := pgMsg('R', []byte{0, 0, 0, 0})
	srv = append(srv, pgMsg('Z', []byte{'I'})...)
	c.send(f, false, srv)
	c.send(f, true, pgMsg('Q', []byte("select 1\x00")))
	// RowDescription: one text column "x".
	rd := binary.BigEndian.AppendUint16(nil, 1)
	rd = append(rd, "x\x00"...)
	rd = append(rd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 25, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0)
	res := pgMsg('T', rd)
	for _, r := range rows {
		res = append(res, r...)
	}
	res = append(res, pgMsg('C', []byte("SELECT "+itoa(len(rows))+"\x00"))...)
	res = append(res, pgMsg('Z', []byte{'I'})...)
	c.send(f, false, res)
	c.send(f, true, pgMsg('X', nil))
	c.close(f)
}

func init() {
	// DataRows whose column count disagrees with their columns (issue 14:
	// the summary said "65535 columns" while the tree said -1).
	register("pgsql-datarow-count.pcapng", false, func(scale float64) []byte {
		c := newCapw()
		pgSession(c, c.flow(1, 42001, 5432), pgDataRow(1, "1"))
		pgSession(c, c.flow(2, 42002, 5432),
			pgDataRow(-1, "1"),     // a negative count, then a column
			pgDataRow(3, "1"),      // more columns announced than sent
			pgDataRow(1, "1", "2"), // fewer announced than sent
			pgDataRow(1, "1"))      // and an honest one
		pgSession(c, c.flow(3, 42003, 5432), pgDataRow(1, "1"))
		return c.bytes()
	})
}
