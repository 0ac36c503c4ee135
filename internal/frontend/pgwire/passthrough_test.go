package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

type coreSetup struct {
	noPassthrough bool
	cacheTTL      time.Duration
	queryTimeout  time.Duration
	check         func(req *query.Request, group string) error
	frontend      pgwire.Options // TrustUsers is set to everyone
}

// coreServer serves a real proxy core over a fresh PostgreSQL database through pgwire.
func coreServer(t testing.TB, s coreSetup) (addr, directURL string, core *proxy.Core, h *frontendtest.Records) {
	t.Helper()
	e, url := pgEngine(t)
	h = &frontendtest.Records{}
	core = proxy.New(proxy.Options{
		Env: env.Real(slog.New(slog.DiscardHandler)), Registerer: prometheus.NewRegistry(),
		OnFinish: h.Add, Check: s.check,
	})
	rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
		Clusters:      []proxy.ClusterSpec{{Name: "pg", Enabled: true, MaxRunningQueries: 8, Engine: e}},
		Groups:        []proxy.GroupSpec{{Name: "main", Members: []proxy.MemberSpec{{Cluster: "pg"}}, MaxQueuedQueries: 100, QueryTimeout: s.queryTimeout, Cache: proxy.CacheSpec{TTL: s.cacheTTL}}},
		Fallback:      "main",
		NoPassthrough: s.noPassthrough,
	})
	if err != nil {
		t.Fatal(err)
	}
	core.Activate(rt)
	opts := s.frontend
	opts.TrustUsers = []string{"*"}
	addr = startServer(t, core, opts)
	return addr, url, core, h
}

var pgxModes = map[string]pgx.QueryExecMode{
	"extended-cache-statement": pgx.QueryExecModeCacheStatement,
	"extended-cache-describe":  pgx.QueryExecModeCacheDescribe,
	"extended-exec":            pgx.QueryExecModeExec,
	"simple":                   pgx.QueryExecModeSimpleProtocol,
}

// TestPassthroughSameAsDirect runs every type query directly and through the core on the
// passthrough path, in each protocol mode, and requires identical columns, types and values;
// every query must have taken the passthrough path.
func TestPassthroughSameAsDirect(t *testing.T) {
	addr, url, core, _ := coreServer(t, coreSetup{})
	direct := connect(t, url)
	proxied := connect(t, proxyURL(addr, "alice"))
	for name, mode := range pgxModes {
		for i, q := range typeQueries {
			t.Run(fmt.Sprintf("%s/%d", name, i), func(t *testing.T) {
				before := core.Paths()
				wantCols, wantRows := collect(t, direct, mode, q.sql, q.args)
				gotCols, gotRows := collect(t, proxied, mode, q.sql, q.args)
				if fmt.Sprint(gotCols) != fmt.Sprint(wantCols) {
					t.Fatalf("columns differ\n got %v\nwant %v", gotCols, wantCols)
				}
				if fmt.Sprint(gotRows) != fmt.Sprint(wantRows) {
					t.Fatalf("rows differ (%d vs %d rows)", len(gotRows), len(wantRows))
				}
				after := core.Paths()
				if after.Passthrough <= before.Passthrough || after.Arrow != before.Arrow {
					t.Fatalf("paths before %+v after %+v: want passthrough only", before, after)
				}
			})
		}
	}
}

// TestArrowPathForcedAndCache: settings.passthrough false and a cached group take the Arrow
// path with the same answers.
func TestArrowPathForcedAndCache(t *testing.T) {
	for _, s := range []coreSetup{{noPassthrough: true}, {cacheTTL: time.Minute}} {
		addr, url, core, _ := coreServer(t, s)
		direct := connect(t, url)
		proxied := connect(t, proxyURL(addr, "alice"))
		q := typeQueries[0]
		wantCols, wantRows := collect(t, direct, pgx.QueryExecModeExec, q.sql, q.args)
		gotCols, gotRows := collect(t, proxied, pgx.QueryExecModeExec, q.sql, q.args)
		if fmt.Sprint(gotCols, gotRows) != fmt.Sprint(wantCols, wantRows) {
			t.Fatalf("%+v: results differ", s)
		}
		if p := core.Paths(); p.Passthrough != 0 || p.Arrow == 0 {
			t.Fatalf("%+v: paths %+v, want Arrow only", s, p)
		}
	}
}

