package broker

import "strconv"

// erlangBinary prints b as Erlang's ~p prints a binary, as RabbitMQ's
// frame errors quote the octets: <<"text">> when every byte is printable,
// else <<0,60,...>>.
func erlangBinary(b []byte) string {
	printable := len(b) > 0
	for _, c := range b {
		if !(c >= 32 && c <= 126 || c >= 160 || c == '\n' || c == '\r' || c == '\t') {
			printable = false
			break
		}
	}
	out := []byte("<<")
	if printable {
		out = append(out, '"')
		for _, c := range b {
			switch c {
			case '"', '\\':
				out = append(out, '\\', c)
			case '\n':
				out = append(out, `\n`...)
			case '\r':
				out = append(out, `\r`...)
			case '\t':
				out = append(out, `\t`...)
			default:
				out = append(out, c)
			}
		}
		out = append(out, '"')
	} else {
		for i, c := range b {
			if i > 0 {
				out = append(out, ',')
			}
			out = strconv.AppendUint(out, uint64(c), 10)
		}
	}
	return string(append(out, ">>"...))
}

// frameOctets is RabbitMQ's "type T, all octets = <<...>>" prefix of a
// frame error.
func frameOctets(t uint8, payload []byte) string {
	return "type " + strconv.Itoa(int(t)) + ", all octets = " + erlangBinary(payload)
}
