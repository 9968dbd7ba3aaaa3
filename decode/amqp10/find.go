package amqp10

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/wiretap-dev/wiretap/decode"
)

// This file answers filter lookups of single fields without building a
// unit's field tree (decode.Finder): a filter such as
// amqp.performative.arguments.deliveryId == 3 then costs a scan of one
// performative per frame, in place, instead of a tree per frame.
//
// The finder mirrors dissect and materializer.value: it walks the same
// located values in the same order, counts the occurrences of the name it
// looks for, and builds only the field it returns. Where a name can occur
// is known per name (the frame header, the performative's fields, the
// message subtree, or the fields of some composite types, which may be
// nested in any map, list or array), so a unit that cannot hold it, such
// as a flow for deliveryId, is answered as absent after a glance at its
// bytes. Containers (lists, maps, arrays, described composites with
// fields), decimals, chars, strings that are not valid UTF-8, and units
// with secrets or errors or trees this package did not build are left to
// the tree.
//
// Returned strings and byte slices alias the unit's Raw (or the bytes of
// the message it completes): a unit's bytes are never modified after the
// decoder emits it (SASL secrets are overwritten before), so the aliases
// stay valid as long as the unit does.

func init() { decode.RegisterFinder(decode.ProtoAMQP10, findField) }

// nameClass says where in a tree a field name can occur.
type nameClass uint8

const (
	nameUnknown      nameClass = iota // in no tree (but perhaps in an annotation)
	nameFrame                         // the frame header: amqp.length, amqp.doff, ...
	nameProtocol                      // the protocol header's fields
	namePerformative                  // amqp.performative
	nameArguments                     // amqp.performative.arguments
	namePayload                       // amqp.payload
	nameMessage                       // amqp.message_id, amqp.checksum*, amqp.bare_message
	nameSection                       // a message section: amqp.properties, amqp.data, ...
	nameNested                        // a field of a described composite, wherever one occurs
	nameRedacted                      // added to redacted SASL frames only
	nameAmbiguous                     // several of the above: left to the tree
)

// nameInfo is what the finder knows of a field name.
type nameInfo struct {
	class nameClass
	// holders, for nameNested, tells where the name can be.
	holders *holderSet
}

// holderSet is how the composite types with a field of a given name are
// spelt on the wire: a described value's descriptor is its code (whose
// last byte is the code's, as smallulong or ulong) or its symbol. Bytes
// holding neither cannot hold such a composite, nor the name.
type holderSet struct {
	codes   []byte
	symbols [][]byte
	// any is set when a code does not fit a byte: no shortcut.
	any bool
}

func newHolders(codes []uint64) *holderSet {
	h := &holderSet{}
	for _, c := range codes {
		if c > 0xff {
			h.any = true
		}
		h.codes = append(h.codes, byte(c))
		h.symbols = append(h.symbols, []byte(describedOf(c).symbol))
	}
	return h
}

// mayHold reports whether b may hold a described value of one of the
// holder types.
func (h *holderSet) mayHold(b []byte) bool {
	if h == nil || h.any {
		return true
	}
	if bytes.IndexByte(b, byte(CodeDescribed)) < 0 {
		return false
	}
	for _, c := range h.codes {
		if bytes.IndexByte(b, c) >= 0 {
			return true
		}
	}
	for _, sym := range h.symbols {
		if bytes.Contains(b, sym) {
			return true
		}
	}
	return false
}

// compTable names the fields of a composite type as the materializer
// does: key, Wireshark name and spec type of field i, for every index a
// Composite can hold.
type compTable struct {
	t     *describedType
	keys  [maxCompositeFields]string
	names [maxCompositeFields]string
	typs  [maxCompositeFields]string
}

// descKey identifies how a descriptor was encoded: its constructor and the
// descriptor code it stands for.
type descKey struct {
	code Code
	desc uint64
}

// emptyKey identifies a described composite without fields: the
// descriptor's encoding and the list constructor.
type emptyKey struct {
	descKey
	list Code
}

