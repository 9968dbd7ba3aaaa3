package proxy

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// CA is the local certificate authority with which the proxy intercepts
// TLS when no certificate is given, as mitmproxy does: it is made on first
// use and kept (certificate and key, the key mode 0600) so that a user can
// trust it once; the proxy issues from it a certificate for each server
// name a client asks for.
type CA struct {
	// CertFile and KeyFile are where the CA is kept.
	CertFile, KeyFile string

	cert    *x509.Certificate
	certDER []byte
	key     crypto.Signer

	mu      sync.Mutex
	leafKey *ecdsa.PrivateKey
	leaves  map[string]*tls.Certificate
}

// DefaultCADir is where the CA is kept: wiretap/ under the user's
// configuration directory ($XDG_CONFIG_HOME, else ~/.config).
func DefaultCADir() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("proxy: ca: %w", err)
	}
	return filepath.Join(dir, "wiretap"), nil
}

// LoadOrCreateCA reads the CA kept in dir, or makes one there.
func LoadOrCreateCA(dir string) (*CA, error) {
	ca := &CA{CertFile: filepath.Join(dir, "ca.pem"), KeyFile: filepath.Join(dir, "ca-key.pem")}
	certPEM, cerr := os.ReadFile(ca.CertFile)
	keyPEM, kerr := os.ReadFile(ca.KeyFile)
	switch {
	case cerr == nil && kerr == nil:
		if err := ca.parse(certPEM, keyPEM); err != nil {
			return nil, err
		}
		return ca, nil
	case errors.Is(cerr, os.ErrNotExist) && errors.Is(kerr, os.ErrNotExist):
		return ca, ca.create(dir)
	case cerr != nil && !errors.Is(cerr, os.ErrNotExist):
		return nil, fmt.Errorf("proxy: ca: %w", cerr)
	case kerr != nil && !errors.Is(kerr, os.ErrNotExist):
		return nil, fmt.Errorf("proxy: ca: %w", kerr)
	default:
		return nil, fmt.Errorf("proxy: ca: %s and %s must both exist or neither (remove the one left to make a new CA)", ca.CertFile, ca.KeyFile)
	}
}

func (ca *CA) parse(certPEM, keyPEM []byte) error {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return fmt.Errorf("proxy: ca: %s or %s is not PEM", ca.CertFile, ca.KeyFile)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return fmt.Errorf("proxy: ca: %s: %w", ca.CertFile, err)
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return fmt.Errorf("proxy: ca: %s: %w", ca.KeyFile, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return fmt.Errorf("proxy: ca: %s: not a signing key", ca.KeyFile)
	}
	ca.cert, ca.certDER, ca.key = cert, cb.Bytes, signer
	return nil
}

func (ca *CA) create(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("proxy: ca: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("proxy: ca: %w", err)
	}
	host, _ := os.Hostname()
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{"wiretap"}, CommonName: "wiretap interception CA (" + host + ")"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return fmt.Errorf("proxy: ca: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("proxy: ca: %w", err)
	}
	// The key first, private from its first byte; the certificate last,
	// so a CA is complete once its certificate exists.
	if err := writeNew(ca.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	if err := writeNew(ca.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return fmt.Errorf("proxy: ca: %w", err)
	}
	ca.cert, ca.certDER, ca.key = cert, der, key
	return nil
}

func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("proxy: ca: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("proxy: ca: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("proxy: ca: %w", err)
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

// Fingerprint is the SHA-256 of the CA certificate, in the colon-separated
// uppercase hex browsers and openssl show.
func (ca *CA) Fingerprint() string {
	sum := sha256.Sum256(ca.certDER)
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	var b strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}

// Certificate is the CA certificate, for clients that are told to trust it.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// ServerConfig is a TLS configuration that presents, for each connection,
// a certificate issued by the CA for the server name the client asked for
// (SNI), or, without one, for fallback (the listening address's host).
func (ca *CA) ServerConfig(fallback string) *tls.Config {
	return &tls.Config{GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		name := hello.ServerName
		if name == "" {
			name = fallback
		}
		return ca.leaf(name)
	}}
}

// leaf returns the certificate for name, issued once and kept.
func (ca *CA) leaf(name string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.leaves[name]; ok {
		return c, nil
	}
	if ca.leafKey == nil {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("proxy: ca: %w", err)
		}
		ca.leafKey = k
		ca.leaves = map[string]*tls.Certificate{}
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{Organization: []string{"wiretap"}, CommonName: name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(0, 0, 30),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(name); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else if name != "" {
		tmpl.DNSNames = []string{name}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, ca.leafKey.Public(), ca.key)
	if err != nil {
		return nil, fmt.Errorf("proxy: ca: issuing for %q: %w", name, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.certDER}, PrivateKey: ca.leafKey}
	ca.leaves[name] = c
	return c, nil
}
