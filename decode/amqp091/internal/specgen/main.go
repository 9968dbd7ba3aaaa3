// Command specgen generates decode/amqp091's method and property codecs from
// the machine-readable AMQP 0-9-1 specification (RabbitMQ's extended XML, as
// Debian's amqp-specs package installs it) plus a small XML file of
// extensions in the same grammar.
//
// Usage:
//
//	specgen -spec amqp0-9-1.stripped.extended.xml -ext spec/extensions.xml \
//	        -o spec_gen.go -test spec_gen_test.go
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/wiretap-dev/wiretap/decode/amqp091/internal/specgen/gen"
)

func main() {
	specPath := flag.String("spec", gen.DefaultSpec, "the AMQP 0-9-1 spec XML")
	extPath := flag.String("ext", "spec/extensions.xml", "extensions in the same grammar")
	out := flag.String("o", "spec_gen.go", "generated codec")
	testOut := flag.String("test", "spec_gen_test.go", "generated test samples")
	flag.Parse()

	code, tests, err := gen.Files(*specPath, *extPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "specgen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, code, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "specgen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*testOut, tests, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "specgen:", err)
		os.Exit(1)
	}
}
