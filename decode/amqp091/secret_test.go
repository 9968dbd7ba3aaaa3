package amqp091

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// secretByDissect is how the secret was found before secretOf: from the
// whole field tree dissectArgs builds. secretOf must find the same.
func secretByDissect(args []byte, info *MethodInfo, name string) (mech string, secret []byte) {
	fs, _ := dissectArgs(newArgWalk(args, info.Args), 0, "")
	secret, end := args[len(args):], 0
	for _, f := range fs {
		end = max(end, f.Offset+f.Length)
		switch f.Key {
		case "mechanism":
			mech, _ = f.Value.(string)
		case name:
			secret = args[f.Offset+4 : f.Offset+f.Length]
		}
	}
	if len(secret) == 0 && end < len(args) {
		secret, mech = args[end:], ""
	}
	return mech, secret
}

// TestSecretOfAgreesWithDissect holds secretOf to the field tree on every
// prefix of the credential-carrying methods' arguments and on random
// corruptions of them: a cut or damaged frame must hide what it hid.
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
			m1, s1 := secretOf(a, info, c.name)
			m2, s2 := secretByDissect(a, info, c.name)
			if m1 != m2 || !bytes.Equal(s1, s2) || (len(s1) > 0 && &s1[0] != &s2[0]) {
				t.Fatalf("%s %s: secretOf %q %q, the field tree %q %q", info.Name, what, m1, s1, m2, s2)
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