// TestPassthroughHistoryAndChecks: rows and bytes are counted for history, and Check still
// refuses queries on the passthrough path.
func TestPassthroughHistoryAndChecks(t *testing.T) {
	denied := &query.Error{Code: query.CodeAccessDenied, Message: "no secrets"}
	addr, _, core, h := coreServer(t, coreSetup{check: func(req *query.Request, group string) error {
		if req.User == "mallory" {
			return denied
		}
		return nil
	}})
	c := connect(t, proxyURL(addr, "alice"))
	const sql = "select g, repeat('x', 10) from generate_series(1, 3000) g"
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		rows, err := c.Query(context.Background(), sql, mode)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		if rows.Err() != nil || n != 3000 {
			t.Fatalf("mode %v: %d rows, err %v", mode, n, rows.Err())
		}
	}
	recs := h.Find(sql)
	if len(recs) != 2 {
		t.Fatalf("%d history records, want 2", len(recs))
	}
	for _, r := range recs {
		if r.Status != proxy.StatusSucceeded || r.Rows != 3000 || r.Bytes < 3000*14 || r.Cluster != "pg" {
			t.Fatalf("record %+v: want succeeded, 3000 rows, >= %d bytes on pg", r, 3000*14)
		}
	}
	if p := core.Paths(); p.Passthrough != 2 || p.Arrow != 0 {
		t.Fatalf("paths %+v", p)
	}
	m := connect(t, proxyURL(addr, "mallory"))
	_, err := m.Exec(context.Background(), "select 1")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != query.CodeAccessDenied {
		t.Fatalf("mallory: got %v, want %s", err, query.CodeAccessDenied)
	}
}

// TestPassthroughCancelReachesEngine cancels pg_sleep(30) on the passthrough path and requires
// it gone from pg_stat_activity and reported as cancelled.
func TestPassthroughCancelReachesEngine(t *testing.T) {
	addr, url, core, h := coreServer(t, coreSetup{})
	c := connect(t, proxyURL(addr, "alice"))
	admin := connect(t, url)
	const sql = "select pg_sleep(30) /* qf-cancel-test */"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, sql)
		done <- err
	}()
	waitFor(t, 30*time.Second, func() bool { return countSleeping(t, admin) == 1 })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled query succeeded")
	}
	// A statement that ran to its end would have succeeded: the error says the cancel stopped it.
	waitFor(t, 10*time.Second, func() bool { return countSleeping(t, admin) == 0 })
	waitFor(t, 30*time.Second, func() bool { return len(h.Find(sql)) == 1 })
	if r := h.Find(sql)[0]; r.Status == proxy.StatusSucceeded {
		t.Fatalf("record %+v: want not succeeded", r)
	}
	if p := core.Paths(); p.Passthrough != 1 {
		t.Fatalf("paths %+v", p)
	}
	if core.Running("pg") != 0 {
		t.Fatalf("slot still held: running %d", core.Running("pg"))
	}
}

