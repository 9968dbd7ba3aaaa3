package decode

// Deferred lets a decoder return from a call with units it has not yet
// emitted, their work going on elsewhere meanwhile (the PostgreSQL
// decoder inflating a CompressedMessages on a goroutine of its own while
// the capture is read on), and still emit every unit in the order it
// would have emitted them at once. At most one decoder's work is pending
// at a time: the decoder records how to finish it with Defer, and
// whoever is about to emit a unit or to change what that work depends
// on calls Settle first (the pipeline before numbering any unit; the
// decoder itself before anything but the work it knows it can let
// overlap).
//
// A Deferred belongs to one pipeline and is used on the goroutine that
// feeds it. The zero value is ready; a nil *Deferred settles nothing.
type Deferred struct {
	finish  func()
	running bool
}

// Defer records finish as the pending work, settling any other first.
func (d *Deferred) Defer(finish func()) {
	d.Settle()
	d.finish = finish
}

// Settle runs the pending work, if any. Called from inside that work
// (whose emissions come back through the pipeline), it does nothing.
// (The pipeline calls it for every unit: the test is inlined.)
func (d *Deferred) Settle() {
	if d != nil && d.finish != nil && !d.running {
		d.settle()
	}
}

func (d *Deferred) settle() {
	finish := d.finish
	d.finish = nil
	d.Within(finish)
}

// Within runs fn, a part of the pending work done early (the oldest of
// several waiting units), with Settle doing nothing meanwhile: the
// units fn emits come before the rest of that work's.
func (d *Deferred) Within(fn func()) {
	if d.running {
		fn()
		return
	}
	d.running = true
	defer func() { d.running = false }()
	fn()
}
