package capture_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/internal/loopback"
)

// needTool returns the path of a tool, skipping the test when it is
// missing, unless CI=true, where a missing tool fails.
func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is needed (Debian packages tshark, wireshark-common)", name)
		}
		t.Skipf("%s not installed", name)
	}
	return path
}

// tsharkStreams returns tshark's reassembly of every TCP stream of a
// capture: per stream, the client's and the server's bytes.
func tsharkStreams(t *testing.T, path string) [][2][]byte {
	t.Helper()
	tshark := needTool(t, "tshark")
	out, err := exec.Command(tshark, "-n", "-r", path, "-T", "fields", "-e", "tcp.stream").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	n := 0
	for _, l := range strings.Fields(string(out)) {
		if i, err := strconv.Atoi(l); err == nil && i+1 > n {
			n = i + 1
		}
	}
	streams := make([][2][]byte, n)
	for i := range n {
		out, err := exec.Command(tshark, "-n", "-r", path, "-q", "-z", "follow,tcp,raw,"+strconv.Itoa(i)).Output()
		if err != nil {
			t.Fatalf("tshark follow: %v", err)
		}
		// The hex lines come after "Node 1: ..." and before the closing
		// rule; node 1's lines are indented with a tab.
		_, body, _ := strings.Cut(string(out), "\nNode 1: ")
		_, body, _ = strings.Cut(body, "\n")
		body, _, _ = strings.Cut(body, "=====")
		for _, line := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
			if line == "" {
				continue
			}
			d := 0
			if strings.HasPrefix(line, "\t") {
				d = 1
			}
			b, err := hex.DecodeString(strings.TrimSpace(line))
			if err != nil {
				t.Fatalf("follow output %q: %v", line, err)
			}
			streams[i][d] = append(streams[i][d], b...)
		}
	}
	return streams
}

// agreeWithTshark reads path and checks that every flow's bytes are what
// tshark reassembles for the stream of the same number.
func agreeWithTshark(t *testing.T, path string) *recorder {
	t.Helper()
	r := newRecorder()
	if _, err := capture.ReadFile(path, r, nil); err != nil {
		t.Fatal(err)
	}
	want := tsharkStreams(t, path)
	if len(want) != len(r.flows) {
		t.Errorf("%s: %d flows, tshark sees %d streams", filepath.Base(path), len(r.flows), len(want))
	}
	for i, w := range want {
		got := r.stream[i+1]
		if got == nil {
			got = new([2]bytes.Buffer)
		}
		// tshark's node 0 is the first packet's sender, like A without SYN;
		// with a SYN it is the client too.
		for d := range 2 {
			if !bytes.Equal(got[d].Bytes(), w[d]) {
				t.Errorf("%s: stream %d direction %d: %d bytes, tshark %d", filepath.Base(path), i, d, got[d].Len(), len(w[d]))
			}
		}
	}
	return r
}

// TestRealCaptures captures TCP exchanges on loopback with dumpcap, on lo
// (Ethernet) and on any (Linux cooked SLL and SLL2), converts each to legacy pcap
// with editcap, and checks that both forms read the same and agree with
// tshark.
func TestRealCaptures(t *testing.T) {
	dumpcap := needTool(t, "dumpcap")
	editcap := needTool(t, "editcap")
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("capturing needs root or CAP_NET_RAW")
		}
		t.Skip("capturing needs root or CAP_NET_RAW")
	}
	for _, tc := range []struct{ name, iface, linkType string }{
		{"lo", "lo", ""},
		{"any-sll", "any", "LINUX_SLL"},
		{"any-sll2", "any", "LINUX_SLL2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ng := filepath.Join(dir, tc.name+".pcapng")
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
			ctx, cancel := context.WithCancel(context.Background())
			args := []string{"-q", "-i", tc.iface, "-f", "tcp port " + port, "-w", "-"}
			if tc.linkType != "" {
				args = append(args, "-y", tc.linkType)
			}
			cmd := exec.CommandContext(ctx, dumpcap, args...)
			cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
			cmd.WaitDelay = 10 * time.Second
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// dumpcap writes the section header once it captures.
			br := bufio.NewReader(out)
			if _, err := br.Peek(4); err != nil {
				t.Fatalf("dumpcap did not start: %v", err)
			}
			f, err := os.Create(ng)
			if err != nil {
				t.Fatal(err)
			}
			// Read the capture as it is written, to know when the kernel has
			// handed over the last packets (with -i any it delivers them in
			// blocks, which dumpcap drops when stopped early).
			closes := &closeCounter{closed: make(chan struct{}, 10)}
			copied := make(chan error)
			go func() {
				_, err := capture.Read(io.TeeReader(br, f), "dumpcap", closes, nil)
				copied <- err
			}()
			for i := range 3 {
				loopback.Exchange(t, ln, strings.Repeat("request ", 1+i*300), strings.Repeat("reply ", 1+i*800))
			}
			for range 3 {
				<-closes.closed
			}
			cancel()
			if err := <-copied; err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			f.Close()

			pcap := filepath.Join(dir, tc.name+".pcap")
			if out, err := exec.Command(editcap, "-F", "pcap", ng, pcap).CombinedOutput(); err != nil {
				t.Fatalf("editcap: %v\n%s", err, out)
			}
			r1 := agreeWithTshark(t, ng)
			r2 := agreeWithTshark(t, pcap)
			if len(r1.flows) != 3 {
				t.Errorf("%d flows, want 3", len(r1.flows))
			}
			if r1.log.String() != r2.log.String() {
				t.Errorf("pcapng and pcap read differently")
			}
			for id, f := range r1.flows {
				if !f.SYN || f.B.Port() != uint16(ln.Addr().(*net.TCPAddr).Port) || r1.closed[id] != 1 {
					t.Errorf("flow %+v closed %d times", f, r1.closed[id])
				}
			}
			if dst := os.Getenv("WIRETAP_SAVE_CAPTURES"); dst != "" {
				for _, p := range []string{ng, pcap} {
					b, _ := os.ReadFile(p)
					os.WriteFile(filepath.Join(dst, "loopback-"+filepath.Base(p)), b, 0o644)
				}
			}
		})
	}
}

// TestTestdataCaptures reads the captures kept in testdata (made by
// TestRealCaptures with WIRETAP_SAVE_CAPTURES=testdata) and checks them
// against tshark.
func TestTestdataCaptures(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.pcap*")
	if len(files) == 0 {
		t.Fatal("no captures in testdata")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := newRecorder()
			stats, err := capture.ReadFile(f, r, nil)
			if err != nil {
				t.Fatal(err)
			}
			if stats.Truncated || stats.Skipped != 0 || len(r.flows) == 0 {
				t.Errorf("stats %+v", stats)
			}
			for id, s := range r.stream {
				if s[0].Len() == 0 || s[1].Len() == 0 || !strings.HasPrefix(s[0].String(), "request ") || !strings.HasPrefix(s[1].String(), "reply ") {
					t.Errorf("flow %d: %d/%d bytes", id, s[0].Len(), s[1].Len())
				}
			}
			if _, err := exec.LookPath("tshark"); err == nil {
				agreeWithTshark(t, f)
			}
		})
	}
}

// closeCounter signals every flow that closes with its FINs seen.
type closeCounter struct{ closed chan struct{} }

func (c *closeCounter) Data(*capture.Flow, bool, []byte, time.Time) {}
func (c *closeCounter) Gap(*capture.Flow, bool, int, time.Time)     {}
func (c *closeCounter) Close(*capture.Flow, time.Time)              { c.closed <- struct{}{} }
