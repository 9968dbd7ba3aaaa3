package amqp091

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
)

// walkedFields is what secretOf sees of args: the fields the argument
// walk gives, as "key@offset+length=value".
func walkedFields(args []byte, info *MethodInfo) []string {
	var out []string
	w := newArgWalk(args, info.Args)
	for {
		var f decode.Field
		if i, _, _ := w.next(0, &f); i < 0 {
			return out
		}
		out = append(out, fmt.Sprintf("%s@%d+%d=%v", f.Key, f.Offset, f.Length, f.Value))
	}
}

// dissectedFields is the same of the field tree dissectArgs builds, from
// which the secret was found before secretOf.
func dissectedFields(args []byte, info *MethodInfo) []string {
	var out []string
	fs, _ := dissectArgs(newArgWalk(args, info.Args), 0, "")
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s@%d+%d=%v", f.Key, f.Offset, f.Length, f.Value))
	}
	return out
}

// TestSecretOfAgreesWithDissect holds the walk secretOf makes to the
// field tree on every prefix of the credential-carrying methods' arguments
// and on random corruptions of them: the same fields at the same offsets,
// so a cut or damaged frame hides what it hid. It also checks, on each,
// that the secret secretOf finds lies within the arguments.
func TestSecretOfAgreesWithDissect(t *testing.T) {
	methods := []struct {
		m    Method
		name string
	}{
		{&ConnectionStartOk{ClientProperties: sampleTable(), Mechanism: []byte("PLAIN"), Response: []byte("\x00alice\x00s3cret"), Locale: []byte("en_US")}, "response"},
		{&ConnectionStartOk{Mechanism: []byte("AMQPLAIN"), Response: []byte("\x05LOGINS\x00\x00\x00\x03bob"), Locale: []byte("en_US")}, "response"},
		{&ConnectionSecureOk{Response: []byte("secret-response")}, "response"},
		{&ConnectionUpdateSecret{NewSecret: []byte("new-secret"), Reason: []byte("rotation")}, "new-secret"},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	checked := 0
	for _, c := range methods {
		frame := AppendMethodFrame(nil, 0, c.m)
		payload := frame[FrameHeaderSize : len(frame)-1]
		info := LookupMethod(c.m.IDs())
		args := payload[4:]
		try := func(a []byte, what string) {
			walked, dissected := walkedFields(a, info), dissectedFields(a, info)
			if strings.Join(walked, " ") != strings.Join(dissected, " ") {
				t.Fatalf("%s %s: walked %q, dissected %q", info.Name, what, walked, dissected)
			}
			if _, secret := secretOf(a, info, c.name); len(secret) > 0 && !bytes.Contains(a, secret) {
				t.Fatalf("%s %s: secret %q is not in the arguments", info.Name, what, secret)
			}
			checked++
		}
		for n := 0; n <= len(args); n++ {
			try(args[:n], "cut")
		}
		for range 2000 {
			a := append([]byte(nil), args...)
			for range 1 + rng.IntN(3) {
				a[rng.IntN(len(a))] = byte(rng.IntN(256))
			}
			try(a, "corrupted")
		}
	}
	if checked < 8000 {
		t.Fatalf("%d cases", checked)
	}
}
