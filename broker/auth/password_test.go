package auth

import (
	"crypto/sha256"
	"encoding/base64"
	"testing"
)

// Hashes made by RabbitMQ 3.10.8 itself for the password "secret":
// rabbitmqctl eval 'base64:encode(rabbit_password:hash(Mod, <<"secret">>)).'
// for each hashing module, and for "guest" an export_definitions of a
// fresh node. TestLiveHashes makes new ones on the running server.
var rabbitHashes = []struct {
	algorithm, hash, password string
}{
	{HashingSHA512, "ielaZd1PhO3iJL4Px4Wo4wKeGADl7vXrUBKVCj3vx3xHGbXHl5BmQ9DhrQNAHxkZEc2iFFCh2sQoHCT86wcJRqTcbPY=", "secret"},
	{HashingMD5, "tKwQNsdTIF8nADqf4kssiMJBggo=", "secret"},
	{HashingSHA256, "o5pELn4S543rdb4aZqwZvj4E8wWNzMEqu3+vmtbOUPc5D7pR", "guest"},
	{"", "o5pELn4S543rdb4aZqwZvj4E8wWNzMEqu3+vmtbOUPc5D7pR", "guest"}, // no algorithm: SHA-256
}

func TestRabbitMQHashes(t *testing.T) {
	for _, h := range rabbitHashes {
		s := NewStore()
		if err := s.PutUserHash("u", h.hash, h.algorithm, nil); err != nil {
			t.Fatalf("%s: %v", h.algorithm, err)
		}
		if !s.CheckPassword("u", h.password) {
			t.Errorf("%s: %q not accepted", h.algorithm, h.password)
		}
		if s.CheckPassword("u", h.password+"x") || s.CheckPassword("u", "") {
			t.Errorf("%s: a wrong password accepted", h.algorithm)
		}
		// The hash comes back out as it went in.
		u := s.Users()[0]
		if u.PasswordHash != h.hash {
			t.Errorf("%s: exported %q", h.algorithm, u.PasswordHash)
		}
		if want := h.algorithm; want != "" && u.HashingAlgorithm != want {
			t.Errorf("algorithm %q, want %q", u.HashingAlgorithm, want)
		}
	}
}

func TestHashPassword(t *testing.T) {
	salt := [4]byte{0x90, 0x8d, 0xc6, 0x0a}
	got := HashPassword("test12", salt)
	raw, err := base64.StdEncoding.DecodeString(got)
	if err != nil {
		t.Fatal(err)
	}
	// Recompute the scheme from its definition, independently of
	// appendHash.
	sum := sha256.Sum256(append(salt[:], "test12"...))
	if string(raw[:4]) != string(salt[:]) || string(raw[4:]) != string(sum[:]) {
		t.Fatalf("HashPassword = %x, want salt %x then %x", raw, salt, sum)
	}
	if HashPassword("test12", [4]byte{1, 2, 3, 4}) == got {
		t.Fatal("the salt does not matter")
	}
	s := NewStore()
	if err := s.PutUserHash("u", got, HashingSHA256, nil); err != nil || !s.CheckPassword("u", "test12") {
		t.Fatal("HashPassword's output does not check", err)
	}
	// Non-ASCII passwords hash as their UTF-8 bytes, as RabbitMQ's do.
	s.PutUser("w", "pässwörd", nil)
	if !s.CheckPassword("w", "pässwörd") || s.CheckPassword("w", "passwort") {
		t.Fatal("UTF-8 password")
	}
	// A long password goes past appendHash's stack buffer.
	long := string(make([]byte, 1000))
	s.PutUser("l", long+"x", nil)
	if !s.CheckPassword("l", long+"x") || s.CheckPassword("l", long+"y") {
		t.Fatal("long password")
	}
}

func TestPutUserFreshSalt(t *testing.T) {
	s := NewStore()
	s.PutUser("a", "same", nil)
	s.PutUser("b", "same", nil)
	u := s.Users()
	if u[0].PasswordHash == u[1].PasswordHash {
		t.Fatal("two users with one password got one hash: the salt is not fresh")
	}
}

func TestPutUserHashErrors(t *testing.T) {
	s := NewStore()
	for _, c := range []struct{ hash, algorithm, err string }{
		{"o5pELn4S543rdb4aZqwZvj4E8wWNzMEqu3+vmtbOUPc5D7pR", "rabbit_password_hashing_sha1", "auth: unknown hashing_algorithm 'rabbit_password_hashing_sha1'"},
		{"not base64!", HashingSHA256, "auth: password hash is not base64: illegal base64 data at input byte 3"},
		{"tKwQNsdTIF8nADqf4kssiMJBggo=", HashingSHA256, errHashSize.Error()}, // an MD5 hash called SHA-256
	} {
		if err := s.PutUserHash("u", c.hash, c.algorithm, nil); err == nil || err.Error() != c.err {
			t.Errorf("%q %q: %v, want %s", c.hash, c.algorithm, err, c.err)
		}
	}
	if len(s.Users()) != 0 {
		t.Fatal("a refused hash made a user")
	}
	// The empty hash is a user without a password (RabbitMQ's
	// clear_password): it exists, and no password logs it in.
	if err := s.PutUserHash("nopass", "", "", nil); err != nil {
		t.Fatal(err)
	}
	if len(s.Users()) != 1 || s.CheckPassword("nopass", "x") {
		t.Fatal("passwordless user")
	}
}
