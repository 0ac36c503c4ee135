package querytest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// pgCluster is the YAML of a cluster named pg on the database at dbURL, with a cap.
func pgCluster(t *testing.T, dbURL string, maxRunning int) string {
	t.Helper()
	return pgClusterWith(t, dbURL, maxRunning, "")
}

// pgClusterWith is pgCluster with more settings of its group (", queryTimeoutSecs: 1").
func pgClusterWith(t *testing.T, dbURL string, maxRunning int, group string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`clusters:
  - name: pg
    engine: postgres
    endpoint: "%s"
    database: "%s"
    credentials: {user: "%s"}
    maxRunningQueries: %d
clusterGroups:
  - {name: main, members: [pg], maxQueuedQueries: 200, capacityWaitTimeoutSecs: 30%s}
routingFallback: main
settings: {security: {trustLoopback: true}}
`, u.Host, strings.TrimPrefix(u.Path, "/"), u.User.Username(), maxRunning, group)
}

// pgStandalone writes the config of a standalone node with a PostgreSQL frontend at pg, the
// admin API at admin, extra (whole lines under queryflux:, indented two spaces) and one
// PostgreSQL cluster on dbURL with maxRunning slots.
func pgStandalone(t *testing.T, admin, pg, extra, dbURL string, maxRunning int) string {
	t.Helper()
	return daemontest.WriteFile(t, "standalone.yaml", fmt.Sprintf(`queryflux:
  role: standalone
  adminApi: {listen: "%s", token: "%s"}
%s  frontends:
    postgres: {enabled: true, listen: "%s"}
`, admin, adminToken, extra, pg)+pgCluster(t, dbURL, maxRunning))
}

func hostPort(t *testing.T, addr string) (string, string) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return h, p
}

var (
	txnsRe   = regexp.MustCompile(`number of transactions actually processed: (\d+)`)
	failedRe = regexp.MustCompile(`number of failed transactions: (\d+)`)
	tpsRe    = regexp.MustCompile(`tps = ([\d.]+)`)
)

// pgbenchSelect runs pgbench -S against addr and fails t unless transactions ran and none failed.
func pgbenchSelect(t *testing.T, addr, mode string, clients, secs int) {
	t.Helper()
	h, p := hostPort(t, addr)
	out := run(t, time.Duration(secs+30)*time.Second, "pgbench", "-n", "-S", "-M", mode, "-c", strconv.Itoa(clients),
		"-T", strconv.Itoa(secs), "-h", h, "-p", p, "-U", "queryflux", "main")
	m := txnsRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("pgbench -M %s: no transaction count:\n%s", mode, out)
	}
	if n, _ := strconv.Atoi(m[1]); n == 0 {
		t.Fatalf("pgbench -M %s: no transactions:\n%s", mode, out)
	}
	if f := failedRe.FindStringSubmatch(out); f != nil && f[1] != "0" {
		t.Fatalf("pgbench -M %s: %s failed transactions:\n%s", mode, f[1], out)
	}
	tps := "?"
	if m := tpsRe.FindStringSubmatch(out); m != nil {
		tps = m[1]
	}
	t.Logf("pgbench -S -M %s -c %d -T %d through %s: %s transactions, tps %s", mode, clients, secs, addr, m[1], tps)
}

// pgbenchInit creates pgbench's tables through the proxy (server-side data generation: the
// frontends do not take COPY FROM STDIN).
func pgbenchInit(t *testing.T, addr string) {
	t.Helper()
	h, p := hostPort(t, addr)
	run(t, 60*time.Second, "pgbench", "-i", "-q", "-I", "dtGvp", "-s", "1", "-h", h, "-p", p, "-U", "queryflux", "main")
}

