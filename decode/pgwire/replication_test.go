package pgwire_test

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/pgwire"
	"github.com/wiretap-dev/wiretap/decode/pgwire/pqtrace"
)

// TestReplicationStream records pg_receivewal streaming WAL from a real
// server and checks the replication messages inside CopyData are decoded
// as such. (Keepalives come every wal_sender_timeout/2, too rarely for a
// short test; TestReplication covers them.)
func TestReplicationStream(t *testing.T) {
	conninfo := postgres(t)
	recv, err := pgBin("pg_receivewal")
	if err != nil {
		needPeer(t, "no pg_receivewal: %v", err)
	}
	psql, err := pgBin("psql")
	if err != nil {
		needPeer(t, "no psql: %v", err)
	}
	var host, port, password string
	for _, kv := range strings.Fields(conninfo) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "host":
			host = v
		case "port":
			port = v
		case "password":
			password = v
		}
	}
	addr, rec, wait := relay(t, net.JoinHostPort(host, port))
	_, rport, _ := net.SplitHostPort(addr)
	env := append(os.Environ(), "PGPASSWORD="+password, "PGSSLMODE=disable")
	cmd := exec.Command(recv, "-h", host, "-p", rport, "-U", "postgres", "-D", t.TempDir(), "--no-loop", "-s", "1", "-w")
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	gen := exec.Command(psql, "-h", host, "-p", port, "-U", "postgres", "-d", "postgres", "-w", "-q", "-c",
		"CREATE TABLE IF NOT EXISTS wal_gen AS SELECT g FROM generate_series(1, 2000) g; INSERT INTO wal_gen SELECT generate_series(1, 2000)")
	gen.Env = env
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	time.Sleep(2500 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGINT)
	_ = cmd.Wait()
	wait()

	units, _ := decodeChunks(rec.chunks, nil)
	count := map[string]int{}
	for _, u := range units {
		if u.Err() != "" {
			t.Errorf("unit %d %s: %s", u.N, u.Type, u.Err())
		}
		count[u.Type]++
		if u.Type == "CopyData" {
			count[u.Summary]++
			if u.Summary == "CopyData: XLogData" && count[u.Summary] == 1 {
				fs := u.Fields()
				var lsn string
				decode.Walk(fs, func(f *decode.Field) bool {
					if f.Name == "pgsql.replication.wal_start" {
						lsn = f.Text()
					}
					return true
				})
				if !strings.Contains(lsn, "/") {
					t.Errorf("XLogData wal_start %q", lsn)
				}
			}
		}
	}
	for _, want := range []string{"CopyBothResponse", "CopyData: XLogData", "CopyData: StandbyStatusUpdate"} {
		if count[want] == 0 {
			t.Errorf("no %s in the recorded stream (saw %v)", want, count)
		}
	}
}

// TestTLSSession connects with sslmode=require through the relay: the
// decoder shows the SSLRequest, the 'S' answer, and one TLS unit per
// direction instead of garbage.
func TestTLSSession(t *testing.T) {
	conninfo := postgres(t)
	if os.Getenv("WIRETAP_PG_CONNINFO") == "" && !pg.ssl {
		needPeer(t, "the test server has no TLS certificate")
	}
	psql, err := pgBin("psql")
	if err != nil {
		needPeer(t, "no psql: %v", err)
	}
	var host, port, password string
	for _, kv := range strings.Fields(conninfo) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "host":
			host = v
		case "port":
			port = v
		case "password":
			password = v
		}
	}
	addr, rec, wait := relay(t, net.JoinHostPort(host, port))
	_, rport, _ := net.SplitHostPort(addr)
	cmd := exec.Command(psql, "host="+host+" port="+rport+" user=postgres dbname=postgres sslmode=require", "-w", "-c", "SELECT 1")
	cmd.Env = append(os.Environ(), "PGPASSWORD="+password)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	wait()
	units, conn := decodeChunks(rec.chunks, nil)
	if got := types(units); got != "F:SSLRequest B:SSLResponse F:TLS B:TLS" {
		t.Fatalf("got %s", got)
	}
	var total [2]int
	for _, c := range rec.chunks {
		total[c.dir] += len(c.b)
	}
	if units[2].Len != total[decode.DirF]-8 || units[3].Len != total[decode.DirB]-1 {
		t.Errorf("TLS byte counts %d/%d, want %d/%d", units[2].Len, units[3].Len, total[decode.DirF]-8, total[decode.DirB]-1)
	}
	if len(conn.Notes) != 2 {
		t.Errorf("notes: %q", conn.Notes)
	}
}

// TestNegotiateProtocolVersion asks a real server for protocol 3.2 and
// offers compression the way the proposal's libpq does: PostgreSQL 15
// answers NegotiateProtocolVersion naming the option it does not know.
func TestNegotiateProtocolVersion(t *testing.T) {
	conninfo := postgres(t)
	var host, port string
	for _, kv := range strings.Fields(conninfo) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "host":
			host = v
		case "port":
			port = v
		}
	}
	addr, rec, wait := relay(t, net.JoinHostPort(host, port))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	m := pgwire.StartupMessage{ProtocolVersion: 3<<16 | 2, Params: []pgwire.Param{
		{Name: []byte("user"), Value: []byte("postgres")},
		{Name: []byte("database"), Value: []byte("postgres")},
		{Name: []byte("_pq_.supported_compressions"), Value: []byte("zstd,lz4")},
	}}
	if _, err := c.Write(m.Encode(nil)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	var got []byte
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil || bytes.Contains(got, []byte("SCRAM-SHA-256")) {
			break
		}
	}
	t.Logf("answer after %v", time.Since(start))
	c.Close()
	wait()
	t.Logf("relay done after %v", time.Since(start))
	units, _ := decodeChunks(rec.chunks, nil)
	if tt := types(units); !strings.HasPrefix(tt, "F:StartupMessage B:NegotiateProtocolVersion B:AuthenticationSASL") {
		t.Fatalf("got %s", tt)
	}
	fs := units[1].Fields()
	if f := decode.Find(fs, "pgsql.nonsupported_option"); f == nil || f.Value != "_pq_.supported_compressions" {
		t.Errorf("option: %+v", f)
	}
	// PostgreSQL 15 sends PG_PROTOCOL_LATEST, the whole version 3.0
	// (196608), where the documentation promises the newest minor.
	if f := decode.Find(fs, "pgsql.version_supported_minor"); f == nil || f.Value != uint64(196608) || f.Text() != "3.0 (196608)" {
		t.Errorf("newest minor: %+v", f)
	}
	line := string(pqtrace.AppendUnit(nil, units[1], pqtrace.Options{}))
	if line != "B\t40\tNegotiateProtocolVersion\t 196608 1 \"_pq_.supported_compressions\"\n" {
		t.Errorf("trace line %q", line)
	}
}
