package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"testing"
	"time"
)

func newCert(t *testing.T, subject pkix.Name) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestCertName(t *testing.T) {
	cases := []struct {
		subject pkix.Name
		dn, cn  string
	}{
		{pkix.Name{CommonName: "app", Organization: []string{"Example"}, Country: []string{"GB"}},
			"CN=app,O=Example,C=GB", "app"},
		// RFC 4514 escapes, and RabbitMQ's \XX for every byte outside
		// 32..125 (the "é" is two).
		{pkix.Name{CommonName: "#a, b+c;\"<d>\\ ", OrganizationalUnit: []string{"é~"}},
			`CN=\#a\, b\+c\;\"\<d\>\\\ ,OU=\C3\A9\7E`, "#a, b+c;\"<d>\\ "},
		{pkix.Name{ExtraNames: []pkix.AttributeTypeAndValue{
			{Type: asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}, Value: "uid1"},
			{Type: asn1.ObjectIdentifier{1, 2, 3, 4}, Value: "x"},
			{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: "one"},
			{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: "two"},
		}}, "CN=two,CN=one,1.2.3.4=x,UID=uid1", "one,two"},
	}
	for _, c := range cases {
		cert := newCert(t, c.subject)
		if dn, ok := certName(cert, DistinguishedName); !ok || dn != c.dn {
			t.Errorf("DN %q, want %q", dn, c.dn)
		}
		if cn, ok := certName(cert, CommonName); !ok || cn != c.cn {
			t.Errorf("CN %q, want %q", cn, c.cn)
		}
	}
	if _, ok := certName(newCert(t, pkix.Name{Organization: []string{"NoCN"}}), CommonName); ok {
		t.Error("a name from a certificate without CN")
	}
}

func TestExternal(t *testing.T) {
	cert := newCert(t, pkix.Name{CommonName: "app", Organization: []string{"Example"}})
	verified := &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}, VerifiedChains: [][]*x509.Certificate{{cert}}}
	unverified := &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
	noCert := &tls.ConnectionState{}

	s := NewStore()
	s.PutUser("CN=app,O=Example", "", nil)
	cases := []struct {
		conn   *tls.ConnectionState
		from   CertLoginFrom
		user   string
		detail string
	}{
		{verified, DistinguishedName, "CN=app,O=Example", ""},
		{verified, CommonName, "", "user 'app' - invalid credentials"},
		{unverified, DistinguishedName, "", "TLS configuration is unsafe"},
		{noCert, DistinguishedName, "", "connection peer presented no TLS (x.509) certificate"},
		{nil, DistinguishedName, "", "not a TLS-enabled connection"},
	}
	for i, c := range cases {
		s.SetCertLoginFrom(c.from)
		// The response is ignored, as RabbitMQ ignores it.
		user, err := s.Authenticate(EXTERNAL, []byte("whatever"), loopback, c.conn)
		if c.detail == "" {
			if err != nil || user != c.user {
				t.Errorf("%d: %q, %v; want %q", i, user, err, c.user)
			}
		} else if !isLoginError(err, c.detail) {
			t.Errorf("%d: %q, %v; want %q", i, user, err, c.detail)
		}
	}
	s.PutUser("app", "", nil)
	s.SetCertLoginFrom(CommonName)
	if user, err := s.Authenticate(EXTERNAL, nil, loopback, verified); err != nil || user != "app" {
		t.Errorf("common name: %q, %v", user, err)
	}
	// The loopback rule holds for EXTERNAL too.
	s.SetLoopbackUsers("app")
	if _, err := s.Authenticate(EXTERNAL, nil, remote, verified); !isLoginError(err, "user 'app' can only connect via localhost") {
		t.Errorf("loopback rule: %v", err)
	}
}
