package amqp091

//go:generate go run ./internal/specgen -spec /usr/share/amqp/specs/0-9-1-rabbit/amqp0-9-1.stripped.extended.xml -ext spec/extensions.xml -o spec_gen.go -test spec_gen_test.go

import (
	"encoding/binary"
	"strconv"
	"time"
)

// Method is an AMQP method: one generated struct per method of the spec
// (spec_gen.go), named in the spec's words (BasicPublish, QueueDeclareOk).
type Method interface {
	// IDs returns the method's class-id and method-id.
	IDs() (class, method uint16)
	// Name is "class.method" as the spec spells it ("basic.publish").
	Name() string
	// HasContent says whether a content header and body follow.
	HasContent() bool
	// DecodeArguments decodes the arguments (the method payload after the
	// class and method ids) in place. Byte slices alias b.
	DecodeArguments(b []byte) error
	// AppendArguments appends the encoded arguments to dst.
	AppendArguments(dst []byte) []byte
	// AppendTo appends the method frame payload: class-id, method-id,
	// arguments.
	AppendTo(dst []byte) []byte
}

// Domain is an AMQP primitive type (spec §4.2.5), the type of a method
// argument or content property.
type Domain uint8

const (
	DomainBit Domain = iota
	DomainOctet
	DomainShort
	DomainLong
	DomainLonglong
	DomainShortstr
	DomainLongstr
	DomainTimestamp
	DomainTable
)

var domainNames = [...]string{"bit", "octet", "short", "long", "longlong", "shortstr", "longstr", "timestamp", "table"}

// String returns the domain's name in the spec ("shortstr").
func (d Domain) String() string {
	if int(d) < len(domainNames) {
		return domainNames[d]
	}
	return "domain(" + strconv.Itoa(int(d)) + ")"
}

// ArgInfo describes a method argument or content property.
type ArgInfo struct {
	Name      string // as the spec spells it: "routing-key"
	Domain    Domain
	Wireshark string // Wireshark's name for it: "routing_key"
	Reserved  bool
}

// MethodInfo describes a method of the spec.
type MethodInfo struct {
	Class, ID   uint16
	Name        string // "basic.publish"
	GoName      string // "BasicPublish"
	Content     bool
	Synchronous bool
	Args        []ArgInfo
}

// LookupMethod returns what the spec says about a method, or nil.
func LookupMethod(class, id uint16) *MethodInfo {
	i := methodIndex(class, id)
	if i < 0 {
		return nil
	}
	return &methodInfos[i]
}

// Methods returns every method of the spec, in class and method order.
func Methods() []MethodInfo { return methodInfos[:] }

// ClassName returns a class's name ("basic"), or "" if the spec has none.
func ClassName(id uint16) string { return className(id) }

// ParseMethod decodes a method frame's payload into a new value. Use a
// [MethodDecoder] to decode without allocating.
func ParseMethod(payload []byte) (Method, error) {
	class, id, args, err := splitMethod(payload)
	if err != nil {
		return nil, err
	}
	m := NewMethod(class, id)
	if m == nil {
		return nil, unknownMethod(class, id)
	}
	return m, m.DecodeArguments(args)
}

func splitMethod(p []byte) (class, id uint16, args []byte, err error) {
	if len(p) < 4 {
		return 0, 0, nil, truncatedAt("method", len(p))
	}
	return binary.BigEndian.Uint16(p), binary.BigEndian.Uint16(p[2:]), p[4:], nil
}

func unknownMethod(class, id uint16) error {
	return &FormatError{Op: "method", Offset: 0, Msg: "unknown method " + strconv.Itoa(int(class)) + "." + strconv.Itoa(int(id))}
}

func trailing(op string, off, n int) error {
	return &FormatError{Op: op, Offset: off, Msg: strconv.Itoa(n-off) + " trailing bytes"}
}

func unixTime(sec uint64) time.Time {
	if sec == 0 {
		return time.Time{}
	}
	return time.Unix(int64(sec), 0).UTC()
}

func unixSeconds(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.Unix())
}
