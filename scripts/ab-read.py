#!/usr/bin/env python3
"""ab-read.py: time two wiretap builds' `read` against each other, run by run.

    scripts/ab-read.py [-n ROUNDS] [--format text|json] OLD NEW [SHAPE|FILE ...]

Each round runs both builds once on each file (which one goes first
alternates), output to /dev/null, and takes each run's wall time and the
user+system CPU time the kernel charged it (wait4). It prints the medians
and their ratio (NEW/OLD) side by side, with the standard error of the
means. On a shared or virtual machine whose speed drifts from minute to
minute, this is what compares two builds: timing one after the other in
blocks (bench-vs-tshark.sh's BEFORE) lets the drift fall on one of them.

SHAPE names a file of testdata/corpus (scripts/corpus.sh); without any,
every shape there is timed. Default: 15 rounds, text.
"""
import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES = ["amqp091-fanout-16b", "amqp091-large", "amqp10-small", "amqp10-multiframe",
          "pgsql-select-1m", "pgsql-copy", "pgsql-zstd", "amqp091-shortconns-10k"]


def run(binary, fmt, path):
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        try:
            os.execv(binary, [binary, "read", "--format", fmt, path])
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    if status != 0:
        sys.exit("ab-read: %s read %s: exit status %d" % (binary, path, os.waitstatus_to_exitcode(status)))
    return (time.perf_counter() - start) * 1000, (usage.ru_utime + usage.ru_stime) * 1000


def summary(xs):
    se = statistics.stdev(xs) / len(xs) ** 0.5 if len(xs) > 1 else 0.0
    return statistics.median(xs), se


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=15, help="rounds (default 15)")
    ap.add_argument("--format", default="text", choices=["text", "json"])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    files = a.files or SHAPES
    print("%-24s %6s %6s  %-22s %6s %6s  %s" % ("medians, ms", "wall", "", "new/old (se old/new)", "cpu", "", "new/old (se old/new)"))
    print("%-24s %6s %6s  %-22s %6s %6s" % ("", "old", "new", "", "old", "new"))
    for f in files:
        path = f if os.path.exists(f) else os.path.join(ROOT, "testdata", "corpus", f + ".pcapng")
        if not os.path.exists(path):
            sys.exit("ab-read: no %s (scripts/corpus.sh records the corpus)" % path)
        res = {a.old: [], a.new: []}
        for i in range(a.n):
            for b in ((a.old, a.new) if i % 2 == 0 else (a.new, a.old)):
                res[b].append(run(b, a.format, path))
        (wo, wose), (wn, wnse) = summary([r[0] for r in res[a.old]]), summary([r[0] for r in res[a.new]])
        (co, cose), (cn, cnse) = summary([r[1] for r in res[a.old]]), summary([r[1] for r in res[a.new]])
        name = os.path.basename(path).removesuffix(".pcapng")
        print("%-24s %6.1f %6.1f  %-22s %6.1f %6.1f  %s" %
              (name, wo, wn, "%.2f (se %.1f/%.1f)" % (wn / wo, wose, wnse), co, cn, "%.2f (se %.1f/%.1f)" % (cn / co, cose, cnse)))


if __name__ == "__main__":
    main()
