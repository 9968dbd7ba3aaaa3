// Command hostilegen writes the hostile-input corpus to testdata/hostile/:
// small captures, each built to make one part of wiretap do too much work
// or hold too much memory (issue 14), each with an ordinary conversation
// beside the hostile one so a test can check that it still decodes in full.
//
// Run it from the repository root:
//
//	go run ./internal/hostilegen [-out testdata/hostile] [-scale 1]
//
// The output is deterministic: the same source writes the same bytes
// (TestCorpusCurrent checks the files are what this source writes), so
// `go generate ./internal/hostilegen` refreshes the corpus.
package main

//go:generate go run . -out ../../testdata/hostile

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// A hostile case: file names the output (".gz" is added when gz is set), build
// writes the capture.
type hostileCase struct {
	file  string
	gz    bool
	build func(scale float64) []byte
}

var cases []hostileCase

func register(file string, gz bool, build func(scale float64) []byte) {
	cases = append(cases, hostileCase{file: file, gz: gz, build: build})
}

func main() {
	out := flag.String("out", "testdata/hostile", "output directory")
	scale := flag.Float64("scale", 1, "multiply each case's size (for measuring growth)")
	only := flag.String("only", "", "write only the case whose file name starts with this")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "hostilegen:", err)
		os.Exit(1)
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].file < cases[j].file })
	for _, c := range cases {
		if *only != "" && !bytes.HasPrefix([]byte(c.file), []byte(*only)) {
			continue
		}
		b := c.build(*scale)
		name := c.file
		if c.gz {
			var zb bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&zb, gzip.BestCompression)
			zw.Write(b)
			zw.Close()
			b = zb.Bytes()
			name += ".gz"
		}
		if err := os.WriteFile(filepath.Join(*out, name), b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "hostilegen:", err)
			os.Exit(1)
		}
		fmt.Printf("%-44s %9d bytes\n", name, len(b))
	}
}
