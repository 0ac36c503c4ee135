package querytest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queryflux/queryflux/internal/daemontest"
	"github.com/queryflux/queryflux/internal/pgtest"
)

// pgCluster is the YAML of a cluster named pg on the database at dbURL, with a cap.
func pgCluster(t *testing.T, dbURL string, maxRunning int) string {
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
  - {name: main, members: [pg], maxQueuedQueries: 200, capacityWaitTimeoutSecs: 30}
routingFallback: main
settings: {security: {trustLoopback: true}}
`, u.Host, strings.TrimPrefix(u.Path, "/"), u.User.Username(), maxRunning)
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
	cfg := daemontest.WriteFile(t, "standalone.yaml", fmt.Sprintf(`queryflux:
  role: standalone
  adminApi: {listen: "%s", token: "%s"}
  frontends:
    postgres: {enabled: true, listen: "%s"}
`, admin, adminToken, pg)+pgCluster(t, dbURL, 8))
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
	wPG, _ := startWorker(t, cpAdmin, "w1", 1)

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

	t.Run("fleetWideCap", func(t *testing.T) { fleetWideCap(t, ctx, cpPG, wPG) })
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

// fleetWideCap holds the cluster's only lease with pg_sleep on the control plane's frontend
// and measures how long a query on the worker waits for it.
func fleetWideCap(t *testing.T, ctx context.Context, cpPG, wPG string) {
	const hold = 2 * time.Second
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

	var wg sync.WaitGroup
	wg.Add(1)
	holding := time.Now()
	go func() {
		defer wg.Done()
		if _, err := cp.Exec(ctx, fmt.Sprintf("select pg_sleep(%g)", hold.Seconds())); err != nil {
			t.Errorf("holding query: %v", err)
		}
	}()
	time.Sleep(300 * time.Millisecond) // let the holder take the lease
	var n int
	if err := w.QueryRow(ctx, "select 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	waited := time.Since(holding)
	wg.Wait()
	if waited < hold-200*time.Millisecond {
		t.Fatalf("the worker's query finished %v after the control plane's took the only lease (held %v): the cap is not fleet-wide", waited, hold)
	}
	t.Logf("the worker's query waited for the control plane's lease: done %v after it was taken (held %v)", waited.Round(time.Millisecond), hold)
}
