package pgwire_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/pgwire"
)

// needPeer skips a test whose real peer (server, compiler, library) is
// missing, but fails it when CI=true: CI must have every peer.
func needPeer(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but %s", msg)
	}
	t.Skip(msg)
}

var pg struct {
	once     sync.Once
	conninfo string
	dir      string
	ctl      string
	asUser   string
	ssl      bool
	err      error
}

// writeCert writes a self-signed certificate and key for the server,
// readable only by the user the server runs as.
func writeCert(dir string) (crt, key string, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		return "", "", err
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return "", "", err
	}
	crt, key = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	if err := os.WriteFile(crt, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		return "", "", err
	}
	if pg.asUser != "" {
		u, err := user.Lookup(pg.asUser)
		if err != nil {
			return "", "", err
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, f := range []string{crt, key} {
			if err := os.Chown(f, uid, gid); err != nil {
				return "", "", err
			}
		}
	}
	return crt, key, nil
}

const pgPassword = "wiretap-secret"

// postgres returns a libpq conninfo for a PostgreSQL server reachable over
// TCP with SCRAM authentication: $WIRETAP_PG_CONNINFO when set, otherwise
// a temporary cluster started for this test binary (stopped by TestMain).
func postgres(t testing.TB) string {
	t.Helper()
	if ci := os.Getenv("WIRETAP_PG_CONNINFO"); ci != "" {
		return ci
	}
	pg.once.Do(startCluster)
	if pg.err != nil {
		needPeer(t, "no PostgreSQL server: %v", pg.err)
	}
	return pg.conninfo
}

func pgBin(name string) (string, error) {
	for _, v := range []string{"15", "16", "17", "14"} {
		p := filepath.Join("/usr/lib/postgresql", v, "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return exec.LookPath(name)
}

func startCluster() {
	initdb, err := pgBin("initdb")
	if err != nil {
		pg.err = err
		return
	}
	pg.ctl, _ = pgBin("pg_ctl")
	dir, err := os.MkdirTemp("", "wiretap-pgwire-")
	if err != nil {
		pg.err = err
		return
	}
	pg.dir = dir
	if os.Geteuid() == 0 {
		// initdb refuses to run as root.
		u, err := user.Lookup("postgres")
		if err != nil {
			pg.err = fmt.Errorf("running as root and no postgres user: %w", err)
			return
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		_ = os.Chown(dir, uid, gid)
		pg.asUser = "postgres"
	}
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte(pgPassword+"\n"), 0o644); err != nil {
		pg.err = err
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		pg.err = err
		return
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	data := filepath.Join(dir, "data")
	if out, err := runAs(initdb, "-D", data, "-U", "postgres", "--pwfile="+pw,
		"--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--locale=C").CombinedOutput(); err != nil {
		pg.err = fmt.Errorf("initdb: %v: %s", err, out)
		return
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", port, dir)
	if crt, key, err := writeCert(dir); err == nil {
		opts += " -c ssl=on -c ssl_cert_file=" + crt + " -c ssl_key_file=" + key
		pg.ssl = true
	}
	if out, err := runAs(pg.ctl, "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "start").CombinedOutput(); err != nil {
		pg.err = fmt.Errorf("pg_ctl start: %v: %s", err, out)
		return
	}
	pg.conninfo = fmt.Sprintf("host=127.0.0.1 port=%d user=postgres password=%s dbname=postgres sslmode=disable", port, pgPassword)
}

func runAs(name string, args ...string) *exec.Cmd {
	if pg.asUser == "" {
		return exec.Command(name, args...)
	}
	q := strconv.Quote(name)
	for _, a := range args {
		q += " " + strconv.Quote(a)
	}
	return exec.Command("su", pg.asUser, "-s", "/bin/sh", "-c", q)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pg.conninfo != "" && os.Getenv("WIRETAP_PG_CONNINFO") == "" {
		_ = runAs(pg.ctl, "-D", filepath.Join(pg.dir, "data"), "-m", "immediate", "stop").Run()
	}
	if pg.dir != "" {
		os.RemoveAll(pg.dir)
	}
	os.Exit(code)
}

// chunk is one read of one direction, in the order the relay saw them.
type chunk struct {
	dir decode.Dir
	b   []byte
}

type recorder struct {
	mu     sync.Mutex
	chunks []chunk
}

func (r *recorder) add(dir decode.Dir, b []byte) {
	r.mu.Lock()
	r.chunks = append(r.chunks, chunk{dir, append([]byte(nil), b...)})
	r.mu.Unlock()
}

// relay accepts one connection, forwards it to upstream and records what
// passes. wait returns once both directions are closed.
func relay(t *testing.T, upstream string) (addr string, rec *recorder, wait func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec = &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer ln.Close()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", upstream)
		if err != nil {
			c.Close()
			return
		}
		var wg sync.WaitGroup
		pump := func(dir decode.Dir, from, to net.Conn) {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := from.Read(buf)
				if n > 0 {
					// Record before forwarding, so that an answer can
					// never be recorded before what caused it.
					rec.add(dir, buf[:n])
					if _, werr := to.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			if tc, ok := to.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
		}
		wg.Add(2)
		go pump(decode.DirF, c, s)
		go pump(decode.DirB, s, c)
		wg.Wait()
		c.Close()
		s.Close()
	}()
	return ln.Addr().String(), rec, func() {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("relay did not finish")
		}
	}
}

// decodeChunks runs the decoder over recorded chunks and returns its units.
func decodeChunks(chunks []chunk, opt *decode.Options) ([]*decode.Unit, *decode.Conn) {
	conn := &decode.Conn{ID: 1, Proto: decode.ProtoPgSQL}
	var units []*decode.Unit
	d := pgwire.New(conn, opt, func(u *decode.Unit) {
		u.N = len(units) + 1
		units = append(units, u)
	})
	now := time.Unix(1700000000, 0)
	for i, c := range chunks {
		d.Feed(c.dir, c.b, now.Add(time.Duration(i)*time.Millisecond))
	}
	d.End(decode.DirF, now)
	d.End(decode.DirB, now)
	return units, conn
}
