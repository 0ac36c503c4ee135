package querytest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// slowreadRows is the size of the result a client stops reading: far more than every socket
// buffer on the way holds (about 1 GB).
const slowreadRows = 1000000

// tinyReceiveDial dials with a receive buffer of the kernel's least: a client whose window
// shuts after a few kilobytes.
func tinyReceiveDial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1) })
	}}
	return d.DialContext(ctx, network, addr)
}

// stoppedClient starts a real client reading a large result into /dev/null and suspends it
// (SIGSTOP) once its query runs on the engine: a client that stopped reading, still connected.
// The process is killed at the test's end.
func stoppedClient(t *testing.T, running func() bool, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	daemontest.Eventually(t, 30*time.Second, name+"'s query running on the engine", running)
	time.Sleep(300 * time.Millisecond) // into its result
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

// writeStallRefusals reads queryflux_frontend_bound_refusals_total{bound="write_stall"} of
// frontend from the daemon's /metrics ("0" when absent).
func writeStallRefusals(t *testing.T, admin, frontend string) string {
	body := daemontest.Get(t, "http://"+admin+"/metrics", "")
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, `queryflux_frontend_bound_refusals_total{bound="write_stall",frontend="`+frontend+`"}`) {
			return strings.Fields(l)[1]
		}
	}
	return "0"
}

// TestAPostgreSQLClientThatStopsReadingFreesItsSlot: with maxRunningQueries 1 and a write
// stall timeout of 2 s, psql (simple protocol, on the event loop) suspended in the middle of a
// 1 GB result, and pgx (extended protocol) over a socket with the least receive buffer that
// reads one row and no more: each is ended, its query is gone from the engine
// (pg_stat_activity), another client then gets the slot, and each end is counted. Before: the
// proxy had no write bound on the PostgreSQL port; the stopped client held its slot and engine
// connection for as long as it stayed connected, and the next client waited out the capacity
// wait (53300 after 30 s).
func TestAPostgreSQLClientThatStopsReadingFreesItsSlot(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	addrs := daemontest.FreeAddrs(t, 2)
	pg, admin := addrs[0], addrs[1]
	cfg := pgStandalone(t, admin, pg, "  limits: {writeStallTimeoutSecs: 2}\n", dbURL, 1)
	startDaemon(t, nil, []string{pg, admin}, "--config", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	direct := connect(ctx, t, dbURL)
	running := func(marker string) func() bool {
		return func() bool {
			var n int
			err := direct.QueryRow(ctx, "select count(*) from pg_stat_activity where query like '%'||$1||'%' and pid <> pg_backend_pid()", marker).Scan(&n)
			return err == nil && n > 0
		}
	}
	answered := func(stopped string) {
		t.Helper()
		c := connect(ctx, t, "postgres://queryflux@"+pg+"/main?sslmode=disable")
		var v int
		start := time.Now()
		if err := c.QueryRow(ctx, "select 42").Scan(&v); err != nil || v != 42 {
			t.Fatalf("a client after %s stopped reading: %d %v", stopped, v, err)
		}
		t.Logf("a client after %s stopped reading answered after %s", stopped, time.Since(start).Round(time.Millisecond))
		daemontest.Eventually(t, 30*time.Second, stopped+"'s query gone from the engine", func() bool { return !running("slowread_" + stopped)() })
	}

	h, p := hostPort(t, pg)
	stoppedClient(t, running("slowread_psql"), "psql", "-X", "-q", "-h", h, "-p", p, "-U", "queryflux", "-o", "/dev/null", "main",
		"-c", fmt.Sprintf("select repeat('x', 1000) as slowread_psql from generate_series(1, %d)", slowreadRows))
	answered("psql")

	cc, err := pgx.ParseConfig("postgres://queryflux@" + pg + "/main?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	cc.DialFunc = tinyReceiveDial
	raw, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.PgConn().Conn().Close() })
	rows, err := raw.Query(ctx, fmt.Sprintf("select repeat('x', 1000) as slowread_pgx from generate_series(1, %d)", slowreadRows))
	if err != nil {
		t.Fatal(err)
	}
	rows.Next() // one row, and no more read
	answered("pgx")

	daemontest.Eventually(t, 10*time.Second, "two write stalls counted", func() bool {
		return writeStallRefusals(t, admin, "pgwire") == "2"
	})
}

// TestAMySQLClientThatStopsReadingFreesItsSlot: the same on the MySQL wire and a MariaDB
// engine: the mariadb client (--quick: it reads as it prints) suspended in the middle of its
// result, and go-sql-driver/mysql over a socket with the least receive buffer reading one row;
// each query leaves the engine's SHOW PROCESSLIST well before MariaDB's own net_write_timeout
// (60 s) would end it, and another client gets the slot.
func TestAMySQLClientThatStopsReadingFreesItsSlot(t *testing.T) {
	engineDSN, dbName := mytest.NewDatabase(t)
	addrs := daemontest.FreeAddrs(t, 2)
	my, admin := addrs[0], addrs[1]
	cfg := strings.Replace(mariaStandalone(admin, my, dbName), "maxRunningQueries: 4}", "maxRunningQueries: 1}", 1)
	cfg = strings.Replace(cfg, "{name: g, members: [maria]}", "{name: g, members: [maria], capacityWaitTimeoutSecs: 30}", 1)
	cfg = strings.Replace(cfg, "  frontends:", "  limits: {writeStallTimeoutSecs: 2}\n  frontends:", 1)
	startDaemon(t, nil, []string{my, admin}, "--config", daemontest.WriteFile(t, "standalone.yaml", cfg))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	direct, err := sql.Open("mysql", engineDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	running := func(marker string) func() bool {
		return func() bool {
			var n int
			err := direct.QueryRowContext(ctx, "select count(*) from information_schema.processlist where info like concat('%', ?, '%') and id <> connection_id()", marker).Scan(&n)
			return err == nil && n > 0
		}
	}
	answered := func(stopped string) {
		t.Helper()
		db, err := sql.Open("mysql", fmt.Sprintf("queryflux@tcp(%s)/%s", my, dbName))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var v int
		start := time.Now()
		if err := db.QueryRowContext(ctx, "select 42").Scan(&v); err != nil || v != 42 {
			t.Fatalf("a client after %s stopped reading: %d %v", stopped, v, err)
		}
		t.Logf("a client after %s stopped reading answered after %s", stopped, time.Since(start).Round(time.Millisecond))
		daemontest.Eventually(t, 30*time.Second, stopped+"'s query gone from the engine", func() bool { return !running("slowread_" + stopped)() })
	}

	h, p := hostPort(t, my)
	stoppedClient(t, running("slowread_mariadb"), "mariadb", "--quick", "-h", h, "-P", p, "-u", "queryflux", "--skip-ssl", dbName,
		"-e", fmt.Sprintf("select repeat('x', 1000) as slowread_mariadb from seq_1_to_%d", slowreadRows))
	answered("mariadb")

	mysql.RegisterDialContext("slowread_tiny", func(ctx context.Context, addr string) (net.Conn, error) {
		return tinyReceiveDial(ctx, "tcp", addr)
	})
	db, err := sql.Open("mysql", fmt.Sprintf("queryflux@slowread_tiny(%s)/%s", my, dbName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, fmt.Sprintf("select repeat('x', 1000) as slowread_gosql from seq_1_to_%d", slowreadRows))
	if err != nil {
		t.Fatal(err)
	}
	rows.Next() // one row, and no more read
	answered("gosql")

	daemontest.Eventually(t, 10*time.Second, "two write stalls counted", func() bool {
		return writeStallRefusals(t, admin, "mysqlwire") == "2"
	})
}
