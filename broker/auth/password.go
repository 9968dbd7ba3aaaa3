package auth

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
)

// The hashing_algorithm names of RabbitMQ's definitions.
const (
	HashingSHA256 = "rabbit_password_hashing_sha256" // the default since 3.6
	HashingSHA512 = "rabbit_password_hashing_sha512"
	HashingMD5    = "rabbit_password_hashing_md5" // before 3.6
)

type hashing uint8

const (
	hashSHA256 hashing = iota
	hashSHA512
	hashMD5
)

func (h hashing) String() string {
	switch h {
	case hashSHA512:
		return HashingSHA512
	case hashMD5:
		return HashingMD5
	}
	return HashingSHA256
}

// parseHashing reads a hashing_algorithm; "" is the default, as RabbitMQ
// takes definitions from 3.6.1 on that name none.
func parseHashing(name string) (hashing, bool) {
	switch name {
	case "", HashingSHA256:
		return hashSHA256, true
	case HashingSHA512:
		return hashSHA512, true
	case HashingMD5:
		return hashMD5, true
	}
	return 0, false
}

// HashPassword returns RabbitMQ's password_hash for password with salt:
// base64(salt ++ sha256(salt ++ password)), the password as its UTF-8
// bytes.
func HashPassword(password string, salt [4]byte) string {
	return base64.StdEncoding.EncodeToString(appendHash(salt[:], hashSHA256, salt, password))
}

// appendHash appends the digest of salt ++ password to dst. The input goes
// through a stack buffer, so checking a password of ordinary length
// allocates nothing.
func appendHash(dst []byte, h hashing, salt [4]byte, password string) []byte {
	var buf [256]byte
	in := append(append(buf[:0], salt[:]...), password...)
	switch h {
	case hashSHA512:
		sum := sha512.Sum512(in)
		return append(dst, sum[:]...)
	case hashMD5:
		sum := md5.Sum(in)
		return append(dst, sum[:]...)
	}
	sum := sha256.Sum256(in)
	return append(dst, sum[:]...)
}

func newSalt() [4]byte {
	var salt [4]byte
	_, _ = rand.Read(salt[:]) // crypto/rand.Read never fails (Go 1.24+)
	return salt
}

// matchHash reports whether stored (salt ++ digest, decoded) is password's.
// A stored hash too short to hold a salt, like the empty one of a user
// without a password, matches nothing.
func matchHash(stored []byte, h hashing, password string) bool {
	if len(stored) < 4 {
		return false
	}
	var buf [4 + sha512.Size]byte
	got := appendHash(buf[:0], h, [4]byte(stored[:4]), password)
	return subtle.ConstantTimeCompare(got, stored[4:]) == 1
}

var errHashSize = errors.New("auth: password hash is not a 4-byte salt and a digest of the algorithm's size")

// decodeHash decodes a definitions password_hash. The empty hash is a user
// who cannot log in with a password (RabbitMQ's clear_password).
func decodeHash(hash string, h hashing) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(hash)
	if err != nil {
		return nil, errors.New("auth: password hash is not base64: " + err.Error())
	}
	if len(b) == 0 {
		return b, nil
	}
	size := sha256.Size
	switch h {
	case hashSHA512:
		size = sha512.Size
	case hashMD5:
		size = md5.Size
	}
	if len(b) != 4+size {
		return nil, errHashSize
	}
	return b, nil
}