// TestCoreTransactionsAtomic: through the core (both paths), BEGIN; INSERT; ROLLBACK leaves
// nothing, and a concurrent session does not see another's uncommitted row until COMMIT.
func TestCoreTransactionsAtomic(t *testing.T) {
	for _, s := range []coreSetup{{}, {noPassthrough: true}} {
		t.Run(fmt.Sprintf("noPassthrough=%v", s.noPassthrough), func(t *testing.T) {
			addr, _, core, _ := coreServer(t, s)
			ctx := context.Background()
			a := connect(t, proxyURL(addr, "alice"))
			b := connect(t, proxyURL(addr, "bob"))
			mustExec(t, a, "create table t(id int)")
			for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
				mustExec(t, a, "begin", mode)
				mustExec(t, a, "insert into t values (1)", mode)
				if n := count(t, a, mode); n != 1 {
					t.Fatalf("inside the transaction: %d rows, want 1", n)
				}
				if core.Running("pg") != 1 {
					t.Fatalf("a transaction holds %d slots, want 1", core.Running("pg"))
				}
				mustExec(t, a, "rollback", mode)
				if n := count(t, a, mode); n != 0 {
					t.Fatalf("after rollback: %d rows, want 0", n)
				}
			}
			// Isolation between two sessions.
			mustExec(t, a, "begin")
			mustExec(t, a, "insert into t values (2)")
			if n := count(t, b, pgx.QueryExecModeCacheStatement); n != 0 {
				t.Fatalf("bob sees %d uncommitted rows", n)
			}
			mustExec(t, b, "begin isolation level repeatable read")
			if n := count(t, b, pgx.QueryExecModeSimpleProtocol); n != 0 {
				t.Fatalf("bob's snapshot sees %d rows", n)
			}
			mustExec(t, a, "commit")
			if n := count(t, b, pgx.QueryExecModeSimpleProtocol); n != 0 {
				t.Fatalf("bob's repeatable-read snapshot changed: %d rows", n)
			}
			mustExec(t, b, "commit")
			if n := count(t, b, pgx.QueryExecModeSimpleProtocol); n != 1 {
				t.Fatalf("after both commits bob sees %d rows, want 1", n)
			}
			// The slot goes back as the transaction's last answer leaves: wait for it.
			waitFor(t, 30*time.Second, func() bool { return core.Running("pg") == 0 })
			// A failed statement fails the transaction, on either path.
			mustExec(t, a, "begin")
			if _, err := a.Exec(ctx, "select nope"); err == nil {
				t.Fatal("select nope succeeded")
			}
			if _, err := a.Exec(ctx, "select 1"); err == nil || !strings.Contains(err.Error(), "25P02") {
				t.Fatalf("in a failed transaction: got %v, want 25P02", err)
			}
			mustExec(t, a, "rollback")
			p := core.Paths()
			if s.noPassthrough && p.Passthrough != 0 {
				t.Fatalf("paths %+v with passthrough off", p)
			}
			if !s.noPassthrough && p.Passthrough < 10 {
				t.Fatalf("paths %+v: statements inside transactions should be relayed too", p)
			}
		})
	}
}

func mustExec(t *testing.T, c *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := c.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func count(t *testing.T, c *pgx.Conn, mode pgx.QueryExecMode) int {
	t.Helper()
	var n int
	if err := c.QueryRow(context.Background(), "select count(*) from t", mode).Scan(&n); err != nil {
		t.Fatalf("count: %v", err)
	}
	return n
}

// TestPgbenchThroughCore runs pgbench through a real core on the passthrough path in every
// protocol mode, and the TPC-B-like script (BEGIN..END in pinned sessions).
func TestPgbenchThroughCore(t *testing.T) {
	if testing.Short() {
		t.Skip("pgbench runs for seconds")
	}
	addr, direct, core, _ := coreServer(t, coreSetup{})
	runPgbench(t, addr, direct)
	if p := core.Paths(); p.Passthrough < 300 {
		t.Fatalf("paths %+v: want the select-only runs on the passthrough path", p)
	}
}

// TestPassthroughQueryTimeout: the group's query timeout cancels a relayed statement on the
// engine and says so.
func TestPassthroughQueryTimeout(t *testing.T) {
	addr, url, core, _ := coreServer(t, coreSetup{queryTimeout: 300 * time.Millisecond})
	c := connect(t, proxyURL(addr, "alice"))
	admin := connect(t, url)
	// Run to its end, the statement would succeed: the error says the timeout stopped it.
	_, err := c.Exec(context.Background(), "select pg_sleep(30) /* qf-cancel-test */")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, "query timeout") {
		t.Fatalf("got %v, want the group's query timeout", err)
	}
	waitFor(t, 10*time.Second, func() bool { return countSleeping(t, admin) == 0 })
	if p := core.Paths(); p.Passthrough != 1 {
		t.Fatalf("paths %+v", p)
	}
	// The session goes on.
	var n int
	if err := c.QueryRow(context.Background(), "select 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("after the timeout: %v", err)
	}
}

