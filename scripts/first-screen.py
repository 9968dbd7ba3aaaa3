#!/usr/bin/python3
"""first-screen.py: how long `wiretap replay FILE` takes to put its first
rows of units on a terminal, measured without tmux.

    scripts/first-screen.py [-n RUNS] [--size COLSxROWS] FILE BINARY...

Each run forks BINARY in a new pseudo-terminal of the given size (default
160x48, TERM=xterm-256color, TMUX unset) and reads what it writes until,
with the escape sequences taken out, a unit row appears (a number, then a
capture time with six decimals): the time from the fork to that read is
the run's figure. Binaries alternate run by run, so that a change in the
machine's load falls on all of them; the script prints each binary's
median, minimum, maximum and every run, in milliseconds.

scripts/tui-vs-termshark.sh measures the same inside tmux, whose polling
(a `tmux capture-pane` every few milliseconds, each a process) and own
drawing add tens of milliseconds and spread the figures; inside tmux
lipgloss also runs `tmux info` once before main (8-15 ms here). This
script reads the pty directly, so its figure is wiretap's own: process
start, the first batch decoded and stored, bubbletea's first frames.
"""
import argparse
import fcntl
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time

ESCAPES = re.compile(
    rb"\x1b\[[0-9;?<>=$ ]*[A-Za-z@`~]"  # CSI
    rb"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC
    rb"|\x1b[()][0-9A-Za-z]|\x1b[=>78]"
)
ROW = re.compile(rb"\d+ +\d+\.\d{6} ")


def one(binary, path, cols, rows, deadline=10.0):
    t0 = time.monotonic()
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        env["TERM"] = "xterm-256color"
        try:
            os.execve(binary, [binary, "replay", path], env)
        finally:
            os._exit(127)
    seen, took = b"", None
    try:
        while time.monotonic() - t0 < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
            if ROW.search(ESCAPES.sub(b"", seen)):
                took = (time.monotonic() - t0) * 1000
                break
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    return took


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", "--runs", type=int, default=9)
    ap.add_argument("--size", default="160x48")
    ap.add_argument("file")
    ap.add_argument("binary", nargs="+")
    a = ap.parse_args()
    cols, rows = (int(x) for x in a.size.split("x"))
    if not os.path.exists(a.file):
        sys.exit("first-screen: no such file: " + a.file)
    got = {b: [] for b in a.binary}
    for _ in range(a.runs):
        for b in a.binary:
            got[b].append(one(b, a.file, cols, rows))
            time.sleep(0.2)
    for b, runs in got.items():
        ok = sorted(r for r in runs if r is not None)
        if not ok:
            print(f"{b}: no rows within 10 s in {len(runs)} runs")
            continue
        med = ok[len(ok) // 2] if len(ok) % 2 else (ok[len(ok) // 2 - 1] + ok[len(ok) // 2]) / 2
        failed = len(runs) - len(ok)
        print(f"{b}: median {med:.1f} ms, {ok[0]:.1f}-{ok[-1]:.1f} ms"
              + (f", {failed} runs without rows" if failed else "")
              + "; runs " + " ".join("-" if r is None else f"{r:.1f}" for r in runs))


if __name__ == "__main__":
    main()
