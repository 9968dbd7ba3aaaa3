#!/usr/bin/env python3
"""bench-time.py: time several commands in turn, run by run, and print
each one's median wall time in seconds, one a line, in the order given.

    scripts/bench-time.py [-n RUNS] [--nice N] [--settle] -- CMD ARG... [-- CMD ARG...]

Each command runs once unmeasured (page cache, binary), then RUNS rounds
run every command once each, the order rotated from round to round,
output to /dev/null. On a machine whose speed drifts from minute to
minute (a shared VM), timing one command's runs in a block and then the
other's lets the drift fall on one of them; taken in turn, every
command's runs span the same minutes, and their ratio is what it would
be on a steady machine. bench-vs-tshark.sh times wiretap against tshark
with it.

--settle: each round runs the first command first, then every other
command once unmeasured, then those measured, in turn. A process that
frees a lot of memory (`tshark -T json`: gigabytes) leaves the next one
to pay for its fresh memory as if new to the machine (on a VM that
gives freed memory back to its host, the next `wiretap read --format
json` of the COPY shape took 0.194 s against 0.099 s after another
wiretap run): whichever command came next would be charged for it.

A command that exits non-zero is timed anyway, and said on stderr.
"""
import argparse
import os
import statistics
import sys
import time


def run(cmd, nice):
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            if nice:
                os.nice(nice)
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    _, status = os.waitpid(pid, 0)
    elapsed = time.perf_counter() - start
    if status != 0:
        print("bench-time: %s: exit status %d (timed anyway)" % (" ".join(cmd), os.waitstatus_to_exitcode(status)),
              file=sys.stderr)
    return elapsed


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("-n", type=int, default=3)
    ap.add_argument("--nice", type=int, default=0)
    ap.add_argument("--settle", action="store_true")
    ap.add_argument("rest", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmds, cur = [], None
    for arg in a.rest:
        if arg == "--":
            cur = []
            cmds.append(cur)
        elif cur is None:
            ap.error("commands start with --")
        else:
            cur.append(arg)
    cmds = [c for c in cmds if c]
    if not cmds or a.n < 1:
        ap.error("want -n >= 1 and at least one command")
    for c in cmds:
        run(c, a.nice)
    times = [[] for _ in cmds]
    for r in range(a.n):
        if a.settle:
            times[0].append(run(cmds[0], a.nice))
            for c in cmds[1:]:
                run(c, a.nice)
            rest = list(range(1, len(cmds)))
        else:
            rest = list(range(len(cmds)))
        k = r % max(len(rest), 1)
        for i in rest[k:] + rest[:k]:
            times[i].append(run(cmds[i], a.nice))
    for t in times:
        print("%.3f" % statistics.median(t))


if __name__ == "__main__":
    main()