// TestStatementStoppedInATransactionAbortsIt: inside a transaction the statement runs on the
// pinned connection, relayed or (settings.passthrough: false) through the Arrow path. Stopped
// there by the group's query timeout (named as such, not as a cancel the client never asked
// for) or by the client's own cancel request, it leaves the transaction aborted, as PostgreSQL
// does: the next statement fails with 25P02 and changes nothing, even where stopping it cost
// the engine connection (the Arrow path's), and ROLLBACK or COMMIT ends it.
func TestStatementStoppedInATransactionAbortsIt(t *testing.T) {
	for _, arrowPath := range []bool{false, true} {
		for _, byClient := range []bool{false, true} {
			name := map[bool]string{false: "relayed", true: "arrow"}[arrowPath] + "/" + map[bool]string{false: "timeout", true: "cancel"}[byClient]
			t.Run(name, func(t *testing.T) { stopInATransaction(t, arrowPath, byClient) })
		}
	}
}

func stopInATransaction(t *testing.T, arrowPath, byClient bool) {
	setup := coreSetup{noPassthrough: arrowPath}
	if !byClient {
		setup.queryTimeout = 300 * time.Millisecond
	}
	addr, url, core, _ := coreServer(t, setup)
	c := connect(t, proxyURL(addr, "alice"))
	admin := connect(t, url)
	ctx := context.Background()
	if _, err := admin.Exec(ctx, "create table after_stop (i int)"); err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	cancelled := make(chan error, 1)
	if byClient {
		go func() { // the client's cancel request, once the statement runs on the engine
			for {
				var n int
				err := admin.QueryRow(ctx, `select count(*) from pg_stat_activity where query like '%qf-cancel-test%' and state = 'active' and pid <> pg_backend_pid()`).Scan(&n)
				if err != nil || n > 0 {
					if err == nil {
						err = c.PgConn().CancelRequest(ctx)
					}
					cancelled <- err
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
	} else {
		cancelled <- nil
	}
	before := core.Paths()
	_, err = tx.Exec(ctx, "select pg_sleep(30) /* qf-cancel-test */")
	if err := <-cancelled; err != nil {
		t.Fatal(err)
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" || !byClient && !strings.Contains(pe.Message, "query timeout") {
		t.Fatalf("got %v, want 57014 (naming the group's query timeout when it stopped the statement)", err)
	}
	want := before
	if arrowPath {
		want.Arrow++
	} else {
		want.Passthrough++
	}
	if p := core.Paths(); p != want {
		t.Fatalf("paths %+v, want %+v", p, want)
	}
	waitFor(t, 10*time.Second, func() bool { return countSleeping(t, admin) == 0 })
	_, err = tx.Exec(ctx, "insert into after_stop values (1)")
	if !errors.As(err, &pe) || pe.Code != "25P02" {
		t.Fatalf("the next statement of the transaction: %v, want 25P02", err)
	}
	if byClient { // COMMIT ends an aborted transaction as ROLLBACK does, and says so
		if err := tx.Commit(ctx); !errors.Is(err, pgx.ErrTxCommitRollback) {
			t.Fatalf("COMMIT of the aborted transaction: %v, want it rolled back", err)
		}
	} else if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := c.QueryRow(ctx, "select count(*) from after_stop").Scan(&n); err != nil || n != 0 {
		t.Fatalf("after the rollback: %d rows (%v), want none", n, err)
	}
}

// TestPassthroughRewritesOnce: a Check that rewrites statements (as translation scripts do)
// rewrites each statement once, in every transaction of a client: the wire's admission checks
// the transaction's first statement, and the statement's own check must start again from the
// client's SQL, not from what the admission's check made of it.
func TestPassthroughRewritesOnce(t *testing.T) {
	addr, _, core, _ := coreServer(t, coreSetup{check: func(req *query.Request, _ string) error {
		if strings.HasPrefix(req.SQL, "select 1") {
			req.SQL += " + 1" // not idempotent: twice would answer 3
		}
		return nil
	}})
	c := connect(t, proxyURL(addr, "alice"))
	for i := range 5 {
		var n int
		if err := c.QueryRow(context.Background(), "select 1", pgx.QueryExecModeSimpleProtocol).Scan(&n); err != nil || n != 2 {
			t.Fatalf("transaction %d: select 1 rewritten once answered %d (%v), want 2", i, n, err)
		}
	}
	if p := core.Paths(); p.Passthrough != 5 {
		t.Fatalf("paths %+v, want 5 passthrough", p)
	}
}
