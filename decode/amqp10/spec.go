package amqp10

// describedType is a described type of the specification (a composite, or
// a restricted type with a descriptor such as a message section).
type describedType struct {
	name     string // "attach", "application-properties"
	symbol   string // "amqp:attach:list"
	class    string // "composite" or "restricted"
	source   string // "list", "map", "binary", "*"
	provides string
	fields   []specField
}

// specField is one field of a composite type.
type specField struct {
	name      string // "max-frame-size"
	typ       string // "uint", "role", "*delivery-state" for type="*" requires=...
	multiple  bool
	mandatory bool
	def       string
}
