package mytest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/queryflux/queryflux/internal/testca"
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
	ca, other := testca.New(t), testca.New(t)
	certFile, keyFile := ca.Issue(t, "server") // 127.0.0.1 and localhost
	// A socket's path must fit in 108 bytes: the test's temporary directory may not.
	sockDir, err := os.MkdirTemp("", "qfmaria")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	m := &TLSMariaDB{CAFile: ca.CertFile, OtherCAFile: other.CertFile}
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
		"--ssl-ca="+m.CAFile, "--ssl-cert="+certFile, "--ssl-key="+keyFile,
		"--require-secure-transport=ON",
		"--innodb-buffer-pool-size=16M", "--innodb-log-file-size=8M", "--skip-log-bin", "--max-connections=64",
		"--performance-schema=OFF")
	if err := cmd.Start(); err != nil {
		t.Fatalf("mytest: start mariadbd: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		// SIGTERM: mariadbd ignores SIGINT, and the wait below ran its full 20 s.
		_ = cmd.Process.Signal(syscall.SIGTERM)
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
