package pqtrace_test

import (
	"os"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/pgwire"
	"github.com/wiretap-dev/wiretap/decode/pgwire/pqtrace"
)

// A decoder's units printed as libpq's trace.
func Example() {
	p := pqtrace.New(os.Stdout, pqtrace.Options{})
	d := pgwire.New(&decode.Conn{ID: 1}, nil, func(u *decode.Unit) { _ = p.Print(u) })
	t := time.Now()
	d.Feed(decode.DirF, pgwire.AppendMessage(nil, 'Q', []byte("SELECT 1\x00")), t)
	var b []byte
	b = (&pgwire.DataRow{Values: [][]byte{[]byte("1"), nil}}).Encode(b)
	b = (&pgwire.CommandComplete{Tag: []byte("SELECT 1")}).Encode(b)
	b = (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(b)
	d.Feed(decode.DirB, b, t)
	d.End(decode.DirF, t)
	d.End(decode.DirB, t)
	_ = p.Flush()
	// Output:
	// F	13	Query	 "SELECT 1"
	// B	15	DataRow	 2 1 '1' -1
	// B	13	CommandComplete	 "SELECT 1"
	// B	5	ReadyForQuery	 I
}
