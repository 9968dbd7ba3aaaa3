package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/proxy"
	"github.com/wiretap-dev/wiretap/capture/relay"
	"github.com/wiretap-dev/wiretap/tui"
)

// The proxy forwards in one process and decodes in another. The process
// the user starts forwards: it accepts clients, dials the upstreams,
// terminates TLS, injects faults and records -w, and hands what passes to
// a second process, the same binary run with relayEnv set, over a pipe
// (capture/relay). The second process decodes, prints or runs the TUI,
// at a lower priority than the traffic (--decode-cpu). So the forwarding
// shares no heap, collector or scheduler with the decoder and its screen:
// a frame drawn or a collection run cannot delay a client's bytes, and
// the kernel gives the forwarding the CPU first. A decoding process too
// slow for the traffic is shown as gaps, as in one process: the pipe
// fills, and the forwarding process's bounded buffer (--decode-buffer)
// turns what does not fit into "decoder behind" gaps.

// relayEnv, set in the decoding process's environment, says that its fd
// 3 is the relay stream and fd 4 the control socket (the TUI's :fault
// commands, answered by the forwarding process).
const relayEnv = "WIRETAP_PROXY_DECODER"

// decoderNice is the decoding process's niceness under --decode-cpu
// spare, with the SCHED_IDLE policy and a session (an autogroup) of its
// own at the same niceness: the lowest priority, so that on a busy
// machine it gets what the server, its clients and the forwarding leave,
// as the in-process pacer did, and gives the processor back the moment
// one of them wakes.
const decoderNice = 19

// schedIdle is Linux's SCHED_IDLE scheduling policy (sched(7)), which
// golang.org/x/sys/unix does not name.
const schedIdle = 5

// isDecoderProcess says this process is a proxy's decoding process.
func isDecoderProcess() bool { return os.Getenv(relayEnv) != "" }

// forwarder is the forwarding process's side of a split proxy.
type forwarder struct {
	cmd     *exec.Cmd
	relay   *relay.Writer
	ctl     net.Conn
	tui     bool
	exited  chan struct{}
	waitErr error
	logs    chan string
}

