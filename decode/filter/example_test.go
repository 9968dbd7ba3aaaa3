package filter_test

import (
	"fmt"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/filter"
)

func ExampleCompile() {
	for _, expr := range []string{
		`amqp.methd == "basic.publish"`,
		`amqp.channel == 2 && frame.len => 10`,
		`(amqp.checksum == "mismatch" || error`,
		`summary matches "a(b"`,
	} {
		_, err := filter.Compile(expr)
		fmt.Println(err)
	}
	// Output:
	// filter: unknown field "amqp.methd" at column 1; did you mean amqp.method?
	// filter: unexpected "=" at column 32; use "==" to compare
	// filter: unclosed "(" at column 1
	// filter: invalid regular expression: missing closing ): `a(b` at column 17
}

func ExampleFilter_Match() {
	f, err := filter.Compile(`amqp.method == "basic.publish" && amqp.channel in {1..3}`)
	if err != nil {
		panic(err)
	}
	units := []*decode.Unit{
		{N: 1, Proto: decode.ProtoAMQP091, Type: "basic.publish", Channel: 2, HasChannel: true},
		{N: 2, Proto: decode.ProtoAMQP091, Type: "content-header", Channel: 2, HasChannel: true},
		{N: 3, Proto: decode.ProtoAMQP091, Type: "basic.publish", Channel: 7, HasChannel: true},
	}
	for _, u := range units {
		fmt.Println(u.N, f.Match(u))
	}
	// Output:
	// 1 true
	// 2 false
	// 3 false
}

func ExampleComplete() {
	expr := "amqp.checksum == mis"
	from, candidates := filter.Complete(expr, len(expr))
	fmt.Println(from, candidates)
	// Output: 17 ["mismatch"]
}