type checksumKey struct {
	alg    string
	status decode.ChecksumStatus
}

// Tables built once, by loadTables, the first time a field tree, its
// JSON or a lookup needs them; read-only afterwards. They hold the
// strings the tree builds by concatenation, so that answers allocate
// nothing. Built at init, they cost every run of the program 2.5 ms and
// 6,900 allocations before main (GODEBUG=inittrace=1), where a run of
// read in text, or of any other command, uses none of them.
var (
	tablesOnce     sync.Once
	knownNames     map[string]nameInfo
	composites     map[uint64]*compTable
	encodingText   [256]string         // Code.Encoding()
	perfEncoding   map[descKey]string  // amqp.performative's Encoding
	emptyEncoding  map[emptyKey]string // a composite without fields
	choiceDisplay  map[string]map[string]string
	checksumText   map[checksumKey]string
	doffDisplay    [256]string
	typeDisplay    [256]string
	protocolIDText [256]string

	frameDissector    = reflect.ValueOf(dissectFrame).Pointer()
	redactedDissector = reflect.ValueOf(dissectRedacted).Pointer()
	headerDissector   = reflect.ValueOf(dissectProtocolHeader).Pointer()
)

// loadTables builds the tables above once; every function reading them
// calls it first (describedValue, jsonWriter.described, findField).
func loadTables() { tablesOnce.Do(buildTables) }

func buildTables() {
	for i := range encodingText {
		encodingText[i] = Code(i).Encoding()
	}
	for i := range 256 {
		doffDisplay[i] = strconv.Itoa(i) + " (" + strconv.Itoa(i*4) + " bytes)"
		name := "unknown"
		switch uint8(i) {
		case FrameTypeAMQP:
			name = "AMQP"
		case FrameTypeSASL:
			name = "SASL"
		}
		typeDisplay[i] = name + " (" + strconv.Itoa(i) + ")"
		protocolIDText[i] = ProtocolHeader{ID: uint8(i)}.Name() + " (" + strconv.Itoa(i) + ")"
	}
	classes := map[string]nameClass{
		"amqp.length": nameFrame, "amqp.doff": nameFrame, "amqp.type": nameFrame,
		"amqp.channel": nameFrame, "amqp.extended_header": nameFrame,
		"amqp.protocol": nameProtocol, "amqp.protocol-id": nameProtocol, "amqp.version": nameProtocol,
		"amqp.performative":           namePerformative,
		"amqp.performative.arguments": nameArguments,
		"amqp.payload":                namePayload,
		"amqp.message_id":             nameMessage, "amqp.bare_message": nameMessage,
		"amqp.checksum": nameMessage, "amqp.checksum.algorithm": nameMessage,
		"amqp.checksum.expected": nameMessage, "amqp.checksum.actual": nameMessage,
		"amqp.sasl.user": nameRedacted,
	}
	holders := map[string][]uint64{}
	addName := func(n string, c nameClass) {
		if n == "" {
			return
		}
		if old, ok := classes[n]; ok && old != c {
			c = nameAmbiguous
		}
		classes[n] = c
	}
	for code := DescriptorHeader; code <= DescriptorFooter; code++ {
		addName(sectionName(code), nameSection)
	}
	composites = make(map[uint64]*compTable)
	perfEncoding = make(map[descKey]string)
	emptyEncoding = make(map[emptyKey]string)
	for code, t := range described {
		for _, dc := range []Code{CodeSmallUlong, CodeUlong, CodeSym8, CodeSym32} {
			if dc == CodeSmallUlong && code > 0xff {
				continue
			}
			// A known code reads as its symbol whether it was sent as a
			// number or as that symbol (descriptorText).
			desc := "described " + dc.Encoding() + " " + t.symbol
			k := descKey{dc, code}
			perfEncoding[k] = desc
			for _, l := range []Code{CodeList0, CodeList8, CodeList32} {
				emptyEncoding[emptyKey{k, l}] = desc + ", " + l.Encoding()
			}
		}
		if t.class != "composite" || t.source != "list" {
			continue
		}
		ct := &compTable{t: t}
		for i := range maxCompositeFields {
			key, typ := "field-"+strconv.Itoa(i), ""
			if i < len(t.fields) {
				key, typ = t.fields[i].name, t.fields[i].typ
			}
			ct.keys[i], ct.names[i], ct.typs[i] = key, fieldName(t.name, key), typ
			addName(ct.names[i], nameNested)
			if n := ct.names[i]; n != "" && (len(holders[n]) == 0 || holders[n][len(holders[n])-1] != code) {
				holders[n] = append(holders[n], code)
			}
		}
		composites[code] = ct
	}
	knownNames = make(map[string]nameInfo, len(classes))
	for n, c := range classes {
		info := nameInfo{class: c}
		if c == nameNested {
			info.holders = newHolders(holders[n])
		}
		knownNames[n] = info
	}
	choiceDisplay = make(map[string]map[string]string, len(choices))
	for typ, cs := range choices {
		m := make(map[string]string, len(cs))
		for k, n := range cs {
			m[k] = n + " (" + k + ")"
		}
		choiceDisplay[typ] = m
	}
	checksumText = make(map[checksumKey]string)
	for _, alg := range []string{CRC32, Adler32} {
		for _, st := range []decode.ChecksumStatus{decode.ChecksumOK, decode.ChecksumMismatch, decode.ChecksumAbsent} {
			checksumText[checksumKey{alg, st}] = alg + " " + st.String()
		}
	}
}