// TestStandalonePostgres runs a standalone node on a fresh PostgreSQL database: psql, then
// pgbench -i and pgbench -S in simple and extended mode, all through the proxy.
func TestStandalonePostgres(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	addrs := daemontest.FreeAddrs(t, 2)
	pg, admin := addrs[0], addrs[1]
	cfg := pgStandalone(t, admin, pg, "", dbURL, 8)
	startDaemon(t, nil, []string{pg, admin}, "--config", cfg)

	h, p := hostPort(t, pg)
	out := run(t, 20*time.Second, "psql", "-X", "-h", h, "-p", p, "-U", "queryflux", "main", "-At", "-c", "select current_database()")
	if got, want := strings.TrimSpace(out), strings.TrimPrefix(mustURL(t, dbURL).Path, "/"); got != want {
		t.Fatalf("psql through the proxy reached database %q, want %q", got, want)
	}
	pgbenchInit(t, pg)
	for _, mode := range []string{"simple", "extended"} {
		pgbenchSelect(t, pg, mode, 4, 3)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestControlPlaneAndWorker runs a control plane (a standalone with the worker API) and one
// worker on a fresh PostgreSQL database. The worker gets its clusters from the control plane's
// snapshot and runs pgbench -S. The cap is fleet-wide: with maxRunningQueries 1, a query on
// the worker waits while the control plane's own frontend holds the only lease.
func TestControlPlaneAndWorker(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	addrs := daemontest.FreeAddrs(t, 2)
	cpPG, cpAdmin := addrs[0], addrs[1]
	cpCfg := daemontest.WriteFile(t, "cp.yaml", fmt.Sprintf(`queryflux:
  role: standalone
  adminApi: {listen: "%s", token: "%s"}
  workerApi: {enabled: true, secret: "%s"}
  coordination: {mode: controlPlane}
  frontends:
    postgres: {enabled: true, listen: "%s"}
`, cpAdmin, adminToken, workerSecret, cpPG)+pgCluster(t, dbURL, 1))
	startDaemon(t, nil, []string{cpPG, cpAdmin}, "--config", cpCfg)
	wPG, wOps, _ := startWorker(t, cpAdmin, "w1", 1)

	// The worker answers once its config sync activated the control plane's snapshot.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	daemontest.EventuallyNil(t, 20*time.Second, func() error {
		c, err := pgx.Connect(ctx, "postgres://queryflux@"+wPG+"/main?sslmode=disable")
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		var n int
		return c.QueryRow(ctx, "select 1").Scan(&n)
	})
	body := daemontest.Get(t, "http://"+cpAdmin+"/admin/workers", adminToken)
	if !strings.Contains(body, `"name":"w1"`) || !strings.Contains(body, `"mode":"controlPlane"`) {
		t.Fatalf("/admin/workers does not list w1 with controlPlane coordination: %.1000s", body)
	}

	t.Run("fleetWideCap", func(t *testing.T) { fleetWideCap(t, ctx, dbURL, cpPG, wPG, wOps) })
	t.Run("pgbench", func(t *testing.T) {
		pgbenchInit(t, wPG)
		pgbenchSelect(t, wPG, "extended", 4, 3)
	})
	t.Run("history", func(t *testing.T) {
		daemontest.EventuallyNil(t, 20*time.Second, func() error {
			body := daemontest.Get(t, "http://"+cpAdmin+"/admin/queries?worker=w1", adminToken)
			if !strings.Contains(body, "pgbench_accounts") {
				return fmt.Errorf("/admin/queries shows no pgbench query of w1 yet: %.500s", body)
			}
			return nil
		})
	})
}

// fleetWideCap holds the cluster's only lease on the control plane's frontend with a query
// that waits on the engine for an advisory lock the test holds: a query on the worker must
// queue until the test lets the holder finish.
func fleetWideCap(t *testing.T, ctx context.Context, dbURL, cpPG, wPG, wOps string) {
	engine, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(ctx)
	const lock = "select pg_advisory_xact_lock(4242)"
	if _, err := engine.Exec(ctx, "select pg_advisory_lock(4242)"); err != nil {
		t.Fatal(err)
	}
	cp, err := pgx.Connect(ctx, "postgres://queryflux@"+cpPG+"/main?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close(ctx)
	w, err := pgx.Connect(ctx, "postgres://queryflux@"+wPG+"/main?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)

	held := make(chan error, 1)
	go func() { _, err := cp.Exec(ctx, lock); held <- err }()
	daemontest.Eventually(t, 30*time.Second, "the control plane's query waiting on PostgreSQL", func() bool {
		var n int
		if err := engine.QueryRow(ctx, `select count(*) from pg_stat_activity where datname = current_database()
			and query like '%'||$1||'%' and pid <> pg_backend_pid()`, lock).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
	ran := make(chan error, 1)
	go func() { var n int; ran <- w.QueryRow(ctx, "select 1").Scan(&n) }()
	daemontest.Eventually(t, 30*time.Second, "the worker's query queued for the lease", func() bool {
		select {
		case err := <-ran:
			t.Fatalf("the worker's query ran (%v) while the control plane's held the only lease: the cap is not fleet-wide", err)
		default:
		}
		return strings.Contains(daemontest.Get(t, "http://"+wOps+"/metrics", ""), `queryflux_queued_queries{group="main"} 1`)
	})
	if _, err := engine.Exec(ctx, "select pg_advisory_unlock(4242)"); err != nil {
		t.Fatal(err)
	}
	if err := <-held; err != nil {
		t.Fatalf("holding query: %v", err)
	}
	if err := <-ran; err != nil {
		t.Fatalf("the worker's query after the lease was free: %v", err)
	}
}
