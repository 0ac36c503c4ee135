package frontendtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/testca"
)

// SelfSignedTLS is a server TLS configuration with a fresh self-signed P-256 certificate for
// 127.0.0.1, valid from an hour ago to an hour from now.
func SelfSignedTLS(t testing.TB) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

// Static is a frontend's per-connection TLS hook that always answers cfg.
func Static(cfg *tls.Config) func() *tls.Config { return func() *tls.Config { return cfg } }

// CA is a test certificate authority (testca.CA: mytest's MariaDB of its own uses it too).
type CA = testca.CA

// NewCA makes a fresh CA, valid from an hour ago to a day from now, its files in a
// temporary directory of t.
func NewCA(t testing.TB) *CA { return testca.New(t) }
