//go:build linux

package pgwire_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/pgengine"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/pgtest"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// keepServer serves, in transaction pool mode, one fresh PostgreSQL database per cluster
// (clusters "pg0", "pg1"...; each an engine of maxConns connections), a group per cluster,
// statements naming "other" routed to the second group, on the event loop.
func keepServer(t *testing.T, clusters, maxConns, maxRunning int) (*pgwire.Server, string, []*pgengine.Engine, *frontendtest.Records) {
	srv, url, engines, _, h := keepServerDirect(t, clusters, maxConns, maxRunning)
	return srv, url, engines, h
}

// keepServerDirect is keepServer, also returning each cluster's own URL.
func keepServerDirect(t *testing.T, clusters, maxConns, maxRunning int) (*pgwire.Server, string, []*pgengine.Engine, []string, *frontendtest.Records) {
	t.Helper()
	h := &frontendtest.Records{}
	core := proxy.New(proxy.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Registerer: prometheus.NewRegistry(), OnFinish: h.Add})
	spec := proxy.RuntimeSpec{Fallback: "g0"}
	var engines []*pgengine.Engine
	var direct []string
	for i := range clusters {
		direct = append(direct, pgtest.NewDatabase(t))
		e, err := pgengine.Open(engine.Spec{Name: fmt.Sprintf("pg%d", i), Kind: pgengine.Kind, Endpoint: direct[i], MaxConns: maxConns})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		engines = append(engines, e.(*pgengine.Engine))
		engines[i].SetKeptIdle(2 * time.Second) // never between two transactions of a test's, loaded or not
		name := fmt.Sprintf("pg%d", i)
		spec.Clusters = append(spec.Clusters, proxy.ClusterSpec{Name: name, Enabled: true, MaxRunningQueries: maxRunning, Engine: e})
		spec.Groups = append(spec.Groups, proxy.GroupSpec{Name: fmt.Sprintf("g%d", i), Members: []proxy.MemberSpec{{Cluster: name}},
			MaxQueuedQueries: 100, CapacityWaitTimeout: 20 * time.Second, PoolMode: proxy.PoolModeTransaction})
	}
	if clusters > 1 {
		spec.Routers = []proxy.Router{&proxy.QueryRegexRouter{Rules: []proxy.RegexRule{{Pattern: regexp.MustCompile("other"), Group: "g1"}}}}
	}
	rt, err := proxy.NewRuntime(spec)
	if err != nil {
		t.Fatal(err)
	}
	core.Activate(rt)
	srv, addr := serveBackend(t, core, pgwireTrustAll())
	return srv, fmt.Sprintf("postgres://alice@%s/bench?sslmode=disable&default_query_exec_mode=simple_protocol", addr), engines, direct, h
}

// awaitKept waits until e keeps n connections for their clients; it fails after 20 s.
func awaitKept(t *testing.T, e *pgengine.Engine, n int, why string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); e.Kept() != n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the engine keeps %d connections for their clients, want %d", why, e.Kept(), n)
		}
	}
}

func queryOne[T any](t *testing.T, c *pgx.Conn, sql string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var v T
	if err := c.QueryRow(ctx, sql).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// Between a client's transactions its engine connection stays plugged in (the same backend,
// kept by the engine for the client), yet every transaction is admitted on its own (the loop's
// admissions count each, the history has each) and the connection goes back to the pool once
// the client pauses. It fails when the kept connection skips the admission (a wire kept open
// from transaction to transaction), or stays kept after the client stopped (a leak).
func TestLoopKeepsTheEngineConnectionBetweenTransactions(t *testing.T) {
	srv, url, engines, h := keepServer(t, 1, 4, 4)
	e := engines[0]
	c := connect(t, url)
	first := queryOne[int32](t, c, "select pg_backend_pid()")
	admitted := srv.LoopAdmissions()
	const transactions = 30
	for i := range transactions {
		sql := fmt.Sprintf("select pg_backend_pid() + %d", i)
		if pid := queryOne[int32](t, c, sql); pid != first+int32(i) {
			t.Fatalf("transaction %d ran on backend %d, want the kept %d", i, pid-int32(i), first)
		}
		if n := e.Kept(); n != 1 {
			t.Fatalf("transaction %d: the engine keeps %d connections, want the client's one", i, n)
		}
		if recs := h.Find(sql); len(recs) != 1 || recs[0].Status != proxy.StatusSucceeded {
			t.Fatalf("transaction %d: records %+v", i, recs)
		}
	}
	if n := srv.LoopAdmissions() - admitted; n < transactions {
		t.Fatalf("the loop admitted %d of %d transactions", n, transactions)
	}
	awaitKept(t, e, 0, "the client paused")
	// Given back, the connection serves the client again (taken from the pool).
	if pid := queryOne[int32](t, c, "select pg_backend_pid()"); pid != first {
		t.Fatalf("after the pause: backend %d, want %d", pid, first)
	}
}

// A connection kept by one client goes to another that waits for it (an engine of ONE
// connection, two clients taking turns), and each client's transactions see only its own
// session (its startup settings). It fails when a kept connection is not reclaimed for a
// waiter (the second client's statement never runs), or a kept wire is taken over after its
// connection went to another client (the wrong settings, or a broken connection).
func TestLoopKeptConnectionGoesToAWaiter(t *testing.T) {
	_, url, engines, _ := keepServer(t, 1, 1, 4)
	a, b := connect(t, url+"&search_path=client_a"), connect(t, url+"&search_path=client_b")
	for i := range 8 {
		for _, cl := range []struct {
			c    *pgx.Conn
			want string
		}{{a, "client_a"}, {b, "client_b"}} {
			if got := queryOne[string](t, cl.c, "show search_path"); got != cl.want {
				t.Fatalf("turn %d: search_path %q, want %q", i, got, cl.want)
			}
		}
	}
	// A transaction held open holds the one connection: the other client's statement waits
	// for its end, and then runs on its own session.
	ctx := context.Background()
	tx, err := a.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "select set_config('search_path', 'in_a_transaction', true)"); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		var v string
		qctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if err := b.QueryRow(qctx, "show search_path").Scan(&v); err != nil {
			v = err.Error()
		}
		got <- v
	}()
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v != "client_b" {
		t.Fatalf("the waiting client's search_path: %q, want client_b", v)
	}
	awaitKept(t, engines[0], 0, "both clients paused")
}

