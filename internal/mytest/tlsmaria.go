package mytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TLSMariaDB is a MariaDB server of the test's own that takes connections over TLS only
// (require_secure_transport=ON): the shared server has TLS off, and turning it on there would
// restart a server other tests use. It runs the machine's mariadbd on a fresh data directory,
// on a loopback port and socket of its own, until the test ends. root logs in without a
// password.
type TLSMariaDB struct {
	Addr string // 127.0.0.1:port
	// CAFile is the PEM of the CA that signed the server's certificate (which names 127.0.0.1
	// and localhost); OtherCAFile a CA that did not.
	CAFile, OtherCAFile string
}

// StartTLSMariaDB starts one; it skips the test where mariadbd is not installed (outside CI).
func StartTLSMariaDB(t testing.TB) *TLSMariaDB {
	t.Helper()
	mariadbd, err1 := exec.LookPath("mariadbd")
	installDB, err2 := exec.LookPath("mariadb-install-db")
	if err1 != nil || err2 != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mytest: mariadbd or mariadb-install-db not installed")
		}
		t.Skip("mytest: mariadbd or mariadb-install-db not installed")
	}
	dir := t.TempDir()
	// A socket's path must fit in 108 bytes: the test's temporary directory may not.
	sockDir, err := os.MkdirTemp("", "qfmaria")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	m := &TLSMariaDB{CAFile: filepath.Join(dir, "ca.pem"), OtherCAFile: filepath.Join(dir, "other-ca.pem")}
	writeServerCerts(t, dir)
	data := filepath.Join(dir, "data")
	install := exec.Command(installDB, "--no-defaults", "--datadir="+data, "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mytest: mariadb-install-db: %v\n%s", err, out)
	}
	port := freePort(t)
	m.Addr = "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(mariadbd, "--no-defaults", "--datadir="+data, "--user=root",
		"--bind-address=127.0.0.1", "--port="+strconv.Itoa(port), "--socket="+filepath.Join(sockDir, "s"),
		"--pid-file="+filepath.Join(dir, "pid"), "--log-error="+filepath.Join(dir, "error.log"),
		"--ssl-ca="+m.CAFile, "--ssl-cert="+filepath.Join(dir, "server.pem"), "--ssl-key="+filepath.Join(dir, "server-key.pem"),
		"--require-secure-transport=ON",
		"--innodb-buffer-pool-size=16M", "--innodb-log-file-size=8M", "--skip-log-bin", "--max-connections=64",
		"--performance-schema=OFF")
	if err := cmd.Start(); err != nil {
		t.Fatalf("mytest: start mariadbd: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	for deadline := time.Now().Add(60 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", m.Addr, time.Second); err == nil {
			c.Close()
			return m
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("mytest: mariadbd exited:\n%s", log)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("mytest: mariadbd not listening on %s after 60s:\n%s", m.Addr, log)
		}
	}
}

// freePort is a loopback port free a moment ago.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// writeServerCerts writes to dir a CA (ca.pem), the server's certificate it signed and its key
// (server.pem, server-key.pem), and another CA (other-ca.pem).
func writeServerCerts(t testing.TB, dir string) {
	t.Helper()
	caKey, ca := newCA(t, "queryflux test CA")
	_, other := newCA(t, "queryflux other CA")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, "ca.pem"), "CERTIFICATE", ca.Raw)
	writePEM(t, filepath.Join(dir, "other-ca.pem"), "CERTIFICATE", other.Raw)
	writePEM(t, filepath.Join(dir, "server.pem"), "CERTIFICATE", der)
	writePEM(t, filepath.Join(dir, "server-key.pem"), "EC PRIVATE KEY", keyDER)
}

func newCA(t testing.TB, name string) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert
}

func writePEM(t testing.TB, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
