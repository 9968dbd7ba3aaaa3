package main

import "github.com/wiretap-dev/wiretap/decode"

// unitStage is a step between the pipeline and a sink that may hold
// units back (keeping their order) and annotate them: the broker's route
// annotator. Sink and Flush run on the pipeline's goroutine.
type unitStage interface {
	Sink(*decode.Unit)
	Flush()
}

// wrapSink puts f's stage, if any, in front of sink; flush sends on what
// the stage still holds once the pipeline has finished.
func (f *decodeFlags) wrapSink(sink func(*decode.Unit)) (staged func(*decode.Unit), flush func()) {
	if f.stage == nil {
		return sink, func() {}
	}
	s := f.stage(sink)
	return s.Sink, s.Flush
}