// Each transaction is routed on its own: a client whose transactions alternate between two
// clusters keeps none's connection across the switch, and every transaction runs on its
// route's database. It fails when a kept connection serves a transaction routed elsewhere.
func TestLoopKeptConnectionFollowsTheRoute(t *testing.T) {
	_, url, engines, _ := keepServer(t, 2, 2, 2)
	c := connect(t, url)
	db0 := queryOne[string](t, c, "select current_database()")
	db1 := queryOne[string](t, c, "select current_database() as other")
	if db0 == db1 {
		t.Fatalf("both routes ran on %s", db0)
	}
	for i := range 10 {
		if got := queryOne[string](t, c, "select current_database()"); got != db0 {
			t.Fatalf("turn %d: %s, want %s", i, got, db0)
		}
		if got := queryOne[string](t, c, "select current_database() as other"); got != db1 {
			t.Fatalf("turn %d (other): %s, want %s", i, got, db1)
		}
		if engines[0].Kept()+engines[1].Kept() > 1 {
			t.Fatalf("turn %d: connections kept %d and %d, want one at most", i, engines[0].Kept(), engines[1].Kept())
		}
	}
}

// A kept connection's backend ended between transactions (pg_terminate_backend of the pid the
// client saw, run by an administrator on the database: the proxy refuses it to its clients) is
// given back closed as soon as its server says so, and the client's next transaction runs on
// another, unaware. A CancelRequest still reaches the statement of a transaction run on a kept
// connection. It fails when the ended connection is given back as healthy (the next
// transaction is handed the dead backend), or the cancel misses the kept connection.
func TestLoopKeptConnectionEndedOrCancelled(t *testing.T) {
	_, url, engines, direct, _ := keepServerDirect(t, 1, 4, 4)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	// The cancel request, and time for its answer (pgx's default closes the connection a
	// second after the context ends, which a loaded machine may take).
	cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: time.Minute}
	}
	a, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	admin := connect(t, direct[0])
	pid := queryOne[int32](t, a, "select pg_backend_pid()")
	_ = queryOne[int32](t, a, "select pg_backend_pid()") // kept now
	if n := engines[0].Kept(); n != 1 {
		t.Fatalf("kept %d, want 1", n)
	}
	if !queryOne[bool](t, admin, fmt.Sprintf("select pg_terminate_backend(%d)", pid)) {
		t.Fatal("pg_terminate_backend found no backend")
	}
	awaitKept(t, engines[0], 0, "the ended backend given back")
	for i := range 3 {
		if again := queryOne[int32](t, a, "select pg_backend_pid()"); again == pid {
			t.Fatalf("transaction %d after the end ran on the ended backend %d", i, pid)
		}
	}
	if n := engines[0].Kept(); n != 1 {
		t.Fatalf("kept %d before the sleep, want 1", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := a.PgConn().Exec(ctx, "select pg_sleep(30) /* qf-cancel-test */").ReadAll()
		done <- err
	}()
	waitFor(t, 30*time.Second, func() bool { return countSleeping(t, admin) == 1 })
	cancel()
	var pe *pgconn.PgError
	if err := <-done; !errorsAs(err, &pe) || pe.Code != "57014" {
		t.Fatalf("cancelled sleep: %v, want 57014", err)
	}
	if got := queryOne[int32](t, a, "select 7"); got != 7 {
		t.Fatalf("after the cancel: %d", got)
	}
}