// startDecoder starts the decoding process: this binary with the same
// arguments, relayEnv set, the relay's read end as fd 3 and its end of
// the control socket as fd 4. The terminal is its. A process that is to
// decode with what is spare (spare) starts a session of its own, whose
// CPU share the kernel may weigh apart from ours (lowerGroupPriority);
// the terminal's signals then reach this process only, which ends the
// relay on ^C and hands the decoding process the window's resizes.
func startDecoder(headless, spare bool) (*forwarder, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	growPipe(pw)
	// Close-on-exec from the start, as os/exec wants of every descriptor
	// but those it hands on (SOCK_CLOEXEC is Linux's; under ForkLock, as
	// the os package does, no exec comes between).
	syscall.ForkLock.RLock()
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(pair[0])
		syscall.CloseOnExec(pair[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		pr.Close()
		pw.Close()
		return nil, err
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "control"), os.NewFile(uintptr(pair[1]), "control")
	ctl, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		pr.Close()
		pw.Close()
		theirs.Close()
		return nil, err
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Env = append(os.Environ(), relayEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{pr, theirs}
	if spare {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	err = cmd.Start()
	pr.Close()
	theirs.Close()
	if err != nil {
		pw.Close()
		ctl.Close()
		return nil, fmt.Errorf("starting the decoding process: %w", err)
	}
	fw := &forwarder{cmd: cmd, relay: relay.NewWriter(pw), ctl: ctl, tui: !headless, exited: make(chan struct{}),
		logs: make(chan string, 64)}
	go func() {
		fw.waitErr = cmd.Wait()
		close(fw.exited)
	}()
	go fw.sendLogs()
	return fw, nil
}

// log hands a line of the proxy's log to the decoding process (its TUI's
// status line). It never waits: the proxy logs from its forwarding
// goroutines, and a decoding process behind must not hold them up; a
// burst it cannot take is dropped, as the TUI's status line would.
func (fw *forwarder) log(msg string) {
	select {
	case fw.logs <- msg:
	default:
	}
}

func (fw *forwarder) sendLogs() {
	for msg := range fw.logs {
		fw.relay.Log(msg)
		fw.relay.Flush()
	}
}

// serveFaults answers the decoding process's :fault commands with set.
func (fw *forwarder) serveFaults(set *proxy.FaultSet) {
	fc := faultControl{set}
	sc := bufio.NewScanner(fw.ctl)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	enc := json.NewEncoder(fw.ctl)
	for sc.Scan() {
		var req faultRequest
		var resp faultResponse
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			resp.Err = "bad request: " + err.Error()
		} else {
			var err error
			switch req.Op {
			case "list":
				resp.Lines = fc.List()
			case "set":
				resp.Rule, err = fc.Set(req.N, req.On)
			case "add":
				resp.Rule, err = fc.Add(req.Rule)
			default:
				err = fmt.Errorf("unknown request %q", req.Op)
			}
			if err != nil {
				resp.Err = err.Error()
			}
		}
		if enc.Encode(&resp) != nil {
			return
		}
	}
}

// finish ends the relay (the decoding process then reads to its end) and
// waits for the decoding process. A TUI that is still open when the
// forwarding was stopped from outside (a signal) is asked to quit, as
// the TUI of a proxy in one process would.
func (fw *forwarder) finish() error {
	fw.relay.End()
	if fw.tui {
		select {
		case <-fw.exited:
		default:
			fw.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	<-fw.exited
	fw.ctl.Close()
	var ee *exec.ExitError
	if errors.As(fw.waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			// Killed by a signal (SIGPIPE: stdout closed by `| head`): so
			// is the proxy, as a proxy in one process would have been.
			return &signalExit{sig: ws.Signal()}
		}
		if ee.ExitCode() > 0 {
			// The decoding process said why on stderr.
			return &exitError{code: ee.ExitCode(), quiet: true}
		}
	}
	if fw.waitErr != nil {
		return inputErr(fmt.Errorf("the decoding process: %w", fw.waitErr))
	}
	return nil
}

// runForwarder is the forwarding process of `wiretap proxy`: the proxy,
// feeding a decoding process.
func runForwarder(p *proxy.Proxy, set *proxy.FaultSet, headless bool, w writeFlags, decodeAnyCPU bool) error {
	// Listen first: a port in use is said at once, not in a TUI that would
	// show nothing.
	listeners := make([]net.Listener, 0, len(p.Routes))
	for _, r := range p.Routes {
		ln, err := net.Listen("tcp", r.Listen)
		if err != nil {
			for _, ln := range listeners {
				ln.Close()
			}
			return inputErr(fmt.Errorf("proxy: %w", err))
		}
		listeners = append(listeners, ln)
	}
	var rec *recording
	if w.path != "" {
		var err error
		if rec, err = openRecording(w, true); err != nil {
			return inputErr(err)
		}
		defer rec.end()
	}
	fw, err := startDecoder(headless, !decodeAnyCPU)
	if err != nil {
		for _, ln := range listeners {
			ln.Close()
		}
		return inputErr(err)
	}
	serial := capture.NewSerial(fw.relay)
	if rec != nil {
		serial.SetRecorder(rec)
	}
	p.Serial = serial
	// The decoding process's priority does the pacing.
	p.DecodeAnyCPU = true
	if !decodeAnyCPU {
		p.BehindHint = fmt.Sprintf("the decoding process runs at the lowest priority (SCHED_IDLE, nice %d), with what the machine can spare; --decode-cpu all has it compete with the traffic", decoderNice)
	}
	if headless {
		p.Log = func(msg string) { fmt.Fprintln(os.Stderr, msg) }
	} else {
		p.Log = fw.log // the TUI's status line
	}
	go fw.serveFaults(set)
	if !headless && !decodeAnyCPU {
		// The TUI's process is in a session of its own (startDecoder):
		// the terminal tells this one when its window changes size.
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		go func() {
			for {
				select {
				case <-winch:
					fw.cmd.Process.Signal(syscall.SIGWINCH)
				case <-fw.exited:
					return
				}
			}
		}()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		// The user quit the TUI, or the decoding process died: stop.
		<-fw.exited
		cancel()
	}()
	serr := p.ServeListeners(ctx, listeners)
	if serr != nil {
		fw.relay.Fail(serr.Error())
	}
	ferr := fw.finish()
	// Said after the decoding process is done: its TUI has given the
	// terminal back.
	if note := decoderNote(p.DecodeStats()); note != "" {
		fmt.Fprintln(os.Stderr, note)
	}
	return ferr
}

// runDecoder is the decoding process of `wiretap proxy`: it reads the
// relay stream of its fd 3 into a pipeline, printed or shown in the TUI,
// at the priority --decode-cpu says.
func runDecoder(f *decodeFlags, headless bool, title string, budget func(*tui.Options), decodeAnyCPU bool) error {
	if !decodeAnyCPU {
		lowerGroupPriority(decoderNice)
		lowerPriority(decoderNice)
	}
	in := os.NewFile(3, "relay")
	ctlFile := os.NewFile(4, "control")
	ctl, err := net.FileConn(ctlFile)
	ctlFile.Close()
	if err != nil {
		return inputErr(fmt.Errorf("the proxy's control socket: %w", err))
	}
	defer ctl.Close()
	logs := make(chan error, 64)
	logf := func(msg string) { fmt.Fprintln(os.Stderr, msg) }
	if !headless {
		logf = func(msg string) {
			select {
			case logs <- errors.New(msg):
			default: // a burst the status line cannot show is not waited for
			}
		}
	}
	src := func(ctx context.Context, h capture.Handler, _ func(*capture.Packet)) error {
		if headless {
			// A signal (the user's ^C reaches both processes) does not
			// stop the decoding: the forwarding process ends the stream,
			// and everything before its end is printed.
			return relay.Read(context.Background(), in, h, logf)
		}
		stop := context.AfterFunc(ctx, func() { in.Close() })
		defer stop()
		return relay.Read(ctx, in, h, logf)
	}
	opts := func(o *tui.Options) {
		o.Err = mergeErrs(o.Err, logs)
		o.Faults = &remoteFaults{conn: ctl, r: bufio.NewReader(ctl)}
	}
	return liveRun(f, headless, title, writeFlags{}, true, src, opts, budget)
}

// signalExit ends wiretap by the signal that ended its decoding process,
// once everything else is done (main raises it).
type signalExit struct{ sig syscall.Signal }

func (e *signalExit) Error() string { return "the decoding process: " + e.sig.String() }

// faultRequest and faultResponse are the control socket's messages, one
// JSON object a line.
type faultRequest struct {
	Op   string `json:"op"` // list, set, add
	N    int    `json:"n,omitempty"`
	On   bool   `json:"on,omitempty"`
	Rule string `json:"rule,omitempty"`
}

type faultResponse struct {
	Lines []string `json:"lines,omitempty"`
	Rule  string   `json:"rule,omitempty"`
	Err   string   `json:"err,omitempty"`
}

// remoteFaults is the TUI's :fault on the rules of the forwarding
// process, over the control socket.
type remoteFaults struct {
	mu   sync.Mutex
	conn net.Conn
	r    *bufio.Reader
}

func (c *remoteFaults) call(req faultRequest) (faultResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var resp faultResponse
	b, _ := json.Marshal(req)
	c.conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		return resp, fmt.Errorf("the forwarding process: %w", err)
	}
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return resp, fmt.Errorf("the forwarding process: %w", err)
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		return resp, fmt.Errorf("the forwarding process: %w", err)
	}
	if resp.Err != "" {
		return resp, errors.New(resp.Err)
	}
	return resp, nil
}

func (c *remoteFaults) List() []string {
	resp, err := c.call(faultRequest{Op: "list"})
	if err != nil {
		return nil
	}
	return resp.Lines
}

func (c *remoteFaults) Set(n int, on bool) (string, error) {
	resp, err := c.call(faultRequest{Op: "set", N: n, On: on})
	return resp.Rule, err
}

func (c *remoteFaults) Add(rule string) (string, error) {
	resp, err := c.call(faultRequest{Op: "add", Rule: rule})
	return resp.Rule, err
}

var _ tui.FaultControl = (*remoteFaults)(nil)
