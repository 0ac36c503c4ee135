package querytest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// A SIGTERM during a client's transaction lets the transaction commit before the process exits:
// idle clients are disconnected at once (57P01), new clients are refused, the client inside its
// transaction runs its next statements and COMMIT, and is disconnected at its next idle moment.
func TestSigtermLetsAnOpenTransactionCommit(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	addrs := daemontest.FreeAddrs(t, 2)
	pg, admin := addrs[0], addrs[1]
	cfg := pgStandalone(t, admin, pg, "", dbURL, 4)
	d := daemontest.StartWith(t, daemontest.Options{Graceful: true, CleanExit: true, ExitLimit: 30 * time.Second},
		"daemon", "serve", "--config", cfg, "--drain-timeout", "20s")
	d.WaitListening(t, 30*time.Second, pg, admin)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	proxyURL := fmt.Sprintf("postgres://queryflux@%s/main?sslmode=disable", pg)
	inTx, idle := connect(ctx, t, proxyURL), connect(ctx, t, proxyURL)
	exec := func(c *pgx.Conn, sql string) error { _, err := c.Exec(ctx, sql); return err }
	if err := exec(inTx, "create table drained (n int)"); err != nil {
		t.Fatal(err)
	}
	if err := exec(inTx, "begin"); err != nil {
		t.Fatal(err)
	}
	if err := exec(inTx, "insert into drained values (1)"); err != nil {
		t.Fatal(err)
	}

	d.Signal(syscall.SIGTERM)
	daemontest.Eventually(t, 10*time.Second, "the idle client disconnected with 57P01", func() bool {
		return sqlState(exec(idle, "select 1")) == "57P01"
	})
	if c, err := pgx.Connect(ctx, proxyURL); err == nil {
		c.Close(ctx)
		t.Fatal("a new client was accepted during the drain")
	}
	if err := exec(inTx, "insert into drained values (2)"); err != nil {
		t.Fatalf("a statement inside the open transaction during the drain: %v", err)
	}
	if err := exec(inTx, "commit"); err != nil {
		t.Fatalf("COMMIT during the drain: %v", err)
	}
	if err := exec(inTx, "select 1"); err == nil {
		t.Fatal("the client stayed connected after its transaction ended during a drain")
	}
	d.Wait(t)

	direct, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close(ctx)
	var n int
	if err := direct.QueryRow(ctx, "select count(*) from drained").Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows committed during the drain: %d (%v), want 2", n, err)
	}
}

// mariaStandalone is a standalone daemon's configuration: its admin API on admin, the MySQL
// wire on my, one MariaDB cluster (database dbName, at most 4 queries) for every query.
func mariaStandalone(admin, my, dbName string) string {
	return fmt.Sprintf(`queryflux:
  role: standalone
  adminApi: {listen: "%s", token: "%s"}
  frontends:
    mysql: {enabled: true, listen: "%s"}
clusters:
  - {name: maria, engine: mysql, endpoint: "127.0.0.1:3306", database: "%s", credentials: {user: root}, maxRunningQueries: 4}
clusterGroups:
  - {name: g, members: [maria]}
routingFallback: g
settings: {security: {trustLoopback: true}}
`, admin, adminToken, my, dbName)
}

func connect(ctx context.Context, t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// The same on the MySQL wire, with go-sql-driver/mysql and a MariaDB engine.
func TestSigtermLetsAnOpenMySQLTransactionCommit(t *testing.T) {
	engineDSN, dbName := mytest.NewDatabase(t)
	addrs := daemontest.FreeAddrs(t, 2)
	my, admin := addrs[0], addrs[1]
	cfg := daemontest.WriteFile(t, "standalone.yaml", mariaStandalone(admin, my, dbName))
	d := daemontest.StartWith(t, daemontest.Options{Graceful: true, CleanExit: true, ExitLimit: 30 * time.Second},
		"daemon", "serve", "--config", cfg, "--drain-timeout", "20s")
	d.WaitListening(t, 30*time.Second, my, admin)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db, err := sql.Open("mysql", fmt.Sprintf("queryflux@tcp(%s)/%s", my, dbName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	inTx, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	idle, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(c *sql.Conn, q string) error { _, err := c.ExecContext(ctx, q); return err }
	for _, q := range []string{"create table drained (n int)", "begin", "insert into drained values (1)"} {
		if err := exec(inTx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := idle.PingContext(ctx); err != nil {
		t.Fatal(err)
	}

	d.Signal(syscall.SIGTERM)
	daemontest.Eventually(t, 10*time.Second, "the idle client disconnected", func() bool {
		return idle.PingContext(ctx) != nil
	})
	if err := exec(inTx, "insert into drained values (2)"); err != nil {
		t.Fatalf("a statement inside the open transaction during the drain: %v", err)
	}
	if err := exec(inTx, "commit"); err != nil {
		t.Fatalf("COMMIT during the drain: %v", err)
	}
	d.Wait(t)

	direct, err := sql.Open("mysql", engineDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	var n int
	if err := direct.QueryRowContext(ctx, "select count(*) from drained").Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows committed during the drain: %d (%v), want 2", n, err)
	}
}
