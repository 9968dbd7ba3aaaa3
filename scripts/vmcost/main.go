//go:build linux

package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	mb := flag.Int("mb", 64, "MiB of memory touched per round")
	rounds := flag.Int("rounds", 3, "rounds of each memory measurement")
	starts := flag.Int("starts", 30, "runs of each program started")
	file := flag.String("file", "", "a file to read mapped and through read(2)")
	chaseMB := flag.Int("chase-mb", 64, "MiB a pointer chase runs through (memory latency)")
	flag.Parse()
	if *mb < 2 || *rounds < 2 || *starts < 1 {
		fmt.Fprintln(os.Stderr, "vmcost: -mb must be at least 2, -rounds at least 2, -starts at least 1")
		os.Exit(2)
	}
	n := *mb << 20
	small, err := touchRounds(n, *rounds, unix.MADV_NOHUGEPAGE)
	check(err)
	fmt.Printf("anonymous memory, 4 KiB pages:  %8.2f µs a page (median of %d rounds of %d MiB)\n", us(median(small))/float64(n>>12), *rounds, *mb)
	huge, err := touchRounds(n, *rounds, unix.MADV_HUGEPAGE)
	check(err)
	fmt.Printf("anonymous memory, 2 MiB pages:  %8.3f ms a page the first round, %.3f ms the later ones (median)\n",
		ms(huge[0])/float64(n>>21), ms(median(huge[1:]))/float64(n>>21))
	if *chaseMB > 0 {
		lat := make([]time.Duration, *rounds)
		for i := range lat {
			lat[i] = chase(*chaseMB<<20, 1<<21)
		}
		fmt.Printf("memory latency:                 %8.1f ns a load (a random pointer chase through %d MiB; median of %d)\n", float64(median(lat)), *chaseMB, *rounds)
	}
	if rt, ok := pingPong(200000); ok {
		fmt.Printf("cache line between CPUs 0 and 1: %7.1f ns a round trip (two threads pinned, taking turns)\n", float64(rt))
	}
	if *file != "" {
		mapped, buffered, size, err := readFile(*file, *rounds)
		check(err)
		fmt.Printf("file of %d MB, mapped:          %8.1f ms (MADV_POPULATE_READ, then a byte a page; median)\n", size>>20, ms(median(mapped)))
		fmt.Printf("file of %d MB, read(2):         %8.1f ms (into a reused 1 MiB buffer; median)\n", size>>20, ms(median(buffered)))
	}
	cmd := flag.Args()
	if len(cmd) == 0 {
		cmd = []string{"bin/wiretap", "read", "testdata/amqp091-pika.pcapng"}
	}
	empty, err := emptyProgram()
	check(err)
	defer os.RemoveAll(filepath.Dir(empty))
	e, err := startRuns([]string{empty}, *starts)
	check(err)
	c, err := startRuns(cmd, *starts)
	check(err)
	fmt.Printf("start and exit, empty Go program: %6.1f ms (median of %d)\n", ms(median(e)), *starts)
	fmt.Printf("start and exit, %v: %.1f ms (median of %d)\n", cmd, ms(median(c)), *starts)
}

