//go:build linux

package pgwire_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queryflux/queryflux/internal/frontend/frontendtest"
	"github.com/queryflux/queryflux/internal/frontend/pgwire"
	"github.com/queryflux/queryflux/node/env"
	"github.com/queryflux/queryflux/node/proxy"
)

// loopServer serves a fresh PostgreSQL database through a proxy core in pool mode mode, with
// maxRunning slots, and returns the server (for its loop count), its URL and the history.
func loopServer(t *testing.T, mode string, maxRunning int) (*pgwire.Server, string, *frontendtest.Records) {
	t.Helper()
	e, _ := pgEngine(t)
	h := &frontendtest.Records{}
	core := proxy.New(proxy.Options{Env: env.Real(slog.New(slog.DiscardHandler)), Registerer: prometheus.NewRegistry(), OnFinish: h.Add})
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
	srv := pgwire.NewServer(core, pgwire.Options{TrustUsers: []string{"*"}})
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return srv, fmt.Sprintf("postgres://alice@%s/bench?sslmode=disable&default_query_exec_mode=simple_protocol", l.Addr()), h
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

func errorsAs(err error, pe **pgconn.PgError) bool {
	if p, ok := err.(*pgconn.PgError); ok {
		*pe = p
		return true
	}
	return false
}