// findField is the package's decode.Finder.
func findField(u *decode.Unit, name string, k int) (f decode.Field, ok, handled bool) {
	loadTables()
	// Only trees this package builds are mirrored here.
	dissector := reflect.ValueOf(u.Dissect).Pointer()
	if dissector != frameDissector && dissector != redactedDissector && dissector != headerDissector {
		return f, false, false
	}
	info := knownNames[name]
	s := search{name: name, k: k, class: info.class, holders: info.holders}
	var cm *CompletedMessage
	if dissector != headerDissector {
		cm = MessageOf(u)
	}
	if i := strings.LastIndexByte(name, '.'); i > 0 && openSection(name[:i]) && entryKey(name[i+1:]) {
		// An entry of a map section: only a unit completing a message
		// has one, and the tree finds it.
		return f, false, cm == nil
	}
	switch {
	case s.class == nameUnknown && (cm == nil || !cm.hasAnnotations()):
		return f, false, true
	case s.class == nameAmbiguous || u.Secret || u.Err() != "":
		return f, false, false
	case dissector == headerDissector:
		s.protocolHeader(u.Raw)
	case s.class != nameUnknown:
		s.frame(u, cm)
	}
	if s.state == searching && cm != nil {
		s.annotations(cm.AnnotationFields())
	}
	switch s.state {
	case found:
		return s.f, true, true
	case unhandled:
		return f, false, false
	}
	return f, false, true
}

type searchState uint8

const (
	searching searchState = iota
	found
	unhandled
)

// search is one lookup: the name, how many occurrences are still to be
// skipped, and the outcome.
type search struct {
	name  string
	k     int
	class nameClass
	state searchState
	// holders locates the composites holding a nameNested name.
	holders *holderSet
	// trusted says the next value walked is the unit's performative,
	// which the decoder has read whole.
	trusted bool
	f       decode.Field
}

// at reports whether the tree's next field named name is the occurrence
// looked for; it counts the ones skipped.
func (s *search) at(name string) bool {
	if name != s.name {
		return false
	}
	if s.k > 0 {
		s.k--
		return false
	}
	return true
}

func (s *search) set(f decode.Field) {
	s.f, s.state = f, found
}

