package queue

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Texts RabbitMQ 3.10.8 sent, as the live tests read them.
func TestPrettyRabbitMQTexts(t *testing.T) {
	cases := []struct {
		prefix string
		term   term
		ll     int
		want   string
	}{
		{"invalid expiration '10x': ", tagTerm("leftover_string", stringTerm("x")), 80, `{leftover_string,"x"}`},
		{"invalid expiration 'abc': ", atomTerm("no_integer"), 80, `no_integer`},
		{"invalid expiration '99999999999999999999999': ", tagTerm("value_too_large", term{kind: termInteger, text: "99999999999999999999999"}), 80,
			"{value_too_large,\n" + strings.Repeat(" ", 47) + "99999999999999999999999}"},
		{"x: ", stringTerm("expected integer, got longstr"), 255, `"expected integer, got longstr"`},
		{"x: ", tupleTerm(atomTerm("unacceptable_type_in_header"), stringTerm("CC"), atomTerm("longstr")), 80, `{unacceptable_type_in_header,"CC",longstr}`},
		{"x: ", tagTerm("leftover_string", stringTerm("a\x01")), 80, `{leftover_string,[97,1]}`},
		{"x: ", tagTerm("leftover_string", stringTerm("a\"\\\n\x1b\xa0")), 80, "{leftover_string,\"a\\\"\\\\\\n\\e\xa0\"}"},
	}
	for _, c := range cases {
		got := string(appendPretty(nil, c.term, column(c.prefix), c.ll))
		if got != c.want {
			t.Errorf("%q + %s:\n got %q\nwant %q", c.prefix, c.term.appendFlat(nil), got, c.want)
		}
	}
}

// randomTerm builds the shapes RabbitMQ's reasons take, with lengths that
// straddle line ends.
func randomTerm(r *rand.Rand, depth int) term {
	switch k := r.IntN(6); {
	case k == 0:
		return atomTerm([]string{"no_integer", "invalid_overflow", "value_negative", "a"}[r.IntN(4)])
	case k == 1:
		n := 1 + r.IntN(40)
		var sb strings.Builder
		if r.IntN(2) == 0 {
			sb.WriteByte('-')
		}
		sb.WriteByte(byte('1' + r.IntN(9)))
		for i := 1; i < n; i++ {
			sb.WriteByte(byte('0' + r.IntN(10)))
		}
		return term{kind: termInteger, text: sb.String()}
	case k <= 3 || depth > 1:
		n := r.IntN(60)
		b := make([]byte, n)
		for i := range b {
			switch r.IntN(8) {
			case 0:
				b[i] = byte(r.IntN(256))
			case 1:
				b[i] = "\"\\\n\t\x1b"[r.IntN(5)]
			default:
				b[i] = byte('a' + r.IntN(26))
			}
		}
		return stringTerm(string(b))
	}
	elems := []term{atomTerm([]string{"leftover_string", "value_too_large", "unacceptable_type_in_header", "x"}[r.IntN(4)])}
	for i := 1 + r.IntN(2); i > 0; i-- {
		elems = append(elems, randomTerm(r, depth+1))
	}
	return tupleTerm(elems...)
}

func erlangSource(t term) string {
	switch t.kind {
	case termAtom:
		return "'" + t.text + "'"
	case termInteger:
		return t.text
	case termString:
		var sb strings.Builder
		sb.WriteByte('[')
		for i := 0; i < len(t.text); i++ {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(strconv.Itoa(int(t.text[i])))
		}
		sb.WriteByte(']')
		return sb.String()
	}
	parts := make([]string, len(t.elems))
	for i, e := range t.elems {
		parts[i] = erlangSource(e)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// TestPrettyMatchesErlang lays out random terms at random columns and
// compares with what the installed Erlang (the one RabbitMQ runs on)
// prints for the same format.
func TestPrettyMatchesErlang(t *testing.T) {
	erl, err := exec.LookPath("erl")
	if err != nil {
		t.Skip("no erl on PATH: the layout is checked against Erlang where RabbitMQ is installed")
	}
	r := rand.New(rand.NewPCG(1, 2))
	type tc struct {
		prefix int
		ll     int
		t      term
	}
	var cases []tc
	var src strings.Builder
	src.WriteString("-module(pp).\n-export([main/0]).\nmain() ->\n    F = fun(N, LL, T) -> io:format(\"~s~n\", [binary:encode_hex(list_to_binary(io_lib:format(lists:duplicate(N, $a) ++ \"~\" ++ integer_to_list(LL) ++ \"p\", [T])))]) end,\n")
	for i := 0; i < 3000; i++ {
		c := tc{prefix: r.IntN(270), ll: []int{80, 255}[r.IntN(2)], t: randomTerm(r, 0)}
		cases = append(cases, c)
		src.WriteString("    F(" + strconv.Itoa(c.prefix) + ", " + strconv.Itoa(c.ll) + ", " + erlangSource(c.t) + "),\n")
	}
	src.WriteString("    ok.\n")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pp.erl"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("erlc", "-o", dir, filepath.Join(dir, "pp.erl")).CombinedOutput(); err != nil {
		t.Skipf("erlc: %v %s", err, out)
	}
	out, err := exec.Command(erl, "-noshell", "-pa", dir, "-s", "pp", "main", "-s", "init", "stop").Output()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	bad := 0
	for i := 0; sc.Scan(); i++ {
		want, err := hex.DecodeString(sc.Text())
		if err != nil || i >= len(cases) {
			t.Fatalf("erl printed %q", sc.Text())
		}
		c := cases[i]
		prefix := strings.Repeat("a", c.prefix)
		got := append([]byte(prefix), appendPretty(nil, c.t, column(prefix), c.ll)...)
		if !bytes.Equal(got, want) {
			if bad++; bad <= 5 {
				t.Errorf("column %d width %d %s:\n got %q\nwant %q", c.prefix+1, c.ll, erlangSource(c.t), got[c.prefix:], want[min(c.prefix, len(want)):])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d layouts differ", bad, len(cases))
	}
}