// touchRounds maps n bytes (plus a huge page, so that whole huge pages
// fit) rounds times, advises it, writes a byte a page and unmaps it; it
// returns each round's time of the writes.
func touchRounds(n, rounds, advice int) ([]time.Duration, error) {
	var d []time.Duration
	for range rounds {
		mem, err := unix.Mmap(-1, 0, n+(2<<20), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err != nil {
			return nil, fmt.Errorf("vmcost: mmap: %w", err)
		}
		if err := unix.Madvise(mem, advice); err != nil {
			unix.Munmap(mem)
			return nil, fmt.Errorf("vmcost: madvise: %w", err)
		}
		t := time.Now()
		for i := 0; i < n; i += 4096 {
			mem[i] = 1
		}
		d = append(d, time.Since(t))
		unix.Munmap(mem)
	}
	return d, nil
}

// readFile reads path rounds times mapped and rounds times through a
// buffer, alternating.
func readFile(path string, rounds int) (mapped, buffered []time.Duration, size int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("vmcost: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, 0, fmt.Errorf("vmcost: %w", err)
	}
	size = int(fi.Size())
	if size == 0 {
		return nil, nil, 0, fmt.Errorf("vmcost: %s is empty", path)
	}
	buf := make([]byte, 1<<20)
	var sink byte
	for range rounds {
		t := time.Now()
		mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_PRIVATE)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("vmcost: mmap %s: %w", path, err)
		}
		_ = unix.Madvise(mem, unix.MADV_POPULATE_READ) // before Linux 5.14: the touches fault instead
		for i := 0; i < size; i += 4096 {
			sink += mem[i]
		}
		unix.Munmap(mem)
		mapped = append(mapped, time.Since(t))

		t = time.Now()
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, nil, 0, fmt.Errorf("vmcost: %w", err)
		}
		for {
			k, err := f.Read(buf)
			if k > 0 {
				sink += buf[0]
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, nil, 0, fmt.Errorf("vmcost: reading %s: %w", path, err)
			}
		}
		buffered = append(buffered, time.Since(t))
	}
	_ = sink
	return mapped, buffered, size, nil
}

// emptyProgram builds a Go program that does nothing into a temporary
// directory and returns its path.
func emptyProgram() (string, error) {
	dir, err := os.MkdirTemp("", "vmcost")
	if err != nil {
		return "", fmt.Errorf("vmcost: %w", err)
	}
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		return "", fmt.Errorf("vmcost: %w", err)
	}
	bin := filepath.Join(dir, "empty")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("vmcost: building an empty program: %v: %s", err, out)
	}
	return bin, nil
}

// startRuns runs args n times, its output discarded, and returns each
// run's wall time.
func startRuns(args []string, n int) ([]time.Duration, error) {
	var d []time.Duration
	for range n {
		cmd := exec.Command(args[0], args[1:]...)
		t := time.Now()
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("vmcost: %v: %w", args, err)
		}
		d = append(d, time.Since(t))
	}
	return d, nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// chase returns the time of one load in a chase of loads dependent on
// one another through n bytes arranged as a single random cycle (so that
// no prefetcher guesses the next), loads of them.
func chase(n, loads int) time.Duration {
	next := make([]uint32, n/4)
	// Sattolo's algorithm: a random permutation with one cycle.
	for i := range next {
		next[i] = uint32(i)
	}
	seed := uint64(time.Now().UnixNano()) | 1
	for i := len(next) - 1; i > 0; i-- {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		j := int(seed % uint64(i))
		next[i], next[j] = next[j], next[i]
	}
	p := uint32(0)
	for range loads / 4 { // warm the page tables and caches that can be
		p = next[p]
	}
	start := time.Now()
	for range loads {
		p = next[p]
	}
	d := time.Since(start)
	chaseSink = p
	return d / time.Duration(loads)
}

var chaseSink uint32

// pingPong pins two threads to CPUs 0 and 1 and has them take turns
// writing one cache line rounds times; it returns the time of a round
// trip (the line there and back). False on a machine of one CPU.
func pingPong(rounds int) (time.Duration, bool) {
	if runtime.NumCPU() < 2 {
		return 0, false
	}
	var line struct {
		_ [64]byte
		v atomic.Int64
		_ [64]byte
	}
	pin := func(cpu int) {
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(cpu)
		_ = unix.SchedSetaffinity(0, &set)
	}
	done := make(chan time.Duration)
	go func() {
		defer runtime.UnlockOSThread()
		pin(1)
		for i := int64(1); i < int64(2*rounds); i += 2 {
			for line.v.Load() != i {
			}
			line.v.Store(i + 1)
		}
	}()
	go func() {
		defer runtime.UnlockOSThread()
		pin(0)
		start := time.Now()
		for i := int64(0); i < int64(2*rounds); i += 2 {
			for line.v.Load() != i {
			}
			line.v.Store(i + 1)
		}
		done <- time.Since(start)
	}()
	return <-done / time.Duration(rounds), true
}
