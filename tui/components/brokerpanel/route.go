package brokerpanel

import (
	"errors"
	"strconv"
	"strings"
)

// RouteQuery is a parsed :route command line.
type RouteQuery struct {
	VHost, Exchange, RoutingKey string
	// Headers are the message headers for a headers exchange; nil when
	// none were given.
	Headers map[string]any
}

var errRouteUsage = errors.New("brokerpanel: route wants [-v VHOST] EXCHANGE [KEY] [NAME=VALUE ...]")

// ParseRoute parses the arguments of `:route [-v VHOST] EXCHANGE [KEY]
// [NAME=VALUE ...]`. Words may be quoted with "" or ” (so "" is the
// default exchange or an empty key); a header value is a boolean, an
// integer or a float when it reads as one and is not quoted, else a
// string, as a client library would send it.
func ParseRoute(arg string) (RouteQuery, error) {
	words, err := splitWords(arg)
	if err != nil {
		return RouteQuery{}, err
	}
	q := RouteQuery{VHost: "/"}
	if len(words) > 0 && (words[0].text == "-v" || words[0].text == "--vhost") && !words[0].quoted {
		if len(words) < 2 {
			return RouteQuery{}, errors.New("brokerpanel: route -v wants a vhost name")
		}
		q.VHost = words[1].text
		words = words[2:]
	}
	if len(words) == 0 {
		return RouteQuery{}, errRouteUsage
	}
	q.Exchange = words[0].text
	if q.Exchange == "(AMQP default)" {
		q.Exchange = ""
	}
	if len(words) > 1 {
		q.RoutingKey = words[1].text
	}
	for _, w := range words[min(2, len(words)):] {
		name, value, ok := strings.Cut(w.text, "=")
		if !ok || name == "" {
			return RouteQuery{}, errors.New("brokerpanel: route header " + strconv.Quote(w.text) + " wants NAME=VALUE")
		}
		if q.Headers == nil {
			q.Headers = map[string]any{}
		}
		q.Headers[name] = headerValue(value, w.quoted)
	}
	return q, nil
}

func headerValue(s string, quoted bool) any {
	if quoted {
		return s
	}
	switch s {
	case "true":
		return true
	case "false":
		return false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && strings.ContainsAny(s, ".eE") {
		return f
	}
	return s
}

type word struct {
	text   string
	quoted bool
}

// splitWords splits s at white space outside quotes; quotes are removed.
func splitWords(s string) ([]word, error) {
	var (
		out   []word
		b     strings.Builder
		in    bool // inside a word
		quote byte
		w     word
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				b.WriteByte(c)
			}
		case c == '"' || c == '\'':
			quote, in, w.quoted = c, true, true
		case c == ' ' || c == '\t':
			if in {
				w.text = b.String()
				out = append(out, w)
				b.Reset()
				in, w = false, word{}
			}
		default:
			in = true
			b.WriteByte(c)
		}
	}
	if quote != 0 {
		return nil, errors.New("brokerpanel: route: unterminated quote")
	}
	if in {
		w.text = b.String()
		out = append(out, w)
	}
	return out, nil
}

// QueueFilter is the display filter that shows a queue's traffic: its
// declare, bind, purge, delete, consume and get (they name the queue),
// publishes through the default exchange (their routing key is the
// queue's name) and what its consumers' tags appear in: consume-ok,
// deliver, cancel.
func QueueFilter(queue string, consumerTags []string) string {
	q := quote(queue)
	f := "amqp.method.arguments.queue == " + q +
		` || (amqp.method.arguments.exchange == "" && amqp.method.arguments.routing_key == ` + q + ")"
	if len(consumerTags) > 0 {
		var b strings.Builder
		for i, t := range consumerTags {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(quote(t))
		}
		f += " || amqp.method.arguments.consumer_tag in {" + b.String() + "}"
	}
	return f
}

// ExchangeFilter shows an exchange's traffic: declare, delete, bindings,
// and the publishes, deliveries and returns that name it.
func ExchangeFilter(exchange string) string {
	q := quote(exchange)
	return "amqp.method.arguments.exchange == " + q + " || amqp.method.arguments.source == " + q +
		" || amqp.method.arguments.destination == " + q
}

// quote makes s a display-filter string literal: names are shortstrs,
// any bytes, so quotes, backslashes and control bytes are escaped.
func quote(s string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			b.WriteString(`\x`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
