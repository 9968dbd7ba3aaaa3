package amqp091

import "github.com/wiretap-dev/wiretap/decode"

// init makes the field tree's filterable names known to the filter
// language's completion and help. amqp.type, amqp.channel and amqp.method
// are the filter's own (virtual) fields and are left to it.
func init() { decode.RegisterFieldNamesFunc(fieldNames) }

// fieldNames returns the names of the field tree (see init).
func fieldNames() []decode.FieldName {
	p := decode.ProtoAMQP091
	fs := []decode.FieldName{
		{Name: "amqp.length", Proto: p, Doc: "frame payload size"},
		{Name: "amqp.method.class", Proto: p, Doc: "method class id (basic = 60)"},
		{Name: "amqp.method.method", Proto: p, Doc: "method id within its class"},
		{Name: "amqp.method.arguments", Proto: p, Doc: "method arguments"},
		{Name: "amqp.header.class", Proto: p, Doc: "content header class id"},
		{Name: "amqp.header.weight", Proto: p, Doc: "content header weight (always 0)"},
		{Name: "amqp.header.body-size", Proto: p, Doc: "content header: size of the body that follows"},
		{Name: "amqp.header.property-flags", Proto: p, Doc: "content header: which properties are present"},
		{Name: "amqp.header.properties", Proto: p, Doc: "content header properties"},
		{Name: "amqp.payload", Proto: p, Doc: "content body frame payload"},
		{Name: "amqp.message", Proto: p, Doc: "the message a content body (or empty-body header) completes"},
		{Name: "amqp.message.method", Proto: p, Doc: `method that carried the completed message ("basic.publish")`},
		{Name: "amqp.message.body-size", Proto: p, Doc: "completed message: body size"},
		{Name: "amqp.message.body", Proto: p, Doc: "completed message: body, across all its frames"},
		{Name: "amqp.init.protocol", Proto: p, Doc: `protocol header: "AMQP"`},
		{Name: "amqp.init.id", Proto: p, Doc: "protocol header: protocol id"},
		{Name: "amqp.init.version_major", Proto: p, Doc: "protocol header: major version"},
		{Name: "amqp.init.version_minor", Proto: p, Doc: "protocol header: minor version"},
		{Name: "amqp.init.version_revision", Proto: p, Doc: "protocol header: revision"},
	}
	seen := map[string]bool{}
	for _, m := range methodInfos {
		for _, a := range m.Args {
			name := "amqp.method.arguments." + a.Wireshark
			if !seen[name] {
				seen[name] = true
				fs = append(fs, decode.FieldName{Name: name, Proto: p, Doc: "method argument " + a.Name + " (" + a.Domain.String() + ")",
					Open: a.Domain == DomainTable})
			}
		}
	}
	for _, a := range propertyInfos {
		fs = append(fs, decode.FieldName{Name: "amqp.method.properties." + a.Wireshark, Proto: p, Doc: "basic property " + a.Name + " (" + a.Domain.String() + ")",
			Open: a.Domain == DomainTable})
	}
	return fs
}
