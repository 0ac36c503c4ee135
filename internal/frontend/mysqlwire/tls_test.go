package mysqlwire

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

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"
)

// selfSigned makes a throwaway certificate for 127.0.0.1.
func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "queryflux-test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

// TestTLS logs in over TLS with caching_sha2_password (whose full authentication then sends
// the password inside TLS) and runs a query.
func TestTLS(t *testing.T) {
	backend, dbName := mariaBackend(t)
	addr := startServer(t, backend, Options{AuthMethod: gomysql.AUTH_CACHING_SHA2_PASSWORD, TLS: selfSigned(t)})
	d := openDB(t, addr, "alice", testPassword, dbName, "tls=skip-verify")
	if got := queryStrings(t, d, "SELECT 6*7"); got[0][0] != "42" {
		t.Fatal(got)
	}
	var me *mysql.MySQLError
	if err := openDB(t, addr, "alice", "nope", dbName, "tls=skip-verify").Ping(); err == nil {
		t.Fatal("wrong password accepted over TLS")
	} else if !asMySQLError(err, &me) || me.Number != 1045 {
		t.Fatalf("wrong password: %v", err)
	}
}

func asMySQLError(err error, target **mysql.MySQLError) bool {
	me, ok := err.(*mysql.MySQLError)
	if ok {
		*target = me
	}
	return ok
}
