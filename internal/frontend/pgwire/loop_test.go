//go:build linux

package pgwire_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/queryflux/queryflux/internal/capacity"
	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/internal/netlimit"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// loopServer serves a fresh PostgreSQL database through a proxy core in pool mode mode, with
// maxRunning slots, and returns the server (for its loop count), its URL and the history.
func loopServer(t testing.TB, mode string, maxRunning int) (*pgwire.Server, string, *frontendtest.Records) {
	t.Helper()
	return loopServerWith(t, mode, maxRunning, pgwire.Options{TrustUsers: []string{"*"}})
}

// loopServerWith is loopServer with the server's options.
func loopServerWith(t testing.TB, mode string, maxRunning int, opts pgwire.Options) (*pgwire.Server, string, *frontendtest.Records) {
	t.Helper()
	return loopServerGuarded(t, mode, maxRunning, opts, nil)
}

// loopServerGuarded is loopServerWith with the core's capacity guard (nil: a local one).
func loopServerGuarded(t testing.TB, mode string, maxRunning int, opts pgwire.Options, guard proxy.Guard) (*pgwire.Server, string, *frontendtest.Records) {
	t.Helper()
	srv, url, _, h := loopServerDirect(t, mode, maxRunning, opts, guard)
	return srv, url, h
}

// loopServerDirect is loopServerGuarded, also returning the database's own URL.
func loopServerDirect(t testing.TB, mode string, maxRunning int, opts pgwire.Options, guard proxy.Guard) (srv *pgwire.Server, url, direct string, h *frontendtest.Records) {
	t.Helper()
	e, direct := pgEngine(t)
	h = &frontendtest.Records{}
	core := proxy.New(proxy.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Registerer: prometheus.NewRegistry(), OnFinish: h.Add, Guard: guard})
	rt, err := proxy.NewRuntime(proxy.RuntimeSpec{
		Clusters: []proxy.ClusterSpec{{Name: "pg", Enabled: true, MaxRunningQueries: maxRunning, Engine: e}},
		Groups: []proxy.GroupSpec{{Name: "main", Members: []proxy.MemberSpec{{Cluster: "pg"}},
			MaxQueuedQueries: 100, CapacityWaitTimeout: 20 * time.Second, PoolMode: mode}},
		Fallback: "main",
	})
	if err != nil {
		t.Fatal(err)
	}
	core.Activate(rt)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv = pgwire.NewServer(core, opts)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return srv, fmt.Sprintf("postgres://alice@%s/bench?sslmode=disable&default_query_exec_mode=simple_protocol", l.Addr()), direct, h
}