// protocolHeader mirrors dissectProtocolHeader.
func (s *search) protocolHeader(raw []byte) {
	h, ok := ParseProtocolHeader(raw)
	if !ok || s.class != nameProtocol {
		return
	}
	switch {
	case s.at("amqp.protocol"):
		s.set(decode.Field{Key: "protocol", Name: s.name, Value: "AMQP", Offset: 0, Length: 4})
	case s.at("amqp.protocol-id"):
		s.set(decode.Field{Key: "protocol-id", Name: s.name, Value: uint64(h.ID), Display: protocolIDText[h.ID], Offset: 4, Length: 1})
	case s.at("amqp.version"):
		v := "1.0.0"
		if h.Major != 1 || h.Minor != 0 || h.Revision != 0 {
			v = h.Version()
		}
		s.set(decode.Field{Key: "version", Name: s.name, Value: v, Offset: 5, Length: 3})
	}
}

// frame mirrors dissect for an unredacted frame.
func (s *search) frame(u *decode.Unit, cm *CompletedMessage) {
	switch s.class {
	case nameProtocol, nameRedacted:
		return // in protocol headers and redacted frames only
	case nameMessage, nameSection:
		if cm == nil {
			return // only a transfer completing a message has them
		}
	}
	raw := u.Raw
	var fr Frame
	if n, err := ParseFrame(raw, &fr); n == 0 || err != nil {
		return
	}
	if s.class == nameFrame {
		s.frameHeader(&fr)
		return
	}
	if len(fr.Body) == 0 || (fr.Type != FrameTypeAMQP && fr.Type != FrameTypeSASL) {
		return
	}
	v, err := Scan(raw, fr.BodyOffset())
	if err != nil {
		return
	}
	switch s.class {
	case namePerformative:
		if s.at(s.name) {
			s.performative(u, v)
		}
		return
	case nameArguments:
		if s.at(s.name) {
			s.state = unhandled // a container
		}
		return
	case namePayload:
		if n := len(raw) - v.End; n > 0 && s.at(s.name) {
			s.set(decode.Field{Key: "payload", Name: s.name, Value: uint64(n), Display: strconv.Itoa(n) + " bytes", Offset: v.End, Length: n})
		}
		return
	case nameNested:
		m := materializer{b: raw}
		s.trusted = true
		s.walk(&m, v, "arguments", "amqp.performative.arguments", "", 0)
	}
	if s.state == searching && cm != nil {
		s.message(u, cm)
	}
}

func (s *search) frameHeader(fr *Frame) {
	switch {
	case s.at("amqp.length"):
		s.set(decode.Field{Key: "size", Name: s.name, Value: uint64(fr.Size), Offset: 0, Length: 4, Encoding: "uint32"})
	case s.at("amqp.doff"):
		s.set(decode.Field{Key: "doff", Name: s.name, Value: uint64(fr.DOff), Offset: 4, Length: 1, Encoding: "ubyte", Display: doffDisplay[fr.DOff]})
	case s.at("amqp.type"):
		s.set(decode.Field{Key: "type", Name: s.name, Value: uint64(fr.Type), Offset: 5, Length: 1, Encoding: "ubyte", Display: typeDisplay[fr.Type]})
	case fr.Type == FrameTypeAMQP && s.at("amqp.channel"):
		s.set(decode.Field{Key: "channel", Name: s.name, Value: uint64(fr.Channel), Offset: 6, Length: 2, Encoding: "uint16"})
	case len(fr.Ext) > 0 && s.at("amqp.extended_header"):
		s.set(decode.Field{Key: "extended-header", Name: s.name, Value: fr.Ext, Offset: FrameHeaderLen, Length: len(fr.Ext)})
	}
}

// performative builds amqp.performative for the performative v of u.
func (s *search) performative(u *decode.Unit, v Value) {
	f := decode.Field{Key: "performative", Name: s.name, Value: u.Type, Offset: v.Start, Length: v.DescEnd - v.Start}
	if _, ok := compositeLen(u.Raw, v); ok {
		code, _, _ := v.Descriptor(u.Raw)
		d, err := Scan(u.Raw[:v.DescEnd], v.DescStart)
		if err == nil {
			enc, ok := perfEncoding[descKey{d.Code, code}]
			if !ok || !knownDescriptor(u.Raw, d, code) {
				s.state = unhandled
				return
			}
			f.Encoding = enc
		}
	}
	s.set(f)
}

