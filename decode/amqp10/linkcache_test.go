package amqp10

import (
	"strings"
	"testing"
)

// TestTransferLinkAfterReattach checks that a transfer's summary names
// the link its (channel, handle) has now: the decoder remembers the last
// look-up, and attach and detach must make it look again.
func TestTransferLinkAfterReattach(t *testing.T) {
	attach := func(name string, handle uint32) []byte {
		return AppendFrame(nil, 0, 0, AppendComposite(nil, DescriptorAttach, AppendString(nil, name), AppendUint(nil, handle), AppendBool(nil, false)))
	}
	detach := func(handle uint32) []byte {
		return AppendFrame(nil, 0, 0, AppendComposite(nil, DescriptorDetach, AppendUint(nil, handle), AppendBool(nil, true)))
	}
	msg := AppendDescribed(nil, DescriptorData, AppendBinary(nil, []byte("x")))
	var s []byte
	s = append(s, "AMQP\x00\x01\x00\x00"...)
	s = append(s, attach("first", 0)...)
	s = append(s, transferFrame(0, 0, 1, false, msg)...)
	s = append(s, transferFrame(0, 0, 2, false, msg)...)
	s = append(s, detach(0)...)
	s = append(s, transferFrame(0, 0, 3, false, msg)...)
	s = append(s, attach("second", 0)...)
	s = append(s, transferFrame(0, 0, 4, false, msg)...)
	s = append(s, attach("third", 1)...)
	s = append(s, transferFrame(0, 1, 5, false, msg)...)
	s = append(s, transferFrame(0, 0, 6, false, msg)...)
	var got []string
	for _, u := range collect(t, nil, 0, fw(s)) {
		if u.Type != "transfer" {
			continue
		}
		link := "(none)"
		if i := strings.Index(u.Summary, ` link="`); i >= 0 {
			link = u.Summary[i+7:]
			link = link[:strings.IndexByte(link, '"')]
		}
		got = append(got, link)
	}
	want := "first first (none) second third second"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("links of the transfers: %s, want %s", g, want)
	}
}