// Simple-protocol clients run on the event loop in both pool modes: results, errors, a
// transaction spanning statements, COPY both ways (handed to the goroutine and back), SETs
// (the goroutine's), and the history's row counts; in transaction mode two clients share ONE
// slot, which only works if every transaction's end gives the engine connection and the slot
// back, and a transaction that finds the slot taken waits for it (on the goroutine) while the
// others are admitted on the loop's own thread.
func TestEventLoopRelaysSimpleQueries(t *testing.T) {
	for _, mode := range []string{proxy.PoolModeTransaction, proxy.PoolModeSession} {
		t.Run(mode, func(t *testing.T) {
			slots := 1
			if mode == proxy.PoolModeSession {
				slots = 2 // a session holds its slot for the client's whole connection
			}
			srv, url, h := loopServer(t, mode, slots)
			ctx := context.Background()
			a, b := connect(t, url), connect(t, url)
			exec := func(c *pgx.Conn, sql string) {
				t.Helper()
				if _, err := c.Exec(ctx, sql); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			exec(a, "create table t (n int, s text)")
			for i := range 50 {
				c := a
				if i%2 == 1 {
					c = b
				}
				if got := queryInt(t, c, fmt.Sprintf("select %d + 1", i)); got != i+1 {
					t.Fatalf("select %d + 1 = %d", i, got)
				}
			}
			const series = "select n from generate_series(1, 1000) n"
			rows, err := a.Query(ctx, series)
			if err != nil {
				t.Fatal(err)
			}
			sum := 0
			for rows.Next() {
				var n int
				if err := rows.Scan(&n); err != nil {
					t.Fatal(err)
				}
				sum += n
			}
			if rows.Close(); rows.Err() != nil || sum != 500500 {
				t.Fatalf("sum %d, err %v", sum, rows.Err())
			}
			_, err = a.Exec(ctx, "select 1/0")
			var pe *pgconn.PgError
			if !errorsAs(err, &pe) || pe.Code != "22012" {
				t.Fatalf("select 1/0: %v, want 22012", err)
			}
			exec(a, "begin")
			exec(a, "insert into t values (1, 'one')")
			waited := make(chan error, 1)
			go func() { // waits for a's slot in transaction mode
				_, err := b.Exec(ctx, "insert into t values (2, 'two')")
				waited <- err
			}()
			exec(a, "commit")
			if err := <-waited; err != nil {
				t.Fatal(err)
			}
			exec(a, "set application_name = 'loop'") // answered by the goroutine
			var copied bytes.Buffer
			if _, err := a.PgConn().CopyTo(ctx, &copied, "copy (select n from t order by n) to stdout"); err != nil || copied.String() != "1\n2\n" {
				t.Fatalf("copy to: %q, %v", copied.String(), err)
			}
			if _, err := a.PgConn().CopyFrom(ctx, strings.NewReader("3\tthree\n"), "copy t from stdin"); err != nil {
				t.Fatalf("copy from: %v", err)
			}
			if got := queryInt(t, b, "select count(*)::int from t"); got != 3 {
				t.Fatalf("%d rows in t, want 3", got)
			}
			if n := srv.LoopStatements(); n < 50 {
				t.Fatalf("%s mode: the event loop relayed %d statements, want at least 50", mode, n)
			}
			// Transaction mode: one client's transactions in a row each find the slot free and
			// the client's own engine connection idle (alternating clients above share one
			// connection, reset between them: the goroutine's).
			admitted := srv.LoopAdmissions()
			for i := range 20 {
				if got := queryInt(t, b, fmt.Sprintf("select %d * 2", i)); got != 2*i {
					t.Fatalf("select %d * 2 = %d", i, got)
				}
			}
			if n := srv.LoopAdmissions() - admitted; mode == proxy.PoolModeTransaction && n < 19 || mode == proxy.PoolModeSession && n != 0 {
				t.Fatalf("%s mode: the event loop admitted %d of 20 transactions on its thread", mode, n)
			}
			recs := h.Find(series)
			if len(recs) != 1 || recs[0].Rows != 1000 || recs[0].Bytes != 1000*4+9*1+90*2+900*3+4*1 {
				t.Fatalf("history of the series: %+v", recs)
			}
		})
	}
}

// leaseGuard is a worker's capacity guard (leases from a control plane) over client, started.
func leaseGuard(t *testing.T, client capacity.LeaseClient) *capacity.LeaseGuard {
	t.Helper()
	g, err := capacity.NewLeaseGuard(capacity.GuardOptions{Env: env.Real(slog.New(slog.DiscardHandler)), Client: client, Holder: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	g.Start(t.Context())
	return g
}

// A worker's transactions are admitted on the loop's thread when its released lease is still
// idle (no round trip to the control plane, here a real capacity API over HTTP); where the
// lease must be asked for, the goroutine admits the transaction.
func TestEventLoopAdmitsOnIdleLeases(t *testing.T) {
	store := capacity.NewMemory()
	cp := httptest.NewServer(capacity.NewAPIHandler(store, store, env.Real(slog.New(slog.DiscardHandler)), nil))
	t.Cleanup(cp.Close)
	srv, url, _ := loopServerGuarded(t, proxy.PoolModeTransaction, 4, pgwire.Options{TrustUsers: []string{"*"}},
		leaseGuard(t, capacity.NewRemote(cp.URL, cp.Client(), nil)))
	c := connect(t, url)
	// An idle lease is kept a few milliseconds only: a client slowed down by a busy machine may
	// miss it many times before its next statement comes in time.
	for i := 0; srv.LoopAdmissions() == 0; i++ {
		if i == 5000 {
			t.Fatal("no transaction of 5000 was admitted on the event loop's thread")
		}
		if got := queryInt(t, c, fmt.Sprintf("select %d + 1", i)); got != i+1 {
			t.Fatalf("select %d + 1 = %d", i, got)
		}
	}
}

// Where every transaction needs a round trip for its lease (a control plane that does not say
// whether others contend, so no lease is kept idle), the client leaves the loop after a few
// hand-offs instead of paying one per transaction.
func TestEventLoopLeftWhenEveryAdmissionWaits(t *testing.T) {
	srv, url, _ := loopServerGuarded(t, proxy.PoolModeTransaction, 4, pgwire.Options{TrustUsers: []string{"*"}},
		leaseGuard(t, capacity.NewMemory()))
	c := connect(t, url)
	const n = 200
	for i := range n {
		if got := queryInt(t, c, fmt.Sprintf("select %d + 1", i)); got != i+1 {
			t.Fatalf("select %d + 1 = %d", i, got)
		}
	}
	if got := srv.LoopAdmissions(); got != 0 {
		t.Fatalf("%d transactions admitted on the loop's thread without an idle lease", got)
	}
	if got := srv.LoopStatements(); got > n/10 {
		t.Fatalf("the loop relayed %d of %d statements, each after a hand-off for its admission", got, n)
	}
}

func errorsAs(err error, pe **pgconn.PgError) bool {
	if p, ok := err.(*pgconn.PgError); ok {
		*pe = p
		return true
	}
	return false
}

// A client on the event loop that begins a message and leaves it half sent is ended with
// 08P01 naming the message timeout, as on the goroutine (TestMessageBegunMustArriveWithinTheTimeout),
// and counted; its session-mode engine connection is not kept waiting with it.
func TestEventLoopMessageTimeout(t *testing.T) {
	reg := prometheus.NewRegistry()
	srv, url, _ := loopServerWith(t, proxy.PoolModeSession, 2, pgwire.Options{TrustUsers: []string{"*"},
		Limits: netlimit.Limits{MessageTimeout: 300 * time.Millisecond}, Registerer: reg})
	addr := strings.TrimPrefix(strings.Split(url, "/")[2], "alice@")
	for i, half := range [][]byte{
		append([]byte{'Q', 0, 0, 3, 236}, "select"...), // declares 1000 bytes
		{'Q', 0},
	} {
		nc, fe := loggedInConn(t, addr)
		before := srv.LoopStatements()
		for _, sql := range []string{"select 1", "select 2"} { // the first opens the engine connection
			fe.Send(&pgproto3.Query{String: sql})
			if err := fe.Flush(); err != nil {
				t.Fatal(err)
			}
			readyForQuery(t, fe)
		}
		if srv.LoopStatements() == before {
			t.Fatal("the client is not on the event loop")
		}
		if _, err := nc.Write(half); err != nil {
			t.Fatal(err)
		}
		if e := fatalOf(t, nc, fe); e.Code != "08P01" || !strings.Contains(e.Message, "not received whole within 300ms") {
			t.Fatalf("got %s %s, want 08P01 naming the message timeout", e.Code, e.Message)
		}
		if got := testutil.ToFloat64(netlimit.BoundRefusals(reg).WithLabelValues("pgwire", "message_timeout")); got != float64(i+1) {
			t.Fatalf("message_timeout refusals %v, want %d", got, i+1)
		}
	}
}

// readyForQuery reads up to ReadyForQuery, failing on an error.
func readyForQuery(t *testing.T, fe *pgproto3.Frontend) {
	t.Helper()
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		switch m := msg.(type) {
		case *pgproto3.ErrorResponse:
			t.Fatalf("%s %s", m.Code, m.Message)
		case *pgproto3.ReadyForQuery:
			return
		}
	}
}

// The loop remembers a plain Query's text to skip its session-state look at the next Query of
// that text but for its numbers: a SET after plain statements on the loop is still seen and
// refused in transaction pool mode, and statements of one shape are all relayed.
func TestEventLoopSeesSetAfterPlainStatements(t *testing.T) {
	srv, url, _ := loopServer(t, proxy.PoolModeTransaction, 1)
	a := connect(t, url)
	for i := range 10 {
		if got := queryInt(t, a, fmt.Sprintf("select %d", 10*i+1)); got != 10*i+1 {
			t.Fatalf("select %d = %d", 10*i+1, got)
		}
	}
	if n := srv.LoopStatements(); n < 9 { // the first may be the goroutine's
		t.Fatalf("the event loop relayed %d statements, want 9", n)
	}
	for _, sql := range []string{"set work_mem = '77MB'", "select 1; set work_mem = '78MB'"} {
		_, err := a.Exec(context.Background(), sql)
		requireRefusal(t, err, "work_mem")
	}
}

// The loop hands each Query's sqltok.Shape to the core, whose checks then pass the shape's
// texts without reading them: a text of another shape gets a Shape of its own, so a killer
// after plain statements of the same length is refused on the loop, and plain ones after it
// still run there.
func TestEventLoopShapeIsNotAnotherTextsShape(t *testing.T) {
	srv, url, _ := loopServer(t, proxy.PoolModeTransaction, 1)
	a := connect(t, url)
	plain := "select 1000000 + 2000000 + 3000000 as n"
	kill := "select pg_cancel_backend(1234567)"
	kill += strings.Repeat(" ", len(plain)-len(kill))
	for round := range 3 {
		for i := range 5 {
			sql := strings.Replace(plain, "1000000", fmt.Sprint(1000000+i), 1)
			if got := queryInt(t, a, sql); got != 6000000+i {
				t.Fatalf("%s = %d", sql, got)
			}
		}
		_, err := a.Exec(context.Background(), strings.Replace(kill, "1234567", fmt.Sprint(1234567+round), 1))
		var pe *pgconn.PgError
		if !errorsAs(err, &pe) || pe.Code != "42501" {
			t.Fatalf("round %d: %q: %v, want refused with 42501", round, kill, err)
		}
	}
	if n := srv.LoopStatements(); n < 12 { // a round's first may be the goroutine's (a refusal hands the client back)
		t.Fatalf("the event loop relayed %d statements, want 12", n)
	}
}

// TestEventLoopLeavesDeallocateAndDiscardToTheFrontend: the loop reads a statement's first
// keyword only when the text is no kin of its client's last (sameDigitShape); a DEALLOCATE or
// DISCARD, and their kin (another name's digits, the same text again), must still go to the
// frontend's own path, never be relayed on the loop.
func TestEventLoopLeavesDeallocateAndDiscardToTheFrontend(t *testing.T) {
	srv, url, _ := loopServer(t, proxy.PoolModeTransaction, 1)
	a := connect(t, url)
	ctx := context.Background()
	if got := queryInt(t, a, "select 7"); got != 7 {
		t.Fatalf("select 7 = %d", got)
	}
	before := srv.LoopStatements()
	for _, sql := range []string{"deallocate p1", "deallocate p2", "deallocate p13", "discard all", "discard all"} {
		_, _ = a.PgConn().Exec(ctx, sql).ReadAll() // p1... are no statements of the client's: the engine says so
		if n := srv.LoopStatements(); n != before {
			t.Fatalf("after %q the event loop had relayed %d statements, want %d (none of these)", sql, n, before)
		}
	}
	if got := queryInt(t, a, "select 8"); got != 8 {
		t.Fatalf("select 8 = %d", got)
	}
}
