package pgwire_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
)

func tryConnect(url string) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return pgx.Connect(ctx, url)
}

func authServer(t *testing.T, scram bool, tlsConf *tls.Config) string {
	e, _ := pgEngine(t)
	users := pgwire.NewStaticUsers(map[string]string{"alice": "s3cret"}, scram)
	return startServer(t, &oneEngine{e: e}, pgwire.Options{Authenticator: users, TLS: func() *tls.Config { return tlsConf }, TrustUsers: []string{"trusted"}})
}

func TestAuthSCRAM(t *testing.T) {
	addr := authServer(t, true, nil)
	c, err := tryConnect(fmt.Sprintf("postgres://alice:s3cret@%s/demo?sslmode=disable", addr))
	if err != nil {
		t.Fatalf("SCRAM login: %v", err)
	}
	var one int
	if err := c.QueryRow(context.Background(), "select 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("query after SCRAM login: %v", err)
	}
	_ = c.Close(context.Background())
	expectAuthFailure(t, fmt.Sprintf("postgres://alice:wrong@%s/demo?sslmode=disable", addr))
	expectAuthFailure(t, fmt.Sprintf("postgres://mallory:s3cret@%s/demo?sslmode=disable", addr))

	// psql speaks SCRAM too.
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("psql", "-X", "-At", "-h", host, "-p", port, "-U", "alice", "-d", "demo", "-c", "select 'ok'")
	cmd.Env = append(cmd.Environ(), "PGPASSWORD=s3cret", "PGSSLMODE=disable")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("psql SCRAM: %v %s", err, out)
	}
}

func TestAuthCleartext(t *testing.T) {
	addr := authServer(t, false, nil)
	c, err := tryConnect(fmt.Sprintf("postgres://alice:s3cret@%s/demo?sslmode=disable", addr))
	if err != nil {
		t.Fatalf("cleartext login: %v", err)
	}
	_ = c.Close(context.Background())
	expectAuthFailure(t, fmt.Sprintf("postgres://alice:nope@%s/demo?sslmode=disable", addr))
}

func TestAuthTrustOnlyListedUsers(t *testing.T) {
	addr := authServer(t, true, nil)
	c, err := tryConnect(fmt.Sprintf("postgres://trusted@%s/demo?sslmode=disable", addr))
	if err != nil {
		t.Fatalf("trusted loopback user: %v", err)
	}
	_ = c.Close(context.Background())
	expectAuthFailure(t, fmt.Sprintf("postgres://alice@%s/demo?sslmode=disable", addr))
}

func TestNoAuthenticatorRefuses(t *testing.T) {
	e, _ := pgEngine(t)
	addr := startServer(t, &oneEngine{e: e}, pgwire.Options{})
	_, err := tryConnect(fmt.Sprintf("postgres://alice:x@%s/demo?sslmode=disable", addr))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "28000" {
		t.Fatalf("got %v, want SQLSTATE 28000", err)
	}
}

func expectAuthFailure(t *testing.T, url string) {
	t.Helper()
	c, err := tryConnect(url)
	if err == nil {
		_ = c.Close(context.Background())
		t.Fatalf("login succeeded for %s", url)
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "28P01" {
		t.Fatalf("got %v, want SQLSTATE 28P01", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error leaks the password: %v", err)
	}
}

func TestTLS(t *testing.T) {
	addr := authServer(t, true, frontendtest.SelfSignedTLS(t))
	c, err := tryConnect(fmt.Sprintf("postgres://alice:s3cret@%s/demo?sslmode=require", addr))
	if err != nil {
		t.Fatalf("TLS login: %v", err)
	}
	if _, ok := c.PgConn().Conn().(*tls.Conn); !ok {
		t.Fatalf("connection is %T, not TLS", c.PgConn().Conn())
	}
	_ = c.Close(context.Background())
}

func TestSSLRefusedCleanlyWithoutTLS(t *testing.T) {
	addr := authServer(t, true, nil)
	if _, err := tryConnect(fmt.Sprintf("postgres://alice:s3cret@%s/demo?sslmode=require", addr)); err == nil {
		t.Fatal("sslmode=require succeeded against a server without TLS")
	}
	c, err := tryConnect(fmt.Sprintf("postgres://alice:s3cret@%s/demo?sslmode=prefer", addr))
	if err != nil {
		t.Fatalf("sslmode=prefer after the 'N' answer: %v", err)
	}
	_ = c.Close(context.Background())
}