// knownDescriptor reports whether the descriptor d, read as code, is
// shown as the spec's symbol for code: a number the spec defines, or that
// very symbol.
func knownDescriptor(b []byte, d Value, code uint64) bool {
	if describedOf(code) == nil {
		return false
	}
	if d.Code != CodeSym8 && d.Code != CodeSym32 {
		return true
	}
	sym, _ := d.Bytes(b)
	return string(sym) == describedOf(code).symbol
}

// compositeLen mirrors Composite.Set on the described value v: the
// number of fields a Composite would hold, and whether Set succeeds.
func compositeLen(b []byte, v Value) (n int, ok bool) {
	if _, _, ok := v.Descriptor(b); !ok {
		return 0, false
	}
	switch v.Code {
	case CodeList0:
		return 0, true
	case CodeList8, CodeList32:
	default:
		return 0, false
	}
	it := v.Items(b)
	for it.Next() {
		n++
	}
	return min(n, maxCompositeFields), it.Err() == nil
}

// message mirrors messageFields.
func (s *search) message(u *decode.Unit, cm *CompletedMessage) {
	// Parsed again only when the search gets this far (see WithSections).
	cm = cm.WithSections()
	m := materializer{b: cm.Bytes, base: cm.RawOffset, valid: cm.RawFrom}
	msg := &cm.Message
	switch s.class {
	case nameMessage:
		if id := u.MessageID(); id != "" && s.at("amqp.message_id") {
			s.set(decode.Field{Key: "message-id", Name: s.name, Value: id})
			return
		}
		if ck := u.Checksum(); ck != nil {
			if s.checksum(&m, cm, ck); s.state != searching {
				return
			}
		}
		if s.at("amqp.bare_message") {
			f := decode.Field{Key: "bare-message", Name: s.name, Value: uint64(msg.BareEnd - msg.BareStart),
				Display: strconv.Itoa(msg.BareEnd-msg.BareStart) + " bytes at message offset " + strconv.Itoa(msg.BareStart)}
			m.span(&f, msg.BareStart, msg.BareEnd)
			s.set(f)
		}
	case nameSection, nameNested:
		for i := range msg.Sections {
			sec := &msg.Sections[i]
			if s.walk(&m, sec.Value, sec.Name(), sectionName(sec.Descriptor), "", 0); s.state != searching {
				return
			}
		}
	}
}

// checksum mirrors checksumFields.
func (s *search) checksum(m *materializer, cm *CompletedMessage, ck *decode.Checksum) {
	verdict := s.at("amqp.checksum")
	if verdict && ck.Status == decode.ChecksumAbsent {
		s.set(decode.Field{Key: "checksum", Name: s.name, Value: ck.Status.String(), Kind: decode.KindValue})
		return
	}
	if ck.Status == decode.ChecksumAbsent {
		return
	}
	var f decode.Field
	switch {
	case verdict:
		text, ok := checksumText[checksumKey{ck.Algorithm, ck.Status}]
		if !ok {
			s.state = unhandled
			return
		}
		f = decode.Field{Key: "checksum", Value: ck.Status.String(), Display: text, Kind: decode.KindValue}
	case s.at("amqp.checksum.algorithm"):
		f = decode.Field{Key: "algorithm", Value: ck.Algorithm}
	case s.at("amqp.checksum.expected"):
		f = decode.Field{Key: "expected", Value: uint64(ck.Expected), Display: hex32(ck.Expected)}
	case s.at("amqp.checksum.actual"):
		f = decode.Field{Key: "actual", Value: uint64(ck.Actual), Display: hex32(ck.Actual)}
	default:
		return
	}
	f.Name = s.name
	if a, ok := cm.Message.checksumAnnotation(cm.Bytes); ok && a.alg == ck.Algorithm && a.expected == ck.Expected {
		switch f.Key {
		case "checksum", "actual":
			m.span(&f, cm.Message.BareStart, cm.Message.BareEnd)
		case "algorithm":
			m.span(&f, a.key.Start, a.key.End)
		case "expected":
			m.span(&f, a.value.Start, a.value.End)
		}
	}
	s.set(f)
}

