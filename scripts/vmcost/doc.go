// Command vmcost measures what memory and process start cost on this
// machine, the costs the README's Performance section reasons with: on a
// paravirtualised guest with shadow page tables they dominate `wiretap
// read` on the small corpus shapes, and they differ from one machine to
// the next by an order of magnitude.
//
//	go run ./scripts/vmcost [-mb 64] [-rounds 3] [-chase-mb 64] [-file CAPTURE] [-- COMMAND...]
//
// It prints, each as the median of its rounds (the first round on its own
// where the first and the later ones differ):
//
//   - the first touch of anonymous memory in 4 KiB pages (MADV_NOHUGEPAGE);
//   - the first touch of anonymous memory in 2 MiB huge pages
//     (MADV_HUGEPAGE), the first round apart: its pages may be new to the
//     host, the later rounds' are the ones the first unmapped;
//   - the latency of memory: a load in a random pointer chase through
//     -chase-mb MiB (0: not measured);
//   - a cache line's round trip between CPUs 0 and 1: two threads pinned
//     to them take turns writing it (on a machine of two CPUs or more);
//   - with -file, reading the file through a mapping (MADV_POPULATE_READ,
//     then a byte a page) against read(2) into a reused 1 MiB buffer;
//   - the start of an empty Go program against COMMAND (default
//     `bin/wiretap read testdata/amqp091-pika.pcapng`), run from the
//     repository's root.
//
// Linux only.
package main
