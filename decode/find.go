package decode

// A Finder answers "what does the field named name hold in u's tree?"
// without building the tree, so that a display filter over a field of the
// unit's body does not dissect every unit it looks at. It returns the k-th
// occurrence (from 0, in tree order) of the field as the tree would hold
// it (Key, Name, Value, Display, Encoding, Offset, Length; Kids need not be
// set) and ok true, or ok false when the tree has fewer occurrences.
//
// handled false means the finder cannot answer for this unit and name (a
// nested table entry, a unit decoded by a special path, a redacted unit):
// the caller then builds the tree with [Unit.Fields]. A finder must be
// exact where it answers: a handled lookup must give what searching the
// tree would give.
//
// Finders run concurrently on many units and should not allocate beyond
// boxing the value they return.
type Finder func(u *Unit, name string, k int) (f Field, ok, handled bool)

// finders holds one Finder per protocol. Protocol packages set them from
// init, before any lookup; they are read-only afterwards.
var finders [ProtoPgSQL + 1]Finder

// RegisterFinder sets the Finder of units of protocol p. Protocol packages
// call it from init.
func RegisterFinder(p Proto, f Finder) {
	if int(p) < len(finders) {
		finders[p] = f
	}
}

// FindField returns the k-th occurrence of the field named name in the
// unit's tree through its protocol's Finder; handled false means there is
// no finder for it and the caller must search u.Fields() instead.
func (u *Unit) FindField(name string, k int) (f Field, ok, handled bool) {
	if u.Dissect == nil {
		return Field{}, false, true // no tree at all
	}
	if int(u.Proto) >= len(finders) || finders[u.Proto] == nil {
		return Field{}, false, false
	}
	return finders[u.Proto](u, name, k)
}
