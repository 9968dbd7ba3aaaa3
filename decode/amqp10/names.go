package amqp10

import (
	"sort"
	"strings"

	"github.com/wiretap-dev/wiretap/decode"
)

// init makes the names AMQP 1.0 trees hold known to the filter language
// (so that `amqp.performative.arguments.deliveryId == 3` compiles), its
// completion and help. Names the filter reads from the unit header
// (amqp.performative, amqp.checksum*, amqp.message_id, amqp.channel,
// amqp.type) are registered by the filter itself, and amqp.length by AMQP
// 0-9-1, whose frames have one too.
func init() { decode.RegisterFieldNamesFunc(fieldNames) }

// fieldNames returns the names of the field tree (see init).
func fieldNames() []decode.FieldName {
	p := decode.ProtoAMQP10
	fs := []decode.FieldName{
		{Name: "amqp.doff", Proto: p, Doc: "AMQP 1.0 frame: data offset, in 4-byte words"},
		{Name: "amqp.extended_header", Proto: p, Doc: "AMQP 1.0 frame: extended header bytes"},
		{Name: "amqp.protocol", Proto: p, Doc: `AMQP 1.0 protocol header: "AMQP"`},
		{Name: "amqp.protocol-id", Proto: p, Doc: "AMQP 1.0 protocol header: 0 AMQP, 2 TLS, 3 SASL"},
		{Name: "amqp.version", Proto: p, Doc: "AMQP 1.0 protocol header: major.minor.revision"},
		{Name: "amqp.performative.arguments", Proto: p, Doc: "AMQP 1.0 performative fields"},
		{Name: "amqp.payload", Proto: p, Doc: "AMQP 1.0 transfer payload (this frame's part of the message)"},
		{Name: "amqp.bare_message", Proto: p, Doc: "AMQP 1.0 bare message: the bytes an end-to-end checksum covers"},
	}
	for code := DescriptorHeader; code <= DescriptorFooter; code++ {
		if n := sectionName(code); n != "" {
			doc := "AMQP 1.0 message section"
			if openSection(n) {
				doc += "; " + n + ".KEY is its entry KEY"
			}
			fs = append(fs, decode.FieldName{Name: n, Proto: p, Doc: doc, Open: openSection(n)})
		}
	}
	// Composite fields: one name may stand for fields of several types
	// (handle is a field of attach, flow, transfer and detach).
	of := map[string][]string{}
	typ := map[string]string{}
	for _, t := range described {
		if t.class != "composite" || t.source != "list" {
			continue
		}
		for _, f := range t.fields {
			n := fieldName(t.name, f.name)
			if n == "" {
				continue
			}
			of[n] = append(of[n], t.name+"."+f.name)
			if old, ok := typ[n]; !ok || old == strings.TrimPrefix(f.typ, "*") {
				typ[n] = strings.TrimPrefix(f.typ, "*")
			} else {
				typ[n] = "*"
			}
		}
	}
	for n, holders := range of {
		sort.Strings(holders)
		if len(holders) > 4 {
			holders = append(holders[:4], "…")
		}
		doc := "AMQP 1.0 " + strings.Join(holders, ", ")
		if t := typ[n]; t != "*" && t != "" {
			doc += " (" + t + ")"
		}
		fs = append(fs, decode.FieldName{Name: n, Proto: p, Doc: doc})
	}
	return fs
}