// annotations searches the fields added to a message's subtree after it
// was decoded (Immutability's verdicts), which come last in the tree.
func (s *search) annotations(fs []*decode.Field) {
	for _, f := range fs {
		if s.at(f.Name) {
			s.set(*f)
			return
		}
		if s.annotations(f.Kids); s.state != searching {
			return
		}
	}
}

// walk visits the value v as materializer.value(v, key, name, typ, depth)
// would materialise it, depth first, and answers at the occurrence looked
// for. Only names of composite fields occur below the top (nameNested);
// for other names walk looks at v alone.
func (s *search) walk(m *materializer, v Value, key, name, typ string, depth int) {
	trusted := s.trusted
	s.trusted = false
	if name != "" && s.at(name) {
		s.leaf(m, v, key, name, typ, depth)
		return
	}
	if s.class != nameNested || depth > maxDepth {
		return
	}
	b := m.b
	// Below v, the name is a field of a composite of a holder type: skip
	// bytes that cannot hold one. The 0x00 that introduces a descriptor
	// precedes it, which for an array's element is before the element
	// (in the array's element constructor).
	if v.Described() || compound(v.Code) {
		from := v.Start
		if v.Described() {
			from = min(from, v.DescStart-1)
		}
		if !s.holders.mayHold(b[from:v.End]) {
			return
		}
	}
	if v.Described() {
		var t *describedType
		code, _, ok := v.Descriptor(b)
		if ok {
			t = describedOf(code)
		}
		if t != nil && t.class == "composite" && t.source == "list" {
			s.fields(m, v, composites[code], depth, trusted)
			return
		}
		// Restricted types and unknown descriptors: the value described.
		inner := v
		inner.Start, inner.DescStart, inner.DescEnd = v.DescEnd, 0, 0
		s.walk(m, inner, "", "", "", depth+1)
		return
	}
	switch v.Code {
	case CodeList0, CodeList8, CodeList32:
		it := v.Items(b)
		it.depth = depth + 1
		for it.Next() {
			if s.walk(m, it.Value, "", "", "", depth+1); s.state != searching {
				return
			}
		}
	case CodeMap8, CodeMap32:
		it := v.Items(b)
		it.depth = depth + 1
		for it.Next() {
			k := it.Value
			if !it.Next() {
				return
			}
			// The materializer keeps a key that is not a plain string
			// as the value's first child; a key it drops holds no names.
			if s.walk(m, k, "", "", "", depth+1); s.state != searching {
				return
			}
			if s.walk(m, it.Value, "", "", "", depth+1); s.state != searching {
				return
			}
		}
	case CodeArray8, CodeArray32:
		if v.Elem.DescEnd == v.Elem.DescStart && !compound(v.Elem.Code) {
			return // scalars: nothing named inside
		}
		it := v.Items(b)
		it.depth = depth + 1
		for it.Next() {
			e := it.Value
			if v.Elem.DescEnd > v.Elem.DescStart {
				e.DescStart, e.DescEnd = v.Elem.DescStart, v.Elem.DescEnd
			}
			if s.walk(m, e, "", "", "", depth+1); s.state != searching {
				return
			}
		}
	}
}

// fields walks the fields of the described list v of composite type ct,
// as describedValue materialises them: the first maxCompositeFields, and
// none when Composite.Set fails on v. Since that is only known once all
// items were read, a failure after the walk leaves the lookup to the
// tree, except for the performative itself (trusted), which the decoder
// already read whole: a unit whose performative it could not read carries
// an error and is not searched.
func (s *search) fields(m *materializer, v Value, ct *compTable, depth int, trusted bool) {
	switch v.Code {
	case CodeList8, CodeList32:
	default:
		return // list0 has no fields; anything else fails Set
	}
	it := v.Items(m.b)
	for i := 0; it.Next(); i++ {
		if i < maxCompositeFields && s.state == searching {
			s.walk(m, it.Value, ct.keys[i], ct.names[i], ct.typs[i], depth+1)
		}
		if s.state == unhandled || s.state == found && trusted {
			return
		}
	}
	if it.Err() != nil {
		s.state = unhandled // the tree shows no fields at all
	}
}

