package amqp091

import (
	"encoding/binary"
	"strconv"
)

// Summaries follow tshark's Info column for AMQP ("Basic.Publish x=amq.direct
// rk=foo") and say more where it helps: delivery tags, flags that are set,
// reply codes, queue counts, body sizes.

// summaryLabel is the short label of an argument in a summary; "" leaves the
// argument out, "-" shows a bit by its name when set.
func summaryLabel(name string) string {
	switch name {
	case "exchange":
		return "x"
	case "routing-key":
		return "rk"
	case "queue":
		return "q"
	case "consumer-tag":
		return "ctag"
	case "delivery-tag":
		return "tag"
	case "virtual-host":
		return "vhost"
	case "message-count":
		return "messages"
	case "consumer-count":
		return "consumers"
	case "prefetch-count":
		return "prefetch"
	case "prefetch-size", "mechanism", "channel-max", "frame-max", "heartbeat", "type", "reason":
		return name
	case "destination":
		return "dst"
	case "source":
		return "src"
	}
	return ""
}

// appendTitle appends "basic.get-ok" as "Basic.Get-Ok", as tshark prints it.
func appendTitle(dst []byte, name string) []byte {
	up := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		if up && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = c == '.' || c == '-'
		dst = append(dst, c)
	}
	return dst
}

// appendMethodSummary appends the summary of a method payload. It reads
// arguments generically from the spec's description; malformed arguments
// end the summary early (the unit's error says why).
func appendMethodSummary(dst []byte, info *MethodInfo, args []byte) []byte {
	return appendMethodSummaryAt(dst, info, args, nil)
}

// tagMark says where a method's delivery-tag is: at, the offset of its
// eight bytes in the arguments (-1: none was read), and from and to, its
// digits in the summary.
type tagMark struct{ at, from, to int }

// appendMethodSummaryAt is appendMethodSummary, noting in mark, when not
// nil, where the delivery-tag is.
func appendMethodSummaryAt(dst []byte, info *MethodInfo, args []byte, mark *tagMark) []byte {
	if mark != nil {
		mark.at = -1
	}
	dst = appendTitle(dst, info.Name)
	r := reader{b: args}
	bitPos := 8
	var bits byte
	var replyCode uint64
	var class uint16
	for i := range info.Args {
		a := &info.Args[i]
		if a.Domain == DomainBit {
			if bitPos == 8 {
				bits, bitPos = r.octet(), 0
			}
			set := bits&(1<<bitPos) != 0
			bitPos++
			if set && !a.Reserved && !r.short {
				dst = append(dst, ' ')
				dst = append(dst, a.Name...)
			}
			continue
		}
		bitPos = 8
		var num uint64
		var str []byte
		isNum := true
		switch a.Domain {
		case DomainOctet:
			num = uint64(r.octet())
		case DomainShort:
			num = uint64(r.short16())
		case DomainLong:
			num = uint64(r.long32())
		case DomainLonglong, DomainTimestamp:
			num = r.longlong()
		case DomainShortstr:
			str, isNum = r.shortstr(), false
		case DomainLongstr:
			str, isNum = r.longstr(), false
		case DomainTable:
			r.longstr()
			continue
		}
		if r.short {
			return dst
		}
		if a.Reserved {
			continue
		}
		switch a.Name {
		case "reply-code":
			replyCode = num
			continue
		case "reply-text":
			dst = append(dst, " reply="...)
			dst = strconv.AppendUint(dst, replyCode, 10)
			if len(str) > 0 {
				dst = append(dst, ' ')
				dst = appendPrintable(dst, str, 200)
			}
			continue
		case "class-id":
			class = uint16(num)
			continue
		case "method-id":
			if class != 0 {
				dst = append(dst, " on="...)
				if m := LookupMethod(class, uint16(num)); m != nil {
					dst = append(dst, m.Name...)
				} else {
					dst = strconv.AppendUint(dst, uint64(class), 10)
					dst = append(dst, '.')
					dst = strconv.AppendUint(dst, num, 10)
				}
			}
			continue
		case "mechanisms":
			if info.Name == "connection.start" {
				dst = append(dst, " mechanisms="...)
				dst = appendPrintable(dst, str, 100)
			}
			continue
		case "prefetch-size":
			if num == 0 {
				continue
			}
		}
		label := summaryLabel(a.Name)
		if label == "" {
			continue
		}
		dst = append(dst, ' ')
		dst = append(dst, label...)
		dst = append(dst, '=')
		if isNum {
			if mark != nil && a.Domain == DomainLonglong && a.Name == "delivery-tag" {
				mark.at, mark.from = r.off-8, len(dst)
				dst = strconv.AppendUint(dst, num, 10)
				mark.to = len(dst)
				continue
			}
			dst = strconv.AppendUint(dst, num, 10)
		} else {
			dst = appendPrintable(dst, str, 200)
		}
	}
	return dst
}

// appendPrintable appends s with control bytes shown as '.', cut to max.
func appendPrintable(dst, s []byte, max int) []byte {
	cut := false
	if len(s) > max {
		s, cut = s[:max], true
	}
	n := len(dst)
	dst = append(dst, s...)
	// Eight bytes at a time while none can be a control character (most
	// names have none): x-0x20 borrows into a byte's top bit for bytes
	// below 0x20, (x^0x7f)-1 for 0x7f; bytes of 0xa0 and over set it too
	// and are looked at one by one below.
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64(s[i:])
		const lo, hi = 0x0101010101010101, 0x8080808080808080
		if ((x-lo*0x20)|((x^lo*0x7f)-lo))&hi != 0 {
			break
		}
	}
	for j, c := range dst[n+i:] {
		if c < 0x20 || c == 0x7f {
			dst[n+i+j] = '.'
		}
	}
	if cut {
		dst = append(dst, "..."...)
	}
	return dst
}

// appendHeaderSummary appends a content header's summary.
func appendHeaderSummary(dst []byte, h *ContentHeader) []byte {
	dst = append(dst, "Content-Header"...)
	p := &h.Properties
	if p.Flags&FlagContentType != 0 {
		dst = append(dst, " type="...)
		dst = appendPrintable(dst, p.ContentType, 100)
	}
	dst = append(dst, " size="...)
	dst = strconv.AppendUint(dst, h.BodySize, 10)
	if p.Flags&FlagDeliveryMode != 0 && p.DeliveryMode == 2 {
		dst = append(dst, " persistent"...)
	}
	if p.Flags&FlagMessageID != 0 {
		dst = append(dst, " msgid="...)
		dst = appendPrintable(dst, p.MessageID, 100)
	}
	if p.Flags&FlagCorrelationID != 0 {
		dst = append(dst, " corrid="...)
		dst = appendPrintable(dst, p.CorrelationID, 100)
	}
	if p.Flags&FlagReplyTo != 0 {
		dst = append(dst, " reply-to="...)
		dst = appendPrintable(dst, p.ReplyTo, 100)
	}
	return dst
}
