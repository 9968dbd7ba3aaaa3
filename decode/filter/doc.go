// Package filter provides wiretap's display-filter language, shared by
// `--filter EXPR` and the TUI's `/` bar. It follows Wireshark's display
// filters (wireshark-filter(4), version 4.0) closely enough that their
// users need not relearn it:
//
//	amqp.method == "basic.publish" && amqp.channel == 2
//	pgsql.type == "DataRow" || pgsql.query matches "(?i)^select"
//	amqp.checksum == "mismatch"
//	frame.len > 1000 and not warning
//	amqp.method.arguments.routing_key in {"orders.eu" "orders.us"}
//
// [Compile] parses an expression into a [Filter]; [Filter.Match] tests a
// unit. [Search] is the TUI's free-text search, and [Complete] proposes
// field names, relations and values for the filter bar.
//
// # Grammar
//
//	filter   = [ or ] .
//	or       = and { ( "||" | "or" ) and } .
//	and      = unary { ( "&&" | "and" ) unary } .
//	unary    = ( "!" | "not" ) unary | "(" or ")" | test .
//	test     = [ "any" | "all" ] field [ relation ] .
//	relation = compare value
//	         | "contains" value
//	         | ( "matches" | "~" ) string
//	         | "in" "{" element { [ "," ] element } "}" .
//	compare  = "==" | "eq" | "any_eq" | "!=" | "ne" | "all_ne"
//	         | "===" | "all_eq" | "!==" | "any_ne"
//	         | "<" | "lt" | "<=" | "le" | ">" | "gt" | ">=" | "ge" .
//	element  = value [ ".." value ] .
//	value    = string | charconst | word .
//	field    = word .
//	string   = `"` { char | escape } `"` | `r"` { char | `\"` } `"` .
//	charconst = "'" ( char | escape ) "'" .
//	word     = wordchar { wordchar } .   (letters, digits, _ . - : / +, UTF-8; ".." ends a word)
//	escape   = `\` ( `'` | `"` | `\` | "a" | "b" | "f" | "n" | "r" | "t" | "v"
//	         | octal [ octal [ octal ] ] | "x" hex [ hex ]
//	         | "u" hex hex hex hex | "U" hex hex hex hex hex hex hex hex ) .
//
// Precedence, from tightest: not, and, or; and and or are left to right,
// and evaluation stops as soon as the result is known. Parentheses and
// negations nest at most [MaxDepth] deep.
//
// # Fields
//
// A field is a Wireshark-style dotted name. Field names are checked at
// Compile time against the names protocol packages register with
// [decode.RegisterFieldNames] (and the parents of those names, such as
// amqp.method.arguments), plus the virtual fields below; an unknown name
// is an error that suggests the nearest known one. Field names are
// case-sensitive.
//
// A field alone tests that the unit has it ("warning", "!error"). A field
// may occur several times in a unit (a table's keys, a DataRow's values);
// a comparison is true when any occurrence satisfies it, and false when
// the field is absent.
//
// # Relations
//
// ==, <, <=, >, >=, contains, matches and in hold when any occurrence
// satisfies them. As in Wireshark 4, a != b means "a exists and no
// occurrence equals b": it is the negation of a == b except that it is
// false when a is absent, so on a unit without warnings both
// `warning == "x"` and `warning != "x"` are false and `!(warning == "x")`
// is true. === (all_eq) needs every occurrence to be equal and !== (any_ne)
// one to differ. A leading "all" makes any relation hold only when every
// occurrence satisfies it (`all tcp.port > 1024`), "any" when one does;
// either needs the field to exist.
//
// matches takes a quoted Go regular expression (RE2 syntax), compiled
// once by Compile. Unlike Wireshark's, it is case-sensitive; write (?i)
// for case-insensitive matching. Raw strings save escaping backslashes:
// `summary matches r"\d+ rows"`. contains tests for a substring (for bytes
// fields: a byte sequence).
//
// in tests membership of a set: `conn in {1 3 5..9}`. Members are
// separated by white space or commas; lo..hi is an inclusive range.
//
// # Values
//
// The right side of a relation is always a constant, never another field.
//
//   - A quoted string is a string, with the escapes in the grammar; r"..."
//     keeps backslashes as they are.
//   - A bare word that reads as a number is a number: decimal, 0x hex, 0b
//     binary, 0 octal (as in Wireshark, 012 is 10), or floating point
//     (2.5, 1e3); negative with a leading "-". true and false (any case)
//     are 1 and 0. A character constant ('A', '\n') is its code.
//   - Any other bare word is a string, as Wireshark reads unquoted values:
//     amqp.method == basic.publish. The words and, or, not cannot be bare
//     values; quote them.
//
// How a field compares with a value depends on both:
//
//   - Numbers (ints, uints, floats, bools as 0 and 1) compare numerically
//     with numbers. Against a string they compare as text: the field's
//     display text if it has one (delivery_mode == "persistent"), else
//     its decimal form.
//   - Strings compare byte-wise and case-sensitively, in lexicographic
//     order for < and >.
//   - Byte fields compare with a byte string written aa:bb:cc (or with -
//     or . between the bytes), and otherwise with the bytes of the value's
//     text: amqp.body contains "hello".
//   - Times compare with "2006-01-02T15:04:05.999Z07:00" (the T may be a
//     space; fraction, seconds and zone may be left out, and a time with no
//     zone is UTC, not local time as in Wireshark) or with a number of
//     seconds since 1970.
//   - Addresses compare with addresses (IPv4, IPv6; IPv4-mapped IPv6 is
//     the IPv4 address), and == with a prefix tests membership:
//     ip.addr == 10.0.0.0/8.
//   - Anything else compares as text.
//
// Not supported from Wireshark: slices (frame[0:4]), layers (ip.src#2),
// functions (len(), upper()), arithmetic, bitwise &, field references
// (${...}), field-to-field comparisons, and xor.
//
// # Virtual fields
//
// Virtual fields are read from the unit's header and its connection,
// without building the field tree, so filters that use only them are fast
// and allocate nothing. They take precedence over a tree field of the same
// name. Each is present only where it applies.
//
//	frame.number             unit number, from 1, in output order (Unit.N)
//	frame.len                bytes of the unit on the wire, headers included
//	frame.offset             offset of the unit's first byte in its direction's stream
//	frame.time               capture time (absent when unknown)
//	frame.time_epoch         capture time in seconds since 1970-01-01 UTC
//	frame.dir                "F" client to server, "B" server to client
//	conn                     connection number, from 1, as --conn counts
//	tcp.stream               conn - 1: tshark numbers TCP streams from 0, so
//	                         tcp.stream agrees with tshark's when wiretap
//	                         numbers every TCP connection of the capture
//	tcp.port                 client and server port (two occurrences)
//	tcp.srcport, tcp.dstport port of the unit's sender, receiver
//	ip.addr                  client and server address (two occurrences; IPv4 or IPv6)
//	ip.src, ip.dst           address of the unit's sender, receiver
//	proto                    "amqp0-9-1", "amqp1.0" or "pgsql"
//	type                     unit type ("basic.publish", "transfer", "DataRow")
//	summary                  the one-line summary
//	error                    why the unit could not be decoded; present only then
//	warning                  each of the unit's warnings (one occurrence each)
//	secret                   true when the unit carried credentials; present only then
//	parent                   for units nested in another (PostgreSQL CompressedMessages):
//	                         the container's number
//	amqp                     AMQP 0-9-1 and 1.0 units; its value is the unit's bytes
//	amqp.channel             the frame's channel, for AMQP units that have one
//	amqp.method              AMQP 0-9-1 method frames: class.method ("basic.publish");
//	                         absent on content headers, bodies, heartbeats and the
//	                         protocol header, as in Wireshark (use amqp.type)
//	amqp.performative        AMQP 1.0 frames: "open", "transfer", "sasl.init", ...
//	amqp.type                any AMQP unit's type
//	amqp.checksum            "ok", "mismatch" or "absent": the end-to-end checksum
//	                         verdict of the message a transfer completes; absent
//	                         on other units
//	amqp.checksum.algorithm  "crc-32" or "adler-32"
//	amqp.message_id          properties.message-id of the message a transfer completes
//	pgsql                    PostgreSQL units; its value is the unit's bytes
//	pgsql.type               PostgreSQL message name ("Query", "DataRow")
//
// # Cost
//
// [Filter.Match] reads virtual fields directly; integer fields ordered
// against integers and string fields tested for equality take one
// comparison. A test that names any other field asks the unit's protocol
// finder ([decode.Finder]) for just that field, which reads the unit's
// bytes without building its tree, and only when the finder cannot answer
// builds the tree with [decode.Unit.Fields], once per call;
// [Filter.Dissects] says whether a filter can need either, and
// [Filter.Shallow] whether it reads nothing but a unit's plain fields, so
// that a store that put units' bytes and notes aside can match it on what
// it kept (the TUI's store, on its records of frozen units). Filters
// compiled with [CompileWith] share a [Memo] of what units hold for tree
// fields, so that running them again (an edited literal) reads neither.
// Tests run left to right and stop early, so put virtual tests first:
// `amqp.method == "basic.publish" && amqp.method.arguments.routing_key ==
// "x"` looks up routing keys on publishes only.
package filter