// compound reports whether values of constructor c hold other values.
func compound(c Code) bool {
	switch c {
	case CodeList8, CodeList32, CodeMap8, CodeMap32, CodeArray8, CodeArray32:
		return true
	}
	return false
}

// leaf answers with the field materializer.value would build for v, when
// it is a scalar (or a composite without fields, shown as its type's
// name); anything else is left to the tree.
func (s *search) leaf(m *materializer, v Value, key, name, typ string, depth int) {
	s.state = unhandled
	if depth > maxDepth {
		return
	}
	b := m.b
	f := decode.Field{Key: key, Name: name}
	m.span(&f, v.Start, v.End)
	if v.Described() {
		// A composite without fields shows as its type's name.
		code, _, ok := v.Descriptor(b)
		empty := v.Code == CodeList0 || (v.Code == CodeList8 || v.Code == CodeList32) && v.Count == 0
		if !ok || composites[code] == nil || !empty {
			return
		}
		d, err := Scan(b[:v.DescEnd], v.DescStart)
		if err != nil || !knownDescriptor(b, d, code) {
			return
		}
		enc, ok := emptyEncoding[emptyKey{descKey{d.Code, code}, v.Code}]
		if !ok {
			return
		}
		t := composites[code].t
		f.Encoding, f.Display, f.Value = enc, t.name, t.name
		s.set(f)
		return
	}
	f.Encoding = encodingText[v.Code]
	d := b[v.Data:v.End]
	val, disp, fixed := fixedScalar(b, v)
	switch {
	case fixed:
		f.Value = val
		if disp != "" {
			f.Display = disp
		}
	case v.Code == CodeVbin8 || v.Code == CodeVbin32:
		if len(d) == 0 {
			f.Value = []byte(nil) // as append([]byte(nil)) gives
		} else {
			f.Value = d
		}
	case v.Code == CodeStr8 || v.Code == CodeStr32:
		if !utf8.Valid(d) {
			return // the tree quotes it in Display
		}
		f.Value = alias(d)
	case v.Code == CodeSym8 || v.Code == CodeSym32:
		f.Value = alias(d)
	default:
		return // containers, decimals, chars
	}
	if typ != "" {
		if disp, ok := choiceDisplay[typ]; ok && !chooseDisplay(&f, disp) {
			return
		}
	}
	s.set(f)
}

// chooseDisplay sets f.Display as materializer.value does for a value of
// a restricted type with named choices: "name (text)" when the value's
// text (or, for a string, the string) is one of the choices. It reports
// false for values whose text it does not render.
func chooseDisplay(f *decode.Field, disp map[string]string) bool {
	var buf [40]byte
	var text []byte
	switch x := f.Value.(type) {
	case nil:
		text = append(buf[:0], f.Display...)
	case bool:
		text = strconv.AppendBool(buf[:0], x)
	case uint64:
		text = strconv.AppendUint(buf[:0], x, 10)
	case int64:
		text = strconv.AppendInt(buf[:0], x, 10)
	case float64:
		text = strconv.AppendFloat(buf[:0], x, 'g', -1, 64)
	case string:
		// The text is the quoted string (or a UUID's Display); no
		// choice is spelt with a quote, so only the string can match.
		if f.Display != "" {
			text = append(buf[:0], f.Display...)
		}
	default:
		return false
	}
	if d, ok := disp[string(text)]; ok && len(text) > 0 {
		f.Display = d
		return true
	}
	if str, ok := f.Value.(string); ok {
		if d, ok := disp[str]; ok {
			f.Display = d
		}
	}
	return true
}

// alias returns b's bytes as a string without copying them; b must never
// change afterwards (see the comment at the top of this file).
func alias(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
