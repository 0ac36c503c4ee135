package policy_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"

	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	gomysqlconst "github.com/go-mysql-org/go-mysql/mysql"
	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/config"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/mysqlwire"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// A PostgreSQL client on a PostgreSQL engine takes the passthrough path (wire messages
// relayed); translation and guard scripts apply there too. psql is the client, over SCRAM.
func TestScriptsOnThePassthroughPath(t *testing.T) {
	if testing.Short() {
		t.Skip("real PostgreSQL and psql")
	}
	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := e2eConfig(t)
	cfg.Clusters = []config.Cluster{{
		Name: "pg", Engine: config.EnginePostgres, Endpoint: u.Host, Database: strings.TrimPrefix(u.Path, "/"),
		Credentials: config.Credentials{User: u.User.Username()}, MaxRunningQueries: 4,
	}}
	cfg.ClusterGroups = []config.ClusterGroup{{Name: "demo", Members: []string{"pg"}, MaxQueuedQueries: 10, CapacityWaitTimeoutSecs: 10, Strategy: "roundRobin"}}
	if err := config.Compile(cfg); err != nil {
		t.Fatal(err)
	}
	s := startStack(t, cfg)
	psql := func(q string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		host, port, _ := strings.Cut(s.pg, ":")
		cmd := exec.CommandContext(ctx, "psql", "-X", "-At", "-h", host, "-p", port, "-U", "alice", "-d", "demo", "-c", q)
		cmd.Env = append(cmd.Environ(), "PGPASSWORD="+alicePW, "PGSSLMODE=disable")
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	before := s.core.Paths().Passthrough
	out, err := psql("select the_answer() + 0")
	if err != nil || out != "42" {
		t.Fatalf("translated on passthrough: %q %v", out, err)
	}
	if s.core.Paths().Passthrough == before {
		t.Fatal("the query did not take the passthrough path; this test would prove nothing")
	}
	out, err = psql("select 'forbidden_word'")
	if err == nil || !strings.Contains(out, "forbidden_word is forbidden for alice") {
		t.Fatalf("guard on passthrough: %q %v", out, err)
	}
}

// The mariadb command-line client logs in with mysql_native_password against the stored hash
// alone, and a wrong password is refused with MySQL's own access-denied error.
func TestMariaDBClientLogsInAgainstTheHash(t *testing.T) {
	if testing.Short() {
		t.Skip("mariadb CLI")
	}
	s := startStack(t, e2eConfig(t))
	host, port, _ := strings.Cut(s.my, ":")
	mariadb := func(user, pw string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "mariadb", "-h", host, "-P", port, "-u", user, "-p"+pw, "--skip-ssl",
			"-N", "-B", "-e", "select the_answer() + 0").CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := mariadb("carol", carolPW); err != nil || out != "42" {
		t.Fatalf("carol with her password: %q %v", out, err)
	}
	out, err := mariadb("carol", "wrong")
	if err == nil || !strings.Contains(out, "1045") {
		t.Fatalf("a wrong password: want ERROR 1045, got %q %v", out, err)
	}
}

// Under caching_sha2_password every hash form serves MySQL clients: full authentication with
// the password RSA-encrypted (no TLS) or in clear over TLS. go-sql-driver is the client.
func TestMySQLCachingSHA2AgainstAnyHash(t *testing.T) {
	if testing.Short() {
		t.Skip("real client")
	}
	s := startStack(t, e2eConfig(t))
	tlsCfg := frontendtest.SelfSignedTLS(t)
	srv, err := mysqlwire.NewServer(s.core, mysqlwire.Options{
		AuthMethod: gomysqlconst.AUTH_CACHING_SHA2_PASSWORD, Users: s.pol.MySQL(), TLS: frontendtest.Static(tlsCfg),
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	login := func(user, pw, tlsMode string) error {
		cfg := gomysql.NewConfig()
		cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = user, pw, "tcp", ln.Addr().String(), "demo"
		cfg.TLSConfig = tlsMode
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			return err
		}
		defer db.Close()
		var v int
		if err := db.QueryRow("select the_answer() + 0").Scan(&v); err != nil {
			return err
		}
		if v != 42 {
			return fmt.Errorf("got %d", v)
		}
		return nil
	}
	for _, mode := range []string{"false", "skip-verify"} {
		for _, u := range []struct{ user, pw string }{{"alice", alicePW}, {"bob", bobPW}, {"carol", carolPW}} {
			err := login(u.user, u.pw, mode)
			if u.user == "bob" { // bcrypt user, no role: logs in, then access control refuses
				if err == nil || !strings.Contains(err.Error(), "access denied") {
					t.Fatalf("tls=%s bob: want access denied after login, got %v", mode, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("tls=%s %s: %v", mode, u.user, err)
			}
		}
		var me *gomysql.MySQLError
		if err := login("alice", "wrong", mode); !errors.As(err, &me) || me.Number != 1045 {
			t.Fatalf("tls=%s wrong password: want 1045, got %v", mode, err)
		}
	}
}
