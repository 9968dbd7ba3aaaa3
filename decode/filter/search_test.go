package filter

import (
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
)

func TestSearch(t *testing.T) {
	pub, hdr, bod, dr := publish(nil), header(nil), body(), dataRow()
	for _, tc := range []struct {
		u    *decode.Unit
		text string
		want bool
	}{
		{pub, "ROUTING-KEY", true},    // summary, any case
		{pub, "Basic.Publish", true},  // type
		{pub, "ex.orders", true},      // field value (also summary)
		{hdr, "persistent", true},     // field Display
		{hdr, "2048", true},           // number as text
		{hdr, "2024-01-01T00", true},  // time as text
		{hdr, "B", true},              // a header key
		{bod, "hello, world", true},   // bytes as text
		{bod, "deadbeef", false},      // not as hex
		{dr, "invalid utf-8", true},   // warning
		{dr, "XYZ", true},             // second DataRow value
		{nested(), "TRUNCATED", true}, // error
		{pub, "nothing like it", false},
		{pub, "", true},
		{nil, "x", false},
		{&decode.Unit{Summary: "Straße"}, "STRASSE", false}, // simple folding only
		{&decode.Unit{Summary: "Ärger"}, "ärg", true},
		{&decode.Unit{Summary: "\xff\xfe"}, "\xfe", true},
	} {
		if got := Search(tc.u, tc.text); got != tc.want {
			t.Errorf("Search(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

func TestContainsFold(t *testing.T) {
	for _, tc := range []struct {
		s, sub string
		want   bool
	}{
		{"Hello", "LL", true},
		{"Hello", "lo", true},
		{"Hello", "hello!", false},
		{"", "", true},
		{"abc", "", true},
		{"KELVIN \u212a", "n k", true}, // Kelvin sign folds to k
		{"ΣΊΣΥΦΟΣ", "σίσυφος", true},
	} {
		if got := containsFold(tc.s, tc.sub); got != tc.want {
			t.Errorf("containsFold(%q, %q) = %v", tc.s, tc.sub, got)
		}
	}
}
